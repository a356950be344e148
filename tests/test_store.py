from dataclasses import replace

from fabric_fixture import two_tor_fabric, vms
from p4vtep.compiler import Allocations, compile_tor
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.store import Store


def test_round_trip_and_incremental_saves(tmp_path):
    path = tmp_path / "state.db"
    alloc = Allocations()
    entries = PipelineEntries(bmv2_pipeline().p4info)
    for tor in ("tor1", "tor2"):
        compile_tor(two_tor_fabric(), vms(), tor, alloc, entries)
    store = Store(path)
    store.save(vms(), alloc)
    changed = [replace(vms()[0], vlan=99)] + vms()[2:]  # a2 gone, a1 changed
    alloc.vm_space("tor2").release("a2")
    store.save(changed, alloc)
    store.close()
    again = Store(path)
    assert again.load_vms() == {vm.name: vm for vm in changed}
    restored = again.load_allocations()
    assert restored.vm_space("tor1").items() == alloc.vm_space("tor1").items()
    assert restored.vm_space("tor2").peek("a2") is None
    assert sorted(restored.vni.items()) == sorted(alloc.vni.items())
