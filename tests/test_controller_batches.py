"""Attach, detach and migrate handed in together run as one batch
(``Controller._run_batch``): in the order they came, each validated against
what the ones before it left, each with its own acknowledgement or its own
error, stored in one commit under one new version. No switch: the
supervisors never run, and a migration's confirmations are given by hand.

A batch is made by holding the controller's lock while a first change runs
(its caller leads and waits for the lock) and handing the others in behind
it one after another; when the lock is let go, the first change runs alone
and the rest run together, in the order they were handed in."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fabric_fixture import two_tor_fabric, vms
from helpers import controller_state, wait_until
from p4vtep import events
from p4vtep.controller import Controller, NotFound
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Vm
from p4vtep.model.validation import ValidationError
from p4vtep.state.protocol import StoreUnavailable
from p4vtep.state.sqlite_store import Store

C1 = Vm("c1", "00:00:0c:00:00:01", ("192.168.3.1",), 5000, "s11", 50)
C2 = Vm("c2", "00:00:0c:00:00:02", ("192.168.3.2",), 5000, "s21", 60)
C3 = Vm("c3", "00:00:0c:00:00:03", ("192.168.3.3",), 5000, "s22", 70)
FIRST = Vm("first", "00:00:0f:00:00:01", ("192.168.9.1",), 6000, "s22", 90)


class FlakyStore(Store):
    """SQLite, refusing commits while ``down`` is set (as an etcd store
    does when it loses quorum)."""

    down = False

    def commit(self, change: Any, base_revision: int, **kwargs: Any) -> int:
        if self.down:
            raise StoreUnavailable("store down")
        return super().commit(change, base_revision, **kwargs)


@pytest.fixture
def controller() -> Controller:
    c = Controller(two_tor_fabric(), bmv2_pipeline(), FlakyStore())
    c.replace_source("inventory", vms())  # a1 s11 (tor1), a2 s21, b1 b2 s12 (tor1)
    return c


def in_one_batch(controller: Controller, calls: list[Callable[[], int]]) -> list[object]:
    """Run ``calls`` (each a controller method call) as one batch, in this
    order, behind a first attach; each one's version or exception."""
    outcomes: list[object] = [None] * len(calls)
    batches = controller._batcher.batches

    def run(i: int, call: Callable[[], int]) -> None:
        try:
            outcomes[i] = call()
        except Exception as exc:  # noqa: BLE001 -- the outcome under test
            outcomes[i] = exc

    def run_first() -> None:
        with contextlib.suppress(Exception):  # (a store that fails fails it too)
            controller.attach(FIRST)

    threads = []
    with controller._lock:
        first = threading.Thread(target=run_first)
        first.start()
        threads.append(first)
        assert wait_until(lambda: controller._batcher.leading and not controller._batcher.pending)
        for i, call in enumerate(calls):
            thread = threading.Thread(target=run, args=(i, call))
            thread.start()
            threads.append(thread)
            assert wait_until(lambda i=i: controller._batcher.pending == i + 1)  # type: ignore[misc]
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert controller._batcher.batches == batches + 2  # the first change's, then these
    return outcomes


def incremental_equals_full(controller: Controller) -> None:
    for tor in controller.fabric.tors:
        assert controller.snapshot(tor)[1] == controller.compile_for(tor)[1], tor


def ack(controller: Controller, tor: str, version: int) -> None:
    """Pretend ``tor``'s supervisor applied ``version``."""
    sup = controller.supervisors[tor]
    with sup._applied:
        sup.status.version = version
        sup._applied.notify_all()


def test_changes_in_one_batch_run_in_order_under_one_version(controller) -> None:
    taken = Vm("c9", "00:00:0c:00:00:09", ("192.168.3.9",), 5000, "s11", 50)  # C1's VLAN
    start = controller.version
    outcomes = in_one_batch(
        controller,
        [
            lambda: controller.attach(C1),
            lambda: controller.attach(taken),
            lambda: controller.attach(C2),
        ],
    )
    version = start + 2  # the first change's, then this batch's
    assert outcomes[0] == outcomes[2] == version == controller.version
    assert isinstance(outcomes[1], ValidationError)  # C1, before it, holds s11 VLAN 50
    assert "c1" in str(outcomes[1])
    assert set(controller.vms) >= {"c1", "c2"}
    assert "c9" not in controller.vms
    assert controller.store.load_vms() == controller.vms
    incremental_equals_full(controller)


def test_the_order_they_came_in_decides(controller) -> None:
    taken = Vm("c9", "00:00:0c:00:00:09", ("192.168.3.9",), 5000, "s11", 50)
    outcomes = in_one_batch(
        controller, [lambda: controller.attach(taken), lambda: controller.attach(C1)]
    )
    assert outcomes[0] == controller.version
    assert isinstance(outcomes[1], ValidationError)
    assert "c9" in controller.vms
    assert "c1" not in controller.vms


def test_an_attach_then_a_detach_of_the_same_vm_in_one_batch(controller) -> None:
    before = controller.store.load_vms()
    space = controller.alloc.vm_space("tor1")
    outcomes = in_one_batch(
        controller,
        [lambda: controller.attach(C1), lambda: controller.detach("c1")],
    )
    assert outcomes == [controller.version, controller.version]
    assert "c1" not in controller.vms
    assert space.peek("c1") is None  # its index came and went
    assert controller.store.load_vms() == {**before, "first": FIRST}
    assert controller.store.load_allocations().vm_space("tor1").peek("c1") is None
    incremental_equals_full(controller)
    # Its place and addresses are free again.
    assert controller.attach(C1) == controller.version
    incremental_equals_full(controller)


