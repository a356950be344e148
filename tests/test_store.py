import sqlite3
from dataclasses import replace

import pytest
from fabric_fixture import two_tor_fabric, vms
from p4vtep.model.allocation import Allocations, allocate
from p4vtep.state.sqlite_store import Store


def test_round_trip_and_incremental_saves(tmp_path):
    path = tmp_path / "state.db"
    alloc = Allocations()
    allocate(two_tor_fabric(), vms(), alloc)
    store = Store(path)
    store.save(vms(), alloc)
    assert not alloc.dirty
    changed = replace(vms()[0], vlan=99)
    alloc.vm_space("tor2").release("a2")
    store.save_changes([changed], ["a2"], alloc.take_changes())
    store.close()
    again = Store(path)
    assert again.load_vms() == {vm.name: vm for vm in [changed] + vms()[2:]}
    restored = again.load_allocations()
    assert restored.vm_space("tor1").items() == alloc.vm_space("tor1").items()
    assert restored.vm_space("tor2").peek("a2") is None
    assert sorted(restored.vni.items()) == sorted(alloc.vni.items())
    assert sorted(restored.tor.items()) == sorted(alloc.tor.items())


def test_a_failed_transaction_changes_nothing(tmp_path):
    store = Store(tmp_path / "state.db")
    store.save_changes(vms(), [])
    bad = replace(vms()[1], vlan=7)
    # An allocation row without a key: refused after the VMs were written.
    with pytest.raises(sqlite3.IntegrityError, match="NOT NULL"):
        store.save_changes([bad], ["a1"], [("vm@tor1", None, 3)])  # type: ignore[list-item]
    assert store.load_vms() == {vm.name: vm for vm in vms()}


def test_state_store_protocol_commit_and_conflict(tmp_path):
    """The SQLite store is a StateStore: a commit lands against the revision
    it was based on, a stale base is refused and changes nothing, and a
    reopened file loads what was committed."""
    from p4vtep.state.protocol import Change, Conflict

    path = tmp_path / "state.db"
    store = Store(path)
    empty = store.load()
    assert (empty.revision, dict(empty.vms), dict(empty.allocations)) == (0, {}, {})
    first = Change(upserts=tuple(vms()[:2]), alloc_set={("vm@tor1", "a1"): 1, ("vni", "100"): 1})
    assert store.commit(first, 0) == 1
    second = Change(removals=("a1",), alloc_removed=(("vm@tor1", "a1"),))
    with pytest.raises(Conflict, match="changed since revision 0"):
        store.commit(second, 0)
    assert set(store.load().vms) == {"a1", "a2"}
    assert store.commit(second, 1) == 2
    store.close()
    again = Store(path).load()
    assert set(again.vms) == {"a2"}
    assert dict(again.allocations) == {("vni", "100"): 1}


def test_a_restarted_controller_checks_the_first_change_against_stored_vms(tmp_path):
    """The validation index is built by the first change after a start, not
    at the start: that change must still see every stored VM."""
    from p4vtep.controller import Controller
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.model.validation import ValidationError

    path = tmp_path / "state.db"
    first = Controller(two_tor_fabric(), bmv2_pipeline(), Store(path))
    for vm in vms():
        first.attach(vm)
    first.store.close()
    again = Controller(two_tor_fabric(), bmv2_pipeline(), Store(path))
    assert again.vms == {vm.name: vm for vm in vms()}
    same_mac = replace(vms()[0], name="a3", ips=("192.168.1.3",), vlan=11)
    with pytest.raises(ValidationError, match="a1"):
        again.attach(same_mac)
    assert again.vms == {vm.name: vm for vm in vms()}
    again.attach(replace(same_mac, mac="00:00:0a:00:00:03"))
    assert "a3" in again.vms
