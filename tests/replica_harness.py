"""Controller replicas as separate processes (so SIGKILL and SIGSTOP are
real), over a real etcd cluster (etcd_cluster.py) and the two BMv2 ToRs of
switch_fabric.py, plus what the tests check them with: each replica's API, a
read-only reference compile of what etcd holds, and switch read-back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import yaml
from helpers import FixedLeadership, wait_until
from p4vtep.api import messages
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.compiler import SwitchState
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Fabric, Vm
from p4vtep.processes import stop_process
from p4vtep.runtime.client import SwitchConnection
from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.state.etcd_store import EtcdStateStore
from p4vtep.switch.bmv2 import free_port
from p4vtep.switch.reconciler import Diff, SwitchReader, diff


def fabric_yaml(fabric: Fabric, path: Path) -> Path:
    """The fabric as a fabric file, for controller processes."""
    doc = {
        "tors": [
            {
                "name": t.name,
                "p4runtime": t.address,
                "device_id": t.device_id,
                "vtep_ip": t.vtep_ip,
                "router_mac": t.router_mac,
                "uplinks": [{"port": u.port, "next_hop_mac": u.next_hop_mac} for u in t.uplinks],
            }
            for t in fabric.tors.values()
        ],
        "servers": [
            {"name": s.name, "tor": s.tor, "port": s.port} for s in fabric.servers.values()
        ],
        "vnis": [
            {"vni": v.vni, "name": v.name, "traffic_class": v.traffic_class}
            for v in fabric.vnis.values()
        ],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def reference(fabric: Fabric, settings: EtcdSettings) -> Controller:
    """A controller over what etcd holds now, for compile_for() and vms;
    read-only: with a leadership that never leads it commits nothing (not
    even index rows), and its supervisors are never started."""
    store = EtcdStateStore(settings, "checker")
    try:
        return Controller(fabric, bmv2_pipeline(), store, leadership=FixedLeadership("checker"))
    finally:
        store.close()  # everything is loaded; nothing more is read


def read_switches(fabric: Fabric) -> dict[str, SwitchState]:
    reader = SwitchReader(bmv2_pipeline().p4info)
    out = {}
    for name, tor in fabric.tors.items():
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
            out[name] = reader.read(conn)
    return out


def differences(ref: Controller, states: dict[str, SwitchState]) -> dict[str, Diff]:
    return {name: diff(ref.compile_for(name)[1], state) for name, state in states.items()}


def switches_converged(fabric: Fabric, settings: EtcdSettings, timeout: float = 90.0) -> bool:
    """The switches come to hold exactly the full compile of what etcd holds."""

    def check() -> bool:
        ref = reference(fabric, settings)
        return not any(len(d) for d in differences(ref, read_switches(fabric)).values())

    return wait_until(check, timeout=timeout, interval=1.0)


@dataclass
class ReplicaProcess:
    replica_id: str
    api: str
    log: Path
    process: subprocess.Popen[bytes]
    channel: grpc.Channel = field(init=False)
    stub: Any = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.api)
        self.stub = pb_grpc.OverlayStub(self.channel)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def switches(self, timeout: float = 0.5) -> list[Any] | None:
        try:
            return list(self.stub.ListSwitches(pb.ListSwitchesRequest(), timeout=timeout).switches)
        except grpc.RpcError:
            return None

    def took_over(self) -> bool:
        """Primary on every ToR, with a full pass done since."""
        switches = self.switches()
        return bool(switches) and all(s.primary and s.reconciles >= 1 for s in switches or ())

    def signal(self, sig: int) -> None:
        if self.alive:
            self.process.send_signal(sig)

    def kill(self) -> None:
        stop_process(self.process, timeout=0, group=True)
        self.channel.close()

    def stop(self) -> None:
        """SIGTERM (graceful: resign; a stopped replica is resumed first),
        SIGKILL if that does not do."""
        stop_process(self.process, timeout=15, group=True)
        self.channel.close()

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def start_replica(
    fabric_file: Path,
    settings: EtcdSettings,
    replica_id: str,
    log_dir: Path,
    ttl: int,
    margin: float,
    extra: Sequence[str] = (),
    launcher: Sequence[str] = ("-m", "p4vtep.cli"),
) -> ReplicaProcess:
    """``extra``: more ``controller run`` arguments (e.g. ``--inventory F``);
    ``launcher``: what Python runs with them (e.g. replica_mutant.py MODE)."""
    api = f"127.0.0.1:{free_port()}"
    log = log_dir / f"{replica_id}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                *launcher,
                "controller",
                "run",
                "--fabric",
                str(fabric_file),
                "--etcd",
                ",".join(settings.endpoints),
                "--etcd-prefix",
                settings.prefix,
                "--replica-id",
                replica_id,
                "--listen",
                api,
                "--lease-ttl",
                str(ttl),
                "--lease-margin",
                str(margin),
                "--resync",
                "3600",
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    return ReplicaProcess(replica_id, api, log, process)


def wait_ready(replicas: list[ReplicaProcess], timeout: float = 60.0) -> None:
    """Every replica's API answers."""
    deadline = time.monotonic() + timeout
    for replica in replicas:
        while replica.switches(timeout=1.0) is None:
            if not replica.alive:
                raise RuntimeError(f"{replica.replica_id} exited:\n{replica.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{replica.replica_id} API not up:\n{replica.tail()}")
            time.sleep(0.1)


