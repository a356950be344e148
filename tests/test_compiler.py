from dataclasses import replace

import pytest
from fabric_fixture import two_tor_fabric, vms
from p4vtep.compiler import (
    Allocations,
    Encoder,
    SwitchState,
    allocate,
    compile_tor,
    flood_group,
)
from p4vtep.compiler.encode import ExactEntry
from p4vtep.compiler.flooding import OrderedCopies
from p4vtep.compiler.switch_state import encoded, expand
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop
from p4vtep.runtime.codec import EncodingError
from p4vtep.runtime.entities import to_entity
from p4vtep.runtime.protos import p4runtime_pb2
from p4vtep.switch.reconciler import diff


def compiled(tor="tor1", vm_list=None, alloc=None) -> SwitchState:
    entries = PipelineEntries(bmv2_pipeline().p4info)
    fabric, vm_list = two_tor_fabric(), vm_list or vms()
    alloc = alloc if alloc is not None else Allocations()
    allocate(fabric, vm_list, alloc)
    return compile_tor(fabric, vm_list, tor, alloc, entries)


def decoded(c: SwitchState) -> list[p4runtime_pb2.Entity]:
    return [p4runtime_pb2.Entity.FromString(expand(k, data)) for k, data in c.entities.items()]


def tables(c):
    p4info = bmv2_pipeline().p4info
    names = {}
    for entity in decoded(c):
        if entity.WhichOneof("entity") == "table_entry":
            alias = p4info.alias_of(entity.table_entry.table_id)
            names[alias] = names.get(alias, 0) + 1
    return names


def test_tor1_holds_its_vms_and_the_remote_ones_of_its_vnis():
    c = compiled()
    t = tables(c)
    # tor1 hosts a1 (VNI A) and b1, b2 (VNI B); a2 is remote on tor2.
    assert t["access_binding"] == 3
    assert t["mac_table"] == 4  # 3 local + a2 remote
    assert t["arp_suppression"] == 4
    assert t["vni_config"] == 2
    assert t["port_role"] == 4  # 2 server ports + 2 uplinks
    assert t["underlay_route"] == 1  # tor2's VTEP
    assert t["flood_replica"] == 3 + 1  # 3 local VFs + tor2's VTEP
    assert len(c.meters) == 3  # a1's gold policy: tx, rx (unicast) and rx (flood copies)
    assert len(c.defaults) == 1  # local_vtep's default action


def test_entities_are_stored_as_the_builders_encode_them():
    entries = PipelineEntries(bmv2_pipeline().p4info)
    alloc = Allocations()
    c = compiled(alloc=alloc)
    a1 = vms()[0]
    index = alloc.vm["tor1"]["a1"]
    # (a1's gold policy meters what it sends, and its port security is on
    # (the default): its binding says so, with its IPv4 address, BMv2's
    # short-cut past the source guard)
    binding = to_entity(
        entries.access_binding(
            1, a1.vlan, a1.vni, index, a1.mac, policed=True, guarded=True, ipv4=a1.ips[0]
        )
    )
    key, stored = encoded(binding)
    assert c.entities[key] == stored


def test_flood_group_has_local_vfs_and_one_copy_per_remote_vtep():
    alloc = Allocations()
    c = compiled(alloc=alloc)
    mc_groups = [
        e.packet_replication_engine_entry.multicast_group_entry
        for e in decoded(c)
        if e.WhichOneof("entity") == "packet_replication_engine_entry"
    ]
    groups = {g.multicast_group_id: g for g in mc_groups}
    # One group per VNI: BUM from the fabric takes it too (egress prunes).
    assert set(groups) == {flood_group(alloc.vni.peek(5000)), flood_group(alloc.vni.peek(6000))}
    group_a = flood_group(alloc.vni.peek(5000))
    assert len(groups[group_a].replicas) == 2  # a1's VF + tor2
    group_b = flood_group(alloc.vni.peek(6000))
    assert len(groups[group_b].replicas) == 2  # b1, b2; no remote VTEP hosts VNI B
    assert {r.egress_port for r in groups[group_b].replicas} == {2}


def test_compiling_twice_gives_identical_entities():
    alloc = Allocations()
    assert compiled(alloc=alloc) == compiled(alloc=alloc)


