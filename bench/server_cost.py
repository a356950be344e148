#!/usr/bin/env python3
"""Benchmark 5: what the offload saves on the server.

Two network namespaces joined by a veth stand for two servers. Case
"vxlan": traffic goes through a Linux vxlan device in each (the server does
the overlay, as a hypervisor's virtual switch would). Case "offloaded": the
same traffic goes straight over the link; with SR-IOV the VF's VLAN tag is
added by the NIC at no CPU cost (this kernel has no 802.1Q devices, so the
offloaded case sends untagged frames; the tag would cost the CPU nothing).
iperf3 sends UDP as fast as it can; we count packets received and the CPU
time the whole machine spent (/proc/stat) and report packets/s per
CPU-second. Rounds alternate offloaded / vxlan.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import time

from common import alternate, ratios, summary, write_result

NS = ("p4vtep-srvA", "p4vtep-srvB")
UNDERLAY = ("10.99.0.1", "10.99.0.2")
OVERLAY = ("192.168.50.1", "192.168.50.2")
PLAIN = ("192.168.60.1", "192.168.60.2")
HEADERS = 14 + 20 + 8  # Ethernet + IPv4 + UDP of the tenant packet


def sh(*args: str, check: bool = True) -> str:
    return subprocess.run(args, check=check, capture_output=True, text=True).stdout


def ns(index: int, *args: str, check: bool = True) -> str:
    return sh("ip", "netns", "exec", NS[index], *args, check=check)


def setup() -> None:
    for name in NS:
        sh("ip", "netns", "add", name)
    sh(
        "ip",
        "link",
        "add",
        "srvA0",
        "netns",
        NS[0],
        "type",
        "veth",
        "peer",
        "name",
        "srvB0",
        "netns",
        NS[1],
    )
    for i, dev in ((0, "srvA0"), (1, "srvB0")):
        ns(i, "ip", "link", "set", "lo", "up")
        ns(i, "ip", "link", "set", dev, "mtu", "9000", "up")
        ns(i, "ip", "addr", "add", f"{UNDERLAY[i]}/24", "dev", dev)
        ns(i, "ip", "addr", "add", f"{PLAIN[i]}/24", "dev", dev)
        ns(
            i,
            "ip",
            "link",
            "add",
            "vx0",
            "type",
            "vxlan",
            "id",
            "5000",
            "local",
            UNDERLAY[i],
            "remote",
            UNDERLAY[1 - i],
            "dstport",
            "4789",
            "dev",
            dev,
        )
        ns(i, "ip", "link", "set", "vx0", "mtu", "1500", "up")
        ns(i, "ip", "addr", "add", f"{OVERLAY[i]}/24", "dev", "vx0")


def teardown() -> None:
    for name in NS:
        sh("ip", "netns", "delete", name, check=False)


def busy_seconds() -> float:
    """CPU time spent by the whole machine (all CPUs, not idle/iowait)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    values = [int(v) for v in fields]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run(target: str, frame: int, seconds: float) -> float:
    """Packets received per CPU-second sending ``frame``-byte frames to ``target``."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", NS[1], "iperf3", "-s", "-1", "-J"],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    cpu0 = busy_seconds()
    client = ns(
        0,
        "iperf3",
        "-c",
        target,
        "-u",
        "-b",
        "0",
        "-l",
        str(frame - HEADERS),
        "-t",
        str(seconds),
        "-J",
    )
    cpu = busy_seconds() - cpu0
    report = json.loads(server.communicate(timeout=30)[0])
    total = report["end"]["sum"]
    received = total["packets"] - total["lost_packets"]
    del client
    return received / cpu if cpu > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 1024])
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("iperf3") is None:
        print("SKIP: needs root and iperf3")
        return
    teardown()
    setup()
    results = {}
    try:
        for frame in args.sizes:
            offloaded, vxlan = alternate(
                functools.partial(run, PLAIN[1], frame, args.seconds),
                functools.partial(run, OVERLAY[1], frame, args.seconds),
                args.rounds,
            )
            results[str(frame)] = {
                "frame_bytes": frame,
                "offloaded_pkts_per_cpu_s": summary(offloaded),
                "vxlan_pkts_per_cpu_s": summary(vxlan),
                "gain": ratios(offloaded, vxlan),
                "rounds": {"offloaded": offloaded, "vxlan": vxlan},
            }
            print(
                f"{frame} B: offloaded {summary(offloaded)['median']:.0f}, vxlan "
                f"{summary(vxlan)['median']:.0f} packets per CPU-second; gain "
                f"{ratios(offloaded, vxlan)['median']:.2f}x",
                flush=True,
            )
    finally:
        teardown()
    write_result("server_cost", {"frames": results, "seconds_per_round": args.seconds})


if __name__ == "__main__":
    main()
