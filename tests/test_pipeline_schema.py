"""The controller's view of the pipeline agrees with the committed P4Info and
with the P4 sources."""

import re

import pytest
from p4vtep.compiler.switch_state import identity
from p4vtep.dataplane.artifacts import P4SRC, bmv2_pipeline
from p4vtep.dataplane.drop_reasons import DROP_REASON_COUNT, DropReason
from p4vtep.dataplane.entries import PipelineEntries, PortRole
from p4vtep.model.fabric import Rates
from p4vtep.runtime import codec, entities
from p4vtep.runtime.p4info import P4InfoError


@pytest.fixture(scope="module")
def e() -> PipelineEntries:
    return PipelineEntries(bmv2_pipeline().p4info)


def test_drop_reasons_match_p4_constants():
    text = (P4SRC / "include" / "defines.p4").read_text()
    in_p4 = {
        name: int(value)
        for name, value in re.findall(r"const drop_reason_t DROP_(\w+)\s*=\s*(\d+);", text)
    }
    in_p4.pop("NONE")
    assert in_p4 == {r.name: r.value for r in DropReason}
    assert f"DROP_REASON_COUNT = {DROP_REASON_COUNT};" in text


def test_every_builder_encodes_against_the_real_p4info(e):
    built = [
        e.port_role(1, PortRole.ACCESS),
        e.port_role(2, PortRole.FABRIC),
        e.my_vtep("10.0.0.1"),
        e.local_vtep("10.0.0.1", "00:aa:00:00:00:01"),
        e.access_binding(1, 10, 5000, 1, "00:00:0a:00:00:01"),
        e.vni_config(5000, 1, 2, 1),
        e.mac_to_local_vm(5000, "00:00:0a:00:00:01", 1, 10, 1),
        e.mac_to_remote_vtep(5000, "00:00:0a:00:00:03", "10.0.0.2"),
        e.mac_to_cpu(5000, "00:00:0a:00:00:fe"),
        e.arp_suppression(5000, "192.168.1.1", "00:00:0a:00:00:01"),
        e.next_hop_member(3, 3, "00:5e:00:00:01:01"),
        e.ecmp_group(1, [3, 4]),
        e.underlay_route("10.0.0.0", 24, group_id=1),
        e.replica_to_vm(1, 10, 1),
        e.replica_to_vtep(101, "10.0.0.2", "00:5e:00:00:01:01"),
        e.vm_meter("tx", 1, Rates(1000, 1000, 2000, 2000)),
        e.counter("vm_tx_counter", 1),
    ]
    assert all(m.ByteSize() > 0 for m in built)


def test_a_vni_floods_through_one_group_and_an_older_build_gets_it_twice(e):
    """Today's set_vni_params carries one group (egress prunes the fabric's
    VTEP copies); a build from before still has local_flood_group, and it is
    given the same group, whose VTEP copies its egress drops just the same."""
    from p4vtep.runtime.p4info import P4Info
    from p4vtep.runtime.protos import p4info_pb2

    def params(entry) -> dict[int, bytes]:
        return {p.param_id: p.value for p in entry.action.action.params}

    today = e.vni_config(5000, 7, 2, 7)
    names = {p.id: p.name for p in e.p4info.params(today.action.action.action_id)}
    assert {names[i]: v for i, v in params(today).items()} == {
        "vni_index": b"\x07",
        "traffic_class": b"\x02",
        "flood_group": b"\x07",
    }
    message = p4info_pb2.P4Info()
    message.CopyFrom(e.p4info.message)
    [action] = [a for a in message.actions if a.preamble.alias == "set_vni_params"]
    next_id = max(p.id for p in action.params) + 1
    action.params.add(id=next_id, name="local_flood_group", bitwidth=16)
    older = PipelineEntries(P4Info(message))
    entry = older.vni_config(5000, 7, 2, 7)
    names = {p.id: p.name for p in older.p4info.params(entry.action.action.action_id)}
    got = {names[i]: v for i, v in params(entry).items()}
    assert got["local_flood_group"] == got["flood_group"] == b"\x07"


