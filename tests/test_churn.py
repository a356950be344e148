"""Sustained churn: 10,000 VMs installed, then 60 s of attach / detach /
migrate offered at 500 events/s (at most 64 outstanding); afterwards each
switch holds exactly the desired state, compared entry by entry. The rate
reached and per-event latencies are printed; the speed target itself is
measured by bench/churn.py, not asserted here. (Figure in docs/reliability.md.)"""

from __future__ import annotations

import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model import Vm
from p4vtep.store import Store
from switch_fabric import background_vms, needs_switch, read_back_matches, two_tor_fabric

pytestmark = needs_switch("scale")
VMS = 10000
SECONDS = float(os.environ.get("P4VTEP_CHURN_SECONDS", "60"))
RATE = 500.0
OUTSTANDING = 64
SERVERS = ("s11", "s12", "s21", "s22")


def test_churn_leaves_exactly_the_desired_state(tmp_path):
    rng = random.Random(7)
    with two_tor_fabric(tmp_path / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(tmp_path / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", background_vms(VMS))
        controller.start()
        try:
            assert controller.wait_converged(300)
            lock = threading.Lock()
            busy: set[str] = set()
            free_vlans = {s: list(range(3000, 4094)) for s in SERVERS}
            counts = {"attach": 0, "detach": 0, "migrate": 0}
            errors: list[str] = []
            serial = [0]
            names = [vm.name for vm in background_vms(VMS)]
            latencies: list[float] = []
            slots = threading.BoundedSemaphore(OUTSTANDING)

            def pick() -> tuple[str, Vm | None]:
                with lock:
                    kind = rng.choice(("attach", "detach", "migrate"))
                    if kind == "attach":
                        serial[0] += 1
                        server = rng.choice(SERVERS)
                        n = serial[0]
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
                        vm = controller.vms.get(name)
                        if vm is not None and name not in busy:
                            busy.add(name)
                            return kind, vm
                    return "none", None

            def run(kind: str, vm: Vm | None) -> None:
                try:
                    started = time.perf_counter()
                    version = controller.version
                    if kind == "attach":
                        version = controller.attach(vm)
                    elif kind == "detach":
                        version = controller.detach(vm.name)
                    elif kind == "migrate":
                        tor = sf.fabric.servers[vm.server].tor
                        target = rng.choice([s for s in SERVERS if sf.fabric.servers[s].tor != tor])
                        with lock:
                            vlan = free_vlans[target].pop(0)
                        version = controller.migrate(vm.name, target, vlan, timeout=30)
                    if kind != "none":
                        assert controller.wait_version(version, 60), f"{kind} not acknowledged"
                        with lock:
                            if kind != "attach":  # its old (server, VLAN) is free again
                                free_vlans[vm.server].append(vm.vlan)
                            counts[kind] += 1
                            latencies.append(time.perf_counter() - started)
                except Exception as exc:  # noqa: BLE001 -- every failure is reported
                    errors.append(f"{kind} {vm.name if vm else ''}: {exc}")
                finally:
                    if vm is not None:
                        with lock:
                            busy.discard(vm.name)
                    slots.release()

            started = time.monotonic()
            sent = 0
            with ThreadPoolExecutor(max_workers=16) as pool:
                while time.monotonic() - started < SECONDS:
                    slots.acquire()
                    pool.submit(run, *pick())
                    sent += 1
                    next_at = started + sent / RATE
                    time.sleep(max(0.0, next_at - time.monotonic()))
            elapsed = time.monotonic() - started
            assert not errors, errors[:5]
            assert controller.wait_converged(300)
            read_back_matches(sf, controller)
            done = sum(counts.values())
            latencies.sort()
            p50, p99 = (latencies[int(q * (len(latencies) - 1))] * 1e3 for q in (0.5, 0.99))
            print(
                f"\nchurn: {done} events in {elapsed:.0f} s ({done / elapsed:.1f}/s: {counts}); "
                f"latency to ack p50 {p50:.1f} ms p99 {p99:.1f} ms; "
                f"switches equal the desired state entry by entry"
            )
            assert counts["attach"]
            assert counts["detach"]
            assert counts["migrate"]
        finally:
            controller.stop()
