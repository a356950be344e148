"""Controller replicas over a real 3-member etcd cluster and two BMv2 ToRs.

Replicas run as separate processes (replica_harness.py) so that SIGKILL and
SIGSTOP are real; the split-brain test runs two replicas in this process to
reach into the old leader's supervisor. Figures (failover times) are
printed, not asserted: run with -s to see them.
"""

from __future__ import annotations

import signal
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from etcd_cluster import etcd_cluster, needs_etcd
from helpers import wait_until
from p4vtep import cli
from p4vtep.api import messages
from p4vtep.api import overlay_pb2 as pb
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.ha.replica import Replica
from p4vtep.model.fabric import Vm
from p4vtep.runtime.client import P4RuntimeError, SwitchConnection
from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.state.leadership import ELECTION_ID_BASE, EtcdLeadership
from p4vtep.switch.reconciler import Diff, SwitchReader
from p4vtep.switch.supervisor import GateClosed
from replica_harness import (
    ChangeDriver,
    ReplicaProcess,
    differences,
    fabric_yaml,
    find_leader,
    read_switches,
    reference,
    seed,
    start_replica,
    switches_converged,
    wait_ready,
)
from switch_fabric import (
    PROBE_SENDER,
    PROBE_TARGET,
    SwitchFabric,
    background_vms,
    bmv2_fabric,
    delivered,
    needs_switch,
)

pytestmark = [pytest.mark.etcd, needs_etcd(), *needs_switch()]

VMS = 10_000
KILLS = 3


@pytest.fixture(scope="module")
def sf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwitchFabric]:
    with bmv2_fabric(tmp_path_factory.mktemp("bmv2")) as fabric:
        yield fabric


def check_acknowledged(driver: ChangeDriver, vms: dict[str, Vm]) -> int:
    """Every acknowledged change is in the state; returns how many."""
    checked = 0
    for name, vm in driver.acked.items():
        if name in driver.uncertain:
            continue
        assert vms.get(name) == (None if vm is None else replace(vm, source="api")), name
        checked += 1
    return checked


