"""The P4Runtime client against the in-process fake switch: arbitration,
writes with per-update errors, reads, pipeline cookies, stream loss."""

from __future__ import annotations

import time

import pytest
from fake_p4runtime import FakeP4RuntimeServer
from helpers import wait_until
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.runtime.client import INSERT, P4RuntimeError, SwitchConnection, Update, WriteError
from p4vtep.runtime.entities import to_entity
from p4vtep.runtime.protos import code_pb2

PIPELINE = bmv2_pipeline()
ENTRIES = PipelineEntries(PIPELINE.p4info)
COOKIE = 0x1234


@pytest.fixture
def switch():
    with FakeP4RuntimeServer(device_id=1) as fake:
        yield fake


def connect(fake: FakeP4RuntimeServer, election_id: int = 10) -> SwitchConnection:
    conn = SwitchConnection(fake.address, 1, election_id, p4info=PIPELINE.p4info)
    conn.connect(timeout=5)
    return conn


def primary_with_pipeline(fake: FakeP4RuntimeServer) -> SwitchConnection:
    conn = connect(fake)
    conn.set_pipeline(PIPELINE.p4info.message, b"{}", COOKIE)
    return conn


def arp(i: int):
    return ENTRIES.arp_suppression(5000, f"192.168.1.{i}", f"00:00:0a:00:00:{i:02x}")


def test_highest_election_id_is_primary_and_loses_to_a_higher_one(switch):
    with connect(switch, 10) as first:
        assert first.is_primary
        with connect(switch, 5) as backup:
            assert not backup.is_primary
            assert first.is_primary
            with connect(switch, 20) as second:
                assert second.is_primary
                assert wait_until(lambda: not first.is_primary, 5)
            # The higher one left: the next highest is primary again.
            assert wait_until(lambda: first.is_primary, 5)
            assert not backup.is_primary


def test_another_controller_takes_and_gives_back_the_primary_role(switch):
    with connect(switch, 10) as conn:
        switch.take_primary(11)
        assert wait_until(lambda: not conn.is_primary, 5)
        switch.release_primary()
        assert wait_until(lambda: conn.is_primary, 5)


def test_written_entries_read_back_identical(switch):
    with primary_with_pipeline(switch) as conn:
        written = [arp(i) for i in range(1, 4)]
        conn.insert(*written)
        table_id = written[0].table_id
        read = conn.read(to_entity(type(written[0])(table_id=table_id)))
        assert sorted(e.table_entry.SerializeToString(deterministic=True) for e in read) == sorted(
            w.SerializeToString(deterministic=True) for w in written
        )


def test_refused_updates_are_named_and_the_rest_of_the_batch_applies(switch):
    refused_ip = bytes([192, 168, 1, 2])
    switch.refuse(
        lambda u: any(f.exact.value == refused_ip for f in u.entity.table_entry.match),
        code_pb2.RESOURCE_EXHAUSTED,
        "table is full",
    )
    with primary_with_pipeline(switch) as conn:
        updates = [Update(type=INSERT, entity=to_entity(arp(i))) for i in range(1, 6)]
        with pytest.raises(WriteError) as failed:
            conn.write(updates, batch_size=2)  # the refused one is in the first batch
        (error,) = failed.value.errors
        assert error.index == 1
        assert error.code == code_pb2.RESOURCE_EXHAUSTED
        text = str(failed.value)
        assert "arp_suppression{" in text
        assert "192.168.1.2" in text
        assert "00:00:0a:00:00:02" in text
        assert "RESOURCE_EXHAUSTED: table is full" in text
        assert len(switch.table_entries()) == 4
        # Error indices count from the start of the whole list, across batches.
        with pytest.raises(WriteError) as again:
            conn.write(updates, batch_size=2)
        assert sorted(e.index for e in again.value.errors) == [0, 1, 2, 3, 4]
        assert {e.code for e in again.value.errors} == {
            code_pb2.ALREADY_EXISTS,
            code_pb2.RESOURCE_EXHAUSTED,
        }


def test_a_backup_cannot_write(switch):
    with primary_with_pipeline(switch), connect(switch, 5) as backup:
        with pytest.raises(WriteError) as failed:
            backup.insert(arp(1))
        assert [e.code for e in failed.value.errors] == [code_pb2.PERMISSION_DENIED]
        assert switch.table_entries() == []


def test_pipeline_cookie_and_multicast_groups_survive_a_push(switch):
    with connect(switch) as conn:
        assert conn.get_pipeline_cookie() is None
        conn.set_pipeline(PIPELINE.p4info.message, b"{}", COOKIE)
        assert conn.get_pipeline_cookie() == COOKIE
        conn.insert(ENTRIES.flood_group(1, [(1, 1), (2, 2)]), arp(1))
        conn.set_pipeline(PIPELINE.p4info.message, b"{}", COOKIE + 1)
        assert switch.table_entries() == []  # a push empties the tables...
        assert conn.clear_multicast_groups() == 1  # ...but not the groups
        assert switch.entities == {}


