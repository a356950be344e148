"""Admission of received routes: what a peer may teach us.

A route is refused, with one log line and a counter by reason, when it is for
a VNI we do not route, when its route targets and its label name different
VNIs, when its next hop is one of our own ToR VTEPs (our routes reflected
back, or a peer claiming our addresses), or when it carries a MAC no host can
own. Routed routes (symmetric IRB: a type 2 with a second label, a type 5)
are refused too when they lack the Router's MAC extended community, carry one
of our own MACs as router MAC, name no VRF of ours, or (type 5) rely on an
overlay index (gateway IP or ESI: not supported). Nothing is raised: a bad
route must never stop the speaker's loop.

Both families are taken alike: an IPv6 host (type 2) becomes a host route
and its MAC's ND entry as an IPv4 one becomes a host route and an ARP entry,
an IPv6 prefix (type 5) a prefix route. An IPv6 address that is never a
routed host's (link-local fe80::/10, multicast ff00::/8, and ::/8 with the
unspecified, loopback and IPv4-mapped addresses: ``routes.ipv6_scope``, the
ranges the data plane drops as ``ipv6_scope``) is neither routed (RFC 4291
2.5.6) nor given to ND suppression: the NS for it is flooded in its VNI, as
for our own VMs' link-local addresses, which the model does not know. Such
a type 2 is still taken for its MAC in a VNI we host; with nothing else to
use it for, it is refused (``ipv6-scope``), as is a type 5 for such a
prefix.

An admitted route says what it is good for (``Admitted``): its MAC in its L2
VNI (``bridged``: a VNI this fabric hosts, imported by its route targets),
and a host or prefix route in a VRF (``vrf``). A two-label type 2 whose L2
VNI we do not host is admitted for its VRF alone (symmetric IRB); one whose
VRF we do not have, for its MAC alone. A single-label MAC+IP route in a
routed VNI we host is also a host route in that VNI's VRF (asymmetric IRB on
receive: routed to the host in its own VNI).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..model.addressing import link_local
from .config import EvpnConfig, VniRouting, VrfRouting
from .routes import (
    SINGLE_HOMED_ESI,
    EvpnRoute,
    InclusiveMulticastRoute,
    IpPrefixRoute,
    MacIpRoute,
    RouteError,
    ipv6_prefix_scope,
    ipv6_scope,
    unicast_mac,
)

log = logging.getLogger(__name__)

# Refusal reasons of routed routes (the L2 ones are spelt where they are found).
NO_ROUTER_MAC = "no-router-mac"
OWN_ROUTER_MAC = "own-router-mac"
OVERLAY_INDEX = "overlay-index"
UNKNOWN_VRF = "unknown-vrf"
L3VNI_TYPE3 = "l3vni-type3"
IPV6_SCOPE = "ipv6-scope"
GATEWAY_IP = "gateway-ip"
# Distinct (L2 VNI, L3 VNI, route targets) and router MACs remembered, each.
LABELS_MAX = 4096
ZERO_MAC = "00:00:00:00:00:00"


@dataclass(frozen=True)
class Admitted:
    """What an admitted route is used for."""

    vrf: str | None = None  # the VRF of its host (type 2) or prefix (type 5) route
    bridged: bool = True  # type 2: its MAC (and IPs) in its L2 VNI
    # type 2, bridged: its IP goes to the ToRs' ARP or ND suppression with
    # its MAC (False: an IPv6 address of a never-routed scope, see above)
    neighbour: bool = True


# The few distinct verdicts of an admitted route, made once: a peer's table
# is thousands of routes with one of them each.
_ADMITTED: dict[tuple[str | None, bool, bool], Admitted] = {}


def _admitted(vrf: str | None, bridged: bool, neighbour: bool) -> Admitted:
    key = (vrf, bridged, neighbour)
    verdict = _ADMITTED.get(key)
    if verdict is None:
        if len(_ADMITTED) >= LABELS_MAX:
            _ADMITTED.clear()
        verdict = _ADMITTED[key] = Admitted(vrf=vrf, bridged=bridged, neighbour=neighbour)
    return verdict


@dataclass
class RouteIntake:
    config: EvpnConfig
    own_vteps: frozenset[str]
    refused: Counter[str] = field(default_factory=Counter)
    accepted: Counter[str] = field(default_factory=Counter)  # by peer
    # The refused routes a peer still advertises (latest version per NLRI),
    # with the reason: what `p4vtep evpn routes` shows next to the accepted
    # ones. Bounded by the peer's own table; gone on withdrawal or session down.
    held_refused: dict[tuple[str, tuple[object, ...]], tuple[EvpnRoute, str]] = field(
        default_factory=dict
    )

    @functools.cached_property
    def _own_macs(self) -> frozenset[str]:
        return self.config.own_macs()

    @functools.cached_property
    def _gateway_ips(self) -> frozenset[str]:
        """Every IP ``EvpnConfig.gateway_vni`` may name (the VNIs' gateways,
        the anycast link-local address): a route's IP outside them is no
        gateway's, without the walk of every VNI."""
        ips = {ip for routing in self.config.vnis for ip in routing.gateways}
        if self.config.anycast_mac is not None:
            ips.add(link_local(self.config.anycast_mac))
        return frozenset(ips)

    @functools.cached_property
    def _labels(
        self,
    ) -> dict[
        tuple[int, int, tuple[str, ...]],
        tuple[VniRouting | None, bool, VrfRouting | tuple[str, str]],
    ]:
        """(L2 VNI, L3 VNI, route targets) -> what ``_symmetric`` makes of
        them (a peer's routes share a few: looked up once each)."""
        return {}

    @functools.cached_property
    def _router_macs(self) -> dict[str, tuple[str, str] | None]:
        """Router MAC -> ``_router_mac``'s verdict on it."""
        return {}

    @classmethod
    def build(cls, config: EvpnConfig, own_vteps: Iterable[str]) -> RouteIntake:
        return cls(config, frozenset(own_vteps))

    def admit(self, source: str, route: EvpnRoute) -> Admitted | None:
        """What the route may be used for, or None when it is refused."""
        verdict = self._verdict(route)
        if isinstance(verdict, Admitted):
            self.accepted[source] += 1
            if self.held_refused:  # (a refused version of it no longer held)
                self.held_refused.pop((source, route.nlri_key()), None)
            return verdict
        self.held_refused[(source, route.nlri_key())] = (route, verdict[0])
        self.refuse(source, verdict[0], f"{_describe(route)}: {verdict[1]}")
        return None

    def forget(self, source: str, nlri_key: tuple[object, ...]) -> None:
        """The peer withdrew the route: a refused version is no longer held."""
        self.held_refused.pop((source, nlri_key), None)

    def forget_source(self, source: str) -> None:
        """The session went down: nothing it sent is held any more."""
        for key in [k for k in self.held_refused if k[0] == source]:
            del self.held_refused[key]

    def refuse(self, source: str, reason: str, detail: str) -> None:
        self.refused[reason] += 1
        log.warning("EVPN: refused a route from %s (%s): %s", source, reason, detail)

    # ---- the rules ------------------------------------------------------------

    def _verdict(self, route: EvpnRoute) -> Admitted | tuple[str, str]:
        verdict = self._use(route)
        if (
            isinstance(verdict, Admitted)
            and isinstance(route, MacIpRoute)
            and route.ip
            and route.ip in self._gateway_ips
        ):
            # Our anycast gateway IP is the ToRs' own (ARP suppression answers
            # it, the host table holds it as the gateway): a host elsewhere
            # with it would take the gateway's entries.
            vni = self.config.gateway_vni(
                route.ip, route.vni if verdict.bridged else None, verdict.vrf
            )
            if vni is not None:
                return GATEWAY_IP, f"{route.ip} is the anycast gateway IP of VNI {vni}"
        return verdict

    def _use(self, route: EvpnRoute) -> Admitted | tuple[str, str]:
        if isinstance(route, IpPrefixRoute):
            return self._prefix(route)
        if isinstance(route, InclusiveMulticastRoute):
            if self.config.vrf_by_l3vni(route.vni) is not None:
                vrf = self.config.vrf_by_l3vni(route.vni)
                assert vrf is not None
                return L3VNI_TYPE3, (
                    f"VNI {route.vni} is the L3 VNI of VRF {vrf.name}: nothing is flooded in it"
                )
            problem = self._l2(route)
            return problem if problem is not None else Admitted()
        if route.l3vni is not None:
            return self._symmetric(route)
        problem = self._l2(route)
        if problem is not None:
            return problem
        neighbour = route.ip is None or ipv6_scope(route.ip) is None
        # Asymmetric on receive: the host's IP routed to it in its own VNI,
        # when we route that VNI.
        routing = self.config.routing(route.vni)
        routed_in = routing.vrf if routing is not None else None
        if routed_in is not None and route.ip is not None and neighbour:
            return Admitted(vrf=routed_in)
        return Admitted(neighbour=neighbour)

    def _l2(self, route: MacIpRoute | InclusiveMulticastRoute) -> tuple[str, str] | None:
        """The checks of an L2 route (its label is a VNI of ours)."""
        routing = self.config.routing(route.vni)
        if routing is None:
            return "unknown-vni", f"VNI {route.vni} is not routed by this fabric"
        if not routing.imports(route.route_targets):
            others = [r.vni for r in self.config.vnis if r.imports(route.route_targets)]
            if others:
                return "vni-mismatch", (
                    f"label says VNI {route.vni}, route targets "
                    f"{', '.join(route.route_targets)} say VNI {others[0]}"
                )
            return "no-route-target", (
                f"route targets {', '.join(route.route_targets) or '(none)'} are not imported "
                f"for VNI {route.vni}"
            )
        return self._common(route)

    def _common(self, route: EvpnRoute) -> tuple[str, str] | None:
        vtep = route.vtep if isinstance(route, InclusiveMulticastRoute) else route.next_hop
        if vtep in self.own_vteps or route.next_hop in self.own_vteps:
            return "own-vtep", f"next hop {vtep} is one of our own ToR VTEPs"
        if isinstance(route, MacIpRoute):
            mac = route.mac  # (canonical: a route's MAC is)
            if int(mac[:2], 16) & 1 or mac == ZERO_MAC:
                try:
                    unicast_mac(mac)
                except RouteError as exc:
                    return "bad-mac", str(exc)
            if route.mac == self.config.anycast_mac:
                return "bad-mac", f"{route.mac} is this fabric's anycast gateway MAC"
        return None

    def _router_mac(self, route: MacIpRoute | IpPrefixRoute) -> tuple[str, str] | None:
        if route.router_mac is None:
            return NO_ROUTER_MAC, "no Router's MAC extended community (RFC 9135 8.1)"
        if route.router_mac in self._own_macs:
            what = (
                "this fabric's anycast gateway MAC"
                if route.router_mac == self.config.anycast_mac
                else "the router MAC of one of our ToRs"
            )
            return OWN_ROUTER_MAC, f"router MAC {route.router_mac} is {what}"
        try:
            unicast_mac(route.router_mac)
        except RouteError as exc:
            return NO_ROUTER_MAC, f"router MAC: {exc}"
        return None

    def _vrf(self, l3vni: int, route_targets: tuple[str, ...]) -> VrfRouting | tuple[str, str]:
        """The VRF a routed route imports into: the one whose L3 VNI its
        label names, if its route targets import there."""
        vrf = self.config.vrf_by_l3vni(l3vni)
        if vrf is None:
            return UNKNOWN_VRF, f"L3 VNI {l3vni} is the L3 VNI of none of our VRFs"
        if not vrf.imports(route_targets):
            others = [v.name for v in self.config.vrfs if v.imports(route_targets)]
            if others:
                return "vni-mismatch", (
                    f"label says L3 VNI {l3vni} (VRF {vrf.name}), route targets "
                    f"{', '.join(route_targets)} say VRF {others[0]}"
                )
            return "no-route-target", (
                f"route targets {', '.join(route_targets) or '(none)'} are not imported "
                f"into VRF {vrf.name}"
            )
        return vrf

    def _symmetric(self, route: MacIpRoute) -> Admitted | tuple[str, str]:
        """A type 2 with a second label (the L3 VNI)."""
        problem = self._common(route)
        if problem is None:
            router_mac = route.router_mac
            if router_mac is None or router_mac not in self._router_macs:
                problem = self._router_mac(route)
                if router_mac is not None and len(self._router_macs) < LABELS_MAX:
                    self._router_macs[router_mac] = problem
            else:
                problem = self._router_macs[router_mac]
        if problem is not None:
            return problem
        assert route.l3vni is not None
        labels = (route.vni, route.l3vni, route.route_targets)
        found = self._labels.get(labels)
        if found is None:
            routing = self.config.routing(route.vni)
            found = (
                routing,
                routing is not None and routing.imports(route.route_targets),
                self._vrf(route.l3vni, route.route_targets),
            )
            if len(self._labels) < LABELS_MAX:
                self._labels[labels] = found
        routing, bridged, vrf = found
        scope = ipv6_scope(route.ip) if route.ip is not None else None
        neighbour = scope is None
        routed = isinstance(vrf, VrfRouting) and route.ip is not None and scope is None
        if isinstance(vrf, VrfRouting) and (routed or bridged):
            return _admitted(vrf.name if routed else None, bridged, neighbour)
        if bridged:
            # (its MAC in a VNI we host; no VRF of ours for its IP)
            return Admitted(neighbour=neighbour)
        if isinstance(vrf, VrfRouting):
            # A VRF of ours, but nothing to route: no address, or one of a
            # scope never routed, of a host in an L2 VNI we do not host.
            if scope is not None:
                return IPV6_SCOPE, (
                    f"{route.ip} is {_scope_name(scope)}: never routed (RFC 4291 2.5.6), "
                    f"and its MAC is not for a VNI of ours (VNI {route.vni})"
                )
            reason = "unknown-vni" if routing is None else "no-route-target"
            return reason, (
                f"its MAC is not for a VNI of ours (VNI {route.vni}) and "
                f"it has no IP to route in VRF {vrf.name}"
            )
        return vrf

    def _prefix(self, route: IpPrefixRoute) -> Admitted | tuple[str, str]:
        problem = self._common(route)
        if problem is not None:
            return problem
        scope = ipv6_prefix_scope(route.prefix)
        if scope is not None:
            return IPV6_SCOPE, f"{route.prefix} lies in {_scope_name(scope)}: never routed"
        if route.gateway_ip is not None or route.esi != SINGLE_HOMED_ESI:
            index = (
                f"gateway IP {route.gateway_ip}"
                if route.gateway_ip is not None
                else f"ESI {route.esi}"
            )
            return OVERLAY_INDEX, (
                f"overlay index {index} set: recursive resolution (RFC 9136 3.2) "
                "is not supported, only interface-less routes"
            )
        problem = self._router_mac(route)
        if problem is not None:
            return problem
        vrf = self._vrf(route.l3vni, route.route_targets)
        return Admitted(vrf=vrf.name) if isinstance(vrf, VrfRouting) else vrf


def _scope_name(scope: str) -> str:
    """ "fe80::/10: link-local" -> "link-local (fe80::/10)"."""
    network, _, what = scope.partition(": ")
    return f"{what} ({network})"


def _describe(route: EvpnRoute) -> str:
    if isinstance(route, MacIpRoute):
        ip = f" {route.ip}" if route.ip else ""
        l3 = f" L3 VNI {route.l3vni}" if route.l3vni is not None else ""
        return f"type 2 {route.mac}{ip} VNI {route.vni}{l3} via {route.next_hop} (rd {route.rd})"
    if isinstance(route, IpPrefixRoute):
        return f"type 5 {route.prefix} L3 VNI {route.l3vni} via {route.next_hop} (rd {route.rd})"
    return f"type 3 VNI {route.vni} VTEP {route.vtep} (rd {route.rd})"
