"""Durable desired state: VMs and index allocations in SQLite.

A restarted controller reloads both, compiles exactly what it compiled before
and, against a switch that kept its state, writes nothing. Each change is
written in one transaction: the VMs it touched and the indices it allocated
or freed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

from .allocation import Allocations
from .model import Vm

SCHEMA = """
CREATE TABLE IF NOT EXISTS vms (name TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS allocations (
    space TEXT NOT NULL, key TEXT NOT NULL, idx INTEGER NOT NULL,
    PRIMARY KEY (space, key));
"""

AllocationChange = tuple[str, str, int | None]  # (space, key, index or None: released)


_VM_FIELDS = tuple(f.name for f in fields(Vm))


def _body(vm: Vm) -> str:
    # (dataclasses.asdict deep-copies every field: slow for 100,000 VMs.)
    return json.dumps({name: getattr(vm, name) for name in _VM_FIELDS})


class Store:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._lock = threading.Lock()
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
        vms = {}
        for (body,) in rows:
            data = json.loads(body)
            data["ips"] = tuple(data["ips"])
            vms[data["name"]] = Vm(**data)
        return vms

    def load_allocations(self) -> Allocations:
        alloc = Allocations()
        with self._lock:
            rows = self._db.execute("SELECT space, key, idx FROM allocations").fetchall()
        for space, key, idx in rows:
            if space == "vni":
                alloc.vni.restore(int(key), idx)
            elif space == "tor":
                alloc.tor.restore(key, idx)
            elif space.startswith("vm@"):
                alloc.vm_space(space[3:]).restore(key, idx)
        return alloc

    def save(self, vms: Iterable[Vm], alloc: Allocations) -> None:
        """Make the stored state exactly ``vms`` and ``alloc``."""
        rows = [(vm.name, _body(vm)) for vm in vms]
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
        puts = [(vm.name, _body(vm)) for vm in upserts]
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

    def close(self) -> None:
        self._db.close()