def test_a_dropped_stream_is_seen(switch):
    with connect(switch) as conn:
        assert conn.stream_alive
        switch.drop_streams()
        assert wait_until(lambda: not conn.stream_alive, 5)
        assert conn.stream_error is not None


def test_a_refused_stream_fails_arbitration(switch):
    switch.reject_streams = True
    conn = SwitchConnection(switch.address, 1, 10)
    try:
        with pytest.raises(P4RuntimeError, match="stream failed"):
            conn.connect(timeout=5)
    finally:
        conn.close()


def test_pipelined_write_sends_a_part_at_once_when_the_switch_is_idle(switch):
    """A first build is written a part at a time while the rest compiles:
    a part smaller than a batch goes out as soon as nothing is in flight,
    instead of waiting for a whole batch (the switch would sit idle)."""
    with primary_with_pipeline(switch) as conn:
        writer = conn.pipelined_write(batch_size=1000)
        writer.add(
            [Update(type=INSERT, entity=to_entity(arp(i))).SerializeToString() for i in (1, 2)]
        )
        assert wait_until(lambda: len(switch.table_entries()) == 2, 5)  # before finish()
        # (the switch holds them before its answer reaches us: wait for that too)
        assert wait_until(lambda: writer.switch_idle, 5)
        writer.add([Update(type=INSERT, entity=to_entity(arp(3))).SerializeToString()])
        writer.finish()
        assert len(switch.table_entries()) == 3


def _serialized(numbers) -> list[bytes]:
    return [Update(type=INSERT, entity=to_entity(arp(i))).SerializeToString() for i in numbers]


def test_pipelined_write_sends_each_batch_when_the_one_before_is_answered(switch):
    """Batches go out from the switch's answer, not from the caller's next
    add: a caller busy compiling leaves no idle switch behind. One batch in
    flight, so they arrive in order."""
    with primary_with_pipeline(switch) as conn:
        writer = conn.pipelined_write(batch_size=2)
        writer.add(_serialized(range(1, 8)))  # three batches and a part of one
        assert wait_until(lambda: len(switch.table_entries()) == 7, 5)  # no finish() yet
        writer.finish()
        sent = [
            bytes(u.entity.table_entry.match[1].exact.value)
            for request in switch.write_requests
            for u in request.updates
        ]
        assert sent == [bytes([192, 168, 1, i]) for i in range(1, 8)]
        assert [len(r.updates) for r in switch.write_requests] == [2, 2, 2, 1]


def test_pipelined_write_stops_where_the_gate_closes_in_the_background(switch):
    """``before_batch`` refusing a batch that gRPC's thread was about to
    send: nothing after it goes out, and the caller gets the refusal."""
    calls = []

    def gate() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise P4RuntimeError("leadership lost")

    with primary_with_pipeline(switch) as conn:
        writer = conn.pipelined_write(batch_size=2, before_batch=gate)
        writer.add(_serialized(range(1, 9)))
        with pytest.raises(P4RuntimeError, match="leadership lost"):
            writer.finish()
        assert len(switch.table_entries()) == 4
        assert len(calls) == 3
        with pytest.raises(P4RuntimeError, match="leadership lost"):
            writer.add(_serialized([9]))
        assert len(switch.table_entries()) == 4


def test_a_pipelined_write_whose_connection_fails_stops_and_says_so_each_time(switch):
    """A Write answered UNAVAILABLE (the connection, not an update): the
    batches queued behind it are not sent, and every later call raises."""
    with primary_with_pipeline(switch) as conn:
        switch.fail_writes = True
        writer = conn.pipelined_write(batch_size=2)
        writer.add(_serialized(range(1, 7)))
        with pytest.raises(P4RuntimeError, match="connection lost") as first:
            writer.finish()
        assert not isinstance(first.value, WriteError)
        assert switch.failed_writes == 1
        switch.fail_writes = False
        with pytest.raises(P4RuntimeError, match="connection lost"):
            writer.add(_serialized([7]))
        with pytest.raises(P4RuntimeError, match="connection lost"):
            writer.finish()
        assert switch.table_entries() == []
        assert len(switch.write_requests) == 1


class SlowSwitch(FakeP4RuntimeServer):
    """Takes 0.2 s to answer each Write."""

    def Write(self, request, context):
        time.sleep(0.2)
        return super().Write(request, context)


def test_a_cancelled_pipelined_write_sends_nothing_more():
    """A caller that gives up (its compile failed) cancels: the batch in
    flight completes, the queued ones never reach the switch."""
    with SlowSwitch(device_id=1) as slow, primary_with_pipeline(slow) as conn:
        writer = conn.pipelined_write(batch_size=2)
        writer.add(_serialized(range(1, 7)))  # three batches: one sent, two queued
        writer.cancel()
        assert len(slow.table_entries()) == 2
        time.sleep(0.5)  # (time for the queued ones, had they been sent)
        assert len(slow.table_entries()) == 2
        with pytest.raises(P4RuntimeError, match="cancelled"):
            writer.finish()
