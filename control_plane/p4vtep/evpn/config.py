"""The fabric file's ``evpn:`` section, parsed into frozen values.

    evpn:
      asn: 65000
      router_id: 10.0.0.254
      hold_time: 9                  # seconds (keepalive = hold_time / 3); 0 = none
      listen_port: 179              # -1: only connect out
      peers:
        - {address: 192.0.2.1, asn: 65000, password: s3cret}
      vnis:                         # optional overrides; every fabric VNI takes part
        - vni: 5000
          rd: 10.0.0.254:5000       # default: <ToR VTEP IP>:<VNI, low 16 bits>
          route_targets: [65000:5000]          # both directions, or:
          # route_targets: {import: ["*:5000"], export: [65000:5000]}
      vrfs:                         # optional overrides; every fabric VRF takes part
        - name: tenant-a
          rd: auto                  # default: <ToR VTEP IP>:<L3 VNI, low 16 bits>
          route_targets: [auto]     # default auto: <ASN low 16 bits>:<L3 VNI> (FRR's)
          advertise_prefixes: true  # type 5 for subnets and static routes (default)
      static_vteps:                 # VTEPs that speak no BGP
        - vtep_ip: 192.0.2.50
          vnis: [5000]
          macs: [{vni: 5000, mac: "52:54:00:00:00:50", ips: [192.168.1.50]}]

The parser works on the fabric loader's document object (``p4vtep.sources.fabric_file``'s
``_Doc``: ``get``/``typed``/``list``/``error``), so errors name the file,
line and field like every other fabric-file error.

What EVPN needs of the routing model (docs/routing.md) is copied in from the
fabric (``EvpnConfig.for_fabric``): the VRF and subnets of each routed VNI,
each VRF's L3 VNI and static routes, the ToRs' router MACs and the anycast
gateway MAC. The config is then all the speaker's side needs: what to
advertise (symmetric IRB type 2 and type 5) and what to accept.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..model.addressing import link_local
from .routes import (
    VNI_MAX,
    RouteError,
    auto_route_target,
    canonical_ipv4,
    canonical_mac,
    canonical_rd,
    canonical_rt,
    unicast_mac,
)

# (asked for every received host route: the anycast MAC's, computed once)
_link_local = functools.lru_cache(maxsize=16)(link_local)

if TYPE_CHECKING:
    from ..model.fabric import Fabric

AUTO = "auto"


class _Doc(Protocol):
    def get(self, path: tuple[Any, ...], default: Any = None) -> Any: ...
    def typed(self, path: tuple[Any, ...], kind: Any, default: Any = ...) -> Any: ...
    def list(self, path: tuple[Any, ...], required: bool = True) -> list[Any]: ...
    def error(self, path: tuple[Any, ...], message: str) -> Exception: ...


@dataclass(frozen=True)
class EvpnPeer:
    address: str
    asn: int
    password: str | None = None


def _imports(wanted_rts: Iterable[str], route_targets: Iterable[str]) -> bool:
    wanted = tuple(wanted_rts)
    for rt in route_targets:
        for one in wanted:
            if one == rt or (one.startswith("*:") and rt.rpartition(":")[2] == one[2:]):
                return True
    return False


@dataclass(frozen=True)
class VniRouting:
    """A MAC-VRF: one fabric VNI's RD and route targets."""

    vni: int
    rd: str | None  # None: per ToR, <VTEP IP>:<VNI low 16 bits>
    import_rts: tuple[str, ...]  # "ASN:N", "IP:N" or the wildcard "*:N"
    export_rts: tuple[str, ...]
    # From the fabric's routing model (for_fabric): the VRF the VNI is routed
    # in (None: L2 only) and its subnets' prefixes.
    vrf: str | None = None
    subnets: tuple[str, ...] = ()
    gateways: tuple[str, ...] = ()  # the subnets' anycast gateway IPs

    def rd_for(self, vtep_ip: str) -> str:
        return self.rd if self.rd is not None else f"{vtep_ip}:{self.vni & 0xFFFF}"

    def imports(self, route_targets: Iterable[str]) -> bool:
        return _imports(self.import_rts, route_targets)


