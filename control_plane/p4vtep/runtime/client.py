"""A P4Runtime connection to one switch.

Owns the gRPC channel and the StreamChannel: arbitration (primary/backup by
election id), packet-in/packet-out. Offers Write in CONTINUE_ON_ERROR batches
(the only atomicity BMv2 supports) with per-update errors, Read, and pipeline
set/get by cookie.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType

import grpc

from . import wire
from .describe import describe
from .entities import EntityMessage, to_entity
from .p4info import P4Info
from .protos import code_pb2, p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc, status_pb2

log = logging.getLogger(__name__)

Update = p4runtime_pb2.Update
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE
# BMv2 handles large batches well; this keeps one message far below gRPC's 4 MiB.
DEFAULT_BATCH_SIZE = 1000
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_SERVICE = p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"]
_WRITE_METHOD = f"/{_SERVICE.full_name}/{_SERVICE.methods_by_name['Write'].name}"
_REQUEST_UPDATES = wire.tag(p4runtime_pb2.WriteRequest, "updates")


class P4RuntimeError(Exception):
    """A P4Runtime RPC failed as a whole."""


class ConnectError(P4RuntimeError, grpc.FutureTimeoutError):
    """``connect`` found no working channel within its timeout. ``detail`` is
    why, as gRPC last saw it (e.g. "...: Connection refused"), or "" when
    nothing answered at all. Also a grpc.FutureTimeoutError, which is what
    ``connect`` raised before it said why."""

    def __init__(self, address: str, timeout: float, detail: str) -> None:
        self.address = address
        self.timeout = timeout
        self.detail = detail
        why = detail or "no answer"
        super().__init__(f"{address}: cannot connect within {timeout:g} s: {why}")


@dataclass(frozen=True)
class UpdateError:
    index: int  # position in the list given to ``write``
    code: int  # google.rpc.Code
    message: str
    update: p4runtime_pb2.Update
    # Names the entity in messages; without it, ids are shown.
    p4info: P4Info | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return (
            f"update {self.index} {Update.Type.Name(self.update.type)} "
            f"{describe(self.update.entity, self.p4info)}: "
            f"{code_pb2.Code.Name(self.code)}: {self.message}"
        )


class WriteError(P4RuntimeError):
    """Some updates of a write failed; the others were applied."""

    def __init__(self, errors: list[UpdateError]):
        self.errors = errors
        shown = "; ".join(str(e) for e in errors[:5])
        more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
        super().__init__(f"{len(errors)} update(s) failed: {shown}{more}")


def _update_errors(
    error: grpc.RpcError, updates: Sequence[Update], offset: int, p4info: P4Info | None
) -> list[UpdateError]:
    """Decode the per-update p4.v1.Error list carried in the status details."""
    details = None
    for key, value in _trailing_metadata(error):
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            details = status_pb2.Status.FromString(value)
    if details is None or not details.details:
        status = _code(error) or grpc.StatusCode.UNKNOWN
        code = int(status.value[0])
        return [
            UpdateError(offset + i, code, _details(error), u, p4info) for i, u in enumerate(updates)
        ]
    result = []
    for i, packed in enumerate(details.details):
        one = p4runtime_pb2.Error()
        packed.Unpack(one)
        if one.canonical_code != code_pb2.OK:
            result.append(
                UpdateError(offset + i, one.canonical_code, one.message, updates[i], p4info)
            )
    return result


class SwitchConnection:
    """One P4Runtime client session with one device."""

    def __init__(
        self,
        address: str,
        device_id: int,
        election_id: int = 1,
        credentials: grpc.ChannelCredentials | None = None,
        p4info: P4Info | None = None,
    ) -> None:
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.p4info = p4info  # for naming entities in errors; optional
        options = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # A batch's per-update errors come back in trailing metadata;
            # 1000 of them are far over gRPC's default 16 KiB.
            ("grpc.max_metadata_size", MAX_MESSAGE_BYTES),
        ]
        if credentials is None:
            self.channel = grpc.insecure_channel(address, options=options)
        else:
            self.channel = grpc.secure_channel(address, credentials, options=options)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        # Write taking a WriteRequest already serialized (no request serializer).
        self._write_serialized: grpc.UnaryUnaryMultiCallable[bytes, p4runtime_pb2.WriteResponse] = (
            self.channel.unary_unary(
                _WRITE_METHOD, response_deserializer=p4runtime_pb2.WriteResponse.FromString
            )
        )
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._arbitration = threading.Condition()
        self._last_arbitration: p4runtime_pb2.MasterArbitrationUpdate | None = None
        self.packet_in: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self.stream_error: grpc.RpcError | None = None
        self._stream: Iterator[p4runtime_pb2.StreamMessageResponse] | None = None
        self._reader: threading.Thread | None = None

    # --- stream channel ------------------------------------------------------
    def _request_iterator(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            request = self._requests.get()
            if request is None:
                return
            yield request

    def _read_stream(self) -> None:
        assert self._stream is not None
        try:
            for response in self._stream:
                kind = response.WhichOneof("update")
                if kind == "arbitration":
                    with self._arbitration:
                        self._last_arbitration = response.arbitration
                        self._arbitration.notify_all()
                elif kind == "packet":
                    self.packet_in.put(response.packet)
                elif kind == "error":
                    log.warning("%s: stream error: %s", self.address, response.error)
        except grpc.RpcError as exc:
            # The error is the stream call itself, which this connection
            # holds, and its traceback holds this frame, which holds the
            # connection: a cycle until a collection, cancelled or not.
            exc.with_traceback(None)
            if _code(exc) != grpc.StatusCode.CANCELLED:
                self.stream_error = exc
        finally:
            with self._arbitration:
                self._arbitration.notify_all()

    def connect(self, timeout: float = 10.0) -> bool:
        """Open the stream and ask to be primary. Returns True if primary.
        Raises ConnectError when the channel is not ready within ``timeout``."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise ConnectError(self.address, timeout, self._why_not_ready()) from None
        self._stream = self.stub.StreamChannel(self._request_iterator())
        self._reader = threading.Thread(
            target=self._read_stream, daemon=True, name=f"p4rt-stream-{self.address}"
        )
        self._reader.start()
        return self.arbitrate(self.election_id, timeout)

    def _why_not_ready(self) -> str:
        """Why the channel is not ready, as gRPC says it: a call that does not
        wait for the channel fails at once with the last connection error
        ("" if gRPC is still trying, e.g. a host that does not answer)."""
        try:
            self.stub.Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=0.2, wait_for_ready=False
            )
        except grpc.RpcError as exc:
            if _code(exc) == grpc.StatusCode.UNAVAILABLE:
                return _details(exc)
        return ""

    def arbitrate(self, election_id: int, timeout: float = 10.0) -> bool:
        self.election_id = election_id
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.high = election_id >> 64
        request.arbitration.election_id.low = election_id & ((1 << 64) - 1)
        with self._arbitration:
            self._last_arbitration = None
            self._requests.put(request)
            if not self._arbitration.wait_for(
                lambda: self._last_arbitration is not None or self.stream_error is not None,
                timeout=timeout,
            ):
                raise P4RuntimeError(f"{self.address}: no arbitration response")
        if self.stream_error is not None:
            raise P4RuntimeError(f"{self.address}: stream failed: {_details(self.stream_error)}")
        return self.is_primary

    @property
    def is_primary(self) -> bool:
        update = self._last_arbitration
        if update is None:
            return False
        primary = update.election_id.high << 64 | update.election_id.low
        return update.status.code == code_pb2.OK and primary == self.election_id

    @property
    def stream_alive(self) -> bool:
        return self._reader is not None and self._reader.is_alive()

    def send_packet_out(self, payload: bytes, metadata: dict[int, bytes]) -> None:
        request = p4runtime_pb2.StreamMessageRequest()
        request.packet.payload = payload
        for metadata_id, value in metadata.items():
            request.packet.metadata.add(metadata_id=metadata_id, value=value)
        self._requests.put(request)

    def close(self) -> None:
        self._requests.put(None)
        if isinstance(self._stream, grpc.Future):
            self._stream.cancel()
        self.channel.close()
        if self._reader is not None:
            self._reader.join(timeout=2)

    def __enter__(self) -> SwitchConnection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- pipeline ------------------------------------------------------------
    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int) -> None:
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        self._set_election_id(request.election_id)
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        request.config.cookie.cookie = cookie
        try:
            self.stub.SetForwardingPipelineConfig(request)
        except grpc.RpcError as exc:
            raise P4RuntimeError(f"{self.address}: set pipeline: {_details(exc)}") from exc

    def get_pipeline_cookie(self) -> int | None:
        """The cookie of the installed pipeline, or None if there is none."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY,
        )
        try:
            response = self.stub.GetForwardingPipelineConfig(request)
        except grpc.RpcError as exc:
            if _code(exc) == grpc.StatusCode.FAILED_PRECONDITION:
                return None  # no pipeline installed yet
            raise P4RuntimeError(f"{self.address}: get pipeline: {_details(exc)}") from exc
        if not response.config.HasField("cookie"):
            return None
        cookie: int = response.config.cookie.cookie
        return cookie

    def clear_multicast_groups(self) -> int:
        """Delete every multicast group. BMv2 keeps them across
        SetForwardingPipelineConfig, and a group written again after a push
        would then replicate twice."""
        if self.get_pipeline_cookie() is None:
            return 0  # no pipeline, no groups
        query = p4runtime_pb2.Entity()
        query.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        groups = [
            e
            for e in self.read(query)
            if e.packet_replication_engine_entry.HasField("multicast_group_entry")
        ]
        if groups:
            self.write([Update(type=DELETE, entity=g) for g in groups])
        return len(groups)

    # --- write / read --------------------------------------------------------
    def _set_election_id(self, election_id: p4runtime_pb2.Uint128) -> None:
        election_id.high = self.election_id >> 64
        election_id.low = self.election_id & ((1 << 64) - 1)

    def write(self, updates: Sequence[Update], batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        """Send updates in batches; raise WriteError listing every failed one."""
        self.write_serialized([u.SerializeToString() for u in updates], batch_size)

    def write_serialized(
        self,
        updates: Sequence[bytes],
        batch_size: int = DEFAULT_BATCH_SIZE,
        before_batch: Callable[[], None] | None = None,
    ) -> None:
        """Send updates given as serialized ``p4.v1.Update`` messages (the
        controller keeps its entities encoded; see ``PipelinedWrite``).
        Raises WriteError listing every failed update, after sending all."""
        writer = self.pipelined_write(batch_size, before_batch)
        writer.add(updates)
        writer.finish()

    def pipelined_write(
        self,
        batch_size: int = DEFAULT_BATCH_SIZE,
        before_batch: Callable[[], None] | None = None,
    ) -> PipelinedWrite:
        return PipelinedWrite(self, batch_size, before_batch)

    def write_entities(
        self, update_type: p4runtime_pb2.Update.Type, messages: Sequence[EntityMessage]
    ) -> None:
        self.write([Update(type=update_type, entity=to_entity(m)) for m in messages])

    def insert(self, *messages: EntityMessage) -> None:
        self.write_entities(INSERT, messages)

    def modify(self, *messages: EntityMessage) -> None:
        self.write_entities(MODIFY, messages)

    def delete(self, *messages: EntityMessage) -> None:
        self.write_entities(DELETE, messages)

    def read(self, *messages: EntityMessage) -> list[p4runtime_pb2.Entity]:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.extend(to_entity(m) for m in messages)
        try:
            return [entity for response in self.stub.Read(request) for entity in response.entities]
        except grpc.RpcError as exc:
            raise P4RuntimeError(f"{self.address}: read: {_details(exc)}") from exc


class PipelinedWrite:
    """Serialized updates sent in batches as they are added, with one batch
    in flight: the caller assembles (or compiles) the next while the switch
    processes the one before. Each WriteRequest is the request's own fields
    followed by the updates (``runtime.wire``), so nothing is parsed or
    encoded again. A batch is sent only once the switch answered the one
    before, so the batches apply in order.

    The next batch goes out from gRPC's completion callback, the moment the
    switch answers, not when the caller next adds: a caller that compiles
    several batches' worth between two ``add`` calls would otherwise leave
    the switch idle after each of its answers until the compile was done.
    What fails in the background (``before_batch`` raising, a lost
    connection) stops the sending and is raised by the next ``add`` or by
    ``finish``."""

    def __init__(
        self,
        conn: SwitchConnection,
        batch_size: int = DEFAULT_BATCH_SIZE,
        before_batch: Callable[[], None] | None = None,
    ) -> None:
        self.conn = conn
        self.batch_size = batch_size
        # Runs before each batch is sent, in the caller's thread or in
        # gRPC's; raising stops the write there.
        self.before_batch = before_batch
        head = p4runtime_pb2.WriteRequest(
            device_id=conn.device_id, atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
        )
        conn._set_election_id(head.election_id)
        self._head = head.SerializeToString()
        # (reentrant: a call that is already done runs its callback at once)
        self._lock = threading.RLock()
        self._answered = threading.Condition(self._lock)
        self._pending: list[bytes] = []  # added, not in a request yet
        self._queued: collections.deque[tuple[bytes, int]] = collections.deque()  # (request, first)
        self._numbered = 0  # updates put in requests so far (numbers errors)
        self._in_flight = False
        # Why the write stopped; only its text once it was raised (_raise_failure).
        self._failure: BaseException | str | None = None
        self.errors: list[UpdateError] = []

    def add(self, updates: Iterable[bytes]) -> None:
        with self._lock:
            self._raise_failure()
            self._pending.extend(updates)
            while len(self._pending) >= self.batch_size:
                self._enqueue(self._pending[: self.batch_size])
                del self._pending[: self.batch_size]
            if self._pending and self.switch_idle:
                # Nothing for the switch to work on: send what there is now
                # rather than wait for a whole batch (the first part of a build
                # goes out while the next compiles).
                self._enqueue(self._pending)
                self._pending = []
            self._next()
            self._raise_failure()

    @property
    def switch_idle(self) -> bool:
        """No batch in flight or waiting for one: the switch answered all."""
        with self._lock:
            return not self._in_flight and not self._queued

    def finish(self) -> None:
        """Send what is left, wait for every answer; raise WriteError listing
        every refused update (numbered from the first update added)."""
        with self._lock:
            if self._pending:
                self._enqueue(self._pending)
                self._pending = []
            self._next()
            while (self._in_flight or self._queued) and self._failure is None:
                self._answered.wait()
            self._raise_failure()
            if self.errors:
                raise WriteError(self.errors)

    def cancel(self) -> None:
        """Send nothing more and wait for the batch in flight: for a caller
        that gives up half-way (its compile failed), so that nothing it
        queued reaches the switch after it moved on (to read it back, say).
        ``add`` and ``finish`` raise afterwards."""
        with self._lock:
            self._pending = []
            if self._failure is None:
                self._stop(P4RuntimeError(f"{self.conn.address}: write cancelled"))
            while self._in_flight:
                self._answered.wait()

    def _enqueue(self, batch: list[bytes]) -> None:
        request = self._head + b"".join(wire.wrap_all(_REQUEST_UPDATES, batch))
        self._queued.append((request, self._numbered))
        self._numbered += len(batch)

    def _next(self) -> None:
        """Send the first queued request if none is in flight (lock held)."""
        if self._in_flight or not self._queued or self._failure is not None:
            return
        request, first = self._queued.popleft()
        try:
            if self.before_batch is not None:
                self.before_batch()
            call = self.conn._write_serialized.future(request)
        except Exception as exc:  # noqa: BLE001 -- the caller gets it (add or finish)
            self._stop(exc)
            return
        self._in_flight = True
        call.add_done_callback(lambda done: self._answer(done, request, first))

    def _answer(
        self, call: grpc.Future[p4runtime_pb2.WriteResponse], request: bytes, first: int
    ) -> None:
        """The switch answered (gRPC's thread): keep its refused updates,
        send the next request. Whatever goes wrong here is kept for the
        caller: raised in gRPC's thread, it would be logged and lost, and
        ``finish`` would wait for ever."""
        with self._lock:
            self._in_flight = False
            try:
                failure = self._errors_of(call, request, first)
                if failure is not None:
                    self._stop(failure)
                    return
                if not self._queued and self._pending:
                    # (as ``add`` does when the switch is idle)
                    self._enqueue(self._pending)
                    self._pending = []
            except Exception as exc:  # noqa: BLE001 -- the caller gets it (add or finish)
                self._stop(exc)
                return
            self._next()
            self._answered.notify_all()

    def _errors_of(
        self, call: grpc.Future[p4runtime_pb2.WriteResponse], request: bytes, first: int
    ) -> BaseException | None:
        """Keep the updates the switch refused; return why the request
        itself failed (the connection, not an update), if it did."""
        # (Errors asked for and made, never raised here: a raised error's
        # traceback holds this frame and _answer's, which hold this writer,
        # which keeps the error: a reference cycle, kept with every frame
        # in it until the collector runs. A gRPC call's error is the call.)
        failure = call.exception()
        if failure is None:
            return None
        if not isinstance(failure, grpc.RpcError):
            return failure
        if _code(failure) in (
            grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.CANCELLED,
            grpc.StatusCode.DEADLINE_EXCEEDED,
        ):
            lost = P4RuntimeError(f"{self.conn.address}: write: {_details(failure)}")
            lost.__cause__ = failure
            return lost
        # Decoded only now, to name the refused updates.
        sent = p4runtime_pb2.WriteRequest.FromString(request).updates
        self.errors += _update_errors(failure, sent, first, self.conn.p4info)
        return None

    def _stop(self, failure: BaseException) -> None:
        self._failure = failure
        self._queued.clear()
        self._answered.notify_all()

    def _raise_failure(self) -> None:
        """Raise why the write stopped: the failure itself the first time,
        a new P4RuntimeError naming it after that. (Once raised, the failure's
        traceback holds the frames of this writer's callers, which hold the
        writer: kept here, it would make a reference cycle.)"""
        failure = self._failure
        if failure is None:
            return
        if isinstance(failure, str):
            raise P4RuntimeError(failure)
        self._failure = f"write stopped earlier: {failure}"
        try:
            raise failure
        finally:
            del failure  # (this frame, in its traceback, must not hold it)


# grpc raises RpcError objects that are also grpc.Call (code, details,
# trailing metadata); the stubs type them as bare RpcError.
def _code(error: grpc.RpcError) -> grpc.StatusCode | None:
    code = getattr(error, "code", None)
    return code() if callable(code) else None


def _details(error: grpc.RpcError) -> str:
    details = getattr(error, "details", None)
    return str(details() or "") if callable(details) else str(error)


def _trailing_metadata(error: grpc.RpcError) -> tuple[tuple[str, str | bytes], ...]:
    metadata = getattr(error, "trailing_metadata", None)
    return tuple(metadata() or ()) if callable(metadata) else ()
