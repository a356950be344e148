"""Load and measurement for the data-plane benchmark: tcpreplay sends, the
kernel's interface counters count, /proc says who used the CPU meanwhile.

No packet is sent or counted in Python except the few latency probes."""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import pinned
from p4vtep.processes import stop_process

Snapshot = tuple[float, int, float, float]  # time, rx packets, switch CPU s, machine CPU s
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def find_tcpreplay() -> str | None:
    return os.environ.get("TCPREPLAY") or shutil.which("tcpreplay")


def iface_counter(iface: str, name: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/{name}").read_text())


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU time spent on anything but idle/iowait, all cores, since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / CLOCK_TICKS


def process_table() -> dict[int, tuple[str, float]]:
    """pid -> (command name, CPU seconds so far) of every process."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # gone meanwhile
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        table[int(stat.parent.name)] = (name, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return table


class MachineShare:
    """Who used the CPU between start() and stop(): this process and its
    children (switch, tcpreplay, p4c) against everything else."""

    def start(self) -> None:
        self.wall = time.monotonic()
        self.busy = machine_busy_seconds()
        self.ours = self._ours()
        self.procs = process_table()
        self.loadavg = os.getloadavg()

    @staticmethod
    def _ours() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def stop(self) -> dict[str, Any]:
        wall = time.monotonic() - self.wall
        busy = machine_busy_seconds() - self.busy
        ours = self._ours() - self.ours
        after = process_table()
        others = sorted(
            (
                (after[pid][1] - cpu, name)
                for pid, (name, cpu) in self.procs.items()
                if pid in after and pid != os.getpid()
            ),
            reverse=True,
        )
        return {
            "wall_s": wall,
            "cores": os.cpu_count(),
            "loadavg_before": list(self.loadavg),
            "loadavg_after": list(os.getloadavg()),
            "machine_busy_cpu_s": busy,
            "this_benchmark_cpu_s": ours,
            # Includes the kernel's softirq work on our veths (not charged to
            # a process), so it is an upper bound on what others took.
            "everything_else_cpu_s": max(0.0, busy - ours),
            # More than a tenth of a core on average: the figures were taken
            # on a machine other work was using too.
            "shared_with_other_processes": busy - ours > 0.1 * wall,
            "busiest_other_processes": [
                {"name": name, "cpu_s": round(cpu, 1)} for cpu, name in others[:5] if cpu >= 1
            ],
        }


@dataclass
class Window:
    """What happened on the machine while one measurement ran."""

    packets: int
    seconds: float
    switch_cpu_s: float
    machine_cpu_s: float

    @property
    def pps(self) -> float:
        return self.packets / self.seconds


class Sampler:
    """Snapshots the egress rx counter and the CPU clocks; the difference of
    two snapshots is a Window."""

    def __init__(self, recv_iface: str, switch_pid: int) -> None:
        self.recv_iface = recv_iface
        self.switch_pid = switch_pid

    def snapshot(self) -> Snapshot:
        return (
            time.monotonic(),
            iface_counter(self.recv_iface, "rx_packets"),
            process_cpu_seconds(self.switch_pid),
            machine_busy_seconds(),
        )

    @staticmethod
    def window(a: Snapshot, b: Snapshot) -> Window:
        return Window(b[1] - a[1], b[0] - a[0], b[2] - a[2], b[3] - a[3])


def tcpreplay_command(iface: str, pcap: Path, *, pps: float | None, **limits: int) -> list[str]:
    cmd = [find_tcpreplay() or "tcpreplay", "-i", iface, "--preload-pcap", "--quiet"]
    if pps is None:
        cmd.append("--topspeed")
    else:
        # Paced by nanosleep in bursts of 1 ms worth of frames: the sender
        # then takes a few % of a core instead of spinning on the clock.
        cmd += [f"--pps={pps:.0f}", f"--pps-multi={max(1, round(pps / 1000))}", "--timer=nano"]
    for option, value in limits.items():
        cmd.append(f"--{option}={value}")
    return cmd + [str(pcap)]


def sent_packets(output: str) -> int:
    """Packets tcpreplay reports as sent ("Actual: N packets ...")."""
    match = re.search(r"Actual: (\d+) packets", output)
    if match is None:
        raise RuntimeError(f"unexpected tcpreplay output: {output.strip()[:300]}")
    return int(match.group(1))


def wait_drained(iface: str, quiet: float = 0.1, timeout: float = 5.0) -> None:
    """Until ``iface`` has received nothing for ``quiet`` seconds: what the
    switch still had queued has come out (or been dropped)."""
    deadline = time.monotonic() + timeout
    last = iface_counter(iface, "rx_packets")
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = iface_counter(iface, "rx_packets")
        if now == last:
            return
        last = now


def topspeed(
    send_iface: str,
    pcap: Path,
    sampler: Sampler,
    seconds: float,
    warmup: float = 0.5,
    cpus: Collection[int] | None = None,
) -> tuple[Window, int]:
    """tcpreplay --topspeed looping over ``pcap`` (on ``cpus``, if given);
    the switch's rate is the egress rx counter's growth over ``seconds`` once
    it has run ``warmup`` (so queues are full and the rate is steady).
    Returns the window and the number of packets tcpreplay sent in all."""
    duration = math.ceil(warmup + seconds + 0.3)
    proc = subprocess.Popen(
        pinned(tcpreplay_command(send_iface, pcap, pps=None, loop=0, duration=duration), cpus),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(warmup)
        start = sampler.snapshot()
        time.sleep(seconds)
        end = sampler.snapshot()
        output, _ = proc.communicate(timeout=duration + 10)
    finally:
        stop_process(proc, timeout=0)  # still running only when something failed
    if proc.returncode != 0:
        raise RuntimeError(f"tcpreplay failed: {output.strip()[:300]}")
    wait_drained(sampler.recv_iface)
    return Sampler.window(start, end), sent_packets(output)


def fixed_rate_loss(
    send_iface: str,
    pcap: Path,
    sampler: Sampler,
    pps: float,
    seconds: float,
    drain: float = 0.3,
    cpus: Collection[int] | None = None,
) -> tuple[float, int, int]:
    """Send ``pps * seconds`` packets at ``pps`` (from ``cpus``, if given);
    returns (loss fraction, sent, received), counting what came out until
    ``drain`` after the last one."""
    count = max(1, round(pps * seconds))
    before = iface_counter(sampler.recv_iface, "rx_packets")
    result = subprocess.run(
        pinned(tcpreplay_command(send_iface, pcap, pps=pps, loop=0, limit=count), cpus),
        check=False,
        capture_output=True,
        text=True,
        timeout=seconds * 3 + 10,
    )
    if result.returncode != 0:
        raise RuntimeError(f"tcpreplay failed: {result.stdout.strip()[:300]}")
    time.sleep(drain)
    wait_drained(sampler.recv_iface)
    received = iface_counter(sampler.recv_iface, "rx_packets") - before
    sent = sent_packets(result.stdout)
    return max(0.0, 1 - received / sent), sent, received


def no_loss_rate(
    send_iface: str,
    pcap: Path,
    sampler: Sampler,
    start_pps: float,
    seconds: float,
    tolerance: float,
    steps: int,
    cpus: Collection[int] | None = None,
) -> dict[str, Any]:
    """Highest fixed rate at which at most ``tolerance`` of the packets are
    lost: up from ``start_pps`` by x1.25 until there is loss, then bisect."""
    trials = []

    def ok(pps: float) -> bool:
        loss, sent, received = fixed_rate_loss(send_iface, pcap, sampler, pps, seconds, cpus=cpus)
        trials.append({"pps": round(pps), "sent": sent, "received": received, "loss": loss})
        return loss <= tolerance

    lo, hi = 0.0, start_pps
    while ok(hi) and len(trials) < steps:
        lo, hi = hi, hi * 1.25
    while len(trials) < steps:
        mid = (lo + hi) / 2 if lo else hi / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return {"pps": lo, "loss_tolerance": tolerance, "trial_seconds": seconds, "trials": trials}


SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40


def receiver(iface: str) -> socket.socket:
    """A packet socket on ``iface`` giving kernel receive timestamps and the
    VLAN tag the kernel takes off every received frame (PACKET_AUXDATA)."""
    # Protocol 0 until bound: an ETH_P_ALL socket would queue frames from every
    # interface (other tests' included) until bind() narrows it to ``iface``.
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    sock.bind((iface, ETH_P_ALL))  # (host order: Python converts)
    return sock


def receive_marked(sock: socket.socket, marker: bytes, timeout: float) -> tuple[bytes, int] | None:
    """The next received frame ending in ``marker``, as it was on the wire
    (VLAN tag put back), and its kernel timestamp in ns; None on timeout."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data, ancillary, _, addr = sock.recvmsg(65535, 256)
        except TimeoutError:
            return None
        if addr[2] == PACKET_OUTGOING or not data.endswith(marker):
            continue
        stamp = 0
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                stamp = sec * 1_000_000_000 + nsec
            elif level == SOL_PACKET and kind == PACKET_AUXDATA:
                status = struct.unpack_from("I", value)[0]
                tci, tpid = struct.unpack_from("HH", value, 16)
                if status & TP_STATUS_VLAN_VALID:
                    tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
                    data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
        return data, stamp
    return None


def latency_us(send_iface: str, recv_iface: str, frames: list[bytes], probes: int) -> list[float]:
    """One-way latency of ``probes`` frames sent one at a time (no other
    load), from just before send() to the receiving kernel's timestamp. The
    last 8 bytes of each frame are unique (dataplane_paths.MARKER + sequence):
    they survive encap/decap and identify the frame on the way out."""
    samples = []
    with receiver(recv_iface) as rx, socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        tx.bind((send_iface, 0))
        for i in range(probes):
            frame = frames[i % len(frames)]
            sent_ns = time.time_ns()
            tx.send(frame)
            got = receive_marked(rx, frame[-8:], 0.2)
            if got is not None:
                samples.append((got[1] - sent_ns) / 1000)
            time.sleep(0.005)
    return samples


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
