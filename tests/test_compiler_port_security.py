"""Port security in the compiler (docs/security.md): what a guarded VM's ToR
holds (its binding's flags, a source guard entry per address, per pair and
for any link-local source and DAD's ::, an allowed source MAC per pair
MAC), what an opted-out VM's holds, nothing on other ToRs; a change of a
running VM's port security touches only that VM's entries. Entities are
compared with what the pipeline's entry builders make."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_fixture import dual_stack_fabric, dual_stack_vms, routed_fabric, routed_vms
from helpers import p4info_without_port_security, table_entries
from p4vtep.compiler import DesiredState, Encoder, compile_tor
from p4vtep.compiler.switch_state import encoded
from p4vtep.dataplane.artifacts import bmv2_pipeline, tofino_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.dataplane.targets import Target
from p4vtep.model.allocation import Allocations, allocate
from p4vtep.model.fabric import AllowedPair, Fabric, Vm
from p4vtep.runtime import codec
from p4vtep.runtime.entities import to_entity
from p4vtep.runtime.p4info import P4Info
from p4vtep.runtime.protos import p4runtime_pb2

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)
GUARDS = {"ipv4_source_guard", "ipv6_source_guard", "allowed_source_mac"}
WEB, DB, FW, B1 = dual_stack_vms()  # web-1 on tor1 (s11, VLAN 10), fw on tor2 (opted out)
VIP = AllowedPair("192.168.1.100/32", "00:00:5e:00:01:07")
WIDE = AllowedPair("10.9.0.0/16")
WIDE6 = AllowedPair("2001:db8:f::/48", "00:00:5e:00:02:07")


def built(*messages) -> dict:
    return dict(ENC.of(m) for m in messages)


def compiled(vms: list[Vm], tor: str, fabric: Fabric | None = None) -> tuple:
    fabric = fabric or dual_stack_fabric()
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    return compile_tor(fabric, vms, tor, alloc, ENC), alloc


def guards(state) -> dict:
    return table_entries(state, ENTRIES.p4info, GUARDS, set())


def binding(state, vm: Vm) -> bytes:
    """The VM's access_binding entry as the ToR holds it (its key is its
    port and VLAN)."""
    port = dual_stack_fabric().servers[vm.server].port
    key, _ = ENC.of(ENTRIES.access_binding(port, vm.vlan, vm.vni, 1, vm.mac, 50000))
    return state.entities[key]


def expected_binding(alloc, vm: Vm, tor: str, guarded: bool, dhcp: bool) -> bytes:
    port = dual_stack_fabric().servers[vm.server].port
    index = alloc.vm[tor][vm.name]
    # (guarded: its first IPv4 address too, BMv2's short-cut past the guard)
    first_ipv4 = next((ip for ip in vm.ips if ":" not in ip), 0) if guarded else 0
    message = ENTRIES.access_binding(
        port, vm.vlan, vm.vni, index, vm.mac, 50000, False, guarded, dhcp, first_ipv4
    )
    return ENC.of(message)[1]


def test_a_guarded_vm_holds_its_addresses_and_its_pairs_and_no_link_local_entry():
    """fe80::/64 and :: are the pipeline's own rule (port_security.p4): no
    entry per VM."""
    web = replace(WEB, allowed_pairs=(VIP, WIDE, WIDE6))
    state, alloc = compiled([web, DB, FW, B1], "tor1")
    e = ENTRIES
    port, vlan = 1, 10
    assert guards(state) == {
        **built(
            e.source_guard(port, vlan, "192.168.1.1", 32),
            e.source_guard(port, vlan, "2001:db8:1::a", 128),
            e.source_guard(port, vlan, "192.168.1.100", 32),
            e.source_guard(port, vlan, "10.9.0.0", 16),
            e.source_guard(port, vlan, "2001:db8:f::", 48),
            e.allowed_source_mac(port, vlan, "00:00:5e:00:01:07"),
            e.allowed_source_mac(port, vlan, "00:00:5e:00:02:07"),
        ),
        # b1 (L2 VNI 6000, on s12 = port 2, VLAN 30), guarded, IPv4 only
        **built(e.source_guard(2, 30, "192.168.1.1", 32)),
    }
    assert binding(state, web) == expected_binding(alloc, web, "tor1", True, False)


def test_an_opted_out_vm_holds_only_its_pair_macs_and_a_dhcp_server_says_so():
    fw = replace(FW, allowed_pairs=(VIP, WIDE), dhcp_server=True)  # (port security off)
    state, alloc = compiled([WEB, DB, fw, B1], "tor2")
    # tor2: db-1 (s21: port 1, VLAN 20) guarded, fw (s22: port 2, VLAN 30) not
    e = ENTRIES
    assert guards(state) == built(
        e.source_guard(1, 20, "192.168.2.1", 32),
        e.source_guard(1, 20, "2001:db8:2::a", 128),
        e.allowed_source_mac(2, 30, "00:00:5e:00:01:07"),
    )
    assert binding(state, fw) == expected_binding(alloc, fw, "tor2", False, True)
    assert binding(state, DB) == expected_binding(alloc, DB, "tor2", True, False)


def test_each_entry_once_and_never_the_vms_own_mac():
    """A pair that is one of the VM's addresses, or the same prefix with two
    MACs, gives one guard entry; a pair naming the VM's own MAC none."""
    web = replace(
        WEB,
        allowed_pairs=(
            AllowedPair("192.168.1.1/32", WEB.mac),
            AllowedPair("10.9.0.0/16"),
            AllowedPair("10.9.0.0/16", "00:00:5e:00:01:07"),
        ),
    )
    state, _ = compiled([web], "tor1")
    e = ENTRIES
    assert guards(state) == built(
        e.source_guard(1, 10, "192.168.1.1", 32),
        e.source_guard(1, 10, "2001:db8:1::a", 128),
        e.source_guard(1, 10, "10.9.0.0", 16),
        e.allowed_source_mac(1, 10, "00:00:5e:00:01:07"),
    )


