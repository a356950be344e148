"""The etcd state store and leadership against a real 3-member etcd cluster.

Each test starts its own cluster on free loopback ports (tests/etcd_cluster.py)
and tears it down. Figures (watch latency, takeover time) are printed, not
asserted: run with -s to see them.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from etcd_cluster import ClusterTls, EtcdCluster, etcd_cluster, needs_etcd
from netns_link import netns_link
from p4vtep.model.fabric import TlsFiles, Vm
from p4vtep.processes import stop_process
from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.state.etcd_store import EtcdStateStore
from p4vtep.state.leadership import ELECTION_ID_BASE, EtcdLeadership
from p4vtep.state.protocol import (
    Change,
    Conflict,
    NotLeader,
    StateError,
    StateEvent,
    StoreUnavailable,
)
from test_tls import make_ca, make_cert

pytestmark = [pytest.mark.etcd, needs_etcd()]

TTL = 2  # seconds: etcd's minimum with its default election timeout
MARGIN = 0.5


def vm(n: int, server: str = "s1") -> Vm:
    return Vm(
        f"vm{n}",
        f"02:00:00:00:{n >> 8:02x}:{n & 0xFF:02x}",
        (f"10.0.{n >> 8}.{n & 0xFF}",),
        100,
        server,
        10,
    )


@pytest.fixture
def cluster() -> Iterator[EtcdCluster]:
    with etcd_cluster(3) as c:
        yield c


@pytest.fixture
def resources() -> Iterator[ExitStack]:
    """Stores and leaderships a test opens, closed before its cluster stops."""
    with ExitStack() as stack:
        yield stack


def settings(cluster: EtcdCluster, prefix: str, members: list[int] | None = None) -> EtcdSettings:
    endpoints = [cluster.endpoints[i] for i in (members or range(len(cluster.members)))]
    return EtcdSettings(tuple(endpoints), prefix=prefix)


def open_store(stack: ExitStack, s: EtcdSettings, replica: str) -> EtcdStateStore:
    store = EtcdStateStore(s, replica)
    stack.callback(store.close)
    return store


def open_leadership(stack: ExitStack, s: EtcdSettings, replica: str) -> EtcdLeadership:
    leadership = EtcdLeadership(s, replica, f"{replica}:50051", ttl=TTL, margin=MARGIN)
    stack.callback(leadership.close)
    return leadership


def unique_prefix() -> str:
    return f"/p4vtep-test-{uuid.uuid4().hex[:8]}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def race_commits(
    stores: list[EtcdStateStore], changes: dict[str, Change], base: int
) -> dict[str, int | Conflict]:
    """Each store commits its change on ``base`` at the same instant."""
    outcome: dict[str, int | Conflict] = {}
    start = threading.Barrier(len(stores))

    def commit(store: EtcdStateStore) -> None:
        start.wait()
        try:
            outcome[store.replica_id] = store.commit(changes[store.replica_id], base)
        except Conflict as exc:
            outcome[store.replica_id] = exc

    threads = [threading.Thread(target=commit, args=(store,)) for store in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcome


# -- the store ------------------------------------------------------------


def test_commit_then_read_back_from_another_replica(cluster, resources):
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    assert a.load().revision == 0
    change = Change(
        upserts=(vm(1), vm(2, "s2")),
        alloc_set={("vni", "100"): 1, ("vm@tor1", "vm1"): 1, ("vm@tor2", "vm2"): 1},
    )
    r1 = a.commit(change, 0)
    loaded = b.load()
    assert loaded.revision == r1
    assert dict(loaded.vms) == {"vm1": vm(1), "vm2": vm(2, "s2")}
    assert dict(loaded.allocations) == dict(change.alloc_set)
    assert a.snapshot() == loaded  # the committer's view followed its commit

    moved = Vm("vm2", vm(2).mac, vm(2).ips, 100, "s1", 10)
    r2 = b.commit(
        Change(
            upserts=(moved,),
            removals=("vm1",),
            alloc_set={("vm@tor1", "vm2"): 2},
            alloc_removed=(("vm@tor1", "vm1"), ("vm@tor2", "vm2")),
        ),
        r1,
    )
    assert r2 > r1
    again = a.load()
    assert again.revision == r2
    assert dict(again.vms) == {"vm2": moved}
    assert dict(again.allocations) == {("vni", "100"): 1, ("vm@tor1", "vm2"): 2}


def test_names_with_slashes_and_percent_round_trip(cluster, resources):
    s = settings(cluster, unique_prefix())
    a = open_store(resources, s, "a")
    odd = Vm("tenant/a%20b", "02:00:00:00:00:09", ("10.0.0.9",), 100, "s1", 10)
    a.commit(Change(upserts=(odd,), alloc_set={("vm@tor/x", "tenant/a%20b"): 3}), 0)
    loaded = open_store(resources, s, "b").load()
    assert dict(loaded.vms) == {odd.name: odd}
    assert dict(loaded.allocations) == {("vm@tor/x", "tenant/a%20b"): 3}


def test_invalid_change_is_refused_and_changes_nothing(cluster, resources):
    s = settings(cluster, unique_prefix())
    a = open_store(resources, s, "a")
    r1 = a.commit(Change(upserts=(vm(1),)), 0)
    with pytest.raises(ValueError, match="both upserted and removed"):
        a.commit(Change(upserts=(vm(2),), removals=("vm2",)), r1)
    with pytest.raises(ValueError, match="bad allocation row"):
        a.commit(Change(alloc_set={("vm@tor1", "vm1"): -1}), r1)
    loaded = a.load()
    assert loaded.revision == r1
    assert set(loaded.vms) == {"vm1"}


def test_stale_base_revision_is_a_conflict_and_writes_nothing(cluster, resources):
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    r1 = a.commit(Change(upserts=(vm(1),)), 0)
    with pytest.raises(Conflict) as refused:
        b.commit(Change(upserts=(vm(2),)), 0)
    assert refused.value.base_revision == 0
    assert refused.value.current_revision == r1
    assert "committed by a" in str(refused.value)
    assert set(b.load().vms) == {"vm1"}


def test_concurrent_conflicting_commits_exactly_one_wins(cluster, resources):
    """Two replicas read the same revision and both give index 5 of tor1 to a
    different VM: in every round exactly one commit lands, the other gets
    Conflict, and the loser's retry on the new revision lands after it."""
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    rounds = 20
    for n in range(rounds):
        base = a.load().revision
        assert b.load().revision == base
        changes = {
            "a": Change(upserts=(vm(2 * n),), alloc_set={("vm@tor1", f"vm{2 * n}"): n}),
            "b": Change(upserts=(vm(2 * n + 1),), alloc_set={("vm@tor1", f"vm{2 * n + 1}"): n}),
        }
        outcome = race_commits([a, b], changes, base)
        winners = [r for r, o in outcome.items() if isinstance(o, int)]
        losers = [r for r, o in outcome.items() if isinstance(o, Conflict)]
        assert len(winners) == 1, outcome
        assert len(losers) == 1, outcome
        winner, loser = winners[0], losers[0]
        state = a.load()
        assert state.revision == outcome[winner]
        # Index n of tor1 belongs to the winner's VM only.
        owners = [k for k, i in state.allocations.items() if k[0] == "vm@tor1" and i == n]
        assert owners == [("vm@tor1", changes[winner].upserts[0].name)]
        assert changes[loser].upserts[0].name not in state.vms
        # The loser reloads, picks another index and commits.
        retry = Change(
            upserts=changes[loser].upserts,
            alloc_set={("vm@tor1", changes[loser].upserts[0].name): 1000 + n},
        )
        store = a if loser == "a" else b
        store.commit(retry, store.load().revision)
    final = a.load()
    assert len(final.vms) == 2 * rounds
    indices = [i for (space, _), i in final.allocations.items() if space == "vm@tor1"]
    assert len(indices) == len(set(indices)) == 2 * rounds


