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

(b) builds the ToRs as the controller's supervisors do, all at once, a step
of VMs each in turn (``snapshot_steps``); the same figure with the ToRs built
one after another is given beside it (``rss_mib_one_tor_at_a_time``: a ToR
then finds fewer of the entities it shares with another already encoded).
``--profile`` (with ``--child-compile N``) says where (b)'s bytes go: the
allocations still held once everything is built (tracemalloc), summed per
function that made them.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from common import BENCH, RESULTS, require_switch, rss_mib, switches, write_result

if TYPE_CHECKING:
    from p4vtep.compiler import DesiredState

# (a)'s and (b)'s variants: result key -> (routed, dual-stack). The IPv4-only
# bridged ones keep their keys (controller_10k, state_100k).
CONTROLLER_VARIANTS = {
    "controller_10k": (False, False),
    "controller_10k_dual_stack": (False, True),
    "controller_10k_routed": (True, False),
    "controller_10k_routed_dual_stack": (True, True),
}
COMPILE_VARIANTS = {"state_100k": False, "state_100k_dual_stack": True}


def build(desired: DesiredState, one_tor_at_a_time: bool = False) -> None:
    """Build every ToR's entities as a controller does: the allocations are
    committed (the store takes their changes), and each ToR is compiled by
    its supervisor's first pass (``snapshot_steps``, whose parts go to the
    switch and are dropped), the supervisors all at once, a step each in
    turn; this leaves no changes pending. (Reading ``TorCompiler.state`` on
    an unbuilt ToR instead records every entity as a change, ``dirty``, which
    the controller never holds: this benchmark did so until issue 40, 28 MiB
    of its 100,000-VM figure.)"""
    desired.alloc.take_changes()
    builds = [compiler.snapshot_steps() for compiler in desired.tors.values()]
    if one_tor_at_a_time:
        for steps in builds:
            for _part in steps:
                pass
    while builds:
        builds = [steps for steps in builds if next(steps, None) is not None]
    assert not any(compiler.dirty for compiler in desired.tors.values())


def _functions(path: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function in a file."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return []
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def print_profile(snapshot, top: int = 20) -> None:
    """The traced bytes still held, per function that allocated them (its
    innermost enclosing function: a comprehension's or closure's own)."""
    by_function: dict[str, list[int]] = {}
    functions: dict[str, list[tuple[int, int, str]]] = {}
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        if frame.filename not in functions:
            functions[frame.filename] = _functions(frame.filename)
        inside = [f for f in functions[frame.filename] if f[0] <= frame.lineno <= f[1]]
        name = max(inside)[2] if inside else "(module)"
        module = frame.filename.rsplit("/", 1)[-1].removesuffix(".py")
        if "/p4vtep/" in frame.filename:
            module = frame.filename.split("/p4vtep/", 1)[1].removesuffix(".py").replace("/", ".")
        where = f"{module}: {name}"
        sizes = by_function.setdefault(where, [0, 0])
        sizes[0] += stat.size
        sizes[1] += stat.count
    total = sum(size for size, _ in by_function.values())
    print(f"PROFILE traced {total / 2**20:.1f} MiB still held, by the function that allocated it")
    for where, (size, count) in sorted(by_function.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"PROFILE {size / 2**20:7.1f} MiB {count:9,d} blocks  {where}")


def child_compile(
    vms_count: int, dual_stack: bool = False, one_tor_at_a_time: bool = False, profile: bool = False
) -> None:
    import workload
    from p4vtep.compiler import Allocations, DesiredState, Encoder
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.dataplane.entries import PipelineEntries
    from p4vtep.model.validation import validate

    base = rss_mib()
    if profile:
        import tracemalloc

        tracemalloc.start()
    tors = 16
    fabric = workload.fabric([f"127.0.0.1:{1 + i}" for i in range(tors)], 1000)
    vms = workload.vms(vms_count, tors, 1000, tors_per_vni=2, dual_stack=dual_stack)
    validate(fabric, vms)
    encoder = Encoder(PipelineEntries(bmv2_pipeline().p4info))
    # What the controller keeps: the VMs, their indexes and every ToR's entities.
    desired = DesiredState(fabric, encoder, Allocations())
    desired.load(vms)
    del vms
    build(desired, one_tor_at_a_time)
    count = sum(len(c.state.entities) for c in desired.tors.values())
    print(f"RESULT {base:.1f} {rss_mib():.1f} {count}")
    if profile:
        import gc

        gc.collect()
        print_profile(tracemalloc.take_snapshot())


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
    parser.add_argument(
        "--one-tor-at-a-time", action="store_true", help="(--child-compile: build the ToRs in turn)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="(--child-compile: where the bytes go, tracemalloc)"
    )
    args = parser.parse_args()
    if args.child_compile:
        return child_compile(
            args.child_compile, args.dual_stack, args.one_tor_at_a_time, args.profile
        )
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
    _, rss, _ = run_child("--child-compile", "100000", "--one-tor-at-a-time")
    result["state_100k"]["rss_mib_one_tor_at_a_time"] = rss
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
    # Earlier sessions' runs (``runs``: other commits' figures, "before") stay.
    previous = RESULTS / "memory.json"
    if previous.exists():
        kept = json.loads(previous.read_text()).get("runs")
        if kept is not None:
            result["runs"] = kept
    write_result("memory", result)


if __name__ == "__main__":
    main()
