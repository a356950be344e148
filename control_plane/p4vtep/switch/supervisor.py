"""One supervisor per switch: keeps a P4Runtime session up (reconnect with
backoff), takes part in primary election, pushes the pipeline only when the
switch's cookie differs, and reconciles the switch to the desired state
whenever that changes, after a (re)connect, and periodically to repair drift.

With a WriteGate (controller replicas: the etcd leadership), a supervisor
opens a session only while its replica may write, arbitrates with the gate's
election id (re-arbitrating when the term changes), checks the gate before
every batch it writes, and drops the session as soon as the gate closes.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import grpc

from .. import events
from ..compiler import Change, Key, SwitchState
from ..dataplane.artifacts import Pipeline
from ..model.fabric import Tor
from ..runtime.client import ConnectError, P4RuntimeError, SwitchConnection, WriteError
from ..runtime.describe import describe
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2
from .reconciler import Diff, SwitchReader, changes_diff, reconcile, reconcile_in_parts, write

log = logging.getLogger(__name__)


@dataclass
class SwitchStatus:
    name: str
    address: str
    connected: bool = False
    primary: bool = False
    cookie: int | None = None
    entries: int = 0
    last_error: str = ""
    reconciles: int = 0
    writes: int = 0
    version: int = 0  # desired-state version last applied
    vm_errors: dict[str, str] = field(default_factory=dict)  # VM -> why entries are missing


class DesiredSource(Protocol):
    """Where a supervisor gets what its switch must hold (the controller)."""

    def snapshot(self, tor: str) -> tuple[int, SwitchState]:
        """(version, everything the ToR must hold); pending changes are
        dropped, the full pass covers them."""
        ...

    def snapshot_steps(self, tor: str) -> Iterator[tuple[int, SwitchState]]:
        """``snapshot`` a part at a time as it is compiled (for a switch that
        holds nothing, written while the rest compiles): (version of the
        whole, part); together the parts are the whole state."""
        ...

    def changes(self, tor: str) -> tuple[int, list[Change], int]:
        """(version, entities changed since the last call, entity count)."""
        ...

    def owner(self, tor: str, key: Key) -> str | None:
        """The VM an entity serves, if any."""
        ...


class WriteGate(Protocol):
    """Whether this controller may write to switches now, and as whom
    (p4vtep.state.protocol.Leadership is one)."""

    def may_write(self) -> bool: ...

    def election_id(self) -> int: ...


class GateClosed(P4RuntimeError):
    """This replica may not write (it lost or never had leadership)."""


# Minimum time from the end of one pass to the start of the next, only when
# changes came in while that pass ran (see ``SwitchSupervisor._gather``).
# Each pass costs the switch a Write and a rewrite of every changed VNI's
# flood group, whatever it carries: under churn at 2,000 events/s on two
# cores, 10 ms against 5 gave the switches 10-15 % less CPU and 1-10 % more
# events acknowledged in each of three side-by-side pairs, for about 6 ms
# more median latency at 500/s (bench/NOTES.md, "The coalescing window").
# A change after a quiet pass (a lone attach, a move's steps) never waits.
COALESCE_SECONDS = 0.010
# How long a new session may take to get a ready channel (and then again to
# be answered arbitration).
CONNECT_TIMEOUT = 5.0
# A session failure with the same reason as the one before is logged at
# WARNING again only this long after the last WARNING (at DEBUG meanwhile).
REPEAT_LOG_SECONDS = 60.0

# gRPC's words around the cause of a connection failure, e.g. "failed to
# connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:9560: Failed
# to connect to remote host: Connection refused" (the address is on the log
# line already).
_GRPC_NOISE = re.compile(
    r"failed to connect to all addresses; last error: (?:[A-Z_]+: )?"
    r"|\b(?:ipv4|ipv6|unix|unix-abstract|vsock):\S*: "
    r"|Failed to connect to remote host: "
    r"|connect failed: addr: \S+ error: "
)
_NAME_LOOKUP = re.compile(r"errors resolving \S+: .*?([^:\[\]]+)\]?$")
_MAX_REASON = 160


def _short(text: str) -> str:
    """The useful part of a gRPC or P4Runtime error text, on one line."""
    lines = text.strip().splitlines()
    text = lines[0].strip() if lines else ""
    lookup = _NAME_LOOKUP.match(text)
    if lookup:
        text = f"name lookup failed: {lookup.group(1).strip()}"
    text = _GRPC_NOISE.sub("", text)
    text = re.sub(r" \(\d+\)$", "", text)  # an errno after the words
    # "connection refused" for "Connection refused", but "DNS" stays.
    text = re.sub(r"(^|: )([A-Z])(?=[a-z])", lambda m: m[1] + m[2].lower(), text)
    if len(text) > _MAX_REASON:
        text = text[: _MAX_REASON - 3] + "..."
    return text


def _rpc_code(error: grpc.RpcError) -> str:
    code = getattr(error, "code", None)
    value = code() if callable(code) else None
    return value.name if isinstance(value, grpc.StatusCode) else "UNKNOWN"


def _rpc_details(error: grpc.RpcError) -> str:
    details = getattr(error, "details", None)
    return str(details() or "") if callable(details) else ""


def failure_reason(
    exc: BaseException, connect_timeout: float = CONNECT_TIMEOUT, address: str = ""
) -> str:
    """Why a switch session failed, in one short line that is never empty:
    "cannot connect (connection refused)", "cannot connect (no answer in 5
    s)", "UNAVAILABLE: socket closed", "set pipeline: ...", or for anything
    else its text (with its type unless it is a P4Runtime error), or its type
    alone when it has no text. ``address`` (the switch's), when the text
    starts with it, is left out: the log line names it."""
    if isinstance(exc, ConnectError):
        why = _short(exc.detail) if exc.detail else f"no answer in {exc.timeout:g} s"
        return f"cannot connect ({why})"
    if isinstance(exc, grpc.FutureTimeoutError):  # a channel that never got ready
        return f"cannot connect (no answer in {connect_timeout:g} s)"
    if isinstance(exc, grpc.RpcError):
        details = _short(_rpc_details(exc))
        return f"{_rpc_code(exc)}: {details}" if details else _rpc_code(exc)
    text = str(exc)
    if address and text.startswith(f"{address}: "):
        text = text[len(address) + 2 :]
    text = _short(text)
    if not text:
        return type(exc).__name__
    if isinstance(exc, P4RuntimeError):
        return text
    return f"{type(exc).__name__}: {text}"


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


@dataclass
class _Outage:
    """A run of failed sessions, from the first to the next connect."""

    since: float  # wall time the first failed attempt began
    attempts: int  # failed attempts in the run
    reason: str  # the latest failure's reason
    reason_since: float  # wall time of the first failure with this reason in a row
    reason_count: int  # failures with this reason in a row
    warned_at: float  # monotonic time of the last WARNING about this reason


# What the CPU path's responder is handed for each packet-in: the ToR's name
# and the packet (payload and metadata as the switch sent them).
PacketInHandler = Callable[[str, p4runtime_pb2.PacketIn], None]


class SwitchSupervisor:
    def __init__(
        self,
        tor: Tor,
        pipeline: Pipeline,
        election_id: int,
        desired: DesiredSource,
        bus: events.EventBus,
        resync_seconds: float = 30.0,
        max_backoff: float = 5.0,
        credentials: grpc.ChannelCredentials | None = None,
        gate: WriteGate | None = None,
        coalesce_seconds: float = COALESCE_SECONDS,
        connect_timeout: float = CONNECT_TIMEOUT,
        repeat_log_seconds: float = REPEAT_LOG_SECONDS,
    ) -> None:
        self.tor = tor
        self.connect_timeout = connect_timeout
        self.repeat_log_seconds = repeat_log_seconds
        self._outage: _Outage | None = None  # sessions failing since
        self.coalesce_seconds = coalesce_seconds
        self.gate = gate
        self.writes_refused = 0  # batches not sent because the gate was closed
        self.pipeline = pipeline
        self.election_id = election_id
        self.desired = desired
        self.bus = bus
        self.resync_seconds = resync_seconds
        self.max_backoff = max_backoff
        self.credentials = credentials  # grpc.ChannelCredentials for TLS, or None
        self.status = SwitchStatus(tor.name, tor.address)
        self.reader = SwitchReader(pipeline.p4info)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._applied = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"sup-{tor.name}")
        self.conn: SwitchConnection | None = None
        # After a failure the switch may hold anything: read it back first.
        self._needs_full = True
        # Refused updates are retried with backoff (a full table stays full
        # until something changes; no point hammering the switch).
        self._retry_at: float | None = None
        self._retry_delay = 0.0
        # When the last pass ended (monotonic) and whether changes came in
        # while it ran (busy): then the next pass waits until
        # ``coalesce_seconds`` after that end, so back-to-back changes share it.
        self._last_pass_end = float("-inf")
        self._busy = False
        # The CPU path (cpu/responder.py): packet-ins go to the handler, one
        # at a time, on a thread of their own per session, so a burst of
        # punts never delays a reconcile pass.
        self.packet_in_handler: PacketInHandler | None = None
        self.packet_ins = 0  # handed to the handler
        self.packet_outs = 0  # sent
        self.packet_outs_refused = 0  # not sent: not primary, gate closed or no session

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        if self.conn is not None:
            self.conn.close()

    def notify(self) -> None:
        """The desired state changed: reconcile soon."""
        self._wake.set()

    def send_packet_out(self, payload: bytes, metadata: dict[int, bytes]) -> bool:
        """Send a frame out of the switch's CPU port. Only the primary, with
        the write gate open, sends (a backup or a follower replica never
        answers for the switch): False, and nothing sent, otherwise."""
        conn = self.conn
        if (
            conn is None
            or not self.status.primary
            or not conn.is_primary
            or not conn.stream_alive
            or (self.gate is not None and not self.gate.may_write())
        ):
            self.packet_outs_refused += 1
            return False
        conn.send_packet_out(payload, metadata)
        self.packet_outs += 1
        return True

    def wait_applied(self, version: int, timeout: float) -> bool:
        """Block until desired-state ``version`` (or later) is on the switch."""
        with self._applied:
            return self._applied.wait_for(lambda: self.status.version >= version, timeout)

    # --- the loop ------------------------------------------------------------
    def _run(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            if self.gate is not None and not self.gate.may_write():
                # A follower keeps no session: it has nothing to write.
                self._wake.wait(0.1)
                self._wake.clear()
                backoff = 0.2
                continue
            reason = ""
            began = time.time()
            try:
                self._session()
                backoff = 0.2
            except Exception as exc:  # noqa: BLE001 -- any failure means: reconnect
                reason = failure_reason(exc, self.connect_timeout, self.tor.address)
                self._failed(reason, began, backoff)
            if self.conn is not None:
                self.conn.close()
                self.conn = None
            if self.status.connected:
                self.status.connected = False
                self.status.primary = False
                self.bus.publish(events.SwitchDisconnected(self.tor.name, reason=reason))
            self._stop.wait(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    def _failed(self, reason: str, began: float, retry_in: float) -> None:
        """Log a failed session and say in ``status.last_error`` what failed,
        when, and when the next try is. The first failure with a reason is
        a WARNING; the same reason again is one only every
        ``repeat_log_seconds`` (with how often it failed meanwhile), DEBUG
        otherwise."""
        now, ticks = time.time(), time.monotonic()
        outage = self._outage
        if outage is None:
            # Down since the attempt began when it never connected; since
            # now when a session that was up failed.
            since = now if self.status.connected else began
            outage = self._outage = _Outage(since, 0, "", now, 0, ticks)
        outage.attempts += 1
        retry = f"retrying in {retry_in:.3g} s"
        if reason != outage.reason:
            outage.reason, outage.reason_since, outage.reason_count = reason, now, 1
            outage.warned_at = ticks
            level, line = logging.WARNING, f"{reason}; {retry}"
        else:
            outage.reason_count += 1
            again = f"{outage.reason_count} times since {_clock(outage.reason_since)}"
            if ticks - outage.warned_at >= self.repeat_log_seconds:
                outage.warned_at = ticks
                level, line = logging.WARNING, f"still failing ({again}): {reason}; {retry}"
            else:
                level, line = logging.DEBUG, f"{reason} ({again}); {retry}"
        log.log(level, "%s %s: %s", self.tor.name, self.tor.address, line)
        times = f", {outage.reason_count} times since {_clock(outage.reason_since)}"
        self._set_error(
            f"{reason} at {_clock(now)}{times if outage.reason_count > 1 else ''}; "
            f"next try at {_clock(now + retry_in)}"
        )

    def _connected(self, primary: bool) -> None:
        """A session is up: after failures, say so and for how long it was down."""
        outage, self._outage = self._outage, None
        if outage is None:
            return
        self.status.last_error = ""  # (its "next try" is over)
        log.info(
            "%s %s: connected (%s) after %d failed attempt%s; down %s since %s",
            self.tor.name,
            self.tor.address,
            "primary" if primary else "backup",
            outage.attempts,
            "" if outage.attempts == 1 else "s",
            _duration(time.time() - outage.since),
            _clock(outage.since),
        )

    def _session(self) -> None:
        election_id = self._election_id()
        conn = SwitchConnection(
            self.tor.address,
            self.tor.device_id,
            election_id,
            credentials=self.credentials,
            p4info=self.pipeline.p4info,  # write errors name tables and actions
        )
        self.conn = conn
        primary = conn.connect(timeout=self.connect_timeout)
        self._connected(primary)
        self.status.connected = True
        self.status.primary = primary
        self.bus.publish(events.SwitchConnected(self.tor.name, primary=primary))
        threading.Thread(
            target=self._hand_packet_ins, args=(conn,), daemon=True, name=f"pkt-in-{self.tor.name}"
        ).start()
        if primary:
            self._become_primary(conn)
        last_sync = time.monotonic()
        while not self._stop.is_set():
            woke = self._wake.wait(timeout=0.5)
            if not conn.stream_alive:
                error = conn.stream_error
                why = f" ({failure_reason(error)})" if error is not None else " by the switch"
                raise P4RuntimeError(f"stream closed{why}")
            if self.gate is not None and (
                not self.gate.may_write() or self.gate.election_id() != election_id
            ):
                # Leadership lost, or a new term: drop the session (a new
                # term reconnects with its own, higher, election id).
                self._needs_full = True
                return
            if conn.is_primary != primary:
                primary = conn.is_primary
                self.status.primary = primary
                self.bus.publish(events.PrimaryChanged(self.tor.name, primary=primary))
                if primary:
                    self._become_primary(conn)
                    last_sync = time.monotonic()
                continue
            due = time.monotonic() - last_sync >= self.resync_seconds
            retry = self._retry_at is not None and time.monotonic() >= self._retry_at
            if primary and (woke or due or retry):
                self._retry_at = None
                if woke and not due:
                    self._gather()
                self._wake.clear()
                # A change is applied against what we last wrote; the periodic
                # pass reads the switch back and repairs drift.
                self._reconcile(conn, full=due)
                if due:
                    last_sync = time.monotonic()
                self._last_pass_end = time.monotonic()
                self._busy = self._wake.is_set()  # (cleared before the pass)

    def _hand_packet_ins(self, conn: SwitchConnection) -> None:
        """Hand this session's packet-ins to the handler until the session
        ends. (The switch sends them to the primary only; a handler set
        later takes the ones that come after.)"""
        while self.conn is conn and not self._stop.is_set():
            try:
                packet = conn.packet_in.get(timeout=0.5)
            except queue.Empty:
                if not conn.stream_alive:
                    return
                continue
            handler = self.packet_in_handler
            if handler is None:
                continue
            self.packet_ins += 1
            try:
                handler(self.tor.name, packet)
            except Exception:  # (one bad frame must not end the CPU path)
                log.exception("%s: packet-in handler failed", self.tor.name)

    def _gather(self) -> None:
        """Busy (changes came in while the last pass ran): wait until
        ``coalesce_seconds`` after that pass ended so the next one takes every
        change made meanwhile. Each pass rewrites a changed VNI's flood group
        whole (thousands of copies in a big VNI), so under churn this turns
        one rewrite per change into one per several. A change after a quiet
        pass (an isolated attach, a move's second step) is written at once."""
        if not self._busy:
            return
        remaining = self._last_pass_end + self.coalesce_seconds - time.monotonic()
        if remaining > 0:
            self._stop.wait(remaining)

    def _become_primary(self, conn: SwitchConnection) -> None:
        cookie = conn.get_pipeline_cookie()
        if cookie != self.pipeline.cookie:
            # A new or restarted switch, or another program: push ours.
            if cookie is not None:
                conn.clear_multicast_groups()
            conn.set_pipeline(
                self.pipeline.p4info.message, self.pipeline.device_config, self.pipeline.cookie
            )
            self.bus.publish(events.PipelinePushed(self.tor.name, cookie=self.pipeline.cookie))
        self.status.cookie = self.pipeline.cookie
        self._reconcile(conn, full=True)

    def _reconcile(self, conn: SwitchConnection, full: bool) -> None:
        started = time.monotonic()
        try:
            if full or self._needs_full:
                self._needs_full = True  # until this pass succeeds
                delta, desired, version = self._reconcile_whole(conn)
                entries = len(desired.entities)
            else:
                # Only what changed since the last pass; the switch held the
                # rest already (the periodic full pass repairs drift).
                version, changes, entries = self.desired.changes(self.tor.name)
                delta = changes_diff(changes)
                self._write(conn, delta)
        except WriteError as exc:
            self._needs_full = True
            self._set_error(str(exc))
            self.status.vm_errors = self._blame(exc, self.pipeline.p4info)
            self.bus.publish(
                events.WriteFailed(
                    self.tor.name,
                    errors=tuple(str(e) for e in exc.errors),
                    vms=tuple(sorted(self.status.vm_errors)),
                )
            )
            # The rest was written; a later pass reads back and retries.
            self._retry_delay = min(max(0.5, self._retry_delay * 2), 30.0)
            self._retry_at = time.monotonic() + self._retry_delay
            return
        except Exception:
            self._needs_full = True
            raise
        self._needs_full = False
        self.status.vm_errors = {}
        self._retry_delay = 0.0
        self.status.reconciles += 1
        self.status.writes += len(delta)
        self.status.entries = entries
        self.status.last_error = ""
        with self._applied:
            self.status.version = max(self.status.version, version)
            self._applied.notify_all()
        self.bus.publish(
            events.Reconciled(
                self.tor.name,
                inserts=len(delta.inserts),
                modifies=len(delta.modifies),
                deletes=len(delta.deletes),
                seconds=time.monotonic() - started,
            )
        )

    def _reconcile_whole(self, conn: SwitchConnection) -> tuple[Diff, SwitchState, int]:
        """Read the switch back and bring all of it to the desired state:
        (what was written, the desired state, its version)."""
        actual = self.reader.read(conn)
        if actual.entities:
            version, desired = self.desired.snapshot(self.tor.name)
            delta = reconcile(conn, desired, self.reader, actual, self._check_gate)
            return delta, desired, version
        # Nothing to delete first: write while the rest compiles.
        versions: list[int] = []

        def parts() -> Iterator[SwitchState]:
            for whole_version, part in self.desired.snapshot_steps(self.tor.name):
                versions.append(whole_version)
                yield part

        delta, desired = reconcile_in_parts(conn, parts(), actual, self._check_gate)
        return delta, desired, versions[0]

    def _election_id(self) -> int:
        if self.gate is None:
            return self.election_id
        try:
            return self.gate.election_id()
        except Exception as exc:  # e.g. NotLeader: the term just ended
            raise GateClosed(f"not leading: {exc}") from exc

    def _check_gate(self) -> None:
        """Called before each write batch: this replica may still write (its
        lease may run out during a large pass)."""
        if self.gate is not None and not self.gate.may_write():
            self.writes_refused += 1
            raise GateClosed("leadership lost; writing stopped")

    def _write(self, conn: SwitchConnection, delta: Diff) -> None:
        write(conn, delta, self._check_gate)

    def _blame(self, exc: WriteError, p4info: P4Info) -> dict[str, str]:
        """Which VMs the refused updates belonged to, and why (first reason).
        BMv2 says only "Error when adding match entry"; naming the table and
        its size tells the operator it is full."""
        from ..compiler import identity
        from ..runtime.protos import code_pb2

        blamed: dict[str, str] = {}
        for error in exc.errors:
            vm = self.desired.owner(self.tor.name, identity(error.update.entity))
            if vm is None or vm in blamed:
                continue
            where = ""
            if error.update.entity.WhichOneof("entity") == "table_entry":
                table = p4info.table(p4info.name_of(error.update.entity.table_entry.table_id))
                where = f"table {table.preamble.alias} (size {table.size}): "
            what = describe(error.update.entity, p4info)
            blamed[vm] = f"{where}{code_pb2.Code.Name(error.code)}: {error.message} ({what})"
        return blamed

    def _set_error(self, message: str) -> None:
        self.status.last_error = message
