"""A connection to an etcd v3 cluster: endpoints, TLS, failover, clear errors.

Built on the `pyetcd` client (PyPI: etcd-sdk-python; see docs/ha.md for the
choice): it owns one gRPC channel per member and moves to another member when
one fails. Every call here goes through :meth:`EtcdConnection.call`, which
retries on the next member and, when none can answer, raises
StoreUnavailable saying how many members were reachable and whether any of
them has a raft leader (quorum).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import pyetcd
from pyetcd import etcdrpc

from ..model.fabric import TlsFiles
from .protocol import StateError, StoreUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

# Ask members to refuse (not hang) when they have no raft leader; etcd's own
# clients send the same metadata for watches and keepalives.
REQUIRE_LEADER = (("hasleader", "true"),)
# A whole desired state (10,000 VMs and their indices) is a few MiB.
MAX_MESSAGE = 64 * 1024 * 1024
# Per-try time added per key read or written (10,000 VMs and their indices
# take ~1 s on a 2-core machine).
SECONDS_PER_KEY = 0.0002
_RETRY_ON = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


@dataclass(frozen=True)
class EtcdSettings:
    endpoints: tuple[str, ...]  # "host:port" (an http:// or https:// scheme is accepted)
    prefix: str = "/p4vtep"
    tls: TlsFiles | None = None
    # How long a request may take, retries on other members included: it
    # rides through a raft election (1-2 s with etcd's default election
    # timeout) and bounds how long a write waits when etcd has no quorum.
    timeout: float = 4.0
    attempt_timeout: float = 1.0  # one try on one member (small requests)
    retry_member_after: float = 0.5  # a failed member is skipped this long

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise ValueError("etcd: no endpoints given")
        if not self.prefix.startswith("/") or self.prefix.endswith("/"):
            raise ValueError(f"etcd prefix must start and not end with '/': {self.prefix!r}")
        for endpoint in self.endpoints:
            host, _, port = _strip_scheme(endpoint).rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"etcd endpoint must be host:port: {endpoint!r}")


def _strip_scheme(endpoint: str) -> str:
    for scheme in ("http://", "https://"):
        if endpoint.startswith(scheme):
            return endpoint[len(scheme) :]
    return endpoint


def _member_failed(exc: grpc.RpcError) -> bool:
    """The member could not answer (down, no leader, timed out), as opposed
    to refusing the request itself."""
    if exc.code() in _RETRY_ON:
        return True
    # etcd passes its own request timeout on as UNKNOWN.
    return exc.code() == grpc.StatusCode.UNKNOWN and "deadline exceeded" in (exc.details() or "")


class EtcdConnection:
    def __init__(self, settings: EtcdSettings) -> None:
        self.settings = settings
        creds = None
        if settings.tls is not None:
            ca, cert, key = settings.tls.read()
            creds = grpc.ssl_channel_credentials(ca, key, cert)
        options = [
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ]
        endpoints = []
        for endpoint in settings.endpoints:
            host, _, port = _strip_scheme(endpoint).rpartition(":")
            endpoints.append(
                pyetcd.Endpoint(
                    host,
                    int(port),
                    secure=creds is not None,
                    creds=creds,
                    time_retry=settings.retry_member_after,
                    opts=options,
                )
            )
        self.client = pyetcd.MultiEndpointEtcd3Client(
            endpoints=endpoints, timeout=settings.timeout, failover=True
        )
        self._lock = threading.Lock()
        self._closed = False

    # -- calls ------------------------------------------------------------

    def channel(self) -> grpc.Channel:
        """The channel of a member not known to have failed."""
        with self._lock:
            try:
                channel: grpc.Channel = self.client.channel  # (pyetcd is untyped)
                return channel
            except pyetcd.exceptions.NoServerAvailableError:
                # Cheap on purpose (callers retry in a loop); call() adds
                # the diagnosis once it gives up.
                raise StoreUnavailable(
                    f"every etcd member failed in the last {self.settings.retry_member_after} s"
                ) from None

    def mark_failed(self) -> None:
        with self._lock:
            endpoint = self.client.endpoint_in_use
            if endpoint is not None:
                endpoint.fail()

    def call(
        self,
        what: str,
        rpc: Callable[[grpc.Channel, float], T],
        budget: float | None = None,
        attempt: float | None = None,
    ) -> T:
        """Run ``rpc(channel, timeout)`` on a member; when a member cannot
        answer, try the next, for up to ``budget`` seconds (default: the
        settings' timeout); then raise StoreUnavailable.

        Each try is cut at ``attempt`` seconds (default: the settings'
        attempt_timeout) because a request that reaches a follower just after
        the raft leader died is dropped by raft and would hang for the whole
        budget; the next try lands once a new leader is elected. Retrying
        is safe: every write here is guarded by a compare or idempotent."""
        budget = self.settings.timeout if budget is None else budget
        attempt = self.settings.attempt_timeout if attempt is None else attempt
        deadline = time.monotonic() + budget
        error: grpc.RpcError | None = None
        try:
            while (left := deadline - time.monotonic()) > 0:
                if self._closed:
                    raise StateError(f"etcd: cannot {what}: the connection is closed")
                try:
                    channel = self.channel()
                except StoreUnavailable:
                    time.sleep(min(0.05, left))  # every member failed just now
                    continue
                try:
                    return rpc(channel, min(left, attempt))
                except ValueError as exc:  # grpc: "Cannot invoke RPC on closed channel!"
                    if self._closed:
                        raise StateError(f"etcd: cannot {what}: the connection is closed") from exc
                    raise
                except grpc.RpcError as exc:
                    if not _member_failed(exc):
                        raise StateError(f"etcd refused to {what}: {exc.details()}") from exc
                    log.info("etcd member failed during %s: %s", what, exc.details())
                    error = exc
                    self.mark_failed()
            last = f" (last error: {error.details()})" if error is not None else ""
            raise StoreUnavailable(
                f"etcd: cannot {what} (tried {budget:.1f} s): {self.diagnose()}{last}"
            ) from error
        finally:
            # The last error's traceback holds this frame: forget it, or
            # the two stay a cycle until the collector runs.
            error = None

    def kv(self, what: str, request: Any, size: int = 0) -> Any:
        """A Range or Txn; ``size`` (keys read or written) stretches the
        per-try timeout for whole-state reads and large imports."""
        method = {
            etcdrpc.RangeRequest: "Range",
            etcdrpc.TxnRequest: "Txn",
        }[type(request)]
        attempt = self.settings.attempt_timeout + size * SECONDS_PER_KEY
        return self.call(
            what,
            lambda ch, timeout: getattr(etcdrpc.KVStub(ch), method)(
                request, timeout=timeout, metadata=REQUIRE_LEADER
            ),
            budget=max(self.settings.timeout, 2 * attempt + 1),
            attempt=attempt,
        )

    # -- diagnosis --------------------------------------------------------

    def diagnose(self) -> str:
        """Which members answer and whether any has a raft leader."""
        reachable, with_leader = [], []
        for endpoint in self.client.endpoints.values():
            try:
                status = etcdrpc.MaintenanceStub(endpoint.channel).Status(
                    etcdrpc.StatusRequest(), timeout=0.5
                )
            except grpc.RpcError:
                continue
            reachable.append(endpoint.netloc)
            if status.leader:
                with_leader.append(endpoint.netloc)
        total = len(self.settings.endpoints)
        if not reachable:
            return f"no etcd member reachable ({', '.join(self.settings.endpoints)})"
        if not with_leader:
            return (
                f"etcd has no quorum: {len(reachable)} of {total} members reachable "
                f"({', '.join(reachable)}) and none has a raft leader"
            )
        return (
            f"no answer in time although {len(with_leader)} of {total} members report a raft leader"
        )

    def close(self) -> None:
        self._closed = True  # threads still calling get StateError, not grpc's ValueError
        self.client.close()


def prefix_range_end(prefix: bytes) -> bytes:
    """The range_end that selects every key starting with ``prefix``."""
    end = bytearray(prefix)
    for i in reversed(range(len(end))):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\0"  # every key


class WatchLoop:
    """Follows a key range from a revision on, across member failures.

    ``on_events(events)`` gets each watch response's events
    (mvccpb.Event). When the revision to resume from has been compacted away,
    ``on_compacted()`` must resynchronise and return the revision to resume
    after. Runs on its own thread until :meth:`cancel`."""

    def __init__(
        self,
        connection: EtcdConnection,
        key: bytes,
        range_end: bytes,
        after_revision: int,
        on_events: Callable[[Sequence[Any]], None],
        on_compacted: Callable[[], int],
        name: str = "etcd-watch",
    ) -> None:
        self._connection = connection
        self._key = key
        self._range_end = range_end
        self._next_revision = after_revision + 1
        self._on_events = on_events
        self._on_compacted = on_compacted
        self._stop = threading.Event()
        self._call: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow()
            except StoreUnavailable as exc:
                log.info("watch paused: %s", exc)
            except grpc.RpcError as exc:
                if self._stop.is_set():
                    return
                log.info("watch stream ended (%s); resuming on another member", exc.details())
                self._connection.mark_failed()
            self._stop.wait(0.1)

    def _follow(self) -> None:
        channel = self._connection.channel()
        ended = threading.Event()

        def requests() -> Iterator[Any]:
            create = etcdrpc.WatchCreateRequest(
                key=self._key, range_end=self._range_end, start_revision=self._next_revision
            )
            yield etcdrpc.WatchRequest(create_request=create)
            ended.wait()  # keep the stream open until it ends

        self._call = etcdrpc.WatchStub(channel).Watch(requests(), metadata=REQUIRE_LEADER)
        try:
            for response in self._call:
                if response.compact_revision:
                    self._next_revision = self._on_compacted() + 1
                    return
                if response.canceled:
                    log.info("etcd cancelled the watch: %s", response.cancel_reason)
                    return
                if response.events:
                    self._on_events(response.events)
                    self._next_revision = response.events[-1].kv.mod_revision + 1
        finally:
            ended.set()
            self._call.cancel()

    def cancel(self) -> None:
        self._stop.set()
        if self._call is not None:
            self._call.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join(5)
