"""A server's link rate as BMv2 egress queue rates (docs/qos.md, "Link rate").

BMv2 (``--priority-queues 8``) can limit each (port, priority) queue to a rate
in packets per second; it has no rate for a port as a whole. Every frame of a
VNI takes the VNI's queue whatever its colour (drop precedence decides what a
congested queue admits: p4src/v1model/queue_admission.p4), so for an access
port whose server has a ``link_rate`` L p4vtep gives every queue of the port
the rate L: that queue is then the server's link, committed (GREEN) frames
and excess share it, and a guarantee left idle is used by the others
(work-conserving). A server whose VNIs use several classes gets a link of L
per class: BMv2 cannot bound their sum (docs/qos.md).

Rates are converted to packets per second for full-size frames
(``FRAME_BYTES``): smaller frames get the same number of slots, so in bytes
they get less. A queue rate of 0 means "no limit" to BMv2.

``QueueRateSync`` keeps every BMv2 ToR's queues on the desired state through
the switch's Thrift service (``bmv2_thrift``): on start, whenever the desired
state changes, whenever a switch (re)connects, and every ``interval`` seconds
(a restarted switch forgets its rates). It uses the controller's public
surface only (its bus and ``desired_view``).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from .. import events
from ..dataplane.targets import Target
from ..model.fabric import Fabric, Tor

log = logging.getLogger(__name__)

FRAME_BYTES = 1518  # a full-size Ethernet frame of a 1500-byte MTU, without preamble/IFG
PRIORITIES = range(8)  # simple_switch_grpc --priority-queues 8 (bmv2.py)
DEFAULT_THRIFT_BASE = 9089  # `p4vtep switch run`: Thrift port 9089 + device id

# port -> priority -> packets/s (0: no limit)
PortRates = dict[int, dict[int, int]]


def pps(bytes_per_second: int) -> int:
    """A byte rate as full-size frames per second, at least 1."""
    return max(1, bytes_per_second // FRAME_BYTES)


def port_rates(fabric: Fabric, tor: str) -> PortRates:
    """The queue rates of every access port of ``tor``: the server's link
    rate on every queue, unlimited (0) for a server without one."""
    out: PortRates = {}
    for server in fabric.servers.values():
        if server.tor != tor:
            continue
        rate = 0 if server.link_rate is None else pps(server.link_rate // 8)
        out[server.port] = dict.fromkeys(PRIORITIES, rate)
    return out


def thrift_address(tor: Tor) -> tuple[str, int]:
    """Where a BMv2 ToR's Thrift service listens: the host of its P4Runtime
    address, and its ``thrift_port`` (default 9089 + device id, as
    `p4vtep switch run` starts it)."""
    host = tor.address.rsplit(":", 1)[0].strip("[]") if ":" in tor.address else tor.address
    port = tor.thrift_port if tor.thrift_port is not None else DEFAULT_THRIFT_BASE + tor.device_id
    return host, port


class _View(Protocol):
    @property
    def fabric(self) -> Fabric: ...


class _Controller(Protocol):
    """What the sync uses of the controller: its public surface."""

    @property
    def bus(self) -> events.EventBus: ...

    def desired_view(self) -> _View: ...


class QueueSetter(Protocol):
    def set_priority_queue_rate(self, port: int, priority: int, rate_pps: int) -> None: ...

    def close(self) -> None: ...


@dataclass
class _TorQueues:
    setter: QueueSetter | None = None
    applied: PortRates | None = None  # what the switch was last given (None: not known)
    error: str | None = None
    limited: bool = False  # some queue of this ToR was ever given a limit


class QueueRateSync:
    """Keeps the BMv2 ToRs' egress queue rates on the fabric's link rates."""

    def __init__(
        self,
        controller: _Controller,
        connect: Callable[[str, int], QueueSetter] | None = None,
        interval: float = 10.0,
    ) -> None:
        from .bmv2_thrift import SimpleSwitchThrift

        self.c = controller
        self.connect = connect or (lambda host, port: SimpleSwitchThrift(host, port))
        self.interval = interval
        self.tors: dict[str, _TorQueues] = {}
        self._stop = threading.Event()
        self._events: queue.Queue[events.Event] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._events = self.c.bus.subscribe()
        self.sync()
        self._thread = threading.Thread(target=self._run, daemon=True, name="queue-rates")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._events is not None:
            self.c.bus.unsubscribe(self._events)
            self._events.put(events.Event())  # (wakes the thread)
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for state in self.tors.values():
                if state.setter is not None:
                    state.setter.close()

    def errors(self) -> dict[str, str]:
        """ToR -> why its queue rates could not be set (the last attempt)."""
        with self._lock:
            return {name: s.error for name, s in self.tors.items() if s.error}

    def _run(self) -> None:
        assert self._events is not None
        while not self._stop.is_set():
            forget: set[str] = set()
            woken = False
            try:
                event = self._events.get(timeout=self.interval)
                woken = True
                while True:  # (a burst of commits: one sync)
                    if isinstance(event, events.SwitchConnected | events.PipelinePushed):
                        forget.add(event.switch)
                    event = self._events.get_nowait()
            except queue.Empty:
                pass
            if self._stop.is_set():
                return
            # Every interval with nothing new: everything again (a switch
            # that restarted unnoticed has forgotten its rates).
            self.sync(forget=forget, refresh=not woken)

    def sync(self, forget: Iterable[str] = (), refresh: bool = False) -> None:
        """Give every BMv2 ToR the rates the desired state asks for. A ToR in
        ``forget`` (it reconnected) gets all of them again, as does every ToR
        with ``refresh``; otherwise only what changed is written."""
        view = self.c.desired_view()
        fabric = view.fabric
        with self._lock:
            for name, tor in fabric.tors.items():
                if tor.target != Target.BMV2.value:
                    continue
                state = self.tors.setdefault(name, _TorQueues())
                want = port_rates(fabric, name)
                if not state.limited and not any(
                    rate for rates in want.values() for rate in rates.values()
                ):
                    # No link rate on this ToR and none set before: nothing
                    # to do (a switch without Thrift is never asked).
                    continue
                if name in forget or refresh:
                    state.applied = None
                if state.applied == want:
                    continue
                self._apply(name, tor, state, want)

    def _apply(self, name: str, tor: Tor, state: _TorQueues, want: PortRates) -> None:
        have = state.applied or {}
        # Ports no longer in the fabric go back to no limit.
        target = {**{port: dict.fromkeys(PRIORITIES, 0) for port in have}, **want}
        try:
            if state.setter is None:
                state.setter = self.connect(*thrift_address(tor))
            for port, rates in sorted(target.items()):
                for priority, rate in sorted(rates.items()):
                    if state.applied is not None and have.get(port, {}).get(priority) == rate:
                        continue
                    state.setter.set_priority_queue_rate(port, priority, rate)
        except (OSError, RuntimeError, ValueError) as exc:
            host, port_no = thrift_address(tor)
            why = (
                f"cannot set queue rates through BMv2 Thrift at {host}:{port_no}: {exc}"
                " (is simple_switch_grpc built with Thrift and started with this --thrift-port?)"
            )
            if state.error != why:
                log.warning("%s: %s", name, why)
            state.error = why
            state.applied = None
            if state.setter is not None:
                state.setter.close()
                state.setter = None
            return
        state.limited = True
        if state.error is not None:
            log.info("%s: queue rates set", name)
        state.error = None
        state.applied = {port: dict(rates) for port, rates in want.items()}


def describe(rates: Mapping[int, Mapping[int, int]]) -> str:
    """One line per port, for logs and tests."""
    return "; ".join(
        f"port {port}: " + ", ".join(f"q{p} {r or 'unlimited'}" for p, r in sorted(q.items()))
        for port, q in sorted(rates.items())
    )
