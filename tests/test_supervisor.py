"""One switch's supervisor against the in-process fake switch: pipeline push,
reconnect with backoff, primary loss and regain, refused-write blame,
incremental changes vs the periodic full resync, what an unreachable
switch's failures say (log and status) and how often.

Relies only on the supervisor's public face: SwitchSupervisor(tor, pipeline,
election_id, desired, bus, resync_seconds=, max_backoff=) with ``desired`` a
DesiredSource (here the compiler's own DesiredState behind a version
counter), start/stop, notify, wait_applied, status (connected, primary,
version, vm_errors, last_error), the events it publishes on the bus, its log
(logger p4vtep.switch.supervisor: connect_timeout=, repeat_log_seconds=) and
failure_reason.
"""

from __future__ import annotations

import itertools
import logging
import queue
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import grpc
import pytest
from fabric_fixture import two_tor_fabric, vms
from fake_p4runtime import FakeP4RuntimeServer
from helpers import wait_until
from p4vtep import events
from p4vtep.compiler import Allocations, Change, DesiredState, Encoder, Key, SwitchState
from p4vtep.compiler.desired import steps_under
from p4vtep.compiler.switch_state import identity
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.model.fabric import Vm
from p4vtep.runtime.client import ConnectError, P4RuntimeError
from p4vtep.runtime.protos import code_pb2
from p4vtep.switch.bmv2 import free_port
from p4vtep.switch.supervisor import SwitchSupervisor, failure_reason

PIPELINE = bmv2_pipeline()
ELECTION_ID = 10


class Desired:
    """What the controller hands the supervisor (a DesiredSource): the
    compiler's incremental state of a versioned VM set."""

    def __init__(self, fabric, vms: list[Vm]) -> None:
        self.state = DesiredState(fabric, Encoder(PipelineEntries(PIPELINE.p4info)), Allocations())
        self.state.load(vms)
        self.version = 1
        self._lock = threading.Lock()

    def snapshot(self, tor: str) -> tuple[int, SwitchState]:
        with self._lock:
            return self.version, self.state.tors[tor].snapshot()

    def snapshot_steps(self, tor: str) -> Iterator[tuple[int, SwitchState]]:
        return steps_under(self._lock, self.state.tors[tor], lambda: self.version)

    def changes(self, tor: str) -> tuple[int, list[Change], int]:
        with self._lock:
            compiler = self.state.tors[tor]
            return self.version, compiler.take_changes(), len(compiler.state.entities)

    def owner(self, tor: str, key: Key) -> str | None:
        with self._lock:
            return self.state.tors[tor].owner(key)

    def __call__(self, tor: str) -> SwitchState:
        """What ``tor`` must hold now (a copy; pending changes stay pending)."""
        with self._lock:
            return self.state.tors[tor].state.copy()

    def attach(self, vm: Vm) -> int:
        with self._lock:
            self.state.change([vm], [])
            self.version += 1
            return self.version


def held_keys(fake: FakeP4RuntimeServer) -> set:
    with fake._lock:
        return {
            identity(e)
            for e in fake.entities.values()
            if not (e.HasField("table_entry") and e.table_entry.is_default_action)
        }


def desired_keys(compiled: SwitchState) -> set:
    return set(compiled.entities) | set(compiled.meters)


def next_event(q: queue.Queue, kind: type, timeout: float = 10.0):
    """The next event of ``kind`` on the bus (others are skipped)."""
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    try:
        while not deadline.is_set():
            try:
                event = q.get(timeout=0.1)
            except queue.Empty:
                continue
            if isinstance(event, kind):
                return event
    finally:
        timer.cancel()
    raise AssertionError(f"no {kind.__name__} event within {timeout}s")


@pytest.fixture
def fake() -> Iterator[FakeP4RuntimeServer]:
    with FakeP4RuntimeServer(device_id=1) as server:
        yield server


def supervise(fake: FakeP4RuntimeServer, **options):
    return supervise_at(fake.address, **options)


