"""The pipeline's limits, in one place.

Sizes and field widths are read from the P4Info (what p4c compiled from
p4src/v1model/sizes.p4 and p4src/include/defines.p4), so a resized table
changes them here with no edit. The few facts a P4Info cannot carry (ports
with a fixed meaning, how replica ids are laid out) are constants below, each
naming the P4 (or BMv2) definition it mirrors. tests/test_limits.py checks
every one against the P4 sources and the committed P4Info.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from ..runtime.p4info import P4Info
from .artifacts import bmv2_pipeline, tofino_pipeline
from .targets import PROFILES, Target, profile

# --- not derivable from a P4Info -----------------------------------------------
# BMv2's CPU port (`#define CPU_PORT_VALUE` in p4src/v1model/arch.p4, kept with
# the other per-target values in targets.py); simple_switch_grpc is started
# with --cpu-port CPU_PORT. The parser takes every frame from it for a
# packet-out, so no server or uplink may use it.
CPU_PORT = PROFILES[Target.BMV2].cpu_port
# v1model's drop port: mark_to_drop() sets egress_spec to it (BMv2's
# --drop-port, default 511, the largest bit<9> port). Frames sent there vanish.
DROP_PORT = 511
# Ports the BMv2 pipeline gives a meaning of its own: never a server or an uplink.
RESERVED_PORTS = frozenset({CPU_PORT, DROP_PORT})


def reserved_ports(target: Target | str = Target.BMV2) -> Mapping[int, str]:
    """The ports ``target`` gives a meaning of its own, each with that meaning:
    its CPU port and, on BMv2, the drop port. TNA and T2NA drop with the
    deparser's drop_ctl, not through a port, so there the CPU port is all."""
    prof = profile(target)
    reserved = {prof.cpu_port: "the CPU port (packet-in/out)"}
    if prof.target is Target.BMV2:
        reserved[DROP_PORT] = "reserved by the pipeline (drop port)"
    return reserved


# Replica ids (standard_metadata.egress_rid, the flood_replica key): a copy to
# a local VM uses the VM's index (1..vm_index_max); a copy to a remote VTEP
# uses VTEP_REPLICA_BASE + the ToR's index. The base must stay above every VM
# index, and base + ToR index within the replica_id width (both enforced by
# the index maxima PipelineLimits derives).
VTEP_REPLICA_BASE = 16384
# simple_switch_grpc --max-mc-groups (bmv2.py starts every switch with it):
# how many multicast groups BMv2's replication engine holds. VNI index i
# floods to group i (compiler.flood_group), so it bounds the VNI index.
BMV2_MAX_MC_GROUPS = 32768
# 802.1Q reserves VLAN 0 (priority tag) and the all-ones id.
VLAN_MIN = 1
# The tables IPv6 tenants need (issue 37), named as their IPv4 twins are:
# `nd_suppression` answers neighbour solicitations as `arp_suppression`
# (arp_suppression.p4) answers ARP; `ipv6_host_route` and `ipv6_prefix_route`
# beside `host_route` and `prefix_route` (l3_forwarding.p4). A pipeline
# without all three (an older build, a profile that leaves IPv6 out) makes the
# model refuse every IPv6 tenant address, subnet and route
# (addressing.py: ipv6_unsupported).
IPV6_TABLES = ("nd_suppression", "ipv6_host_route", "ipv6_prefix_route")


