"""Leader election among controller replicas through an etcd lease.

A candidate holds a lease (TTL a few seconds, kept alive every TTL/3) and
becomes leader by creating ``P/leader`` attached to it, in a transaction that
succeeds only if the key does not exist. The key's create revision is the
leader's *term*: etcd revisions only grow, so every new leader has a higher
term, and the P4Runtime election id derived from it (ELECTION_ID_BASE + term)
makes the newest leader primary on every switch. When the leader dies its
keepalives stop, etcd deletes the key when the lease expires, and a waiting
candidate creates it.

A leader that cannot reach etcd must stop writing to the switches before its
lease can have expired: each keepalive sent at local time t0 and answered
with TTL proves the lease valid until at least t0 + TTL (etcd starts the TTL
when it receives the request, after t0). :meth:`may_write` is true only up to
that deadline minus a margin that covers one switch write in flight.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pyetcd import etcdrpc

from .etcd_connection import REQUIRE_LEADER, EtcdConnection, EtcdSettings, WatchLoop
from .etcd_store import EtcdKeys
from .protocol import LeaderInfo, Leadership, NotLeader, StateError, StoreUnavailable

log = logging.getLogger(__name__)

# Above any election id a controller is given by hand (--election-id), so a
# replica elected through etcd always wins arbitration over a static one.
ELECTION_ID_BASE = 1 << 64
_PUT = 0  # mvccpb.Event.EventType


class EtcdLeadership(Leadership):
    def __init__(
        self,
        settings: EtcdSettings,
        replica_id: str,
        address: str,
        *,
        ttl: int = 5,
        margin: float = 1.0,
        connection: EtcdConnection | None = None,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        if ttl < 2:
            raise ValueError(f"lease TTL must be at least 2 s, got {ttl}")
        if not 0 < margin < ttl * 2 / 3:
            raise ValueError(
                f"margin must be in (0, {ttl * 2 / 3:.2f}) s for TTL {ttl}, got {margin}"
            )
        self.replica_id = replica_id
        self.address = address
        self.ttl = ttl
        self.margin = margin
        self.keys = EtcdKeys(settings.prefix)
        self._connection = connection or EtcdConnection(settings)
        self._owns_connection = connection is None
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # leader key changed
        self._lease_id = 0
        self._term: int | None = None
        self._deadline = 0.0  # time.monotonic() until which our lease surely lives
        self._stop = threading.Event()
        self._keepalive: threading.Thread | None = None
        self._leader: LeaderInfo | None = None
        # Observe the leader key from now on (for leader() and campaigners).
        response = self._connection.kv(
            "read the leader", etcdrpc.RangeRequest(key=self.keys.leader)
        )
        self._leader = _leader_info(response.kvs[0]) if response.kvs else None
        self._watch = WatchLoop(
            self._connection,
            self.keys.leader,
            b"",
            response.header.revision,
            self._on_leader_events,
            self._reread_leader,
            name=f"leader-watch-{replica_id}",
        )

    # -- campaigning ------------------------------------------------------

    def campaign(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        # (what etcd's last failure said, not the error itself: kept, it
        # would hold this frame in a reference cycle through its traceback)
        unavailable: str | None = None
        while not self._stop.is_set():
            try:
                term = self._try_acquire()
                unavailable = None
            except StoreUnavailable as exc:  # etcd out of reach: keep trying
                log.warning("%s: campaign: %s", self.replica_id, exc)
                term, unavailable = None, str(exc)
            if term is not None:
                return term
            with self._changed:
                # Woken when the leader key changes; re-checked now and then
                # in case a watch event was lost to a member failure.
                left = 1.0 if end is None else min(1.0, end - time.monotonic())
                if left <= 0:
                    holder = self._leader.replica_id if self._leader else "none"
                    why = unavailable if unavailable is not None else f"leader: {holder}"
                    raise TimeoutError(f"{self.replica_id}: not leader after {timeout} s ({why})")
                if unavailable is not None:
                    self._changed.wait(min(left, 0.2))
                elif self._leader is not None:
                    self._changed.wait(left)
        raise StateError(f"{self.replica_id}: leadership closed")

    def _try_acquire(self) -> int | None:
        lease_id = self._ensure_lease()
        value = json.dumps({"id": self.replica_id, "address": self.address}).encode()
        leader = self.keys.leader
        request = etcdrpc.TxnRequest(
            compare=[
                etcdrpc.Compare(
                    key=leader,
                    target=etcdrpc.Compare.CREATE,
                    result=etcdrpc.Compare.EQUAL,
                    create_revision=0,
                )
            ],
            success=[
                etcdrpc.RequestOp(
                    request_put=etcdrpc.PutRequest(key=leader, value=value, lease=lease_id)
                )
            ],
            failure=[etcdrpc.RequestOp(request_range=etcdrpc.RangeRequest(key=leader))],
        )
        try:
            response = self._connection.kv("campaign for leadership", request)
        except StateError as exc:
            if self._stop.is_set():
                raise StateError(f"{self.replica_id}: leadership closed") from exc
            if "lease not found" not in str(exc):
                raise
            with self._lock:  # it expired while etcd was out of reach: take a new one
                self._lease_id = 0
            return None
        if response.succeeded:
            term = int(response.header.revision)  # the key's create revision
        else:
            kvs = response.responses[0].response_range.kvs
            if not kvs or kvs[0].lease != lease_id:
                with self._lock:
                    self._leader = _leader_info(kvs[0]) if kvs else None
                return None
            term = int(kvs[0].create_revision)  # ours already (a retried request)
        with self._lock:
            if self._stop.is_set():
                # close() ran while the request was in flight: it has already
                # revoked the lease (taking the key with it) or will let it
                # expire, so this win must not be kept.
                raise StateError(f"{self.replica_id}: leadership closed")
            self._term = term
            self._leader = LeaderInfo(self.replica_id, self.address, term)
        log.info("%s leads with term %d", self.replica_id, term)
        return term

    def _ensure_lease(self) -> int:
        with self._lock:
            if self._lease_id and time.monotonic() < self._deadline:
                return self._lease_id
        sent = time.monotonic()
        response = self._connection.call(
            "grant a lease",
            lambda ch, timeout: etcdrpc.LeaseStub(ch).LeaseGrant(
                etcdrpc.LeaseGrantRequest(TTL=self.ttl), timeout=timeout
            ),
        )
        with self._lock:
            self._lease_id = int(response.ID)
            self._deadline = sent + response.TTL
        if self._keepalive is None or not self._keepalive.is_alive():
            self._keepalive = threading.Thread(
                target=self._keep_alive, daemon=True, name=f"lease-{self.replica_id}"
            )
            self._keepalive.start()
        return int(response.ID)

    def _keep_alive(self) -> None:
        period = self.ttl / 3
        next_send = time.monotonic() + period
        while True:
            with self._lock:
                lease_id, leading = self._lease_id, self._term is not None
                write_until = self._deadline - self.margin
            now = time.monotonic()
            if leading and now >= write_until:
                # may_write() is already false (it reads the clock); tell the
                # owner now rather than after the next failed keepalive.
                self._lose("lease keepalives failing; the lease may expire")
                leading = False
            wake = min(next_send, write_until) if leading else next_send
            if self._stop.wait(max(0.01, wake - now)):
                return
            if time.monotonic() < next_send or not lease_id:
                next_send = max(next_send, time.monotonic() + (0 if lease_id else period))
                continue
            sent = time.monotonic()
            # A try never outlasts the write deadline, so the check above runs in time.
            budget = min(period, write_until - sent) if leading else period
            try:
                ttl = self._send_keepalive(lease_id, max(0.1, budget))
            except StateError as exc:
                log.warning("%s: lease keepalive failed: %s", self.replica_id, exc)
                next_send = time.monotonic() + 0.2  # retry soon: the deadline is running out
                continue
            next_send = sent + period
            with self._lock:
                if lease_id != self._lease_id:
                    continue
                if ttl <= 0:
                    self._lease_id = 0
                    self._deadline = 0.0
                else:
                    self._deadline = sent + ttl
            if ttl <= 0:
                self._lose("lease expired")

    def _send_keepalive(self, lease_id: int, budget: float) -> int:
        def keepalive(channel: Any, timeout: float) -> int:
            request = etcdrpc.LeaseKeepAliveRequest(ID=lease_id)
            for reply in etcdrpc.LeaseStub(channel).LeaseKeepAlive(
                iter([request]), timeout=timeout, metadata=REQUIRE_LEADER
            ):
                return int(reply.TTL)
            return 0

        return self._connection.call("keep the lease alive", keepalive, budget=budget)

    def _lose(self, reason: str) -> None:
        with self._lock:
            if self._term is None:
                return
            term, self._term = self._term, None
        log.warning("%s: leadership (term %d) lost: %s", self.replica_id, term, reason)
        if self._on_lost is not None:
            self._on_lost(reason)

    # -- observing --------------------------------------------------------

    def _on_leader_events(self, events: Sequence[Any]) -> None:
        event = events[-1]
        self._set_leader(_leader_info(event.kv) if event.type == _PUT else None)

    def _reread_leader(self) -> int:
        """The watch fell behind a compaction: read the key again."""
        response = self._connection.kv(
            "read the leader", etcdrpc.RangeRequest(key=self.keys.leader)
        )
        self._set_leader(_leader_info(response.kvs[0]) if response.kvs else None)
        return int(response.header.revision)

    def _set_leader(self, leader: LeaderInfo | None) -> None:
        with self._changed:
            self._leader = leader
            ours = self._term
            self._changed.notify_all()
        if ours is not None and (leader is None or leader.term != ours):
            self._lose("the leader key was deleted or replaced")

    @property
    def term(self) -> int | None:
        with self._lock:
            return self._term

    def may_write(self) -> bool:
        with self._lock:
            return self._term is not None and time.monotonic() < self._deadline - self.margin

    def write_deadline(self) -> float:
        """time.monotonic() after which this replica must not write."""
        with self._lock:
            return self._deadline - self.margin if self._term is not None else 0.0

    def election_id(self) -> int:
        term = self.term
        if term is None:
            raise NotLeader(f"{self.replica_id} does not lead: no election id")
        return ELECTION_ID_BASE + term

    def leader(self) -> LeaderInfo | None:
        with self._lock:
            return self._leader

    # -- leaving ----------------------------------------------------------

    def resign(self) -> None:
        """Give up leadership now (delete the key, revoke the lease) so a
        follower takes over without waiting for the TTL."""
        with self._lock:
            term, lease_id = self._term, self._lease_id
            self._term, self._lease_id, self._deadline = None, 0, 0.0
        if term is not None:
            self._connection.kv(
                "resign",
                etcdrpc.TxnRequest(
                    compare=[
                        etcdrpc.Compare(
                            key=self.keys.leader,
                            target=etcdrpc.Compare.CREATE,
                            result=etcdrpc.Compare.EQUAL,
                            create_revision=term,
                        )
                    ],
                    success=[
                        etcdrpc.RequestOp(
                            request_delete_range=etcdrpc.DeleteRangeRequest(key=self.keys.leader)
                        )
                    ],
                ),
            )
        if lease_id:
            self._connection.call(
                "revoke the lease",
                lambda ch, timeout: etcdrpc.LeaseStub(ch).LeaseRevoke(
                    etcdrpc.LeaseRevokeRequest(ID=lease_id), timeout=timeout
                ),
            )

    def close(self) -> None:
        with self._lock:  # idempotent: owners and test fixtures may both close
            if self._stop.is_set():
                return
            self._stop.set()  # first: a campaign in progress stops
        try:
            self.resign()
        except StateError as exc:
            log.warning("%s: could not resign (the lease will expire): %s", self.replica_id, exc)
        with self._changed:
            self._changed.notify_all()
        self._watch.cancel()
        if self._keepalive is not None:
            self._keepalive.join(5)
        if self._owns_connection:
            self._connection.close()


def _leader_info(kv: Any) -> LeaderInfo:
    data = json.loads(kv.value)
    return LeaderInfo(data["id"], data["address"], int(kv.create_revision))