def test_watch_delivers_other_replicas_commits_in_order(cluster, resources):
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    received: list[tuple[float, StateEvent]] = []
    own: list[StateEvent] = []
    arrived = threading.Condition()

    def on_b(event: StateEvent) -> None:
        with arrived:
            received.append((time.monotonic(), event))
            arrived.notify_all()

    b.load()
    b.watch(on_b)
    a.watch(own.append)  # a's own commits are not delivered to it by default
    count = 50
    committed: list[tuple[float, float, int]] = []  # sent at, round trip, revision
    revision = a.load().revision
    for n in range(count):
        change = Change(upserts=(vm(n),), alloc_set={("vm@tor1", f"vm{n}"): n + 1})
        if n:
            change = Change(
                upserts=change.upserts,
                removals=(f"vm{n - 1}",),
                alloc_set=change.alloc_set,
                alloc_removed=(("vm@tor1", f"vm{n - 1}"),),
            )
        sent = time.monotonic()
        revision = a.commit(change, revision)
        committed.append((sent, time.monotonic() - sent, revision))
        with arrived:  # one change at a time, to time each delivery
            assert arrived.wait_for(lambda n=n: len(received) == n + 1, timeout=10)
    assert [e.revision for _, e in received] == [r for _, _, r in committed]
    assert all(e.origin == "a" for _, e in received)
    last = received[-1][1]
    assert set(last.upserts) == {f"vm{count - 1}"}
    assert last.removals == {f"vm{count - 2}"}
    assert b.snapshot() == a.load()  # b's view followed, without reading
    assert own == []
    # From the commit being sent (the callback may run before the committer
    # has its answer) to the other replica's callback.
    latencies = [
        (t_recv - sent) * 1000
        for (sent, _, _), (t_recv, _) in zip(committed, received, strict=False)
    ]
    round_trips = [rtt * 1000 for _, rtt, _ in committed]
    print(
        f"\n{count} commits: commit round trip p50 {statistics.median(round_trips):.2f} ms; "
        f"commit sent -> other replica's watch callback p50 {statistics.median(latencies):.2f} ms, "
        f"p99 {pct(latencies, 0.99):.2f} ms, "
        f"max {max(latencies):.2f} ms"
    )


