#!/usr/bin/env python3
"""Benchmark 3: VM moves between ToRs with 10,000 VMs installed.

For each move: the event is the MigrateVM call; we time (a) until every ToR
has acknowledged the last write of the move, and (b) until the first probe
frame reaches the VM's new location. A prober VM sends a frame to the moving
VM every millisecond; the moving VM alternates between a server on tor2 and
a server on tor1. Then, with the same population, attach a fresh VM and
detach it again, timing each until every ToR acknowledged it.

``--routed`` (issue 28): the same with routing between subnets. Two tenants,
each two routed subnets (VNIs 5000/5001 in VRF red, 6000/6001 in blue, the
same prefixes in both), the background VMs spread over the four; the prober
is in red's first subnet and the mover in its second, so every probe is
routed: on tor1 by the same ToR, on tor2 across the fabric (the L3 VNI). The
mover's host route moves with its MAC. Result: vm_move_routed.json.

``--tenants N``: the VMs spread over N tenants instead (bench/tenants.py:
each a VRF with one routed VNI on both ToRs), the prober and the mover in the
first tenant's VNI (bridged probes, as without it). The mover's VNI then has
about 10,000 / 2N VMs on each ToR instead of 2,500, so each move rewrites a
flood group that much smaller: what the move costs beside the group. Result:
vm_move_tenants.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import REPO, RESULTS, percentile, require_switch, summary, write_result

sys.path.insert(0, str(REPO / "tests"))

from p4vtep.cli.controller_run import settle_collector
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Fabric, Subnet, Vm, Vni, Vrf
from p4vtep.state.sqlite_store import Store
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from switch_fabric import PROBE_SENDER as PROBER
from switch_fabric import PROBE_TARGET as MOVER
from switch_fabric import SERVERS, background_vms, bmv2_fabric
from tenants import add_tenants, spread_vms, tenant_vm

ANYCAST_GATEWAY_MAC = "00:00:5e:00:01:01"
# Routed: (VNI, VRF, subnet) of the four VNIs; red and blue overlap.
ROUTED_VNIS = (
    (5000, "red", "10.50"),
    (5001, "red", "10.51"),
    (6000, "blue", "10.50"),
    (6001, "blue", "10.51"),
)
ROUTED_PROBER = Vm("prober", "02:aa:00:00:00:01", ("10.50.200.1",), 5000, "s11", 4000)
ROUTED_MOVER = Vm("mover", "02:aa:00:00:00:02", ("10.51.200.2",), 5001, "s21", 4001)

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
# (server, VF VLAN) the mover alternates between: tor1 and tor2.
PLACES = (("s12", 4002), ("s21", 4001))


class ProbeWatch:
    """Records when probe frames for the mover arrive on each host interface."""

    def __init__(self, ifaces: dict[str, str], mover_mac: str) -> None:
        self.mover = bytes.fromhex(mover_mac.replace(":", ""))
        self.arrivals: dict[str, list[float]] = {server: [] for server in ifaces}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._listen, args=(s, i), daemon=True)
            for s, i in ifaces.items()
        ]

    def _listen(self, server: str, iface: str) -> None:
        # Protocol 0 until bound, so no frame of another interface is queued.
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as sock:
            sock.bind((iface, ETH_P_ALL))  # (host order: Python converts)
            sock.settimeout(0.2)
            mover = self.mover
            while not self._stop.is_set():
                try:
                    data, addr = sock.recvfrom(2048)
                except TimeoutError:
                    continue
                if addr[2] != PACKET_OUTGOING and data[:6] == mover:
                    self.arrivals[server].append(time.perf_counter())

    def first_after(self, server: str, t0: float) -> float | None:
        return next((t for t in self.arrivals[server] if t >= t0), None)

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()


def route(fabric: Fabric) -> None:
    """Make the test fabric's tenants routed (ROUTED_VNIS), /16 subnets."""
    fabric.anycast_gateway_mac = ANYCAST_GATEWAY_MAC
    fabric.vrfs["red"] = Vrf("red", 50000)
    fabric.vrfs["blue"] = Vrf("blue", 60000)
    for vni, vrf, prefix in ROUTED_VNIS:
        fabric.vnis[vni] = Vni(
            vni, f"{vrf}-{vni}", vrf=vrf, subnets=(Subnet(f"{prefix}.0.0/16", f"{prefix}.255.254"),)
        )


