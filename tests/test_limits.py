"""dataplane/limits.py agrees with the P4 sources and the committed P4Info,
as test_pipeline_schema.py checks the drop reasons."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace

import pytest
from p4vtep.compiler import Allocations, flood_group
from p4vtep.dataplane import limits
from p4vtep.dataplane.artifacts import P4SRC, bmv2_pipeline, tofino_pipeline
from p4vtep.dataplane.targets import Target
from p4vtep.runtime.p4info import P4Info
from p4vtep.switch import bmv2

DEFINES = (P4SRC / "include" / "defines.p4").read_text()
SIZES = (P4SRC / "v1model" / "sizes.p4").read_text()


def typedef_bits(name: str) -> int:
    match = re.search(rf"typedef\s+bit<(\d+)>\s+{name}\s*;", DEFINES)
    assert match, f"no typedef {name} in defines.p4"
    return int(match.group(1))


def size(name: str) -> int:
    match = re.search(rf"#define\s+{name}\s+(\d+)", SIZES)
    assert match, f"no #define {name} in sizes.p4"
    return int(match.group(1))


def test_cpu_port_is_the_p4_constant():
    assert re.search(r"const port_t CPU_PORT\s*=\s*CPU_PORT_VALUE;", DEFINES)
    arch = (P4SRC / "v1model" / "arch.p4").read_text()
    assert re.search(rf"#define\s+CPU_PORT_VALUE\s+{limits.CPU_PORT}\b", arch)


def test_port_range_is_port_t():
    assert limits.PORT_MAX == (1 << typedef_bits("port_t")) - 1 == size("PORT_COUNT") - 1
    assert limits.DROP_PORT == limits.PORT_MAX  # v1model/BMv2: the largest port drops
    assert {limits.CPU_PORT, limits.DROP_PORT} == limits.RESERVED_PORTS


def test_drop_port_is_bmv2s_default():
    binary = bmv2.find_simple_switch_grpc()
    if binary is None:
        pytest.skip("simple_switch_grpc not found: its --drop-port default not checked")
    help_text = subprocess.run(
        [binary, "--help"], check=False, capture_output=True, text=True
    ).stdout
    assert re.search(rf"drop port\s+\(default is {limits.DROP_PORT}\)", " ".join(help_text.split()))


def test_index_maxima_are_the_sizes():
    assert size("VM_COUNT") - 1 == limits.VM_INDEX_MAX
    assert size("VNI_COUNT") - 1 == limits.VNI_INDEX_MAX
    assert size("UNDERLAY_ROUTE_TABLE_SIZE") - 1 == limits.TOR_INDEX_MAX


def test_indices_fit_their_p4_types():
    assert 1 << typedef_bits("vm_index_t") > limits.VM_INDEX_MAX
    assert 1 << typedef_bits("vni_index_t") > limits.VNI_INDEX_MAX
    # Every VNI index's flood group is a valid group id, and one in BMv2's
    # group table as the launcher sizes it.
    assert 1 << typedef_bits("mcast_group_t") > flood_group(limits.VNI_INDEX_MAX)
    assert flood_group(limits.VNI_INDEX_MAX) < limits.BMV2_MAX_MC_GROUPS
    assert limits.BMV2_MAX_MC_GROUPS == bmv2.MAX_MC_GROUPS


def test_replica_ids_do_not_collide():
    """A VM's replica id is its index; a VTEP's is base + ToR index; both are
    egress_rid values (bit<16> in v1model), the flood_replica key."""
    p4info = bmv2_pipeline().p4info
    table = p4info.table("flood_replica")
    rid_bits = p4info.match_field(table.preamble.id, "replica_id").bitwidth
    assert rid_bits == 16
    assert limits.VM_INDEX_MAX < limits.VTEP_REPLICA_BASE
    assert 1 << rid_bits > limits.VTEP_REPLICA_BASE + limits.TOR_INDEX_MAX


def test_field_ranges_are_the_p4_widths():
    assert (1 << typedef_bits("vlan_id_t")) - 2 == limits.VLAN_MAX
    assert (1 << typedef_bits("vni_t")) - 1 == limits.VNI_MAX
    assert "bit<3> traffic_class" in (P4SRC / "include" / "control" / "vni_lookup.p4").read_text()
    assert limits.TRAFFIC_CLASS_MAX == 7
    assert limits.BMV2.priority_queues == 8


def test_limits_follow_a_resized_p4info():
    """Sizes are read from the P4Info, not restated: shrink the VM meters and
    the VM index space shrinks with them."""
    message = bmv2_pipeline().p4info.message.__class__()
    message.CopyFrom(bmv2_pipeline().p4info.message)
    for meter in message.meters:
        if meter.preamble.alias == "vm_rx_meter":
            meter.size = 1024
    for table in message.tables:
        if table.preamble.alias == "underlay_route":
            table.size = 100
    resized = limits.PipelineLimits.from_p4info(P4Info(message))
    assert resized.vm_index_max == 1023
    assert resized.tor_index_max == 99
    assert resized.vni_index_max == limits.VNI_INDEX_MAX


def test_the_compiler_allocates_within_the_limits():
    alloc = Allocations()
    assert (alloc.vni.low, alloc.vni.high) == (1, limits.VNI_INDEX_MAX)
    assert (alloc.tor.low, alloc.tor.high) == (0, limits.TOR_INDEX_MAX)
    space = alloc.vm_space("tor1")
    assert (space.low, space.high) == (1, limits.VM_INDEX_MAX)


def test_the_compiler_package_exports_the_same_limits():
    import p4vtep.compiler as compiler

    exported = (
        compiler.VM_INDEX_MAX,
        compiler.VNI_INDEX_MAX,
        compiler.TOR_INDEX_MAX,
        compiler.VTEP_REPLICA_BASE,
    )
    assert exported == (
        limits.VM_INDEX_MAX,
        limits.VNI_INDEX_MAX,
        limits.TOR_INDEX_MAX,
        limits.VTEP_REPLICA_BASE,
    )


@pytest.mark.parametrize("target", [Target.TOFINO, Target.TOFINO2])
def test_tofino_pipelines_have_the_bmv2_limits(target):
    """Validation checks every ToR's ports and indices with the BMv2 limits
    (only the reserved ports differ per target): the committed TNA and T2NA
    P4Infos must give the same sizes and widths. (Not yet whether they take
    IPv6: the committed Tofino outputs predate its tables, which
    test_p4info_parity.py lists until `make p4-tofino` adds them.)"""
    tofino = limits.PipelineLimits.from_p4info(tofino_pipeline(target).p4info)
    assert replace(tofino, ipv6=limits.BMV2.ipv6) == limits.BMV2


def test_ipv6_is_taken_once_the_pipeline_has_its_tables():
    """The committed BMv2 pipeline has the three IPv6 tables (named as their
    IPv4 twins are: arp_suppression, host_route, prefix_route): the model
    takes IPv6 tenant addresses. A P4Info without them (an older build), or
    with only some, does not."""
    assert limits.IPV6_TABLES == ("nd_suppression", "ipv6_host_route", "ipv6_prefix_route")
    assert limits.BMV2.ipv6 is True
    assert limits.IPV6_SUPPORTED is True
    p4info = bmv2_pipeline().p4info
    for twin in ("arp_suppression", "host_route", "prefix_route"):
        p4info.table(twin)  # (the IPv4 tables the names follow)

    def without_tables(*names: str) -> limits.PipelineLimits:
        message = p4info.message.__class__()
        message.CopyFrom(p4info.message)
        kept = [t for t in message.tables if t.preamble.alias not in names]
        assert len(kept) == len(message.tables) - len(names), names
        del message.tables[:]
        message.tables.extend(kept)
        return limits.PipelineLimits.from_p4info(P4Info(message))

    assert without_tables(*limits.IPV6_TABLES).ipv6 is False
    assert without_tables("ipv6_prefix_route").ipv6 is False
    # (nothing else read from the P4Info depends on them)
    assert replace(without_tables(*limits.IPV6_TABLES), ipv6=True) == limits.BMV2
