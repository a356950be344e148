"""The desired state in etcd v3, shared by controller replicas.

Keys (``P`` is the configured prefix, default ``/p4vtep``; name segments are
percent-encoded):

    P/vms/<vm name>              JSON of the VM (p4vtep.model.fabric.Vm fields)
    P/alloc/<space>/<key>        decimal index, e.g. P/alloc/vm@tor1/vm7 -> "12"
    P/meta/revision              JSON {"by": replica id, "commit": commit id}

Every commit is one etcd transaction that writes its keys and P/meta/revision,
under the compare "P/meta/revision's mod_revision is still the revision the
change was based on". The store revision is therefore the mod_revision of
P/meta/revision (0 before the first commit), and two replicas that both read
revision r cannot both commit: the second gets Conflict. Whole-store
optimistic concurrency is deliberate: index allocations of two changes can
clash on keys neither change touches (the same free index), so per-key
compares would not be enough.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, unquote

from pyetcd import etcdrpc

from ..model.fabric import Vm
from .etcd_connection import EtcdConnection, EtcdSettings, WatchLoop, prefix_range_end
from .protocol import (
    AllocKey,
    Change,
    Conflict,
    NotLeader,
    Snapshot,
    StateEvent,
    StateStore,
    StoreUnavailable,
)
from .rows import vm_from_json, vm_to_json

log = logging.getLogger(__name__)

_PUT, _DELETE = 0, 1  # mvccpb.Event.EventType


class EtcdKeys:
    """The key layout under one prefix."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.encode()
        self.vms = self.prefix + b"/vms/"
        self.alloc = self.prefix + b"/alloc/"
        self.meta = self.prefix + b"/meta/revision"
        self.leader = self.prefix + b"/leader"

    def vm(self, name: str) -> bytes:
        return self.vms + quote(name, safe="").encode()

    def alloc_row(self, row: AllocKey) -> bytes:
        space, key = row
        return self.alloc + f"{quote(space, safe='')}/{quote(key, safe='')}".encode()

    def parse_alloc(self, key: bytes) -> AllocKey:
        space, _, name = key[len(self.alloc) :].decode().partition("/")
        return unquote(space), unquote(name)


