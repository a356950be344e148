"""The controller with BGP EVPN on (fabric file evpn:) as the CLI wires it:
an EvpnSource beside the controller, a real gobgpd, no peer and no switch.
Routes enter where the speaker hands them over (the service's route
callback); what a ToR must hold is read from the controller's compile. The
interop with FRR and BMv2 is tests/test_evpn_dataplane.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fabric_fixture import two_tor_fabric
from helpers import RecordingLock
from p4vtep.compiler import Encoder
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.config import EvpnConfig, StaticMac, StaticVtep, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.routes import InclusiveMulticastRoute, MacIpRoute
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.model.allocation import external_vtep_key
from p4vtep.model.fabric import Vm
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store

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


@dataclass
class Rig:
    """A controller and the EVPN source beside it."""

    controller: Controller
    source: EvpnSource

    @property
    def evpn(self) -> EvpnService:
        return self.source.service


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    c = Controller(fabric_with_evpn(), bmv2_pipeline(), Store(tmp_path / "state.db"))
    source = EvpnSource(c)
    source.start(initial_wait=0)  # (no switches: the supervisors stay off)
    try:
        yield Rig(c, source)
    finally:
        source.stop()


def holds(controller: Controller, tor: str, item: tuple[bytes, bytes]) -> bool:
    key, data = item
    _, reference = controller.compile_for(tor)
    incremental = controller.desired.tors[tor].state
    return reference.get(key) == data and incremental.get(key) == data


def settle(rig: Rig) -> None:
    rig.source.sync()


def peer_mac(mac: str, seq: int = 0, ip: str | None = None, vni: int = 5000) -> MacIpRoute:
    return MacIpRoute(f"{PEER}:1", mac, vni, PEER, ip, RT, mobility_seq=seq)


def test_static_vteps_are_compiled_on_the_tors_hosting_their_vni(rig: Rig) -> None:
    controller = rig.controller
    controller.attach(A1)
    settle(rig)
    assert holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, STATIC_MAC, STATIC))
    assert holds(controller, "tor1", ENC.neighbour(5000, "192.168.1.50", STATIC_MAC))
    assert controller.alloc.tor.peek(external_vtep_key(STATIC)) is not None
    # tor2 hosts no VM of VNI 5000 yet: no MAC entry there, until a2 comes.
    assert not holds(controller, "tor2", ENC.mac_to_remote_vtep(5000, STATIC_MAC, STATIC))
    controller.attach(A2)
    settle(rig)
    assert holds(controller, "tor2", ENC.mac_to_remote_vtep(5000, STATIC_MAC, STATIC))


def test_our_vms_are_advertised_after_each_commit(rig: Rig) -> None:
    controller = rig.controller
    controller.attach(A1)
    settle(rig)
    assert {(a.mac, a.vtep, a.seq) for a in rig.evpn.view.advertisements()} == {
        (A1.mac, "10.0.0.1", 0)
    }
    sent = rig.evpn.speaker.originated()
    assert {(r.mac, r.ip) for r in sent if isinstance(r, MacIpRoute)} == {
        (A1.mac, None),
        (A1.mac, "192.168.1.1"),
    }
    assert {(r.vni, r.originator) for r in sent if isinstance(r, InclusiveMulticastRoute)} == {
        (5000, "10.0.0.1")
    }
    controller.detach("a1")
    settle(rig)
    assert rig.evpn.speaker.originated() == []


def test_a_peers_routes_become_tor_entries_and_go_with_the_withdrawal(rig: Rig) -> None:
    controller = rig.controller
    controller.attach(A1)
    settle(rig)
    version = controller.version
    mac = "52:54:00:00:00:10"
    rig.evpn._route(PEER, peer_mac(mac, ip="192.168.1.10"))
    rig.evpn._route(PEER, InclusiveMulticastRoute(f"{PEER}:1", 5000, PEER, PEER, RT))
    settle(rig)
    assert controller.version > version
    assert holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, mac, PEER))
    assert holds(controller, "tor1", ENC.neighbour(5000, "192.168.1.10", mac))
    assert controller.desired.learned.flood[5000] == {PEER, STATIC}
    rig.evpn._peer_state(PEER, False)  # the session went down
    settle(rig)
    assert not holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, mac, PEER))
    assert controller.desired.learned.flood[5000] == {STATIC}
    assert controller.alloc.tor.peek(external_vtep_key(PEER)) is None


def test_a_peer_claiming_our_vms_mac_follows_the_sequence_numbers(rig: Rig) -> None:
    controller = rig.controller
    controller.attach(A1)
    controller.attach(A2)  # (so tor2 hosts VNI 5000 and points a1's MAC at tor1)
    settle(rig)
    index = controller.alloc.vm_space("tor1").peek("a1")
    at_tor1 = ENC.mac_to_local_vm(5000, A1.mac, 1, A1.vlan, index)
    via_tor1 = ENC.mac_to_remote_vtep(5000, A1.mac, "10.0.0.1")
    via_peer = ENC.mac_to_remote_vtep(5000, A1.mac, PEER)
    assert holds(controller, "tor1", at_tor1)
    assert holds(controller, "tor2", via_tor1)
    # Same sequence number as ours: a conflict, refused, nothing changes.
    before = {t: controller.desired.tors[t].state.copy() for t in controller.fabric.tors}
    rig.evpn._route(PEER, peer_mac(A1.mac, seq=0))
    settle(rig)
    assert rig.evpn.table.refused["conflict"] == 1
    assert {t: controller.desired.tors[t].state for t in before} == before
    # Higher: the VM moved away. We stop advertising it and its traffic goes
    # to the peer's VTEP from every ToR; its binding stays until the
    # inventory follows.
    rig.evpn._route(PEER, peer_mac(A1.mac, seq=1))
    settle(rig)
    assert {a.mac for a in rig.evpn.view.advertisements()} == {A2.mac}
    assert holds(controller, "tor1", via_peer)
    assert holds(controller, "tor2", via_peer)
    binding = ENC.access_binding(1, A1.vlan, 5000, index, A1.mac, guarded=True, ipv4=A1.ips[0])
    assert holds(controller, "tor1", binding)
    controller.detach("a1")
    settle(rig)
    assert holds(controller, "tor2", via_peer)
    assert not holds(controller, "tor1", binding)
    # The peer withdraws; nobody holds the MAC now.
    rig.evpn._withdraw(PEER, peer_mac(A1.mac, seq=1).nlri_key())
    settle(rig)
    assert not holds(controller, "tor2", via_peer)
    assert not holds(controller, "tor2", via_tor1)


def test_a_restarted_controller_compiles_the_same_learned_entries(tmp_path: Path) -> None:
    """Same routes after a restart: same replica ids (they are stored), so the
    same entities; the switches would see no write."""
    states = []
    for _ in range(2):
        c = Controller(fabric_with_evpn(), bmv2_pipeline(), Store(tmp_path / "state.db"))
        source = EvpnSource(c)
        source.start(initial_wait=0)
        try:
            if not c.vms:
                c.attach(A1)
                c.attach(A2)
            # The peer's flood VTEP first on the first run, after the static one
            # on the second would give another index if they were not stored.
            source.service._route(PEER, InclusiveMulticastRoute(f"{PEER}:1", 5000, PEER, PEER, RT))
            source.service._route(PEER, peer_mac("52:54:00:00:00:10"))
            source.sync()
            assert wait_for(lambda c=c: PEER in c.desired.learned.flood.get(5000, ()), 5)
            states.append({t: c.compile_for(t)[1] for t in c.fabric.tors})
        finally:
            source.stop()
    assert states[0] == states[1]


# ---- the source's seams: the bus in, commit_learned out, options end to end ----


def test_commits_reach_the_speaker_through_the_bus(rig: Rig) -> None:
    """No sync() here: the source's worker follows DesiredStateChanged."""
    controller = rig.controller
    controller.attach(A1)
    assert wait_for(lambda: {a.mac for a in rig.evpn.view.advertisements()} == {A1.mac}, 5), (
        rig.evpn.view.advertisements()
    )
    assert wait_for(lambda: len(rig.evpn.speaker.originated()) == 3, 5)  # MAC, MAC+IP, type 3
    controller.detach("a1")
    assert wait_for(lambda: rig.evpn.speaker.originated() == [], 5)


