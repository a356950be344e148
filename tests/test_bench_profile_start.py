"""How bench/profile_start.py sorts py-spy's samples into concerns: the
lines are py-spy's raw format (frames joined by ';', innermost last, then a
count), as a real run writes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from profile_start import RATE, report, summarise

SUP = (
    "thread (30525): sup-tor2;Thread._bootstrap (threading.py:1002);"
    "SwitchSupervisor._run (p4vtep/supervisor.py:165);"
    "SwitchSupervisor._reconcile_whole (p4vtep/supervisor.py:313)"
)
MAIN = (
    "thread (30444): MainThread;<module> (profile_start.py:14);run_controller (convergence.py:113)"
)


def _summary(tmp_path: Path, lines: list[str], rounds: int) -> dict[str, float]:
    raw = tmp_path / "samples.txt"
    raw.write_text("\n".join(lines) + "\n")
    return summarise(raw, rounds)


def test_each_sample_goes_to_the_first_concern_on_its_stack(tmp_path: Path) -> None:
    seconds = _summary(
        tmp_path,
        [
            # The benchmark's own read-back reads a switch too: it is the benchmark's.
            f"{MAIN};verify (convergence.py:85);SwitchReader.read (p4vtep/reconciler.py:208) 100",
            f"{SUP};SwitchReader.read (p4vtep/reconciler.py:207);"
            "identity (p4vtep/compiler/state.py:38) 50",
            f"{SUP};reconcile_in_parts (p4vtep/reconciler.py:260);"
            "SwitchSupervisor._reconcile_whole.<locals>.parts (p4vtep/supervisor.py:322);"
            "TorCompiler._vm_items (p4vtep/compiler/incremental.py:238) 400",
            f"{SUP};reconcile_in_parts (p4vtep/reconciler.py:260);"
            "PipelinedWrite.add (p4vtep/runtime/client.py:361) 30",
            f"{SUP};reconcile_in_parts (p4vtep/reconciler.py:260);"
            "_additions (p4vtep/reconciler.py:112) 20",
            "thread (30585): sup-tor2 10",  # (holding the GIL in C)
            "thread (30600);Thread.run (threading.py:982);consume (grpc/_channel.py:276) 5",
            "thread (30444) 7",
        ],
        rounds=2,
    )
    per_round = 1 / RATE / 2
    assert seconds == pytest.approx(
        {
            "read-back check (benchmark)": 100 * per_round,
            "read the switch (first pass)": 50 * per_round,
            "compile and encode": 400 * per_round,
            "send write batches": 30 * per_round,
            "assemble updates": 20 * per_round,
            "rest of the supervisors": 10 * per_round,
            "gRPC's Python threads": 5 * per_round,
            "other": 7 * per_round,
        }
    )


def test_report_totals_the_controller_only(tmp_path: Path) -> None:
    text = report(
        {
            "compile and encode": 0.6,
            "load the store (SQLite, JSON)": 0.2,
            "read-back check (benchmark)": 1.0,
        },
        "py-spy> Sampling process\nwall 1.50 s, own CPU 1.10 s, switches' CPU 0.90 s\n",
    )
    assert "controller, in all                      0.800" in text
    assert "compile and encode                      0.600    75%" in text
    assert "read-back check (benchmark)             1.000   (not the controller's)" in text
    assert text.endswith(
        "Rounds (until every entity was written):\n"
        "wall 1.50 s, own CPU 1.10 s, switches' CPU 0.90 s\n"
    )
    assert "py-spy>" not in text
