"""Entries of the p4vtep pipeline, built by name from its P4Info.

The one place that spells the pipeline's table, action and counter names; the
PTF suite and the controller both build their entries here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..runtime import entities
from ..runtime.codec import Value
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2
from .drop_reasons import DropReason
from .packet_io import PUNT_CLASS_COUNT, PuntClass

if TYPE_CHECKING:
    # A meter's configuration is the model's QoS rates (RFC 2698 trTCM,
    # bytes/s and bytes). Only a type here: dataplane/ sits below model/.
    from ..model.fabric import Rates


class PortRole(enum.Enum):
    ACCESS = "set_access_port"
    FABRIC = "set_fabric_port"


# Counters (indexed) and their index spaces.
PORT_RX_COUNTER = "port_rx_counter"
PORT_TX_COUNTER = "port_tx_counter"
VM_TX_COUNTER = "vm_tx_counter"
VM_RX_COUNTER = "vm_rx_counter"
VNI_TX_COUNTER = "vni_tx_counter"
VNI_RX_COUNTER = "vni_rx_counter"
INGRESS_DROP_COUNTER = "ingress_drop_counter"
EGRESS_DROP_COUNTER = "egress_drop_counter"
ARP_REPLY_COUNTER = "arp_reply_counter"  # direct, on arp_suppression
ND_REPLY_COUNTER = "nd_reply_counter"  # direct, on nd_suppression
VM_TX_METER = "vm_tx_meter"
VM_RX_METER = "vm_rx_meter"  # unicast to a local VM (ingress: its colour picks the queue)
VM_RX_FLOOD_METER = "vm_rx_flood_meter"  # flood copies to a local VM (egress)
# Per VM, direction and colour (packets and bytes of frames a VM's meter
# coloured): index ``color_index(vm, colour)``. RX unicast and flood copies
# are counted apart (ingress and egress); a VM's RX colours are their sum.
VM_TX_COLOR_COUNTER = "vm_tx_color_counter"
VM_RX_COLOR_COUNTER = "vm_rx_color_counter"
VM_RX_FLOOD_COLOR_COUNTER = "vm_rx_flood_color_counter"
COLOR_COUNTERS = {
    "tx": (VM_TX_COLOR_COUNTER,),
    "rx": (VM_RX_COLOR_COUNTER, VM_RX_FLOOD_COLOR_COUNTER),
}
# The meters a policy's direction configures (both RX meters get the rx rates).
POLICY_METERS = {"tx": (VM_TX_METER,), "rx": (VM_RX_METER, VM_RX_FLOOD_METER)}


def color_index(vm_index: int, color: int) -> int:
    """The colour counters' index: the VM's index, then 2 bits of colour
    (the target's meter colour values: targets.py)."""
    return vm_index << 2 | color


ECMP_SELECTOR = "ecmp_selector"

# The CPU path (issue 39, cpu_port.p4): per punt class (index = class), what
# went to the controller and what its CoPP meter dropped (packets and bytes),
# and the meter (packets/s).
PUNT_COUNTER = "punt_counter"
COPP_DROP_COUNTER = "copp_drop_counter"
COPP_METER = "copp_meter"


@dataclass(frozen=True)
class PuntCounts:
    """One punt class's counters: sent to the controller, dropped by CoPP."""

    punted_packets: int = 0
    punted_bytes: int = 0
    copp_dropped_packets: int = 0
    copp_dropped_bytes: int = 0


def _punt_class_index(punt_class: PuntClass | int) -> int:
    index = int(punt_class)
    if not 0 < index < PUNT_CLASS_COUNT:
        raise ValueError(f"punt class {index} is not in 1..{PUNT_CLASS_COUNT - 1}")
    return index


def punt_counts(p4info: P4Info, read: Iterable[p4runtime_pb2.Entity]) -> dict[int, PuntCounts]:
    """Per punt class, the counts in ``read`` (what reading
    ``PipelineEntries.punt_counters()`` returned); classes with nothing
    counted are left out."""
    punt_id = p4info.counter(PUNT_COUNTER).preamble.id
    drop_id = p4info.counter(COPP_DROP_COUNTER).preamble.id
    cells: dict[int, dict[int, tuple[int, int]]] = {punt_id: {}, drop_id: {}}
    for entity in read:
        entry = entity.counter_entry
        if entry.counter_id in cells:
            cells[entry.counter_id][entry.index.index] = (
                entry.data.packet_count,
                entry.data.byte_count,
            )
    counts = {}
    for index in sorted(cells[punt_id].keys() | cells[drop_id].keys()):
        punted = cells[punt_id].get(index, (0, 0))
        dropped = cells[drop_id].get(index, (0, 0))
        if punted != (0, 0) or dropped != (0, 0):
            counts[index] = PuntCounts(*punted, *dropped)
    return counts


# Port security (port_security.p4): per VM, one cell per drop reason from
# SPOOFED_IP to DHCP_SERVER_FROM_VM, index ``port_security_index(vm, reason)``.
PORT_SECURITY_DROP_COUNTER = "port_security_drop_counter"
PORT_SECURITY_CLASSES = 8  # cells per VM (PORT_SECURITY_CLASSES in port_security.p4)
PORT_SECURITY_REASONS = (
    DropReason.SPOOFED_IP,
    DropReason.SPOOFED_ARP,
    DropReason.SPOOFED_ND,
    DropReason.RA_FROM_VM,
    DropReason.DHCP_SERVER_FROM_VM,
)


def port_security_index(vm_index: int, reason: DropReason) -> int:
    """The per-VM port security counter's index of one of its drop reasons."""
    if reason not in PORT_SECURITY_REASONS:
        raise ValueError(f"{reason.name} is not a port security drop reason")
    return vm_index << 3 | (reason - DropReason.SPOOFED_IP)


def port_security_supported(p4info: P4Info) -> bool:
    """Whether a pipeline has port security (the IPv4 source guard, the
    extra MACs, and the ``guarded`` and ``dhcp_server`` flags of
    ``bind_vm``). Older builds have none."""
    return p4info.has_table("ipv4_source_guard")


def ipv6_guard_supported(p4info: P4Info) -> bool:
    """Whether a pipeline with port security guards IPv6 sources too
    (``ipv6_source_guard``). Tofino 1's profile has no IPv6 tenants and no
    IPv6 guard: its pipeline drops every IPv6 frame of a guarded VM
    (port_security.p4), so no IPv6 guard entry is written there."""
    return p4info.has_table("ipv6_source_guard")


def no_ipv6_guard(prefix: Value, prefix_len: int) -> ValueError:
    """The error for an IPv6 source-guard entry on a pipeline without the
    table (ipv6_guard_supported)."""
    return ValueError(
        f"{prefix!r}/{prefix_len}: this pipeline has no IPv6 source guard "
        "(a guarded VM's IPv6 frames are all dropped there)"
    )


def _takes_param(p4info: P4Info, action: str, param: str) -> bool:
    """Whether the pipeline has ``action`` with parameter ``param``: how the
    controller tells one build's profile from another's."""
    try:
        p4info.param(p4info.action(action).preamble.id, param)
    except KeyError:
        return False
    return True


def guard_flags_supported(p4info: P4Info) -> bool:
    """Whether ``bind_vm`` takes the ``guarded`` and ``dhcp_server`` flags.
    A pipeline may have them without the source guards (one binding action
    for every target); they are written 0 there."""
    return _takes_param(p4info, "bind_vm", "guarded")


def bound_ipv4_supported(p4info: P4Info) -> bool:
    """Whether ``bind_vm`` takes the VM's first IPv4 address (``ipv4``:
    BMv2's short-cut past the IPv4 source guard, v1model/arch.p4's
    PORT_SECURITY_BOUND_IPV4). Tofino's has no such parameter."""
    return _takes_param(p4info, "bind_vm", "ipv4")


def policed_flag_supported(p4info: P4Info) -> bool:
    """Whether a pipeline knows which VMs are policed (the ``policed``
    parameter of the VM actions: only a policed VM's GREEN is committed).
    Older builds meter every VM and have no such parameter."""
    return _takes_param(p4info, "bind_vm", "policed")


def packet_too_big_supported(p4info: P4Info) -> bool:
    """Whether a pipeline checks routed IPv6 against the destination VNI's
    MTU (the ``too_big_payload_len`` parameter of ``route_to_local_vm_v6``)."""
    return _takes_param(p4info, "route_to_local_vm_v6", TOO_BIG_PAYLOAD_LEN)


def routing_supported(p4info: P4Info) -> bool:
    """Whether a pipeline routes between subnets (has the routing tables)."""
    return p4info.has_table("host_route")


def is_ipv6(ip: Value) -> bool:
    """Whether an address (or prefix address) is IPv6: text with a colon, or
    16 bytes. Ints are taken as IPv4 (pass ``ipv6=`` to say otherwise)."""
    if isinstance(ip, str):
        return ":" in ip
    if isinstance(ip, bytes):
        return len(ip) == 16
    return False


def _routes(ipv6: bool, table: str) -> str:
    return "ipv6_" + table if ipv6 else table


# The MTU of a VNI unless its fabric-file entry says otherwise (the VF's:
# MAX_TENANT_FRAME 9018 less Ethernet and VF tag; model.fabric.TENANT_MTU).
DEFAULT_MTU = 9000
IPV6_HEADER = 40
# route_to_local_vm_v6's parameter: the shortest IPv6 payload too long for
# the VM's VNI, its MTU - 39 (40 + payload over the MTU); a packet with
# that much or more is punted as packet_too_big. (Exclusive: Tofino's
# saturating subtraction takes it as its first operand, the payload length
# as the second, and tests for 0.)
TOO_BIG_PAYLOAD_LEN = "too_big_payload_len"


def too_big_payload_len(mtu: int) -> int:
    """The ``too_big_payload_len`` of a VNI with ``mtu``."""
    return mtu - IPV6_HEADER + 1


@dataclass(frozen=True)
class LocalVmHop:
    """A routed frame's next hop on this ToR: the VM's VF, in the VM's own VNI
    (``mtu``: that VNI's, which IPv6 packets routed to the VM may not exceed)."""

    port: int
    vlan_id: int
    vm_index: int
    vni_index: int
    vm_mac: Value
    policed: bool = False  # the VM has a receive policy (its RX meter runs)
    mtu: int = DEFAULT_MTU

    def action(self) -> tuple[str, dict[str, Value]]:
        """The IPv4 tables' action; the IPv6 ones' is named with ``_v6``."""
        return "route_to_local_vm", {
            "port": self.port,
            "vlan_id": self.vlan_id,
            "vm": self.vm_index,
            "vni_index": self.vni_index,
            "vm_mac": self.vm_mac,
            "policed": int(self.policed),
        }


@dataclass(frozen=True)
class RemoteVtepHop:
    """A routed frame's next hop behind another VTEP (symmetric IRB): the VRF's
    L3 VNI, and that VTEP's router MAC as the inner destination."""

    vtep_ip: Value
    router_mac: Value
    l3vni: int

    def action(self) -> tuple[str, dict[str, Value]]:
        return "route_to_remote_vtep", {
            "vtep_ip": self.vtep_ip,
            "router_mac": self.router_mac,
            "l3vni": self.l3vni,
        }


RouteHop = LocalVmHop | RemoteVtepHop


class PipelineEntries:
    def __init__(self, p4info: P4Info) -> None:
        self.p4info = p4info
        # Both p4vtep programs route; a pipeline without the routing tables
        # (an older build, a test's) binds VMs without a VRF.
        self.routing = routing_supported(p4info)
        self.knows_policed = policed_flag_supported(p4info)
        self.packet_too_big = packet_too_big_supported(p4info)
        self.port_security = port_security_supported(p4info)
        self.ipv6_guard = ipv6_guard_supported(p4info)
        self.guard_flags = guard_flags_supported(p4info)
        self.bound_ipv4 = bound_ipv4_supported(p4info)
        self.local_flood_group = _takes_param(p4info, "set_vni_params", "local_flood_group")

    def _policed(self, params: dict[str, Value], policed: bool) -> dict[str, Value]:
        """``params`` with the ``policed`` flag when the pipeline has it (an
        older build meters every VM: the flag is left out)."""
        if self.knows_policed:
            params["policed"] = int(policed)
        else:
            params.pop("policed", None)
        return params

    def _table(
        self,
        table: str,
        match: Mapping[str, entities.MatchValue],
        action: str | None = None,
        params: Mapping[str, Value] | None = None,
        *,
        priority: int = 0,
        member_id: int | None = None,
        group_id: int | None = None,
        is_default: bool = False,
    ) -> p4runtime_pb2.TableEntry:
        return entities.table_entry(
            self.p4info,
            table,
            match,
            action,
            params,
            priority=priority,
            member_id=member_id,
            group_id=group_id,
            is_default=is_default,
        )

    # --- ports and VTEP identity ---------------------------------------------
    def port_role(self, port: int, role: PortRole) -> p4runtime_pb2.TableEntry:
        return self._table("port_role", {"port": port}, role.value)

    def my_vtep(self, vtep_ip: Value) -> p4runtime_pb2.TableEntry:
        return self._table("my_vtep", {"vtep_ip": vtep_ip}, "terminate")

    def local_vtep(self, vtep_ip: Value, router_mac: Value) -> p4runtime_pb2.TableEntry:
        """Default action of the keyless local_vtep table (write with MODIFY)."""
        return self._table(
            "local_vtep",
            {},
            "set_local_vtep",
            {"vtep_ip": vtep_ip, "router_mac": router_mac},
            is_default=True,
        )

    # --- VMs and VNIs --------------------------------------------------------
    def access_binding(
        self,
        port: int,
        vlan_id: int,
        vni: int,
        vm_index: int,
        vm_mac: Value,
        vrf: int = 0,
        policed: bool = False,
        guarded: bool = False,
        dhcp_server: bool = False,
        ipv4: Value = 0,
    ) -> p4runtime_pb2.TableEntry:
        """`vrf`: the VRF of a routed VNI (its L3 VNI), 0 for an L2-only VNI;
        `policed`: the VM has a transmit policy (its TX meter runs);
        `guarded`: its port security is on (the source guards hold it to its
        addresses); `dhcp_server`: it may send DHCP server messages. A
        pipeline without port security takes neither flag set. `ipv4`: the
        VM's first IPv4 address (0: none), where the binding takes it
        (``bound_ipv4_supported``); the source guard must list it too."""
        params: dict[str, Value] = {"vni": vni, "vm": vm_index, "vm_mac": vm_mac}
        if self.routing:
            params["vrf"] = vrf
        elif vrf:
            raise ValueError(f"VNI {vni}: this pipeline does not route (no VRF {vrf})")
        params = self._policed(params, policed)
        if (guarded or dhcp_server) and not self.port_security:
            raise ValueError(f"VM {vm_index}: this pipeline has no port security")
        if self.guard_flags:
            params["guarded"] = int(guarded)
            params["dhcp_server"] = int(dhcp_server)
        if self.bound_ipv4:
            params["ipv4"] = ipv4
        return self._table("access_binding", {"port": port, "vlan_id": vlan_id}, "bind_vm", params)

    # --- port security (port_security.p4) ---------------------------------------
    def allowed_source_mac(self, port: int, vlan_id: int, mac: Value) -> p4runtime_pb2.TableEntry:
        """An extra source MAC the VF's VM may send from (an allowed pair's MAC)."""
        return self._table(
            "allowed_source_mac", {"port": port, "vlan_id": vlan_id, "mac": mac}, "mac_allowed"
        )

    def source_guard(
        self,
        port: int,
        vlan_id: int,
        prefix: Value,
        prefix_len: int,
        ipv6: bool | None = None,
    ) -> p4runtime_pb2.TableEntry:
        """A prefix a guarded VM may claim as its source (IPv4: also as an ARP
        sender; IPv6: also as a Neighbor Advertisement's target): one of its
        addresses as a /32 or /128, or an allowed pair's prefix (fe80::/64 and
        :: are the pipeline's rule, not entries: port_security.p4)."""
        v6 = is_ipv6(prefix) if ipv6 is None else ipv6
        if v6 and not self.ipv6_guard:
            raise no_ipv6_guard(prefix, prefix_len)
        match: dict[str, entities.MatchValue] = {"port": port, "vlan_id": vlan_id}
        if prefix_len:  # (P4Runtime: a /0 LPM match is left out, a wildcard)
            match["ip"] = entities.Lpm(prefix, prefix_len)
        table = "ipv6_source_guard" if v6 else "ipv4_source_guard"
        return self._table(table, match, "source_allowed")

    def vni_config(
        self, vni: int, vni_index: int, traffic_class: int, flood_group: int
    ) -> p4runtime_pb2.TableEntry:
        """A VNI's parameters. ``flood_group`` (0: none) carries BUM from
        either side; egress drops the fabric's copies toward VTEPs."""
        params: dict[str, Value] = {
            "vni_index": vni_index,
            "traffic_class": traffic_class,
            "flood_group": flood_group,
        }
        if self.local_flood_group:
            # An older build sends fabric BUM to a group of its own; its
            # egress prunes the VTEP copies just the same.
            params["local_flood_group"] = flood_group
        return self._table("vni_config", {"vni": vni}, "set_vni_params", params)

    def l3vni_config(
        self, l3vni: int, vni_index: int, traffic_class: int
    ) -> p4runtime_pb2.TableEntry:
        """A VRF's L3 VNI (symmetric IRB): nothing flooded, frames to this ToR's
        router MAC routed in the VRF the L3 VNI names."""
        return self._table(
            "vni_config",
            {"vni": l3vni},
            "set_l3vni_params",
            {"vni_index": vni_index, "traffic_class": traffic_class},
        )

    def mac_to_router(self, vni: int, mac: Value, gateway_mac: Value) -> p4runtime_pb2.TableEntry:
        """Frames to `mac` in `vni` are routed: the anycast gateway MAC in a routed
        VNI, this ToR's router MAC in an L3 VNI. `gateway_mac` is the source of
        routed frames delivered to local VMs."""
        return self._table(
            "mac_table", {"vni": vni, "dst_mac": mac}, "to_router", {"gateway_mac": gateway_mac}
        )

    # --- routing ---------------------------------------------------------------
    # IPv4 and IPv6 routes live in twin tables (host_route / ipv6_host_route,
    # prefix_route / ipv6_prefix_route) with the same keys; the IPv6 tables'
    # route actions carry a ``_v6`` suffix (they take the hop limit, not the
    # TTL). The family is the address's: text or 16 bytes is IPv6 when it
    # says so, an int is IPv4 unless ``ipv6`` says otherwise.
    def _hop(self, hop: RouteHop, ipv6: bool = False) -> tuple[str, dict[str, Value]]:
        action, params = hop.action()
        if isinstance(hop, LocalVmHop):
            params = self._policed(params, hop.policed)
            if ipv6 and self.packet_too_big:
                params[TOO_BIG_PAYLOAD_LEN] = too_big_payload_len(hop.mtu)
        return (action + "_v6" if ipv6 else action), params

    def host_route(
        self, vrf: int, ip: Value, hop: RouteHop, ipv6: bool | None = None
    ) -> p4runtime_pb2.TableEntry:
        v6 = is_ipv6(ip) if ipv6 is None else ipv6
        action, params = self._hop(hop, v6)
        return self._table(_routes(v6, "host_route"), {"vrf": vrf, "dst_ip": ip}, action, params)

    def gateway_address(
        self, vrf: int, ip: Value, ipv6: bool | None = None
    ) -> p4runtime_pb2.TableEntry:
        """A gateway IP of the VRF (IPv6: its global or link-local address):
        the ToR answers echo requests to it."""
        v6 = is_ipv6(ip) if ipv6 is None else ipv6
        return self._table(_routes(v6, "host_route"), {"vrf": vrf, "dst_ip": ip}, "to_gateway")

    def prefix_route(
        self, vrf: int, prefix: Value, prefix_len: int, hop: RouteHop, ipv6: bool | None = None
    ) -> p4runtime_pb2.TableEntry:
        v6 = is_ipv6(prefix) if ipv6 is None else ipv6
        action, params = self._hop(hop, v6)
        match: dict[str, entities.MatchValue] = {"vrf": vrf}
        if prefix_len:  # (P4Runtime: a /0 LPM match is left out, a wildcard)
            match["dst_prefix"] = entities.Lpm(prefix, prefix_len)
        return self._table(_routes(v6, "prefix_route"), match, action, params)

    def mac_to_local_vm(
        self, vni: int, mac: Value, port: int, vlan_id: int, vm_index: int, policed: bool = False
    ) -> p4runtime_pb2.TableEntry:
        """`policed`: the VM has a receive policy (its RX meter runs)."""
        return self._table(
            "mac_table",
            {"vni": vni, "dst_mac": mac},
            "to_local_vm",
            self._policed({"port": port, "vlan_id": vlan_id, "vm": vm_index}, policed),
        )

    def mac_to_remote_vtep(self, vni: int, mac: Value, vtep_ip: Value) -> p4runtime_pb2.TableEntry:
        return self._table(
            "mac_table", {"vni": vni, "dst_mac": mac}, "to_remote_vtep", {"vtep_ip": vtep_ip}
        )

    def mac_to_cpu(self, vni: int, mac: Value) -> p4runtime_pb2.TableEntry:
        return self._table("mac_table", {"vni": vni, "dst_mac": mac}, "punt_to_cpu")

    def arp_suppression(self, vni: int, ip: Value, mac: Value) -> p4runtime_pb2.TableEntry:
        return self._table(
            "arp_suppression", {"vni": vni, "target_ip": ip}, "reply", {"target_mac": mac}
        )

    def nd_suppression(
        self, vni: int, ip: Value, mac: Value, router: bool = False
    ) -> p4runtime_pb2.TableEntry:
        """Neighbour solicitations for IPv6 ``ip`` in ``vni`` are answered with
        ``mac``; ``router``: the gateway's address (the advert's R flag)."""
        return self._table(
            "nd_suppression",
            {"vni": vni, "target_ip": ip},
            "nd_reply",
            {"target_mac": mac, "router": int(router)},
        )

    # --- underlay --------------------------------------------------------------
    def next_hop_member(
        self, member_id: int, port: int, next_hop_mac: Value
    ) -> p4runtime_pb2.ActionProfileMember:
        return entities.action_profile_member(
            self.p4info,
            ECMP_SELECTOR,
            member_id,
            "set_next_hop",
            {"port": port, "next_hop_mac": next_hop_mac},
        )

    def ecmp_group(
        self, group_id: int, member_ids: list[int], max_size: int = 0
    ) -> p4runtime_pb2.ActionProfileGroup:
        return entities.action_profile_group(
            self.p4info, ECMP_SELECTOR, group_id, member_ids, max_size
        )

    def underlay_route(
        self,
        prefix: Value,
        prefix_len: int,
        *,
        group_id: int | None = None,
        member_id: int | None = None,
    ) -> p4runtime_pb2.TableEntry:
        return self._table(
            "underlay_route",
            {"vtep_ip": entities.Lpm(prefix, prefix_len)},
            group_id=group_id,
            member_id=member_id,
        )

    # --- flooding ----------------------------------------------------------------
    def replica_to_vm(
        self, replica_id: int, vlan_id: int, vm_index: int, policed: bool = False
    ) -> p4runtime_pb2.TableEntry:
        """`policed`: the VM has a receive policy (its flood RX meter runs)."""
        return self._table(
            "flood_replica",
            {"replica_id": replica_id},
            "replicate_to_vm",
            self._policed({"vlan_id": vlan_id, "vm": vm_index}, policed),
        )

    def replica_to_vtep(
        self, replica_id: int, vtep_ip: Value, next_hop_mac: Value
    ) -> p4runtime_pb2.TableEntry:
        return self._table(
            "flood_replica",
            {"replica_id": replica_id},
            "replicate_to_vtep",
            {"vtep_ip": vtep_ip, "next_hop_mac": next_hop_mac},
        )

    @staticmethod
    def flood_group(
        group_id: int, replicas: list[tuple[int, int]]
    ) -> p4runtime_pb2.PacketReplicationEngineEntry:
        """replicas: (egress port, replica id)."""
        return entities.multicast_group(group_id, replicas)

    # --- QoS -------------------------------------------------------------------
    def vm_meter(self, direction: str, vm_index: int, rates: Rates) -> p4runtime_pb2.MeterEntry:
        """One meter of a VM: ``direction`` "tx", "rx" (unicast) or "flood"
        (the RX meter of flood copies; a policy's rx rates configure both)."""
        meter = {"tx": VM_TX_METER, "rx": VM_RX_METER, "flood": VM_RX_FLOOD_METER}[direction]
        return self._meter(meter, vm_index, rates)

    def _meter(self, name: str, vm_index: int, rates: Rates) -> p4runtime_pb2.MeterEntry:
        return entities.meter_entry(
            self.p4info,
            name,
            vm_index,
            cir=rates.cir,
            cburst=rates.cburst,
            pir=rates.pir,
            pburst=rates.pburst,
        )

    # --- the CPU path (issue 39) --------------------------------------------------
    def punt_policy(
        self, drop_reason: DropReason | int, punt_class: PuntClass | int
    ) -> p4runtime_pb2.TableEntry:
        """Frames dropped for ``drop_reason`` go to the controller instead,
        as ``punt_class`` (still counted under their drop reason)."""
        reason = int(drop_reason)
        if reason == 0:
            raise ValueError("drop reason 0 is no drop: nothing to punt")
        return self._table(
            "punt_policy",
            {"drop_reason": reason},
            "punt",
            {"punt_class": _punt_class_index(punt_class)},
        )

    def copp_meter(
        self, punt_class: PuntClass | int, pps: int, burst: int
    ) -> p4runtime_pb2.MeterEntry:
        """The CoPP meter of a punt class: at most ``pps`` packets/s after a
        burst of ``burst`` packets; beyond that punted frames are dropped
        (copp_drop_counter). One rate: committed and peak are the same."""
        if pps <= 0 or burst <= 0:
            raise ValueError(f"CoPP meter: rate {pps}/s and burst {burst} must be positive")
        return entities.meter_entry(
            self.p4info,
            COPP_METER,
            _punt_class_index(punt_class),
            cir=pps,
            cburst=burst,
            pir=pps,
            pburst=burst,
        )

    def punt_counters(self) -> list[p4runtime_pb2.CounterEntry]:
        """Read requests for every cell of the punt and CoPP drop counters
        (``punt_counts`` sums up what the read returns)."""
        return [self.counter(PUNT_COUNTER), self.counter(COPP_DROP_COUNTER)]

    # --- counters --------------------------------------------------------------
    def policy_meters(
        self, direction: str, vm_index: int, rates: Rates
    ) -> list[p4runtime_pb2.MeterEntry]:
        """Every meter a policy's ``direction`` ("tx" or "rx") configures on
        the VM (an older pipeline has no flood meter)."""
        names = [m for m in POLICY_METERS[direction] if self._has_meter(m)]
        return [self._meter(name, vm_index, rates) for name in names]

    def _has_meter(self, name: str) -> bool:
        try:
            self.p4info.meter(name)
        except KeyError:
            return False
        return True

    def has_counter(self, name: str) -> bool:
        try:
            self.p4info.counter(name)
        except KeyError:
            return False
        return True

    def counter(self, name: str, index: int | None = None) -> p4runtime_pb2.CounterEntry:
        return entities.counter_entry(self.p4info, name, index)