def test_binding_is_canonical(e):
    entry = e.access_binding(1, 10, 5000, 1, "00:00:0a:00:00:01")
    assert [m.exact.value for m in entry.match] == [b"\x01", b"\x0a"]
    assert [p.value for p in entry.action.action.params] == [
        b"\x13\x88",
        b"\x01",
        b"\x0a\x00\x00\x01",
        b"\x00",  # vrf 0: an L2-only VNI (the BMv2 pipeline routes)
        b"\x00",  # not policed: no transmit policy, its frames pass no meter
        b"\x00",  # not guarded: the MAC check only (port security off)
        b"\x00",  # not a DHCP server
        b"\x00",  # no IPv4 address of its own (BMv2: a frame claiming it skips the guard)
    ]
    routed = e.access_binding(1, 10, 5000, 1, "00:00:0a:00:00:01", vrf=50000)
    assert routed.action.action.params[3].value == b"\xc3\x50"
    policed = e.access_binding(1, 10, 5000, 1, "00:00:0a:00:00:01", policed=True)
    assert policed.action.action.params[4].value == b"\x01"
    guarded = e.access_binding(1, 10, 5000, 1, "00:00:0a:00:00:01", guarded=True, dhcp_server=True)
    assert [p.value for p in guarded.action.action.params[5:7]] == [b"\x01", b"\x01"]
    own = e.access_binding(1, 10, 5000, 1, "00:00:0a:00:00:01", guarded=True, ipv4="10.0.0.1")
    assert own.action.action.params[7].value == b"\x0a\x00\x00\x01"


def test_port_security_entries_are_canonical(e):
    mac = e.allowed_source_mac(1, 10, "00:00:5e:00:01:07")
    assert [m.exact.value for m in mac.match] == [b"\x01", b"\x0a", b"\x5e\x00\x01\x07"]
    assert not mac.action.action.params
    v4 = e.source_guard(1, 10, "192.168.1.77", 32)
    assert e.p4info.alias_of(v4.table_id) == "ipv4_source_guard"
    assert v4.match[2].lpm.value == b"\xc0\xa8\x01\x4d"
    assert v4.match[2].lpm.prefix_len == 32
    pair = e.source_guard(1, 10, "10.9.8.7", 24)  # an allowed pair: masked to its prefix
    assert pair.match[2].lpm.value == b"\x0a\x09\x08\x00"
    v6 = e.source_guard(1, 10, "fe80::1", 64)
    assert e.p4info.alias_of(v6.table_id) == "ipv6_source_guard"
    assert v6.match[2].lpm.value == b"\xfe\x80" + bytes(14)  # masked to /64
    assert v6.match[2].lpm.prefix_len == 64
    dad = e.source_guard(1, 10, "::", 128)
    assert dad.match[2].lpm.value == b"\x00"
    every = e.source_guard(1, 10, "0.0.0.0", 0)  # /0: the field left out, a wildcard
    assert len(every.match) == 2
    assert e.p4info.alias_of(every.action.action.action_id) == "source_allowed"


def test_port_security_counter_index():
    from p4vtep.dataplane.entries import port_security_index

    assert port_security_index(5, DropReason.SPOOFED_IP) == 40
    assert port_security_index(5, DropReason.DHCP_SERVER_FROM_VM) == 44
    with pytest.raises(ValueError, match="SPOOFED_SOURCE"):
        port_security_index(5, DropReason.SPOOFED_SOURCE)


def test_routes_are_canonical_and_a_default_route_leaves_its_prefix_out(e):
    from p4vtep.dataplane.entries import LocalVmHop, RemoteVtepHop

    host = e.host_route(
        50000, "192.168.1.10", RemoteVtepHop("10.0.0.2", "00:aa:00:00:00:02", 50000)
    )
    assert [m.exact.value for m in host.match] == [b"\xc3\x50", b"\xc0\xa8\x01\x0a"]
    assert [p.value for p in host.action.action.params] == [
        b"\x0a\x00\x00\x02",
        b"\xaa\x00\x00\x00\x02",
        b"\xc3\x50",
    ]
    prefix = e.prefix_route(50000, "10.1.2.3", 8, LocalVmHop(1, 10, 1, 2, "00:00:0a:00:00:01"))
    assert prefix.match[1].lpm.value == b"\x0a\x00\x00\x00"
    assert prefix.match[1].lpm.prefix_len == 8
    default = e.prefix_route(50000, "0.0.0.0", 0, LocalVmHop(1, 10, 1, 2, "00:00:0a:00:00:01"))
    assert [m.field_id for m in default.match] == [prefix.match[0].field_id]
    with pytest.raises(codec.EncodingError, match="vrf"):
        e.host_route(1 << 24, "192.168.1.10", RemoteVtepHop("10.0.0.2", "00:aa:00:00:00:02", 5))


