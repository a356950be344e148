"""EvpnSource on a controller replica (the controller has a leadership): a
real gobgpd with no peer, no switch, routes handed in where the speaker hands
them over. A follower learns into its view and commits nothing; ``lead``
commits what it holds; ``follow`` drops the facts from the controller's
memory and keeps the stored replica ids. The whole thing, with etcd, BMv2,
FRR and replica processes, is tests/test_evpn_replicas.py."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fabric_fixture import two_tor_fabric
from helpers import FixedLeadership
from p4vtep.cli import controller_run
from p4vtep.cli.main import parser
from p4vtep.compiler import Encoder, Learned
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.config import EvpnConfig, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.routes import InclusiveMulticastRoute, MacIpRoute
from p4vtep.ha.replica import HeldGate
from p4vtep.model.allocation import external_vtep_key
from p4vtep.model.fabric import Vm
from p4vtep.sources.evpn import EvpnSource
from p4vtep.sources.fabric_file import ConfigError
from p4vtep.state.protocol import LeaderInfo, NotLeader
from p4vtep.state.sqlite_store import Store

MISSING = gobgp_api.MISSING or (
    None if shutil.which("gobgpd") else "gobgpd missing (Debian package gobgpd)"
)

ENC = Encoder(PipelineEntries(bmv2_pipeline().p4info))
PEER = "192.0.2.10"  # a peer's VTEP (routes are handed in as if from it)
GONE = "192.0.2.77"  # a VTEP that left while no one committed
PEER_MAC = "52:54:00:f0:00:01"
A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
RT = ("65000:5000",)


def fabric_with_evpn():
    fabric = two_tor_fabric()
    fabric.evpn = EvpnConfig(
        asn=65000,
        router_id="10.0.0.254",
        peers=(),
        vnis=(VniRouting(5000, None, RT, RT),),
        listen_port=-1,
    )
    return fabric


@dataclass
class Rig:
    controller: Controller
    source: EvpnSource
    leadership: FixedLeadership
    store: Store

    def hand_in(self) -> None:
        """The peer's MAC and its type 3 route, as the speaker hands them over."""
        service = self.source.service
        service._route(PEER, MacIpRoute(f"{PEER}:1", PEER_MAC, 5000, PEER, None, RT))
        service._route(PEER, InclusiveMulticastRoute(f"{PEER}:1", 5000, PEER, PEER, RT))

    def stored_rows(self) -> dict[tuple[str, str], int]:
        return dict(self.store.load().allocations)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    if MISSING:
        pytest.skip(f"{MISSING}: EVPN replica source tests skipped")
    fabric = fabric_with_evpn()
    # The stored state a leader left: a1, and the replica id of a VTEP that
    # has gone since (its peer withdrew while no one committed).
    seeded = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "state.db"))
    seeded.attach(A1)
    seeded.commit_learned(Learned.of([], {5000: [GONE]}))
    store = Store(tmp_path / "state.db")
    leadership = FixedLeadership("r2", current=LeaderInfo("r1", "r1:50051", 1))
    controller = Controller(fabric, bmv2_pipeline(), store, leadership=leadership)
    source = EvpnSource(controller)
    source.start(initial_wait=0)  # (no peers; no switches: the supervisors stay off)
    try:
        yield Rig(controller, source, leadership, store)
    finally:
        source.stop()


def test_a_follower_learns_and_advertises_but_commits_nothing(rig: Rig) -> None:
    before = rig.stored_rows()
    rig.hand_in()
    rig.source.sync()
    view = rig.source.service.view
    assert {m.mac for m in view.remote_macs()} == {PEER_MAC}
    assert view.flood_vteps(5000) == {PEER}
    # Our VMs are advertised from the desired state it follows.
    assert {a.mac for a in view.advertisements()} == {A1.mac}
    # Nothing committed: the controller holds no learned fact, the store is as it was.
    assert rig.controller.desired.learned == Learned()
    assert rig.stored_rows() == before
    with pytest.raises(NotLeader):  # (what a commit would meet)
        rig.controller.commit_learned(rig.source.learned())


def test_lead_commits_what_it_holds_and_frees_the_ids_of_vteps_gone(rig: Rig) -> None:
    rig.hand_in()
    rig.source.sync()
    gone = external_vtep_key(GONE)
    assert ("tor", gone) in rig.stored_rows()
    rig.leadership.term = 7
    rig.source.lead()
    learned = rig.controller.desired.learned
    assert set(learned.macs[5000]) == {PEER_MAC}
    assert learned.flood == {5000: frozenset({PEER})}
    rows = rig.stored_rows()
    assert ("tor", external_vtep_key(PEER)) in rows  # allocated and stored
    assert ("tor", gone) not in rows  # freed with the commit
    _, compiled = rig.controller.compile_for("tor1")
    key, data = ENC.mac_to_remote_vtep(5000, PEER_MAC, PEER)
    assert compiled.entities.get(key) == data
    # Leading, the worker commits what changes from now on.
    rig.source.service._withdraw(PEER, MacIpRoute(f"{PEER}:1", PEER_MAC, 5000, PEER).nlri_key())
    rig.source.sync()
    assert 5000 not in rig.controller.desired.learned.macs


