#!/usr/bin/env python3
"""Benchmark 3: VM moves between ToRs with 10,000 VMs installed.

For each move: the event is the MigrateVM call; we time (a) until every ToR
has acknowledged the last write of the move, and (b) until the first probe
frame reaches the VM's new location. A prober VM sends a frame to the moving
VM every millisecond; the moving VM alternates between a server on tor2 and
a server on tor1. Then, with the same population, attach a fresh VM and
detach it again, timing each until every ToR acknowledged it.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import REPO, percentile, require_switch, summary, write_result

sys.path.insert(0, str(REPO / "tests"))

from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model import Vm
from p4vtep.store import Store
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from switch_fabric import PROBE_SENDER as PROBER
from switch_fabric import PROBE_TARGET as MOVER
from switch_fabric import background_vms, bmv2_fabric

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
# (server, VF VLAN) the mover alternates between: tor1 and tor2.
PLACES = (("s12", 4002), ("s21", 4001))


class ProbeWatch:
    """Records when probe frames for the mover arrive on each host interface."""

    def __init__(self, ifaces: dict[str, str]) -> None:
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
            mover = bytes.fromhex(MOVER.mac.replace(":", ""))
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


def probe_sender(iface: str, stop: threading.Event) -> None:
    frame = bytes(
        Ether(src=PROBER.mac, dst=MOVER.mac)
        / Dot1Q(vlan=PROBER.vlan)
        / IP(src=PROBER.ips[0], dst=MOVER.ips[0])
        / UDP(sport=7, dport=7)
    )
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        while not stop.is_set():
            sock.send(frame)
            time.sleep(0.001)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--attaches", type=int, default=100)
    args = parser.parse_args()
    require_switch()
    with tempfile.TemporaryDirectory() as tmp, bmv2_fabric(Path(tmp) / "logs") as sf:
        store = Store(Path(tmp) / "state.db")
        controller = Controller(sf.fabric, bmv2_pipeline(), store, resync_seconds=3600)
        controller.replace_source("inventory", background_vms(args.vms) + [PROBER, MOVER])
        started = time.perf_counter()
        controller.start()
        assert controller.wait_converged(900)
        print(f"{args.vms} VMs installed in {time.perf_counter() - started:.1f} s", flush=True)
        acked, delivered = [], []
        stop = threading.Event()
        sender = threading.Thread(
            target=probe_sender, args=(sf.host_ifaces["s11"], stop), daemon=True
        )
        with ProbeWatch({s: sf.host_ifaces[s] for s, _ in PLACES}) as watch:
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
            vm = Vm(
                f"fresh{i}",
                f"02:dd:00:00:{i >> 8 & 255:02x}:{i & 255:02x}",
                (f"172.30.{i >> 8 & 255}.{i & 255}",),
                5000,
                PLACES[i % 2][0],
                3000 + i,
            )
            t0 = time.perf_counter()
            assert controller.wait_version(controller.attach(vm), 60)
            attached.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            assert controller.wait_version(controller.detach(vm.name), 60)
            detached.append(time.perf_counter() - t0)
        controller.stop()
    ok = [d for d in delivered if d == d]
    result = {
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
    write_result("vm_move", result)


if __name__ == "__main__":
    main()
