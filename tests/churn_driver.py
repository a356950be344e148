"""Offers attach / detach / migrate events to a running controller at a fixed
rate and times each one until every ToR acknowledged it: the churn test
(tests/test_churn.py) and the churn benchmark (bench/churn.py) share it.

The offer is open: one thread hands an event out every 1/rate seconds,
whatever became of the ones before, unless ``outstanding`` events are
offered and not acknowledged yet (then it waits for one, and the offered
rate says so). ``callers`` threads make the calls (attach, detach, or a
migration with its make-before-break: ``migrate(wait=True)`` returns once
the old ToR let go); a call's version goes to one tracker thread, which
follows what the switches applied and takes each event as acknowledged when
every ToR holds its version: the latency is from the call until then. (A
caller that waited for each acknowledgement itself would bound the rate at
callers / latency: 64 callers at 50 ms hold it at 1,280/s.) A VM is never
the subject of two events at once, and every (server, VLAN) is used by one
VM at a time, so each event is valid."""

from __future__ import annotations

import heapq
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from p4vtep.controller import Controller
from p4vtep.model.fabric import Fabric, Vm

KINDS = ("attach", "detach", "migrate")
CHURN_VNI = 5000
FREE_VLANS = range(3000, 4094)  # VLANs the background population leaves free


@dataclass
class ChurnResult:
    rate: float = 0.0  # offered: events per second asked for
    seconds: float = 0.0  # from the first offer to the last acknowledgement
    offer_seconds: float = 0.0  # from the first offer to the last
    offered: int = 0
    skipped: int = 0  # ticks with no VM free to pick (no event offered)
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: list[str] = field(default_factory=list)
    # The most events offered and not acknowledged at once.
    most_outstanding: int = 0
    # Per event acknowledged: when it was offered (seconds from the first
    # offer) and its latency, in the order they were acknowledged.
    timeline: list[tuple[float, float]] = field(default_factory=list)

    @property
    def done(self) -> int:
        """Events acknowledged by every ToR."""
        return sum(len(v) for v in self.latencies.values())

    @property
    def offered_per_s(self) -> float:
        return self.offered / self.offer_seconds if self.offer_seconds else 0.0

    @property
    def achieved_per_s(self) -> float:
        return self.done / self.seconds if self.seconds else 0.0

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


@dataclass(order=True)
class _Pending:
    """An event called and not acknowledged yet: its version, when its call
    started, what it was and the VM as it was before."""

    version: int
    started: float
    kind: str = field(compare=False)
    vm: Vm = field(compare=False)


