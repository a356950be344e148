#!/usr/bin/env python3
"""Benchmark 2 (memory): controller resident memory.

(a) A controller process that has converged two BMv2 ToRs with 10,000 VMs.
(b) 100,000 VMs of desired state and their compiled entities alone (no
    switch): 16 ToRs, 1,000 tenants of 100 VMs, each tenant on two ToRs.
Each is measured in a fresh process, next to the same process's RSS after
imports only, so the figure is what the state costs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BENCH, require_switch, rss_mib, switches, write_result


def child_compile(vms_count: int) -> None:
    import workload
    from p4vtep.compiler import Allocations, DesiredState, Encoder
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.dataplane.entries import PipelineEntries
    from p4vtep.model.validation import validate

    base = rss_mib()
    tors = 16
    fabric = workload.fabric([f"127.0.0.1:{1 + i}" for i in range(tors)], 1000)
    vms = workload.vms(vms_count, tors, 1000, tors_per_vni=2)
    validate(fabric, vms)
    encoder = Encoder(PipelineEntries(bmv2_pipeline().p4info))
    # What the controller keeps: the VMs, their indexes and every ToR's entities.
    desired = DesiredState(fabric, encoder, Allocations())
    desired.load(vms)
    del vms
    count = sum(len(c.state.entities) for c in desired.tors.values())
    print(f"RESULT {base:.1f} {rss_mib():.1f} {count}")


def child_controller(addresses: list[str], vms_count: int) -> None:
    import workload
    from p4vtep.controller import Controller
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.state.sqlite_store import Store

    base = rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        fabric = workload.fabric(addresses, 100)
        controller = Controller(
            fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", workload.vms(vms_count, 2, 100))
        controller.start()
        assert controller.wait_converged(900)
        time.sleep(1)
        count = sum(s.status.entries for s in controller.supervisors.values())
        print(f"RESULT {base:.1f} {rss_mib():.1f} {count}")
        controller.stop()


def run_child(*args: str) -> tuple[float, float, int]:
    out = subprocess.run(
        [sys.executable, str(BENCH / "memory.py"), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    line = next(text for text in out.splitlines() if text.startswith("RESULT"))
    base, rss, count = line.split()[1:]
    return float(base), float(rss), int(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child-compile", type=int)
    parser.add_argument("--child-controller", type=int)
    parser.add_argument("--addresses", nargs="*")
    args = parser.parse_args()
    if args.child_compile:
        return child_compile(args.child_compile)
    if args.child_controller:
        return child_controller(args.addresses, args.child_controller)
    require_switch()
    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        base10k, rss10k, entries10k = run_child(
            "--child-controller", "10000", "--addresses", *[s.grpc_address for s in sws]
        )
    base100k, rss100k, entries100k = run_child("--child-compile", "100000")
    result = {
        "controller_10k": {
            "vms": 10000,
            "tors": 2,
            "entries_on_switches": entries10k,
            "rss_mib": rss10k,
            "rss_after_imports_mib": base10k,
            "state_mib": rss10k - base10k,
        },
        "state_100k": {
            "vms": 100000,
            "tors": 16,
            "compiled_entities": entries100k,
            "rss_mib": rss100k,
            "rss_after_imports_mib": base100k,
            "state_mib": rss100k - base100k,
        },
    }
    print(
        f"10,000 VMs on 2 ToRs: controller RSS {rss10k:.0f} MiB ({rss10k - base10k:.0f} MiB "
        f"over an idle process); 100,000 VMs compiled for 16 ToRs, no switch: RSS "
        f"{rss100k:.0f} MiB ({rss100k - base100k:.0f} MiB)"
    )
    write_result("memory", result)


if __name__ == "__main__":
    main()