def test_another_tor_holds_none_of_a_vms_guards():
    web = replace(WEB, allowed_pairs=(VIP, WIDE6))
    state, _ = compiled([web, FW], "tor2")  # (web-1 is remote there: fw's VNI)
    assert all(
        ENTRIES.p4info.alias_of(state.entity(k).table_entry.table_id) != "allowed_source_mac"
        for k in guards(state)
    )
    assert len(guards(state)) == 0  # fw is opted out, without pairs


def test_a_port_security_change_touches_only_that_vms_entries():
    """Incremental: pairs added, removed, port security turned off and on,
    DHCP server allowed: tor1 changes the VM's guards and binding only, and
    tor2 (which holds web-1 as a remote VM) nothing."""
    fabric = dual_stack_fabric()
    desired = DesiredState(fabric, ENC, Allocations())
    desired.load(dual_stack_vms())
    for tor in fabric.tors:
        desired.tors[tor].take_changes()
    web = desired.vms["web-1"]
    steps = [
        replace(web, allowed_pairs=(VIP,)),
        replace(web, allowed_pairs=(VIP, WIDE6)),
        replace(web, allowed_pairs=(WIDE6,)),
        replace(web, allowed_pairs=(WIDE6,), port_security=False),
        replace(web, allowed_pairs=(), port_security=True, dhcp_server=True),
    ]
    index = desired.alloc.vm["tor1"]["web-1"]
    allowed = {ENTRIES.p4info.table(name).preamble.id for name in (*GUARDS, "access_binding")}
    for vm in steps:
        desired.change([vm], [])
        changes = desired.tors["tor1"].take_changes()
        assert changes
        for key, _, _ in changes:
            assert _entry(key).table_id in allowed, key
        assert desired.tors["tor2"].take_changes() == []
        alloc = desired.alloc
        reference = compile_tor(fabric, desired.view("tor1").values(), "tor1", alloc, ENC)
        assert desired.tors["tor1"].state == reference
    state = desired.tors["tor1"].state
    assert binding(state, WEB) == expected_binding(desired.alloc, WEB, "tor1", True, True)
    assert index == desired.alloc.vm["tor1"]["web-1"]


def _entry(key: bytes) -> p4runtime_pb2.TableEntry:
    """A table entry's key (``identity``) as a TableEntry."""
    entry = p4runtime_pb2.TableEntry()
    entry.ParseFromString(key[1:])
    return entry


@pytest.mark.parametrize(
    "prefix,length",
    [
        ("192.168.1.1", 32),
        ("10.9.0.0", 16),
        ("10.9.255.255", 16),  # host bits: cleared
        (0x0A090000, 8),
        (bytes([10, 9, 0, 0]), 24),
        ("fe80::", 64),
        ("::", 128),
        ("2001:db8:1::a", 128),
        ("2001:db8:ffff:ffff::1", 33),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1),
    ],
)
def test_source_guard_entries_have_the_builders_bytes(prefix, length):
    """Text by its family (``Encoder.source_guard``); an int or bytes is
    IPv4 here (the IPv4 guard's own encoder)."""
    ipv6 = isinstance(prefix, str) and ":" in prefix
    for port, vlan in ((1, 10), (511, 4095), (0, 0)):
        entity = to_entity(ENTRIES.source_guard(port, vlan, prefix, length, ipv6=ipv6))
        reference = encoded(entity)  # (the stored form: test_switch_state)
        if isinstance(prefix, str):
            assert ENC.source_guard(port, vlan, prefix, length) == reference
        else:
            assert ENC._guard_v4(port, vlan, prefix, length) == reference