def test_compile_needs_allocated_indices():
    entries = PipelineEntries(bmv2_pipeline().p4info)
    try:
        compile_tor(two_tor_fabric(), vms(), "tor1", Allocations(), entries)
    except KeyError as exc:
        assert "no index allocated" in str(exc)
    else:
        raise AssertionError("compiled without allocations")


def test_diff_against_itself_is_empty():
    c = compiled()
    assert len(diff(c, c.copy())) == 0


def test_diff_inserts_modifies_and_deletes_in_dependency_order():
    alloc = Allocations()
    before = compiled(alloc=alloc)
    moved = [vm if vm.name != "a2" else replace(vm, server="s11", vlan=21) for vm in vms()]
    after = compiled(vm_list=moved, alloc=alloc)
    delta = diff(after, before)
    kinds = [u.type for u in delta.updates()]
    assert delta.inserts
    assert delta.deletes
    # Deletes first, then inserts, then modifies.
    assert kinds == sorted(kinds, key=lambda t: {3: 0, 1: 1, 2: 2}[t])
    # Within inserts: multicast groups before the table entries.
    inserted = [u.entity.WhichOneof("entity") for u in delta.updates() if u.type == 1]
    assert inserted == sorted(inserted, key=lambda k: k != "packet_replication_engine_entry")


def test_vm_indices_are_stable_when_others_come_and_go():
    alloc = Allocations()
    compiled(alloc=alloc)
    index_b2 = alloc.vm_space("tor1").peek("b2")
    compiled(vm_list=[vm for vm in vms() if vm.name != "b1"], alloc=alloc)
    assert alloc.vm_space("tor1").peek("b2") == index_b2
    assert alloc.vm_space("tor1").peek("b1") is None  # freed


def test_encoder_gives_the_same_bytes_and_keys_as_the_entry_builders():

    entries = PipelineEntries(bmv2_pipeline().p4info)
    enc = Encoder(entries)

    def reference(message):
        entity = to_entity(message)
        return encoded(entity)  # (the stored form: test_switch_state)

    mac, ip, ip6 = "02:bb:00:00:01:ff", "10.1.2.3", "2001:db8:ffff::a:1"
    cases = ((5000, 1, 1, 1, False), (16777215, 8191, 4095, 511, True), (1, 0, 0, 0, True))
    for vni, index, vlan, port, policed in cases:
        assert enc.access_binding(port, vlan, vni, index, mac, 0, policed) == reference(
            entries.access_binding(port, vlan, vni, index, mac, 0, policed)
        )
        assert enc.mac_to_local_vm(vni, mac, port, vlan, index, policed) == reference(
            entries.mac_to_local_vm(vni, mac, port, vlan, index, policed)
        )
        assert enc.replica_to_vm(index, vlan, index, policed) == reference(
            entries.replica_to_vm(index, vlan, index, policed)
        )
        assert enc.neighbour(vni, ip, mac) == reference(entries.arp_suppression(vni, ip, mac))
        for router in (False, True):  # (IPv6: ND, with the advert's router flag)
            assert enc.neighbour(vni, ip6, mac, router) == reference(
                entries.nd_suppression(vni, ip6, mac, router)
            )
        assert enc.mac_to_remote_vtep(vni, mac, "10.0.0.2") == reference(
            entries.mac_to_remote_vtep(vni, mac, "10.0.0.2")
        )
        for hop in (
            LocalVmHop(port, vlan, index, index, mac, policed),
            RemoteVtepHop("10.0.0.2", mac, vni),
        ):
            for address in (ip, ip6):  # (each in its family's host table)
                assert enc.host_route(vni, address, hop) == reference(
                    entries.host_route(vni, address, hop)
                )

    def group(group_id, copies):  # (in any order: OrderedCopies sorts them)
        return enc.flood_group_of(group_id, OrderedCopies(enc, copies).wire)

    replicas = [(2, 7), (1, 16385), (1, 3), (300, 1)]
    assert group(9, replicas) == reference(entries.flood_group(9, replicas))
    assert group(10, []) == reference(entries.flood_group(10, []))
    # Thousands of copies: lengths take two and three bytes on the wire.
    many = [(1 + i % 4, i) for i in range(5000, 0, -1)]
    assert group(11, many) == reference(entries.flood_group(11, many))


