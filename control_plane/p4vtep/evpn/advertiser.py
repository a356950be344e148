"""What we originate: type 2 for every winning local MAC (MAC alone, then
MAC+IP for each IP), type 3 for every VNI present on a ToR; kept in step with
the speaker by difference, so an unchanged route is never sent twice."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Protocol

from .config import EvpnConfig
from .routes import InclusiveMulticastRoute, MacIpRoute
from .table import LocalAdvertisement

log = logging.getLogger(__name__)

Route = MacIpRoute | InclusiveMulticastRoute


class Announcer(Protocol):
    def announce(self, route: Route) -> None: ...
    def withdraw(self, route: Route) -> None: ...


def desired_routes(
    config: EvpnConfig,
    advertisements: Iterable[LocalAdvertisement],
    vnis_by_vtep: Mapping[str, Iterable[int]],
) -> dict[tuple[object, ...], Route]:
    routes: dict[tuple[object, ...], Route] = {}
    for adv in advertisements:
        routing = config.routing(adv.vni)
        if routing is None:
            continue  # a VNI the EVPN section does not route
        for ip in (None, *sorted(adv.ips)):
            route: Route = MacIpRoute(
                rd=routing.rd_for(adv.vtep),
                mac=adv.mac,
                vni=adv.vni,
                next_hop=adv.vtep,
                ip=ip,
                route_targets=routing.export_rts,
                mobility_seq=adv.seq,
            )
            routes[route.nlri_key()] = route
    for vtep, vnis in vnis_by_vtep.items():
        for vni in vnis:
            routing = config.routing(vni)
            if routing is None:
                continue
            route = InclusiveMulticastRoute(
                rd=routing.rd_for(vtep),
                vni=vni,
                originator=vtep,
                next_hop=vtep,
                route_targets=routing.export_rts,
            )
            routes[route.nlri_key()] = route
    return routes


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
