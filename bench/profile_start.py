#!/usr/bin/env python3
"""Where the controller's start goes, sampled without slowing it down: the
convergence benchmark's controller arm (a controller started on a store of
10,000 VMs, both ToRs empty, until every entity is written and read back),
run a few rounds under py-spy sampling only the thread that holds the GIL,
so each sample is a moment of the controller's Python work, whatever thread
did it. The samples are summed per concern (loading the store, compiling,
assembling and sending the writes, ...) and given as seconds per round.

cProfile (``bench/profile_controller.py``) says which functions are called
and how often, but it roughly triples the cost of Python code and so skews
the shares between Python and C (gRPC, SQLite, JSON); sampling does not.
Needs py-spy (requirements-dev.txt) and permission to trace a child
process (root, or ptrace allowed). Writes bench/results/profile_start.txt."""

from __future__ import annotations

import argparse
import gc
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import BENCH, RESULTS

RATE = 500  # samples per second

# Concerns, each recognised by a frame in the sample's stack; the first that
# matches wins, so a concern nested in another is listed before it.
CONCERNS: list[tuple[str, str]] = [
    ("read-back check (benchmark)", "verify (convergence.py"),
    ("benchmark set-up", "prepare (convergence.py"),
    ("benchmark set-up", "reset (convergence.py"),
    ("benchmark set-up", "(workload.py"),
    ("benchmark set-up", "importlib._bootstrap"),
    ("load the store (SQLite, JSON)", "Store.load ("),
    ("index the desired state", "DesiredState.load ("),
    ("rest of Controller()", "Controller.__init__ ("),
    ("read the switch (first pass)", "SwitchReader.read ("),
    ("compile and encode", "_reconcile_whole.<locals>.parts ("),
    ("send write batches", "PipelinedWrite."),
    ("assemble updates", "reconcile_in_parts ("),
    ("rest of the supervisors", "supervisor.py"),
    ("rest of the supervisors", "): sup-"),  # (in C, no Python frame)
    ("gRPC's Python threads", "(grpc/"),
]
BENCHMARK = {"read-back check (benchmark)", "benchmark set-up"}


def summarise(raw: Path, rounds: int) -> dict[str, float]:
    """Seconds per round holding the GIL, per concern, from py-spy's raw
    output (one line per distinct stack: frames joined by ';', a count)."""
    seconds: dict[str, float] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        concern = next((name for name, frame in CONCERNS if frame in stack), "other")
        seconds[concern] = seconds.get(concern, 0.0) + int(count) / RATE / rounds
    return seconds


def report(seconds: dict[str, float], phases: str) -> str:
    order = list(dict.fromkeys(name for name, _ in CONCERNS)) + ["other"]
    ours = [name for name in order if name not in BENCHMARK and name in seconds]
    total = sum(seconds[name] for name in ours)
    lines = [
        "Controller start, 10,000 VMs on 2 empty ToRs: seconds per round holding the GIL",
        f"(py-spy --gil at {RATE} Hz); 'other' is the rest of this process (its main",
        "thread between phases, samples in C code with no Python frame, the collector).",
        "",
        f"{'concern':36s} {'s/round':>8s} {'share':>6s}",
    ]
    for name in ours:
        lines.append(f"{name:36s} {seconds[name]:8.3f} {seconds[name] / total:6.0%}")
    lines.append(f"{'controller, in all':36s} {total:8.3f}")
    for name in sorted(BENCHMARK & set(seconds)):
        lines.append(f"{name:36s} {seconds[name]:8.3f}   (not the controller's)")
    rounds = "".join(line + "\n" for line in phases.splitlines() if line.startswith("wall"))
    return "\n".join(lines) + "\n\nRounds (until every entity was written):\n" + rounds


def run_rounds(rounds: int) -> None:
    """The child: the convergence benchmark's controller arm, ``rounds`` times."""
    import convergence
    import workload
    from common import switches

    with tempfile.TemporaryDirectory() as tmp, switches(2, Path(tmp) / "logs") as sws:
        pids = [sw.process.pid for sw in sws if sw.process is not None]
        fabric = workload.fabric([sw.grpc_address for sw in sws], convergence.VNIS)
        vms = workload.vms(10000, len(fabric.tors), convergence.VNIS)
        store_path = Path(tmp) / "state.db"
        compiled, _ = convergence.prepare(fabric, vms, store_path)
        gc.collect()
        gc.freeze()  # (as the benchmark does: its own data out of the collector's way)
        for _ in range(rounds):
            convergence.run_controller(fabric, store_path, compiled, pids)
            p = convergence.PHASES["controller"][-1]
            print(
                f"wall {p['wall_s']:.2f} s, own CPU {p['bench_process_cpu_s']:.2f} s, "
                f"switches' CPU {p['switches_cpu_s']:.2f} s",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_rounds(args.rounds)
        return
    from common import require_switch

    require_switch()
    venv_bin = Path(sys.executable).parent
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(venv_bin))
    if spy is None:
        sys.exit("py-spy not found: `make deps` installs it (requirements-dev.txt)")
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "samples.txt"
        child = [sys.executable, str(BENCH / "profile_start.py"), "--child"]
        done = subprocess.run(
            [spy, "record", "--gil", "--nonblocking", "-r", str(RATE), "-f", "raw"]
            + ["-o", str(raw), "--", *child, "--rounds", str(args.rounds)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not raw.exists():
            sys.exit(f"py-spy failed ({done.returncode}):\n{done.stderr[-2000:]}")
        text = report(summarise(raw, args.rounds), done.stdout)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "profile_start.txt").write_text(text)


if __name__ == "__main__":
    main()
