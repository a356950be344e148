"""Typed events the controller publishes (WatchEvents, logs, metrics)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Event:
    switch: str = ""
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class SwitchConnected(Event):
    primary: bool = False


@dataclass(frozen=True)
class SwitchDisconnected(Event):
    reason: str = ""


@dataclass(frozen=True)
class PrimaryChanged(Event):
    primary: bool = False


@dataclass(frozen=True)
class PipelinePushed(Event):
    cookie: int = 0


@dataclass(frozen=True)
class Reconciled(Event):
    inserts: int = 0
    modifies: int = 0
    deletes: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class WriteFailed(Event):
    errors: tuple[str, ...] = ()
    vms: tuple[str, ...] = ()  # VMs whose entries were refused (e.g. a full table)


# DesiredStateChanged.change: what the controller and the sources send.
ATTACHED = "attached"  # a VM added or replaced (API, libvirt)
DETACHED = "detached"
MIGRATED = "migrated"  # also the second step, when the old ToR lets go
QOS = "qos"  # a VM's QoS policy set or removed
PORT_SECURITY = "port_security"  # a VM's port security, DHCP server flag or pairs changed


def reloaded(source: str) -> str:
    """A whole source (e.g. the inventory file) replaced its VMs; vm is "*"."""
    return f"{source} reloaded"


def refused(reason: str) -> str:
    """A source's change failed validation; nothing changed; vm is "*"."""
    return f"refused: {reason}"


@dataclass(frozen=True)
class DesiredStateChanged(Event):
    vm: str = ""  # the VM's name, or "*" for a whole source
    # ATTACHED, DETACHED, MIGRATED, QOS, PORT_SECURITY, reloaded(...), refused(...)
    change: str = ""


@dataclass(frozen=True)
class RoutesChanged(Event):
    """A commit changed where a VRF's routes lead (docs/routing.md): host routes
    of VMs attached, detached or moved, and static routes whose next hop got,
    lost or moved its owner. Published with the commit, before the ToRs apply
    it (Reconciled says when they did). Prefixes in CIDR form; ``switch`` is
    empty."""

    vrf: str = ""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()  # now leads to another VM or ToR


@dataclass(frozen=True)
class EvpnSessionUp(Event):
    """A BGP EVPN session came up (docs/evpn.md); ``switch`` is empty."""

    peer: str = ""
    asn: int = 0


@dataclass(frozen=True)
class EvpnSessionDown(Event):
    """A BGP EVPN session went down (hold timer, NOTIFICATION, TCP closed, or
    the speaker died); the peer's routes left the learned table."""

    peer: str = ""
    asn: int = 0
    routes_withdrawn: int = 0


# Every event's kind, as WatchEvents names it (``Event.kind`` in the API).
KINDS = tuple(sorted(cls.__name__ for cls in Event.__subclasses__()))


class EventBus:
    def __init__(self) -> None:
        self._subscribers: list[queue.Queue[Event]] = []
        self._lock = threading.Lock()

    def subscribe(self) -> queue.Queue[Event]:
        q: queue.Queue[Event] = queue.Queue(maxsize=10000)
        with self._lock:
            self._subscribers.append(q)
        return q

    def unsubscribe(self, q: queue.Queue[Event]) -> None:
        with self._lock:
            if q in self._subscribers:
                self._subscribers.remove(q)

    def publish(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for q in subscribers:
            # A stalled watcher must not stall the controller: it misses the event.
            with contextlib.suppress(queue.Full):
                q.put_nowait(event)
