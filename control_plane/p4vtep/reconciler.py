"""Make one switch hold exactly the compiled entities, writing only the
difference.

Read everything the pipeline's tables, selector, multicast groups and meters
hold; compare with the compiled entities by identity and content (canonical
bytes on both sides); then write inserts and modifies in dependency order
(members, groups, multicast groups, table entries) and deletes in the reverse
order. Steady state writes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .compiler import CompiledTor
from .runtime.client import DELETE, INSERT, MODIFY, SwitchConnection, Update, WriteError
from .runtime.entities import entity_key
from .runtime.p4info import P4Info
from .runtime.protos import p4runtime_pb2

log = logging.getLogger(__name__)

# Write order for inserts/modifies; deletes go in reverse.
_ORDER = {
    "action_profile_member": 0,
    "action_profile_group": 1,
    "packet_replication_engine_entry": 2,
    "table_entry": 3,
    "meter_entry": 4,
}


@dataclass
class Diff:
    inserts: list[p4runtime_pb2.Entity] = field(default_factory=list)
    modifies: list[p4runtime_pb2.Entity] = field(default_factory=list)
    deletes: list[p4runtime_pb2.Entity] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.inserts) + len(self.modifies) + len(self.deletes)

    def updates(self) -> list[Update]:
        def rank(entity):
            return _ORDER[entity.WhichOneof("entity")]

        ups = [Update(type=INSERT, entity=x) for x in sorted(self.inserts, key=rank)]
        ups += [Update(type=MODIFY, entity=x) for x in sorted(self.modifies, key=rank)]
        dels = sorted(self.deletes, key=rank, reverse=True)
        return [Update(type=DELETE, entity=x) for x in dels] + ups


def _content(entity: p4runtime_pb2.Entity) -> bytes:
    """What an entity does, in a form equal for equal behaviour."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        te = entity.table_entry
        return te.action.SerializeToString(deterministic=True)
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


def _normalise_read(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Entity:
    """Drop read-only decorations the switch adds (counter data, meter config
    of direct resources) so that identity and content compare cleanly."""
    if entity.WhichOneof("entity") == "table_entry":
        te = entity.table_entry
        te.ClearField("counter_data")
        te.ClearField("meter_config")
        te.ClearField("time_since_last_hit")
    return entity


def diff(
    desired: CompiledTor,
    actual: dict[tuple, p4runtime_pb2.Entity],
    actual_meters: dict[tuple, p4runtime_pb2.Entity],
    actual_defaults: dict[tuple, p4runtime_pb2.Entity],
) -> Diff:
    result = Diff()
    for key, entity in desired.entities.items():
        have = actual.get(key)
        if have is None:
            result.inserts.append(entity)
        elif have is not entity and _content(have) != _content(entity):
            # (Compiled entities are reused while unchanged: same object, same content.)
            result.modifies.append(entity)
    for key, entity in actual.items():
        if key not in desired.entities:
            result.deletes.append(entity)
    # Meters: configured ones must match; ones we no longer want are reset.
    for key, entity in desired.meters.items():
        have = actual_meters.get(key)
        if have is None or (have is not entity and _content(have) != _content(entity)):
            result.modifies.append(entity)
    for key, entity in actual_meters.items():
        if key not in desired.meters and entity.meter_entry.HasField("config"):
            reset = p4runtime_pb2.Entity()
            reset.meter_entry.meter_id = entity.meter_entry.meter_id
            reset.meter_entry.index.index = entity.meter_entry.index.index
            result.modifies.append(reset)
    for key, entity in desired.defaults.items():
        have = actual_defaults.get(key)
        if have is None or _content(have) != _content(entity):
            result.modifies.append(entity)
    return result


class SwitchReader:
    """Reads the state one switch holds for the p4vtep pipeline."""

    def __init__(
        self, p4info: P4Info, managed_meters: tuple[str, ...] = ("vm_tx_meter", "vm_rx_meter")
    ):
        self.p4info = p4info
        self.managed_meters = managed_meters

    def read(self, conn: SwitchConnection):
        requests = []
        for table in self.p4info.message.tables:
            requests.append(
                p4runtime_pb2.Entity(
                    table_entry=p4runtime_pb2.TableEntry(table_id=table.preamble.id)
                )
            )
        for profile in self.p4info.message.action_profiles:
            requests.append(
                p4runtime_pb2.Entity(
                    action_profile_member=p4runtime_pb2.ActionProfileMember(
                        action_profile_id=profile.preamble.id
                    )
                )
            )
            requests.append(
                p4runtime_pb2.Entity(
                    action_profile_group=p4runtime_pb2.ActionProfileGroup(
                        action_profile_id=profile.preamble.id
                    )
                )
            )
        pre = p4runtime_pb2.Entity()
        pre.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        requests.append(pre)
        actual: dict[tuple, p4runtime_pb2.Entity] = {}
        for entity in conn.read(*requests):
            entity = _normalise_read(entity)
            actual[entity_key(entity)] = entity
        defaults = {}
        for table in self.p4info.message.tables:
            if not table.match_fields:  # keyless: only a default action
                request = p4runtime_pb2.Entity(
                    table_entry=p4runtime_pb2.TableEntry(
                        table_id=table.preamble.id, is_default_action=True
                    )
                )
                for entity in conn.read(request):
                    entity = _normalise_read(entity)
                    defaults[entity_key(entity)] = entity
        meters = {}
        for name in self.managed_meters:
            request = p4runtime_pb2.Entity(
                meter_entry=p4runtime_pb2.MeterEntry(meter_id=self.p4info.meter(name).preamble.id)
            )
            for entity in conn.read(request):
                if entity.meter_entry.HasField("config"):
                    meters[entity_key(entity)] = entity
        return actual, meters, defaults


def reconcile(conn: SwitchConnection, desired: CompiledTor, reader: SwitchReader) -> Diff:
    """Bring the switch to ``desired``; returns what was written. Raises
    WriteError (after writing everything else) if some updates failed."""
    actual, meters, defaults = reader.read(conn)
    delta = diff(desired, actual, meters, defaults)
    if delta:
        log.info(
            "%s: %d inserts, %d modifies, %d deletes",
            conn.address,
            len(delta.inserts),
            len(delta.modifies),
            len(delta.deletes),
        )
        conn.write(delta.updates())
    return delta


__all__ = ["Diff", "SwitchReader", "WriteError", "diff", "reconcile"]