def test_follow_forgets_the_facts_and_keeps_the_stored_ids(rig: Rig) -> None:
    rig.hand_in()
    rig.leadership.term = 7
    rig.source.lead()
    peer_key = external_vtep_key(PEER)
    index = rig.controller.alloc.tor.peek(peer_key)
    assert index is not None
    rows = rig.stored_rows()
    rig.leadership.term = None
    rig.source.follow()
    assert rig.controller.desired.learned == Learned()
    assert rig.controller.alloc.tor.peek(peer_key) == index  # still as stored
    assert rig.controller.alloc.take_changes() == []  # nothing to store
    assert rig.stored_rows() == rows
    _, compiled = rig.controller.compile_for("tor1")
    assert ENC.mac_to_remote_vtep(5000, PEER_MAC, PEER)[0] not in compiled.entities
    # A route that comes while it follows is held, and committed when it leads.
    second = MacIpRoute(f"{PEER}:1", "52:54:00:f0:00:02", 5000, PEER, None, RT)
    rig.source.service._route(PEER, second)
    rig.source.sync()
    assert rig.controller.desired.learned == Learned()
    rig.leadership.term = 9
    rig.source.lead()
    assert set(rig.controller.desired.learned.macs[5000]) == {PEER_MAC, "52:54:00:f0:00:02"}
    assert rig.controller.alloc.tor.peek(peer_key) == index  # the same replica id


def test_a_refused_commit_is_undone_with_the_orphans(rig: Rig) -> None:
    """commit_learned refused by the store: the freed orphans come back."""
    rig.hand_in()
    rig.leadership.term = 7
    gone = external_vtep_key(GONE)
    index = rig.controller.alloc.tor.peek(gone)
    assert index is not None

    def refuse(*args: object, **kwargs: object) -> int:
        raise NotLeader("lease ran out")

    rig.store.commit = refuse  # type: ignore[method-assign]
    with pytest.raises(NotLeader):
        rig.source.lead()
    assert rig.controller.desired.learned == Learned()
    assert rig.controller.alloc.tor.peek(gone) == index
    assert rig.controller.alloc.tor.peek(external_vtep_key(PEER)) is None


def test_the_gate_opens_for_its_term_only() -> None:
    leadership = FixedLeadership("r1", term=3)
    gate = HeldGate(leadership)
    assert not gate.may_write()  # leads, but the replica has not opened it
    gate.open(3)
    assert gate.may_write()
    assert gate.election_id() == (1 << 64) + 3
    leadership.term = 4  # a new term: closed until opened for it
    assert not gate.may_write()
    gate.open(4)
    leadership.term = None
    assert not gate.may_write()
    gate.close()
    leadership.term = 4
    assert not gate.may_write()


def _run_args(*argv: str) -> argparse.Namespace:
    return parser().parse_args(["controller", "run", "--fabric", "f.yaml", *argv])


def test_evpn_flags_give_each_replica_its_speaker_options() -> None:
    assert controller_run.evpn_options(_run_args()) == EvpnOptions()
    assert controller_run.evpn_options(_run_args("--evpn-address", "10.9.0.2")) == EvpnOptions(
        listen_addresses=("10.9.0.2",), local_address="10.9.0.2", router_id="10.9.0.2"
    )
    options = controller_run.evpn_options(
        _run_args("--evpn-address", "fd00::2", "--evpn-router-id", "10.9.0.2")
    )
    assert (options.local_address, options.router_id) == ("fd00::2", "10.9.0.2")
    with pytest.raises(ConfigError, match="not an IPv4 address"):
        controller_run.evpn_options(_run_args("--evpn-address", "fd00::2"))


def test_the_router_id_option_overrides_the_fabric_files() -> None:
    if MISSING:
        pytest.skip(f"{MISSING}: EVPN replica source tests skipped")
    from p4vtep.evpn.service import EvpnService

    config = fabric_with_evpn().evpn
    assert config is not None
    service = EvpnService(config, ["10.0.0.1"], EvpnOptions(router_id="10.9.0.3"))
    assert service.config.router_id == "10.9.0.3"
    assert service.config.asn == config.asn
