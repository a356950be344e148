"""Two BMv2 ToRs wired back to back for controller integration tests.

    host end   h1 h2            h3 h4
    tor port    1  2   3 4 ══ 3 4  1  2
               [  tor1  ]    [  tor2  ]

Ports 3 and 4 of the two ToRs are cabled to each other (two equal-cost
"uplinks" standing in for the spines); the test sends and sniffs VM frames on
the host ends h1..h4. Everything is made in the host namespace with names
unique to this run and removed at the end.
"""

from __future__ import annotations

import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from p4vtep.bmv2 import Bmv2Switch, VethSet, find_simple_switch_grpc, free_port
from p4vtep.model import Fabric, Server, Tor, Uplink, Vm, Vni

ROUTER_MAC = {"tor1": "00:aa:00:00:00:01", "tor2": "00:aa:00:00:00:02"}


def needs_switch():
    reasons = []
    if find_simple_switch_grpc() is None:
        reasons.append("simple_switch_grpc not found")
    if os.geteuid() != 0:
        reasons.append("not root (veths)")
    if shutil.which("ip") is None:
        reasons.append("iproute2 missing")
    return pytest.mark.skipif(bool(reasons), reason="; ".join(reasons) + ": switch tests skipped")


@dataclass
class SwitchFabric:
    fabric: Fabric
    switches: dict[str, Bmv2Switch]
    host_ifaces: dict[str, str]  # server name -> host end of its cable


@contextmanager
def two_tor_fabric(log_dir: Path):
    prefix = f"pv{os.getpid() % 10000}"
    with VethSet(prefix, 6) as veths:
        (s1, h1), (s2, h2), (s3, h3), (s4, h4), (f1a, f1b), (f2a, f2b) = veths.pairs
        ports = {"tor1": {1: s1, 2: s2, 3: f1a, 4: f2a}, "tor2": {1: s3, 2: s4, 3: f1b, 4: f2b}}
        switches = {
            name: Bmv2Switch(name, i, free_port(), free_port(), ports[name], log_dir=log_dir)
            for i, name in enumerate(("tor1", "tor2"), start=1)
        }
        fabric = Fabric()
        for i, name in enumerate(("tor1", "tor2"), start=1):
            peer = "tor2" if name == "tor1" else "tor1"
            fabric.tors[name] = Tor(
                name,
                switches[name].grpc_address,
                i,
                f"10.0.0.{i}",
                ROUTER_MAC[name],
                (Uplink(3, ROUTER_MAC[peer]), Uplink(4, ROUTER_MAC[peer])),
            )
            for j in (1, 2):
                fabric.servers[f"s{i}{j}"] = Server(f"s{i}{j}", name, j)
        fabric.vnis[5000] = Vni(5000, "tenant-a", 2)
        fabric.vnis[6000] = Vni(6000, "tenant-b", 1)
        try:
            for sw in switches.values():
                sw.start()
            yield SwitchFabric(fabric, switches, {"s11": h1, "s12": h2, "s21": h3, "s22": h4})
        finally:
            for sw in switches.values():
                sw.stop()


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


# Two VMs on VLANs the background population never uses, for probing traffic.
PROBE_SENDER = Vm("prober", "02:aa:00:00:00:01", ("172.16.0.1",), 5000, "s11", 4000)
PROBE_TARGET = Vm("mover", "02:aa:00:00:00:02", ("172.16.0.2",), 5000, "s21", 4001)


def background_vms(count: int) -> list[Vm]:
    """``count`` VMs over the four servers in VNIs 5000/6000 (VLANs 1 up)."""
    servers = ("s11", "s12", "s21", "s22")
    return [
        Vm(
            f"bg{i}",
            f"02:bb:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}",
            (f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}",),
            5000 if i % 2 else 6000,
            servers[i % 4],
            1 + i // 4,
        )
        for i in range(count)
    ]


def read_back_matches(sf: SwitchFabric, controller) -> None:
    """Every switch holds exactly what the controller compiles: nothing
    missing, nothing extra, nothing different."""
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.reconciler import SwitchReader, diff
    from p4vtep.runtime.client import SwitchConnection

    reader = SwitchReader(bmv2_pipeline().p4info)
    for name, tor in sf.fabric.tors.items():
        _, desired = controller.compile_for(name)
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
            left = diff(desired, reader.read(conn))
        assert len(left) == 0, (
            f"{name}: {len(left.inserts)} missing, {len(left.modifies)} "
            f"different, {len(left.deletes)} extra"
        )