def test_watch_behind_a_compaction_resyncs(cluster, resources):
    """A replica whose watch must resume from history etcd has compacted
    reloads and receives the difference as one event, then follows again."""
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    r = a.commit(Change(upserts=(vm(1), vm(2))), 0)
    assert b.load().revision == r
    r = a.commit(Change(upserts=(vm(3),), removals=("vm1",)), r)
    moved = Vm("vm2", vm(2).mac, vm(2).ips, 100, "s2", 10)
    r = a.commit(Change(upserts=(moved,), alloc_set={("vm@tor2", "vm2"): 1}), r)
    cluster.compact(r)
    events: list[StateEvent] = []
    b.watch(events.append)  # resumes after b's load: compacted away
    deadline = time.monotonic() + 10
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(events) == 1
    resync = events[0]
    assert resync.revision == r
    assert resync.origin == ""
    assert dict(resync.upserts) == {"vm3": vm(3), "vm2": moved}
    assert resync.removals == {"vm1"}
    assert dict(resync.alloc_set) == {("vm@tor2", "vm2"): 1}
    assert b.snapshot() == a.load()
    r = a.commit(Change(removals=("vm3",)), r)
    while len(events) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.revision for e in events] == [resync.revision, r]
    assert set(b.snapshot().vms) == {"vm2"}


def test_large_change_commits_atomically(cluster, resources):
    """An initial import of 10,000 VMs and their indices is one transaction."""
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    vms = tuple(vm(n) for n in range(10_000))
    alloc = {("vm@tor1", v.name): n + 1 for n, v in enumerate(vms)}
    started = time.monotonic()
    revision = a.commit(Change(upserts=vms, alloc_set=alloc), 0)
    committed = time.monotonic() - started
    started = time.monotonic()
    loaded = b.load()
    read = time.monotonic() - started
    assert loaded.revision == revision
    assert dict(loaded.vms) == {v.name: v for v in vms}
    assert dict(loaded.allocations) == alloc
    print(f"\n10,000 VMs + 10,000 indices: commit {committed:.2f} s, load {read:.2f} s")


# -- leadership -----------------------------------------------------------


