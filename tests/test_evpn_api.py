"""The EVPN surface against real peers: FRR (a Linux VTEP) and a second
gobgpd (eBGP), both peering with the controller's speaker. The API, the CLI
and the Prometheus collector show the real session states and route counts,
and a session going down is an event on the controller's bus and on the
API's event stream.

The controller runs EVPN as configured by a fabric file's evpn: section,
wired as the CLI does (an EvpnSource beside it, its service given to the API
and the metrics); its supervisors are never started (no switch is needed:
what is checked is the speaker's state as the operator sees it)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from fabric_fixture import two_tor_fabric
from frr_lab import OBSERVER_ASN, VM_MAC, FrrLab, needs_frr
from helpers import api_client
from p4vtep import events
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.api.metrics import EvpnCollector
from p4vtep.cli import main as cli_main
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.model.fabric import Vm
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store
from prometheus_client import CollectorRegistry

pytestmark = [pytest.mark.evpn, needs_frr()]

VNI = 5000
FOREIGN_VNI = 7000  # FRR serves it, this fabric does not route it: refused
TOR1 = "10.0.0.1"  # two_tor_fabric's tor1 VTEP
OUR_MAC, OUR_IP = "52:54:00:aa:00:01", "192.168.1.10"


@dataclass
class Rig:
    frr: FrrLab
    controller: Controller
    service: EvpnService
    observer: EvpnService
    client: pb_grpc.OverlayStub
    address: str
    bus: queue.Queue[events.Event]
    registry: CollectorRegistry


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with FrrLab(vni=VNI, asn=65000, hold_time=3, foreign_vni=FOREIGN_VNI) as frr:
        fabric = two_tor_fabric()
        fabric.evpn = EvpnConfig(
            asn=65000,
            router_id=frr.ctl_ip,
            peers=(EvpnPeer(frr.frr_ip, 65000), EvpnPeer(frr.observer_ip, OBSERVER_ASN)),
            vnis=(VniRouting(VNI, None, ("65000:5000",), ("65000:5000",)),),
            hold_time=3,
        )
        store = Store(tmp_path_factory.mktemp("s") / "s.db")
        controller = Controller(fabric, bmv2_pipeline(), store)
        source = EvpnSource(
            controller,
            EvpnOptions(
                command_prefix=("ip", "netns", "exec", frr.ctl_ns),
                listen_addresses=(frr.ctl_ip,),
            ),
        )
        observer = frr.observer(OBSERVER_ASN)
        registry = CollectorRegistry()
        registry.register(EvpnCollector(source.service))
        bus = controller.bus.subscribe()
        frr.add_vm_mac()
        # Our VM on tor1: the controller advertises it (MAC, MAC+IP) and VNI 5000 on tor1.
        controller.attach(Vm("web", OUR_MAC, (OUR_IP,), VNI, "s11", 10))
        observer.start()
        # The EVPN side only: no switch here, so the supervisors stay off.
        source.start(initial_wait=10)
        try:
            with api_client(controller, source.service) as (client, address):
                yield Rig(frr, controller, source.service, observer, client, address, bus, registry)
        finally:
            source.stop()
            observer.stop()


def drain(bus: queue.Queue[events.Event]) -> list[events.Event]:
    got = []
    while True:
        try:
            got.append(bus.get_nowait())
        except queue.Empty:
            return got


def peers_by_address(rig: Rig) -> dict[str, pb.EvpnPeer]:
    return {p.address: p for p in rig.client.EvpnPeers(pb.EvpnPeersRequest()).peers}


def counts(peer: pb.EvpnPeer) -> tuple[str, int, int, int]:
    return (peer.state, peer.routes_received, peer.routes_accepted, peer.routes_advertised)


def metric(rig: Rig, name: str, **labels: str) -> float | None:
    return rig.registry.get_sample_value(name, labels)


def test_peers_routes_and_metrics_show_the_real_sessions(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    frr_ip, observer_ip = rig.frr.frr_ip, rig.frr.observer_ip
    # FRR sends three routes: its VM's MAC (type 2), type 3 for VNI 5000, and
    # type 3 for VNI 7000, which we refuse. We send both peers ours: MAC,
    # MAC+IP and type 3; the observer sends nothing, and hears none of FRR's.
    expected = {
        frr_ip: ("ESTABLISHED", 3, 2, 3),
        observer_ip: ("ESTABLISHED", 0, 0, 3),
    }
    assert wait_for(
        lambda: {a: counts(p) for a, p in peers_by_address(rig).items()} == expected, 30
    ), (
        peers_by_address(rig),
        rig.frr.dir,
    )
    reply = rig.client.EvpnPeers(pb.EvpnPeersRequest())
    assert (reply.asn, reply.router_id) == (65000, rig.frr.ctl_ip)
    assert [p.address for p in reply.peers] == [frr_ip, observer_ip]  # the fabric file's order
    assert [p.asn for p in reply.peers] == [65000, OBSERVER_ASN]
    assert all(0 <= p.uptime_seconds < 60 for p in reply.peers), reply.peers
    # Counted per receipt: FRR sends its VNI 7000 route once, or again on a refresh.
    assert [r.reason for r in reply.refused] == ["unknown-vni"]
    refused = reply.refused[0].routes
    assert refused >= 1

    routes = rig.client.EvpnRoutes(pb.EvpnRoutesRequest()).routes
    got = {
        (r.type, r.vni, r.mac, tuple(r.ips), r.vtep, r.source, r.installed, r.refused)
        for r in routes
    }
    assert got == {
        (2, VNI, VM_MAC, (), frr_ip, frr_ip, True, ""),
        (3, VNI, "", (), frr_ip, frr_ip, True, ""),
        (3, FOREIGN_VNI, "", (), frr_ip, frr_ip, False, "unknown-vni"),
        (2, VNI, OUR_MAC, (), TOR1, "local", True, ""),
        (2, VNI, OUR_MAC, (OUR_IP,), TOR1, "local", True, ""),
        (3, VNI, "", (), TOR1, "local", True, ""),
    }
    assert {r.rd for r in routes if r.source == "local"} == {f"{TOR1}:{VNI}"}
    # FRR's auto RD: its router id and a VNI index of its own.
    assert {r.rd.split(":")[0] for r in routes if r.source == frr_ip} == {frr_ip}
    only = rig.client.EvpnRoutes(pb.EvpnRoutesRequest(vni=FOREIGN_VNI)).routes
    assert [(r.type, r.vni, r.refused) for r in only] == [(3, FOREIGN_VNI, "unknown-vni")]

    # The CLI shows the same, as tables.
    assert cli_main(["--api", rig.address, "evpn", "peers"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"local AS 65000, router id {rig.frr.ctl_ip}"
    assert out[1].split() == [
        "PEER", "ASN", "STATE", "UPTIME", "RECEIVED", "ACCEPTED", "ADVERTISED",
    ]  # fmt: skip
    rows = [line.split() for line in out[3:5]]
    assert [[r[0], r[1], r[2], r[4], r[5], r[6]] for r in rows] == [
        [frr_ip, "65000", "ESTABLISHED", "3", "2", "3"],
        [observer_ip, str(OBSERVER_ASN), "ESTABLISHED", "0", "0", "3"],
    ]
    assert out[6:] == ["REFUSED      ROUTES", "-----------  ------", f"unknown-vni  {refused}"]
    assert cli_main(["--api", rig.address, "evpn", "routes", "--vni", str(VNI)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "TYPE", "VNI", "MAC", "IPS", "VTEP", "SEQ", "SOURCE", "RD", "VRF", "RMAC", "STATUS",
    ]  # fmt: skip
    table = sorted(line.split() for line in out[2:])
    assert {(r[8], r[9]) for r in table} == {("-", "-")}  # L2 routes: no VRF, no router MAC
    assert [[r[0], r[2], r[3], r[4], r[6], r[10]] for r in table] == sorted(
        [
            ["2", VM_MAC, "-", frr_ip, frr_ip, "installed"],
            ["3", "-", "-", frr_ip, frr_ip, "installed"],
            ["2", OUR_MAC, "-", TOR1, "local", "advertised"],
            ["2", OUR_MAC, OUR_IP, TOR1, "local", "advertised"],
            ["3", "-", "-", TOR1, "local", "advertised"],
        ]
    )

    # Prometheus, at scrape time.
    assert metric(rig, "p4vtep_evpn_sessions", state="ESTABLISHED") == 2
    assert metric(rig, "p4vtep_evpn_sessions", state="ACTIVE") == 0
    assert metric(rig, "p4vtep_evpn_session_up", peer=frr_ip) == 1
    for peer, (_, received, accepted, advertised) in expected.items():
        assert metric(rig, "p4vtep_evpn_routes", peer=peer, direction="received") == received
        assert metric(rig, "p4vtep_evpn_routes", peer=peer, direction="accepted") == accepted
        assert metric(rig, "p4vtep_evpn_routes", peer=peer, direction="advertised") == advertised
    assert metric(rig, "p4vtep_evpn_routes_refused_total", reason="unknown-vni") == refused

    # Both sessions came up as events, once each.
    ups = [e for e in drain(rig.bus) if isinstance(e, events.EvpnSessionUp)]
    assert sorted((e.peer, e.asn) for e in ups) == sorted(
        [(frr_ip, 65000), (observer_ip, OBSERVER_ASN)]
    )


def test_a_session_going_down_is_an_event_and_shows_everywhere(rig: Rig) -> None:
    """Last in the module: FRR's bgpd is frozen, so only the 3 s hold timer
    can notice; its two accepted routes are withdrawn."""
    frr_ip = rig.frr.frr_ip
    assert wait_for(lambda: peers_by_address(rig)[frr_ip].routes_accepted == 2, 15)
    drain(rig.bus)
    streamed: queue.Queue[pb.Event] = queue.Queue()
    stream = rig.client.WatchEvents(pb.WatchEventsRequest())

    def follow() -> None:
        try:
            for event in stream:
                streamed.put(event)
        except grpc.RpcError:
            pass  # cancelled at the end

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    try:
        rig.frr.freeze_bgpd()
        event = rig.bus.get(timeout=3 + 10)
        while not isinstance(event, events.EvpnSessionDown):
            event = rig.bus.get(timeout=10)
        assert (event.peer, event.asn, event.routes_withdrawn) == (frr_ip, 65000, 2)
        over_api = streamed.get(timeout=5)
        while over_api.kind != "EvpnSessionDown":
            over_api = streamed.get(timeout=5)
        assert over_api.detail == f"peer={frr_ip} asn=65000 routes_withdrawn=2"
    finally:
        stream.cancel()
        follower.join(timeout=5)

    peer = peers_by_address(rig)[frr_ip]
    assert peer.state != "ESTABLISHED"
    assert (peer.uptime_seconds, peer.routes_received, peer.routes_accepted) == (0, 0, 0)
    assert peers_by_address(rig)[rig.frr.observer_ip].state == "ESTABLISHED"
    assert all(r.source != frr_ip for r in rig.client.EvpnRoutes(pb.EvpnRoutesRequest()).routes)
    assert metric(rig, "p4vtep_evpn_session_up", peer=frr_ip) == 0
    assert metric(rig, "p4vtep_evpn_sessions", state="ESTABLISHED") == 1
    assert metric(rig, "p4vtep_evpn_routes", peer=frr_ip, direction="accepted") == 0