def supervise_at(address: str, **options):
    fabric = two_tor_fabric()
    fabric.tors["tor1"] = replace(fabric.tors["tor1"], address=address, device_id=1)
    desired = Desired(fabric, vms())
    bus = events.EventBus()
    watch = bus.subscribe()
    sup = SwitchSupervisor(fabric.tors["tor1"], PIPELINE, ELECTION_ID, desired, bus, **options)
    return sup, desired, watch


@pytest.fixture
def running(fake):
    sup, desired, watch = supervise(fake, resync_seconds=600, max_backoff=0.8)
    sup.start()
    assert sup.wait_applied(desired.version, 10), sup.status.last_error
    yield sup, desired, watch
    sup.stop()


def test_pushes_the_pipeline_and_writes_exactly_the_desired_state(fake, running):
    sup, desired, watch = running
    pushed = next_event(watch, events.PipelinePushed)
    assert pushed.cookie == PIPELINE.cookie
    assert fake.config.cookie.cookie == PIPELINE.cookie
    compiled = desired("tor1")
    assert held_keys(fake) == desired_keys(compiled)
    assert sup.status.connected
    assert sup.status.primary
    assert sup.status.entries == len(compiled.entities)


def test_an_installed_pipeline_with_our_cookie_is_not_pushed_again(fake, running):
    sup, desired, _ = running
    sup.stop()
    assert fake.pipeline_pushes == 1
    again, desired, _ = supervise(fake, resync_seconds=600)
    again.start()
    try:
        assert again.wait_applied(desired.version, 10)
        assert fake.pipeline_pushes == 1
    finally:
        again.stop()


def test_a_change_writes_only_the_difference_without_reading_back(fake, running):
    sup, desired, _ = running
    reads, writes = fake.reads, len(fake.write_requests)
    before = desired("tor1")
    version = desired.attach(Vm("a3", "00:00:0a:00:00:03", ("192.168.1.3",), 5000, "s12", 11))
    sup.notify()
    assert sup.wait_applied(version, 10)
    after = desired("tor1")
    new = desired_keys(after) - desired_keys(before)
    changed = [
        k
        for k in desired_keys(before) & set(after.entities)
        if before.entities[k] != after.entities[k]
    ]
    assert fake.reads == reads  # incremental: nothing read back
    sent = [u for request in fake.write_requests[writes:] for u in request.updates]
    assert len(sent) == len(new) + len(changed)
    assert held_keys(fake) == desired_keys(after)


def test_the_periodic_resync_reads_back_and_repairs_drift(fake):
    sup, desired, _ = supervise(fake, resync_seconds=0.5)
    sup.start()
    try:
        assert sup.wait_applied(desired.version, 10)
        compiled = desired("tor1")
        with fake._lock:
            victim = next(k for k in fake.entities if k in compiled.entities)
            del fake.entities[victim]  # someone else deleted an entry
        reads = fake.reads
        assert wait_until(lambda: held_keys(fake) == desired_keys(compiled), 10)
        assert fake.reads > reads
    finally:
        sup.stop()


def test_reconnects_with_growing_capped_backoff_then_restores(fake):
    sup, desired, watch = supervise(fake, resync_seconds=600, max_backoff=0.4)
    sup.start()
    try:
        assert sup.wait_applied(desired.version, 10)
        fake.reject_streams = True
        dropped_at = time.monotonic()
        fake.drop_streams()
        disconnected = next_event(watch, events.SwitchDisconnected)
        assert disconnected
        assert disconnected.reason.startswith("stream closed"), disconnected.reason
        assert wait_until(lambda: len(fake.stream_opened) >= 5, 15)
        fake.reject_streams = False
        attempts = [dropped_at, *fake.stream_opened[1:5]]
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        # Waits of 0.2 s, doubling, capped at max_backoff: 0.2, 0.4, 0.4, 0.4
        # (uncapped: 0.8, 1.6). Lower bounds prove the doubling; the upper
        # bound, loose because other work shares the CPU, proves the cap.
        assert gaps[0] >= 0.15
        assert gaps[1] >= 0.35
        assert min(gaps[2:]) >= 0.35
        assert gaps[3] < 1.2
        assert next_event(watch, events.SwitchConnected).primary
        compiled = desired("tor1")
        assert wait_until(lambda: held_keys(fake) == desired_keys(compiled), 10)
    finally:
        sup.stop()


