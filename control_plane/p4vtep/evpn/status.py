"""What an operator sees of EVPN: each session with its route counts, every
route (learned, refused, static, ours) with its fate, the refusals by reason,
and session up/down as controller events. Read by the API (`p4vtep evpn
peers`, `p4vtep evpn routes`) and the Prometheus collector."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, replace

import grpc

from .. import events
from .routes import EvpnRoute, IpPrefixRoute, MacIpRoute
from .service import EvpnService, SessionChange
from .view import LOCAL

log = logging.getLogger(__name__)

# The state of every peer while gobgpd itself is not running (it died, or is
# being restarted): no session can be up.
SPEAKER_DOWN = "SPEAKER-DOWN"
# GoBGP's session states (apipb.PeerState.SessionState), for stable metrics.
SESSION_STATES = ("IDLE", "CONNECT", "ACTIVE", "OPENSENT", "OPENCONFIRM", "ESTABLISHED")


@dataclass(frozen=True)
class PeerReport:
    address: str
    asn: int
    state: str
    uptime: float  # seconds since the session came up; 0 when it is not up
    received: int  # EVPN paths in gobgpd's adj-RIB-in for the peer (refused ones too)
    accepted: int  # of those, held in the learned table
    advertised: int  # EVPN paths sent to the peer


@dataclass(frozen=True)
class RouteReport:
    type: int  # 2, 3 or 5
    vni: int  # type 5: the L3 VNI (its label)
    mac: str  # type 2
    ips: tuple[str, ...]  # type 5: the prefix
    vtep: str
    seq: int
    source: str  # peer address, "static" or "local"
    rd: str
    installed: bool  # remote: the ToRs get it; local: advertised
    refused: str  # why not: an intake reason, "conflict" or "superseded"
    vrf: str = ""  # the VRF of its host or prefix route (received routes admitted into one)
    l3vni: int = 0  # type 2: its second label
    router_mac: str = ""  # the Router's MAC extended community


def peer_reports(service: EvpnService, now: float | None = None) -> list[PeerReport]:
    """Every configured peer, in the fabric file's order."""
    now = time.time() if now is None else now
    statuses = {}
    if service.speaker.running:
        try:
            statuses = {p.address: p for p in service.speaker.peers()}
        except grpc.RpcError as exc:  # gobgpd going away under us
            log.warning("EVPN: gobgpd did not list its peers: %s", exc.details())
    accepted = service.view.learned_counts()
    reports = []
    for peer in service.config.peers:
        status = statuses.get(peer.address)
        if status is None:
            reports.append(
                PeerReport(peer.address, peer.asn, SPEAKER_DOWN, 0.0, 0, accepted[peer.address], 0)
            )
            continue
        reports.append(
            PeerReport(
                peer.address,
                peer.asn,
                status.state,
                max(0.0, now - status.uptime) if status.uptime else 0.0,
                status.received,
                accepted[peer.address],
                status.advertised,
            )
        )
    return reports


def refusals(service: EvpnService) -> Counter[str]:
    """Routes refused since start, by reason (the intake's and the table's conflicts)."""
    return Counter(dict(service.intake.refused)) + Counter(dict(service.table.refused))


def route_reports(service: EvpnService, vni: int | None = None) -> list[RouteReport]:
    """Learned and static routes with their fate, the refused routes peers
    still advertise, and the routes we originate; optionally of one VNI."""
    reports = [
        RouteReport(
            h.type,
            h.vni,
            h.mac,
            tuple(sorted(h.ips)),
            h.vtep,
            h.seq,
            h.source,
            h.rd,
            not h.lost,
            h.lost,
            h.vrf,
            h.l3vni,
            h.router_mac,
        )
        for h in service.view.held_routes()
    ]
    for (source, _), (route, reason) in dict(service.intake.held_refused).items():
        reports.append(_report(route, source, installed=False, refused=reason))
    for route in dict(service.advertiser.announced).values():
        report = _report(route, LOCAL, installed=True, refused="")
        vrf = service.config.vrf_by_l3vni(report.l3vni) if report.l3vni else None
        reports.append(replace(report, vrf=vrf.name) if vrf is not None else report)
    if vni is not None:
        reports = [r for r in reports if r.vni == vni]
    return sorted(reports, key=lambda r: (r.vni, r.type, r.mac, r.ips, r.vtep, r.source))


def _report(route: EvpnRoute, source: str, installed: bool, refused: str) -> RouteReport:
    if isinstance(route, MacIpRoute):
        ips = (route.ip,) if route.ip else ()
        return RouteReport(
            2,
            route.vni,
            route.mac,
            ips,
            route.next_hop,
            route.mobility_seq,
            source,
            route.rd,
            installed,
            refused,
            l3vni=route.l3vni or 0,
            router_mac=route.router_mac or "",
        )
    if isinstance(route, IpPrefixRoute):
        return RouteReport(
            5,
            route.l3vni,
            "",
            (route.prefix,),
            route.next_hop,
            0,
            source,
            route.rd,
            installed,
            refused,
            l3vni=route.l3vni,
            router_mac=route.router_mac or "",
        )
    return RouteReport(3, route.vni, "", (), route.vtep, 0, source, route.rd, installed, refused)


def publish_sessions(service: EvpnService, bus: events.EventBus) -> None:
    """Session up/down as controller events (WatchEvents, logs, metrics)."""

    def publish(change: SessionChange) -> None:
        if change.up:
            bus.publish(events.EvpnSessionUp(peer=change.peer, asn=change.asn))
        else:
            bus.publish(
                events.EvpnSessionDown(
                    peer=change.peer, asn=change.asn, routes_withdrawn=change.withdrawn
                )
            )

    service.on_session(publish)