@dataclass(frozen=True)
class VrfRouting:
    """An IP-VRF (RFC 9135): a fabric VRF's RD, route targets and whether its
    prefixes are advertised (type 5), with its L3 VNI and static routes."""

    name: str
    l3vni: int
    rd: str | None  # None: per ToR, <VTEP IP>:<L3 VNI low 16 bits>
    import_rts: tuple[str, ...]
    export_rts: tuple[str, ...]
    advertise_prefixes: bool = True
    static_routes: tuple[tuple[str, str], ...] = ()  # (prefix, next hop), from the fabric

    def rd_for(self, vtep_ip: str) -> str:
        return self.rd if self.rd is not None else f"{vtep_ip}:{self.l3vni & 0xFFFF}"

    def imports(self, route_targets: Iterable[str]) -> bool:
        return _imports(self.import_rts, route_targets)


@dataclass(frozen=True)
class StaticMac:
    vni: int
    mac: str
    ips: tuple[str, ...] = ()


@dataclass(frozen=True)
class StaticVtep:
    vtep_ip: str
    vnis: tuple[int, ...]
    macs: tuple[StaticMac, ...] = ()


@dataclass(frozen=True)
class EvpnConfig:
    asn: int
    router_id: str
    peers: tuple[EvpnPeer, ...]
    vnis: tuple[VniRouting, ...]  # one per fabric VNI, defaults filled in
    static_vteps: tuple[StaticVtep, ...] = ()
    hold_time: int = 9
    listen_port: int = 179
    vrfs: tuple[VrfRouting, ...] = ()  # one per fabric VRF (for_fabric), defaults filled in
    # From the fabric (for_fabric): each ToR's router MAC by its VTEP IP, and
    # the anycast gateway MAC. Never advertised as a host or a router MAC,
    # and refused as a router MAC in received routes.
    router_macs: tuple[tuple[str, str], ...] = ()
    anycast_mac: str | None = None

    def routing(self, vni: int) -> VniRouting | None:
        for routing in self.vnis:
            if routing.vni == vni:
                return routing
        return None

    def vrf(self, name: str) -> VrfRouting | None:
        for vrf in self.vrfs:
            if vrf.name == name:
                return vrf
        return None

    def vrf_by_l3vni(self, l3vni: int) -> VrfRouting | None:
        for vrf in self.vrfs:
            if vrf.l3vni == l3vni:
                return vrf
        return None

    def router_mac(self, vtep_ip: str) -> str | None:
        """The router MAC of our ToR with this VTEP IP."""
        for vtep, mac in self.router_macs:
            if vtep == vtep_ip:
                return mac
        return None

    def gateway_vni(self, ip: str, vni: int | None, vrf: str | None) -> int | None:
        """The routed VNI whose anycast gateway IP ``ip`` is, among VNI
        ``vni`` and the VNIs routed in VRF ``vrf``; None when it is none's.
        A VNI with an IPv6 subnet has the gateway's link-local address too
        (fe80:: and the EUI-64 of the anycast MAC, the same in every VNI)."""
        lla = _link_local(self.anycast_mac) if self.anycast_mac is not None else None
        for routing in self.vnis:
            if (routing.vni == vni or (vrf is not None and routing.vrf == vrf)) and (
                ip in routing.gateways
                or (ip == lla and any(":" in subnet for subnet in routing.subnets))
            ):
                return routing.vni
        return None

    def own_macs(self) -> frozenset[str]:
        """Our ToRs' router MACs and the anycast gateway MAC."""
        macs = {mac for _, mac in self.router_macs}
        if self.anycast_mac is not None:
            macs.add(self.anycast_mac)
        return frozenset(macs)

    def for_fabric(self, fabric: Fabric) -> EvpnConfig:
        """This config with the routing model of ``fabric`` copied in: each
        VNI's VRF and subnets, a VrfRouting for every fabric VRF (the ones
        given here keep their RD, route targets and switch; the others get
        the automatic ones), the ToRs' router MACs and the anycast MAC."""
        vnis = []
        for routing in self.vnis:
            spec = fabric.vnis.get(routing.vni)
            vrf = spec.vrf if spec is not None else None
            subnets = tuple(s.prefix for s in spec.subnets) if spec is not None else ()
            gateways = tuple(s.gateway for s in spec.subnets) if spec is not None else ()
            vnis.append(
                replace(
                    routing,
                    vrf=vrf,
                    subnets=subnets if vrf else (),
                    gateways=gateways if vrf else (),
                )
            )
        given = {v.name: v for v in self.vrfs}
        vrfs = []
        for name in sorted(fabric.vrfs):
            spec_vrf = fabric.vrfs[name]
            routes = tuple((r.prefix, r.next_hop) for r in spec_vrf.routes)
            base = given.get(name)
            if base is None:
                auto = (auto_route_target(self.asn, spec_vrf.l3vni),)
                base = VrfRouting(name, spec_vrf.l3vni, None, auto, auto)
            vrfs.append(replace(base, l3vni=spec_vrf.l3vni, static_routes=routes))
        return replace(
            self,
            vnis=tuple(vnis),
            vrfs=tuple(vrfs),
            router_macs=tuple(
                sorted((t.vtep_ip, canonical_mac(t.router_mac)) for t in fabric.tors.values())
            ),
            anycast_mac=(
                canonical_mac(fabric.anycast_gateway_mac)
                if fabric.anycast_gateway_mac is not None
                else None
            ),
        )