def test_ordered_copies_give_the_group_of_their_copies_as_they_come_and_go():
    """A VNI's copies kept in order with their encodings (what a rebuild of
    its groups joins) give the same group as the builder's, whatever the
    order of additions and removals, with extra copies merged in order."""

    entries = PipelineEntries(bmv2_pipeline().p4info)
    enc = Encoder(entries)

    def reference(group, copies):
        entity = to_entity(entries.flood_group(group, copies))
        return encoded(entity)  # (the stored form: test_switch_state)

    held = [(1 + i % 3, (i * 7919) % 5003) for i in range(1, 3000)]
    ordered = OrderedCopies(enc, held[:1000])
    for copy in held[1000:]:
        ordered.add(copy)
    for copy in held[::3]:
        ordered.remove(copy)
    kept = [c for i, c in enumerate(held) if i % 3]
    assert len(ordered) == len(kept)
    assert enc.flood_group_of(5, ordered.wire) == reference(5, kept)
    # Remote VTEPs' copies: before, between and after the local ones.
    extra = [(9, 16385), (0, 16386), (2, 16387)]
    assert enc.flood_group_of(6, ordered.with_extra(extra)) == reference(6, kept + extra)
    assert enc.flood_group_of(7, ordered.with_extra([])) == reference(7, kept)
    empty = OrderedCopies(enc)
    assert enc.flood_group_of(8, empty.with_extra(extra)) == reference(8, extra)
    with pytest.raises(KeyError):
        ordered.remove(held[0])  # (removed above)


def test_encoder_gives_the_builders_bytes_for_values_of_any_type():
    """Memos are shared by fields that serialize alike (the same table's
    match field, a parameter with the same id and width); a value given as
    an int, bytes or text gives the builders' bytes wherever it goes."""

    entries = PipelineEntries(bmv2_pipeline().p4info)
    enc = Encoder(entries)

    def reference(message):
        entity = to_entity(message)
        return encoded(entity)  # (the stored form: test_switch_state)

    for mac in ("02:00:00:00:00:07", 0x020000000007, b"\x02\x00\x00\x00\x00\x07", 7):
        assert enc.mac_to_remote_vtep(70, mac, "10.0.0.9") == reference(
            entries.mac_to_remote_vtep(70, mac, "10.0.0.9")
        )
        assert enc.mac_to_local_vm(70, mac, 2, 7, 7) == reference(
            entries.mac_to_local_vm(70, mac, 2, 7, 7)
        )
        assert enc.access_binding(2, 7, 70, 7, mac) == reference(
            entries.access_binding(2, 7, 70, 7, mac)
        )
        assert enc.replica_to_vm(7, 7, 7) == reference(entries.replica_to_vm(7, 7, 7))


def test_exact_entry_of_any_other_shape_gives_the_builders_bytes():
    """Shapes without an unrolled assembler (one match and four or no
    parameters here) take the general one."""

    entries = PipelineEntries(bmv2_pipeline().p4info)
    p4info = entries.p4info
    params = [p.name for p in p4info.params(p4info.action("set_vni_params").preamble.id)]
    vni_config = ExactEntry(p4info, "vni_config", ("vni",), "set_vni_params", params)
    my_vtep = ExactEntry(p4info, "my_vtep", ("vtep_ip",), "terminate", ())

    def reference(message):
        entity = to_entity(message)
        return encoded(entity)  # (the stored form: test_switch_state)

    given = {"vni_index": 7, "traffic_class": 3, "flood_group": 1007}
    assert vni_config(5000, *(given[name] for name in params)) == reference(
        entries.vni_config(5000, 7, 3, 1007)
    )
    assert my_vtep("10.0.0.1") == reference(entries.my_vtep("10.0.0.1"))
    with pytest.raises(TypeError):
        my_vtep("10.0.0.1", 1)


def test_exact_entry_takes_fields_in_wire_order_only():

    p4info = bmv2_pipeline().p4info
    with pytest.raises(ValueError, match="id order"):
        ExactEntry(
            p4info, "access_binding", ("vlan_id", "port"), "bind_vm", ("vni", "vm", "vm_mac")
        )
    with pytest.raises(ValueError, match="in that order"):
        ExactEntry(
            p4info, "access_binding", ("port", "vlan_id"), "bind_vm", ("vm", "vni", "vm_mac")
        )


def test_encoder_refuses_values_that_do_not_fit():

    enc = Encoder(PipelineEntries(bmv2_pipeline().p4info))
    with pytest.raises(EncodingError, match="access_binding"):
        enc.access_binding(1, 4096, 5000, 1, "02:00:00:00:00:01")  # 12-bit VLAN