@pytest.mark.parametrize("replicas", [2, 3])
def test_leader_killed_while_changes_flow(sf: SwitchFabric, tmp_path: Path, replicas: int) -> None:
    """10,000 VMs; the leader is stopped and killed KILLS times while changes
    flow. Each time a follower takes over and writes exactly what the
    switches lack (zero duplicate writes); in the end every acknowledged
    change is on the switches, read back entry by entry."""
    fabric_file = fabric_yaml(sf.fabric, tmp_path / "fabric.yaml")
    ttl, margin = 5, 1.0  # the default lease
    with etcd_cluster(3) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix=f"/p4vtep-kill{replicas}")
        seed(sf.fabric, settings, [PROBE_SENDER, PROBE_TARGET, *background_vms(VMS)])
        procs = [
            start_replica(fabric_file, settings, f"r{i}", tmp_path, ttl, margin)
            for i in range(replicas)
        ]
        observer = EtcdLeadership(settings, "observer", "")
        driver = ChangeDriver(procs)
        failovers, takeover_writes = [], []
        try:
            wait_ready(procs, timeout=120)
            leader = find_leader(procs, timeout=180)
            driver.start()
            for kill in range(KILLS):
                time.sleep(2.0)  # changes flow
                driver.pause()
                burst = 0
                if kill == 0:
                    time.sleep(1.0)  # let the leader finish: a takeover with nothing pending
                else:  # acknowledged at once, some not yet written when it stops
                    burst = driver.burst(leader, 40)
                info = observer.leader()
                assert info is not None
                assert info.replica_id == leader.replica_id
                others = [p for p in procs if p is not leader]
                leader.signal(signal.SIGSTOP)
                stopped = time.monotonic()
                # The followers are frozen during the read too, so no one can
                # take over and write before it ends even on a busy machine
                # (a slow read can only lengthen the failover measured).
                for other in others:
                    other.signal(signal.SIGSTOP)
                time.sleep(0.3)  # a batch the switch had already received lands
                before = read_switches(sf.fabric)
                read = time.monotonic() - stopped
                now = observer.leader()
                assert now is not None
                assert now.term == info.term
                for other in others:
                    other.signal(signal.SIGCONT)
                leader.kill()
                new = find_leader(others, timeout=60)
                failovers.append(time.monotonic() - stopped)
                writes = {s.name: s.writes for s in new.switches(timeout=5) or ()}
                pending = differences(reference(sf.fabric, settings), before)
                # It wrote exactly what the switches lacked: nothing twice.
                assert writes == {name: len(d) for name, d in pending.items()}
                if kill == 0:
                    assert writes == {"tor1": 0, "tor2": 0}
                takeover_writes.append(sum(writes.values()))
                print(
                    f"kill {kill}: {leader.replica_id} -> {new.replica_id}: failover "
                    f"{failovers[-1]:.2f} s (switch read {read:.2f} s), "
                    f"{takeover_writes[-1]} writes for pending changes ({burst} VMs attached "
                    "just before the stop)"
                )
                index = procs.index(leader)
                procs[index] = start_replica(
                    fabric_file, settings, f"r{index}k{kill}", tmp_path, ttl, margin
                )
                leader = new
                wait_ready(procs, timeout=120)  # the restarted one has loaded the state
                driver.resume()
            time.sleep(2.0)
            driver.stop()
            assert switches_converged(sf.fabric, settings)
            ref = reference(sf.fabric, settings)
            checked = check_acknowledged(driver, ref.vms)
            assert checked > 0
            wait_ready(procs, timeout=120)
            for proc in procs:  # every replica's view followed
                assert wait_until(
                    lambda p=proc: (
                        len(p.stub.ListVMs(pb.ListVMsRequest(), timeout=10).vms) == len(ref.vms)
                    ),
                    timeout=60,
                    interval=0.5,
                ), proc.replica_id
            assert delivered(sf, PROBE_SENDER, PROBE_TARGET)
            p50 = statistics.median(failovers)
            p99 = statistics.quantiles(failovers, n=100, method="inclusive")[98]
            print(
                f"{replicas} replicas, {VMS} VMs, {KILLS} leader kills (lease TTL {ttl} s): "
                f"failover p50 {p50:.2f} s, p99 {p99:.2f} s (max {max(failovers):.2f}); "
                f"{checked} acknowledged changes all on the switches; refusals "
                f"{driver.refusals}"
            )
        finally:
            if driver.is_alive():
                driver.stop()
            observer.close()
            for proc in procs:
                proc.stop()


def attach(replica: ReplicaProcess, vm: Vm, timeout: float = 10.0) -> None:
    replica.stub.AttachVM(pb.AttachVMRequest(vm=messages.vm_to_pb(vm)), timeout=timeout)


def small_vm(i: int, server: str = "s11", vlan: int | None = None) -> Vm:
    return Vm(
        f"q{i}",
        f"02:dd:00:00:00:{i:02x}",
        (f"10.210.0.{i}",),
        5000,
        server,
        vlan if vlan is not None else 3500 + i,
    )