def test_commit_fenced_by_an_ended_term_is_refused(cluster, resources):
    s = settings(cluster, unique_prefix())
    store = open_store(resources, s, "a")
    la, lb = open_leadership(resources, s, "a"), open_leadership(resources, s, "b")
    term_a = la.campaign(timeout=10)
    r1 = store.commit(Change(upserts=(vm(1),)), 0, fence_term=term_a)
    la.resign()
    term_b = lb.campaign(timeout=10)
    assert term_b > term_a
    with pytest.raises(NotLeader, match=f"term {term_a} is over"):
        store.commit(Change(upserts=(vm(2),)), r1, fence_term=term_a)
    assert set(store.load().vms) == {"vm1"}
    store.commit(Change(upserts=(vm(2),)), r1, fence_term=term_b)


def start_candidate(cluster: EtcdCluster, prefix: str, replica: str) -> subprocess.Popen[str]:
    script = Path(__file__).with_name("etcd_candidate.py")
    return subprocess.Popen(
        [sys.executable, str(script), "--endpoints", ",".join(cluster.endpoints)]
        + ["--prefix", prefix, "--id", replica, "--ttl", str(TTL)],
        stdout=subprocess.PIPE,
        text=True,
    )


def campaign_into(leadership: EtcdLeadership, won: list) -> None:
    try:
        term = leadership.campaign(timeout=30)
    except StateError:
        return  # closed while campaigning: the round is over
    won.append((time.monotonic(), leadership, term))  # list.append is atomic


def test_leader_killed_a_candidate_takes_over_with_a_higher_term(cluster, resources):
    """Three candidates; the leader is a separate process that is SIGKILLed
    (a crashed controller): another takes over once its lease expires, with
    a higher term and election id; every observer follows."""
    prefix = unique_prefix()
    s = settings(cluster, prefix)
    kills = 3
    takeovers = []
    for round_ in range(kills):
        leader_proc = start_candidate(cluster, prefix, f"proc{round_}")
        try:
            assert leader_proc.stdout is not None
            first = json.loads(leader_proc.stdout.readline())
            followers = [open_leadership(resources, s, f"r{round_}-{i}") for i in range(2)]
            assert all(
                f.leader() is not None and f.leader().replica_id == f"proc{round_}"
                for f in followers
            )
            won: list[tuple[float, EtcdLeadership, int]] = []
            threads = [
                threading.Thread(target=campaign_into, args=(f, won), daemon=True)
                for f in followers
            ]
            for t in threads:
                t.start()
            killed = time.monotonic()
            stop_process(leader_proc, timeout=0)
            deadline = time.monotonic() + 30
            while not won and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(won) == 1, "exactly one follower takes over"
            at, new_leader, term = won[0]
            takeovers.append(at - killed)
            assert term > first["term"]
            assert new_leader.election_id() == ELECTION_ID_BASE + term > first["election_id"]
            assert new_leader.may_write()
            for f in followers:  # observers see the new leader within ms
                deadline = time.monotonic() + 5
                while (
                    f.leader() is None or f.leader().term != term
                ) and time.monotonic() < deadline:
                    time.sleep(0.005)
                assert f.leader() is not None
                assert f.leader().replica_id == new_leader.replica_id
            other = next(f for f in followers if f is not new_leader)
            assert not other.may_write()
            assert other.term is None
            # The new leader hands over cleanly for the next round.
            for f in followers:
                f.close()
            for t in threads:
                t.join(10)
        finally:
            stop_process(leader_proc, timeout=0)
    print(
        f"\nleader SIGKILLed -> follower leads (TTL {TTL} s), {kills} kills: "
        + ", ".join(f"{t:.2f} s" for t in takeovers)
    )


def test_resigning_leader_hands_over_at_once(cluster, resources):
    s = settings(cluster, unique_prefix())
    la, lb = open_leadership(resources, s, "a"), open_leadership(resources, s, "b")
    term_a = la.campaign(timeout=10)
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(lb.campaign(timeout=10)))
    t.start()
    time.sleep(0.2)
    assert not result
    started = time.monotonic()
    la.resign()
    t.join()
    print(f"\nresign -> next leader: {(time.monotonic() - started) * 1000:.1f} ms")
    assert result[0] > term_a
    assert not la.may_write()
    assert lb.may_write()


