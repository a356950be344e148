"""tools/without_toolchain.py, which `make check-no-toolchain` runs the unit
tier through: the toolchain's programs and variables are gone, every other
program is still found where it was."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).parents[1] / "tools" / "without_toolchain.py"
TOOLCHAIN = ("p4c", "p4c-bm2-ss", "p4c-tofino", "p4test", "simple_switch_grpc", "simple_switch_CLI")


def program(directory: Path, name: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\necho " + name + "\n")
    path.chmod(0o755)
    return path


def test_the_toolchain_is_hidden_and_nothing_beside_it(tmp_path):
    # A toolchain linked into a directory that other tools share (as
    # /usr/local/bin), another one earlier on PATH, and a program of the
    # same name further on that the first one shadows.
    linked = tmp_path / "usr-local-bin"
    for name in (*TOOLCHAIN, "mytool"):
        program(linked, name)
    program(tmp_path / "opt-p4-bin", "p4c")
    program(tmp_path / "later", "mytool")
    path = os.pathsep.join(
        [str(tmp_path / "opt-p4-bin"), str(linked), os.environ["PATH"], str(tmp_path / "later")]
    )
    names = " ".join((*TOOLCHAIN, "mytool"))
    script = (
        f'for p in {names}; do command -v "$p" || echo "no $p"; done; '
        'readlink -f "$(command -v mytool)"; mytool; '
        'echo "P4C=${P4C-unset} SIMPLE_SWITCH_GRPC=${SIMPLE_SWITCH_GRPC-unset}'
        ' P4C_TOFINO=${P4C_TOFINO-unset}"; '
        'test -e "$P4VTEP_TOOLCHAIN_PREFIX" || echo "no prefix"'
    )
    env = {
        **os.environ,
        "PATH": path,
        "P4C": str(linked / "p4c"),
        "SIMPLE_SWITCH_GRPC": str(linked / "simple_switch_grpc"),
        "P4C_TOFINO": str(linked / "p4c-tofino"),
    }
    run = subprocess.run(
        [sys.executable, str(TOOL), "sh", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[: len(TOOLCHAIN)] == [f"no {name}" for name in TOOLCHAIN]
    found = Path(lines[len(TOOLCHAIN)])  # (a link in the run's own PATH directory)
    assert found.name == "mytool"
    assert lines[len(TOOLCHAIN) + 1 :] == [
        str(linked / "mytool"),
        "mytool",
        "P4C=unset SIMPLE_SWITCH_GRPC=unset P4C_TOFINO=unset",
        "no prefix",
    ]
    # The report names every program it hid: the test's own and whatever
    # else of the toolchain this machine's PATH holds (p4c-barefoot, ...).
    report = re.fullmatch(r"without the P4 toolchain: hidden (.*); (.*) unset\n", run.stderr)
    assert report, run.stderr
    assert set(TOOLCHAIN) <= set(report[1].split(", "))
    assert "mytool" not in report[1].split(", ")
    assert report[2].split(", ") == [
        "P4C",
        "P4C_TOFINO",
        "SIMPLE_SWITCH_GRPC",
        "P4VTEP_TOOLCHAIN_ARCHIVE",
        "P4VTEP_TOOLCHAIN_SHA256",
    ]
    assert not found.parent.exists()  # (the links go with the run)


def test_its_status_is_the_commands():
    run = subprocess.run(
        [sys.executable, str(TOOL), sys.executable, "-c", "raise SystemExit(3)"],
        env={**os.environ, "PATH": ""},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 3