def test_learned_routes_are_committed_by_the_worker(rig: Rig) -> None:
    controller = rig.controller
    controller.attach(A1)
    version = controller.version
    mac = "52:54:00:00:00:10"
    rig.evpn._route(PEER, peer_mac(mac))  # as the speaker's thread hands it over
    assert wait_for(lambda: mac in controller.desired.learned.macs.get(5000, {}), 5)
    assert controller.version > version
    assert holds(controller, "tor1", ENC.mac_to_remote_vtep(5000, mac, PEER))


def test_the_source_reads_and_writes_through_the_controllers_methods(rig: Rig) -> None:
    """The controller's lock is taken inside controller.py only, whatever the
    source does: advertise our VMs, commit a peer's routes."""
    controller = rig.controller
    recorder = RecordingLock(controller._lock)
    controller._lock = recorder  # type: ignore[assignment]
    controller.attach(A1)
    rig.evpn._route(PEER, peer_mac("52:54:00:00:00:10"))
    settle(rig)
    assert {a.mac for a in rig.evpn.view.advertisements()} == {A1.mac}
    assert "52:54:00:00:00:10" in controller.desired.learned.macs[5000]
    assert recorder.files
    assert set(recorder.files) == {"controller.py"}


def test_options_reach_gobgpd(tmp_path: Path) -> None:
    c = Controller(fabric_with_evpn(), bmv2_pipeline(), Store(tmp_path / "state.db"))
    run_dir = tmp_path / "gobgp"
    source = EvpnSource(c, EvpnOptions(run_dir=run_dir, log_level="debug"))
    source.start(initial_wait=0)
    try:
        speaker = source.service.speaker
        assert speaker.socket == run_dir / "gobgpd.sock"
        assert speaker.socket.is_socket()
        assert speaker.pid is not None
        command = Path(f"/proc/{speaker.pid}/cmdline").read_bytes().split(b"\0")
        assert b"--log-level=debug" in command
        assert f"--api-hosts=unix://{run_dir}/gobgpd.sock".encode() in command
    finally:
        source.stop()
    assert (run_dir / "gobgpd.log").exists()  # a run_dir given is kept
