"""Entities of the p4vtep pipeline, encoded once into (identity, bytes).

The builders of ``dataplane.entries`` spell the pipeline's names; this wraps
them so that the compiler keeps each entity as its serialized form and its
key, ready to diff and to write without encoding again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dataplane.entries import MeterRates, PipelineEntries, PortRole
from ..runtime import codec
from ..runtime.codec import Value
from ..runtime.entities import MatchType, to_entity
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2
from .state import MULTICAST, TABLE, Encoded, encoded

MEMO_MAX = (
    1 << 12
)  # values remembered per field before starting over (bounds memory) (bounds memory)

# A TableEntry, ActionProfileMember/Group, PacketReplicationEngineEntry or
# MeterEntry message (the generated classes carry no static types here).
Message = Any


class ExactEntry:
    """A table entry with exact matches and one action, with every id and
    width looked up once: the per-VM entries are built this way (several per
    VM and ToR), giving the same bytes as ``entities.table_entry``."""

    def __init__(
        self, p4info: P4Info, table: str, match: Sequence[str], action: str, params: Sequence[str]
    ) -> None:
        self.table_id = p4info.table(table).preamble.id
        fields = [p4info.match_field(self.table_id, name) for name in match]
        if any(f.match_type != MatchType.EXACT for f in fields):
            raise ValueError(f"{table}: not an exact-match table")
        # Match fields go in field-id order, parameters in the P4Info's order.
        self.match = sorted(
            ((f.id, f.bitwidth, i) for i, f in enumerate(fields)), key=lambda m: m[0]
        )
        self.action_id = p4info.action(action).preamble.id
        declared = p4info.params(self.action_id)
        if sorted(p.name for p in declared) != sorted(params):
            raise ValueError(f"{action}: parameters are {[p.name for p in declared]}")
        self.params = [(p.id, p.bitwidth, list(params).index(p.name)) for p in declared]
        self.name = table
        self._memo: list[dict[Value, bytes]] = [{} for _ in range(len(match) + len(params))]

    def _encode(self, slot: int, value: Value, width: int) -> bytes:
        """Canonical bytes of one field; remembered, since the same MACs,
        IPs, VNIs and indices recur across entries and ToRs."""
        memo = self._memo[slot]
        data = memo.get(value)
        if data is None:
            if len(memo) >= MEMO_MAX:
                memo.clear()
            data = memo[value] = codec.encode(value, width)
        return data

    def __call__(self, match: Sequence[Value], params: Sequence[Value]) -> Encoded:
        entity = p4runtime_pb2.Entity()
        te = entity.table_entry
        te.table_id = self.table_id
        try:
            for field_id, width, i in self.match:
                te.match.add(field_id=field_id).exact.value = self._encode(i, match[i], width)
            key = TABLE + te.SerializeToString(deterministic=True)
            action = te.action.action
            action.action_id = self.action_id
            offset = len(self.match)
            for param_id, width, i in self.params:
                value = self._encode(offset + i, params[i], width)
                action.params.add(param_id=param_id, value=value)
        except codec.EncodingError as exc:
            raise codec.EncodingError(f"{self.name}: {exc}") from None
        return key, entity.SerializeToString(deterministic=True)


class Encoder:
    def __init__(self, entries: PipelineEntries) -> None:
        self.entries = entries
        self._replicas: dict[tuple[int, int], bytes] = {}
        p4info = entries.p4info
        self._binding = ExactEntry(
            p4info, "access_binding", ("port", "vlan_id"), "bind_vm", ("vni", "vm", "vm_mac")
        )
        self._to_local = ExactEntry(
            p4info, "mac_table", ("vni", "dst_mac"), "to_local_vm", ("port", "vlan_id", "vm")
        )
        self._to_remote = ExactEntry(
            p4info, "mac_table", ("vni", "dst_mac"), "to_remote_vtep", ("vtep_ip",)
        )
        self._replica_to_vm = ExactEntry(
            p4info, "flood_replica", ("replica_id",), "replicate_to_vm", ("vlan_id", "vm")
        )
        self._arp = ExactEntry(
            p4info, "arp_suppression", ("vni", "target_ip"), "reply", ("target_mac",)
        )

    @staticmethod
    def of(message: Message) -> Encoded:
        return encoded(to_entity(message))

    # --- ports, identity, underlay ------------------------------------------------
    def port_role(self, port: int, role: PortRole) -> Encoded:
        return self.of(self.entries.port_role(port, role))

    def my_vtep(self, vtep_ip: Value) -> Encoded:
        return self.of(self.entries.my_vtep(vtep_ip))

    def local_vtep(self, vtep_ip: Value, router_mac: Value) -> Encoded:
        return self.of(self.entries.local_vtep(vtep_ip, router_mac))

    def next_hop_member(self, member_id: int, port: int, next_hop_mac: Value) -> Encoded:
        return self.of(self.entries.next_hop_member(member_id, port, next_hop_mac))

    def ecmp_group(self, group_id: int, member_ids: list[int], max_size: int) -> Encoded:
        return self.of(self.entries.ecmp_group(group_id, member_ids, max_size))

    def underlay_route(self, prefix: Value, prefix_len: int, group_id: int) -> Encoded:
        return self.of(self.entries.underlay_route(prefix, prefix_len, group_id=group_id))

    # --- VNIs and flooding ------------------------------------------------------
    def vni_config(
        self, vni: int, vni_index: int, traffic_class: int, group: int, local_group: int
    ) -> Encoded:
        return self.of(self.entries.vni_config(vni, vni_index, traffic_class, group, local_group))

    def _replica(self, replica: tuple[int, int]) -> bytes:
        """One replica, serialized as a MulticastGroupEntry holding just it."""
        port, instance = replica
        one = p4runtime_pb2.MulticastGroupEntry()
        one.replicas.add(egress_port=port, instance=instance)
        data = self._replicas[replica] = one.SerializeToString(deterministic=True)
        return data

    def flood_group(self, group_id: int, replicas: list[tuple[int, int]]) -> Encoded:
        """Same bytes as ``entries.flood_group``; a VNI's group holds a copy
        per VM, so each replica is encoded once and the group is assembled
        from them (repeated fields concatenate) and parsed by protobuf."""
        ordered = sorted(replicas)
        try:
            # (no Python loop: 1000s of copies, nearly always all encoded already)
            parts = list(map(self._replicas.__getitem__, ordered))
        except KeyError:
            parts = [
                self._replicas[r] if r in self._replicas else self._replica(r) for r in ordered
            ]
        head = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=group_id).SerializeToString()
        entity = p4runtime_pb2.Entity()
        group = entity.packet_replication_engine_entry.multicast_group_entry
        group.MergeFromString(head + b"".join(parts))
        return MULTICAST + b"%d" % group_id, entity.SerializeToString(deterministic=True)

    def replica_to_vtep(self, replica_id: int, vtep_ip: Value, next_hop_mac: Value) -> Encoded:
        return self.of(self.entries.replica_to_vtep(replica_id, vtep_ip, next_hop_mac))

    # --- VMs ------------------------------------------------------------------
    def access_binding(
        self, port: int, vlan_id: int, vni: int, vm_index: int, vm_mac: Value
    ) -> Encoded:
        return self._binding((port, vlan_id), (vni, vm_index, vm_mac))

    def mac_to_local_vm(
        self, vni: int, mac: Value, port: int, vlan_id: int, vm_index: int
    ) -> Encoded:
        return self._to_local((vni, mac), (port, vlan_id, vm_index))

    def replica_to_vm(self, replica_id: int, vlan_id: int, vm_index: int) -> Encoded:
        return self._replica_to_vm((replica_id,), (vlan_id, vm_index))

    def arp_suppression(self, vni: int, ip: Value, mac: Value) -> Encoded:
        return self._arp((vni, ip), (mac,))

    def mac_to_remote_vtep(self, vni: int, mac: Value, vtep_ip: Value) -> Encoded:
        return self._to_remote((vni, mac), (vtep_ip,))

    def vm_meter(self, direction: str, vm_index: int, rates: MeterRates) -> Encoded:
        return self.of(self.entries.vm_meter(direction, vm_index, rates))
