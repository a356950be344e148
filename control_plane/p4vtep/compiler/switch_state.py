"""What a switch holds, as the compiler builds it and the reader reads it.

Every entity is kept encoded once: its identity (``Key``, bytes) maps to its
serialized ``p4.v1.Entity`` in its stored form (below). Table entries,
action profile members and groups and multicast groups are written with
INSERT/MODIFY/DELETE; meter configs and keyless tables' default entries
exist always and are only MODIFYed, so they are kept apart.

The stored form (issue 40: a controller keeps about a million of these for
100,000 VMs). A table entry's key is its TableEntry's table id and matches
(and priority), serialized; its entity, serialized, is the same bytes with
what it does after them (its action), wrapped as an Entity. So a table
entry is stored as that tail alone (``compact``), which many entries share
(every source guard entry's is the same: its action has no parameter), and
made whole again from its key when it is written or read (``expand``).
Invariants: a stored tail never starts with the byte a whole table entity
starts with (``_TABLE_ENTITY``), so a stored form says which it is; an
entity whose bytes do not extend its key (an entry with a priority, whose
priority field comes after the action) is stored whole; every other kind is
stored whole. ``compact`` is a function of the whole bytes, so two stored
forms of one key are equal exactly when the entities' bytes are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runtime import wire
from ..runtime.protos import p4runtime_pb2

Key = bytes  # what identifies an entity on the switch (not what it does)
Encoded = tuple[Key, bytes]  # (identity, stored form: ``compact``)

# First byte of a key: the entity kind, in write order (deletes go in reverse).
MEMBER, GROUP, MULTICAST, TABLE, METER, DEFAULT = b"0", b"1", b"2", b"3", b"4", b"5"
_KIND_OF_FIELD = {
    "action_profile_member": MEMBER,
    "action_profile_group": GROUP,
    "packet_replication_engine_entry": MULTICAST,
    "table_entry": TABLE,
    "meter_entry": METER,
}


def identity(entity: p4runtime_pb2.Entity) -> Key:
    """The key of an entity built here or read back from a switch."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        te = entity.table_entry
        ident = p4runtime_pb2.TableEntry(
            table_id=te.table_id, priority=te.priority, is_default_action=te.is_default_action
        )
        ident.match.extend(sorted(te.match, key=lambda f: f.field_id))
        prefix = DEFAULT if te.is_default_action else TABLE
        return prefix + ident.SerializeToString(deterministic=True)
    if kind == "action_profile_member":
        m = entity.action_profile_member
        return MEMBER + b"%d/%d" % (m.action_profile_id, m.member_id)
    if kind == "action_profile_group":
        g = entity.action_profile_group
        return GROUP + b"%d/%d" % (g.action_profile_id, g.group_id)
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.WhichOneof("type") != "multicast_group_entry":
            raise ValueError("only multicast groups are managed")
        return MULTICAST + b"%d" % pre.multicast_group_entry.multicast_group_id
    if kind == "meter_entry":
        return METER + b"%d/%d" % (entity.meter_entry.meter_id, entity.meter_entry.index.index)
    raise ValueError(f"no key for entity kind {kind!r}")


_TABLE_ENTITY = wire.tag(p4runtime_pb2.Entity, "table_entry")
_TABLE_KIND = TABLE[0]

# Tails by value, so that equal tails are one object. Bounded like the
# encoder's memos (cleared when full): the tails many entries share recur
# at once and are taken again; a VM's own stay with its entries.
_TAILS: dict[bytes, bytes] = {}
TAILS_MAX = 1 << 13


def shared_tail(tail: bytes) -> bytes:
    """The one object kept for a table entry's tail of these bytes."""
    kept = _TAILS.get(tail)
    if kept is None:
        if len(_TAILS) >= TAILS_MAX:
            _TAILS.clear()
        kept = _TAILS[tail] = tail
    return kept


def compact(key: Key, whole: bytes) -> bytes:
    """The stored form of an entity whose serialized bytes are ``whole``."""
    if key[0] != _TABLE_KIND or not whole.startswith(_TABLE_ENTITY):
        return whole
    start = len(_TABLE_ENTITY)
    while whole[start] & 0x80:  # (past the TableEntry's length, a varint)
        start += 1
    start += 1
    if not whole.startswith(key[1:], start):
        return whole
    tail = whole[start + len(key) - 1 :]
    if tail.startswith(_TABLE_ENTITY):
        return whole
    return shared_tail(tail)


def expand(key: Key, stored: bytes) -> bytes:
    """An entity's serialized bytes from its key and stored form."""
    if key[0] != _TABLE_KIND or stored.startswith(_TABLE_ENTITY):
        return stored
    return wire.wrap(_TABLE_ENTITY, key[1:] + stored)


def encoded(entity: p4runtime_pb2.Entity) -> Encoded:
    key = identity(entity)
    return key, compact(key, entity.SerializeToString(deterministic=True))


@dataclass
class SwitchState:
    """Entities by identity, each serialized once: what one switch holds or
    must hold. Meter configs and default entries can only be modified."""

    entities: dict[Key, bytes] = field(default_factory=dict)
    meters: dict[Key, bytes] = field(default_factory=dict)
    defaults: dict[Key, bytes] = field(default_factory=dict)

    def bucket(self, key: Key) -> dict[Key, bytes]:
        """The dict a key belongs in."""
        first = key[:1]
        if first == METER:
            return self.meters
        if first == DEFAULT:
            return self.defaults
        return self.entities

    def add(self, item: Encoded) -> None:
        key, data = item
        self.bucket(key)[key] = data

    def get(self, key: Key) -> bytes | None:
        return self.bucket(key).get(key)

    def put(self, key: Key, data: bytes | None) -> None:
        if data is None:
            self.bucket(key).pop(key, None)
        else:
            self.bucket(key)[key] = data

    def copy(self) -> SwitchState:
        return SwitchState(dict(self.entities), dict(self.meters), dict(self.defaults))

    def __len__(self) -> int:
        return len(self.entities) + len(self.meters) + len(self.defaults)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SwitchState):
            return NotImplemented
        return (
            self.entities == other.entities
            and self.meters == other.meters
            and self.defaults == other.defaults
        )

    def entity(self, key: Key) -> p4runtime_pb2.Entity:
        """The decoded entity (for reading; the state keeps bytes)."""
        data = self.get(key)
        if data is None:
            raise KeyError(key)
        return p4runtime_pb2.Entity.FromString(expand(key, data))