def find_leader(
    replicas: list[ReplicaProcess], timeout: float = 60.0, poll: float = 0.02
) -> ReplicaProcess:
    """The replica that is primary on every ToR and has done its full pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for replica in replicas:
            if replica.alive and replica.took_over():
                return replica
        time.sleep(poll)
    raise TimeoutError("no replica took over:\n" + "\n".join(r.tail(5) for r in replicas))


def seed(fabric: Fabric, settings: EtcdSettings, vms: list[Any]) -> None:
    """Put ``vms`` into etcd as one import, as a single controller would."""
    store = EtcdStateStore(settings, "seed")
    try:
        Controller(fabric, bmv2_pipeline(), store).replace_source("inventory", vms)
    finally:
        store.close()


class ChangeDriver(threading.Thread):
    """Attaches and detaches VMs through the replicas' APIs, one call at a
    time, sending each to the replica that last accepted one (the next on a
    refusal). Records what was acknowledged and what is uncertain (the call
    failed in a way that may still have committed it)."""

    SERVERS = ("s11", "s12", "s21", "s22")

    def __init__(self, replicas: list[ReplicaProcess], interval: float = 0.02) -> None:
        super().__init__(daemon=True, name="change-driver")
        self.replicas = replicas  # the test replaces killed ones in place
        self.interval = interval
        self.acked: dict[str, Vm | None] = {}  # name -> attached VM, None: detached
        self.uncertain: set[str] = set()
        self.refusals: dict[str, int] = {}  # gRPC code name -> count
        self._target = 0
        self._next = 0
        self._turn = threading.Lock()
        self._halt = threading.Event()

    def vm(self, i: int) -> Vm:
        return Vm(
            f"chg{i}",
            f"02:cc:00:00:{(i >> 8) & 255:02x}:{i & 255:02x}",
            (f"10.200.{(i >> 8) & 255}.{i & 255}",),
            5000,
            self.SERVERS[i % 4],
            3000 + i // 4,
        )

    def run(self) -> None:
        while not self._halt.is_set():
            with self._turn:
                self._one()
            self._halt.wait(self.interval)

    def _one(self) -> None:
        attached = [n for n, vm in self.acked.items() if vm is not None and n not in self.uncertain]
        if attached and self._next % 3 == 2:
            name = attached[len(attached) // 2]
            call = ("DetachVM", pb.DetachVMRequest(name=name))
            result: Vm | None = None
        else:
            vm = self.vm(self._next)
            name = vm.name
            call = ("AttachVM", pb.AttachVMRequest(vm=messages.vm_to_pb(vm)))
            result = vm
        self._next += 1
        for _ in range(len(self.replicas)):
            replica = self.replicas[self._target % len(self.replicas)]
            try:
                getattr(replica.stub, call[0])(call[1], timeout=8)
            except grpc.RpcError as exc:
                code = exc.code().name
                self.refusals[code] = self.refusals.get(code, 0) + 1
                if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:
                    self.uncertain.add(name)  # may have been committed
                    self._target += 1
                    return
                self._target += 1
                continue
            self.acked[name] = result
            return
        # nobody leads right now: not committed anywhere; try again later

    def pause(self) -> None:
        """Returns once no call is in flight; none starts until resume()."""
        self._turn.acquire()

    def resume(self) -> None:
        self._turn.release()

    def stop(self) -> None:
        self._halt.set()
        self.join(30)

    def burst(self, replica: ReplicaProcess, count: int) -> int:
        """Attach ``count`` new VMs through ``replica`` at once (while paused),
        so that some are acknowledged but not yet on the switches; returns
        how many were acknowledged."""
        vms = [self.vm(self._next + i) for i in range(count)]
        self._next += count

        def attach(vm: Vm) -> bool:
            try:
                replica.stub.AttachVM(pb.AttachVMRequest(vm=messages.vm_to_pb(vm)), timeout=8)
                return True
            except grpc.RpcError:
                return False

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(attach, vms))
        for vm, ok in zip(vms, results, strict=True):
            if ok:
                self.acked[vm.name] = vm
            else:
                self.uncertain.add(vm.name)
        return sum(results)