def test_conflicts_member_loss_and_quorum_loss(
    sf: SwitchFabric, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fabric_file = fabric_yaml(sf.fabric, tmp_path / "fabric.yaml")
    with etcd_cluster(3) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix="/p4vtep-quorum")
        seed(sf.fabric, settings, [PROBE_SENDER, PROBE_TARGET, *background_vms(50)])
        # The default lease (5 s, margin 1 s) rides through the raft election
        # that follows the loss of etcd's raft leader (2-3 s).
        procs = [start_replica(fabric_file, settings, f"q{i}", tmp_path, 5, 1.0) for i in (0, 1)]
        try:
            wait_ready(procs)
            leader = find_leader(procs)
            follower = next(p for p in procs if p is not leader)

            # Conflicting changes through both replicas at once: two VMs on
            # the same (server, VLAN). Exactly one is accepted.
            for round_ in range(5):
                # Different names, MACs and IPs; the same server and VLAN.
                pair = [small_vm(2 * round_ + i, vlan=3400 + round_) for i in (1, 2)]
                targets = [(leader, pair[0]), (follower, pair[1])]
                if round_ % 2:  # both at the leader
                    targets = [(leader, pair[0]), (leader, pair[1])]
                outcomes: list[grpc.StatusCode] = [grpc.StatusCode.UNKNOWN] * 2
                barrier = threading.Barrier(2)

                def send(
                    i: int,
                    target: ReplicaProcess,
                    vm: Vm,
                    barrier: threading.Barrier = barrier,
                    outcomes: list[grpc.StatusCode] = outcomes,
                ) -> None:
                    barrier.wait()
                    try:
                        attach(target, vm)
                        outcomes[i] = grpc.StatusCode.OK
                    except grpc.RpcError as exc:
                        outcomes[i] = exc.code()

                threads = [
                    threading.Thread(target=send, args=(i, t, v))
                    for i, (t, v) in enumerate(targets)
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert outcomes.count(grpc.StatusCode.OK) == 1, outcomes
                loser = next(c for c in outcomes if c != grpc.StatusCode.OK)
                assert loser in (
                    grpc.StatusCode.FAILED_PRECONDITION,  # the follower: "send writes to ..."
                    grpc.StatusCode.INVALID_ARGUMENT,  # the leader: same server and VLAN
                ), outcomes
                winner = pair[outcomes.index(grpc.StatusCode.OK)]
                for proc in procs:  # both replicas hold the winner, not the loser
                    assert wait_until(
                        lambda p=proc, w=winner.name: (
                            w in {v.name for v in p.stub.ListVMs(pb.ListVMsRequest()).vms}
                        ),
                        timeout=5,
                    )
                    names = {v.name for v in proc.stub.ListVMs(pb.ListVMsRequest()).vms}
                    assert not names & ({v.name for v in pair} - {winner.name})

            # A follower refuses a write with the leader's address; the CLI says so.
            with pytest.raises(grpc.RpcError) as refused:
                attach(follower, small_vm(40))
            assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert leader.api in (refused.value.details() or "")
            rc = cli.main(
                ["--api", follower.api, "vm", "attach", "q41", "--mac", "02:dd:00:00:00:29"]
                + ["--vni", "5000", "--server", "s11", "--vlan", "3541", "--no-wait"]
            )
            err = capsys.readouterr().err
            assert rc == 1
            assert "FAILED_PRECONDITION" in err
            assert f"send writes to the leader {leader.replica_id} at {leader.api}" in err
            assert switches_converged(sf.fabric, settings, timeout=30)

            # One etcd member killed (the raft leader: the harder case).
            cluster.kill(cluster.raft_leader())
            started = time.monotonic()
            assert wait_until(lambda: _try_attach(leader, small_vm(50)), timeout=15)
            took = time.monotonic() - started
            print(f"one etcd member killed: next write accepted after {took:.2f} s")
            # No failover: the same replica leads. Its keepalives may fail
            # while raft elects a new leader, so it can step down for a moment
            # and take its own key (same term) back, then reopen its sessions.
            assert wait_until(leader.took_over, timeout=15)
            assert not follower.took_over()

            # Quorum lost: writes refused with a clear error; forwarding goes on.
            # (First let the leader finish the pass its step-down and return
            # started, so that what the switches hold is not read mid-pass.)
            assert switches_converged(sf.fabric, settings, timeout=30)
            before = read_switches(sf.fabric)
            alive = [i for i, m in enumerate(cluster.members) if m.alive]
            cluster.kill(alive[0])
            with pytest.raises(grpc.RpcError) as no_quorum:
                attach(leader, small_vm(51), timeout=20)
            print(f"quorum lost: {no_quorum.value.code().name}: {no_quorum.value.details()}")
            assert no_quorum.value.code() in (
                grpc.StatusCode.UNAVAILABLE,  # "etcd has no quorum: 1 of 3 members reachable"
                grpc.StatusCode.FAILED_PRECONDITION,  # the lease ran out: "no leader is elected"
            )
            assert any(
                word in (no_quorum.value.details() or "") for word in ("quorum", "no leader")
            )
            assert wait_until(lambda: not leader.took_over(), timeout=15)  # it stopped writing
            assert delivered(sf, PROBE_SENDER, PROBE_TARGET)
            after = read_switches(sf.fabric)
            assert {n: s.entities for n, s in after.items()} == {
                n: s.entities for n, s in before.items()
            }

            # Quorum back: writes resume (through whichever replica leads).
            for i, member in enumerate(cluster.members):
                if not member.alive:
                    cluster.restart(i, wait=False)
            started = time.monotonic()
            assert wait_until(lambda: any(_try_attach(p, small_vm(52)) for p in procs), timeout=60)
            print(f"quorum back: writes resume after {time.monotonic() - started:.2f} s")
            find_leader(procs, timeout=30)
            assert switches_converged(sf.fabric, settings)
            ref = reference(sf.fabric, settings)
            assert {"q50", "q52"} <= set(ref.vms)
        finally:
            for proc in procs:
                proc.stop()


def _try_attach(replica: ReplicaProcess, vm: Vm) -> bool:
    try:
        attach(replica, vm, timeout=5)
        return True
    except grpc.RpcError:
        return False


def test_split_brain_old_leader_stops_and_is_refused(sf: SwitchFabric) -> None:
    """The old leader reaches etcd only through member 0, which is frozen
    (SIGSTOP). Guard 1: it stops writing before its lease can expire, so
    before the new leader leads. Guard 2: a write it sends anyway with its
    old election id is refused by the switch once the new leader is
    primary with a higher one."""
    pipeline = bmv2_pipeline()
    with etcd_cluster(3) as cluster:
        ends = cluster.endpoints
        cut_off = EtcdSettings((ends[0],), prefix="/p4vtep-split")
        majority = EtcdSettings((ends[1], ends[2]), prefix="/p4vtep-split")
        seed(sf.fabric, majority, [PROBE_SENDER, PROBE_TARGET, *background_vms(20)])
        old = Replica(sf.fabric, pipeline, cut_off, "old", "old:50051", ttl=2, margin=0.5)
        new: Replica | None = None
        conn: SwitchConnection | None = None
        samples: list[tuple[float, bool, bool]] = []
        sampling = threading.Event()
        try:
            old.start()
            assert wait_until(lambda: old.leading, timeout=20)
            assert old.controller.wait_converged(30)
            new = Replica(sf.fabric, pipeline, majority, "new", "new:50051", ttl=2, margin=0.5)
            new.start()
            time.sleep(0.5)
            assert not new.leading
            assert not any(s.status.connected for s in new.controller.supervisors.values())
            old_id = ELECTION_ID_BASE + old.terms[-1]

            def sample() -> None:
                assert new is not None
                while not sampling.is_set():
                    samples.append((time.monotonic(), old.leadership.may_write(), new.leading))
                    time.sleep(0.002)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            cluster.members[0].process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
            cut = time.monotonic()
            assert wait_until(lambda: not old.leadership.may_write(), timeout=10, interval=0.002)
            stopped = time.monotonic() - cut
            sup = old.controller.supervisors["tor1"]
            assert wait_until(lambda: not sup.status.connected, timeout=5)

            # Guard 1: the old leader's supervisor refuses to send a write.
            tor = sf.fabric.tors["tor1"]
            conn = SwitchConnection(tor.address, tor.device_id, old_id)
            conn.connect(timeout=5)  # primary unless the new leader already is
            key, entity = next(iter(old.controller.snapshot("tor1")[1].entities.items()))
            refused_before = sup.writes_refused
            with pytest.raises(GateClosed, match="leadership lost"):
                sup._write(conn, Diff(deletes=[(key, entity)]))
            assert sup.writes_refused == refused_before + 1

            assert wait_until(lambda: new.leading, timeout=20)
            led = time.monotonic() - cut
            assert new.controller.wait_converged(30)
            sampling.set()
            sampler.join()
            both = [t for t, old_writes, new_leads in samples if old_writes and new_leads]
            assert not both, "the old leader could write while the new one led"

            # Guard 2: the switch refuses the old election id now.
            assert new.leadership.election_id() > old_id
            with pytest.raises(P4RuntimeError):
                conn.write(Diff(deletes=[(key, entity)]).updates())
            reader = SwitchReader(pipeline.p4info)
            assert key in reader.read(conn).entities  # the entry is still there
            print(
                f"split brain: old leader stopped writing {stopped:.2f} s after the cut, "
                f"new leader {led:.2f} s after; the switch refused election id "
                f"{old_id - ELECTION_ID_BASE} + 2**64 once {new.terms[-1]} + 2**64 was primary"
            )
        finally:
            sampling.set()
            member = cluster.members[0].process
            if member is not None and member.poll() is None:
                member.send_signal(signal.SIGCONT)
            if conn is not None:
                conn.close()
            if new is not None:
                new.stop()
            old.stop()


def test_stale_commit_gets_conflict_and_is_undone(sf: SwitchFabric) -> None:
    """Two controllers commit to one etcd prefix without leadership (as two
    replicas that both believe they lead would): of two changes based on the
    same revision exactly one lands, the other raises Conflict and is undone
    in memory, indices included; both then follow to the same state."""
    from p4vtep.controller import Controller
    from p4vtep.state.etcd_store import EtcdStateStore
    from p4vtep.state.protocol import Conflict
    from p4vtep.state.rows import allocation_rows

    pipeline = bmv2_pipeline()
    with etcd_cluster(3) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix="/p4vtep-conflict")
        seed(sf.fabric, settings, [PROBE_SENDER, PROBE_TARGET, *background_vms(20)])
        stores = [EtcdStateStore(settings, name) for name in ("a", "b")]
        try:
            controllers = [Controller(sf.fabric, pipeline, store) for store in stores]
            for controller, store in zip(controllers, stores, strict=True):
                store.watch(controller.apply_committed, include_own=True)
            wins = 0
            for round_ in range(10):
                pair = [small_vm(2 * round_ + i, vlan=3300 + round_) for i in (1, 2)]
                base = [c.revision for c in controllers]
                # Both decide on the same revision: hold the watch back by
                # committing under each controller's lock at once.
                barrier = threading.Barrier(2)
                errors: list[Exception | None] = [None, None]

                def change(
                    i: int,
                    barrier: threading.Barrier = barrier,
                    errors: list[Exception | None] = errors,
                    pair: list[Vm] = pair,
                ) -> None:
                    with controllers[i]._lock:
                        barrier.wait()
                        try:
                            controllers[i].attach(pair[i])
                        except Exception as exc:  # noqa: BLE001 -- checked below
                            errors[i] = exc

                threads = [threading.Thread(target=change, args=(i,)) for i in (0, 1)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert base[0] == base[1]
                assert [e is None for e in errors].count(True) == 1, errors
                loser = next(e for e in errors if e is not None)
                assert isinstance(loser, Conflict)
                assert "changed since revision" in str(loser)
                wins += 1
                stored = stores[0].load()
                for controller in controllers:
                    assert wait_until(lambda c=controller, r=stored.revision: c.revision == r, 5)
                    assert dict(controller.vms) == dict(stored.vms)
                    assert allocation_rows(controller.alloc) == dict(stored.allocations)
            assert wins == 10
        finally:
            for store in stores:
                store.close()