def routed_background(count: int) -> list[Vm]:
    """``count`` VMs over the four servers and the four routed VNIs (each VNI
    on both ToRs), one address each in its VNI's subnet."""
    vms = []
    for i in range(count):
        vni, _, prefix = ROUTED_VNIS[(i // 4) % 4]
        host = i + 1
        vms.append(
            Vm(
                f"bg{i}",
                f"02:bb:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}",
                (f"{prefix}.{host >> 8}.{host & 255}",),
                vni,
                SERVERS[i % 4],
                1 + i // 4,
            )
        )
    return vms


def probe_sender(iface: str, stop: threading.Event, prober: Vm, mover: Vm, to: str) -> None:
    """A frame every millisecond from ``prober`` to ``mover``'s IP, sent to
    ``to`` (the mover's MAC, or the anycast gateway MAC when routed)."""
    frame = bytes(
        Ether(src=prober.mac, dst=to)
        / Dot1Q(vlan=prober.vlan)
        / IP(src=prober.ips[0], dst=mover.ips[0])
        / UDP(sport=7, dport=7)
    )
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        while not stop.is_set():
            sock.send(frame)
            time.sleep(0.001)


# --tenants: the prober and the mover in the first tenant, numbered past the
# background's VMs (at most 10,000 / 2 a tenant) and the fresh ones.
TENANT_PROBER, TENANT_MOVER, TENANT_FRESH = 65_001, 65_002, 60_000


def tenant_population(args: argparse.Namespace) -> tuple[list[Vm], Vm, Vm]:
    """``--tenants``: the background over the tenants' four servers, the
    prober and the mover (on PROBER's and MOVER's places) in tenant 0."""
    population = spread_vms(args.tenants, args.vms, lambda _tenant: SERVERS)
    prober = tenant_vm("prober", TENANT_PROBER, 0, PROBER.server, PROBER.vlan)
    mover = tenant_vm("mover", TENANT_MOVER, 0, MOVER.server, MOVER.vlan)
    return population, prober, mover


def fresh_vm(args: argparse.Namespace, i: int) -> Vm:
    """The i-th VM attached and detached after the moves."""
    server, vlan = PLACES[i % 2][0], 3000 + i
    if args.tenants:
        return tenant_vm(f"fresh{i}", TENANT_FRESH + i, 0, server, vlan)
    ip = (
        f"10.50.{240 + (i >> 8 & 3)}.{i & 255}"
        if args.routed
        else f"172.30.{i >> 8 & 255}.{i & 255}"
    )
    return Vm(
        f"fresh{i}", f"02:dd:00:00:{i >> 8 & 255:02x}:{i & 255:02x}", (ip,), 5000, server, vlan
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--attaches", type=int, default=100)
    parser.add_argument("--routed", action="store_true", help="the prober routes to the mover")
    parser.add_argument("--label", default="", help="--tenants: the run's name in the runs")
    parser.add_argument(
        "--tenants", type=int, default=0, help="the VMs over this many routed tenants (at least 2)"
    )
    args = parser.parse_args()
    if args.tenants and (args.routed or args.tenants < 2):
        parser.error("--tenants: at least 2, and not with --routed")
    require_switch()
    if args.tenants:
        population, prober, mover = tenant_population(args)
        to = mover.mac
    elif args.routed:
        prober, mover, to = ROUTED_PROBER, ROUTED_MOVER, ANYCAST_GATEWAY_MAC
        population = routed_background(args.vms)
    else:
        prober, mover, to = PROBER, MOVER, MOVER.mac
        population = background_vms(args.vms)
    with tempfile.TemporaryDirectory() as tmp, bmv2_fabric(Path(tmp) / "logs") as sf:
        if args.routed:
            route(sf.fabric)
        if args.tenants:
            sf.fabric.vnis.clear()
            add_tenants(sf.fabric, args.tenants)
        store = Store(Path(tmp) / "state.db")
        controller = Controller(sf.fabric, bmv2_pipeline(), store, resync_seconds=3600)
        controller.replace_source("inventory", population + [prober, mover])
        started = time.perf_counter()
        controller.start()
        assert controller.wait_converged(900)
        settle_collector()  # as `p4vtep controller run` does once started
        print(f"{args.vms} VMs installed in {time.perf_counter() - started:.1f} s", flush=True)
        acked, delivered = [], []
        stop = threading.Event()
        sender = threading.Thread(
            target=probe_sender,
            args=(sf.host_ifaces["s11"], stop, prober, mover, to),
            daemon=True,
        )
        with ProbeWatch({s: sf.host_ifaces[s] for s, _ in PLACES}, mover.mac) as watch:
            sender.start()
            time.sleep(0.5)
            for move in range(args.moves):
                server, vlan = PLACES[move % 2]
                t0 = time.perf_counter()
                version = controller.migrate("mover", server, vlan)
                assert controller.wait_version(version, 60)
                acked.append(time.perf_counter() - t0)
                deadline = time.perf_counter() + 5
                while (
                    first := watch.first_after(server, t0)
                ) is None and time.perf_counter() < deadline:
                    time.sleep(0.001)
                delivered.append((first - t0) if first else float("nan"))
            stop.set()
        attached, detached = [], []
        for i in range(args.attaches):
            vm = fresh_vm(args, i)
            t0 = time.perf_counter()
            assert controller.wait_version(controller.attach(vm), 60)
            attached.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            assert controller.wait_version(controller.detach(vm.name), 60)
            detached.append(time.perf_counter() - t0)
        controller.stop()
    ok = [d for d in delivered if d == d]
    result = {
        "routed": args.routed,
        "tenants": args.tenants or None,
        "vms": args.vms,
        "moves": args.moves,
        "ack_seconds": {
            **summary(acked),
            "p50": percentile(acked, 50),
            "p99": percentile(acked, 99),
        },
        "first_packet_seconds": {
            **summary(ok),
            "p50": percentile(ok, 50),
            "p99": percentile(ok, 99),
            "missing": len(delivered) - len(ok),
        },
        "attach_ack_seconds": {
            **summary(attached),
            "p50": percentile(attached, 50),
            "p99": percentile(attached, 99),
        },
        "detach_ack_seconds": {
            **summary(detached),
            "p50": percentile(detached, 50),
            "p99": percentile(detached, 99),
        },
        "samples": {
            "ack": acked,
            "first_packet": delivered,
            "attach": attached,
            "detach": detached,
        },
    }
    print(
        f"ack p50 {result['ack_seconds']['p50'] * 1e3:.0f} ms p99 "
        f"{result['ack_seconds']['p99'] * 1e3:.0f} ms; first packet p50 "
        f"{result['first_packet_seconds']['p50'] * 1e3:.0f} ms p99 "
        f"{result['first_packet_seconds']['p99'] * 1e3:.0f} ms; attach p99 "
        f"{result['attach_ack_seconds']['p99'] * 1e3:.1f} ms, detach p99 "
        f"{result['detach_ack_seconds']['p99'] * 1e3:.1f} ms"
    )
    if args.tenants:  # (runs side by side: each one kept)
        append_run("vm_move_tenants", result, args.label)
    else:
        write_result("vm_move_routed" if args.routed else "vm_move", result)


def append_run(name: str, result: dict, label: str) -> None:
    """``result`` added to the runs of bench/results/NAME.json."""
    path = RESULTS / f"{name}.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    run = {"label": label or time.strftime("%Y-%m-%d %H:%M"), "load": f"{os.getloadavg()[0]:.2f}"}
    write_result(name, {"runs": [*runs, {**run, "result": result}]})


if __name__ == "__main__":
    main()