def test_closing_twice_is_harmless_and_a_closed_candidate_cannot_lead(cluster, resources):
    """close() runs once whoever calls it (owner, then fixture); a leader
    that closes frees the key at once; a closed candidate refuses to campaign
    instead of taking a term it would never give up."""
    s = settings(cluster, unique_prefix())
    la = open_leadership(resources, s, "a")
    observer = open_leadership(resources, s, "observer")
    la.campaign(timeout=10)
    la.close()
    la.close()
    deadline = time.monotonic() + 5
    while observer.leader() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert observer.leader() is None, "closing the leader deletes the leader key"
    with pytest.raises(StateError):
        la.campaign(timeout=1)
    assert la.term is None
    assert not la.may_write()


def test_partitioned_leader_stops_writing_before_its_lease_expires(cluster, resources):
    """The old leader reaches only member 0; member 0 dies. Its keepalives
    fail, and may_write() turns false before the lease can have expired, so
    strictly before the replica on the majority side becomes leader; at no
    sampled instant do both may write."""
    prefix = unique_prefix()
    lost: list[tuple[float, str]] = []
    old = EtcdLeadership(
        settings(cluster, prefix, [0]),
        "old",
        "old:50051",
        ttl=TTL,
        margin=MARGIN,
        on_lost=lambda reason: lost.append((time.monotonic(), reason)),
    )
    resources.callback(old.close)
    new = open_leadership(resources, settings(cluster, prefix, [1, 2]), "new")
    old_term = old.campaign(timeout=10)
    assert old.may_write()
    samples: list[tuple[float, bool, bool]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.monotonic(), old.may_write(), new.may_write()))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    won: list[tuple[float, int]] = []
    campaigner = threading.Thread(
        target=lambda: won.append((0.0, new.campaign(timeout=30))), daemon=True
    )
    sampler.start()
    campaigner.start()
    partitioned = time.monotonic()
    cluster.kill(0)
    campaigner.join(40)
    took_over = time.monotonic()
    time.sleep(0.1)
    stop.set()
    sampler.join()
    assert won
    assert won[0][1] > old_term
    old_stopped = next(t for t, old_ok, _ in samples if not old_ok)
    new_started = next(t for t, _, new_ok in samples if new_ok)
    assert old_stopped < new_started
    assert not any(o and n for _, o, n in samples)
    # The old leader was told, before the new one started.
    assert lost
    assert "keepalives failing" in lost[0][1]
    assert lost[0][0] < new_started
    assert old.term is None
    print(
        f"\npartition: old leader stopped writing {old_stopped - partitioned:.2f} s after losing "
        f"etcd; new leader {new_started - partitioned:.2f} s after (gap "
        f"{new_started - old_stopped:.2f} s, TTL {TTL} s, margin {MARGIN} s); "
        f"campaign returned at {took_over - partitioned:.2f} s"
    )


# -- TLS --------------------------------------------------------------------