def test_primary_lost_then_regained_applies_what_changed_meanwhile(fake, running):
    sup, desired, watch = running
    fake.take_primary(ELECTION_ID + 1)
    assert not next_event(watch, events.PrimaryChanged).primary
    assert not sup.status.primary
    writes = len(fake.write_requests)
    version = desired.attach(Vm("a3", "00:00:0a:00:00:03", ("192.168.1.3",), 5000, "s12", 11))
    sup.notify()
    assert not sup.wait_applied(version, 1.0)  # a backup writes nothing
    assert len(fake.write_requests) == writes
    fake.release_primary()
    assert next_event(watch, events.PrimaryChanged).primary
    assert sup.wait_applied(version, 10)
    compiled = desired("tor1")
    assert held_keys(fake) == desired_keys(compiled)


def test_refused_writes_are_blamed_on_their_vm_and_retried(fake):
    refused_ip = bytes([192, 168, 1, 3])
    fake.refuse(
        lambda u: any(f.exact.value == refused_ip for f in u.entity.table_entry.match),
        code_pb2.RESOURCE_EXHAUSTED,
        "table full",
    )
    sup, desired, watch = supervise(fake, resync_seconds=600)
    sup.start()
    try:
        assert sup.wait_applied(desired.version, 10)
        version = desired.attach(Vm("a3", "00:00:0a:00:00:03", ("192.168.1.3",), 5000, "s12", 11))
        sup.notify()
        failed = next_event(watch, events.WriteFailed)
        assert failed.vms == ("a3",)
        assert "a3" in sup.status.vm_errors
        assert "arp_suppression" in sup.status.vm_errors["a3"]
        assert "RESOURCE_EXHAUSTED" in sup.status.vm_errors["a3"]
        assert sup.status.version < version
        # The rest of the batch was written: a3's other entries are there.
        compiled = desired("tor1")
        missing = desired_keys(compiled) - held_keys(fake)
        assert len(missing) == 1
        assert desired.owner("tor1", next(iter(missing))) == "a3"
        # Room is made: the retry (with backoff) completes and clears the blame.
        fake.accept_all()
        assert sup.wait_applied(version, 15)
        assert sup.status.vm_errors == {}
        assert held_keys(fake) == desired_keys(compiled)
    finally:
        sup.stop()


class HeldDesired(Desired):
    """Desired whose next ``changes`` call, once ``hold`` is set, waits for
    ``release`` after taking the changes: the test makes changes while a
    pass is under way."""

    def __init__(self, fabric, vms: list[Vm]) -> None:
        super().__init__(fabric, vms)
        self.hold = threading.Event()
        self.inside = threading.Event()
        self.release = threading.Event()

    def changes(self, tor: str) -> tuple[int, list[Change], int]:
        taken = super().changes(tor)
        if self.hold.is_set():
            self.hold.clear()
            self.inside.set()
            self.release.wait(10)
        return taken


def passes_until_applied(watch: queue.Queue, sup: SwitchSupervisor, version: int) -> int:
    """How many passes the supervisor made until ``version`` was applied."""
    assert sup.wait_applied(version, 10), sup.status.last_error
    passes = 0
    while True:
        try:
            event = watch.get_nowait()
        except queue.Empty:
            return passes
        passes += isinstance(event, events.Reconciled)


def vm_c(n: int, server: str) -> Vm:
    return Vm(f"c{n}", f"00:00:0c:00:00:0{n}", (f"192.168.1.1{n}",), 5000, server, 10 + n)


