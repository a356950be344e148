"""One line per P4Runtime entity, for people: errors, logs, blame messages.

    mac_table{vni=5000, dst_mac=00:00:0a:00:00:01} -> forward_local(port=1, vlan_id=10)

Names come from the P4Info when one is given (ids otherwise); values are
shown the way an operator writes them: 48-bit fields as MACs, 32- and
128-bit addresses (and LPM prefixes) as IPv4 and IPv6, the rest as integers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from . import codec
from .p4info import P4Info
from .protos import p4runtime_pb2

# A value of a field whose name says it is an address is shown as one.
_ADDRESS_WORDS = ("ip", "addr")


def value(raw: bytes, bitwidth: int, name: str = "", address: bool = False) -> str:
    """``raw`` (canonical P4Runtime bytes) as an operator would write it;
    ``address``: an IP address whatever its name (an LPM key is a prefix)."""
    number = codec.decode(raw)
    if bitwidth == 48:
        return codec.int_to_mac(number)
    words = name.lower()
    if address or any(word in words for word in _ADDRESS_WORDS):
        if bitwidth == 32:
            return str(ipaddress.IPv4Address(number))
        if bitwidth == 128:
            return str(ipaddress.IPv6Address(number))
    return str(number)


def _field_match(field: p4runtime_pb2.FieldMatch, table_id: int, p4info: P4Info | None) -> str:
    name, width = f"field{field.field_id}", 0
    if p4info is not None:
        try:
            info = p4info.match_field_by_id(table_id, field.field_id)
            name, width = info.name, info.bitwidth
        except KeyError:
            pass
    kind = field.WhichOneof("field_match_type")
    if kind == "exact":
        return f"{name}={value(field.exact.value, width, name)}"
    if kind == "lpm":
        shown = value(field.lpm.value, width, name, address=True)
        return f"{name}={shown}/{field.lpm.prefix_len}"
    if kind == "ternary":
        shown, mask = value(field.ternary.value, width, name), codec.decode(field.ternary.mask)
        return f"{name}={shown}&&&{mask:#x}"
    if kind == "range":
        low, high = codec.decode(field.range.low), codec.decode(field.range.high)
        return f"{name}={low}..{high}"
    if kind == "optional":
        return f"{name}={value(field.optional.value, width, name)}"
    return f"{name}=?"


def _name(object_id: int, p4info: P4Info | None, kind: str) -> str:
    if p4info is not None:
        try:
            return p4info.alias_of(object_id)
        except KeyError:
            pass
    return f"{kind}#{object_id}"


def action(message: p4runtime_pb2.Action, p4info: P4Info | None = None) -> str:
    """``name(param=value, ...)``."""
    params = []
    for param in message.params:
        name, width = f"param{param.param_id}", 0
        if p4info is not None:
            try:
                info = p4info.param_by_id(message.action_id, param.param_id)
                name, width = info.name, info.bitwidth
            except KeyError:
                pass
        params.append(f"{name}={value(param.value, width, name)}")
    return f"{_name(message.action_id, p4info, 'action')}({', '.join(params)})"


def _table_entry(entry: p4runtime_pb2.TableEntry, p4info: P4Info | None) -> str:
    table = _name(entry.table_id, p4info, "table")
    if entry.is_default_action:
        key = "default"
    else:
        key = ", ".join(_field_match(f, entry.table_id, p4info) for f in entry.match)
    priority = f" priority {entry.priority}" if entry.priority else ""
    text = f"{table}{{{key}}}{priority}"
    which = entry.action.WhichOneof("type")
    if which == "action":
        return f"{text} -> {action(entry.action.action, p4info)}"
    if which == "action_profile_member_id":
        return f"{text} -> member {entry.action.action_profile_member_id}"
    if which == "action_profile_group_id":
        return f"{text} -> group {entry.action.action_profile_group_id}"
    return text


def _listed(items: Sequence[str], most: int = 8) -> str:
    more = f", +{len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more


def describe(entity: p4runtime_pb2.Entity, p4info: P4Info | None = None) -> str:
    """``entity`` on one line, e.g. ``table{key=value,...} -> action(params)``."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return _table_entry(entity.table_entry, p4info)
    if kind == "action_profile_member":
        member = entity.action_profile_member
        profile = _name(member.action_profile_id, p4info, "action_profile")
        return f"{profile} member {member.member_id} -> {action(member.action, p4info)}"
    if kind == "action_profile_group":
        group = entity.action_profile_group
        profile = _name(group.action_profile_id, p4info, "action_profile")
        members = _listed([str(m.member_id) for m in group.members])
        return f"{profile} group {group.group_id} {{members {members}}}"
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.WhichOneof("type") == "clone_session_entry":
            session = pre.clone_session_entry
            replicas = [f"port {r.egress_port}" for r in session.replicas]
            return f"clone session {session.session_id} {{{_listed(replicas)}}}"
        mc = pre.multicast_group_entry
        replicas = [f"port {r.egress_port}/{r.instance}" for r in mc.replicas]
        return f"multicast group {mc.multicast_group_id} {{{_listed(replicas)}}}"
    if kind == "meter_entry":
        meter = entity.meter_entry
        where = f"{_name(meter.meter_id, p4info, 'meter')}[{meter.index.index}]"
        if not meter.HasField("config"):
            return f"{where} (unmetered)"
        c = meter.config
        return f"{where} {{cir={c.cir}, cburst={c.cburst}, pir={c.pir}, pburst={c.pburst}}}"
    if kind == "counter_entry":
        counter = entity.counter_entry
        return f"{_name(counter.counter_id, p4info, 'counter')}[{counter.index.index}]"
    if kind == "direct_counter_entry":
        return f"counter of {_table_entry(entity.direct_counter_entry.table_entry, p4info)}"
    return kind or "empty entity"
