"""VMs refer to one object per server name, VNI, VLAN, policy and source
(model/fabric.py, ``shared``): equal values read separately (a file, the
store, the API) are not kept once per VM."""

from __future__ import annotations

from dataclasses import replace

import pytest
from p4vtep.model.fabric import SHARED_FIELDS, Vm, shared
from p4vtep.state.rows import vm_to_json, vms_from_json


def _distinct(text: str) -> str:
    """An equal string that is another object (as a parser makes them)."""
    return "".join(list(text))


def _two_vms() -> tuple[Vm, Vm]:
    # Values built at run time, so equal but distinct objects.
    big = int("70000")
    return (
        Vm(
            "a",
            "00:00:00:00:00:01",
            ("10.0.0.1",),
            big,
            _distinct("s1"),
            big - 69000,
            _distinct("gold"),
            _distinct("libvirt"),
        ),
        Vm(
            "b",
            "00:00:00:00:00:02",
            ("10.0.0.2",),
            int("70000"),
            _distinct("s1"),
            int("1000"),
            _distinct("gold"),
            _distinct("libvirt"),
        ),
    )


def test_equal_values_of_two_vms_are_one_object():
    a, b = _two_vms()
    for name in SHARED_FIELDS:
        assert getattr(a, name) is getattr(b, name), name
    assert replace(a, server=_distinct("s1")).server is a.server


def test_vms_read_from_the_store_share_them_too():
    a, b = _two_vms()
    loaded = vms_from_json([vm_to_json(a), vm_to_json(b)])
    assert loaded == [a, b]
    for name in SHARED_FIELDS:
        assert getattr(loaded[0], name) is getattr(loaded[1], name) is getattr(a, name), name


def test_shared_keeps_other_values_and_types_as_they_are():
    assert shared(None) is None
    assert shared(True) is True  # (a bool is not taken for the integer 1)
    assert type(shared(1)) is int
    ips = ("10.0.0.1",)
    assert shared(ips) is ips


def test_vms_read_from_the_store_in_chunks_are_all_there_in_order():
    a, _ = _two_vms()
    many = [
        replace(a, name=f"vm{i}", mac=f"00:00:00:00:{i >> 8:02x}:{i & 255:02x}")
        for i in range(2500)
    ]
    texts = [vm_to_json(vm) for vm in many]
    texts[1234] = texts[1234].replace('"vlan"', '"vlan":7,"old"')  # (an odd row among them)
    with pytest.raises(TypeError):
        vms_from_json(texts)
    del texts[1234], many[1234]
    assert vms_from_json(texts) == many
