"""Helpers shared by the test modules. Import them from here (or from
switch_fabric.py for the BMv2 harness), never from another test module."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.api.server import serve
from p4vtep.controller import Controller
from p4vtep.evpn.service import EvpnService
from p4vtep.state.protocol import LeaderInfo
from p4vtep.switch.bmv2 import free_port


def wait_until(
    predicate: Callable[[], object], timeout: float = 20.0, interval: float = 0.05
) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def controller_state(controller: Controller) -> tuple[object, ...]:
    """Everything a refused change must leave as it was: the VMs, the version,
    what each ToR must hold, and the store."""
    return (
        dict(controller.vms),
        controller.version,
        {tor: controller.snapshot(tor)[1] for tor in controller.fabric.tors},
        controller.store.load_vms(),
    )


@contextmanager
def api_client(
    controller: Controller, evpn: EvpnService | None = None
) -> Iterator[tuple[pb_grpc.OverlayStub, str]]:
    """The service API of ``controller`` (and of ``evpn``, the EVPN service
    beside it) on a free loopback port: (stub, address)."""
    address = f"127.0.0.1:{free_port()}"
    server = serve(controller, address, evpn=evpn)
    channel = grpc.insecure_channel(address)
    try:
        yield pb_grpc.OverlayStub(channel), address
    finally:
        channel.close()
        server.stop(0)


@dataclass
class FixedLeadership:
    """A replica's leadership that is what the test says it is (and may
    change): without a ``term`` the controller's commits raise NotLeader,
    as on a follower or a replica whose lease lapsed; ``current`` is the
    leader it names."""

    replica_id: str
    term: int | None = None
    current: LeaderInfo | None = None

    def may_write(self) -> bool:
        return self.term is not None

    def election_id(self) -> int:
        assert self.term is not None
        return (1 << 64) + self.term

    def leader(self) -> LeaderInfo | None:
        return self.current


class RecordingLock:
    """Stands in for a controller's ``_lock`` and notes the file of every
    ``with`` that takes it: who reaches into the controller under its lock."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.files: list[str] = []
        self._guard = threading.Lock()

    def __enter__(self) -> Any:
        with self._guard:
            self.files.append(Path(sys._getframe(1).f_code.co_filename).name)
        return self.inner.__enter__()

    def __exit__(self, *exc: object) -> Any:
        return self.inner.__exit__(*exc)

    def acquire(self, *args: Any) -> Any:
        return self.inner.acquire(*args)

    def release(self) -> None:
        self.inner.release()
