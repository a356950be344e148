#!/usr/bin/env python3
"""When each step of a controller start happens: the convergence benchmark's
controller arm (10,000 VMs from the store, both ToRs emptied first) run a few
rounds, with timestamps taken around ``Controller()``, each ToR's connection,
its first write batch and its last acknowledgement. It says how much of a
start comes before the first write (store load, connection, reading the
empty switch, compiling the first step) and how long the write phase lasts;
``bench/convergence.py`` gives the raw writer's write phase to set it
against. Printed only: the figures go into bench/NOTES.md by hand.
"""

from __future__ import annotations

import argparse
import functools
import gc
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import convergence
import workload
from common import require_switch, switches
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.runtime import codec
from p4vtep.runtime.client import PipelinedWrite, SwitchConnection
from p4vtep.state.sqlite_store import Store


class Timeline:
    """Milliseconds since the round began, per thread and event; an event
    marked ``first`` is kept only the first time a thread reaches it."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.events: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        self._seen: set[tuple[str, str]] = set()

    def restart(self) -> None:
        with self._lock:
            self.start = time.perf_counter()
            self.events.clear()
            self._seen.clear()

    def mark(self, what: str, first: bool = False) -> None:
        thread = threading.current_thread().name
        with self._lock:
            if first:
                if (thread, what) in self._seen:
                    return
                self._seen.add((thread, what))
            self.events.append(((time.perf_counter() - self.start) * 1000, thread, what))


def around(cls: type, name: str, timeline: Timeline, label: str, first: bool = False) -> None:
    """Mark ``label`` when ``cls.name`` is called and when it returns."""
    original: Callable[..., Any] = getattr(cls, name)

    @functools.wraps(original)
    def marked(self: Any, *args: Any, **kwargs: Any) -> Any:
        timeline.mark(f"{label} called", first)
        result = original(self, *args, **kwargs)
        timeline.mark(f"{label} returned", first)
        return result

    setattr(cls, name, marked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    require_switch()
    timeline = Timeline()
    around(SwitchConnection, "connect", timeline, "connect")
    around(PipelinedWrite, "_next", timeline, "first write batch", first=True)
    around(PipelinedWrite, "finish", timeline, "last acknowledgement")
    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        fabric = workload.fabric([sw.grpc_address for sw in sws], convergence.VNIS)
        vms = workload.vms(args.vms, len(fabric.tors), convergence.VNIS)
        store_path = Path(tmp) / "state.db"
        convergence.prepare(fabric, vms, store_path)
        gc.collect()
        gc.freeze()  # (as the convergence benchmark does with what it keeps)
        for n in range(1, args.rounds + 1):
            convergence.reset(fabric)
            codec.forget_parsed()  # (as a fresh process would start)
            timeline.restart()
            controller = Controller(fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600)
            timeline.mark("Controller() returned")
            controller.start()
            assert controller.wait_converged(600)
            timeline.mark("converged")
            controller.stop()
            print(f"round {n}")
            for ms, thread, what in timeline.events:
                print(f"  {ms:7.1f} ms  {thread:<12} {what}")


if __name__ == "__main__":
    main()
