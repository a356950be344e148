"""The controller's work leaves no reference cycles of its own.

Why it matters: what a cycle holds lives until the cyclic collector runs.
An API call's refusal kept in a cycle held its HTTP/2 stream, and a replica
refused every call after 64 (tests/test_api.py); the collector's thresholds
(``cli/controller_run.settle_collector``) decide how long such garbage
waits. Each test runs a kind of work with the collector off and then asks
it what it found (``gc.DEBUG_SAVEALL``): any frame of p4vtep's code, or any
object of a p4vtep class, in that garbage is a cycle p4vtep made.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from fabric_fixture import two_tor_fabric
from fake_p4runtime import FakeP4RuntimeServer
from helpers import api_client, collector_off, wait_until
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn.speaker import Received
from p4vtep.state.sqlite_store import Store
from test_evpn_batching import PEER, held, host_routes, rig


def ours(garbage: list[object]) -> Counter[str]:
    """p4vtep's frames (by file and function) and objects (by class) in
    ``garbage``."""
    found: Counter[str] = Counter()
    for thing in garbage:
        code = getattr(thing, "f_code", None)
        if code is not None and "/p4vtep/" in code.co_filename:
            found[f"frame {Path(code.co_filename).name}:{code.co_name}"] += 1
        elif type(thing).__module__.startswith("p4vtep."):
            found[f"object {type(thing).__qualname__}"] += 1
    return found


def cycles_made_by(work: Callable[[], None]) -> Counter[str]:
    """What of p4vtep's the collector finds after ``work``, run with the
    collector off, among what did not exist before it (an earlier test's
    controller may still be winding down, its threads finishing)."""
    with collector_off():
        before = {id(thing) for thing in gc.get_objects()}
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            work()
            gc.collect()
            return ours([thing for thing in gc.garbage if id(thing) not in before])
        finally:
            gc.set_debug(0)
            gc.garbage.clear()


def vm(i: int, **fields: object) -> pb.VM:
    base: dict[str, object] = {
        "name": f"v{i}",
        "mac": f"00:00:0a:00:{i >> 8:02x}:{i & 255:02x}",
        "ips": [f"192.168.1.{i + 1}"],
        "vni": 5000,
        "server": "s11",
        "vlan": 100 + i,
    }
    base.update(fields)
    return pb.VM(**base)  # type: ignore[arg-type]


@contextlib.contextmanager
def controller_on_fake_switches(
    tmp_path: Path,
) -> Iterator[tuple[pb_grpc.OverlayStub, list[FakeP4RuntimeServer]]]:
    fabric = two_tor_fabric()
    with contextlib.ExitStack() as stack:
        switches = []
        for name, tor in fabric.tors.items():
            switch = stack.enter_context(FakeP4RuntimeServer(device_id=tor.device_id))
            switches.append(switch)
            fabric.tors[name] = replace(tor, address=switch.address)
        controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
        controller.start()
        stack.callback(controller.stop)
        client, _ = stack.enter_context(api_client(controller))
        client.AttachVM(pb.AttachVMRequest(vm=vm(0), wait=True), timeout=10)  # (warmed up)
        yield client, switches


def test_api_calls_and_their_refusals_leave_no_cycle(tmp_path: Path) -> None:
    with controller_on_fake_switches(tmp_path) as (client, _):

        def work() -> None:
            for i in range(1, 21):
                client.AttachVM(pb.AttachVMRequest(vm=vm(i), wait=True), timeout=10)
            for i in range(1, 11):
                client.MigrateVM(
                    pb.MigrateVMRequest(name=f"v{i}", server="s21", vlan=200 + i, wait=True),
                    timeout=10,
                )
            for i in range(11, 16):
                client.DetachVM(pb.DetachVMRequest(name=f"v{i}", wait=True), timeout=10)
            refused = [
                lambda: client.AttachVM(pb.AttachVMRequest(vm=vm(90, mac="00:00:0a:00:00:01"))),
                lambda: client.AttachVM(pb.AttachVMRequest(vm=vm(91, vlan=5000))),
                lambda: client.AttachVM(pb.AttachVMRequest(vm=vm(92, ips=["192.168.1.2"]))),
                lambda: client.DetachVM(pb.DetachVMRequest(name="nobody")),
                lambda: client.MigrateVM(pb.MigrateVMRequest(name="nobody", server="s21")),
            ]
            for call in refused * 4:
                with pytest.raises(grpc.RpcError):
                    call()
            client.ListVMs(pb.ListVMsRequest())
            client.ListSwitches(pb.ListSwitchesRequest())

        assert cycles_made_by(work) == Counter()


def test_switch_faults_leave_no_cycle(tmp_path: Path) -> None:
    """Updates a switch refuses, a stream it cuts, writes whose connection
    fails, another controller primary for a while: the supervisors' error
    paths."""
    with controller_on_fake_switches(tmp_path) as (client, switches):
        tor1, tor2 = switches

        def work() -> None:
            tor1.refuse(lambda update: True, 8, "table full")  # (RESOURCE_EXHAUSTED)
            with pytest.raises(grpc.RpcError):
                client.AttachVM(pb.AttachVMRequest(vm=vm(1), wait=True), timeout=2)
            tor1.accept_all()
            tor2.fail_writes = True
            client.AttachVM(pb.AttachVMRequest(vm=vm(3, server="s21")), timeout=2)
            assert wait_until(lambda: tor2.failed_writes >= 1, 10)
            tor2.fail_writes = False
            tor2.drop_streams()
            tor1.take_primary(1 << 100)
            time.sleep(0.5)
            tor1.release_primary()
            client.AttachVM(pb.AttachVMRequest(vm=vm(2), wait=True), timeout=20)

        assert cycles_made_by(work) == Counter()


def test_evpn_routes_learned_withdrawn_and_lost_leave_no_cycle(tmp_path: Path) -> None:
    with rig(tmp_path, 0.01) as (controller, source):
        service = source.service

        def work() -> None:
            for start in range(1, 201, 8):  # (as gobgpd's events: a few paths each)
                service._paths(
                    [Received(PEER, route=host_routes(i)) for i in range(start, start + 8)]
                )
            assert wait_until(lambda: held(controller) == 200, 30)
            service._paths(
                [Received(PEER, withdrawn=host_routes(i).nlri_key()) for i in range(1, 101)]
            )
            assert wait_until(lambda: held(controller) == 100, 30)
            service._peer_state(PEER, False)  # (the session lost)
            assert wait_until(lambda: held(controller) == 0, 30)

        assert cycles_made_by(work) == Counter()