class EtcdStateStore(StateStore):
    def __init__(
        self, settings: EtcdSettings, replica_id: str, connection: EtcdConnection | None = None
    ) -> None:
        self.replica_id = replica_id
        self.keys = EtcdKeys(settings.prefix)
        self._connection = connection or EtcdConnection(settings)
        self._owns_connection = connection is None
        self._lock = threading.Lock()
        self._view = Snapshot(0, {}, {})
        self._view_etcd_revision = 0  # etcd revision the view is complete up to
        self._watchers: list[_Watcher] = []
        self._loop: WatchLoop | None = None

    # -- reading ----------------------------------------------------------

    def load(self) -> Snapshot:
        k = self.keys

        def range_of(start: bytes, end: bytes | None = None) -> Any:
            request = etcdrpc.RangeRequest(key=start, range_end=end or b"")
            return etcdrpc.RequestOp(request_range=request)

        # One read-only transaction: the three ranges at one revision.
        request = etcdrpc.TxnRequest(
            success=[
                range_of(k.vms, prefix_range_end(k.vms)),
                range_of(k.alloc, prefix_range_end(k.alloc)),
                range_of(k.meta),
            ]
        )
        known = self.snapshot()  # its size guesses the read's; a first load may be large
        size = max(10_000, len(known.vms) + len(known.allocations))
        response = self._connection.kv("read the desired state", request, size)
        vms_kvs, alloc_kvs, meta_kvs = (r.response_range.kvs for r in response.responses)
        snapshot = Snapshot(
            revision=meta_kvs[0].mod_revision if meta_kvs else 0,
            vms={vm.name: vm for vm in (vm_from_json(kv.value) for kv in vms_kvs)},
            allocations={k.parse_alloc(kv.key): int(kv.value) for kv in alloc_kvs},
        )
        with self._lock:
            if response.header.revision >= self._view_etcd_revision:
                self._view = snapshot
                self._view_etcd_revision = response.header.revision
        return snapshot

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._view

    # -- committing -------------------------------------------------------

    def commit(
        self,
        change: Change,
        base_revision: int,
        *,
        fence_term: int | None = None,
        commit_id: str | None = None,
    ) -> int:
        if change.empty:
            return base_revision
        k = self.keys
        commit_id = commit_id or uuid.uuid4().hex
        meta_value = json.dumps({"by": self.replica_id, "commit": commit_id}).encode()
        compare = [
            etcdrpc.Compare(
                key=k.meta,
                target=etcdrpc.Compare.MOD,
                result=etcdrpc.Compare.EQUAL,
                mod_revision=base_revision,
            )
        ]
        if fence_term is not None:
            # Only the leader of this term may commit: etcd checks it in the
            # same transaction, so a deposed leader cannot slip a change in.
            compare.append(
                etcdrpc.Compare(
                    key=k.leader,
                    target=etcdrpc.Compare.CREATE,
                    result=etcdrpc.Compare.EQUAL,
                    create_revision=fence_term,
                )
            )
        ops = [_delete(k.vm(name)) for name in change.removals]
        ops += [_delete(k.alloc_row(row)) for row in change.alloc_removed]
        ops += [_put(k.vm(vm.name), vm_to_json(vm).encode()) for vm in change.upserts]
        ops += [_put(k.alloc_row(row), str(i).encode()) for row, i in change.alloc_set.items()]
        ops.append(_put(k.meta, meta_value))
        request = etcdrpc.TxnRequest(
            compare=compare,
            success=ops,
            failure=[
                etcdrpc.RequestOp(request_range=etcdrpc.RangeRequest(key=k.meta)),
                etcdrpc.RequestOp(request_range=etcdrpc.RangeRequest(key=k.leader)),
            ],
        )
        try:
            response = self._connection.kv("commit a change", request, len(ops))
        except StoreUnavailable as exc:
            raise StoreUnavailable(
                f"{exc}; the change is not acknowledged and may still be applied when etcd "
                f"recovers: commit it again with commit_id={commit_id!r} to apply it once",
                commit_id,
            ) from exc
        if response.succeeded:
            revision: int = response.header.revision
        else:
            revision = self._refused(response, base_revision, fence_term, commit_id)
        with self._lock:
            if self._view.revision == base_revision:
                self._view = _applied(self._view, revision, change)
                self._view_etcd_revision = max(self._view_etcd_revision, revision)
        return revision

    def _refused(
        self, response: Any, base_revision: int, fence_term: int | None, commit_id: str
    ) -> int:
        meta_kvs, leader_kvs = (r.response_range.kvs for r in response.responses)
        current = meta_kvs[0].mod_revision if meta_kvs else 0
        meta = json.loads(meta_kvs[0].value) if meta_kvs else {}
        if meta.get("commit") == commit_id:
            # A retry of a commit that had landed (its answer was lost with
            # a member, or etcd applied it after regaining quorum).
            return current
        if fence_term is not None:
            term = leader_kvs[0].create_revision if leader_kvs else 0
            if term != fence_term:
                raise NotLeader(
                    f"{self.replica_id}: leadership term {fence_term} is over "
                    f"(current term: {term or 'none'}); change not committed"
                )
        raise Conflict(
            f"{self.replica_id}: the desired state changed since revision {base_revision} "
            f"(now {current}, committed by {meta.get('by', '?')}); change not committed",
            base_revision,
            current,
        )

    # -- following other replicas -----------------------------------------

    def watch(
        self, callback: Callable[[StateEvent], None], *, include_own: bool = False
    ) -> _Watcher:
        watcher = _Watcher(self, callback, include_own)
        with self._lock:
            self._watchers.append(watcher)
            start = self._loop is None
            after = self._view_etcd_revision
        if start:
            if after == 0:
                self.load()
                after = self._view_etcd_revision
            self._loop = WatchLoop(
                self._connection,
                self.keys.prefix + b"/",
                prefix_range_end(self.keys.prefix + b"/"),
                after,
                self._on_events,
                self._resync,
                name=f"state-watch-{self.replica_id}",
            )
        return watcher

    def _on_events(self, events: Sequence[Any]) -> None:
        by_revision: dict[int, list[Any]] = {}
        for event in events:
            by_revision.setdefault(event.kv.mod_revision, []).append(event)
        for revision, group in sorted(by_revision.items()):
            state_event = self._decode(revision, group)
            with self._lock:
                # Own commits (and anything a later load() read) are in the
                # view already; the rest is applied here.
                if revision > self._view_etcd_revision:
                    self._view_etcd_revision = revision
                    if state_event is not None:
                        self._view = _applied(self._view, revision, _as_change(state_event))
                watchers = list(self._watchers)
            if state_event is None:
                continue  # e.g. the leader key: not desired state
            for watcher in watchers:
                if watcher.include_own or state_event.origin != self.replica_id:
                    watcher.deliver(state_event)

    def _decode(self, revision: int, events: Sequence[Any]) -> StateEvent | None:
        k = self.keys
        origin, upserts, removals = None, {}, set()
        alloc_set: dict[AllocKey, int] = {}
        alloc_removed: set[AllocKey] = set()
        for event in events:
            key, put = event.kv.key, event.type == _PUT
            if key == k.meta:
                origin = json.loads(event.kv.value).get("by", "") if put else ""
            elif key.startswith(k.vms):
                if put:
                    vm = vm_from_json(event.kv.value)
                    upserts[vm.name] = vm
                else:
                    removals.add(unquote(key[len(k.vms) :].decode()))
            elif key.startswith(k.alloc):
                if put:
                    alloc_set[k.parse_alloc(key)] = int(event.kv.value)
                else:
                    alloc_removed.add(k.parse_alloc(key))
        if origin is None:
            return None  # not a commit (no meta key written)
        return StateEvent(
            revision, origin, upserts, frozenset(removals), alloc_set, frozenset(alloc_removed)
        )

    def _resync(self) -> int:
        """The watch fell behind a compaction: reload and report the
        difference from the last known view as one event."""
        before = self.snapshot()
        after = self.load()
        event = StateEvent(
            after.revision,
            "",
            {n: vm for n, vm in after.vms.items() if before.vms.get(n) != vm},
            frozenset(before.vms.keys() - after.vms.keys()),
            {r: i for r, i in after.allocations.items() if before.allocations.get(r) != i},
            frozenset(before.allocations.keys() - after.allocations.keys()),
        )
        with self._lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher.deliver(event)
        return self._view_etcd_revision

    def _unsubscribe(self, watcher: _Watcher) -> None:
        with self._lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            self._loop = None
        if self._owns_connection:
            self._connection.close()