def test_allowed_source_mac_and_the_binding_have_the_builders_bytes():
    for port, vlan, mac in ((1, 10, "00:00:5e:00:01:07"), (511, 4095, "fe:ff:ff:ff:ff:ff")):
        entity = to_entity(ENTRIES.allowed_source_mac(port, vlan, mac))
        reference = encoded(entity)  # (the stored form: test_switch_state)
        assert ENC.allowed_source_mac(port, vlan, mac) == reference
    for guarded in (False, True):
        for dhcp in (False, True):
            entity = to_entity(
                ENTRIES.access_binding(3, 7, 5000, 9, "02:00:00:00:00:01", 1, True, guarded, dhcp)
            )
            reference = encoded(entity)  # (the stored form: test_switch_state)
            got = ENC.access_binding(3, 7, 5000, 9, "02:00:00:00:00:01", 1, True, guarded, dhcp)
            assert got == reference


def test_source_guard_refuses_what_does_not_fit():
    with pytest.raises(codec.EncodingError, match="ipv4_source_guard: prefix length 33"):
        ENC.source_guard(1, 10, "10.0.0.0", 33)
    with pytest.raises(codec.EncodingError, match="ipv4_source_guard: prefix length 0"):
        ENC.source_guard(1, 10, "10.0.0.0", 0)
    with pytest.raises(codec.EncodingError, match="ipv6_source_guard"):
        ENC.source_guard(1, 4096, "fe80::", 64)


def without_port_security() -> P4Info:
    """The BMv2 P4Info as a build before port security had it."""
    return p4info_without_port_security(ENTRIES.p4info)


@pytest.mark.parametrize("profile", ["older build", "flags without guards"])
def test_a_pipeline_without_port_security_gets_no_guards(profile):
    """An older build, and one with the guards left out but bind_vm's flags
    kept (Tofino 1's profile before its IPv4 port security): written 0,
    since nothing there would enforce them."""
    entries = PipelineEntries(
        p4info_without_port_security(ENTRIES.p4info, keep_flags=profile == "flags without guards")
    )
    assert entries.guard_flags is (profile == "flags without guards")
    assert not entries.port_security
    enc = Encoder(entries)
    fabric = dual_stack_fabric()
    vms = [replace(WEB, allowed_pairs=(VIP,)), DB, FW, B1]
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    state = compile_tor(fabric, vms, "tor1", alloc, enc)
    port = fabric.servers[WEB.server].port
    index = alloc.vm["tor1"]["web-1"]
    key, data = enc.of(entries.access_binding(port, 10, 5000, index, WEB.mac, 50000))
    assert state.entities[key] == data
    assert not any(
        entries.p4info.alias_of(state.entity(k).table_entry.table_id) in GUARDS
        for k in state.entities
        if state.entity(k).WhichOneof("entity") == "table_entry"
    )


def test_tofino_1_guards_ipv4_only():
    """Tofino 1's committed profile: port security without the IPv6 guard
    (no IPv6 parsing there; its pipeline drops every IPv6 frame of a
    guarded VM, port_security.p4). A guarded VM gets its IPv4 addresses'
    and IPv4 pairs' guard entries and its pairs' MACs, no IPv6 entry
    (an IPv6 pair's prefix), and its binding says guarded."""
    entries = PipelineEntries(tofino_pipeline(Target.TOFINO).p4info)
    assert (entries.port_security, entries.guard_flags, entries.ipv6_guard) == (True, True, False)
    enc = Encoder(entries)
    fabric = routed_fabric()
    web, db, fw, b1 = routed_vms()
    web = replace(web, allowed_pairs=(VIP, WIDE, WIDE6))
    vms = [web, db, fw, b1]
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    state = compile_tor(fabric, vms, "tor1", alloc, enc)
    e = entries
    assert table_entries(state, entries.p4info, GUARDS, set()) == dict(
        enc.of(m)
        for m in (
            e.source_guard(1, 10, "192.168.1.1", 32),
            e.source_guard(1, 10, "192.168.1.100", 32),
            e.source_guard(1, 10, "10.9.0.0", 16),
            e.allowed_source_mac(1, 10, "00:00:5e:00:01:07"),
            e.allowed_source_mac(1, 10, "00:00:5e:00:02:07"),
            # b1 (L2 VNI 6000, port 2, VLAN 30), guarded
            e.source_guard(2, 30, "192.168.1.1", 32),
        )
    )
    index = alloc.vm["tor1"]["web-1"]
    key, data = enc.of(e.access_binding(1, 10, 5000, index, web.mac, 50000, False, True, False))
    assert state.entities[key] == data
    # An IPv6 guard entry cannot be built for it, by either builder.
    with pytest.raises(ValueError, match="no IPv6 source guard"):
        e.source_guard(1, 10, "fe80::", 64)
    with pytest.raises(ValueError, match="no IPv6 source guard"):
        enc.source_guard(1, 10, "2001:db8:f::", 48)