def test_mutual_tls(tmp_path, resources):
    """Over TLS with a client certificate the store works; without one, or
    with a certificate from another CA, it is refused with a clear error."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not found: etcd TLS test skipped")
    make_ca(tmp_path, "ca")
    make_ca(tmp_path, "rogue-ca")
    make_cert(tmp_path, "ca", "server", server=True)
    make_cert(tmp_path, "ca", "client", server=False)
    make_cert(tmp_path, "rogue-ca", "rogue", server=False)
    pem, key = (lambda n: tmp_path / f"{n}.pem"), (lambda n: tmp_path / f"{n}.key")
    tls = ClusterTls(pem("ca"), pem("server"), key("server"), pem("client"), key("client"))
    with etcd_cluster(1, tls=tls) as cluster:
        prefix = unique_prefix()
        client = TlsFiles(str(pem("ca")), str(pem("client")), str(key("client")))
        secure = EtcdSettings(tuple(cluster.endpoints), prefix=prefix, tls=client)
        a = open_store(resources, secure, "a")
        r = a.commit(Change(upserts=(vm(1),)), 0)
        assert open_store(resources, secure, "b").load().revision == r
        rogue = TlsFiles(str(pem("ca")), str(pem("rogue")), str(key("rogue")))
        for name, refused in (
            ("plaintext", EtcdSettings(tuple(cluster.endpoints), prefix=prefix, timeout=1.0)),
            (
                "rogue",
                EtcdSettings(tuple(cluster.endpoints), prefix=prefix, tls=rogue, timeout=1.0),
            ),
        ):
            store = EtcdStateStore(refused, name)
            try:
                with pytest.raises(StoreUnavailable, match="no etcd member reachable"):
                    store.commit(Change(upserts=(vm(2),)), r)
            finally:
                store.close()
        assert set(a.load().vms) == {"vm1"}
        resources.close()  # before the cluster stops


def needs_netns() -> pytest.MarkDecorator:
    missing = [
        why
        for bad, why in (
            (os.geteuid() != 0, "not root"),
            (shutil.which("ip") is None, "iproute2 missing"),
        )
        if bad
    ]
    return pytest.mark.skipif(
        bool(missing), reason="; ".join(missing) + ": network-namespace partition test skipped"
    )


def read_events(proc: subprocess.Popen[str], into: list[dict]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        into.append(json.loads(line))


@needs_netns()
@pytest.mark.parametrize("raft_leader", ["on the old leader's side", "on the majority side"])
def test_leader_cut_off_by_a_network_partition(resources, raft_leader):
    """A real partition: etcd member 0 and the old leader (a separate process)
    run in a network namespace whose link is cut; members 1 and 2 and the
    other replica stay outside. Whichever side etcd's raft leader is on, the
    old leader stops writing and is told so before the new leader exists.
    (With the raft leader inside, etcd 3.4 keeps renewing the old lease
    locally until that member steps down: the case the margin must cover.)"""
    prefix = unique_prefix()
    script = Path(__file__).with_name("etcd_candidate.py")
    with netns_link("etcd") as link:
        placement = [(link.ns_address, link.wrap)] + [(link.host_address, ())] * 2
        with etcd_cluster(3, placement=placement) as cluster:
            cluster.move_raft_leader(0 if raft_leader == "on the old leader's side" else 1)
            old = subprocess.Popen(
                [*link.wrap, sys.executable, str(script), "--endpoints", cluster.endpoints[0]]
                + ["--prefix", prefix, "--id", "old", "--ttl", str(TTL)]
                + ["--margin", str(MARGIN), "--report"],
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                events: list[dict] = []
                reader = threading.Thread(target=read_events, args=(old, events), daemon=True)
                reader.start()
                deadline = time.monotonic() + 30
                while not events and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert events
                assert events[0]["event"] == "leader"
                new = open_leadership(resources, settings(cluster, prefix, [1, 2]), "new")
                won: list[tuple[float, EtcdLeadership, int]] = []
                campaigner = threading.Thread(target=campaign_into, args=(new, won), daemon=True)
                campaigner.start()
                time.sleep(0.5)
                assert not won  # the old leader still holds its lease
                cut = time.monotonic()
                link.cut()
                campaigner.join(40)
                assert won, "the majority side elects a new leader"
                new_at, _, term = won[0]
                time.sleep(0.2)
                stopped = next(e["t"] for e in events if e["event"] == "stopped")
                lost = next(e for e in events if e["event"] == "lost")
                assert term > events[0]["term"]
                assert stopped < new_at
                assert lost["t"] < new_at
                print(
                    f"\nnetwork partition, raft leader {raft_leader}: old leader stopped writing "
                    f"{stopped - cut:.2f} s after the cut, new leader {new_at - cut:.2f} s after "
                    f"(gap {new_at - stopped:.2f} s; TTL {TTL} s, margin {MARGIN} s)"
                )
                resources.close()  # the new leader resigns before the cluster stops
            finally:
                stop_process(old, timeout=0)
                link.heal()


# -- etcd failures ----------------------------------------------------------


@pytest.mark.parametrize("victim", ["member in use", "member the watch uses", "raft leader"])
def test_one_member_killed_store_and_leader_continue(cluster, resources, victim):
    """With one of three members SIGKILLed (the one the committing store
    talks to, the one the watching store follows, or etcd's raft leader),
    commits, the watch and leadership go on. The lease
    uses the production TTL: it must outlast a raft election."""
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    leader = EtcdLeadership(s, "a", "a:50051", ttl=5, margin=1.0)
    resources.callback(leader.close)
    leader.campaign(timeout=10)
    seen: list[StateEvent] = []
    b.load()
    b.watch(seen.append)
    r = a.commit(Change(upserts=(vm(1),)), 0)
    raft_leader = cluster.raft_leader()
    if victim == "member in use":
        index = cluster.endpoints.index(a._connection.client.endpoint_in_use.netloc)
    elif victim == "member the watch uses":
        index = cluster.endpoints.index(b._connection.client.endpoint_in_use.netloc)
    else:
        index = raft_leader
    writable: list[bool] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            writable.append(leader.may_write())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cluster.kill(index)
    started = time.monotonic()
    r = a.commit(Change(upserts=(vm(2),)), r)
    failover = time.monotonic() - started
    r = a.commit(Change(upserts=(vm(3),)), r)
    deadline = time.monotonic() + 10
    while len(seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.revision for e in seen][-1] == r
    assert len(seen) == 3
    assert set(b.snapshot().vms) == {"vm1", "vm2", "vm3"}
    time.sleep(5)  # more than a lease TTL: keepalives went on through the others
    stop.set()
    sampler.join()
    assert all(writable)
    assert leader.term is not None
    cluster.restart(index)
    assert set(open_store(resources, s, "c").load().vms) == {"vm1", "vm2", "vm3"}
    print(
        f"\n{victim} killed ({'the' if index == raft_leader else 'not the'} raft leader): "
        f"the next commit took {failover * 1000:.0f} ms"
    )


def test_quorum_lost_commits_refused_then_resume(cluster, resources):
    s = settings(cluster, unique_prefix())
    a, b = open_store(resources, s, "a"), open_store(resources, s, "b")
    leader = open_leadership(resources, s, "a")
    leader.campaign(timeout=10)
    seen: list[StateEvent] = []
    b.load()
    b.watch(seen.append)
    r = a.commit(Change(upserts=(vm(1),)), 0)
    before = a.snapshot()
    stopped_writing: list[float] = []

    def watch_may_write() -> None:
        while leader.may_write():
            time.sleep(0.005)
        stopped_writing.append(time.monotonic())

    sampler = threading.Thread(target=watch_may_write, daemon=True)
    sampler.start()
    lost = time.monotonic()
    cluster.kill(1)
    cluster.kill(2)
    pending = Change(upserts=(vm(2),))
    with pytest.raises(StoreUnavailable, match="no quorum: 1 of 3 members reachable") as refused:
        a.commit(pending, r)
    refused_after = time.monotonic() - lost
    assert refused.value.commit_id  # not acknowledged: it may land when quorum returns
    print(f"\nquorum lost: commit refused after {refused_after:.2f} s: {refused.value}")
    assert a.snapshot() == before  # the last known state stays readable
    assert set(b.snapshot().vms) == {"vm1"}
    sampler.join(TTL + 1)
    assert stopped_writing
    assert not leader.may_write()
    stopped = stopped_writing[0] - lost
    back = time.monotonic()
    cluster.restart(1)
    cluster.restart(2)
    while True:
        try:
            # Committed again under the same id: applied exactly once
            # whether or not etcd had kept the first attempt.
            r2 = a.commit(pending, r, commit_id=refused.value.commit_id)
            break
        except StoreUnavailable:
            assert time.monotonic() - back < 20
            time.sleep(0.1)
    resumed = time.monotonic() - back
    deadline = time.monotonic() + 10
    while (not seen or seen[-1].revision != r2) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen
    assert seen[-1].revision == r2
    assert set(b.snapshot().vms) == {"vm1", "vm2"}
    assert set(a.load().vms) == {"vm1", "vm2"}
    assert a.load().revision == r2
    assert [e.revision for e in seen] == [r, r2]
    # Leadership can be won again once etcd is back.
    assert leader.campaign(timeout=15)
    assert leader.may_write()
    print(
        f"quorum lost: leader stopped writing after {stopped:.2f} s; "
        f"commits resumed {resumed:.2f} s after restarting the two members"
    )
