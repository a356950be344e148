"""The controller's replica hooks without etcd: a follower refuses writes
naming the leader, and a controller that applies another's commits
(apply_committed) ends with the same VMs, indices and compiled entries."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_fixture import two_tor_fabric, vms
from helpers import FixedLeadership
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.protocol import LeaderInfo, NotLeader, StateEvent
from p4vtep.state.rows import allocation_rows
from p4vtep.state.sqlite_store import Store


def test_follower_refuses_writes_naming_the_leader_and_changes_nothing():
    leader = LeaderInfo("ctl1", "10.0.0.21:50051", 7)
    store = Store()
    follower = Controller(
        two_tor_fabric(),
        bmv2_pipeline(),
        store,
        leadership=FixedLeadership("ctl2", None, leader),  # type: ignore[arg-type]
    )
    with pytest.raises(NotLeader, match=r"send writes to the leader ctl1 at 10\.0\.0\.21:50051"):
        follower.attach(vms()[0])
    assert follower.vms == {}
    assert store.load().vms == {}
    follower.leadership = FixedLeadership("ctl2", None, None)  # type: ignore[assignment]
    with pytest.raises(NotLeader, match="no leader is elected right now"):
        follower.attach(vms()[0])
    follower.leadership = FixedLeadership("ctl2", 9, None)  # type: ignore[assignment]
    follower.attach(vms()[0])  # it leads now
    assert set(store.load().vms) == {"a1"}


def event_between(before, after, revision: int) -> StateEvent:
    return StateEvent(
        revision,
        "leader",
        {n: vm for n, vm in after.vms.items() if before.vms.get(n) != vm},
        frozenset(before.vms.keys() - after.vms.keys()),
        {r: i for r, i in after.allocations.items() if before.allocations.get(r) != i},
        frozenset(before.allocations.keys() - after.allocations.keys()),
    )


def test_apply_committed_follows_the_leader_exactly():
    """The follower takes the leader's indices even where it would have
    picked others (it saw a different order of changes), and compiles the
    same entries for every ToR."""
    pipeline = bmv2_pipeline()
    leader = Controller(two_tor_fabric(), pipeline, Store())
    follower = Controller(two_tor_fabric(), pipeline, Store())
    a1, a2, b1, b2 = vms()
    # Each group reaches the follower as one event (as after a watch gap).
    # The first: a1 takes VM index 1 on tor1 and frees it, so b1 gets 2
    # there; the follower never sees a1 and would have given b1 index 1.
    groups = [
        [
            lambda: leader.attach(a1),
            lambda: leader.attach(a2),
            lambda: leader.detach("a1"),
            lambda: leader.attach(b1),
        ],
        [lambda: leader.attach(b2)],
        [lambda: leader.migrate("a2", "s22", 21)],
        [lambda: leader.attach(replace(a1, vlan=11)), lambda: leader.detach("b2")],
    ]
    before = leader.store.load()
    for group in groups:
        for step in group:
            step()
        after = leader.store.load()
        follower.apply_committed(event_between(before, after, leader.revision))
        # A repeat (or an own commit coming back through the watch): ignored.
        follower.apply_committed(event_between(before, after, leader.revision))
        before = after
        assert follower.vms == leader.vms
        assert allocation_rows(follower.alloc) == allocation_rows(leader.alloc)
        for tor in ("tor1", "tor2"):
            assert follower.compile_for(tor)[1].entities == leader.compile_for(tor)[1].entities
    assert allocation_rows(follower.alloc)[("vm@tor1", "b1")] == 2
    assert follower.revision == leader.revision