def burst(fake, coalesce_seconds: float) -> tuple[int, list]:
    """c1 attached; c2 attached while c1's pass runs; c3 50 ms after that
    pass ended. Returns (passes from c1 on, updates they sent)."""
    fabric = two_tor_fabric()
    fabric.tors["tor1"] = replace(fabric.tors["tor1"], address=fake.address, device_id=1)
    desired = HeldDesired(fabric, vms())
    bus = events.EventBus()
    watch = bus.subscribe()
    sup = SwitchSupervisor(
        fabric.tors["tor1"],
        PIPELINE,
        ELECTION_ID,
        desired,
        bus,
        resync_seconds=600,
        coalesce_seconds=coalesce_seconds,
    )
    sup.start()
    try:
        passes_until_applied(watch, sup, desired.version)
        writes = len(fake.write_requests)
        desired.hold.set()
        first = desired.attach(vm_c(1, "s11"))
        sup.notify()
        assert desired.inside.wait(10)
        desired.attach(vm_c(2, "s11"))  # arrives while the pass runs: busy
        sup.notify()
        desired.release.set()
        assert sup.wait_applied(first, 10)
        time.sleep(0.05)
        last = desired.attach(vm_c(3, "s12"))
        sup.notify()
        passes = passes_until_applied(watch, sup, last)
        assert held_keys(fake) == desired_keys(desired("tor1"))
        return passes, [u for r in fake.write_requests[writes:] for u in r.updates]
    finally:
        sup.stop()


def flood_group_writes(updates: list) -> int:
    return sum(u.entity.HasField("packet_replication_engine_entry") for u in updates)


def test_changes_arriving_while_busy_share_one_pass_and_one_flood_group_write(fake):
    # A long window so the outcome does not depend on the machine's speed.
    passes, updates = burst(fake, coalesce_seconds=0.5)
    assert passes == 2  # c1's, then c2 and c3 together
    # The VNI's flood group, once per pass.
    assert flood_group_writes(updates) == 2


def test_without_a_window_each_change_gets_its_own_pass(fake):
    # Same sequence, coalescing off: the test above can tell the difference.
    passes, updates = burst(fake, coalesce_seconds=0.0)
    assert passes == 3
    assert flood_group_writes(updates) == 3


def test_a_change_after_a_quiet_pass_is_written_at_once(fake):
    # A move's second step comes right after a pass that saw no new change:
    # it must not wait out the window.
    sup, desired, watch = supervise(fake, resync_seconds=600, coalesce_seconds=5.0)
    sup.start()
    try:
        passes_until_applied(watch, sup, desired.version)
        first = desired.attach(vm_c(1, "s11"))
        sup.notify()
        assert passes_until_applied(watch, sup, first) == 1
        started = time.monotonic()
        second = desired.attach(vm_c(2, "s12"))
        sup.notify()
        assert sup.wait_applied(second, 10)
        assert time.monotonic() - started < 5.0  # not held for the 5 s window
        assert held_keys(fake) == desired_keys(desired("tor1"))
    finally:
        sup.stop()


# --- an unreachable switch: what its failures say, and how often -----------
SUPERVISOR_LOG = "p4vtep.switch.supervisor"
CLOCK = r"\d\d:\d\d:\d\d"


def supervisor_lines(caplog, level: int | None = None) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == SUPERVISOR_LOG and (level is None or r.levelno == level)
    ]


