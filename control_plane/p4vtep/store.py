"""Durable desired state: VMs and index allocations in SQLite.

A restarted controller reloads both, compiles exactly what it compiled before
and, against a switch that kept its state, writes nothing.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Iterable

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
        self._db.executescript(SCHEMA)

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
        """Replace the stored state in one transaction."""
        rows = [("vni", str(k), i) for k, i in alloc.vni.items()]
        rows += [("tor", str(k), i) for k, i in alloc.tor.items()]
        for tor, space in alloc.vm.items():
            rows += [(f"vm@{tor}", str(k), i) for k, i in space.items()]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute("DELETE FROM vms")
                self._db.executemany("INSERT INTO vms VALUES (?, ?)",
                                     [(vm.name, json.dumps(asdict(vm))) for vm in vms])
                self._db.execute("DELETE FROM allocations")
                self._db.executemany("INSERT INTO allocations VALUES (?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self._db.close()
