"""The parts of the replicated state that need no etcd: changes, stored rows,
key layout, settings."""

from __future__ import annotations

import pytest
from p4vtep.model.fabric import Vm
from p4vtep.state.etcd_connection import EtcdSettings, prefix_range_end
from p4vtep.state.etcd_store import EtcdKeys
from p4vtep.state.protocol import Change, Snapshot
from p4vtep.state.rows import (
    allocation_rows,
    allocations_from_rows,
    change_between,
    vm_from_json,
    vm_to_json,
    vms_from_json,
)

VM = Vm("vm1", "02:00:00:00:00:01", ("10.0.0.1", "10.0.0.2"), 100, "s1", 10, "gold", "api")


def test_vm_json_round_trip():
    assert vm_from_json(vm_to_json(VM)) == VM
    assert vm_from_json(vm_to_json(VM).encode()) == VM


def test_vms_from_json_builds_the_same_vms_as_one_by_one():
    other = Vm("vm2", "02:00:00:00:00:02", ("10.0.0.3",), 200, "s2", 11)
    loaded = vms_from_json([vm_to_json(VM), vm_to_json(other)])
    assert loaded == [VM, other]
    assert {hash(vm) for vm in loaded} == {hash(VM), hash(other)}  # (keys of the indexes)
    assert all(type(vm.ips) is tuple for vm in loaded)
    with pytest.raises(AttributeError):  # still frozen
        loaded[0].vlan = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    "row",
    [
        '{"name":"vm1","mac":"02:00:00:00:00:01","ips":[],"vni":1,"server":"s1","vlan":1,'
        '"qos":null,"source":"api","colour":"red"}',  # a field Vm has not
        '{"name":"vm1","mac":"02:00:00:00:00:01","ips":[],"vni":1,"vlan":1}',  # no server
    ],
)
def test_vms_from_json_refuses_rows_vm_from_json_refuses(row):
    with pytest.raises(TypeError):
        vm_from_json(row)
    with pytest.raises(TypeError):
        vms_from_json([vm_to_json(VM), row])


def test_vms_from_json_fills_defaults_of_an_older_row():
    row = (
        '{"name":"vm1","mac":"02:00:00:00:00:01","ips":["10.0.0.1"],"vni":1,"server":"s1","vlan":1}'
    )
    assert vms_from_json([row]) == [vm_from_json(row)]
    assert vms_from_json([row])[0].source == "inventory"


def test_allocation_rows_round_trip():
    rows = {("vni", "100"): 1, ("tor", "tor1"): 0, ("vm@tor1", "vm1"): 7, ("vm@tor2", "vm2"): 3}
    alloc = allocations_from_rows(rows)
    assert alloc.vni.peek(100) == 1
    assert alloc.tor.peek("tor1") == 0
    assert alloc.vm["tor1"].peek("vm1") == 7
    assert alloc.vm["tor2"].peek("vm2") == 3
    assert allocation_rows(alloc) == rows
    # Restored indices are taken: the next allocation skips them.
    low = alloc.vm["tor1"].low
    space = allocations_from_rows({("vm@tor1", "vm1"): low, ("vm@tor1", "vm2"): low + 1}).vm["tor1"]
    assert space.get("vm3") == low + 2
    assert alloc.vni.missing([100, 200, 200, 300]) == 2
    with pytest.raises(ValueError, match="unknown allocation space 'bogus'"):
        allocations_from_rows({("bogus", "x"): 1})


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"upserts": (VM, VM)}, "upserted twice"),
        ({"upserts": (VM,), "removals": ("vm1",)}, "both upserted and removed"),
        (
            {"alloc_set": {("vni", "1"): 1}, "alloc_removed": (("vni", "1"),)},
            "both set and removed",
        ),
        ({"alloc_set": {("vni", ""): 1}}, "bad allocation row"),
        ({"alloc_set": {("vni", "1"): -2}}, "bad allocation row"),
    ],
)
def test_invalid_changes_are_refused(change, problem):
    with pytest.raises(ValueError, match=problem):
        Change(**change)


def test_change_between_snapshot_and_target():
    moved = Vm("vm1", VM.mac, VM.ips, 100, "s2", 11)
    vm2 = Vm("vm2", "02:00:00:00:00:02", ("10.0.0.3",), 100, "s1", 10)
    vm3 = Vm("vm3", "02:00:00:00:00:03", ("10.0.0.4",), 100, "s1", 10)
    before = Snapshot(5, {"vm1": VM, "vm2": vm2}, {("vm@tor1", "vm1"): 1, ("vm@tor1", "vm2"): 2})
    change = change_between(
        before,
        {"vm1": moved, "vm3": vm3},
        {("vm@tor2", "vm1"): 1, ("vm@tor1", "vm3"): 2},
    )
    assert set(change.upserts) == {moved, vm3}
    assert change.removals == ("vm2",)
    assert dict(change.alloc_set) == {("vm@tor2", "vm1"): 1, ("vm@tor1", "vm3"): 2}
    assert set(change.alloc_removed) == {("vm@tor1", "vm1"), ("vm@tor1", "vm2")}
    assert change_between(before, before.vms, before.allocations).empty


def test_keys_encode_names_and_parse_back():
    keys = EtcdKeys("/p4vtep")
    assert keys.vm("tenant/a b") == b"/p4vtep/vms/tenant%2Fa%20b"
    row = ("vm@tor/1", "a/b%")
    assert keys.alloc_row(row) == b"/p4vtep/alloc/vm%40tor%2F1/a%2Fb%25"
    assert keys.parse_alloc(keys.alloc_row(row)) == row
    assert keys.meta == b"/p4vtep/meta/revision"
    assert keys.leader == b"/p4vtep/leader"


def test_prefix_range_end():
    assert prefix_range_end(b"/p4vtep/vms/") == b"/p4vtep/vms0"
    assert prefix_range_end(b"a\xff") == b"b"
    assert prefix_range_end(b"\xff\xff") == b"\0"


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"endpoints": ()}, "no endpoints"),
        ({"endpoints": ("127.0.0.1",)}, "must be host:port"),
        ({"endpoints": ("127.0.0.1:2379",), "prefix": "p4vtep"}, "prefix must start"),
        ({"endpoints": ("127.0.0.1:2379",), "prefix": "/p4vtep/"}, "prefix must start"),
    ],
)
def test_bad_settings_are_refused(kwargs, problem):
    with pytest.raises(ValueError, match=problem):
        EtcdSettings(**kwargs)


def test_settings_accept_url_schemes():
    settings = EtcdSettings(("http://10.0.0.1:2379", "https://etcd-2:2379", "10.0.0.3:2379"))
    assert len(settings.endpoints) == 3
