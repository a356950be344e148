#!/usr/bin/env python3
"""Benchmark: the CPU path (issue 39) on two BMv2 ToRs with the controller.

A routed tenant (192.168.1.0/24 on tor1's servers, 192.168.2.0/24 with the
target VM on tor2, IPv4 only so no router advertisements run), 64 source
VMs on server s11 (one VF each), one flooding VM beside them and a mover.
Three measurements, each figure beside its issue-39 target in the report:

1. ICMP error latency: TTL-1 probes routed towards the target, one at a
   time, round robin over the 64 sources (the responder limits errors per
   source: 10/s, burst 20), from just before send() to the kernel's receive
   timestamp (SO_TIMESTAMPNS) of the time exceeded on the same host
   interface. Split with a wrapper around each supervisor's packet-in
   handler and send_packet_out (the controller is not edited): the way in
   (wire, BMv2, the punt, the P4Runtime stream, the supervisor's queue),
   the controller (hand-off to the responder until send_packet_out
   queued the answer), the way out (stream, BMv2, wire).
2. Answers/s at the CoPP limit: tcpreplay offers TTL-1 frames at 1x, 2x
   and 10x the class's CoPP rate, round robin over the 64 sources (at 10x
   each source's share of what CoPP lets through is ~1.6/s, under the
   responder's 10/s, so the responder's own limit is not what is measured);
   answers counted by the host interface's kernel rx_packets over a steady
   window, the data plane's punt / CoPP-drop counters and the responder's
   outcomes over the whole run.
3. Migration ack latency of another VM (controller.migrate() then every ToR
   acknowledged, as bench/vm_move.py times it), back and forth between a
   server of each ToR: quiet, with one VM flooding TTL-1 frames at 10x the
   CoPP rate (the issue's case: the responder answers it 10/s), the same
   flood with its packet-ins dropped at the supervisor's hand-off (what the
   responder's own work adds), and the flood spread over the 64 sources
   (every punt CoPP lets through answered), and the same frames with TTL 64
   routed to the target (no punt: what the switches' work alone costs);
   arms rotated round by round in one run.

``--bench-cpus`` and ``--switch-cpus`` (``make bench-cpu-path``: 0 and 1)
put this process (the controller and its responder, the probes) on a core
of its own and both switches and tcpreplay on the other, as on a ToR where
the ASIC forwards and the controller has a CPU of its own. Unpinned (no
flags), the floods' frames are BMv2's work on the cores the controller runs
on, and the flood arms measure that contention as much as the CPU path.
Beside each arm's ack latency: each core's busy fraction over its
migrations, and each ToR's P4Runtime write time (a wrapper around the
supervisors' ``_write``, passes with nothing to write left out), which say
whether a slower ack waited on the switches or on the controller.

Result: bench/results/cpu_path.json.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common import (
    REPO,
    percentile,
    pin,
    pinned,
    ratios,
    require_switch,
    summary,
    write_result,
)
from dataplane_load import (
    MachineShare,
    find_tcpreplay,
    iface_counter,
    receive_marked,
    receiver,
    sent_packets,
    tcpreplay_command,
    wait_drained,
)

sys.path.insert(0, str(REPO / "tests"))

from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, punt_counts
from p4vtep.dataplane.packet_io import PuntClass
from p4vtep.model.fabric import Fabric, Subnet, Vm, Vni, Vrf
from p4vtep.processes import stop_process
from p4vtep.runtime.client import SwitchConnection
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
from scapy.utils import wrpcap
from switch_fabric import SwitchFabric, bmv2_fabric, start_controller

ANYCAST = "00:00:5e:00:01:01"
TARGET = Vm("db", "02:0c:00:00:01:01", ("192.168.2.10",), 5001, "s21", 11)
FLOODER = Vm("flooder", "02:0c:00:00:00:01", ("192.168.1.10",), 5000, "s11", 10)
MOVER = Vm("mover", "02:0c:00:00:00:02", ("192.168.1.11",), 5000, "s12", 12)
SOURCES = [
    Vm(f"src{i}", f"02:0c:00:00:10:{i:02x}", (f"192.168.1.{100 + i}",), 5000, "s11", 100 + i)
    for i in range(64)
]
# (server, VF VLAN) the mover alternates between: tor1 and tor2.
PLACES = (("s22", 13), ("s12", 12))
# The migration arms: quiet; one VM flooding (the case); the same
# flood with its packet-ins dropped at the hand-off (diagnosis: what the
# responder's own work adds); the flood spread over the 64 sources; the
# same frames with TTL 64, routed to the target and never punted
# (diagnosis: what the switches' work on 10x the CoPP rate costs alone).
ARMS = ["quiet", "flood_one_vm", "flood_one_vm_unanswered", "flood_64", "routed_one_vm"]
MARK = b"CPUP"  # + a 4-byte sequence: the last 8 bytes of a probe, quoted whole


def route(fabric: Fabric) -> None:
    """Tenant red: two IPv4 subnets in one VRF."""
    fabric.anycast_gateway_mac = ANYCAST
    fabric.vrfs["red"] = Vrf("red", 50000)
    for vni, prefix in ((5000, "192.168.1"), (5001, "192.168.2")):
        fabric.vnis[vni] = Vni(
            vni, f"red-{vni}", vrf="red", subnets=(Subnet(f"{prefix}.0/24", f"{prefix}.254"),)
        )


def ttl1(vm: Vm, seq: int, ttl: int = 1) -> bytes:
    """A TTL-1 UDP frame from ``vm``'s VF towards the target: tor1 punts it.
    Its last 8 bytes are unique, and the time exceeded quotes the whole frame.
    (A larger ``ttl``: the same frame routed to the target, never punted.)"""
    return bytes(
        Ether(src=vm.mac, dst=ANYCAST)
        / Dot1Q(vlan=vm.vlan)
        / IP(src=vm.ips[0], dst=TARGET.ips[0], ttl=ttl, id=seq & 0xFFFF)
        / UDP(sport=33000 + seq % 20000, dport=33434)
        / Raw(b"p4vtep-cpu" + MARK + struct.pack("!I", seq))
    )


class HandlingClock:
    """Wraps every supervisor's packet-in handler and send_packet_out: per
    punted frame (by its last 8 bytes), when the supervisor handed it over,
    when the answer was queued on the stream, and when the handler returned
    (time.time_ns, the clock the kernel stamps received frames with)."""

    def __init__(self, controller: Controller) -> None:
        self.records: dict[bytes, tuple[int, int | None, int]] = {}
        self.busy_ns = 0  # time spent in handlers
        self.handled = 0
        # Diagnosis: drop packet-ins at the hand-off (the stream and the
        # supervisor's thread still run; the responder does not).
        self.skip = False
        self._local = threading.local()
        self._lock = threading.Lock()
        for sup in controller.supervisors.values():
            handler = sup.packet_in_handler
            assert handler is not None
            sup.packet_in_handler = self._handler(handler)
            # (an instance attribute shadows the method the controller calls)
            setattr(sup, "send_packet_out", self._sender(sup.send_packet_out))  # noqa: B010

    def _handler(self, inner: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
        def handle(tor: str, packet: Any) -> None:
            handed = time.time_ns()
            self._local.sent = None
            try:
                if not self.skip:
                    inner(tor, packet)
            finally:
                done = time.time_ns()
                with self._lock:
                    self.records[bytes(packet.payload[-8:])] = (handed, self._local.sent, done)
                    self.busy_ns += done - handed
                    self.handled += 1

        return handle

    def _sender(self, inner: Callable[[bytes, dict[int, bytes]], bool]) -> Callable[..., bool]:
        def send(payload: bytes, metadata: dict[int, bytes]) -> bool:
            ok = inner(payload, metadata)
            self._local.sent = time.time_ns()
            return ok

        return send

    def take(self) -> tuple[int, int]:
        """(handled, busy ns) since the last take."""
        with self._lock:
            out = (self.handled, self.busy_ns)
            self.handled, self.busy_ns = 0, 0
            self.records.clear()
            return out


class WriteClock:
    """Wraps every supervisor's _write: how long each pass's P4Runtime
    write took (encoding, the round trip, the switch applying it), per ToR.
    Beside the ack latency it says whether a slower migration waited on the
    switches or on the controller's own threads."""

    def __init__(self, controller: Controller) -> None:
        self._lock = threading.Lock()
        self.times: dict[str, list[float]] = {tor: [] for tor in controller.supervisors}
        for tor, sup in controller.supervisors.items():
            setattr(sup, "_write", self._timed(tor, sup._write))  # noqa: B010

    def _timed(self, tor: str, inner: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        def write(conn: Any, delta: Any) -> None:
            if not delta:  # (a pass with nothing for this ToR)
                inner(conn, delta)
                return
            t0 = time.perf_counter()
            try:
                inner(conn, delta)
            finally:
                with self._lock:
                    self.times[tor].append(time.perf_counter() - t0)

        return write

    def take(self) -> dict[str, list[float]]:
        """Each ToR's write times (s) since the last take."""
        with self._lock:
            out = {tor: list(v) for tor, v in self.times.items()}
            for v in self.times.values():
                v.clear()
            return out


def read_punts(sf: SwitchFabric, entries: PipelineEntries, tor: str) -> tuple[int, int]:
    """(punted, CoPP-dropped) packets of the TTL-expired class on ``tor``."""
    t = sf.fabric.tors[tor]
    with SwitchConnection(t.address, t.device_id, election_id=0) as conn:
        read = conn.read(*entries.punt_counters())
    counts = punt_counts(entries.p4info, read).get(int(PuntClass.TTL_EXPIRED))
    return (counts.punted_packets, counts.copp_dropped_packets) if counts else (0, 0)


def outcomes(controller: Controller) -> Counter[str]:
    """The responder's TTL-expired punts on tor1 by outcome."""
    out: Counter[str] = Counter()
    for (tor, cls, outcome, _), n in controller.responder.punt_counts().items():
        if tor == "tor1" and cls == "ttl_expired":
            out[outcome] += n
    return out


def stats_ms(values_ns: Sequence[float]) -> dict[str, float]:
    ms = [v / 1e6 for v in values_ns]
    return {**summary(ms), "p50": percentile(ms, 50), "p99": percentile(ms, 99)}


def measure_latency(sf: SwitchFabric, clock: HandlingClock, probes: int) -> dict[str, Any]:
    iface = sf.host_ifaces["s11"]
    total, way_in, handling, way_out = [], [], [], []
    lost = 0
    with receiver(iface) as rx, socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        tx.bind((iface, 0))
        for seq in range(-20, probes):  # (the first 20: warm-up, not kept)
            frame = ttl1(SOURCES[seq % len(SOURCES)], seq & 0xFFFFFFFF)
            sent = time.time_ns()
            tx.send(frame)
            got = receive_marked(rx, frame[-8:], 1.0)
            time.sleep(0.02)  # ~40 probes/s: under CoPP, each source < 1/s
            if seq < 0:
                continue
            if got is None:
                lost += 1
                continue
            arrived = got[1]
            total.append(arrived - sent)
            record = clock.records.get(frame[-8:])
            if record is not None:
                handed, queued, _ = record
                if queued is None:
                    continue
                way_in.append(handed - sent)
                handling.append(queued - handed)
                way_out.append(arrived - queued)
    return {
        "probes": probes,
        "lost": lost,
        "total_ms": stats_ms(total),
        "split_n": len(handling),
        "way_in_ms": stats_ms(way_in),
        "controller_ms": stats_ms(handling),
        "way_out_ms": stats_ms(way_out),
    }


def core_busy() -> list[float]:
    """Busy seconds of each core since boot (/proc/stat: all but idle and iowait)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = []
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = [int(f) for f in fields]
            out.append((sum(values[:8]) - values[3] - values[4]) / ticks)
    return out


class Flood:
    """tcpreplay replaying ``pcap`` at ``pps`` until stopped (on ``cpus``)."""

    def __init__(
        self,
        iface: str,
        pcap: Path,
        pps: float,
        seconds: int = 3600,
        cpus: Sequence[int] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            pinned(tcpreplay_command(iface, pcap, pps=pps, loop=0, duration=seconds), cpus),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.started = time.monotonic()

    def stop(self) -> tuple[int, float]:
        """(frames sent, seconds it ran)."""
        self.proc.send_signal(2)  # SIGINT: tcpreplay prints its totals and exits
        try:
            output, _ = self.proc.communicate(timeout=10)
        finally:
            stop_process(self.proc, timeout=0)
        return sent_packets(output or ""), time.monotonic() - self.started


def measure_answers(
    sf: SwitchFabric,
    controller: Controller,
    entries: PipelineEntries,
    pcap: Path,
    pps: float,
    seconds: float,
    warmup: float,
    cpus: Sequence[int] | None,
) -> dict[str, Any]:
    iface = sf.host_ifaces["s11"]
    dp0, out0 = read_punts(sf, entries, "tor1"), outcomes(controller)
    flood = Flood(iface, pcap, pps, cpus=cpus)
    time.sleep(warmup)  # CoPP's burst spent, the rate steady
    rx0, t0 = iface_counter(iface, "rx_packets"), time.monotonic()
    time.sleep(seconds)
    rx1, t1 = iface_counter(iface, "rx_packets"), time.monotonic()
    sent, ran = flood.stop()
    wait_drained(iface, quiet=0.3)
    dp1, out1 = read_punts(sf, entries, "tor1"), outcomes(controller)
    answered = out1["answered"] - out0["answered"]
    return {
        "offered_pps": pps,
        "sent": sent,
        "ran_s": ran,
        "window_s": t1 - t0,
        "answers_per_s": (rx1 - rx0) / (t1 - t0),
        "punted": dp1[0] - dp0[0],
        "copp_dropped": dp1[1] - dp0[1],
        "punted_per_s": (dp1[0] - dp0[0]) / ran,
        "responder": {k: out1[k] - out0[k] for k in out1 if out1[k] != out0[k]},
        "answered_per_s_whole_run": answered / ran,
    }


def pipeline_record(bmv2_json: Path) -> dict[str, Any]:
    """Which BMv2 build ran: its hash, and whether it is the one committed at
    HEAD (P4VTEP_BMV2_JSON may point at another, e.g. HEAD's while the
    working tree's build is being changed)."""
    built = bmv2_json.read_bytes()
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    committed = subprocess.run(
        ["git", "-C", str(REPO), "show", "HEAD:p4src/v1model/build/p4vtep.json"],
        capture_output=True,
    ).stdout
    return {
        "bmv2_json": str(bmv2_json),
        "bmv2_json_sha256": hashlib.sha256(built).hexdigest(),
        "head": head,
        "same_as_head": built == committed,
    }


def migrations(controller: Controller, count: int, start: int) -> list[float]:
    acked = []
    for i in range(count):
        server, vlan = PLACES[(start + i) % 2]
        t0 = time.perf_counter()
        version = controller.migrate(MOVER.name, server, vlan)
        assert controller.wait_version(version, 60)
        acked.append(time.perf_counter() - t0)
        time.sleep(0.05)
    return acked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=500)
    parser.add_argument("--rate-rounds", type=int, default=3)
    parser.add_argument("--rate-seconds", type=float, default=10.0)
    parser.add_argument("--move-rounds", type=int, default=10)
    parser.add_argument("--moves", type=int, default=20, help="migrations per arm and round")
    parser.add_argument(
        "--bench-cpus", type=int, nargs="+", help="pin this process (the controller) to these CPUs"
    )
    parser.add_argument(
        "--switch-cpus", type=int, nargs="+", help="pin both switches and tcpreplay to these CPUs"
    )
    parser.add_argument("--result", default="cpu_path", help="bench/results/NAME.json")
    args = parser.parse_args()
    require_switch()
    if args.bench_cpus:  # before the controller's threads start (they inherit it)
        pin(os.getpid(), args.bench_cpus)
    if find_tcpreplay() is None:
        print("SKIP: tcpreplay not found (make deps installs it)")
        return
    pipeline = bmv2_pipeline()
    entries = PipelineEntries(pipeline.p4info)
    share = MachineShare()
    share.start()
    with tempfile.TemporaryDirectory() as tmp, bmv2_fabric(Path(tmp) / "logs") as sf:
        route(sf.fabric)
        if args.switch_cpus:
            for sw in sf.switches.values():
                assert sw.process is not None
                pin(sw.process.pid, args.switch_cpus)
        rate = sf.fabric.copp[PuntClass.TTL_EXPIRED]
        many = Path(tmp) / "many.pcap"  # round robin over the 64 sources
        wrpcap(str(many), [Ether(ttl1(SOURCES[i % 64], i)) for i in range(512)])
        one = Path(tmp) / "one.pcap"
        wrpcap(str(one), [Ether(ttl1(FLOODER, i)) for i in range(512)])
        routed = Path(tmp) / "routed.pcap"
        wrpcap(str(routed), [Ether(ttl1(FLOODER, i, ttl=64)) for i in range(512)])
        controller = start_controller(
            sf, Path(tmp) / "state.db", [TARGET, FLOODER, MOVER, *SOURCES], timeout=120
        )
        try:
            clock = HandlingClock(controller)
            writes = WriteClock(controller)
            print("latency ...", flush=True)
            clock.take()
            latency = measure_latency(sf, clock, args.probes)
            print(
                f"  VF to VF p50 {latency['total_ms']['p50']:.2f} ms p99 "
                f"{latency['total_ms']['p99']:.2f} ms; controller p50 "
                f"{latency['controller_ms']['p50']:.3f} ms p99 "
                f"{latency['controller_ms']['p99']:.3f} ms; lost {latency['lost']}",
                flush=True,
            )
            time.sleep(2.5)  # every source's bucket full again
            answers: dict[str, list[dict[str, Any]]] = {"1": [], "2": [], "10": []}
            for r in range(args.rate_rounds):
                for factor in answers:
                    clock.take()
                    row = measure_answers(
                        sf,
                        controller,
                        entries,
                        many,
                        rate.pps * int(factor),
                        args.rate_seconds,
                        2,
                        args.switch_cpus,
                    )
                    handled, busy = clock.take()
                    row["controller_busy_fraction"] = busy / 1e9 / row["ran_s"]
                    row["controller_us_per_punt"] = busy / 1e3 / handled if handled else None
                    answers[factor].append(row)
                    print(
                        f"  round {r} {factor}x: offered {row['sent'] / row['ran_s']:.0f}/s, "
                        f"answers {row['answers_per_s']:.1f}/s, "
                        f"punted {row['punted_per_s']:.1f}/s, "
                        f"CoPP dropped {row['copp_dropped']}, responder {row['responder']}",
                        flush=True,
                    )
                    time.sleep(2.5)
            arms: dict[str, list[list[float]]] = {arm: [] for arm in ARMS}
            # per arm and round: each core's busy fraction over the migrations
            cores: dict[str, list[list[float]]] = {arm: [] for arm in ARMS}
            # per arm and ToR: the migrations' write times (ms), each round's list
            written: dict[str, dict[str, list[list[float]]]] = {arm: {} for arm in ARMS}
            floods: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS if arm != "quiet"}
            for r in range(args.move_rounds):
                for arm in ARMS[r % len(ARMS) :] + ARMS[: r % len(ARMS)]:  # (each first in turn)
                    flood = None
                    if arm != "quiet":
                        dp0, out0 = read_punts(sf, entries, "tor1"), outcomes(controller)
                        pcap = {"flood_64": many, "routed_one_vm": routed}.get(arm, one)
                        clock.skip = arm == "flood_one_vm_unanswered"
                        flood = Flood(
                            sf.host_ifaces["s11"], pcap, 10 * rate.pps, cpus=args.switch_cpus
                        )
                    time.sleep(1.0)  # (flooding: CoPP's burst spent)
                    clock.take()
                    writes.take()
                    cores0, t0 = core_busy(), time.monotonic()
                    acked = migrations(controller, args.moves, r)
                    cores1, t1 = core_busy(), time.monotonic()
                    arms[arm].append(acked)
                    for tor, times in writes.take().items():
                        written[arm].setdefault(tor, []).append([t * 1e3 for t in times])
                    cores[arm].append(
                        [(b - a) / (t1 - t0) for a, b in zip(cores0, cores1, strict=True)]
                    )
                    if flood is not None:
                        sent, ran = flood.stop()
                        handled, busy = clock.take()
                        wait_drained(sf.host_ifaces["s11"], quiet=0.3)
                        clock.skip = False
                        dp1, out1 = read_punts(sf, entries, "tor1"), outcomes(controller)
                        floods[arm].append(
                            {
                                "offered_pps": sent / ran,
                                "punted_per_s": (dp1[0] - dp0[0]) / ran,
                                "copp_dropped": dp1[1] - dp0[1],
                                "responder": {
                                    k: out1[k] - out0[k] for k in out1 if out1[k] != out0[k]
                                },
                                "packet_ins_during_migrations": handled,
                                "handler_ms_per_packet_in": busy / 1e6 / handled
                                if handled
                                else None,
                            }
                        )
                    print(
                        f"  round {r} {arm}: ack p50 {percentile(acked, 50) * 1e3:.1f} ms "
                        f"max {max(acked) * 1e3:.1f} ms; writes p50 "
                        + " ".join(
                            f"{tor} {percentile(t[-1], 50):.2f}"
                            for tor, t in written[arm].items()
                            if t[-1]
                        )
                        + " ms; cores busy "
                        + " ".join(f"{b:.2f}" for b in cores[arm][-1]),
                        flush=True,
                    )
                    time.sleep(1.0)
        finally:
            controller.stop()
    load = share.stop()
    move: dict[str, Any] = {}
    for arm, rounds in arms.items():
        flat = [v * 1e3 for acked in rounds for v in acked]
        move[arm] = {
            **summary(flat),
            "p50": percentile(flat, 50),
            "p99": percentile(flat, 99),
            "samples_ms": [[v * 1e3 for v in acked] for acked in rounds],
            "round_medians_ms": [percentile(acked, 50) * 1e3 for acked in rounds],
            # each core's busy fraction (0-1) over each round's migrations
            "cores_busy": cores[arm],
            # each pass's P4Runtime write during the migrations, per ToR
            "write_ms": {
                tor: {
                    **summary(flat_w := [t for times in per_round for t in times]),
                    "p50": percentile(flat_w, 50),
                    "p99": percentile(flat_w, 99),
                    "round_medians": [percentile(times, 50) for times in per_round if times],
                }
                for tor, per_round in written[arm].items()
                if any(per_round)
            },
        }
    for arm in ARMS[1:]:
        move[arm]["over_quiet"] = {
            "p50": move[arm]["p50"] / move["quiet"]["p50"],
            "p99": move[arm]["p99"] / move["quiet"]["p99"],
            # per round: the round's median against the quiet arm's of that round
            "round_medians": ratios(
                [percentile(a, 50) for a in arms[arm]], [percentile(q, 50) for q in arms["quiet"]]
            ),
            "per_round": [
                percentile(a, 50) / percentile(q, 50)
                for a, q in zip(arms[arm], arms["quiet"], strict=True)
            ],
        }
        move[arm]["floods"] = floods[arm]
    bmv2_json = Path(pipeline.device_config_path)
    result = {
        "copp": {"class": "ttl_expired", "pps": rate.pps, "burst": rate.burst},
        "responder_limit": {"per_source_per_s": 10, "burst": 20},
        "vms": 3 + len(SOURCES),
        "pinning": {"bench_process": args.bench_cpus, "switches_and_tcpreplay": args.switch_cpus},
        "latency": latency,
        "answers": {
            factor: {
                "offered_pps": rate.pps * int(factor),
                "answers_per_s": summary([r["answers_per_s"] for r in rows]),
                "answers_over_copp": summary([r["answers_per_s"] / rate.pps for r in rows]),
                "answers_over_offered": summary(
                    [r["answers_per_s"] / (r["sent"] / r["ran_s"]) for r in rows]
                ),
                "rounds": rows,
            }
            for factor, rows in answers.items()
        },
        "migration_ack_ms": move,
        "pipeline": pipeline_record(bmv2_json),
        "machine_load": load,
        "method": {
            "fabric": "two BMv2 ToRs back to back (tests/switch_fabric.py), one routed "
            "tenant, two IPv4 /24 subnets; 67 VMs (64 sources and a flooder on s11, "
            "a mover, a target on tor2); the controller in this process",
            "pinning": (
                f"this process (the controller, its responder, the probes) on CPU(s) "
                f"{args.bench_cpus}, both switches (every thread) and tcpreplay on "
                f"{args.switch_cpus} (os.sched_setaffinity, taskset)"
                if args.bench_cpus or args.switch_cpus
                else "none: the switches, tcpreplay and the controller share every core, "
                "so the flood arms' frames are BMv2's work on the controller's cores too"
            ),
            "latency": f"{args.probes} TTL-1 probes one at a time (20 ms apart, round robin "
            "over 64 sources), send() to the kernel receive timestamp (SO_TIMESTAMPNS) "
            "of the time exceeded on the same host interface; split by wrapping each "
            "supervisor's packet-in handler and send_packet_out (time.time_ns): way in "
            "= send to hand-off, controller = hand-off to the answer queued on the "
            "P4Runtime stream, way out = queued to received",
            "answers": f"tcpreplay --pps at 1x, 2x, 10x the CoPP rate, round robin over "
            f"the 64 sources, {args.rate_rounds} rounds; answers = the host interface's "
            f"rx_packets over {args.rate_seconds:.0f} s after 2 s of warm-up; punted and "
            "CoPP-dropped from the data plane's counters over the whole run",
            "migration": f"controller.migrate() until every ToR acknowledged (wait_version), "
            f"{args.moves} per arm and round, {args.move_rounds} rounds, arms rotated; "
            "floods: tcpreplay at 10x the CoPP rate from one VM (flood_one_vm) or the "
            "64 sources (flood_64), or from one VM with every packet-in dropped at the "
            "supervisor's hand-off instead of answered (flood_one_vm_unanswered: the "
            "stream and the supervisor's thread still run), started 1 s before the "
            "round's first migration (the quiet arm waits the same 1 s); routed_one_vm: "
            "the one-VM flood's frames with TTL 64, routed to the target, never punted; "
            "per arm and round: each core's busy fraction (/proc/stat) over the "
            "migrations, and each ToR's write times (the supervisors' _write wrapped, "
            "passes with nothing for that ToR left out)",
        },
    }
    for arm in ARMS[1:]:
        print(
            f"migration ack {arm}/quiet: p50 {move[arm]['over_quiet']['p50']:.2f} "
            f"p99 {move[arm]['over_quiet']['p99']:.2f}; per round "
            + " ".join(f"{x:.2f}" for x in move[arm]["over_quiet"]["per_round"])
        )
    write_result(args.result, result)


if __name__ == "__main__":
    main()
