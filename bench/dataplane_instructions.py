#!/usr/bin/env python3
"""Benchmark: BMv2's instructions per packet on each data-plane path, counted
by valgrind's callgrind, against earlier builds (issues 37 and 38's cost
targets).

Why beside the pps figures of bench/dataplane.py: on this 2-core machine a
topspeed window's rate moves by 10-30 % from round to round (the sender,
BMv2's threads and everything else share the cores), so a 5 % target cannot
be read from a few rounds of it. ``simple_switch_grpc`` is an interpreter
whose per-packet cost is the instructions it executes (the program's work
and the PHV it resets: bench/NOTES.md, section 4), and an instruction count
does not move with the machine's load: two runs of one path agree within
0.1 %. So the ratio of instructions per packet says what the pps ratio would
be on a quiet core, with no noise to average away. It does not see what an
instruction count cannot (cache misses, branch mispredictions): those are
what bench/dataplane.py's pps rounds carry.

How: one ``simple_switch_grpc`` runs under ``valgrind --tool=callgrind``
(every thread), with the same veths, programs, entries and frames as
bench/dataplane.py (dataplane_paths). Per path: the program is loaded, 64
frames warm it up, the counters are zeroed (``callgrind_control --zero``),
``--frames`` frames are sent at ``--pps`` (slow enough that the switch,
about 50 times slower under valgrind, never drops one: each run checks every
frame came out), and the counters are dumped (``callgrind_control --dump``);
instructions / frames out is the figure, the fewest of ``--repeat`` such
windows (the switch now and then does a few million instructions of other
work, which only adds). Before each window the switch must be idle. An idle
window of the same length is counted once per run for the record.

Result: bench/results/dataplane_instructions.json: per path, instructions
per frame; ratios today / each ``--before`` build of the same path, routed /
bridged of the same kind, guarded / unguarded.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO, require_switch, write_result
from dataplane import Bench, bmv2_build
from dataplane_load import find_tcpreplay, iface_counter, tcpreplay_command, wait_drained
from dataplane_paths import (
    MAX_BEFORE,
    PATHS,
    ROUTED_VS_BRIDGED,
    STANDS_FOR,
    UNGUARDED,
    UNGUARDED_PROGRAM,
    before_prefix,
    before_program,
    committed_build,
    compile_v1model,
    paths_of,
    pipeline_at,
    resolve_commit,
    switch_on,
    write_pcap,
)
from p4vtep.dataplane.artifacts import Pipeline, bmv2_pipeline
from p4vtep.runtime.client import SwitchConnection
from p4vtep.switch.bmv2 import VethSet, find_simple_switch_grpc

WARMUP_FRAMES = 64
WITHOUT_PORT_SECURITY = "without port security"  # the label of that build's ratios


def valgrind_wrapper(directory: Path, switch: str) -> Path:
    """A script that starts ``switch`` under callgrind, its dumps in
    ``directory`` (Bmv2Switch runs ``binary`` with the switch's arguments)."""
    script = directory / "simple_switch_grpc_callgrind"
    script.write_text(
        "#!/bin/sh\n"
        f"exec valgrind --tool=callgrind --callgrind-out-file={directory}/callgrind.%p "
        f'--dump-instr=no --compress-strings=no "{switch}" "$@"\n'
    )
    script.chmod(0o755)
    return script


class Counter:
    """The callgrind counters of one process: zeroed, then dumped and read."""

    def __init__(self, pid: int, directory: Path) -> None:
        self.pid = pid
        self.directory = directory

    def _control(self, option: str) -> None:
        subprocess.run(
            ["callgrind_control", option, str(self.pid)], check=True, capture_output=True
        )

    def zero(self) -> None:
        self._control("--zero")

    def read(self) -> int:
        """Instructions since the last zero (or dump); the dump is removed."""
        before = set(glob.glob(f"{self.directory}/callgrind.{self.pid}.*"))
        self._control("--dump")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            new = set(glob.glob(f"{self.directory}/callgrind.{self.pid}.*")) - before
            if new:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("callgrind wrote no dump")
        (dump,) = new
        time.sleep(0.2)  # (written whole before callgrind_control returns; be safe)
        text = Path(dump).read_text()
        os.remove(dump)
        match = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if match is None:
            raise RuntimeError(f"{dump}: no instruction total")
        return int(match.group(1))


QUIET_PER_S = 200_000  # instructions/s of an idle switch under callgrind: well under one frame's


def settle(counter: Counter, timeout: float = 60.0) -> None:
    """Until the switch is idle: a program load leaves work behind for a few
    seconds (it made the first path after each load count about 8 % more)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counter.zero()
        time.sleep(1.0)
        if counter.read() < QUIET_PER_S:
            return
    raise RuntimeError("the switch did not go idle after the program load")


def count_window(
    counter: Counter, send: str, recv: str, pcap: Path, frames: int, pps: float
) -> tuple[int, int]:
    """(frames out, instructions) of one window of ``frames`` frames."""
    settle(counter)
    counter.zero()
    before = iface_counter(recv, "rx_packets")
    sent = tcpreplay_command(send, pcap, pps=pps, limit=frames, loop=0)
    subprocess.run(sent, check=True, capture_output=True)
    time.sleep(0.5)
    wait_drained(recv, 0.5)
    return iface_counter(recv, "rx_packets") - before, counter.read()


def count_path(
    bench: Bench, counter: Counter, path: str, pcap: Path, frames: int, pps: float, repeat: int
) -> dict[str, Any]:
    """The fewest instructions of ``repeat`` windows: what else the switch
    does now and then (a few million instructions at times) only adds."""
    bench.load(PATHS[path].program)
    send, recv = bench.ends(path)
    warmup = tcpreplay_command(send, pcap, pps=pps, limit=WARMUP_FRAMES)
    subprocess.run(warmup, check=True, capture_output=True)
    wait_drained(recv, 0.5)
    windows: list[int] = []
    lossy = 0  # (a window that lost frames, on a machine busy enough to slow the switch)
    while len(windows) < repeat:
        out, instructions = count_window(counter, send, recv, pcap, frames, pps)
        if out == frames:
            windows.append(instructions)
            continue
        lossy += 1
        if lossy > 3:
            raise RuntimeError(f"{path}: {out} of {frames} frames came out: lower --pps")
    return {
        "frames": frames,
        "instructions": min(windows),
        "per_frame": min(windows) / frames,
        "windows_per_frame": [w / frames for w in windows],
        "windows_with_loss": lossy,
    }


def ratios_of(counts: dict[str, dict[str, Any]], revisions: list[str]) -> dict[str, Any]:
    """today / before (per --before revision), routed / bridged, guarded /
    unguarded, for every pair whose two paths were counted."""

    def per(path: str) -> float | None:
        return counts[path]["per_frame"] if path in counts else None

    out: dict[str, Any] = {"vs_befores": {}, "routed_vs_bridged": {}, "guarded_vs_unguarded": {}}
    # today's paths, guarded and unguarded (an earlier build's are not a side)
    today = [p for p in counts if p in UNGUARDED or p not in STANDS_FOR]
    for n, revision in enumerate(revisions):
        table = {}
        for path in today:
            before = per(before_prefix(n) + STANDS_FOR.get(path, path))
            if before is not None:
                table[path] = before / counts[path]["per_frame"]
        out["vs_befores"][revision] = table
    for routed, bridged in ROUTED_VS_BRIDGED.items():
        a, b = per(routed), per(bridged)
        if a is not None and b is not None:
            out["routed_vs_bridged"][routed] = b / a
    for unguarded, guarded in UNGUARDED.items():
        a, b = per(guarded), per(unguarded)
        if a is not None and b is not None:
            out["guarded_vs_unguarded"][guarded] = b / a
    return out


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", action="append", default=[], metavar="REV")
    parser.add_argument(
        "--without-port-security",
        action="store_true",
        help="also today's program with port security's lookups and checks compiled out "
        "(-DP4VTEP_WITHOUT_PORT_SECURITY; its metadata and the parser's claims stay), as one "
        "more earlier build: what the checks alone cost",
    )
    parser.add_argument("--frames", type=int, default=200, help="frames counted per path")
    parser.add_argument(
        "--repeat", type=int, default=2, help="windows per path (the fewest instructions count)"
    )
    parser.add_argument("--pps", type=float, default=40.0, help="rate they are sent at")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--result", default="dataplane_instructions")
    parser.add_argument(
        "--paths", default=None, help="comma-separated path names (default: every path loaded)"
    )
    args = parser.parse_args(argv)
    if len(args.before) + args.without_port_security > MAX_BEFORE:
        parser.error(f"--before: at most {MAX_BEFORE} earlier builds")
    args.before_commits = []
    for rev in args.before:
        try:
            commit = resolve_commit(rev)
        except subprocess.CalledProcessError:
            parser.error(f"--before {rev}: not a commit of this repository")
        if not committed_build(commit):
            parser.error(f"--before {rev}: that commit has no committed BMv2 build")
        args.before_commits.append(commit)
    return args


def main() -> None:
    args = options()
    require_switch()
    missing = [t for t in ("valgrind", "callgrind_control") if shutil.which(t) is None]
    if missing or find_tcpreplay() is None:
        print(f"SKIP: {', '.join(missing or ['tcpreplay'])} not found (make deps-system)")
        return
    switch_binary = find_simple_switch_grpc()
    assert switch_binary is not None
    with tempfile.TemporaryDirectory() as tmp, VethSet(f"pi{os.getpid() % 1000}", 3) as veths:
        directory = Path(tmp)
        programs: dict[str, Pipeline] = {
            "p4vtep": bmv2_pipeline(),
            UNGUARDED_PROGRAM: bmv2_pipeline(),
        }
        for n, commit in enumerate(args.before_commits):
            (directory / f"before{n}").mkdir()
            programs[before_program(n)] = pipeline_at(commit, directory / f"before{n}")
        labels = list(args.before)
        if args.without_port_security:
            (directory / "unsecured").mkdir()
            programs[before_program(len(labels))] = compile_v1model(
                REPO / "p4src" / "v1model" / "p4vtep.p4",
                directory / "unsecured",
                ("P4VTEP_WITHOUT_PORT_SECURITY",),
            )
            labels.append(WITHOUT_PORT_SECURITY)
        paths = paths_of(programs)
        if args.paths:
            wanted = args.paths.split(",")
            unknown = [p for p in wanted if p not in paths]
            if unknown:
                raise SystemExit(f"--paths: not measured here: {', '.join(unknown)}")
            paths = wanted
        # grouped by program: a load under valgrind takes about a minute
        paths.sort(key=lambda p: list(programs).index(PATHS[p].program))
        pcaps = {p: write_pcap(directory, p, args.size, 64) for p in paths}
        switch = switch_on(veths, "cg", directory)
        switch.binary = str(valgrind_wrapper(directory, shutil.which(switch_binary) or ""))
        switch.start(timeout=180)
        assert switch.process is not None
        conn = SwitchConnection(switch.grpc_address, 1, election_id=1)
        counts: dict[str, dict[str, Any]] = {}
        try:
            if not conn.connect(timeout=120):
                raise RuntimeError("no P4Runtime connection to the benchmark switch")
            host = {port: h for port, (_, h) in enumerate(veths.pairs, start=1)}
            bench = Bench(switch, conn, host, port_security=True)
            bench.programs = programs
            counter = Counter(switch.process.pid, directory)
            for path in paths:
                counts[path] = count_path(
                    bench, counter, path, pcaps[path], args.frames, args.pps, args.repeat
                )
                print(
                    f"{path:28s} {counts[path]['per_frame']:12,.0f} instructions/frame", flush=True
                )
            counter.zero()
            time.sleep(args.frames / args.pps)
            idle = counter.read()
        finally:
            conn.close()
            switch.stop()
    ratios = ratios_of(counts, labels)
    for revision, table in ratios["vs_befores"].items():
        print(f"/ {revision}: " + ", ".join(f"{p} {r:.3f}" for p, r in table.items()))
    print(
        "routed / bridged: "
        + ", ".join(f"{p} {r:.3f}" for p, r in ratios["routed_vs_bridged"].items())
    )
    write_result(
        args.result,
        {
            "p4vtep_build": subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip(),
            "bmv2": bmv2_build(),
            "method": {
                "counter": "valgrind --tool=callgrind, every thread of simple_switch_grpc",
                "switch": "started as p4vtep.switch.bmv2.Bmv2Switch does (no log asked for: "
                "--log-level off), under callgrind; each program loaded once, its paths in a "
                "row, the switch idle before each count (settle)",
                "frames": args.frames,
                "windows_per_path": args.repeat,
                "pps": args.pps,
                "size": args.size,
                "idle_instructions_per_frame_window": idle / args.frames,
                "ratio_meaning": "instructions of the other side / this side: the pps ratio "
                "this side / the other side would have on a quiet core",
            },
            "befores": [
                {"revision": r, "commit": c, "prefix": before_prefix(n)}
                for n, (r, c) in enumerate(zip(args.before, args.before_commits, strict=True))
            ]
            + (
                [
                    {
                        "revision": WITHOUT_PORT_SECURITY,
                        "commit": None,
                        "prefix": before_prefix(len(args.before)),
                        "what": "today's source compiled with -DP4VTEP_WITHOUT_PORT_SECURITY",
                    }
                ]
                if args.without_port_security
                else []
            ),
            "paths": counts,
            "ratios": ratios,
        },
    )


if __name__ == "__main__":
    main()
