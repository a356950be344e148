#!/usr/bin/env python3
"""Benchmark 4: packets/s and latency of the p4vtep pipeline's three paths
(local switching, encap, decap) against a minimal L2 forwarding program
(bench/baseline/l2fwd.p4), same p4c, same simple_switch_grpc process, same
veths, 64- and 1024-byte frames, rounds alternating baseline / p4vtep.

Throughput: a sender pushes frames as fast as Python can for a few seconds;
what comes out of the egress port per second is the switch's rate. Latency:
frames at 200/s, time from send to receive.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from common import BENCH, alternate, ratios, require_switch, summary, write_result
from p4vtep.bmv2 import Bmv2Switch, VethSet, free_port
from p4vtep.dataplane.artifacts import Pipeline, bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, PortRole
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
ACCESS_1, ACCESS_2, UPLINK = 1, 2, 3
VTEP, REMOTE_VTEP, ROUTER_MAC, SPINE_MAC = (
    "10.0.0.1",
    "10.0.0.2",
    "00:aa:00:00:00:01",
    "00:5e:00:00:01:01",
)
VM_A = ("00:00:0a:00:00:01", "192.168.1.1", 10, 1)  # mac, ip, vlan, index (port 1)
VM_B = ("00:00:0a:00:00:02", "192.168.1.2", 20, 2)  # port 2
VM_C = ("00:00:0a:00:00:03", "192.168.1.3")  # behind REMOTE_VTEP
VNI = 5000
FLOWS = 64


def compile_baseline(out: Path) -> Pipeline:
    p4c = os.environ.get("P4C", "p4c")
    subprocess.run(
        [
            p4c,
            "--target",
            "bmv2",
            "--arch",
            "v1model",
            "-o",
            str(out),
            "--p4runtime-files",
            str(out / "l2fwd.p4info.txtpb"),
            str(BENCH / "baseline" / "l2fwd.p4"),
        ],
        check=True,
        capture_output=True,
    )
    return Pipeline(out / "l2fwd.p4info.txtpb", out / "l2fwd.json")


def frames(path: str, size: int) -> list[bytes]:
    """FLOWS distinct frames of ``size`` bytes (the tenant frame) for a path."""
    out = []
    for flow in range(FLOWS):

        def tenant(src_mac, src_ip, dst_mac, dst_ip, vlan=None, flow=flow):
            head = Ether(src=src_mac, dst=dst_mac)
            if vlan is not None:
                head = head / Dot1Q(vlan=vlan)
            pkt = head / IP(src=src_ip, dst=dst_ip) / UDP(sport=1000 + flow, dport=5000)
            return pkt / Raw(b"\0" * max(0, size - len(pkt)))

        if path == "local":
            out.append(tenant(VM_A[0], VM_A[1], VM_B[0], VM_B[1], VM_A[2]))
        elif path == "encap":
            out.append(tenant(VM_A[0], VM_A[1], VM_C[0], VM_C[1], VM_A[2]))
        elif path == "decap":
            inner = tenant(VM_C[0], VM_C[1], VM_A[0], VM_A[1])
            out.append(
                Ether(src=SPINE_MAC, dst=ROUTER_MAC)
                / IP(src=REMOTE_VTEP, dst=VTEP)
                / UDP(sport=50000 + flow, dport=4789, chksum=0)
                / VXLAN(vni=VNI)
                / inner
            )
        else:  # baseline: plain frames of the same size
            out.append(tenant("00:00:00:00:00:01", "1.1.1.1", "00:00:00:00:00:02", "2.2.2.2"))
    return [bytes(f) for f in out]


# (ingress port, egress port) of each path
PORTS = {
    "local": (ACCESS_1, ACCESS_2),
    "encap": (ACCESS_1, UPLINK),
    "decap": (UPLINK, ACCESS_1),
    "baseline": (ACCESS_1, ACCESS_2),
}


def install_p4vtep(conn: SwitchConnection, pipeline: Pipeline) -> None:
    e = PipelineEntries(pipeline.p4info)
    conn.insert(
        e.port_role(ACCESS_1, PortRole.ACCESS),
        e.port_role(ACCESS_2, PortRole.ACCESS),
        e.port_role(UPLINK, PortRole.FABRIC),
        e.my_vtep(VTEP),
        e.vni_config(VNI, 1, 0, 1, 2),
        e.access_binding(ACCESS_1, VM_A[2], VNI, VM_A[3], VM_A[0]),
        e.access_binding(ACCESS_2, VM_B[2], VNI, VM_B[3], VM_B[0]),
        e.mac_to_local_vm(VNI, VM_A[0], ACCESS_1, VM_A[2], VM_A[3]),
        e.mac_to_local_vm(VNI, VM_B[0], ACCESS_2, VM_B[2], VM_B[3]),
        e.mac_to_remote_vtep(VNI, VM_C[0], REMOTE_VTEP),
        e.next_hop_member(1, UPLINK, SPINE_MAC),
    )
    conn.insert(e.ecmp_group(1, [1]))
    conn.insert(e.underlay_route(REMOTE_VTEP, 32, group_id=1))
    conn.modify(e.local_vtep(VTEP, ROUTER_MAC))


def install_baseline(conn: SwitchConnection, pipeline: Pipeline) -> None:
    for ingress, egress in ((ACCESS_1, ACCESS_2), (UPLINK, ACCESS_1)):
        conn.insert(
            entities.table_entry(
                pipeline.p4info, "port_forward", {"port": ingress}, "forward", {"port": egress}
            )
        )


class Counter:
    """Counts (and timestamps) frames arriving on an interface."""

    def __init__(self, iface: str) -> None:
        self.iface = iface
        self.count = 0
        self.times: list[float] = []
        self.keep_times = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            sock.bind((self.iface, 0))
            sock.settimeout(0.1)
            while not self._stop.is_set():
                try:
                    _, addr = sock.recvfrom(65535)
                except TimeoutError:
                    continue
                if addr[2] != PACKET_OUTGOING:
                    self.count += 1
                    if self.keep_times:
                        self.times.append(time.perf_counter())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def throughput(send_iface: str, recv_iface: str, pkts: list[bytes], seconds: float) -> float:
    with Counter(recv_iface) as counter, socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        tx.bind((send_iface, 0))
        time.sleep(0.2)
        start_count = counter.count
        started = time.perf_counter()
        i = 0
        while time.perf_counter() - started < seconds:
            tx.send(pkts[i % len(pkts)])
            i += 1
        time.sleep(0.5)  # let the switch drain what it queued
        received = counter.count - start_count
    return received / (seconds + 0.5)


def latency(send_iface: str, recv_iface: str, pkts: list[bytes], count: int = 200) -> float:
    """Median one-way latency in microseconds at 200 frames/s."""
    samples = []
    with Counter(recv_iface) as counter, socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        tx.bind((send_iface, 0))
        counter.keep_times = True
        time.sleep(0.2)
        for i in range(count):
            seen = len(counter.times)
            sent = time.perf_counter()
            tx.send(pkts[i % len(pkts)])
            deadline = sent + 0.1
            while len(counter.times) == seen and time.perf_counter() < deadline:
                time.sleep(0.00002)
            if len(counter.times) > seen:
                samples.append((counter.times[seen] - sent) * 1e6)
            time.sleep(0.005)
    return statistics.median(samples) if samples else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 1024])
    args = parser.parse_args()
    require_switch()
    if shutil.which(os.environ.get("P4C", "p4c")) is None:
        print("SKIP: p4c not found (the baseline program must be compiled)")
        return
    with tempfile.TemporaryDirectory() as tmp, VethSet(f"pb{os.getpid() % 1000}", 3) as veths:
        baseline = compile_baseline(Path(tmp))
        vtep = bmv2_pipeline()
        host = {port: h for port, (_, h) in enumerate(veths.pairs, start=1)}
        switch = Bmv2Switch(
            "dp",
            1,
            free_port(),
            free_port(),
            {port: s for port, (s, _) in enumerate(veths.pairs, start=1)},
            log_dir=Path(tmp),
        )
        switch.start()
        conn = SwitchConnection(switch.grpc_address, 1, election_id=1)
        assert conn.connect()

        def load(pipeline: Pipeline, install) -> None:
            conn.clear_multicast_groups()
            conn.set_pipeline(pipeline.p4info.message, pipeline.device_config, pipeline.cookie)
            install(conn, pipeline)

        results: dict = {}
        try:
            for size in args.sizes:
                base_frames = frames("baseline", size)
                for path in ("local", "encap", "decap"):
                    path_frames = frames(path, size)
                    ingress, egress = PORTS[path]

                    def run_base(base_frames=base_frames):
                        load(baseline, install_baseline)
                        return throughput(host[ACCESS_1], host[ACCESS_2], base_frames, args.seconds)

                    def run_vtep(ingress=ingress, egress=egress, path_frames=path_frames):
                        load(vtep, install_p4vtep)
                        return throughput(host[ingress], host[egress], path_frames, args.seconds)

                    base_pps, vtep_pps = alternate(run_base, run_vtep, args.rounds)
                    load(baseline, install_baseline)
                    base_lat = latency(host[ACCESS_1], host[ACCESS_2], base_frames)
                    load(vtep, install_p4vtep)
                    vtep_lat = latency(host[ingress], host[egress], path_frames)
                    key = f"{path}_{size}"
                    results[key] = {
                        "path": path,
                        "frame_bytes": size,
                        "baseline_pps": summary(base_pps),
                        "p4vtep_pps": summary(vtep_pps),
                        "ratio": ratios(vtep_pps, base_pps),
                        "baseline_latency_us": base_lat,
                        "p4vtep_latency_us": vtep_lat,
                        "rounds": {"baseline": base_pps, "p4vtep": vtep_pps},
                    }
                    print(
                        f"{key}: baseline {summary(base_pps)['median']:.0f} pps, p4vtep "
                        f"{summary(vtep_pps)['median']:.0f} pps, ratio "
                        f"{results[key]['ratio']['median']:.2f}; latency {base_lat:.0f} vs "
                        f"{vtep_lat:.0f} us",
                        flush=True,
                    )
        finally:
            conn.close()
            switch.stop()
    write_result("dataplane", {"paths": results, "seconds_per_round": args.seconds})


if __name__ == "__main__":
    main()
