"""Admission of received routes: what a peer may teach us.

A route is refused, with one log line and a counter by reason, when it is for
a VNI we do not route, when its route targets and its label name different
VNIs, when its next hop is one of our own ToR VTEPs (our routes reflected
back, or a peer claiming our addresses), or when it carries a MAC no host can
own. Nothing is raised: a bad route must never stop the speaker's loop.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .config import EvpnConfig
from .routes import InclusiveMulticastRoute, MacIpRoute, RouteError, unicast_mac

log = logging.getLogger(__name__)


@dataclass
class RouteIntake:
    config: EvpnConfig
    own_vteps: frozenset[str]
    refused: Counter[str] = field(default_factory=Counter)
    accepted: Counter[str] = field(default_factory=Counter)  # by peer

    @classmethod
    def build(cls, config: EvpnConfig, own_vteps: Iterable[str]) -> RouteIntake:
        return cls(config, frozenset(own_vteps))

    def admit(self, source: str, route: MacIpRoute | InclusiveMulticastRoute) -> bool:
        reason = self._problem(route)
        if reason is None:
            self.accepted[source] += 1
            return True
        self.refuse(source, reason[0], f"{_describe(route)}: {reason[1]}")
        return False

    def refuse(self, source: str, reason: str, detail: str) -> None:
        self.refused[reason] += 1
        log.warning("EVPN: refused a route from %s (%s): %s", source, reason, detail)

    def _problem(self, route: MacIpRoute | InclusiveMulticastRoute) -> tuple[str, str] | None:
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
        vtep = route.next_hop if isinstance(route, MacIpRoute) else route.vtep
        if vtep in self.own_vteps or route.next_hop in self.own_vteps:
            return "own-vtep", f"next hop {vtep} is one of our own ToR VTEPs"
        if isinstance(route, MacIpRoute):
            try:
                unicast_mac(route.mac)
            except RouteError as exc:
                return "bad-mac", str(exc)
        return None


def _describe(route: MacIpRoute | InclusiveMulticastRoute) -> str:
    if isinstance(route, MacIpRoute):
        ip = f" {route.ip}" if route.ip else ""
        return f"type 2 {route.mac}{ip} VNI {route.vni} via {route.next_hop} (rd {route.rd})"
    return f"type 3 VNI {route.vni} VTEP {route.vtep} (rd {route.rd})"
