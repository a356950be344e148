"""Durable desired state: VMs and index allocations in SQLite.

A restarted controller reloads both, compiles exactly what it compiled before
and, against a switch that kept its state, writes nothing. Each change is
written in one transaction: the VMs it touched and the indices it allocated
or freed.

This is the default :class:`~p4vtep.state.protocol.StateStore` of a single
controller (nothing to start). Its revision counts the commits made through
this object since it was opened: one controller owns the file, so nobody else
commits and there is nothing to watch.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..model.allocation import Allocations
from ..model.fabric import Vm
from .protocol import Change, Conflict, Snapshot, StateEvent, StateStore
from .rows import allocations_from_rows, vm_from_json, vm_to_json, vms_from_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS vms (name TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS allocations (
    space TEXT NOT NULL, key TEXT NOT NULL, idx INTEGER NOT NULL,
    PRIMARY KEY (space, key));
"""

AllocationChange = tuple[str, str, int | None]  # (space, key, index or None: released)


class _NoSubscription:
    def cancel(self) -> None:
        pass


class Store(StateStore):
    def __init__(self, path: str | Path = ":memory:", replica_id: str = "local") -> None:
        self.path = str(path)
        self.replica_id = replica_id
        self.revision = 0  # commits through this object (StateStore revision)
        self._lock = threading.Lock()
        self._commit_lock = threading.Lock()  # check revision, write, count: one step
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # Durable across a controller crash; an OS crash may lose the last
        # changes, which the orchestrators and the inventory will resend.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction under the store's lock: committed if the block
        finishes, rolled back if it raises."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def load_vms(self) -> dict[str, Vm]:
        with self._lock:
            rows = self._db.execute("SELECT body FROM vms").fetchall()
        vms = (vm_from_json(body) for (body,) in rows)
        return {vm.name: vm for vm in vms}

    def load_allocations(self) -> Allocations:
        with self._lock:
            rows = self._db.execute("SELECT space, key, idx FROM allocations").fetchall()
        return allocations_from_rows({(space, key): idx for space, key, idx in rows})

    def save(self, vms: Iterable[Vm], alloc: Allocations) -> None:
        """Make the stored state exactly ``vms`` and ``alloc``."""
        rows = [(vm.name, vm_to_json(vm)) for vm in vms]
        with self._transaction() as db:
            db.execute("DELETE FROM vms")
            db.executemany("INSERT INTO vms VALUES (?, ?)", rows)
            db.execute("DELETE FROM allocations")
            db.executemany("INSERT INTO allocations VALUES (?, ?, ?)", list(alloc.rows()))
        alloc.take_changes()

    def save_changes(
        self,
        upserts: Iterable[Vm],
        removals: Iterable[str],
        allocations: Iterable[AllocationChange] = (),
    ) -> None:
        """Write a few changed VMs and the allocations they changed, without
        looking at the others."""
        puts = [(vm.name, vm_to_json(vm)) for vm in upserts]
        gone = [(name,) for name in removals]
        alloc_puts, alloc_gone = [], []
        for space, key, index in allocations:
            if index is None:
                alloc_gone.append((space, key))
            else:
                alloc_puts.append((space, key, index))
        with self._transaction() as db:
            db.executemany("DELETE FROM vms WHERE name = ?", gone)
            db.executemany("INSERT OR REPLACE INTO vms VALUES (?, ?)", puts)
            db.executemany("DELETE FROM allocations WHERE space = ? AND key = ?", alloc_gone)
            db.executemany("INSERT OR REPLACE INTO allocations VALUES (?, ?, ?)", alloc_puts)

    def save_allocations(self, allocations: Iterable[AllocationChange]) -> None:
        self.save_changes((), (), allocations)

    # --- the StateStore protocol -------------------------------------------------
    def load(self) -> Snapshot:
        with self._lock:
            vm_rows = self._db.execute("SELECT body FROM vms").fetchall()
            alloc_rows = self._db.execute("SELECT space, key, idx FROM allocations").fetchall()
            revision = self.revision
        vms = vms_from_json([body for (body,) in vm_rows])
        return Snapshot(
            revision,
            {vm.name: vm for vm in vms},
            {(space, key): idx for space, key, idx in alloc_rows},
        )

    def snapshot(self) -> Snapshot:
        return self.load()  # a local file: always reachable

    def commit(
        self,
        change: Change,
        base_revision: int,
        *,
        fence_term: int | None = None,
        commit_id: str | None = None,
    ) -> int:
        """``fence_term`` and ``commit_id`` have no use with one local writer."""
        with self._commit_lock:
            if base_revision != self.revision:
                raise Conflict(
                    f"{self.path}: the desired state changed since revision {base_revision} "
                    f"(now {self.revision}); change not committed",
                    base_revision,
                    self.revision,
                )
            rows: list[AllocationChange] = [(s, k, i) for (s, k), i in change.alloc_set.items()]
            rows += [(s, k, None) for s, k in change.alloc_removed]
            self.save_changes(change.upserts, change.removals, rows)
            self.revision += 1
            return self.revision

    def watch(
        self, callback: Callable[[StateEvent], None], *, include_own: bool = False
    ) -> _NoSubscription:
        return _NoSubscription()

    def close(self) -> None:
        self._db.close()
