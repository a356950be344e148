"""What a switch holds, as the compiler builds it and the reader reads it.

Every entity is kept encoded once: its identity (``Key``, bytes) maps to its
serialized ``p4.v1.Entity``. Table entries, action profile members and groups
and multicast groups are written with INSERT/MODIFY/DELETE; meter configs and
keyless tables' default entries exist always and are only MODIFYed, so they
are kept apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runtime.protos import p4runtime_pb2

Key = bytes  # what identifies an entity on the switch (not what it does)
Encoded = tuple[Key, bytes]  # (identity, serialized Entity)

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


def encoded(entity: p4runtime_pb2.Entity) -> Encoded:
    return identity(entity), entity.SerializeToString(deterministic=True)


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
        return p4runtime_pb2.Entity.FromString(data)
