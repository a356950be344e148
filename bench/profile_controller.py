#!/usr/bin/env python3
"""Where the controller's time goes: cProfile over every thread (the caller's
and each switch supervisor's) while it (a) converges 10,000 VMs onto two
empty BMv2 ToRs and (b) makes 100 VM moves. Prints the top functions by own
time per phase and writes them to bench/results/profile_controller.txt."""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

import workload
from common import RESULTS, require_switch, switches
from p4vtep import supervisor
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.store import Store

PROFILES: list[cProfile.Profile] = []
_run = supervisor.SwitchSupervisor._run


def _profiled_run(self: supervisor.SwitchSupervisor) -> None:
    profile = cProfile.Profile()
    PROFILES.append(profile)
    profile.runcall(_run, self)


def phase(main: cProfile.Profile) -> str:
    """Top functions over the main thread and every supervisor thread."""
    for p in PROFILES:
        p.disable()
    stream = io.StringIO()
    stats = pstats.Stats(main, stream=stream)
    for p in PROFILES:
        stats.add(p)
    stats.sort_stats("tottime").print_stats(15)
    for p in PROFILES:
        p.clear()
        p.enable()
    return stream.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--moves", type=int, default=100)
    args = parser.parse_args()
    require_switch()
    supervisor.SwitchSupervisor._run = _profiled_run  # type: ignore[method-assign]
    report = []
    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        fabric = workload.fabric([sw.grpc_address for sw in sws], 100)
        vms = workload.vms(args.vms, 2, 100)
        main_profile = cProfile.Profile()
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
        main_profile = cProfile.Profile()
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
    text = "\n".join(report)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "profile_controller.txt").write_text(text)


if __name__ == "__main__":
    main()
