"""`p4vtep evpn peers|routes` and the EVPN metrics for the states a live lab
does not easily produce: gobgpd not running, static VTEPs, MAC conflicts and
superseded claims. The EVPN source beside the controller is built but its
gobgpd is never started; routes enter the learned table and the intake
directly, and our own routes go to a recording announcer instead of gobgpd."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from fabric_fixture import two_tor_fabric
from helpers import api_client
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api.metrics import EvpnCollector
from p4vtep.cli import main as cli_main
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.advertiser import Advertiser, Route
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, StaticMac, StaticVtep, VniRouting
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.view import LocalMac
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store
from prometheus_client import CollectorRegistry

MISSING = gobgp_api.MISSING or (
    None if shutil.which("gobgpd") else "gobgpd missing (Debian package gobgpd)"
)
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"{MISSING}: EVPN status tests skipped")

PEER_A, PEER_B = "192.0.2.1", "192.0.2.2"
VTEP_A, VTEP_B, STATIC_VTEP = "198.51.100.1", "198.51.100.2", "198.51.100.50"
MAC, STATIC_MAC = "52:54:00:00:00:01", "52:54:00:00:00:50"
TOR1 = "10.0.0.1"
RT = ("65000:5000",)


class Recorder:
    """Takes our routes where gobgpd would."""

    def __init__(self) -> None:
        self.sent: list[Route] = []

    def announce(self, route: Route) -> None:
        self.sent.append(route)

    def withdraw(self, route: Route) -> None:
        self.sent.remove(route)


def mac_route(vtep: str, seq: int, mac: str = MAC) -> MacIpRoute:
    return MacIpRoute(f"{vtep}:5000", mac, 5000, vtep, route_targets=RT, mobility_seq=seq)


@pytest.fixture
def rig(tmp_path) -> Iterator[tuple[Controller, EvpnService]]:
    """A controller and its EVPN service (not started)."""
    fabric = two_tor_fabric()
    fabric.evpn = EvpnConfig(
        asn=65000,
        router_id="10.0.0.254",
        peers=(EvpnPeer(PEER_A, 65000), EvpnPeer(PEER_B, 65001)),
        vnis=(VniRouting(5000, None, RT, RT),),
        static_vteps=(StaticVtep(STATIC_VTEP, (5000,), (StaticMac(5000, STATIC_MAC, ()),)),),
        listen_port=-1,
    )
    c = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
    service = EvpnSource(c).service
    service.advertiser = Advertiser(service.config, Recorder())
    yield c, service
    service.stop()  # nothing runs; removes the speaker's private directory


def test_without_gobgpd_every_peer_is_speaker_down(rig, capsys) -> None:
    controller, service = rig
    registry = CollectorRegistry()
    registry.register(EvpnCollector(service))
    with api_client(controller, service) as (client, address):
        reply = client.EvpnPeers(pb.EvpnPeersRequest())
        assert [(p.address, p.asn, p.state, p.uptime_seconds) for p in reply.peers] == [
            (PEER_A, 65000, "SPEAKER-DOWN", 0),
            (PEER_B, 65001, "SPEAKER-DOWN", 0),
        ]
        assert cli_main(["--api", address, "evpn", "peers"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].split() == [PEER_A, "65000", "SPEAKER-DOWN", "-", "0", "0", "0"]
    assert registry.get_sample_value("p4vtep_evpn_sessions", {"state": "SPEAKER-DOWN"}) == 2
    assert registry.get_sample_value("p4vtep_evpn_sessions", {"state": "ESTABLISHED"}) == 0
    assert registry.get_sample_value("p4vtep_evpn_session_up", {"peer": PEER_B}) == 0


def test_routes_show_static_conflicting_superseded_refused_and_ours(rig, capsys) -> None:
    controller, service = rig
    service.table.learn(PEER_A, mac_route(VTEP_A, 1))
    service.table.learn(PEER_B, mac_route(VTEP_B, 1))  # same number: a conflict, A stays
    assert not service.intake.admit(PEER_B, mac_route(TOR1, 0, "52:54:00:00:00:02"))
    service.set_local([LocalMac(5000, "52:54:00:00:00:03", TOR1)], {TOR1: [5000]})
    with api_client(controller, service) as (client, address):
        routes = client.EvpnRoutes(pb.EvpnRoutesRequest()).routes
        assert [
            (r.type, r.mac, r.vtep, r.sequence, r.source, r.installed, r.refused) for r in routes
        ] == [
            (2, MAC, VTEP_A, 1, PEER_A, True, ""),
            (2, MAC, VTEP_B, 1, PEER_B, False, "conflict"),
            (2, "52:54:00:00:00:02", TOR1, 0, PEER_B, False, "own-vtep"),
            (2, "52:54:00:00:00:03", TOR1, 0, "local", True, ""),
            (2, STATIC_MAC, STATIC_VTEP, 0, "static", True, ""),
            (3, "", TOR1, 0, "local", True, ""),
            (3, "", STATIC_VTEP, 0, "static", True, ""),
        ]
        # B moves on with a higher number: B wins, A is superseded.
        service.table.learn(PEER_B, mac_route(VTEP_B, 2))
        assert cli_main(["--api", address, "evpn", "routes", "--vni", "5000"]) == 0
        peers = {p.address: p for p in client.EvpnPeers(pb.EvpnPeersRequest()).peers}
        refused = client.EvpnPeers(pb.EvpnPeersRequest()).refused
    lines = capsys.readouterr().out.splitlines()
    rows = {(r[2], r[4], r[6]): r[-1] for r in (line.split() for line in lines[2:])}  # STATUS
    assert rows[(MAC, VTEP_A, PEER_A)] == "superseded"
    assert rows[(MAC, VTEP_B, PEER_B)] == "installed"
    assert rows[("52:54:00:00:00:03", TOR1, "local")] == "advertised"
    assert rows[(STATIC_MAC, STATIC_VTEP, "static")] == "installed"
    assert (peers[PEER_A].routes_accepted, peers[PEER_B].routes_accepted) == (1, 1)
    assert [(r.reason, r.routes) for r in refused] == [("conflict", 1), ("own-vtep", 1)]