class _Watcher:
    def __init__(
        self, store: EtcdStateStore, callback: Callable[[StateEvent], None], include_own: bool
    ) -> None:
        self._store = store
        self.callback = callback
        self.include_own = include_own

    def deliver(self, event: StateEvent) -> None:
        try:
            self.callback(event)
        except Exception:
            log.exception("state watch callback failed")

    def cancel(self) -> None:
        self._store._unsubscribe(self)


def _put(key: bytes, value: bytes) -> Any:
    return etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=key, value=value))


def _delete(key: bytes) -> Any:
    return etcdrpc.RequestOp(request_delete_range=etcdrpc.DeleteRangeRequest(key=key))


def _as_change(event: StateEvent) -> Change:
    return Change(
        tuple(event.upserts.values()),
        tuple(event.removals),
        dict(event.alloc_set),
        tuple(event.alloc_removed),
    )


def _applied(view: Snapshot, revision: int, change: Change) -> Snapshot:
    vms: dict[str, Vm] = dict(view.vms)
    for name in change.removals:
        vms.pop(name, None)
    vms.update((vm.name, vm) for vm in change.upserts)
    allocations = dict(view.allocations)
    for row in change.alloc_removed:
        allocations.pop(row, None)
    allocations.update(change.alloc_set)
    return Snapshot(revision, vms, allocations)
