"""describe(entity): one readable line per entity, names from the P4Info."""

from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, RemoteVtepHop
from p4vtep.model.fabric import Rates
from p4vtep.runtime.describe import describe
from p4vtep.runtime.entities import to_entity

P4INFO = bmv2_pipeline().p4info
E = PipelineEntries(P4INFO)


def test_table_entry_shows_names_macs_addresses_and_ints():
    entry = to_entity(E.mac_to_remote_vtep(5000, "00:00:0a:00:00:01", "10.0.0.2"))
    assert describe(entry, P4INFO) == (
        "mac_table{vni=5000, dst_mac=00:00:0a:00:00:01} -> to_remote_vtep(vtep_ip=10.0.0.2)"
    )


def test_lpm_key_and_selector_reference():
    route = to_entity(E.underlay_route("10.0.0.0", 24, group_id=1))
    assert describe(route, P4INFO) == "underlay_route{vtep_ip=10.0.0.0/24} -> group 1"


def test_profile_members_groups_and_multicast():
    member = to_entity(E.next_hop_member(4, 3, "00:5e:00:01:01:01"))
    assert describe(member, P4INFO).endswith(
        "member 4 -> set_next_hop(port=3, next_hop_mac=00:5e:00:01:01:01)"
    )
    group = to_entity(E.ecmp_group(1, [4, 5], max_size=16))
    assert describe(group, P4INFO).endswith("group 1 {members 4, 5}")
    flood = to_entity(E.flood_group(3, [(1, 7), (2, 8)]))
    assert describe(flood) == "multicast group 3 {port 1/7, port 2/8}"


def test_meter_entry():
    meter = to_entity(E.vm_meter("tx", 5, Rates(1000, 100, 2000, 200)))
    assert describe(meter, P4INFO) == (
        "vm_tx_meter[5] {cir=1000, cburst=100, pir=2000, pburst=200}"
    )


def test_without_a_p4info_ids_stand_in_for_names():
    entry = to_entity(E.mac_to_remote_vtep(5000, "00:00:0a:00:00:01", "10.0.0.2"))
    table_id = entry.table_entry.table_id
    assert describe(entry).startswith(f"table#{table_id}{{field1=5000, field2=")


def test_lpm_prefixes_read_as_addresses_of_their_family():
    entries = PipelineEntries(bmv2_pipeline().p4info)
    hop = RemoteVtepHop("10.0.0.2", "00:aa:00:00:00:02", 50000)
    for prefix, length, table in (
        ("10.1.0.0", 16, "prefix_route"),
        ("2001:db8:f000::", 36, "ipv6_prefix_route"),
    ):
        line = describe(to_entity(entries.prefix_route(50000, prefix, length, hop)), entries.p4info)
        assert line.startswith(f"{table}{{vrf=50000, dst_prefix={prefix}/{length}}}"), line
