"""What we originate: type 2 for every winning local MAC (MAC alone, then
MAC+IP for each IP), type 3 for every VNI present on a ToR, and for routed
tenants (symmetric IRB, RFC 9135 / RFC 9136) the MAC+IP routes with the L3
VNI and type 5 for the subnets and static routes of each VRF; kept in step
with the speaker by difference, so an unchanged route is never sent twice.

A VM's MAC+IP route in a routed VNI carries labels [L2 VNI, L3 VNI], the
route targets of both the MAC-VRF and the IP-VRF, and its ToR's router MAC;
its MAC-only route keeps one label. IPv4 and IPv6 alike: a MAC+IP route per
address of either family (never a link-local one: the model has none, and
none is sent), and a type 5 per subnet and static route of either family.
Type 5 routes are interface-less (ESI 0, gateway IP 0 of the prefix's
family, label = the L3 VNI, the ToR's router MAC): one per subnet from
every ToR hosting a VM of the subnet's VNI, and one per static route from
the ToR whose VM owns the next hop; a VRF can switch them off
(``advertise_prefixes``). Never a type 3 for an L3 VNI, never the anycast
gateway MAC as a host or as a router MAC (FRR drops a route whose router MAC
is one of its own interfaces', and every FRR gateway has the anycast MAC).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from typing import Protocol

from .config import EvpnConfig, VrfRouting
from .routes import EvpnRoute, InclusiveMulticastRoute, IpPrefixRoute, MacIpRoute, ipv6_scope
from .view import LocalAdvertisement

log = logging.getLogger(__name__)

Route = EvpnRoute


class Announcer(Protocol):
    def announce(self, route: Route) -> None: ...
    def withdraw(self, route: Route) -> None: ...


def _vtep_order(vtep: str) -> int:
    return int(ipaddress.IPv4Address(vtep))


def desired_routes(
    config: EvpnConfig,
    advertisements: Iterable[LocalAdvertisement],
    vnis_by_vtep: Mapping[str, Iterable[int]],
) -> dict[tuple[object, ...], Route]:
    routes: dict[tuple[object, ...], Route] = {}
    advertisements = sorted(advertisements, key=lambda a: (a.vni, a.mac))
    for adv in advertisements:
        routing = config.routing(adv.vni)
        if routing is None or adv.mac == config.anycast_mac:
            continue  # a VNI the EVPN section does not route (or, never, the gateway MAC)
        vrf = config.vrf(routing.vrf) if routing.vrf is not None else None
        router_mac = config.router_mac(adv.vtep)
        # (an IPv6 address of a scope never routed, link-local above all, is
        # no host's: RFC 4291 2.5.6; the model refuses them for a VM anyway)
        ips = sorted(ip for ip in adv.ips if ipv6_scope(ip) is None)
        for ip in (None, *ips):
            routed = (
                vrf is not None
                and router_mac is not None
                and router_mac != config.anycast_mac
                and ip is not None
            )
            route: Route = MacIpRoute(
                rd=routing.rd_for(adv.vtep),
                mac=adv.mac,
                vni=adv.vni,
                next_hop=adv.vtep,
                ip=ip,
                route_targets=routing.export_rts + (vrf.export_rts if routed and vrf else ()),
                mobility_seq=adv.seq,
                l3vni=vrf.l3vni if routed and vrf else None,
                router_mac=router_mac if routed else None,
            )
            routes[route.nlri_key()] = route
    for vtep, vnis in vnis_by_vtep.items():
        for vni in vnis:
            routing = config.routing(vni)
            if routing is None or config.vrf_by_l3vni(vni) is not None:
                continue  # (never a type 3 for an L3 VNI: nothing is flooded in it)
            route = InclusiveMulticastRoute(
                rd=routing.rd_for(vtep),
                vni=vni,
                originator=vtep,
                next_hop=vtep,
                route_targets=routing.export_rts,
            )
            routes[route.nlri_key()] = route
    for vrf in config.vrfs:
        if vrf.advertise_prefixes:
            for route in _prefix_routes(config, vrf, advertisements, vnis_by_vtep):
                # (an explicit RD is shared by the ToRs: one prefix, one
                # route, from the lowest VTEP serving it)
                routes.setdefault(route.nlri_key(), route)
    return routes


def _prefix_routes(
    config: EvpnConfig,
    vrf: VrfRouting,
    advertisements: list[LocalAdvertisement],
    vnis_by_vtep: Mapping[str, Iterable[int]],
) -> list[IpPrefixRoute]:
    """Type 5 for a VRF's subnets, from every ToR hosting their VNI, and its
    static routes, from the ToR whose VM owns the next hop (the VM's MAC
    must be ours: a VM that moved away owns nothing here)."""
    out = []
    for vtep in sorted(vnis_by_vtep, key=_vtep_order):
        router_mac = config.router_mac(vtep)
        if router_mac is None or router_mac == config.anycast_mac:
            continue
        prefixes: set[str] = set()
        for vni in vnis_by_vtep[vtep]:
            routing = config.routing(vni)
            if routing is not None and routing.vrf == vrf.name:
                prefixes.update(routing.subnets)
        vnis = {r.vni for r in config.vnis if r.vrf == vrf.name}
        owned = {ip for a in advertisements if a.vtep == vtep and a.vni in vnis for ip in a.ips}
        prefixes.update(prefix for prefix, next_hop in vrf.static_routes if next_hop in owned)
        for prefix in sorted(prefixes):
            out.append(
                IpPrefixRoute(
                    rd=vrf.rd_for(vtep),
                    prefix=prefix,
                    l3vni=vrf.l3vni,
                    next_hop=vtep,
                    route_targets=vrf.export_rts,
                    router_mac=router_mac,
                )
            )
    return out


class Advertiser:
    def __init__(self, config: EvpnConfig, speaker: Announcer) -> None:
        self.config = config
        self.speaker = speaker
        self.announced: dict[tuple[object, ...], Route] = {}

    def sync(
        self,
        advertisements: Iterable[LocalAdvertisement],
        vnis_by_vtep: Mapping[str, Iterable[int]],
    ) -> tuple[int, int]:
        """Announce what is new or changed, withdraw what is gone; returns the
        counts (announced, withdrawn)."""
        want = desired_routes(self.config, advertisements, vnis_by_vtep)
        sent = withdrawn = 0
        for key in [k for k in self.announced if k not in want]:
            try:
                self.speaker.withdraw(self.announced[key])
            except Exception:
                log.exception("EVPN: withdrawing %s failed; will retry", key)
                continue
            del self.announced[key]
            withdrawn += 1
        for key, route in want.items():
            if self.announced.get(key) == route:
                continue
            try:
                self.speaker.announce(route)
            except Exception:
                log.exception("EVPN: announcing %s failed; will retry", key)
                continue
            self.announced[key] = route
            sent += 1
        return sent, withdrawn
