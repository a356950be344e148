"""The controller with BGP EVPN on (fabric file evpn:): a real gobgpd, no
peer and no switch. Routes enter where the speaker hands them over (the
service's route callback); what a ToR must hold is read from the controller's
compile. The interop with FRR and BMv2 is tests/test_evpn_dataplane.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fabric_fixture import two_tor_fabric
from p4vtep.allocation import external_vtep_key
from p4vtep.compiler import Encoder
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.config import EvpnConfig, StaticMac, StaticVtep, VniRouting
from p4vtep.evpn.routes import InclusiveMulticastRoute, MacIpRoute
from p4vtep.evpn.speaker import wait_for
from p4vtep.model import Vm
from p4vtep.store import Store

MISSING = gobgp_api.MISSING or (
    None if shutil.which("gobgpd") else "gobgpd missing (Debian package gobgpd)"
)
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"{MISSING}: EVPN controller tests skipped")

ENC = Encoder(PipelineEntries(bmv2_pipeline().p4info))
PEER = "192.0.2.10"  # a peer's VTEP (routes are handed in as if from it)
STATIC = "192.0.2.50"
STATIC_MAC = "52:54:00:00:00:50"
A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
A2 = Vm("a2", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s21", 20)
RT = ("65000:5000",)


def fabric_with_evpn():
    fabric = two_tor_fabric()
    fabric.evpn = EvpnConfig(
        asn=65000,
        router_id="10.0.0.254",
        peers=(),
        vnis=(
            VniRouting(5000, None, RT, RT),
            VniRouting(6000, None, ("65000:6000",), ("65000:6000",)),
        ),
        static_vteps=(
            StaticVtep(STATIC, (5000,), (StaticMac(5000, STATIC_MAC, ("192.168.1.50",)),)),
        ),
        listen_port=-1,
    )
    return fabric


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    c = Controller(fabric_with_evpn(), bmv2_pipeline(), Store(tmp_path / "state.db"))
    assert c.evpn is not None
    assert c._evpn_link is not None
    c._evpn_link.start(initial_wait=0)  # (no switches: the supervisors stay off)
    try:
        yield c
    finally:
        c._evpn_link.stop()


def holds(controller: Controller, tor: str, item: tuple[bytes, bytes]) -> bool:
    key, data = item
    _, reference = controller.compile_for(tor)
    incremental = controller.desired.tors[tor].state
    return reference.get(key) == data and incremental.get(key) == data


def settle(controller: Controller) -> None:
    assert controller._evpn_link is not None
    controller._evpn_link.sync()


def peer_mac(mac: str, seq: int = 0, ip: str | None = None, vni: int = 5000) -> MacIpRoute:
    return MacIpRoute(f"{PEER}:1", mac, vni, PEER, ip, RT, mobility_seq=seq)


def test_static_vteps_are_compiled_on_the_tors_hosting_their_vni(controller) -> None:
    controller.attach(A1)
    settle(controller)
    assert holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, STATIC_MAC, STATIC))
    assert holds(controller, "tor1", ENC.arp_suppression(5000, "192.168.1.50", STATIC_MAC))
    assert controller.alloc.tor.peek(external_vtep_key(STATIC)) is not None
    # tor2 hosts no VM of VNI 5000 yet: no MAC entry there, until a2 comes.
    assert not holds(controller, "tor2", ENC.mac_to_remote_vtep(5000, STATIC_MAC, STATIC))
    controller.attach(A2)
    settle(controller)
    assert holds(controller, "tor2", ENC.mac_to_remote_vtep(5000, STATIC_MAC, STATIC))


def test_our_vms_are_advertised_after_each_commit(controller) -> None:
    controller.attach(A1)
    settle(controller)
    assert {(a.mac, a.vtep, a.seq) for a in controller.evpn.view.advertisements()} == {
        (A1.mac, "10.0.0.1", 0)
    }
    sent = controller.evpn.speaker.originated()
    assert {(r.mac, r.ip) for r in sent if isinstance(r, MacIpRoute)} == {
        (A1.mac, None),
        (A1.mac, "192.168.1.1"),
    }
    assert {(r.vni, r.originator) for r in sent if isinstance(r, InclusiveMulticastRoute)} == {
        (5000, "10.0.0.1")
    }
    controller.detach("a1")
    settle(controller)
    assert controller.evpn.speaker.originated() == []


def test_a_peers_routes_become_tor_entries_and_go_with_the_withdrawal(controller) -> None:
    controller.attach(A1)
    settle(controller)
    version = controller.version
    mac = "52:54:00:00:00:10"
    controller.evpn._route(PEER, peer_mac(mac, ip="192.168.1.10"))
    controller.evpn._route(PEER, InclusiveMulticastRoute(f"{PEER}:1", 5000, PEER, PEER, RT))
    settle(controller)
    assert controller.version > version
    assert holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, mac, PEER))
    assert holds(controller, "tor1", ENC.arp_suppression(5000, "192.168.1.10", mac))
    assert controller.desired.learned.flood[5000] == {PEER, STATIC}
    controller.evpn._peer_state(PEER, False)  # the session went down
    settle(controller)
    assert not holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, mac, PEER))
    assert controller.desired.learned.flood[5000] == {STATIC}
    assert controller.alloc.tor.peek(external_vtep_key(PEER)) is None


def test_a_peer_claiming_our_vms_mac_follows_the_sequence_numbers(controller) -> None:
    controller.attach(A1)
    controller.attach(A2)  # (so tor2 hosts VNI 5000 and points a1's MAC at tor1)
    settle(controller)
    index = controller.alloc.vm_space("tor1").peek("a1")
    at_tor1 = ENC.mac_to_local_vm(5000, A1.mac, 1, A1.vlan, index)
    via_tor1 = ENC.mac_to_remote_vtep(5000, A1.mac, "10.0.0.1")
    via_peer = ENC.mac_to_remote_vtep(5000, A1.mac, PEER)
    assert holds(controller, "tor1", at_tor1)
    assert holds(controller, "tor2", via_tor1)
    # Same sequence number as ours: a conflict, refused, nothing changes.
    before = {t: controller.desired.tors[t].state.copy() for t in controller.fabric.tors}
    controller.evpn._route(PEER, peer_mac(A1.mac, seq=0))
    settle(controller)
    assert controller.evpn.table.refused["conflict"] == 1
    assert {t: controller.desired.tors[t].state for t in before} == before
    # Higher: the VM moved away. We stop advertising it and its traffic goes
    # to the peer's VTEP from every ToR; its binding stays until the
    # inventory follows.
    controller.evpn._route(PEER, peer_mac(A1.mac, seq=1))
    settle(controller)
    assert {a.mac for a in controller.evpn.view.advertisements()} == {A2.mac}
    assert holds(controller, "tor1", via_peer)
    assert holds(controller, "tor2", via_peer)
    binding = ENC.access_binding(1, A1.vlan, 5000, index, A1.mac)
    assert holds(controller, "tor1", binding)
    controller.detach("a1")
    settle(controller)
    assert holds(controller, "tor2", via_peer)
    assert not holds(controller, "tor1", binding)
    # The peer withdraws; nobody holds the MAC now.
    controller.evpn._withdraw(PEER, peer_mac(A1.mac, seq=1).nlri_key())
    settle(controller)
    assert not holds(controller, "tor2", via_peer)
    assert not holds(controller, "tor2", via_tor1)


def test_a_restarted_controller_compiles_the_same_learned_entries(tmp_path: Path) -> None:
    """Same routes after a restart: same replica ids (they are stored), so the
    same entities; the switches would see no write."""
    states = []
    for _ in range(2):
        c = Controller(fabric_with_evpn(), bmv2_pipeline(), Store(tmp_path / "state.db"))
        assert c._evpn_link is not None
        c._evpn_link.start(initial_wait=0)
        try:
            if not c.vms:
                c.attach(A1)
                c.attach(A2)
            # The peer's flood VTEP first on the first run, after the static one
            # on the second would give another index if they were not stored.
            c.evpn._route(PEER, InclusiveMulticastRoute(f"{PEER}:1", 5000, PEER, PEER, RT))
            c.evpn._route(PEER, peer_mac("52:54:00:00:00:10"))
            settle(c)
            assert wait_for(lambda c=c: PEER in c.desired.learned.flood.get(5000, ()), 5)
            states.append({t: c.compile_for(t)[1] for t in c.fabric.tors})
        finally:
            c._evpn_link.stop()
    assert states[0] == states[1]
