#!/usr/bin/env python3
"""Benchmark 1 and 2: convergence against the raw P4Runtime limit, and a
controller restart against a switch that already holds everything.

Controller (A): N VM bindings in the store, two empty ToRs; time from
controller start until every entry is installed on both ToRs and a read-back
diff is empty. Raw writer (B): the same entities, pre-encoded, written in
batches of 1000 to the same switches in parallel, then the same read-back.
Rounds alternate A B A B; the ratio is raw time / controller time.

Each round also records where the CPU went until everything was written
(before the read-back): the benchmark process's own (the controller, or the
raw writer, with their gRPC threads) and the two switch processes'. On a
machine where the switches and the controller share the cores, that says
what the controller's Python costs the switches. ``--switch-cpus`` and
``--bench-cpus`` pin them apart (both arms alike), as on a deployment where
the controller has a host of its own.

``--routed`` (issue 28): every tenant routed, two subnets (VNIs) per VRF, so
each VM adds a host route on every ToR that holds its VRF; the result goes to
bench/results/convergence_routed.json.

``--dual-stack`` (issue 37; implies ``--routed``): every routed VNI has an
IPv6 subnet beside its IPv4 one and every VM an IPv6 address in it too, so
each VM adds an ND entry and an IPv6 host route beside its ARP entry and
IPv4 host route. Both arms write and verify the same compile, IPv6 entries
included; the result goes to bench/results/convergence_dual_stack.json.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import workload
from common import alternate, ratios, require_switch, summary, switches, write_result
from dataplane_load import MachineShare, process_cpu_seconds
from p4vtep.cli.controller_run import settle_collector
from p4vtep.compiler import Allocations, allocate, compile_tor
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.runtime import codec
from p4vtep.runtime.client import P4RuntimeError, SwitchConnection
from p4vtep.runtime.protos import p4runtime_pb2
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.reconciler import Diff, SwitchReader, diff

BATCH = 1000
VNIS = 100
IPV6_TABLES = ("nd_suppression", "ipv6_host_route")

# Per round and arm: wall and CPU seconds until every entity was written.
PHASES: dict[str, list[dict[str, float]]] = {"controller": [], "raw": []}


class CpuClock:
    """CPU seconds of this process (every thread) and of the switches."""

    def __init__(self, switch_pids: list[int]) -> None:
        self.switch_pids = switch_pids
        self.start = self._read()

    def _read(self) -> tuple[float, float, float]:
        return (
            time.perf_counter(),
            time.process_time(),
            sum(process_cpu_seconds(pid) for pid in self.switch_pids),
        )

    def lap(self) -> dict[str, float]:
        now = self._read()
        wall, own, switches_ = (b - a for a, b in zip(self.start, now, strict=True))
        return {"wall_s": wall, "bench_process_cpu_s": own, "switches_cpu_s": switches_}


def connect_primary(tor, seconds: float = 30.0) -> SwitchConnection:
    """A primary connection (election id 1). reset()'s stream, with the same
    id, may not have left the switch yet (seen on a loaded machine with
    120,000 entities to clear): retried until it has, before any timing."""
    deadline = time.monotonic() + seconds
    while True:
        conn = SwitchConnection(tor.address, tor.device_id, election_id=1)
        try:
            assert conn.connect()
            return conn
        except P4RuntimeError as exc:
            conn.close()
            if "Election id already exists" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def reset(fabric) -> None:
    """Empty pipeline on every ToR (same cookie, so nobody re-pushes)."""
    pipeline = bmv2_pipeline()
    for tor in fabric.tors.values():
        with connect_primary(tor) as conn:
            conn.clear_multicast_groups()
            conn.set_pipeline(pipeline.p4info.message, pipeline.device_config, pipeline.cookie)


def verify(fabric, compiled) -> None:
    reader = SwitchReader(bmv2_pipeline().p4info)
    for name, tor in fabric.tors.items():
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
            actual = reader.read(conn)
        left = diff(compiled[name], actual)
        assert len(left) == 0, f"{name}: {len(left)} entries differ after convergence"


def prepare(fabric, vms, store_path: Path):
    store = Store(store_path)
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    entries = PipelineEntries(bmv2_pipeline().p4info)
    compiled = {name: compile_tor(fabric, vms, name, alloc, entries) for name in fabric.tors}
    store.save(vms, alloc)
    store.close()
    entity_count = sum(len(c.entities) + len(c.meters) + len(c.defaults) for c in compiled.values())
    return compiled, entity_count


def run_controller(fabric, store_path: Path, compiled, switch_pids: list[int]) -> float:
    reset(fabric)
    # As a fresh process would: prepare() and earlier rounds encoded the same
    # MAC and IP strings in this one.
    codec.forget_parsed()
    clock = CpuClock(switch_pids)
    started = time.perf_counter()
    controller = Controller(fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600)
    controller.start()
    settle_collector()  # as `p4vtep controller run` does once started
    assert controller.wait_converged(600)
    PHASES["controller"].append(clock.lap())
    verify(fabric, compiled)
    elapsed = time.perf_counter() - started
    controller.stop()
    return elapsed


def ipv6_entities(compiled) -> dict[str, int]:
    """Per IPv6 table, the entries of every ToR's compile (which both arms
    write and verify alike)."""
    p4info = bmv2_pipeline().p4info
    tables = {p4info.table(name).preamble.id: name for name in IPV6_TABLES}
    count: Counter[str] = Counter()
    for c in compiled.values():
        for key in c.entities:
            name = tables.get(c.entity(key).table_entry.table_id)
            if name is not None:
                count[name] += 1
    return {name: count[name] for name in IPV6_TABLES}


def encode_raw(fabric, compiled) -> dict[str, list[p4runtime_pb2.WriteRequest]]:
    requests = {}
    for name, tor in fabric.tors.items():
        c = compiled[name]
        delta = Diff(
            inserts=list(c.entities.items()),
            modifies=list(c.meters.items()) + list(c.defaults.items()),
        )
        updates = delta.updates()
        batches = []
        for start in range(0, len(updates), BATCH):
            req = p4runtime_pb2.WriteRequest(
                device_id=tor.device_id, atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
            )
            req.election_id.low = 1
            req.updates.extend(updates[start : start + BATCH])
            batches.append(req)
        requests[name] = batches
    return requests


def run_raw(fabric, compiled, requests, switch_pids: list[int]) -> float:
    reset(fabric)
    conns = {name: connect_primary(tor) for name, tor in fabric.tors.items()}
    clock = CpuClock(switch_pids)
    started = time.perf_counter()

    def write(name: str) -> None:
        for req in requests[name]:
            conns[name].stub.Write(req)

    threads = [threading.Thread(target=write, args=(n,)) for n in fabric.tors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    PHASES["raw"].append(clock.lap())
    verify(fabric, compiled)
    elapsed = time.perf_counter() - started
    for conn in conns.values():
        conn.close()
    return elapsed


def run_restart(fabric, store_path: Path) -> tuple[float, int]:
    """Switches already hold the state: time to a verified zero-write start."""
    started = time.perf_counter()
    controller = Controller(fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600)
    controller.start()
    settle_collector()
    assert controller.wait_converged(600)
    elapsed = time.perf_counter() - started
    writes = sum(s.status.writes for s in controller.supervisors.values())
    controller.stop()
    return elapsed, writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--switch-cpus", type=int, nargs="+", help="pin both switch processes to these CPUs"
    )
    parser.add_argument(
        "--bench-cpus", type=int, nargs="+", help="pin this process (controller, raw writer)"
    )
    parser.add_argument(
        "--routed", action="store_true", help="two routed subnets per tenant (host routes)"
    )
    parser.add_argument(
        "--dual-stack",
        action="store_true",
        help="routed, and every VM an IPv6 address too, in an IPv6 subnet of its VNI",
    )
    parser.add_argument(
        "--result",
        help="bench/results/NAME.json (convergence, convergence_routed or convergence_dual_stack)",
    )
    args = parser.parse_args()
    args.routed = args.routed or args.dual_stack
    result_name = args.result or (
        "convergence_dual_stack"
        if args.dual_stack
        else "convergence_routed"
        if args.routed
        else "convergence"
    )
    require_switch()
    if args.bench_cpus:  # before any thread starts: threads inherit it
        os.sched_setaffinity(0, set(args.bench_cpus))
    results: dict = {
        "sizes": {},
        "pinning": {"switches": args.switch_cpus, "bench_process": args.bench_cpus},
        "routed": args.routed,
    }
    share = MachineShare()
    share.start()
    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        pids = [sw.process.pid for sw in sws if sw.process is not None]
        if args.switch_cpus:
            for pid in pids:  # every thread of the switch
                for task in os.listdir(f"/proc/{pid}/task"):
                    os.sched_setaffinity(int(task), set(args.switch_cpus))
        addresses = [sw.grpc_address for sw in sws]
        if args.dual_stack:
            fabric = workload.routed_fabric(addresses, VNIS, dual_stack=True)
        else:
            fabric = (workload.routed_fabric if args.routed else workload.fabric)(addresses, VNIS)
        for n in args.sizes:
            vms = workload.vms(
                n, len(fabric.tors), VNIS, routed=args.routed, dual_stack=args.dual_stack
            )
            store_path = Path(tmp) / f"state-{n}.db"
            compiled, entity_count = prepare(fabric, vms, store_path)
            ipv6 = ipv6_entities(compiled) if args.dual_stack else None
            requests = encode_raw(fabric, compiled)
            # What this process keeps for checking (the expected compile, the
            # raw writer's requests) would not be in a controller's process:
            # out of the collector's sight, so that neither arm's collections
            # walk it.
            gc.collect()
            gc.freeze()
            for phases in PHASES.values():
                phases.clear()
            ctl, raw = alternate(
                functools.partial(run_controller, fabric, store_path, compiled, pids),
                functools.partial(run_raw, fabric, compiled, requests, pids),
                args.rounds,
            )
            written = {arm: list(rounds) for arm, rounds in PHASES.items()}
            # The last controller round left everything installed: restart now.
            run_controller(fabric, store_path, compiled, pids)
            restart_times, restart_writes = zip(
                *[run_restart(fabric, store_path) for _ in range(args.rounds)], strict=True
            )
            results["sizes"][str(n)] = {
                "vms": n,
                "entities": entity_count,
                "controller_seconds": summary(ctl),
                "raw_seconds": summary(raw),
                "controller_entities_per_s": summary([entity_count / t for t in ctl]),
                "raw_entities_per_s": summary([entity_count / t for t in raw]),
                "controller_over_raw_throughput": ratios(raw, ctl),
                "restart_seconds": summary(list(restart_times)),
                "restart_writes": list(restart_writes),
                "rounds": {"controller": ctl, "raw": raw},
                # Until everything was written (before the read-back), per round.
                "until_written": written,
            }
            r = results["sizes"][str(n)]
            if ipv6 is not None:
                r["ipv6_entities"] = ipv6
            print(
                f"N={n}: {entity_count} entities; "
                f"controller {r['controller_seconds']['median']:.2f} s, "
                f"raw {r['raw_seconds']['median']:.2f} s, ratio "
                f"{r['controller_over_raw_throughput']['median']:.2f}; restart "
                f"{r['restart_seconds']['median']:.2f} s with writes {list(restart_writes)}",
                flush=True,
            )
            if ipv6 is not None:
                print(
                    "  of which IPv6 (both arms): "
                    + ", ".join(f"{table} {count}" for table, count in ipv6.items()),
                    flush=True,
                )
            for arm, rounds in written.items():
                print(
                    f"  {arm} until written: "
                    + "; ".join(
                        f"wall {p['wall_s']:.2f} s, own CPU {p['bench_process_cpu_s']:.2f} s, "
                        f"switches' CPU {p['switches_cpu_s']:.2f} s"
                        for p in rounds
                    ),
                    flush=True,
                )
    if args.dual_stack:  # (an IPv4-only run's result is as it was)
        results["dual_stack"] = True
        # Who else used the 2 cores meanwhile (the ratio is side by side, the
        # seconds are not comparable across runs on a loaded machine).
        results["machine_load"] = share.stop()
        load = results["machine_load"]
        print(
            f"load average {load['loadavg_before'][0]:.2f} before, "
            f"{load['loadavg_after'][0]:.2f} after; everything else took "
            f"{load['everything_else_cpu_s']:.0f} CPU-s in {load['wall_s']:.0f} s",
            flush=True,
        )
    write_result(result_name, results)


if __name__ == "__main__":
    main()