def _route_targets(
    doc: _Doc, path: tuple[Any, ...], asn: int, vni: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    value = doc.get(path, AUTO)
    if isinstance(value, dict):
        unknown = set(value) - {"import", "export"}
        if unknown:
            raise doc.error(path + (min(unknown),), "expected import or export")
        directions = {d: value.get(d, [AUTO]) for d in ("import", "export")}
    else:
        directions = {"import": value, "export": value}
    result: dict[str, tuple[str, ...]] = {}
    for direction, items in directions.items():
        where = path + (direction,) if isinstance(value, dict) else path
        if not isinstance(items, list):
            items = [items]
        rts: set[str] = set()
        for item in items:
            text = str(item).strip()
            if text == AUTO:
                rts.add(auto_route_target(asn, vni))
            elif text.startswith("*:") and direction == "import":
                if not text[2:].isdigit():
                    raise doc.error(where, f"{text!r}: the wildcard form is *:N")
                rts.add(text)
            else:
                try:
                    rts.add(canonical_rt(text))
                except RouteError as exc:
                    raise doc.error(where, str(exc)) from None
        if not rts:
            raise doc.error(where, f"at least one {direction} route target is needed")
        result[direction] = tuple(sorted(rts))
    return result["import"], result["export"]


def parse_evpn(
    doc: _Doc,
    fabric_vnis: Iterable[int],
    own_vteps: Iterable[str],
    root: tuple[Any, ...] = ("evpn",),
    *,
    fabric: Fabric | None = None,
) -> EvpnConfig | None:
    """The ``evpn`` section, or None when the file has none. fabric_vnis and
    own_vteps are the fabric's VNIs and its ToRs' VTEP IPs (a static VTEP may
    not be one of ours; only fabric VNIs can be routed). ``fabric``: the
    fabric with its routing model loaded; its VRFs are what ``vrfs:`` may
    name, and the result carries its routing facts (``for_fabric``)."""
    if doc.get(root, {}) == {}:
        return None
    # A fabric VNI out of range is the fabric validation's to report; skip it here.
    known_vnis = sorted(v for v in set(fabric_vnis) if 1 <= v <= VNI_MAX)
    ours = set(own_vteps)

    asn = doc.typed(root + ("asn",), int)
    if not 1 <= asn <= 0xFFFFFFFF:
        raise doc.error(root + ("asn",), f"ASN {asn} is outside 1..4294967295")
    router_id = _ipv4(doc, root + ("router_id",))
    hold_time = doc.typed(root + ("hold_time",), int, 9)
    if hold_time != 0 and not 3 <= hold_time <= 65535:
        raise doc.error(root + ("hold_time",), "expected 0 or 3..65535 seconds (RFC 4271 4.2)")
    listen_port = doc.typed(root + ("listen_port",), int, 179)
    if listen_port != -1 and not 1 <= listen_port <= 65535:
        raise doc.error(root + ("listen_port",), "expected a TCP port or -1 (do not listen)")

    peers: list[EvpnPeer] = []
    for i, _ in enumerate(doc.list(root + ("peers",), required=False)):
        p = root + ("peers", i)
        try:
            address = str(ipaddress.ip_address(doc.typed(p + ("address",), str)))
        except ValueError:
            raise doc.error(p + ("address",), "expected an IP address") from None
        peer_asn = doc.typed(p + ("asn",), int)
        if not 1 <= peer_asn <= 0xFFFFFFFF:
            raise doc.error(p + ("asn",), f"ASN {peer_asn} is outside 1..4294967295")
        if any(existing.address == address for existing in peers):
            raise doc.error(p + ("address",), f"peer {address} listed twice")
        peers.append(EvpnPeer(address, peer_asn, doc.typed(p + ("password",), str, None)))

    overrides: dict[int, tuple[Any, ...]] = {}
    for i, _ in enumerate(doc.list(root + ("vnis",), required=False)):
        p = root + ("vnis", i)
        vni = doc.typed(p + ("vni",), int)
        if vni not in known_vnis:
            raise doc.error(p + ("vni",), f"VNI {vni} is not one of the fabric's vnis")
        if vni in overrides:
            raise doc.error(p + ("vni",), f"VNI {vni} listed twice")
        overrides[vni] = p

    routings: list[VniRouting] = []
    # The automatic RDs of MAC-VRFs and IP-VRFs share one space per ToR
    # (<VTEP IP>:<low 16 bits>): an L3 VNI counts here like a VNI.
    auto_rd_owner: dict[int, int] = {}
    for vni in known_vnis:
        o = overrides.get(vni)
        rd: str | None = None
        if o is not None and str(doc.get(o + ("rd",), AUTO)) != AUTO:
            try:
                rd = canonical_rd(str(doc.get(o + ("rd",))))
            except RouteError as exc:
                raise doc.error(o + ("rd",), str(exc)) from None
        if rd is None:
            # The auto RD keeps the VNI's low 16 bits: two VNIs that share them
            # would share an RD on every ToR, so one of them needs an explicit rd.
            other = auto_rd_owner.setdefault(vni & 0xFFFF, vni)
            if other != vni:
                raise doc.error(
                    o or root,
                    f"VNIs {other} and {vni} would get the same automatic RD; give one an rd",
                )
        if o is not None:
            imports, exports = _route_targets(doc, o + ("route_targets",), asn, vni)
        else:
            imports = exports = (auto_route_target(asn, vni),)
        routings.append(VniRouting(vni, rd, imports, exports))

    vrfs = _vrfs(doc, root, asn, fabric, auto_rd_owner)

    statics: list[StaticVtep] = []
    static_macs: dict[tuple[int, str], str] = {}
    for i, _ in enumerate(doc.list(root + ("static_vteps",), required=False)):
        p = root + ("static_vteps", i)
        vtep_ip = _ipv4(doc, p + ("vtep_ip",))
        if vtep_ip in ours:
            raise doc.error(p + ("vtep_ip",), f"{vtep_ip} is one of this fabric's own ToR VTEPs")
        if any(s.vtep_ip == vtep_ip for s in statics):
            raise doc.error(p + ("vtep_ip",), f"static VTEP {vtep_ip} listed twice")
        vnis: list[int] = []
        for j, _ in enumerate(doc.list(p + ("vnis",))):
            vni = doc.typed(p + ("vnis", j), int)
            if vni not in known_vnis:
                raise doc.error(p + ("vnis", j), f"VNI {vni} is not one of the fabric's vnis")
            vnis.append(vni)
        macs: list[StaticMac] = []
        for j, _ in enumerate(doc.list(p + ("macs",), required=False)):
            m = p + ("macs", j)
            vni = doc.typed(m + ("vni",), int)
            if vni not in vnis:
                raise doc.error(m + ("vni",), f"VNI {vni} is not in this static VTEP's vnis")
            try:
                mac = unicast_mac(doc.typed(m + ("mac",), str))
            except RouteError as exc:
                raise doc.error(m + ("mac",), str(exc)) from None
            if (vni, mac) in static_macs:
                raise doc.error(
                    m + ("mac",), f"{mac} in VNI {vni} is already behind {static_macs[vni, mac]}"
                )
            static_macs[vni, mac] = vtep_ip
            ips = doc.get(m + ("ips",), [])
            ips = ips if isinstance(ips, list) else [ips]
            checked = []
            for k, ip in enumerate(ips):
                try:
                    checked.append(str(ipaddress.ip_address(str(ip))))
                except ValueError:
                    raise doc.error(m + ("ips", k), f"{ip!r} is not an IP address") from None
            macs.append(StaticMac(vni, mac, tuple(checked)))
        statics.append(StaticVtep(vtep_ip, tuple(vnis), tuple(macs)))

    config = EvpnConfig(
        asn=asn,
        router_id=router_id,
        peers=tuple(peers),
        vnis=tuple(routings),
        static_vteps=tuple(statics),
        hold_time=hold_time,
        listen_port=listen_port,
        vrfs=vrfs,
    )
    return config if fabric is None else config.for_fabric(fabric)


VRF_KEYS = ("name", "rd", "route_targets", "advertise_prefixes")


def _vrfs(
    doc: _Doc,
    root: tuple[Any, ...],
    asn: int,
    fabric: Fabric | None,
    auto_rd_owner: dict[int, int],
) -> tuple[VrfRouting, ...]:
    """``evpn.vrfs``: RD, route targets and the type 5 switch of fabric VRFs
    (the same rules as ``vnis``); the VRFs not listed get the defaults."""
    l3vnis = {} if fabric is None else {name: v.l3vni for name, v in fabric.vrfs.items()}
    overrides: dict[str, tuple[Any, ...]] = {}
    for i, item in enumerate(doc.list(root + ("vrfs",), required=False)):
        p = root + ("vrfs", i)
        if not isinstance(item, dict):
            raise doc.error(p, f"expected a mapping with {', '.join(VRF_KEYS)}")
        unknown = sorted(set(item) - set(VRF_KEYS))
        if unknown:
            raise doc.error(p + (unknown[0],), f"unknown field (expected {', '.join(VRF_KEYS)})")
        name = doc.typed(p + ("name",), str)
        if name not in l3vnis:
            raise doc.error(p + ("name",), f"VRF {name!r} is not one of the fabric's vrfs")
        if name in overrides:
            raise doc.error(p + ("name",), f"VRF {name!r} listed twice")
        overrides[name] = p
    out = []
    for name in sorted(l3vnis):
        l3vni = l3vnis[name]
        o = overrides.get(name)
        rd: str | None = None
        if o is not None and str(doc.get(o + ("rd",), AUTO)) != AUTO:
            try:
                rd = canonical_rd(str(doc.get(o + ("rd",))))
            except RouteError as exc:
                raise doc.error(o + ("rd",), str(exc)) from None
        if rd is None and 1 <= l3vni <= VNI_MAX:
            other = auto_rd_owner.setdefault(l3vni & 0xFFFF, l3vni)
            if other != l3vni:
                raise doc.error(
                    o or root,
                    f"VNI {other} and VRF {name}'s L3 VNI {l3vni} would get the same "
                    "automatic RD; give one an rd",
                )
        if o is not None:
            imports, exports = _route_targets(doc, o + ("route_targets",), asn, l3vni)
            advertise = doc.typed(o + ("advertise_prefixes",), bool, True)
        else:
            imports = exports = (auto_route_target(asn, l3vni),)
            advertise = True
        out.append(VrfRouting(name, l3vni, rd, imports, exports, advertise))
    return tuple(out)


def _ipv4(doc: _Doc, path: tuple[Any, ...]) -> str:
    try:
        return canonical_ipv4(doc.typed(path, str))
    except RouteError as exc:
        raise doc.error(path, str(exc)) from None