@dataclass(frozen=True)
class PipelineLimits:
    """What the controller may hand out or accept for one compiled pipeline."""

    port_max: int  # largest port number (port_t width), reserved ones included
    vm_index_max: int  # per ToR; index 0 means "no VM"
    vni_index_max: int  # per fabric; index 0 means "no VNI"
    tor_index_max: int  # per fabric, for VTEP replica ids
    vlan_max: int
    vni_max: int
    traffic_class_max: int
    ipv6: bool  # has the IPV6_TABLES: takes IPv6 tenant addresses, subnets, routes

    @property
    def priority_queues(self) -> int:
        """BMv2 --priority-queues: one queue per traffic class."""
        return self.traffic_class_max + 1

    def port_problem(self, port: int, target: Target | str = Target.BMV2) -> str | None:
        """Why ``port`` cannot carry a server or an uplink on a ``target``
        switch, or None. (port_t is bit<9> on every target.)"""
        if not 0 <= port <= self.port_max:
            return f"port {port} outside 0-{self.port_max}"
        meaning = reserved_ports(target).get(port)
        if meaning is not None:
            return f"port {port} is {meaning} on {profile(target).target.value}"
        return None

    @classmethod
    def from_p4info(cls, p4info: P4Info) -> PipelineLimits:
        def size(kind: str, name: str) -> int:
            return int(getattr(p4info, kind)(name).size)

        def param_bits(action: str, param: str) -> int:
            return p4info.param(p4info.action(action).preamble.id, param).bitwidth

        def key_bits(table: str, field: str) -> int:
            return p4info.match_field(p4info.table(table).preamble.id, field).bitwidth

        vm_index_max = min(
            # meters and counters indexed by the VM index (sizes.p4 VM_COUNT)
            size("meter", "vm_tx_meter") - 1,
            size("meter", "vm_rx_meter") - 1,
            size("counter", "vm_tx_counter") - 1,
            size("counter", "vm_rx_counter") - 1,
            (1 << param_bits("bind_vm", "vm")) - 1,  # vm_index_t
            VTEP_REPLICA_BASE - 1,  # a VM's index is its replica id
        )
        group_bits = param_bits("set_vni_params", "flood_group")  # mcast_group_t
        vni_index_max = min(
            # counters indexed by the VNI index (sizes.p4 VNI_COUNT)
            size("counter", "vni_tx_counter") - 1,
            size("counter", "vni_rx_counter") - 1,
            (1 << param_bits("set_vni_params", "vni_index")) - 1,  # vni_index_t
            # the flood group of the largest index must be a valid group id...
            (1 << group_bits) - 1,
            # ...and an id in BMv2's group table (0 up to its size less one)
            BMV2_MAX_MC_GROUPS - 1,
        )
        tor_index_max = min(
            # one underlay /32 route per remote VTEP
            size("table", "underlay_route") - 1,
            (1 << key_bits("flood_replica", "replica_id")) - 1 - VTEP_REPLICA_BASE,
        )
        return cls(
            port_max=(1 << key_bits("port_role", "port")) - 1,
            vm_index_max=vm_index_max,
            vni_index_max=vni_index_max,
            tor_index_max=tor_index_max,
            vlan_max=(1 << key_bits("access_binding", "vlan_id")) - 2,
            vni_max=(1 << key_bits("vni_config", "vni")) - 1,
            traffic_class_max=(1 << param_bits("set_vni_params", "traffic_class")) - 1,
            ipv6=all(p4info.has_table(name) for name in IPV6_TABLES),
        )


# The committed BMv2 pipeline's limits (P4VTEP_P4INFO overrides its P4Info).
BMV2 = PipelineLimits.from_p4info(bmv2_pipeline().p4info)
PORT_MAX = BMV2.port_max
VM_INDEX_MAX = BMV2.vm_index_max
VNI_INDEX_MAX = BMV2.vni_index_max
TOR_INDEX_MAX = BMV2.tor_index_max
VLAN_MAX = BMV2.vlan_max
VNI_MAX = BMV2.vni_max
TRAFFIC_CLASS_MAX = BMV2.traffic_class_max
# Whether the model takes IPv6 tenant addresses (read at each check, so a
# test may set it to check the IPv6 rules before the pipeline has the tables).
IPV6_SUPPORTED = BMV2.ipv6


@cache
def target_takes_ipv6(target: Target) -> bool:
    """Whether the committed pipeline of Tofino ``target`` has the
    IPV6_TABLES (BMv2's is IPV6_SUPPORTED). A fabric with a ToR that runs one
    without them cannot hold IPv6 tenants (validation.check_fabric)."""
    return PipelineLimits.from_p4info(tofino_pipeline(target).p4info).ipv6


@cache
def target_guards_only_ipv4(target: Target) -> bool:
    """Whether the committed pipeline of Tofino ``target`` guards a VM's
    IPv4 sources but not its IPv6 ones (Tofino 1's profile: it drops every
    IPv6 frame of a guarded VM, docs/security.md). A guarded VM there with
    an IPv6 address or pair is refused (port_security.vm_problems)."""
    tables = tofino_pipeline(target).p4info
    return tables.has_table("ipv4_source_guard") and not tables.has_table("ipv6_source_guard")
