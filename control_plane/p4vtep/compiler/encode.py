"""Entities of the p4vtep pipeline, encoded once into (identity, bytes).

The builders of ``dataplane.entries`` spell the pipeline's names; this wraps
them so that the compiler keeps each entity as its serialized form and its
key, ready to diff and to write without encoding again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..dataplane.entries import (
    TOO_BIG_PAYLOAD_LEN,
    LocalVmHop,
    PipelineEntries,
    PortRole,
    RouteHop,
    is_ipv6,
    no_ipv6_guard,
    too_big_payload_len,
)
from ..model.fabric import Rates
from ..runtime import codec, wire
from ..runtime.codec import Value
from ..runtime.entities import MatchType, to_entity
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2
from .switch_state import MULTICAST, TABLE, Encoded, encoded, shared_tail

# Values remembered per field, and per-VM entities shared between ToRs,
# before starting over. The ToRs are built at once, a step of VMs each in
# turn (``TorCompiler.snapshot_steps``, one supervisor per ToR), in the same
# order of VMs: what one ToR encoded is taken by the others a few steps
# later, so these need only span a few steps. (Sized to hold every VM of a
# ToR, 1 << 16 and 1 << 18, they held about 45 MiB with 100,000 VMs, of use
# to no one once the builds were done. A first build of 10,000 VMs on two
# ToRs takes the same CPU with either when the ToRs are built at once, as
# the controller does, and about 30 % more with these when built one after
# the other.)
MEMO_MAX = 1 << 13
SHARED_MAX = 1 << 13

# A TableEntry, ActionProfileMember/Group, PacketReplicationEngineEntry or
# MeterEntry message (the generated classes carry no static types here).
Message = Any


# Tags of the length-delimited fields an exact-match entry and a multicast
# group are assembled from (``runtime.wire``).
_ENTRY_MATCH = wire.tag(p4runtime_pb2.TableEntry, "match")
_MATCH_EXACT = wire.tag(p4runtime_pb2.FieldMatch, "exact")
_EXACT_VALUE = wire.tag(p4runtime_pb2.FieldMatch.Exact, "value")
_ENTRY_ACTION = wire.tag(p4runtime_pb2.TableEntry, "action")
_TABLE_ACTION_ACTION = wire.tag(p4runtime_pb2.TableAction, "action")
_ACTION_PARAMS = wire.tag(p4runtime_pb2.Action, "params")
_PARAM_VALUE = wire.tag(p4runtime_pb2.Action.Param, "value")
_ENTITY_PRE = wire.tag(p4runtime_pb2.Entity, "packet_replication_engine_entry")
_PRE_MULTICAST = wire.tag(p4runtime_pb2.PacketReplicationEngineEntry, "multicast_group_entry")
_GROUP_REPLICAS = wire.tag(p4runtime_pb2.MulticastGroupEntry, "replicas")
_MATCH_LPM = wire.tag(p4runtime_pb2.FieldMatch, "lpm")
_LPM_VALUE = wire.tag(p4runtime_pb2.FieldMatch.LPM, "value")
# (prefix_len is a varint: its tag is field 2, wire type 0)
_LPM_PREFIX_LEN = wire.varint(
    p4runtime_pb2.FieldMatch.LPM.DESCRIPTOR.fields_by_name["prefix_len"].number << 3
)


def _prefixes(field: Callable[[bytes], bytes], bitwidth: int) -> list[bytes]:
    """What ``field(value)`` puts in front of a value, for every length the
    value can have: a field's heads and lengths depend only on the length of
    its value, so a field is then one concatenation."""
    out = []
    for length in range((bitwidth + 7) // 8 + 1):
        whole = field(bytes(length))
        out.append(whole[: len(whole) - length])
    return out


class ExactEntry:
    """A table entry with exact matches and one action, with every id and
    width looked up once: the per-VM entries are built this way (several per
    VM and ToR), giving the same key and stored form as ``encoded`` gives
    ``entities.table_entry`` (fields in number order; the tests compare them), but
    assembled from pre-serialized heads and the values' bytes instead of
    through protobuf objects. Called with the match values, then the action
    parameters, positionally, in the order the serialized entry holds them:
    match fields by id, parameters as the P4Info declares them (checked
    here, so that assembling is concatenation in call order)."""

    def __init__(
        self,
        p4info: P4Info,
        table: str,
        match: Sequence[str],
        action: str,
        params: Sequence[str],
        shared_memos: dict[bytes, _FieldMemo] | None = None,
    ) -> None:
        """``shared_memos``: field memos shared with other entry shapes, by the
        field's serialized head (a match field of the same table, a
        parameter with the same id and width serialize a value alike)."""
        wrap = wire.wrap
        shared = {} if shared_memos is None else shared_memos
        self.table_id = p4info.table(table).preamble.id
        fields = [p4info.match_field(self.table_id, name) for name in match]
        if any(f.match_type != MatchType.EXACT for f in fields):
            raise ValueError(f"{table}: not an exact-match table")
        if [f.id for f in fields] != sorted(f.id for f in fields):
            raise ValueError(f"{table}: give the match fields in id order")
        self.action_id = p4info.action(action).preamble.id
        declared = [p.name for p in p4info.params(self.action_id)]
        if declared != list(params):
            raise ValueError(f"{action}: parameters are {declared}, in that order")
        # Per value: a memo of its field's bytes, which encodes on a miss.
        memos = []
        for f in fields:
            head = p4runtime_pb2.FieldMatch(field_id=f.id).SerializeToString()

            def match_field(value: bytes, head: bytes = head) -> bytes:
                exact = wrap(_MATCH_EXACT, wrap(_EXACT_VALUE, value))
                return wrap(_ENTRY_MATCH, head + exact)

            key = b"match %d %d " % (self.table_id, f.bitwidth) + head
            if key not in shared:
                shared[key] = _FieldMemo(f.bitwidth, _prefixes(match_field, f.bitwidth))
            memos.append(shared[key])
        for p in p4info.params(self.action_id):
            head = p4runtime_pb2.Action.Param(param_id=p.id).SerializeToString()

            def param(value: bytes, head: bytes = head) -> bytes:
                return wrap(_ACTION_PARAMS, head + wrap(_PARAM_VALUE, value))

            key = b"param %d " % p.bitwidth + head
            if key not in shared:
                shared[key] = _FieldMemo(p.bitwidth, _prefixes(param, p.bitwidth))
            memos.append(shared[key])
        entry_head = p4runtime_pb2.TableEntry(table_id=self.table_id).SerializeToString()
        action_head = p4runtime_pb2.Action(action_id=self.action_id).SerializeToString()
        self.name = table
        self.memos = memos  # (the match fields', then the parameters')
        self._assemble = _assembler(len(fields), entry_head, action_head, memos)

    def __call__(self, *values: Value) -> Encoded:
        try:
            return self._assemble(*values)
        except codec.EncodingError as exc:
            raise codec.EncodingError(f"{self.name}: {exc}") from None


class LpmEntry:
    """A table entry with exact matches, then one LPM match (the last field
    by id), and an action without parameters: the source guards' entries
    (several per guarded VM), assembled as ``ExactEntry`` assembles its
    entries, with the same key and stored form as ``encoded`` gives
    ``entities.table_entry`` (the tests compare them): the stored form is
    the action, one object for every entry (switch_state). Called with the exact
    values, then the prefix (an int, IPv4/IPv6 text or bytes) and its
    length; bits beyond the length are cleared, as P4Runtime requires."""

    def __init__(
        self,
        p4info: P4Info,
        table: str,
        exact: Sequence[str],
        lpm: str,
        action: str,
        shared_memos: dict[bytes, _FieldMemo] | None = None,
    ) -> None:
        # (checks the exact fields' order and that the action has no parameters)
        exact_part = ExactEntry(p4info, table, exact, action, (), shared_memos)
        table_id = exact_part.table_id
        exact_ids = [p4info.match_field(table_id, name).id for name in exact]
        field = p4info.match_field(table_id, lpm)
        if field.match_type != MatchType.LPM:
            raise ValueError(f"{table}.{lpm}: not an LPM match")
        if exact_ids and field.id < max(exact_ids):
            raise ValueError(f"{table}: the LPM match must come last by id")
        self.name = table
        self.bitwidth = field.bitwidth
        self._memos = exact_part.memos
        self._entry_head = p4runtime_pb2.TableEntry(table_id=table_id).SerializeToString()
        self._field_head = p4runtime_pb2.FieldMatch(field_id=field.id).SerializeToString()
        self._action = shared_tail(
            _action_field(p4runtime_pb2.Action(action_id=exact_part.action_id).SerializeToString())
        )
        self._lpm: dict[tuple[Value, Value], bytes] = {}  # (prefix, length) -> match field

    def __call__(self, *values: Value) -> Encoded:
        *exact, prefix, length = values
        if len(exact) != len(self._memos):
            raise TypeError(f"{len(self._memos) + 2} values expected, {len(values)} given")
        try:
            head = b"".join([memo[v] for memo, v in zip(self._memos, exact, strict=True)])
        except codec.EncodingError as exc:
            raise codec.EncodingError(f"{self.name}: {exc}") from None
        match = self._lpm.get((prefix, length))
        if match is None:
            match = self._lpm_match(prefix, length)
        return TABLE + self._entry_head + head + match, self._action

    def _lpm_match(self, prefix: Value, length: Value) -> bytes:
        """The LPM match field of (prefix, length), serialized, remembered
        (the same few prefixes recur: a pair's prefix shared by many VMs)."""
        if type(length) is not int or not 0 < length <= self.bitwidth:
            raise codec.EncodingError(f"{self.name}: prefix length {length!r} out of range")
        try:
            number = codec.to_int(prefix, self.bitwidth)
        except codec.EncodingError as exc:
            raise codec.EncodingError(f"{self.name}: {exc}") from None
        number &= ((1 << length) - 1) << (self.bitwidth - length)
        raw = number.to_bytes((number.bit_length() + 7) // 8 or 1, "big")
        lpm = wire.wrap(_LPM_VALUE, raw) + _LPM_PREFIX_LEN + wire.varint(length)
        match = wire.wrap(_ENTRY_MATCH, self._field_head + wire.wrap(_MATCH_LPM, lpm))
        if len(self._lpm) >= MEMO_MAX:
            self._lpm.clear()
        self._lpm[(prefix, length)] = match
        return match


def _action_head(length: int) -> bytes:
    """What precedes an Action message of ``length`` bytes in a TableEntry:
    the ``action`` field's tag and length, then the TableAction's."""
    inner = _TABLE_ACTION_ACTION + wire.varint(length)
    return _ENTRY_ACTION + wire.varint(len(inner) + length) + inner


_ACTION_HEADS = [_action_head(n) for n in range(1 << 10)]  # (exact entries' actions are short)


def _action_field(action: bytes) -> bytes:
    n = len(action)
    return (_ACTION_HEADS[n] if n < len(_ACTION_HEADS) else _action_head(n)) + action


def _assembler(
    matches: int, entry_head: bytes, action_head: bytes, memos: list[_FieldMemo]
) -> Callable[..., Encoded]:
    """The function that assembles one entry from its values: unrolled for
    the shapes the per-VM entries have (a loop over the fields costs more
    than the assembly itself), a loop for any other."""

    def done(entry: bytes, action: bytes) -> Encoded:
        # (the key: the entry without its action; stored: the action)
        return TABLE + entry, shared_tail(_action_field(action))

    shape = (matches, len(memos) - matches)
    if shape == (1, 2):
        m0, p0, p1 = memos

        def one_two(a: Value, b: Value, c: Value) -> Encoded:
            return done(entry_head + m0[a], action_head + p0[b] + p1[c])

        return one_two
    if shape == (2, 1):
        m0, m1, p0 = memos

        def two_one(a: Value, b: Value, c: Value) -> Encoded:
            return done(entry_head + m0[a] + m1[b], action_head + p0[c])

        return two_one
    if shape == (2, 2):
        m0, m1, p0, p1 = memos

        def two_two(a: Value, b: Value, c: Value, d: Value) -> Encoded:
            return done(entry_head + m0[a] + m1[b], action_head + p0[c] + p1[d])

        return two_two
    if shape == (2, 3):
        m0, m1, p0, p1, p2 = memos

        def two_three(a: Value, b: Value, c: Value, d: Value, e: Value) -> Encoded:
            return done(entry_head + m0[a] + m1[b], action_head + p0[c] + p1[d] + p2[e])

        return two_three

    def any_shape(*values: Value) -> Encoded:
        if len(values) != len(memos):
            raise TypeError(f"{len(memos)} values expected, {len(values)} given")
        pieces = [memo[v] for memo, v in zip(memos, values, strict=True)]
        return done(
            entry_head + b"".join(pieces[:matches]), action_head + b"".join(pieces[matches:])
        )

    return any_shape


class _FieldMemo(dict[Value, bytes]):
    """value -> one match field or parameter serialized (heads and value),
    encoded on a miss and remembered, since the same MACs, IPs, VNIs and
    indices recur across entries and ToRs."""

    def __init__(self, bitwidth: int, prefixes: list[bytes]) -> None:
        super().__init__()
        self.bitwidth = bitwidth
        self.limit = 1 << bitwidth
        self.prefixes = prefixes

    def __missing__(self, value: Value) -> bytes:
        if len(self) >= MEMO_MAX:
            self.clear()
        if type(value) is int and 0 <= value < self.limit:  # (indices: most misses)
            raw = value.to_bytes((value.bit_length() + 7) // 8 or 1, "big")
        else:
            raw = codec.encode(value, self.bitwidth)
        data = self[value] = self.prefixes[len(raw)] + raw
        return data


class _Replicas(dict[tuple[int, int], bytes]):
    """(port, instance) -> that replica serialized as the ``replicas`` field
    of a MulticastGroupEntry, encoded on first use."""

    def __missing__(self, replica: tuple[int, int]) -> bytes:
        port, instance = replica
        one = p4runtime_pb2.Replica(egress_port=port, instance=instance)
        data = self[replica] = wire.wrap(_GROUP_REPLICAS, one.SerializeToString(deterministic=True))
        return data


class Encoder:
    def __init__(self, entries: PipelineEntries) -> None:
        self.entries = entries
        self._replicas = _Replicas()
        # Per-VM entities that are the same on every ToR, by their arguments.
        self._shared: dict[tuple[Value, ...], Encoded] = {}
        # Entries a unit's rebuild makes again unchanged (``kept``), by builder and arguments.
        self._kept: dict[tuple[str, tuple[Value, ...]], Encoded] = {}
        p4info = entries.p4info
        memos: dict[bytes, _FieldMemo] = {}  # (a VM's MAC or index in several entries)
        # (a routing pipeline binds each VM to its VNI's VRF too)
        binding = ("vni", "vm", "vm_mac") + (("vrf",) if entries.routing else ())
        # (a pipeline that knows committed frames says which VMs are policed)
        self.knows_policed = entries.knows_policed
        self.packet_too_big = entries.packet_too_big  # (route_to_local_vm_v6 checks the MTU)
        policed = ("policed",) if entries.knows_policed else ()
        binding += policed
        # (a pipeline with port security: the binding says whether the VM is
        # guarded and may serve DHCP; the source guards hold its addresses)
        self.port_security = entries.port_security
        self.ipv6_guard = entries.port_security and entries.ipv6_guard
        # (a pipeline with the flags but without the guards: written 0)
        self.guard_flags = entries.guard_flags
        if self.guard_flags:
            binding += ("guarded", "dhcp_server")
        # (BMv2: the VM's first IPv4 address, which skips the source guard)
        self.bound_ipv4 = entries.bound_ipv4
        if self.bound_ipv4:
            binding += ("ipv4",)
        if self.port_security:
            guard = ("port", "vlan_id")
            self._guard_v4 = LpmEntry(
                p4info, "ipv4_source_guard", guard, "ip", "source_allowed", memos
            )
            # (Tofino 1's profile has the IPv4 guard only: ipv6_guard_supported)
            self._guard_v6 = (
                LpmEntry(p4info, "ipv6_source_guard", guard, "ip", "source_allowed", memos)
                if entries.ipv6_guard
                else None
            )
            self._source_mac = ExactEntry(
                p4info,
                "allowed_source_mac",
                ("port", "vlan_id", "mac"),
                "mac_allowed",
                (),
                memos,
            )
        self._binding = ExactEntry(
            p4info, "access_binding", ("port", "vlan_id"), "bind_vm", binding, memos
        )
        self._to_local = ExactEntry(
            p4info,
            "mac_table",
            ("vni", "dst_mac"),
            "to_local_vm",
            ("port", "vlan_id", "vm") + policed,
            memos,
        )
        self._to_remote = ExactEntry(
            p4info, "mac_table", ("vni", "dst_mac"), "to_remote_vtep", ("vtep_ip",), memos
        )
        self._replica_to_vm = ExactEntry(
            p4info,
            "flood_replica",
            ("replica_id",),
            "replicate_to_vm",
            ("vlan_id", "vm") + policed,
            memos,
        )
        self._arp = ExactEntry(
            p4info, "arp_suppression", ("vni", "target_ip"), "reply", ("target_mac",), memos
        )
        # IPv6 (a pipeline with the IPv6 tables; the model refuses IPv6
        # addresses otherwise): ND answers as ARP does, with the router flag.
        if p4info.has_table("nd_suppression"):
            self._nd = ExactEntry(
                p4info,
                "nd_suppression",
                ("vni", "target_ip"),
                "nd_reply",
                ("target_mac", "router"),
                memos,
            )
        if entries.routing:  # (host routes: one per routed VM and ToR of its VRF)
            local_params = ("port", "vlan_id", "vm", "vni_index", "vm_mac") + policed
            remote_params = ("vtep_ip", "router_mac", "l3vni")
            key = ("vrf", "dst_ip")
            self._route_local = ExactEntry(
                p4info, "host_route", key, "route_to_local_vm", local_params, memos
            )
            self._route_remote = ExactEntry(
                p4info, "host_route", key, "route_to_remote_vtep", remote_params, memos
            )
            if p4info.has_table("ipv6_host_route"):  # (the twin table, actions named _v6)
                # (its local hop also takes the VNI's MTU: too_big_payload_len)
                too_big = (TOO_BIG_PAYLOAD_LEN,) if entries.packet_too_big else ()
                local_v6 = local_params + too_big
                self._route_local_v6 = ExactEntry(
                    p4info, "ipv6_host_route", key, "route_to_local_vm_v6", local_v6, memos
                )
                self._route_remote_v6 = ExactEntry(
                    p4info, "ipv6_host_route", key, "route_to_remote_vtep_v6", remote_params, memos
                )

    @staticmethod
    def of(message: Message) -> Encoded:
        return encoded(to_entity(message))

    def kept(self, build: Callable[..., Message], *args: Value) -> Encoded:
        """``build(*args)`` (a builder of ``self.entries``) encoded, and kept by
        its arguments: for the entries a unit's rebuild makes again unchanged
        (a VNI's parameters, its gateway's), which encoding through protobuf
        on every rebuild made most of a small VNI's pass."""
        key = (build.__name__, args)
        item = self._kept.get(key)
        if item is None:
            if len(self._kept) >= MEMO_MAX:
                self._kept.clear()
            item = self._kept[key] = self.of(build(*args))
        return item

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
    def vni_config(self, vni: int, vni_index: int, traffic_class: int, group: int) -> Encoded:
        return self.kept(self.entries.vni_config, vni, vni_index, traffic_class, group)

    def flood_group_of(self, group_id: int, replicas: Iterable[bytes]) -> Encoded:
        """A group from its copies already encoded (``replica``) and in
        (port, instance) order. A VNI's group holds a copy per VM, so each
        copy is encoded once and the group is their concatenation after the
        group id (a repeated field on the wire is its elements one after
        another), with no protobuf object built."""
        head = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=group_id).SerializeToString()
        entity = wire.wrap(_ENTITY_PRE, wire.wrap(_PRE_MULTICAST, head + b"".join(replicas)))
        return MULTICAST + b"%d" % group_id, entity

    def replica(self, copy: tuple[int, int]) -> bytes:
        """One (port, instance) copy as a group's ``replicas`` field."""
        return self._replicas[copy]

    def replica_to_vtep(self, replica_id: int, vtep_ip: Value, next_hop_mac: Value) -> Encoded:
        return self.of(self.entries.replica_to_vtep(replica_id, vtep_ip, next_hop_mac))

    # --- VMs ------------------------------------------------------------------
    def _flag(self, policed: bool) -> tuple[int, ...]:
        return (int(policed),) if self.knows_policed else ()

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
    ) -> Encoded:
        """``guarded``, ``dhcp_server``: the VM's port security (docs/security.md),
        left out on a pipeline without it (which cannot hold them); ``ipv4``:
        the VM's first IPv4 address (0: none), where the binding takes it."""
        flag: tuple[Value, ...] = self._flag(policed)
        if self.guard_flags:
            # (0 where the pipeline has no guards: nothing would enforce them)
            flag += (int(guarded and self.port_security), int(dhcp_server and self.port_security))
        if self.bound_ipv4:
            flag += (ipv4,)
        if self.entries.routing:
            return self._binding(port, vlan_id, vni, vm_index, vm_mac, vrf, *flag)
        if vrf:
            raise ValueError(f"VNI {vni}: this pipeline does not route (no VRF {vrf})")
        return self._binding(port, vlan_id, vni, vm_index, vm_mac, *flag)

    def source_guard(self, port: int, vlan_id: int, prefix: Value, prefix_len: int) -> Encoded:
        """A prefix a guarded VM may claim as its source, in the source
        guard of its family (``entries.is_ipv6``)."""
        if not is_ipv6(prefix):
            return self._guard_v4(port, vlan_id, prefix, prefix_len)
        if self._guard_v6 is None:
            raise no_ipv6_guard(prefix, prefix_len)
        return self._guard_v6(port, vlan_id, prefix, prefix_len)

    def allowed_source_mac(self, port: int, vlan_id: int, mac: Value) -> Encoded:
        """An extra source MAC the VM on (port, VLAN) may send from."""
        return self._source_mac(port, vlan_id, mac)

    def mac_to_local_vm(
        self, vni: int, mac: Value, port: int, vlan_id: int, vm_index: int, policed: bool = False
    ) -> Encoded:
        return self._to_local(vni, mac, port, vlan_id, vm_index, *self._flag(policed))

    def replica_to_vm(
        self, replica_id: int, vlan_id: int, vm_index: int, policed: bool = False
    ) -> Encoded:
        return self._replica_to_vm(replica_id, vlan_id, vm_index, *self._flag(policed))

    def neighbour(self, vni: int, ip: Value, mac: Value, router: bool = False) -> Encoded:
        """What answers for ``ip`` in ``vni`` with ``mac``, by its family:
        ARP suppression, or ND suppression (``router``: the gateway's
        address, the advert's R flag; ARP has none)."""
        # The same entity on every ToR hosting the VNI: encoded once, and
        # each ToR's state holds the same bytes (memory scales with VMs).
        # The family is looked at on a miss only: a hit costs as IPv4 did.
        args = (vni, ip, mac, router)
        item = self._shared.get(args)
        if item is None:
            built = self._nd(vni, ip, mac, int(router)) if is_ipv6(ip) else self._arp(vni, ip, mac)
            item = self._share(args, built)
        return item

    def mac_to_remote_vtep(self, vni: int, mac: Value, vtep_ip: Value) -> Encoded:
        args = (vni, mac, vtep_ip)  # (a different arity from the ARP and ND entries')
        item = self._shared.get(args)
        if item is None:
            item = self._share(args, self._to_remote(vni, mac, vtep_ip))
        return item

    def host_route(self, vrf: int, ip: Value, hop: RouteHop) -> Encoded:
        """In the host table of ``ip``'s family (``entries.is_ipv6``)."""
        if isinstance(hop, LocalVmHop):
            vm: tuple[Value, ...] = (hop.port, hop.vlan_id, hop.vm_index, hop.vni_index, hop.vm_mac)
            vm += self._flag(hop.policed)
            if is_ipv6(ip):
                # (where the pipeline checks the VNI's MTU: Packet Too Big)
                mtu = (too_big_payload_len(hop.mtu),) if self.packet_too_big else ()
                return self._route_local_v6(vrf, ip, *vm, *mtu)
            return self._route_local(vrf, ip, *vm)
        # To another ToR: the same entity on every ToR but the VM's own.
        args = ("host_route", vrf, ip, hop.vtep_ip, hop.router_mac, hop.l3vni)
        item = self._shared.get(args)
        if item is None:
            remote = self._route_remote_v6 if is_ipv6(ip) else self._route_remote
            item = self._share(args, remote(vrf, ip, hop.vtep_ip, hop.router_mac, hop.l3vni))
        return item

    def remote_host_routes(
        self, vrf: int, routes: Iterable[tuple[str, str, str, int]]
    ) -> list[Encoded]:
        """``host_route(vrf, ip, RemoteVtepHop(vtep_ip, router_mac, l3vni))``
        for each (ip, vtep_ip, router_mac, l3vni), in order: the same
        entities, shared with the other ToRs the same way, in one call (a
        commit of a peer's burst encodes thousands; no hop object is made
        per route)."""
        shared = self._shared
        v4 = self._route_remote
        out: list[Encoded] = []
        for ip, vtep, router_mac, l3vni in routes:
            args = ("host_route", vrf, ip, vtep, router_mac, l3vni)
            item = shared.get(args)
            if item is None:
                remote = self._route_remote_v6 if ":" in ip else v4
                if len(shared) >= SHARED_MAX:
                    shared.clear()
                item = shared[args] = remote(vrf, ip, vtep, router_mac, l3vni)
            out.append(item)
        return out

    def _share(self, args: tuple[Value, ...], item: Encoded) -> Encoded:
        if len(self._shared) >= SHARED_MAX:
            self._shared.clear()
        self._shared[args] = item
        return item

    def vm_meter(self, direction: str, vm_index: int, rates: Rates) -> Encoded:
        return self.of(self.entries.vm_meter(direction, vm_index, rates))

    def policy_meters(self, direction: str, vm_index: int, rates: Rates) -> list[Encoded]:
        return [self.of(m) for m in self.entries.policy_meters(direction, vm_index, rates)]
