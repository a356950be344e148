#!/usr/bin/env python3
"""Benchmark 4: sustained churn over 10,000 VMs on two BMv2 ToRs.

Attach / detach / migrate events at a target rate (default 500/s for 60 s),
from 16 worker threads with at most 64 events outstanding (when the
controller cannot keep up, the achieved rate says so). Per event, the latency
is from the call until every ToR acknowledged it. Afterwards every switch is
read back and compared entry by entry with the desired state.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import REPO, percentile, require_switch, summary, write_result

sys.path.insert(0, str(REPO / "tests"))

from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model import Vm
from p4vtep.store import Store
from switch_fabric import background_vms, read_back_matches, two_tor_fabric

SERVERS = ("s11", "s12", "s21", "s22")
OUTSTANDING = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--name", default="churn")
    args = parser.parse_args()
    require_switch()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp, two_tor_fabric(Path(tmp) / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", background_vms(args.vms))
        controller.start()
        assert controller.wait_converged(600)
        lock = threading.Lock()
        busy: set[str] = set()
        names = sorted(controller.vms)
        free_vlans = {s: list(range(3000, 4094)) for s in SERVERS}
        latencies: dict[str, list[float]] = {"attach": [], "detach": [], "migrate": []}
        errors: list[str] = []
        serial = [0]
        slots = threading.BoundedSemaphore(OUTSTANDING)

        def pick() -> tuple[str, Vm | None]:
            with lock:
                kind = rng.choice(("attach", "detach", "migrate"))
                if kind == "attach":
                    serial[0] += 1
                    n = serial[0]
                    server = rng.choice(SERVERS)
                    vm = Vm(
                        f"churn{n}",
                        f"02:cc:00:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}",
                        (f"172.{20 + (n >> 16 & 7)}.{n >> 8 & 255}.{n & 255}",),
                        5000,
                        server,
                        free_vlans[server].pop(0),
                    )
                    busy.add(vm.name)
                    names.append(vm.name)
                    return kind, vm
                for _ in range(20):
                    name = names[rng.randrange(len(names))]
                    if name not in busy and name in controller.vms:
                        busy.add(name)
                        return kind, controller.vms[name]
                return "none", None

        def run(kind: str, vm: Vm | None) -> None:
            try:
                t0 = time.perf_counter()
                if kind == "attach":
                    version = controller.attach(vm)
                elif kind == "detach":
                    version = controller.detach(vm.name)
                elif kind == "migrate":
                    tor = sf.fabric.servers[vm.server].tor
                    target = rng.choice([s for s in SERVERS if sf.fabric.servers[s].tor != tor])
                    with lock:
                        vlan = free_vlans[target].pop(0)
                    version = controller.migrate(vm.name, target, vlan, timeout=60)
                else:
                    return
                assert controller.wait_version(version, 120), f"{kind} not acknowledged"
                with lock:
                    latencies[kind].append(time.perf_counter() - t0)
                    if kind != "attach":  # its old (server, VLAN) is free again
                        free_vlans[vm.server].append(vm.vlan)
            except Exception as exc:  # noqa: BLE001 -- every failure is reported
                errors.append(f"{kind} {vm.name if vm else ''}: {exc}")
            finally:
                if vm is not None:
                    with lock:
                        busy.discard(vm.name)
                slots.release()

        started = time.perf_counter()
        sent = 0
        with ThreadPoolExecutor(max_workers=16) as pool:
            while time.perf_counter() - started < args.seconds:
                slots.acquire()
                pool.submit(run, *pick())
                sent += 1
                time.sleep(max(0.0, started + sent / args.rate - time.perf_counter()))
        elapsed = time.perf_counter() - started
        assert not errors, errors[:5]
        assert controller.wait_converged(600)
        read_back_matches(sf, controller)
        controller.stop()
    every = [x for values in latencies.values() for x in values]
    done = len(every)

    def pcts(values: list[float]) -> dict:
        if not values:
            return {"n": 0}
        return {
            **summary(values),
            "p50": percentile(values, 50),
            "p90": percentile(values, 90),
            "p99": percentile(values, 99),
        }

    result = {
        "vms": args.vms,
        "target_rate": args.rate,
        "seconds": elapsed,
        "events": done,
        "events_per_s": done / elapsed,
        "read_back_exact": True,
        "latency_seconds": {"all": pcts(every), **{k: pcts(v) for k, v in latencies.items()}},
    }
    print(
        f"churn: {done} events in {elapsed:.1f} s = {done / elapsed:.0f}/s (target "
        f"{args.rate:.0f}/s); latency to ack p50 {percentile(every, 50) * 1e3:.1f} ms "
        f"p99 {percentile(every, 99) * 1e3:.1f} ms; read-back exact"
    )
    write_result(args.name, result)


if __name__ == "__main__":
    main()
