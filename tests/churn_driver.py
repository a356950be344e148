"""Offers attach / detach / migrate events to a running controller at a fixed
rate, each one waited for until every ToR acknowledged it: the churn test
(tests/test_churn.py) and the churn benchmark (bench/churn.py) share it.

Events come from ``callers`` worker threads (16) with at most ``outstanding``
(64) offered and not yet done; when the controller falls behind, the offered
rate drops rather than the queue growing. Each caller waits for its event's
acknowledgement, so the achieved rate is at most callers / mean latency; an
event waiting for a free caller is not timed until its call starts. A VM is
never the subject of two events at once, and every (server, VLAN) is used by
one VM at a time, so each event is valid."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from p4vtep.controller import Controller
from p4vtep.model.fabric import Fabric, Vm

KINDS = ("attach", "detach", "migrate")
CHURN_VNI = 5000
FREE_VLANS = range(3000, 4094)  # VLANs the background population leaves free


@dataclass
class ChurnResult:
    seconds: float = 0.0
    offered: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: list[str] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    def all_latencies(self) -> list[float]:
        return sorted(x for values in self.latencies.values() for x in values)


def churn_vm(n: int, server: str, vlan: int) -> Vm:
    """The n-th VM the churn attaches (MAC and IP unique per n)."""
    return Vm(
        f"churn{n}",
        f"02:cc:00:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}",
        (f"172.{20 + (n >> 16 & 7)}.{n >> 8 & 255}.{n & 255}",),
        CHURN_VNI,
        server,
        vlan,
    )


def offer_churn(
    controller: Controller,
    fabric: Fabric,
    servers: tuple[str, ...],
    *,
    seconds: float,
    rate: float,
    outstanding: int = 64,
    callers: int = 16,
    ack_timeout: float = 120.0,
    rng: random.Random | None = None,
) -> ChurnResult:
    rng = rng or random.Random(7)
    lock = threading.Lock()
    busy: set[str] = set()
    names = sorted(controller.vms)
    free_vlans = {s: list(FREE_VLANS) for s in servers}
    serial = 0
    slots = threading.BoundedSemaphore(outstanding)
    result = ChurnResult()

    def pick() -> tuple[str, Vm | None]:
        nonlocal serial
        with lock:
            kind = rng.choice(KINDS)
            if kind == "attach":
                serial += 1
                server = rng.choice(servers)
                vm = churn_vm(serial, server, free_vlans[server].pop(0))
                busy.add(vm.name)
                names.append(vm.name)
                return kind, vm
            for _ in range(20):
                name = names[rng.randrange(len(names))]
                current = controller.vms.get(name)
                if current is not None and name not in busy:
                    busy.add(name)
                    return kind, current
            return "none", None

    def run(kind: str, vm: Vm | None) -> None:
        try:
            if vm is None:
                return
            started = time.perf_counter()
            if kind == "attach":
                version = controller.attach(vm)
            elif kind == "detach":
                version = controller.detach(vm.name)
            else:
                tor = fabric.servers[vm.server].tor
                target = rng.choice([s for s in servers if fabric.servers[s].tor != tor])
                with lock:
                    vlan = free_vlans[target].pop(0)
                version = controller.migrate(vm.name, target, vlan, timeout=ack_timeout / 2)
            if not controller.wait_version(version, ack_timeout):
                raise TimeoutError(f"{kind} not acknowledged within {ack_timeout} s")
            with lock:
                result.latencies[kind].append(time.perf_counter() - started)
                if kind != "attach":  # its old (server, VLAN) is free again
                    free_vlans[vm.server].append(vm.vlan)
        except Exception as exc:  # noqa: BLE001 -- every failure is reported
            result.errors.append(f"{kind} {vm.name if vm else ''}: {exc}")
        finally:
            if vm is not None:
                with lock:
                    busy.discard(vm.name)
            slots.release()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=callers) as pool:
        while time.perf_counter() - started < seconds:
            slots.acquire()
            pool.submit(run, *pick())
            result.offered += 1
            time.sleep(max(0.0, started + result.offered / rate - time.perf_counter()))
    result.seconds = time.perf_counter() - started
    return result