def test_an_ipv6_route_to_a_local_vm_carries_the_shortest_payload_too_big(e):
    """route_to_local_vm_v6 takes the VM's VNI's MTU as too_big_payload_len
    (MTU - 39), after the IPv4 action's parameters; the IPv4 action has no
    such parameter; an MTU the 16-bit field cannot hold is refused."""
    from p4vtep.dataplane.entries import LocalVmHop

    hop = LocalVmHop(1, 10, 1, 2, "00:00:0a:00:00:01", mtu=1280)
    v6 = e.host_route(50000, "2001:db8:1::a", hop)
    names = {p.id: p.name for p in e.p4info.params(v6.action.action.action_id)}
    params = {names[p.param_id]: p.value for p in v6.action.action.params}
    assert params["too_big_payload_len"] == (1241).to_bytes(2, "big")
    assert list(params)[-1] == "too_big_payload_len"
    v4 = e.host_route(50000, "192.168.1.10", hop)
    assert len(v4.action.action.params) == len(v6.action.action.params) - 1
    with pytest.raises(codec.EncodingError, match="too_big_payload_len"):
        e.host_route(
            50000, "2001:db8:1::a", LocalVmHop(1, 10, 1, 2, "00:00:0a:00:00:01", mtu=70000)
        )


def test_lpm_value_is_masked(e):
    entry = e.underlay_route("10.0.0.77", 24, group_id=1)
    assert entry.match[0].lpm.value == codec.encode("10.0.0.0", 32)
    assert entry.match[0].lpm.prefix_len == 24
    assert entry.action.action_profile_group_id == 1


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda e: e.access_binding(1, 4096, 5000, 1, "00:00:0a:00:00:01"), "vlan_id"),
        (lambda e: e.access_binding(1, 10, 1 << 24, 1, "00:00:0a:00:00:01"), "vni"),
        (lambda e: e.port_role(512, PortRole.ACCESS), "port"),
        (lambda e: e.my_vtep("10.0.0.300"), "vtep_ip"),
    ],
)
def test_out_of_range_values_name_the_field(e, build, message):
    with pytest.raises(codec.EncodingError, match=message):
        build(e)


def test_unknown_names_are_refused(e):
    with pytest.raises(P4InfoError, match="no table named 'nope'"):
        entities.table_entry(e.p4info, "nope", {})
    with pytest.raises(P4InfoError, match="no match field"):
        entities.table_entry(e.p4info, "port_role", {"vlan": 1}, "set_access_port")
    with pytest.raises(codec.EncodingError, match="needs parameter"):
        entities.table_entry(e.p4info, "port_role", {"port": 1}, "bind_vm", {})


def test_identity_ignores_the_action(e):
    a = entities.to_entity(e.mac_to_local_vm(5000, "00:00:0a:00:00:01", 1, 10, 1))
    b = entities.to_entity(e.mac_to_remote_vtep(5000, "00:00:0a:00:00:01", "10.0.0.2"))
    c = entities.to_entity(e.mac_to_remote_vtep(6000, "00:00:0a:00:00:01", "10.0.0.2"))
    assert identity(a) == identity(b) != identity(c)


def test_table_sizes_meet_the_tor_targets():
    p4info = bmv2_pipeline().p4info
    size = {t.preamble.alias: t.size for t in p4info.message.tables}
    assert size["mac_table"] >= 65536
    assert size["vni_config"] >= 16384
    assert size["underlay_route"] >= 4096
    assert size["access_binding"] >= 8192
    meters = {m.preamble.alias: m.size for m in p4info.message.meters}
    assert meters["vm_tx_meter"] >= 8192
    assert meters["vm_rx_meter"] >= 8192
    [selector] = p4info.message.action_profiles
    assert selector.with_selector
    assert selector.size >= 1024
