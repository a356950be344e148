"""Shared pieces of the benchmarks: A/B alternation, statistics, the machine
record, result files, and a throw-away pair of BMv2 switches."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import contextmanager
from pathlib import Path

from p4vtep.switch.bmv2 import Bmv2Switch, find_simple_switch_grpc, free_port

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"


def summary(values: list[float]) -> dict:
    """Median and spread (min, max, and the interquartile range when n >= 4)."""
    values = sorted(values)
    out = {
        "n": len(values),
        "median": statistics.median(values),
        "min": values[0],
        "max": values[-1],
    }
    if len(values) >= 4:
        q = statistics.quantiles(values, n=4)
        out["q1"], out["q3"] = q[0], q[2]
    return out


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def alternate(a: Callable[[], float], b: Callable[[], float], rounds: int) -> tuple[list, list]:
    """Run A B A B ... so drift in the machine hits both sides alike."""
    results_a, results_b = [], []
    for _ in range(rounds):
        results_a.append(a())
        results_b.append(b())
    return results_a, results_b


def ratios(a: list[float], b: list[float]) -> dict:
    """Per-round ratio a/b, summarised."""
    return summary([x / y for x, y in zip(a, b, strict=True) if y])


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    switch = find_simple_switch_grpc()
    version = ""
    if switch:
        version = subprocess.run(
            [switch, "--version"], capture_output=True, text=True
        ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "bmv2": version,
        "bmv2_build": "autotools, -O2, logging macros on, event logger off",
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_result(name: str, data: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2))
    print(f"wrote {path.relative_to(REPO)}")
    return path


def pin(pid: int, cpus: Collection[int]) -> None:
    """Every thread of process ``pid`` onto ``cpus`` (threads it starts
    later inherit it): the controller on a core of its own and the
    switches on another, as deployed, on a machine that hosts both."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # (a thread that ended meanwhile)
            os.sched_setaffinity(int(task), set(cpus))


def pinned(command: Sequence[str], cpus: Collection[int] | None) -> list[str]:
    """``command`` started on ``cpus`` (taskset: from its first instruction)."""
    if not cpus:
        return list(command)
    return ["taskset", "-c", ",".join(str(c) for c in sorted(cpus)), *command]


def require_switch() -> None:
    if find_simple_switch_grpc() is None:
        print("SKIP: simple_switch_grpc not found (see docs/toolchain.md)")
        sys.exit(0)


@contextmanager
def switches(count: int, log_dir: Path, ports: dict[int, dict[int, str]] | None = None):
    """``count`` simple_switch_grpc processes on free ports, stopped on exit."""
    started = []
    try:
        for i in range(1, count + 1):
            sw = Bmv2Switch(
                f"bench{i}", i, free_port(), free_port(), (ports or {}).get(i, {}), log_dir=log_dir
            )
            sw.start()
            started.append(sw)
        yield started
    finally:
        for sw in started:
            sw.stop()


def rss_mib(pid: int | None = None) -> float:
    status = Path(f"/proc/{pid or 'self'}/status").read_text()
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
