"""Builders for P4Runtime entities, encoded from names through the P4Info.

Values are canonical byte strings (see ``codec``), so an entity built here
compares equal to the same entity read back from the switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import codec
from .p4info import P4Info, P4InfoError
from .protos import p4info_pb2, p4runtime_pb2


@dataclass(frozen=True)
class Lpm:
    value: codec.Value
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: codec.Value
    mask: codec.Value


MatchValue = codec.Value | Lpm | Ternary
MatchType = p4info_pb2.MatchField.MatchType


def _match(p4info: P4Info, table_id: int, name: str, value: MatchValue) -> p4runtime_pb2.FieldMatch:
    info = p4info.match_field(table_id, name)
    field = p4runtime_pb2.FieldMatch(field_id=info.id)
    try:
        if info.match_type == MatchType.EXACT:
            if isinstance(value, (Lpm, Ternary)):
                raise codec.EncodingError("exact match needs a plain value")
            field.exact.value = codec.encode(value, info.bitwidth)
        elif info.match_type == MatchType.LPM:
            if isinstance(value, Ternary):
                raise codec.EncodingError("LPM match needs a value or Lpm(value, prefix_len)")
            if not isinstance(value, Lpm):
                value = Lpm(value, info.bitwidth)
            if not 0 < value.prefix_len <= info.bitwidth:
                raise codec.EncodingError(f"prefix length {value.prefix_len} out of range")
            number = codec.to_int(value.value, info.bitwidth)
            # P4Runtime requires the bits beyond the prefix to be zero.
            number &= ((1 << value.prefix_len) - 1) << (info.bitwidth - value.prefix_len)
            field.lpm.value = codec.encode(number, info.bitwidth)
            field.lpm.prefix_len = value.prefix_len
        elif info.match_type == MatchType.TERNARY:
            if not isinstance(value, Ternary):
                raise codec.EncodingError("ternary match needs Ternary(value, mask)")
            mask = codec.to_int(value.mask, info.bitwidth)
            field.ternary.value = codec.encode(
                codec.to_int(value.value, info.bitwidth) & mask, info.bitwidth
            )
            field.ternary.mask = codec.encode(mask, info.bitwidth)
        else:
            raise codec.EncodingError(f"match type {info.match_type} not supported")
    except codec.EncodingError as exc:
        raise codec.EncodingError(f"{p4info.alias_of(table_id)}.{name}: {exc}") from None
    return field


def action(
    p4info: P4Info, name: str, params: Mapping[str, codec.Value] | None = None
) -> p4runtime_pb2.Action:
    info = p4info.action(name)
    message = p4runtime_pb2.Action(action_id=info.preamble.id)
    given = dict(params or {})
    for param in p4info.params(info.preamble.id):
        if param.name not in given:
            raise codec.EncodingError(f"action {name!r} needs parameter {param.name!r}")
        try:
            value = codec.encode(given.pop(param.name), param.bitwidth)
        except codec.EncodingError as exc:
            raise codec.EncodingError(f"{name}.{param.name}: {exc}") from None
        message.params.add(param_id=param.id, value=value)
    if given:
        raise P4InfoError(f"action {name!r} has no parameter(s) {sorted(given)}")
    return message


def table_entry(
    p4info: P4Info,
    table: str,
    match: Mapping[str, MatchValue] | None = None,
    action_name: str | None = None,
    params: Mapping[str, codec.Value] | None = None,
    *,
    priority: int = 0,
    member_id: int | None = None,
    group_id: int | None = None,
    is_default: bool = False,
) -> p4runtime_pb2.TableEntry:
    table_id = p4info.table(table).preamble.id
    entry = p4runtime_pb2.TableEntry(
        table_id=table_id, priority=priority, is_default_action=is_default
    )
    # Fields are sorted by id so that equal entries serialise identically.
    fields = [_match(p4info, table_id, name, value) for name, value in (match or {}).items()]
    entry.match.extend(sorted(fields, key=lambda f: f.field_id))
    if action_name is not None:
        entry.action.action.CopyFrom(action(p4info, action_name, params))
    elif member_id is not None:
        entry.action.action_profile_member_id = member_id
    elif group_id is not None:
        entry.action.action_profile_group_id = group_id
    return entry


def action_profile_member(
    p4info: P4Info,
    profile: str,
    member_id: int,
    action_name: str,
    params: Mapping[str, codec.Value] | None = None,
) -> p4runtime_pb2.ActionProfileMember:
    return p4runtime_pb2.ActionProfileMember(
        action_profile_id=p4info.action_profile(profile).preamble.id,
        member_id=member_id,
        action=action(p4info, action_name, params),
    )


def action_profile_group(
    p4info: P4Info, profile: str, group_id: int, member_ids: Iterable[int], max_size: int = 0
) -> p4runtime_pb2.ActionProfileGroup:
    group = p4runtime_pb2.ActionProfileGroup(
        action_profile_id=p4info.action_profile(profile).preamble.id,
        group_id=group_id,
        max_size=max_size,
    )
    for member_id in sorted(member_ids):
        group.members.add(member_id=member_id, weight=1)
    return group


def multicast_group(
    group_id: int, replicas: Iterable[tuple[int, int]]
) -> p4runtime_pb2.PacketReplicationEngineEntry:
    """``replicas``: (egress port, instance/replica id) pairs."""
    entry = p4runtime_pb2.PacketReplicationEngineEntry()
    entry.multicast_group_entry.multicast_group_id = group_id
    for port, instance in sorted(replicas):
        entry.multicast_group_entry.replicas.add(egress_port=port, instance=instance)
    return entry


def meter_entry(
    p4info: P4Info, meter: str, index: int, *, cir: int, cburst: int, pir: int, pburst: int
) -> p4runtime_pb2.MeterEntry:
    entry = p4runtime_pb2.MeterEntry(meter_id=p4info.meter(meter).preamble.id)
    entry.index.index = index
    entry.config.cir = cir
    entry.config.cburst = cburst
    entry.config.pir = pir
    entry.config.pburst = pburst
    return entry


def counter_entry(
    p4info: P4Info, counter: str, index: int | None = None
) -> p4runtime_pb2.CounterEntry:
    entry = p4runtime_pb2.CounterEntry(counter_id=p4info.counter(counter).preamble.id)
    if index is not None:
        entry.index.index = index
    return entry


def direct_counter_entry(
    table_entry_: p4runtime_pb2.TableEntry,
) -> p4runtime_pb2.DirectCounterEntry:
    entry = p4runtime_pb2.DirectCounterEntry()
    entry.table_entry.CopyFrom(table_entry_)
    return entry


_ENTITY_FIELD = {
    p4runtime_pb2.TableEntry: "table_entry",
    p4runtime_pb2.ActionProfileMember: "action_profile_member",
    p4runtime_pb2.ActionProfileGroup: "action_profile_group",
    p4runtime_pb2.PacketReplicationEngineEntry: "packet_replication_engine_entry",
    p4runtime_pb2.MeterEntry: "meter_entry",
    p4runtime_pb2.CounterEntry: "counter_entry",
    p4runtime_pb2.DirectCounterEntry: "direct_counter_entry",
}


# Anything ``to_entity`` wraps.
EntityMessage = (
    p4runtime_pb2.Entity
    | p4runtime_pb2.TableEntry
    | p4runtime_pb2.ActionProfileMember
    | p4runtime_pb2.ActionProfileGroup
    | p4runtime_pb2.PacketReplicationEngineEntry
    | p4runtime_pb2.MeterEntry
    | p4runtime_pb2.CounterEntry
    | p4runtime_pb2.DirectCounterEntry
)


def to_entity(message: EntityMessage) -> p4runtime_pb2.Entity:
    if isinstance(message, p4runtime_pb2.Entity):
        return message
    entity = p4runtime_pb2.Entity()
    getattr(entity, _ENTITY_FIELD[type(message)]).CopyFrom(message)
    return entity
