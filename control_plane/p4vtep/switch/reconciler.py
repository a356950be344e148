"""Make one switch hold exactly the desired state, writing only the
difference.

Full pass: read everything the pipeline's tables, selector, multicast groups
and meters hold; compare with the desired state by identity and content;
write inserts and modifies in dependency order (members, groups, multicast
groups, table entries) and deletes in the reverse order. Steady state writes
nothing. Change pass: the compiler says which entities changed and what the
switch held before; only those are written, no read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..compiler.switch_state import DEFAULT, METER, Key, SwitchState, encoded, expand
from ..runtime import wire
from ..runtime.client import DELETE, INSERT, MODIFY, SwitchConnection, Update, WriteError
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2

log = logging.getLogger(__name__)

Item = tuple[Key, bytes]  # (identity, stored form: switch_state.compact)


@dataclass
class Diff:
    inserts: list[Item] = field(default_factory=list)
    modifies: list[Item] = field(default_factory=list)
    deletes: list[Item] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.inserts) + len(self.modifies) + len(self.deletes)

    def updates(self) -> list[p4runtime_pb2.Update]:
        """Deletes (dependents first), then inserts, then modifies (in
        dependency order); the key's first byte is the entity kind's rank."""

        def rank(item: Item) -> bytes:
            return item[0][:1]

        return [Update.FromString(u) for u in self.serialized_updates()]

    def serialized_updates(self) -> list[bytes]:
        """The same updates, each a serialized ``p4.v1.Update`` assembled
        from the stored entity bytes (no parse; a table entry made whole
        from its key: ``expand``): what the writer sends."""

        def rank(item: Item) -> bytes:
            return item[0][:1]

        out = []
        for kind, items, last_first in (
            (DELETE, self.deletes, True),
            (INSERT, self.inserts, False),
            (MODIFY, self.modifies, False),
        ):
            ordered = [expand(k, data) for k, data in sorted(items, key=rank, reverse=last_first)]
            out += wire.wrap_all(_UPDATE_ENTITY, ordered, prefix=_UPDATE_HEADS[kind])
        return out


_UPDATE_HEADS = {kind: Update(type=kind).SerializeToString() for kind in (INSERT, MODIFY, DELETE)}
_UPDATE_ENTITY = wire.tag(Update, "entity")


def _content(entity: p4runtime_pb2.Entity) -> bytes:
    """What an entity does, in a form equal for equal behaviour."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return entity.table_entry.action.SerializeToString(deterministic=True)
    if kind == "action_profile_member":
        return entity.action_profile_member.action.SerializeToString(deterministic=True)
    if kind == "action_profile_group":
        group = entity.action_profile_group
        return repr(sorted((m.member_id, m.weight or 1) for m in group.members)).encode()
    if kind == "packet_replication_engine_entry":
        mc = entity.packet_replication_engine_entry.multicast_group_entry
        return repr(sorted((r.egress_port, r.instance) for r in mc.replicas)).encode()
    if kind == "meter_entry":
        return entity.meter_entry.config.SerializeToString(deterministic=True)
    raise ValueError(kind)


def same(key: Key, a: bytes, b: bytes) -> bool:
    """Do two stored forms of ``key``'s entity do the same (byte-equal is
    the common case)?"""
    if a == b:
        return True
    parse = p4runtime_pb2.Entity.FromString
    return _content(parse(expand(key, a))) == _content(parse(expand(key, b)))


def meter_reset(data: bytes) -> bytes:
    """The meter entry back to its default (no config)."""
    entity = p4runtime_pb2.Entity.FromString(data)
    entity.meter_entry.ClearField("config")
    return entity.SerializeToString(deterministic=True)


def diff(desired: SwitchState, actual: SwitchState) -> Diff:
    result = Diff()
    _additions(desired, actual, result)
    _removals(desired, actual, result)
    return result


def _additions(desired: SwitchState, actual: SwitchState, result: Diff) -> None:
    """What ``desired`` has that ``actual`` lacks or holds differently."""
    if not actual.entities:  # (an empty switch: everything is new)
        result.inserts += desired.entities.items()
    else:
        for key, data in desired.entities.items():
            have = actual.entities.get(key)
            if have is None:
                result.inserts.append((key, data))
            elif not same(key, have, data):
                result.modifies.append((key, data))
    # Meters: configured ones must match.
    for key, data in desired.meters.items():
        have = actual.meters.get(key)
        if have is None or not same(key, have, data):
            result.modifies.append((key, data))
    for key, data in desired.defaults.items():
        have = actual.defaults.get(key)
        if have is None or not same(key, have, data):
            result.modifies.append((key, data))


def _removals(desired: SwitchState, actual: SwitchState, result: Diff) -> None:
    """What ``actual`` holds that ``desired`` does not want: entities are
    deleted, meters we no longer want are reset."""
    for key, data in actual.entities.items():
        if key not in desired.entities:
            result.deletes.append((key, data))
    for key, data in actual.meters.items():
        if key not in desired.meters:
            result.modifies.append((key, meter_reset(data)))


def changes_diff(changes: Iterable[tuple[Key, bytes | None, bytes | None]]) -> Diff:
    """The writes for entities that changed from ``old`` (what the switch
    holds) to ``new`` (None: absent)."""
    result = Diff()
    for key, old, new in changes:
        kind = key[:1]
        if kind in (METER, DEFAULT):
            if new is not None:
                result.modifies.append((key, new))
            elif kind == METER and old is not None:
                result.modifies.append((key, meter_reset(old)))
        elif new is None:
            if old is not None:
                result.deletes.append((key, old))
        elif old is None:
            result.inserts.append((key, new))
        else:
            result.modifies.append((key, new))
    return result


