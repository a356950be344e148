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
from .routes import EvpnRoute, InclusiveMulticastRoute, MacIpRoute, RouteError, unicast_mac

log = logging.getLogger(__name__)


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

    @classmethod
    def build(cls, config: EvpnConfig, own_vteps: Iterable[str]) -> RouteIntake:
        return cls(config, frozenset(own_vteps))

    def admit(self, source: str, route: MacIpRoute | InclusiveMulticastRoute) -> bool:
        reason = self._problem(route)
        key = (source, route.nlri_key())
        if reason is None:
            self.accepted[source] += 1
            self.held_refused.pop(key, None)
            return True
        self.held_refused[key] = (route, reason[0])
        self.refuse(source, reason[0], f"{_describe(route)}: {reason[1]}")
        return False

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