def test_an_unreachable_switch_says_what_failed_where_and_when_it_retries(caplog):
    caplog.set_level(logging.DEBUG, logger=SUPERVISOR_LOG)
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    sup, desired, watch = supervise_at(
        address, resync_seconds=600, max_backoff=0.4, connect_timeout=0.2
    )
    sup.start()
    try:
        assert wait_until(lambda: len(supervisor_lines(caplog)) >= 2, 10)
        first = supervisor_lines(caplog)[0]
        # The old line was "tor1: " (str() of a grpc.FutureTimeoutError is "").
        assert first == f"tor1 {address}: cannot connect (connection refused); retrying in 0.2 s"
        assert re.fullmatch(
            rf"cannot connect \(connection refused\) at {CLOCK}(, \d+ times since {CLOCK})?"
            rf"; next try at {CLOCK}",
            sup.status.last_error,
        ), sup.status.last_error
        for line in supervisor_lines(caplog):
            assert not line.rstrip().endswith(":"), line
            assert "cannot connect (connection refused)" in line, line
        # The switch comes up where the supervisor is trying.
        with FakeP4RuntimeServer(device_id=1, port=int(address.rsplit(":", 1)[1])):
            assert sup.wait_applied(desired.version, 10), sup.status.last_error
            assert next_event(watch, events.SwitchConnected).primary
            connected = supervisor_lines(caplog, logging.INFO)
            assert len(connected) == 1, connected
            assert re.fullmatch(
                rf"tor1 {re.escape(address)}: connected \(primary\) after \d+ failed attempts?;"
                rf" down \d+\.\d s since {CLOCK}",
                connected[0],
            ), connected[0]
            assert sup.status.last_error == ""
            sup.stop()
    finally:
        sup.stop()


def test_the_same_failure_again_is_a_warning_only_once_per_repeat_interval(caplog):
    caplog.set_level(logging.DEBUG, logger=SUPERVISOR_LOG)
    address = f"127.0.0.1:{free_port()}"
    sup, _, _ = supervise_at(
        address, max_backoff=0.05, connect_timeout=0.05, repeat_log_seconds=600
    )
    sup.start()
    try:
        assert wait_until(lambda: len(supervisor_lines(caplog)) >= 5, 15)
    finally:
        sup.stop()
    failures = supervisor_lines(caplog)
    warnings = supervisor_lines(caplog, logging.WARNING)
    assert warnings == [f"tor1 {address}: cannot connect (connection refused); retrying in 0.2 s"]
    debug = supervisor_lines(caplog, logging.DEBUG)
    assert len(debug) == len(failures) - 1
    assert re.fullmatch(
        rf"tor1 {re.escape(address)}: cannot connect \(connection refused\)"
        rf" \(2 times since {CLOCK}\); retrying in 0.05 s",
        debug[0],
    ), debug[0]


def test_the_same_failure_is_a_warning_again_after_the_repeat_interval(caplog):
    caplog.set_level(logging.DEBUG, logger=SUPERVISOR_LOG)
    address = f"127.0.0.1:{free_port()}"
    repeat = 1.0
    sup, _, _ = supervise_at(
        address, max_backoff=0.05, connect_timeout=0.05, repeat_log_seconds=repeat
    )
    sup.start()
    try:
        assert wait_until(lambda: len(supervisor_lines(caplog, logging.WARNING)) >= 2, 15)
    finally:
        sup.stop()
    records = [r for r in caplog.records if r.name == SUPERVISOR_LOG]
    first, second = [r for r in records if r.levelno == logging.WARNING][:2]
    again = re.fullmatch(
        rf"tor1 {re.escape(address)}: still failing \((\d+) times since ({CLOCK})\):"
        rf" cannot connect \(connection refused\); retrying in 0.05 s",
        second.getMessage(),
    )
    assert again, second.getMessage()
    # It counts every failure since the first, logged at WARNING or not.
    assert int(again.group(1)) == records.index(second) + 1
    # Not before the interval; every failure in between at DEBUG.
    slack = 0.05  # (records carry wall-clock times; the interval is monotonic)
    assert second.created - first.created >= repeat - slack
    between = records[1 : records.index(second)]
    assert all(r.levelno == logging.DEBUG for r in between)
    assert all(r.created - first.created < repeat + slack for r in between)