def _normalise_read(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Entity:
    """Drop read-only decorations the switch adds (counter data, meter config
    of direct resources) so that identity and content compare cleanly."""
    if entity.WhichOneof("entity") == "table_entry":
        te = entity.table_entry
        te.ClearField("counter_data")
        te.ClearField("meter_config")
        te.ClearField("time_since_last_hit")
    return entity


class SwitchReader:
    """Reads the state one switch holds for the p4vtep pipeline."""

    def __init__(self, p4info: P4Info, managed_meters: tuple[str, ...] | None = None) -> None:
        """``managed_meters``: the meter arrays to read (None: every one the
        P4Info has: the per-VM policing meters)."""
        self.p4info = p4info
        if managed_meters is None:
            managed_meters = tuple(m.preamble.alias for m in p4info.message.meters)
        self.managed_meters = managed_meters

    def read(self, conn: SwitchConnection) -> SwitchState:
        tables = self.p4info.message.tables
        requests = [
            p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=t.preamble.id))
            for t in tables
        ]
        for profile in self.p4info.message.action_profiles:
            pid = profile.preamble.id
            requests.append(
                p4runtime_pb2.Entity(
                    action_profile_member=p4runtime_pb2.ActionProfileMember(action_profile_id=pid)
                )
            )
            requests.append(
                p4runtime_pb2.Entity(
                    action_profile_group=p4runtime_pb2.ActionProfileGroup(action_profile_id=pid)
                )
            )
        pre = p4runtime_pb2.Entity()
        pre.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        requests.append(pre)
        state = SwitchState()
        for entity in conn.read(*requests):
            key, data = encoded(_normalise_read(entity))
            state.entities[key] = data
        for table in tables:
            if not table.match_fields:  # keyless: only a default action
                request = p4runtime_pb2.Entity(
                    table_entry=p4runtime_pb2.TableEntry(
                        table_id=table.preamble.id, is_default_action=True
                    )
                )
                for entity in conn.read(request):
                    key, data = encoded(_normalise_read(entity))
                    state.defaults[key] = data
        for name in self.managed_meters:
            request = p4runtime_pb2.Entity(
                meter_entry=p4runtime_pb2.MeterEntry(meter_id=self.p4info.meter(name).preamble.id)
            )
            for entity in conn.read(request):
                if entity.meter_entry.HasField("config"):
                    key, data = encoded(entity)
                    state.meters[key] = data
        return state


def write(
    conn: SwitchConnection, delta: Diff, before_batch: Callable[[], None] | None = None
) -> None:
    """``before_batch`` runs before each batch is sent and may raise to stop
    (a replica whose lease runs out stops writing)."""
    if delta:
        log.info(
            "%s: %d inserts, %d modifies, %d deletes",
            conn.address,
            len(delta.inserts),
            len(delta.modifies),
            len(delta.deletes),
        )
        conn.write_serialized(delta.serialized_updates(), before_batch=before_batch)


def reconcile(
    conn: SwitchConnection,
    desired: SwitchState,
    reader: SwitchReader,
    actual: SwitchState | None = None,
    before_batch: Callable[[], None] | None = None,
) -> Diff:
    """Bring the switch to ``desired``; returns what was written. Raises
    WriteError (after writing everything else) if some updates failed.
    ``actual``: what the switch holds, if just read."""
    delta = diff(desired, reader.read(conn) if actual is None else actual)
    write(conn, delta, before_batch)
    return delta


def reconcile_in_parts(
    conn: SwitchConnection,
    parts: Iterable[SwitchState],
    actual: SwitchState,
    before_batch: Callable[[], None] | None = None,
) -> tuple[Diff, SwitchState]:
    """``reconcile`` with the desired state given a part at a time, as it is
    compiled: each part's writes are sent as soon as it comes, one batch in
    flight, so the switch works while the next part compiles. What the
    switch must lose (deletes, meter resets) goes last, once the whole is
    known; use it where the switch holds no entities (a new or restarted
    switch), where there is nothing to delete first. Returns what was
    written and the whole desired state."""
    writer = conn.pipelined_write(before_batch=before_batch)
    written, whole = Diff(), SwitchState()
    try:
        for part in parts:
            delta = Diff()
            _additions(part, actual, delta)
            writer.add(delta.serialized_updates())
            written.inserts += delta.inserts
            written.modifies += delta.modifies
            whole.entities.update(part.entities)
            whole.meters.update(part.meters)
            whole.defaults.update(part.defaults)
    except BaseException:
        writer.cancel()  # (the batches still queued would land after we gave up)
        raise
    rest = Diff()
    _removals(whole, actual, rest)
    writer.add(rest.serialized_updates())
    written.deletes += rest.deletes
    written.modifies += rest.modifies
    if written:
        log.info(
            "%s: %d inserts, %d modifies, %d deletes (in parts)",
            conn.address,
            len(written.inserts),
            len(written.modifies),
            len(written.deletes),
        )
    writer.finish()
    return written, whole


__all__ = [
    "Diff",
    "SwitchReader",
    "WriteError",
    "changes_diff",
    "diff",
    "reconcile",
    "reconcile_in_parts",
    "write",
]
