"""Helpers shared by the test modules. Import them from here (or from
switch_fabric.py for the BMv2 harness), never from another test module."""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.api.server import serve
from p4vtep.compiler import DesiredState, Encoder, Learned, SwitchState, compile_tor
from p4vtep.controller import Controller
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.intake import RouteIntake
from p4vtep.evpn.routes import InclusiveMulticastRoute, IpPrefixRoute, MacIpRoute
from p4vtep.evpn.service import EvpnService
from p4vtep.model.allocation import Allocations
from p4vtep.model.fabric import Fabric, Vm
from p4vtep.runtime.p4info import P4Info
from p4vtep.state.protocol import LeaderInfo
from p4vtep.switch.bmv2 import free_port

needs_gobgp_api = pytest.mark.skipif(
    gobgp_api.MISSING is not None, reason=f"{gobgp_api.MISSING}: codec tests skipped"
)


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


class _CallerState:
    """What a caller's frame holds while it calls (the API's gRPC call)."""


@contextmanager
def collector_off() -> Iterator[None]:
    """The cyclic collector collected, then off until the block ends: what
    the block leaves in reference cycles stays there for the test to see."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def refusal_leaves_no_cycle(call: Callable[[], object], error: type[BaseException]) -> bool:
    """Whether, once ``call`` has raised ``error`` and its caller has
    handled it, what the caller's frame held is freed by reference counting
    alone, with the collector off: a refusal kept in a reference cycle keeps
    the frames behind it, an API call's among them (and its HTTP/2 stream,
    counted against the server's limit), until a collection."""

    def caller() -> weakref.ref[_CallerState]:
        held = _CallerState()
        with contextlib.suppress(error):
            call()
        return weakref.ref(held)

    with collector_off():
        return caller()() is None


def controller_state(controller: Controller) -> tuple[object, ...]:
    """Everything a refused change must leave as it was: the VMs, the version,
    what each ToR must hold, and the store."""
    return (
        dict(controller.vms),
        controller.version,
        {tor: controller.snapshot(tor)[1] for tor in controller.fabric.tors},
        controller.store.load_vms(),
    )


def table_entries(
    state: SwitchState, p4info: P4Info, tables: set[str], actions: set[str]
) -> dict[bytes, bytes]:
    """The table entries of a compiled ToR ``state`` in one of ``tables`` or
    with one of ``actions``, by key (action profile members and groups, the
    underlay's, are not table entries with an action)."""
    out = {}
    for key, data in state.entities.items():
        entity = state.entity(key)
        if entity.WhichOneof("entity") != "table_entry":
            continue
        te = entity.table_entry
        if not te.action.HasField("action"):
            continue  # (an action profile's member or group: the underlay)
        table, action = p4info.alias_of(te.table_id), p4info.alias_of(te.action.action.action_id)
        if table in tables or action in actions:
            out[key] = data
    return out


def assert_each_tor_compiles(
    fabric: Fabric,
    vms: list[Vm],
    learned: Learned,
    enc: Encoder,
    holds: Iterable[Any],
    lacks: Iterable[Any] = (),
) -> None:
    """``learned`` (what EVPN learned) given to the controller's incremental
    state after ``vms`` on ``fabric``: every ToR holds each entry of
    ``holds`` (messages of the pipeline's entry builders) and none of
    ``lacks``, and equals its whole compile."""
    desired = DesiredState(fabric, enc, Allocations())
    desired.change(vms, [])
    desired.set_learned(learned)
    holds, lacks = list(holds), list(lacks)
    for tor, compiler in desired.tors.items():
        state = compiler.state
        for message in holds:
            key, data = enc.of(message)
            assert state.get(key) == data, (tor, message)
        for message in lacks:
            assert state.get(enc.of(message)[0]) is None, (tor, message)
        assert state == compile_tor(fabric, vms, tor, desired.alloc, enc, desired.learned)


def assert_intake_refuses(
    intake: RouteIntake,
    peer: str,
    route: MacIpRoute | IpPrefixRoute | InclusiveMulticastRoute,
    reason: str,
    detail: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``intake`` refuses ``route`` from ``peer``: counted and held with
    ``reason``, logged once with the reason and ``detail``."""
    with caplog.at_level(logging.WARNING, logger="p4vtep.evpn.intake"):
        assert intake.admit(peer, route) is None
    assert dict(intake.refused) == {reason: 1}
    assert intake.held_refused == {(peer, route.nlri_key()): (route, reason)}
    assert len(caplog.records) == 1
    assert f"({reason})" in caplog.records[0].getMessage()
    assert detail in caplog.records[0].getMessage()


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


PORT_SECURITY_TABLES = frozenset({"ipv4_source_guard", "ipv6_source_guard", "allowed_source_mac"})


def p4info_without_port_security(p4info: P4Info, keep_flags: bool = False) -> P4Info:
    """``p4info`` without the port-security tables (issue 38): as a build
    before it had it or, ``keep_flags``, with bind_vm's ``guarded`` and
    ``dhcp_server`` kept and no guards (as Tofino 1's profile had it before
    its IPv4 port security)."""
    from p4vtep.runtime.protos import p4info_pb2

    message = p4info_pb2.P4Info()
    message.CopyFrom(p4info.message)
    kept = [t for t in message.tables if t.preamble.alias not in PORT_SECURITY_TABLES]
    del message.tables[:]
    message.tables.extend(kept)
    if not keep_flags:
        for action in message.actions:
            if action.preamble.alias == "bind_vm":
                params = [p for p in action.params if p.name not in ("guarded", "dhcp_server")]
                del action.params[:]
                action.params.extend(params)
    return P4Info(message)


def scrape(controller: Controller) -> str:
    """The controller's data-plane metrics as Prometheus would scrape them."""
    from p4vtep.api.metrics import DataPlaneCollector
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    registry.register(DataPlaneCollector(controller))
    return generate_latest(registry).decode()