def offer_churn(
    controller: Controller,
    fabric: Fabric,
    servers: tuple[str, ...],
    *,
    seconds: float,
    rate: float,
    outstanding: int = 1024,
    callers: int = 64,
    ack_timeout: float = 120.0,
    rng: random.Random | None = None,
    new_vm: Callable[[int, str, int], Vm] = churn_vm,
) -> ChurnResult:
    """``new_vm(n, server, VLAN)``: the n-th VM the churn attaches (by
    default ``churn_vm``, in ``CHURN_VNI``)."""
    rng = rng or random.Random(7)
    lock = threading.Lock()
    busy: set[str] = set()
    names = sorted(controller.vms)
    free_vlans = {s: list(FREE_VLANS) for s in servers}
    serial = 0
    slots = threading.BoundedSemaphore(outstanding)
    result = ChurnResult(rate=rate)
    calls: queue.SimpleQueue[tuple[float, str, Vm, str, int] | None] = queue.SimpleQueue()
    called: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
    in_flight = 0
    last_ack = 0.0
    supervisors = list(controller.supervisors.values())

    def pick() -> tuple[str, Vm, str, int] | None:
        """The next event: its kind, its VM, and for a migration the target
        (server, VLAN); None when no VM was free to pick."""
        nonlocal serial
        with lock:
            kind = rng.choice(KINDS)
            if kind == "attach":
                serial += 1
                server = rng.choice(servers)
                vm = new_vm(serial, server, free_vlans[server].pop(0))
                busy.add(vm.name)
                names.append(vm.name)
                return kind, vm, "", 0
            for _ in range(20):
                name = names[rng.randrange(len(names))]
                current = controller.vms.get(name)
                if current is not None and name not in busy:
                    busy.add(name)
                    if kind == "detach":
                        return kind, current, "", 0
                    tor = fabric.servers[current.server].tor
                    target = rng.choice([s for s in servers if fabric.servers[s].tor != tor])
                    return kind, current, target, free_vlans[target].pop(0)
            return None

    def finished(vm: Vm, kind: str, offered: float, latency: float | None, error: str = "") -> None:
        """An event acknowledged (its latency) or failed (why)."""
        nonlocal in_flight, last_ack
        with lock:
            if error:
                result.errors.append(f"{kind} {vm.name}: {error}")
            else:
                assert latency is not None
                result.latencies[kind].append(latency)
                result.timeline.append((offered - origin, latency))
                last_ack = time.perf_counter()
                if kind != "attach":  # its old (server, VLAN) is free again
                    free_vlans[vm.server].append(vm.vlan)
            busy.discard(vm.name)
            in_flight -= 1
        slots.release()

    def call() -> None:
        while (event := calls.get()) is not None:
            started, kind, vm, target, vlan = event
            try:
                if kind == "attach":
                    version = controller.attach(vm)
                elif kind == "detach":
                    version = controller.detach(vm.name)
                else:
                    version = controller.migrate(vm.name, target, vlan, timeout=ack_timeout / 2)
            except Exception as exc:  # noqa: BLE001 -- every failure is reported
                finished(vm, kind, started, None, str(exc))
                continue
            called.put(_Pending(version, started, kind, vm))

    def track() -> None:
        """Take events as acknowledged when every ToR holds their version."""
        pending: list[_Pending] = []
        applied = min(s.status.version for s in supervisors)
        ending = False
        while not ending or pending:
            try:  # what the callers handed over (waiting only when nothing is due)
                item = called.get(timeout=0.05) if not pending else called.get_nowait()
                while True:
                    if item is None:
                        ending = True
                    else:
                        heapq.heappush(pending, item)
                    item = called.get_nowait()
            except queue.Empty:
                pass
            if pending and pending[0].version > applied:
                for sup in supervisors:  # until each ToR moves on (or a while passes)
                    sup.wait_applied(applied + 1, 0.05)
            applied = min(s.status.version for s in supervisors)
            now = time.perf_counter()
            while pending and pending[0].version <= applied:
                done = heapq.heappop(pending)
                finished(done.vm, done.kind, done.started, now - done.started)
            while pending and now - pending[0].started > ack_timeout:
                late = heapq.heappop(pending)
                finished(
                    late.vm,
                    late.kind,
                    late.started,
                    None,
                    f"not acknowledged within {ack_timeout} s",
                )

    origin = time.perf_counter()  # (the first offer's time, once the threads run)
    threads = [threading.Thread(target=call, name=f"churn-call{i}") for i in range(callers)]
    tracker = threading.Thread(target=track, name="churn-acks")
    for thread in [*threads, tracker]:
        thread.start()
    origin = started = time.perf_counter()
    ticks = 0
    try:
        while time.perf_counter() - started < seconds:
            slots.acquire()
            event = pick()
            if event is None:
                slots.release()
                result.skipped += 1
            else:
                with lock:
                    in_flight += 1
                    result.most_outstanding = max(result.most_outstanding, in_flight)
                # Timed from now: a wait for a free caller counts.
                calls.put((time.perf_counter(), *event))
                result.offered += 1
            ticks += 1
            time.sleep(max(0.0, started + ticks / rate - time.perf_counter()))
        result.offer_seconds = time.perf_counter() - started
    finally:
        for _ in threads:
            calls.put(None)
        for thread in threads:
            thread.join()
        called.put(None)
        tracker.join()
    result.seconds = (last_ack or time.perf_counter()) - started
    return result
