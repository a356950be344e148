#!/usr/bin/env python3
"""Benchmark 2 (memory): controller resident memory.

(a) A controller process that has converged two BMv2 ToRs with 10,000 VMs.
(b) 100,000 VMs of desired state and their compiled entities alone (no
    switch): 16 ToRs, 1,000 tenants of 100 VMs, each tenant on two ToRs.
Each is measured in a fresh process, next to the same process's RSS after
imports only, so the figure is what the state costs.

In the same run (issue 37), each again with every VM dual-stack (an IPv6
address beside its IPv4 one: an ND entry beside its ARP entry), and (a) for
routed tenants too (bench-convergence-routed's workload: two routed subnets
per tenant, so each VM also has a host route per ToR of its VRF), IPv4-only
and dual-stack (an IPv6 subnet in each routed VNI, an IPv6 host route per VM
and ToR). Each figure is also given per VM: the state over the VM count.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BENCH, require_switch, rss_mib, switches, write_result

# (a)'s and (b)'s variants: result key -> (routed, dual-stack). The IPv4-only
# bridged ones keep their keys (controller_10k, state_100k).
CONTROLLER_VARIANTS = {
    "controller_10k": (False, False),
    "controller_10k_dual_stack": (False, True),
    "controller_10k_routed": (True, False),
    "controller_10k_routed_dual_stack": (True, True),
}
COMPILE_VARIANTS = {"state_100k": False, "state_100k_dual_stack": True}


def child_compile(vms_count: int, dual_stack: bool = False) -> None:
    import workload
    from p4vtep.compiler import Allocations, DesiredState, Encoder
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.dataplane.entries import PipelineEntries
    from p4vtep.model.validation import validate

    base = rss_mib()
    tors = 16
    fabric = workload.fabric([f"127.0.0.1:{1 + i}" for i in range(tors)], 1000)
    vms = workload.vms(vms_count, tors, 1000, tors_per_vni=2, dual_stack=dual_stack)
    validate(fabric, vms)
    encoder = Encoder(PipelineEntries(bmv2_pipeline().p4info))
    # What the controller keeps: the VMs, their indexes and every ToR's entities.
    desired = DesiredState(fabric, encoder, Allocations())
    desired.load(vms)
    del vms
    count = sum(len(c.state.entities) for c in desired.tors.values())
    print(f"RESULT {base:.1f} {rss_mib():.1f} {count}")


def child_controller(
    addresses: list[str], vms_count: int, routed: bool = False, dual_stack: bool = False
) -> None:
    import workload
    from p4vtep.controller import Controller
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.state.sqlite_store import Store

    base = rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        if routed:
            fabric = workload.routed_fabric(addresses, 100, dual_stack=dual_stack)
        else:
            fabric = workload.fabric(addresses, 100)
        controller = Controller(
            fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        controller.replace_source(
            "inventory", workload.vms(vms_count, 2, 100, routed=routed, dual_stack=dual_stack)
        )
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


def figure(vms: int, tors: int, count_key: str, measured: tuple[float, float, int]) -> dict:
    base, rss, count = measured
    return {
        "vms": vms,
        "tors": tors,
        count_key: count,
        "rss_mib": rss,
        "rss_after_imports_mib": base,
        "state_mib": rss - base,
        "state_kib_per_vm": (rss - base) * 1024 / vms,
    }


def variant_flags(routed: bool, dual_stack: bool) -> list[str]:
    return (["--routed"] if routed else []) + (["--dual-stack"] if dual_stack else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child-compile", type=int)
    parser.add_argument("--child-controller", type=int)
    parser.add_argument("--addresses", nargs="*")
    parser.add_argument("--routed", action="store_true", help="(a child's workload)")
    parser.add_argument("--dual-stack", action="store_true", help="(a child's workload)")
    args = parser.parse_args()
    if args.child_compile:
        return child_compile(args.child_compile, args.dual_stack)
    if args.child_controller:
        return child_controller(args.addresses, args.child_controller, args.routed, args.dual_stack)
    require_switch()
    result: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        addresses = [s.grpc_address for s in sws]
        for key, (routed, dual_stack) in CONTROLLER_VARIANTS.items():
            measured = run_child(
                "--child-controller",
                "10000",
                *variant_flags(routed, dual_stack),
                "--addresses",
                *addresses,
            )
            result[key] = figure(10000, 2, "entries_on_switches", measured)
    for key, dual_stack in COMPILE_VARIANTS.items():
        measured = run_child("--child-compile", "100000", *variant_flags(False, dual_stack))
        result[key] = figure(100000, 16, "compiled_entities", measured)
    for key, r in result.items():
        what = (
            f"{r['vms']:,} VMs on 2 ToRs, controller converged"
            if key.startswith("controller")
            else f"{r['vms']:,} VMs compiled for 16 ToRs, no switch"
        )
        print(
            f"{key}: {what}: RSS {r['rss_mib']:.0f} MiB ({r['state_mib']:.0f} MiB over an "
            f"idle process, {r['state_kib_per_vm']:.2f} KiB per VM)"
        )
    write_result("memory", result)


if __name__ == "__main__":
    main()