class RpcFailure(grpc.RpcError):
    """A failed call as grpc raises it (an RpcError that is also a Call)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


REFUSED = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:9560: "
    "Failed to connect to remote host: Connection refused"
)


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (ConnectError("127.0.0.1:9560", 5.0, REFUSED), "cannot connect (connection refused)"),
        (ConnectError("127.0.0.1:9560", 5.0, ""), "cannot connect (no answer in 5 s)"),
        (
            ConnectError(
                "[::1]:9560",
                5.0,
                "failed to connect to all addresses; last error: UNKNOWN: "
                "ipv6:%5B::1%5D:9560: Failed to connect to remote host: Connection refused (111)",
            ),
            "cannot connect (connection refused)",
        ),
        (
            ConnectError(
                "tor9:9559",
                5.0,
                "errors resolving tor9:9559: [field:hostname lookup error:address lookup "
                "failed for tor9:9559: Domain name not found]",
            ),
            "cannot connect (name lookup failed: domain name not found)",
        ),
        (grpc.FutureTimeoutError(), "cannot connect (no answer in 5 s)"),
        (RpcFailure(grpc.StatusCode.UNAVAILABLE, REFUSED), "UNAVAILABLE: connection refused"),
        (RpcFailure(grpc.StatusCode.UNAVAILABLE, "Socket closed"), "UNAVAILABLE: socket closed"),
        (RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED, ""), "DEADLINE_EXCEEDED"),
        (P4RuntimeError("127.0.0.1:9560: no arbitration response"), "no arbitration response"),
        (
            P4RuntimeError(f"127.0.0.1:9560: set pipeline: {REFUSED}"),
            "set pipeline: connection refused",
        ),
        (TimeoutError(), "TimeoutError"),
        (RuntimeError(""), "RuntimeError"),
        (KeyError("tor3"), "KeyError: 'tor3'"),
    ],
)
def test_failure_reason_is_one_clear_line(failure, reason):
    assert failure_reason(failure, address="127.0.0.1:9560") == reason


def test_failure_reason_names_the_connect_timeout_and_stays_short():
    assert failure_reason(grpc.FutureTimeoutError(), 0.5) == "cannot connect (no answer in 0.5 s)"
    long = failure_reason(P4RuntimeError("read: " + "x" * 500 + "\nsecond line"))
    assert "\n" not in long
    assert len(long) <= 160
    assert long.startswith("read: xxx")


def test_packet_ins_reach_the_handler_and_only_the_primary_sends_packet_outs(fake, running):
    """The CPU path's two ends (cpu/responder.py): each packet-in goes to the
    handler with the ToR's name; a packet-out leaves only while this
    supervisor is primary, and a backup's is refused, not sent."""
    sup, _, _ = running
    handed: queue.Queue[tuple[str, bytes]] = queue.Queue()
    sup.packet_in_handler = lambda tor, packet: handed.put((tor, packet.payload))
    assert fake.send_packet_in(b"punted frame", {1: b"\x01"})
    assert handed.get(timeout=5) == ("tor1", b"punted frame")

    assert sup.send_packet_out(b"answer", {1: b"\x02"})
    assert wait_until(lambda: len(fake.packet_outs) == 1, 5)
    assert fake.packet_outs[0].payload == b"answer"
    assert [(m.metadata_id, m.value) for m in fake.packet_outs[0].metadata] == [(1, b"\x02")]

    fake.take_primary(ELECTION_ID + 1)  # another controller takes over: we are backup
    assert wait_until(lambda: not sup.status.primary, 5)
    assert not sup.send_packet_out(b"answer", {1: b"\x02"})
    assert sup.packet_outs_refused == 1
    assert not fake.send_packet_in(b"punted frame")  # (the switch sends to the primary only)
    assert len(fake.packet_outs) == 1


def test_a_failing_handler_does_not_end_the_cpu_path(fake, running):
    sup, _, _ = running
    handed: queue.Queue[bytes] = queue.Queue()

    def handler(tor: str, packet) -> None:
        if packet.payload == b"bad":
            raise ValueError("malformed")
        handed.put(packet.payload)

    sup.packet_in_handler = handler
    fake.send_packet_in(b"bad")
    fake.send_packet_in(b"good")
    assert handed.get(timeout=5) == b"good"
