"""An in-process P4Runtime server for unit tests: no BMv2, no root.

It keeps what a switch keeps, by the same identity the controller uses
(``compiler.state.identity``), and answers the way BMv2's P4Runtime server does where the
controller depends on it:

- StreamChannel: arbitration by election id; the highest id is primary,
  every stream is told who is (OK to the primary, ALREADY_EXISTS to backups).
- Write: only from the primary; CONTINUE_ON_ERROR semantics, with one
  ``p4.v1.Error`` per update in the status details when any update fails.
- Read: wildcard reads by table/profile/meter id, as the reconciler issues.
- Set/GetForwardingPipelineConfig: a push drops table entries, members,
  groups and meter configs but keeps multicast groups (as BMv2 does).

Tests steer it: ``refuse`` makes chosen updates fail, ``drop_streams`` cuts
every client's stream, ``take_primary``/``release_primary`` stand in for
another controller winning or giving up the election.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass

import grpc
from p4vtep.compiler.switch_state import Key, identity
from p4vtep.runtime.protos import code_pb2, p4runtime_pb2, p4runtime_pb2_grpc, status_pb2

Entity = p4runtime_pb2.Entity
Update = p4runtime_pb2.Update
# Decides whether an update is refused: None lets it through, else the
# google.rpc code and message to answer with.
Refusal = Callable[[Update], "tuple[int, str] | None"]


def _election(value: p4runtime_pb2.Uint128) -> int:
    return value.high << 64 | value.low


@dataclass
class _Stream:
    election_id: int | None
    responses: queue.Queue[p4runtime_pb2.StreamMessageResponse | None]
    context: grpc.ServicerContext


class FakeP4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device_id: int = 1, port: int = 0) -> None:
        """``port`` 0 takes a free one; another is for a switch that comes up
        where a client already tries to reach it."""
        self.device_id = device_id
        self.entities: dict[Key, Entity] = {}
        self.config: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self.write_requests: list[p4runtime_pb2.WriteRequest] = []  # every Write received
        self.pipeline_pushes = 0
        self.reads = 0  # Read RPCs answered
        self.stream_opened: list[float] = []  # monotonic time of every StreamChannel
        self.packet_outs: list[p4runtime_pb2.PacketOut] = []  # every packet-out received
        self.reject_streams = False  # answer every new stream with UNAVAILABLE
        # Answer every Write with UNAVAILABLE, as gRPC does when the
        # connection drops while a write is out.
        self.fail_writes = False
        self.failed_writes = 0  # Writes answered UNAVAILABLE for it
        self._refusals: list[Refusal] = []
        self._streams: list[_Stream] = []
        self._foreign_primary: int | None = None  # another controller's election id
        self._lock = threading.RLock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port(f"127.0.0.1:{port}")
        self.address = f"127.0.0.1:{self.port}"

    # --- lifecycle -----------------------------------------------------------
    def start(self) -> FakeP4RuntimeServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self.drop_streams()
        self._server.stop(0).wait()

    def __enter__(self) -> FakeP4RuntimeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- steering ------------------------------------------------------------
    def refuse(self, predicate: Callable[[Update], bool], code: int, message: str) -> None:
        """From now on, answer every update matching ``predicate`` with ``code``."""
        self._refusals.append(lambda u: (code, message) if predicate(u) else None)

    def accept_all(self) -> None:
        self._refusals.clear()

    def drop_streams(self) -> None:
        """Cut every client's stream, as a switch restart or a network cut does."""
        with self._lock:
            streams, self._streams = self._streams, []
        for stream in streams:
            stream.responses.put(None)

    def take_primary(self, election_id: int) -> None:
        """Another controller arbitrates with ``election_id`` (wins if higher)."""
        with self._lock:
            self._foreign_primary = election_id
            self._announce()

    def release_primary(self) -> None:
        """The other controller leaves; the highest remaining id is primary."""
        with self._lock:
            self._foreign_primary = None
            self._announce()

    def send_packet_in(self, payload: bytes, metadata: dict[int, bytes] | None = None) -> bool:
        """A frame punted to the CPU: to the primary's stream, as a switch
        sends packet-ins (False: no client is primary)."""
        response = p4runtime_pb2.StreamMessageResponse()
        response.packet.payload = payload
        for metadata_id, value in (metadata or {}).items():
            response.packet.metadata.add(metadata_id=metadata_id, value=value)
        with self._lock:
            primary = self.primary_id()
            for stream in self._streams:
                if stream.election_id == primary and primary != self._foreign_primary:
                    stream.responses.put(response)
                    return True
        return False

    @property
    def stream_count(self) -> int:
        with self._lock:
            return len(self._streams)

    def table_entries(self) -> list[p4runtime_pb2.TableEntry]:
        with self._lock:
            return [e.table_entry for e in self.entities.values() if e.HasField("table_entry")]

    # --- arbitration ---------------------------------------------------------
    def primary_id(self) -> int | None:
        ids = [s.election_id for s in self._streams if s.election_id is not None]
        if self._foreign_primary is not None:
            ids.append(self._foreign_primary)
        return max(ids, default=None)

    def _announce(self) -> None:
        primary = self.primary_id()
        for stream in self._streams:
            if stream.election_id is not None:
                stream.responses.put(self._arbitration_response(stream, primary))

    def _arbitration_response(
        self, stream: _Stream, primary: int | None
    ) -> p4runtime_pb2.StreamMessageResponse:
        response = p4runtime_pb2.StreamMessageResponse()
        arbitration = response.arbitration
        arbitration.device_id = self.device_id
        if primary is None:
            arbitration.status.code = code_pb2.NOT_FOUND
            return response
        arbitration.election_id.high = primary >> 64
        arbitration.election_id.low = primary & ((1 << 64) - 1)
        is_primary = stream.election_id == primary and primary != self._foreign_primary
        arbitration.status.code = code_pb2.OK if is_primary else code_pb2.ALREADY_EXISTS
        return response

    def _is_primary(self, election_id: p4runtime_pb2.Uint128) -> bool:
        with self._lock:
            primary = self.primary_id()
            return (
                primary is not None
                and _election(election_id) == primary
                and (primary != self._foreign_primary)
            )

    # --- RPCs ----------------------------------------------------------------
    def StreamChannel(
        self,
        request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
        context: grpc.ServicerContext,
    ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        self.stream_opened.append(time.monotonic())
        if self.reject_streams:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the fake switch refuses streams")
        stream = _Stream(None, queue.Queue(), context)
        with self._lock:
            self._streams.append(stream)

        def read_requests() -> None:
            try:
                for request in request_iterator:
                    kind = request.WhichOneof("update")
                    if kind == "arbitration":
                        with self._lock:
                            stream.election_id = _election(request.arbitration.election_id)
                            self._announce()
                    elif kind == "packet":
                        with self._lock:
                            self.packet_outs.append(request.packet)
            except grpc.RpcError:
                pass
            finally:
                with self._lock:
                    if stream in self._streams:
                        self._streams.remove(stream)
                        self._announce()
                stream.responses.put(None)

        threading.Thread(target=read_requests, daemon=True).start()
        while True:
            response = stream.responses.get()
            if response is None:
                break
            yield response
        if context.is_active():
            context.abort(grpc.StatusCode.UNAVAILABLE, "stream dropped by the fake switch")

    def Write(
        self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.WriteResponse:
        with self._lock:
            self.write_requests.append(request)
            if self.fail_writes:
                self.failed_writes += 1
                context.abort(grpc.StatusCode.UNAVAILABLE, "connection lost (fake switch)")
            if not self._is_primary(request.election_id):
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the primary")
            if self.config is None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline set")
            errors = [self._apply(update) for update in request.updates]
        if any(code != code_pb2.OK for code, _ in errors):
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message="write failed")
            for code, message in errors:
                status.details.add().Pack(p4runtime_pb2.Error(canonical_code=code, message=message))
            context.set_trailing_metadata(
                (("grpc-status-details-bin", status.SerializeToString()),)
            )
            context.abort(grpc.StatusCode.UNKNOWN, "write failed")
        return p4runtime_pb2.WriteResponse()

    def _apply(self, update: Update) -> tuple[int, str]:
        for refusal in self._refusals:
            refused = refusal(update)
            if refused is not None:
                return refused
        entity = update.entity
        key = _key(entity)
        modify_only = entity.HasField("meter_entry") or (
            entity.HasField("table_entry") and entity.table_entry.is_default_action
        )
        if update.type == Update.INSERT:
            if modify_only:
                return code_pb2.INVALID_ARGUMENT, "can only be modified"
            if key in self.entities:
                return code_pb2.ALREADY_EXISTS, "entry exists"
            self.entities[key] = _copy(entity)
        elif update.type == Update.MODIFY:
            if key not in self.entities and not modify_only:
                return code_pb2.NOT_FOUND, "no such entry"
            if entity.HasField("meter_entry") and not entity.meter_entry.HasField("config"):
                self.entities.pop(key, None)  # reset to unmetered
            else:
                self.entities[key] = _copy(entity)
        elif update.type == Update.DELETE:
            if key not in self.entities:
                return code_pb2.NOT_FOUND, "no such entry"
            del self.entities[key]
        else:
            return code_pb2.INVALID_ARGUMENT, "unspecified update type"
        return code_pb2.OK, ""

    def Read(
        self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.ReadResponse]:
        with self._lock:
            self.reads += 1
            found = [
                _copy(held)
                for wanted in request.entities
                for held in self.entities.values()
                if _matches(wanted, held)
            ]
        yield p4runtime_pb2.ReadResponse(entities=found)

    def SetForwardingPipelineConfig(
        self,
        request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        with self._lock:
            if not self._is_primary(request.election_id):
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the primary")
            self.config = p4runtime_pb2.ForwardingPipelineConfig()
            self.config.CopyFrom(request.config)
            self.pipeline_pushes += 1
            # BMv2 keeps the replication engine's groups across a push.
            self.entities = {
                k: e
                for k, e in self.entities.items()
                if e.HasField("packet_replication_engine_entry")
            }
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(
        self,
        request: p4runtime_pb2.GetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        with self._lock:
            if self.config is None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline set")
            response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
            if request.response_type == request.COOKIE_ONLY:
                response.config.cookie.CopyFrom(self.config.cookie)
            else:
                response.config.CopyFrom(self.config)
        return response


def _copy(entity: Entity) -> Entity:
    copy = Entity()
    copy.CopyFrom(entity)
    return copy


def _key(entity: Entity) -> Key:
    return identity(entity)


def _matches(wanted: Entity, held: Entity) -> bool:
    """Whether ``held`` answers the wildcard read ``wanted`` (zero = any)."""
    kind = wanted.WhichOneof("entity")
    if kind != held.WhichOneof("entity"):
        return False
    if kind == "table_entry":
        w, h = wanted.table_entry, held.table_entry
        if w.is_default_action != h.is_default_action:
            return False
        return w.table_id in (0, h.table_id) and (not w.match or w.match == h.match)
    if kind == "action_profile_member":
        return wanted.action_profile_member.action_profile_id in (
            0,
            held.action_profile_member.action_profile_id,
        )
    if kind == "action_profile_group":
        return wanted.action_profile_group.action_profile_id in (
            0,
            held.action_profile_group.action_profile_id,
        )
    if kind == "packet_replication_engine_entry":
        w_pre, h_pre = wanted.packet_replication_engine_entry, held.packet_replication_engine_entry
        if w_pre.WhichOneof("type") != h_pre.WhichOneof("type"):
            return False
        group = w_pre.multicast_group_entry.multicast_group_id
        return group in (0, h_pre.multicast_group_entry.multicast_group_id)
    if kind == "meter_entry":
        w_meter, h_meter = wanted.meter_entry, held.meter_entry
        if w_meter.meter_id not in (0, h_meter.meter_id):
            return False
        return not w_meter.HasField("index") or w_meter.index.index == h_meter.index.index
    return False
