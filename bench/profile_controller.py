#!/usr/bin/env python3
"""Where the controller's time goes: cProfile over every thread (the caller's,
each switch supervisor's passes and, for churn, the callers' inside the
controller's methods) while it (a) converges 10,000 VMs onto two empty BMv2
ToRs, (b) makes 100 VM moves and (c) takes attach / detach / migrate churn
at 500 events/s over 10,000 VMs in two big VNIs (the churn benchmark's
workload). Times are each thread's CPU time (``time.thread_time``): waiting
on the switch, on locks or for the GIL is not counted, so the figures say
what the controller's Python costs. Prints the top functions by own and by
cumulative time per phase and writes them to
bench/results/profile_controller.txt."""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import workload
from common import REPO, RESULTS, require_switch, switches
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.sqlite_store import Store
from p4vtep.switch import supervisor

sys.path.insert(0, str(REPO / "tests"))

from churn_driver import offer_churn
from switch_fabric import SERVERS, background_vms, bmv2_fabric

PROFILES: list[cProfile.Profile] = []
_CALLER = threading.local()


def _profiled_call(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` profiled in whichever thread calls it (one profile per
    thread: cProfile follows one thread only)."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        profile = getattr(_CALLER, "profile", None)
        if profile is None:
            profile = _CALLER.profile = cProfile.Profile(time.thread_time)
            PROFILES.append(profile)
        profile.enable()
        try:
            return method(*args, **kwargs)
        finally:
            profile.disable()

    return call


def phase(main: cProfile.Profile) -> str:
    """Top functions over the main thread and every supervisor thread.
    Call it with every other thread idle (between phases): a profile is
    enabled and disabled only by its own thread (cProfile hooks the thread
    that calls enable), so the others' are read and cleared here, never
    switched on or off from this thread."""
    stream = io.StringIO()
    stats = pstats.Stats(main, stream=stream)
    for p in PROFILES:
        stats.add(p)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(25)
    for p in PROFILES:
        p.clear()
    return stream.getvalue()


def churn_phase(vms: int, seconds: float) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp, bmv2_fabric(Path(tmp) / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", background_vms(vms))
        controller.start()
        assert controller.wait_converged(600)
        for p in PROFILES:  # the supervisors' convergence is not part of this phase
            p.clear()
        for method in ("attach", "detach", "migrate", "wait_version"):
            setattr(controller, method, _profiled_call(getattr(controller, method)))
        main_profile = cProfile.Profile(time.thread_time)
        main_profile.enable()
        churn = offer_churn(controller, sf.fabric, SERVERS, seconds=seconds, rate=500)
        main_profile.disable()
        assert not churn.errors, churn.errors[:5]
        controller.stop()
    rate = churn.done / churn.seconds
    head = f"== churn: {churn.done} events in {churn.seconds:.1f} s = {rate:.0f}/s ==\n"
    return [head, phase(main_profile)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--churn-seconds", type=float, default=15.0)
    args = parser.parse_args()
    require_switch()
    # Each supervisor's passes (the first one included), profiled in its thread.
    supervisor.SwitchSupervisor._reconcile = _profiled_call(  # type: ignore[method-assign]
        supervisor.SwitchSupervisor._reconcile
    )
    report = []
    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        fabric = workload.fabric([sw.grpc_address for sw in sws], 100)
        vms = workload.vms(args.vms, 2, 100)
        main_profile = cProfile.Profile(time.thread_time)
        main_profile.enable()
        started = time.perf_counter()
        controller = Controller(
            fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", vms)
        controller.start()
        assert controller.wait_converged(600)
        took = time.perf_counter() - started
        main_profile.disable()
        report.append(f"== converge {args.vms} VMs on 2 ToRs: {took:.2f} s wall ==\n")
        report.append(phase(main_profile))
        main_profile = cProfile.Profile(time.thread_time)
        main_profile.enable()
        started = time.perf_counter()
        vm = vms[0]  # on tor1; moves to tor2 and back
        port = vm.server.split("-")[1]
        for i in range(args.moves):
            target = f"s{2 - i % 2}-{port}"
            assert controller.wait_version(controller.migrate(vm.name, target, 4000 + i % 2), 60)
        took = time.perf_counter() - started
        main_profile.disable()
        report.append(f"== {args.moves} moves: {took / args.moves * 1e3:.1f} ms each, wall ==\n")
        report.append(phase(main_profile))
        controller.stop()
    PROFILES.clear()
    if args.churn_seconds > 0:
        report += churn_phase(args.vms, args.churn_seconds)
    text = "\n".join(report)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "profile_controller.txt").write_text(text)


if __name__ == "__main__":
    main()
