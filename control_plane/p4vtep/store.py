"""Durable desired state: VMs and index allocations in SQLite.

A restarted controller reloads both, compiles exactly what it compiled before
and, against a switch that kept its state, writes nothing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from .compiler import Allocations
from .model import Vm

SCHEMA = """
CREATE TABLE IF NOT EXISTS vms (name TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS allocations (
    space TEXT NOT NULL, key TEXT NOT NULL, idx INTEGER NOT NULL,
    PRIMARY KEY (space, key));
"""


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
        # What the database holds, so a save writes only what changed.
        self._vm_rows: dict[str, str] | None = None
        self._alloc_rows: dict[tuple[str, str], int] = {}
        self._saved_vms: dict[str, Vm] = {}

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
        """Make the stored state equal to ``vms`` and ``alloc``, in one
        transaction, writing only the rows that changed."""
        vms = list(vms)
        saved = self._saved_vms
        # Serialise only VMs that differ from what was saved last time.
        vm_rows = {
            vm.name: (self._vm_rows or {}).get(vm.name)
            if saved.get(vm.name) is vm or saved.get(vm.name) == vm
            else json.dumps(asdict(vm))
            for vm in vms
        }
        alloc_rows = {("vni", str(k)): i for k, i in alloc.vni.items()}
        alloc_rows.update({("tor", str(k)): i for k, i in alloc.tor.items()})
        for tor, space in alloc.vm.items():
            alloc_rows.update({(f"vm@{tor}", str(k)): i for k, i in space.items()})
        with self._lock:
            if self._vm_rows is None:
                self._vm_rows = dict(self._db.execute("SELECT name, body FROM vms"))
                self._alloc_rows = {
                    (s, k): i
                    for s, k, i in self._db.execute("SELECT space, key, idx FROM allocations")
                }
            gone_vms = self._vm_rows.keys() - vm_rows.keys()
            put_vms = [(n, b) for n, b in vm_rows.items() if self._vm_rows.get(n) != b]
            gone_alloc = self._alloc_rows.keys() - alloc_rows.keys()
            put_alloc = [
                (s, k, i) for (s, k), i in alloc_rows.items() if self._alloc_rows.get((s, k)) != i
            ]
            self._db.execute("BEGIN")
            try:
                self._db.executemany("DELETE FROM vms WHERE name = ?", [(n,) for n in gone_vms])
                self._db.executemany("INSERT OR REPLACE INTO vms VALUES (?, ?)", put_vms)
                self._db.executemany(
                    "DELETE FROM allocations WHERE space = ? AND key = ?", list(gone_alloc)
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO allocations VALUES (?, ?, ?)", put_alloc
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                self._vm_rows = None  # unknown: re-read next time
                self._saved_vms = {}
                raise
            self._vm_rows = vm_rows
            self._alloc_rows = alloc_rows
            self._saved_vms = {vm.name: vm for vm in vms}
        for space in alloc.spaces():
            space.dirty = False

    def save_changes(
        self, upserts: Iterable[Vm], removals: Iterable[str], alloc: Allocations | None = None
    ) -> None:
        """Write a few changed VMs (and the allocations, if they changed)
        without looking at the others."""
        upserts, removals = list(upserts), list(removals)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("DELETE FROM vms WHERE name = ?", [(n,) for n in removals])
                self._db.executemany(
                    "INSERT OR REPLACE INTO vms VALUES (?, ?)",
                    [(vm.name, json.dumps(asdict(vm))) for vm in upserts],
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._vm_rows = None  # the full-save cache no longer matches
                self._saved_vms = {}
        if alloc is not None and alloc.dirty:
            self.save_allocations(alloc)

    def save_allocations(self, alloc: Allocations) -> None:
        rows = [("vni", str(k), i) for k, i in alloc.vni.items()]
        rows += [("tor", str(k), i) for k, i in alloc.tor.items()]
        for tor, space in alloc.vm.items():
            rows += [(f"vm@{tor}", str(k), i) for k, i in space.items()]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute("DELETE FROM allocations")
                self._db.executemany("INSERT INTO allocations VALUES (?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._alloc_rows = {(s, k): i for s, k, i in rows}
        for space in alloc.spaces():
            space.dirty = False

    def close(self) -> None:
        self._db.close()
