"""A routed tenant with BGP EVPN, as the CLI wires it: the controller, the
EvpnSource beside it, a real gobgpd, no peer and no switch. Routes enter
where the speaker hands them over (the service's route callback), as if
from FRR; what a ToR must hold is read from the controller's incremental
state and its whole compile; what we originate is read from gobgpd."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fabric_fixture import ANYCAST_MAC, routed_fabric, routed_vms
from helpers import api_client
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api.metrics import EvpnCollector
from p4vtep.cli import main as cli_main
from p4vtep.compiler import Encoder
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.config import EvpnConfig, VniRouting
from p4vtep.evpn.routes import InclusiveMulticastRoute, IpPrefixRoute, MacIpRoute
from p4vtep.evpn.speaker import wait_for
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store
from prometheus_client import CollectorRegistry

MISSING = gobgp_api.MISSING or (
    None if shutil.which("gobgpd") else "gobgpd missing (Debian package gobgpd)"
)
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"{MISSING}: EVPN IRB tests skipped")

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)
L3VNI = 50000
PEER, BORDER = "192.0.2.10", "192.0.2.20"  # VTEPs (routes handed in as if from PEER)
PEER_RMAC, BORDER_RMAC = "02:fe:00:00:00:10", "02:fe:00:00:00:20"
TOR1_RMAC, TOR2_RMAC = "00:aa:00:00:00:01", "00:aa:00:00:00:02"
IRB_RTS = ("65000:5000", "65000:50000")


def fabric_with_evpn():
    fabric = routed_fabric()
    fabric.evpn = EvpnConfig(
        asn=65000,
        router_id="10.0.0.254",
        peers=(),
        vnis=tuple(
            VniRouting(v, None, (f"65000:{v}",), (f"65000:{v}",)) for v in (5000, 5001, 6000)
        ),
        listen_port=-1,
    ).for_fabric(fabric)
    return fabric


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[tuple[Controller, EvpnSource]]:
    c = Controller(fabric_with_evpn(), bmv2_pipeline(), Store(tmp_path / "state.db"))
    for vm in routed_vms():
        c.attach(vm)
    source = EvpnSource(c)
    source.start(initial_wait=0)
    try:
        yield c, source
    finally:
        source.stop()


def holds(controller: Controller, tor: str, message) -> bool:
    key, data = ENC.of(message)
    _, reference = controller.compile_for(tor)
    return reference.get(key) == data and controller.desired.tors[tor].state.get(key) == data


def keyed(controller: Controller, tor: str, message) -> bool:
    key, _ = ENC.of(message)
    return controller.desired.tors[tor].state.get(key) is not None


def snapshot(controller: Controller) -> dict:
    return {t: controller.desired.tors[t].state.copy() for t in controller.fabric.tors}


def symmetric(mac: str, ip: str, vni: int = 9000, seq: int = 0, **kw: object) -> MacIpRoute:
    fields: dict[str, object] = {
        "route_targets": (f"65000:{vni}", "65000:50000"),
        "mobility_seq": seq,
        "l3vni": L3VNI,
        "router_mac": PEER_RMAC,
    }
    fields.update(kw)
    return MacIpRoute(f"{PEER}:3", mac, vni, PEER, ip, **fields)  # type: ignore[arg-type]


def prefix(pfx: str, vtep: str = BORDER, rmac: str = BORDER_RMAC, **kw: object) -> IpPrefixRoute:
    fields: dict[str, object] = {"route_targets": ("65000:50000",), "router_mac": rmac}
    fields.update(kw)
    return IpPrefixRoute(f"{vtep}:2", pfx, L3VNI, vtep, **fields)  # type: ignore[arg-type]


def test_our_routed_vms_and_subnets_are_originated_after_each_commit(rig) -> None:
    controller, source = rig
    source.sync()
    sent = source.service.speaker.originated()
    web = [r for r in sent if isinstance(r, MacIpRoute) and r.mac == "00:00:0a:00:00:01"]
    assert {(r.ip, r.l3vni, r.router_mac, r.route_targets) for r in web} == {
        (None, None, None, ("65000:5000",)),
        ("192.168.1.1", L3VNI, TOR1_RMAC, IRB_RTS),
    }
    b1 = [r for r in sent if isinstance(r, MacIpRoute) and r.mac == "00:00:0b:00:00:01"]
    assert {(r.ip, r.l3vni) for r in b1} == {(None, None), ("192.168.1.1", None)}  # (L2 only)
    assert {(r.vni, r.originator) for r in sent if isinstance(r, InclusiveMulticastRoute)} == {
        (5000, "10.0.0.1"),
        (6000, "10.0.0.1"),
        (5000, "10.0.0.2"),
        (5001, "10.0.0.2"),
    }
    assert {(r.prefix, r.next_hop, r.router_mac) for r in sent if isinstance(r, IpPrefixRoute)} == {
        ("192.168.1.0/24", "10.0.0.1", TOR1_RMAC),
        ("192.168.1.0/24", "10.0.0.2", TOR2_RMAC),
        ("192.168.2.0/24", "10.0.0.2", TOR2_RMAC),
        ("0.0.0.0/0", "10.0.0.2", TOR2_RMAC),  # fw, the default route's next hop, is on tor2
    }
    assert all(
        ANYCAST_MAC not in (getattr(r, "mac", None), getattr(r, "router_mac", None)) for r in sent
    )
    controller.detach("db-1")  # tor2 serves 5001's subnet no more
    assert wait_for(
        lambda: (
            "192.168.2.0/24"
            not in {
                r.prefix
                for r in source.service.speaker.originated()
                if isinstance(r, IpPrefixRoute)
            }
        ),
        5,
    )


def test_learned_host_and_prefix_routes_reach_every_tor_holding_the_vrf(rig) -> None:
    """Through the source's worker (no sync): a symmetric type 2 for a VNI
    we do not host, a type 5 default route from a border VTEP."""
    controller, source = rig
    host = symmetric("52:54:00:f0:00:09", "192.168.9.10")
    version = controller.version
    source.service._route(PEER, host)
    to_peer = RemoteVtepHop(PEER, PEER_RMAC, L3VNI)
    route = ENTRIES.host_route(L3VNI, "192.168.9.10", to_peer)
    assert wait_for(lambda: keyed(controller, "tor1", route), 5)
    assert controller.version == version + 1
    for tor in ("tor1", "tor2"):
        assert holds(controller, tor, route)
        assert holds(controller, tor, ENTRIES.underlay_route(PEER, 32, group_id=1))
    # A type 5 alone (no type 2 changes) is committed too.
    source.service._route(BORDER, prefix("10.0.0.0/8"))
    border = RemoteVtepHop(BORDER, BORDER_RMAC, L3VNI)
    assert wait_for(
        lambda: keyed(controller, "tor1", ENTRIES.prefix_route(L3VNI, "10.0.0.0", 8, border)), 5
    )
    assert holds(controller, "tor2", ENTRIES.prefix_route(L3VNI, "10.0.0.0", 8, border))
    source.service._withdraw(PEER, host.nlri_key())
    source.service._peer_state(BORDER, False)
    assert wait_for(lambda: not keyed(controller, "tor1", route), 5)
    assert not keyed(controller, "tor1", ENTRIES.prefix_route(L3VNI, "10.0.0.0", 8, border))
    assert not keyed(controller, "tor1", ENTRIES.underlay_route(PEER, 32, group_id=1))


def test_a_vm_moving_away_takes_its_host_route_in_one_commit(rig) -> None:
    """web-1 (tor1) moves to PEER: PEER's MAC+IP route with a higher number
    wins the MAC; one commit gives every ToR the MAC entry and the host
    route towards PEER. A same-number claim is a conflict: nothing changes."""
    controller, source = rig
    source.sync()
    web = controller.vms["web-1"]
    before = snapshot(controller)
    source.service._route(PEER, symmetric(web.mac, web.ips[0], vni=5000, seq=0))
    source.sync()
    assert source.service.table.refused["conflict"] == 1
    assert snapshot(controller) == before

    version = controller.version
    source.service._route(PEER, symmetric(web.mac, web.ips[0], vni=5000, seq=1))
    source.sync()
    assert controller.version == version + 1  # one commit
    to_peer = RemoteVtepHop(PEER, PEER_RMAC, L3VNI)
    for tor in ("tor1", "tor2"):
        assert holds(controller, tor, ENTRIES.host_route(L3VNI, web.ips[0], to_peer))
        assert holds(controller, tor, ENTRIES.mac_to_remote_vtep(5000, web.mac, PEER))
    assert "00:00:0a:00:00:01" not in {a.mac for a in source.service.view.advertisements()}
    # PEER withdraws: the VM's own host route is back.
    source.service._withdraw(PEER, symmetric(web.mac, web.ips[0], vni=5000).nlri_key())
    source.sync()
    index = controller.alloc.vm_space("tor1").peek("web-1")
    assert index is not None
    local = LocalVmHop(1, web.vlan, index, controller.alloc.vni[5000], web.mac)
    assert holds(controller, "tor1", ENTRIES.host_route(L3VNI, web.ips[0], local))


@pytest.mark.parametrize(
    ("route", "reason"),
    [
        (symmetric("52:54:00:f0:00:09", "192.168.9.10", router_mac=None), "no-router-mac"),
        (symmetric("52:54:00:f0:00:09", "192.168.9.10", router_mac=TOR1_RMAC), "own-router-mac"),
        (prefix("10.0.0.0/8", rmac=ANYCAST_MAC), "own-router-mac"),
        (prefix("10.0.0.0/8", gateway_ip="192.168.9.1"), "overlay-index"),
        (prefix("10.0.0.0/8", esi="00:01:02:03:04:05:06:07:08:09"), "overlay-index"),
        (InclusiveMulticastRoute(f"{PEER}:9", L3VNI, PEER, PEER, ("65000:50000",)), "l3vni-type3"),
        (prefix("10.0.0.0/8", route_targets=("65000:70000",)), "no-route-target"),
        (symmetric("52:54:00:f0:00:09", "192.168.9.10", l3vni=70000), "unknown-vrf"),
    ],
)
def test_refused_routes_are_counted_shown_and_change_nothing(rig, route, reason, capsys) -> None:
    controller, source = rig
    source.sync()
    before, version = snapshot(controller), controller.version
    source.service._route(PEER, route)
    source.sync()
    assert snapshot(controller) == before
    assert controller.version == version
    assert dict(source.service.intake.refused) == {reason: 1}
    registry = CollectorRegistry()
    registry.register(EvpnCollector(source.service))
    assert registry.get_sample_value("p4vtep_evpn_routes_refused_total", {"reason": reason}) == 1
    with api_client(controller, source.service) as (client, address):
        shown = [
            (r.type, r.source, r.installed, r.refused)
            for r in client.EvpnRoutes(pb.EvpnRoutesRequest()).routes
            if r.source == PEER
        ]
        assert shown == [(route.nlri_key()[0], PEER, False, reason)]
        refused = {r.reason: r.routes for r in client.EvpnPeers(pb.EvpnPeersRequest()).refused}
        assert refused == {reason: 1}
        assert cli_main(["--api", address, "evpn", "routes"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[-1] for row in rows if PEER in row] == [reason]