def test_a_detach_frees_a_place_for_an_attach_later_in_the_batch(controller) -> None:
    same_place = Vm("c9", "00:00:0c:00:00:09", ("192.168.3.9",), 5000, "s11", 10)  # a1's
    outcomes = in_one_batch(
        controller,
        [lambda: controller.detach("a1"), lambda: controller.attach(same_place)],
    )
    assert outcomes == [controller.version, controller.version]
    assert "a1" not in controller.vms
    assert controller.vms["c9"] == same_place
    assert controller.store.load_vms() == controller.vms
    incremental_equals_full(controller)


def test_a_migration_inside_a_batch_keeps_its_old_place_until_confirmed(controller) -> None:
    """b1 moves from s12 (tor1) to s21 (tor2) in a batch with an attach that
    wants b1's old place (refused: tor1 still holds b1 there) and an attach
    elsewhere; tor1 lets go once tor2 confirmed, in a batch of its own."""
    b1 = controller.get("b1")
    wants_old_place = Vm("c9", "00:00:0c:00:00:09", ("192.168.3.9",), 6000, "s12", b1.vlan)
    outcomes = in_one_batch(
        controller,
        [
            lambda: controller.migrate("b1", "s21", 31, timeout=20, wait=False),
            lambda: controller.attach(wants_old_place),
            lambda: controller.attach(C2),
        ],
    )
    moved = controller.version
    assert outcomes[0] == outcomes[2] == moved
    assert isinstance(outcomes[1], ValidationError)
    assert controller.vms["b1"].server == "s21"
    assert controller.desired.seen_by("tor1", "b1") == b1  # pinned where it was
    assert controller.store.load_vms()["b1"].server == "s21"
    incremental_equals_full(controller)
    ack(controller, "tor2", moved)  # tor2 holds the move: tor1 lets go
    assert wait_until(lambda: controller.version == moved + 1)
    assert controller.desired.seen_by("tor1", "b1") == controller.vms["b1"]
    assert controller.attach(wants_old_place) == controller.version  # free now
    incremental_equals_full(controller)


def test_a_migration_and_a_detach_of_the_same_vm_in_one_batch(controller) -> None:
    outcomes = in_one_batch(
        controller,
        [
            lambda: controller.migrate("b2", "s22", 41, timeout=20, wait=False),
            lambda: controller.detach("b2"),
        ],
    )
    assert outcomes == [controller.version, controller.version]
    assert "b2" not in controller.vms
    assert controller.desired.seen_by("tor1", "b2") is None  # no pin kept for a VM gone
    assert "b2" not in controller.store.load_vms()
    incremental_equals_full(controller)


def test_each_refused_change_gets_its_own_error_and_the_others_go_on(controller) -> None:
    bus = controller.bus.subscribe()
    clash = Vm("c8", C1.mac, ("192.168.3.8",), 5000, "s12", 80)  # C1's MAC in its VNI
    outcomes = in_one_batch(
        controller,
        [
            lambda: controller.attach(C1),
            lambda: controller.attach(Vm("c7", "00:00:0c:00:00:07", (), 5000, "nowhere", 5)),
            lambda: controller.detach("ghost"),
            lambda: controller.attach(clash),
            lambda: controller.migrate("a2", "s99", 5, wait=False),
            lambda: controller.attach(C3),
        ],
    )
    version = controller.version
    assert outcomes[0] == outcomes[5] == version
    assert isinstance(outcomes[1], ValidationError)
    assert "nowhere" in str(outcomes[1])
    assert isinstance(outcomes[2], NotFound)
    assert str(outcomes[2]) == "no VM named 'ghost'"
    assert isinstance(outcomes[3], ValidationError)
    assert "c1" in str(outcomes[3])
    assert isinstance(outcomes[4], ValidationError)
    assert "unknown server 's99'" in str(outcomes[4])
    assert {"c1", "c3"} <= set(controller.vms)
    assert not {"c7", "c8"} & set(controller.vms)
    assert controller.vms["a2"].server == "s21"
    assert controller.store.load_vms() == controller.vms
    incremental_equals_full(controller)
    published = []
    while True:
        try:
            event = bus.get_nowait()
        except queue.Empty:
            break
        if isinstance(event, events.DesiredStateChanged):
            published.append((event.vm, event.change))
    assert published == [("first", "attached"), ("c1", "attached"), ("c3", "attached")]


def test_a_store_that_fails_fails_every_change_it_held_and_undoes_them(controller) -> None:
    b1 = controller.get("b1")
    before = controller_state(controller)
    controller.store.down = True
    try:
        outcomes = in_one_batch(
            controller,
            [
                lambda: controller.attach(C1),
                lambda: controller.migrate("b1", "s21", 31, timeout=20, wait=False),
                lambda: controller.detach("a1"),
                lambda: controller.detach("ghost"),
            ],
        )
    finally:
        controller.store.down = False
    assert all(isinstance(o, StoreUnavailable) for o in outcomes[:3]), outcomes
    assert isinstance(outcomes[3], NotFound)  # refused before the store was asked
    vms_before, _, entities_before, stored_before = before
    assert isinstance(vms_before, dict)
    assert controller.vms == vms_before  # (but "first" failed too)
    assert controller.store.load_vms() == stored_before
    assert controller.desired.seen_by("tor1", "b1") == b1
    assert not controller.desired.pinned_vms()  # the migration's pin released
    assert {t: controller.snapshot(t)[1] for t in controller.fabric.tors} == entities_before
    incremental_equals_full(controller)
    # The next change goes through, against the state as it was.
    assert controller.attach(C1) == controller.version
    assert controller.migrate("b1", "s21", 31, timeout=0.1) == controller.version
    assert controller.store.load_vms() == controller.vms
    incremental_equals_full(controller)
