"""The stored form of an entity (switch_state: a table entry kept as what
follows its key) gives back the entity's bytes exactly, is one function of
them, and is what the encoder, the reader and the reconciler agree on."""

from __future__ import annotations

from p4vtep.compiler import Encoder, SwitchState
from p4vtep.compiler.switch_state import (
    TAILS_MAX,
    compact,
    encoded,
    expand,
    identity,
    shared_tail,
)
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, PortRole, RemoteVtepHop
from p4vtep.model.fabric import Rates
from p4vtep.runtime.entities import to_entity
from p4vtep.runtime.protos import p4runtime_pb2
from p4vtep.switch.reconciler import Diff, diff, same

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
TABLE_ENTITY = b"\x12"  # (Entity.table_entry's tag: a whole table entry's first byte)


def every_kind() -> list[p4runtime_pb2.Entity]:
    """Entities of every kind the controller writes, table entries with and
    without parameters, LPM, an action profile group as action, a default."""
    e = ENTRIES
    messages = [
        e.port_role(3, PortRole.ACCESS),
        e.my_vtep("10.0.0.1"),
        e.mac_to_remote_vtep(5000, "02:00:00:00:00:01", "10.0.0.2"),
        e.source_guard(1, 10, "192.168.1.1", 32),
        e.source_guard(1, 10, "fe80::", 64),
        e.host_route(7, "2001:db8::1", RemoteVtepHop("10.0.0.2", "02:00:00:00:00:09", 7)),
        e.underlay_route("10.0.0.2", 32, group_id=1),
        e.next_hop_member(1, 2, "02:00:00:00:00:0a"),
        e.ecmp_group(1, [1], 4),
        e.flood_group(9, [(1, 3), (2, 4)]),
        e.local_vtep("10.0.0.1", "02:00:00:00:00:0b"),
        e.vm_meter("tx", 3, Rates(1000, 1000, 2000, 2000)),
    ]
    return [to_entity(m) for m in messages]


def test_every_stored_form_gives_the_entity_back_byte_for_byte():
    for entity in every_kind():
        whole = entity.SerializeToString(deterministic=True)
        key = identity(entity)
        stored = compact(key, whole)
        assert expand(key, stored) == whole
        assert compact(key, expand(key, stored)) == stored
        if (
            entity.WhichOneof("entity") == "table_entry"
            and not entity.table_entry.is_default_action
        ):
            # A table entry keeps what follows its key: its action.
            assert len(stored) < len(whole)
            assert not stored.startswith(TABLE_ENTITY)
            assert (
                stored == entity.table_entry.SerializeToString(deterministic=True)[len(key) - 1 :]
            )
        else:
            assert stored == whole  # (other kinds, and defaults, are kept whole)


def test_an_entry_whose_bytes_do_not_extend_its_key_is_kept_whole():
    # A priority comes after the action on the wire, so the key (table,
    # matches, priority) is no prefix of the entity: kept whole.
    entity = to_entity(ENTRIES.mac_to_remote_vtep(5000, "02:00:00:00:00:01", "10.0.0.2"))
    entity.table_entry.priority = 10
    whole = entity.SerializeToString(deterministic=True)
    key = identity(entity)
    assert compact(key, whole) == whole
    assert expand(key, whole) == whole
    # Matches read back in another order than the key's: kept whole too.
    entity = to_entity(ENTRIES.mac_to_remote_vtep(5000, "02:00:00:00:00:01", "10.0.0.2"))
    match = list(entity.table_entry.match)
    del entity.table_entry.match[:]
    entity.table_entry.match.extend(reversed(match))
    whole = entity.SerializeToString(deterministic=True)
    key = identity(entity)
    assert compact(key, whole) == whole
    assert expand(key, whole) == whole
    # ... and it does the same as the stored form of the ordered one.
    ordered = to_entity(ENTRIES.mac_to_remote_vtep(5000, "02:00:00:00:00:01", "10.0.0.2"))
    assert identity(ordered) == key
    assert same(key, encoded(ordered)[1], whole)
    assert not same(
        key,
        encoded(to_entity(ENTRIES.mac_to_remote_vtep(5000, "02:00:00:00:00:01", "10.0.0.3")))[1],
        whole,
    )


def test_the_encoder_shares_the_tails_of_entries_that_do_alike():
    enc = Encoder(ENTRIES)
    guards = [enc.source_guard(port, vlan, "fe80::", 64) for port in (1, 2) for vlan in (10, 20)]
    guards += [enc.source_guard(1, vlan, f"10.0.0.{vlan}", 32) for vlan in (10, 20)]
    assert len({id(stored) for _, stored in guards}) == 1  # (both tables: source_allowed)
    remote = [enc.mac_to_remote_vtep(5000, f"02:00:00:00:01:{i:02x}", "10.0.0.2") for i in range(5)]
    assert len({id(stored) for _, stored in remote}) == 1
    # The table of tails is bounded: once full it starts again.
    for i in range(TAILS_MAX + 1):
        shared_tail(b"\x1a%d" % i)
    assert shared_tail(b"\x1a0") == b"\x1a0"


def test_writes_carry_whole_entities_and_a_read_back_state_diffs_to_nothing():
    """What the reconciler writes from stored forms parses back to the
    entities; a state read back (stored by ``encoded``) equal to the desired
    one gives no writes."""
    desired = SwitchState()
    for entity in every_kind():
        desired.add(encoded(entity))
    written = Diff(
        inserts=list(desired.entities.items()),
        modifies=list(desired.meters.items()) + list(desired.defaults.items()),
    ).updates()
    sent = {identity(u.entity): u.entity for u in written}
    for key, stored in desired.entities.items():
        assert sent[key].SerializeToString(deterministic=True) == expand(key, stored)
        assert desired.entity(key) == sent[key]
    read_back = SwitchState()
    for update in written:  # (as SwitchReader stores what the switch gives)
        read_back.add(encoded(update.entity))
    assert read_back == desired
    assert len(diff(desired, read_back)) == 0
