"""What version each tool reports, and whether it is older than the versions the
project's figures and tests were made with (docs/toolchain.md states them)."""

from __future__ import annotations

import re
import subprocess

# The versions p4vtep is tested with. An older tool may lack what the pipeline uses
# (p4c's P4Runtime output, BMv2's priority queues), so `make toolchain` warns.
TESTED = {
    "p4c": "1.2.5.16",
    "simple_switch_grpc": "1.15.5",
    "p4c-tofino": "1.2.5.16",
}
_VERSION = re.compile(r"\d+(?:\.\d+)+")


def reported(binary: str, timeout: float = 30.0) -> str | None:
    """The version `binary --version` prints (p4c: "p4c 1.2.5.16 (SHA: ...)",
    simple_switch_grpc: "1.15.5-693e69e6"), or None when it says none."""
    try:
        run = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(run.stdout + run.stderr)
    return m.group(0) if m else None


def as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def older_than_tested(tool: str, version: str) -> bool:
    tested = TESTED.get(tool)
    return tested is not None and as_tuple(version) < as_tuple(tested)


def describe(tool: str, path: str) -> str:
    """Where a found tool is and the version it reports, with a warning when that
    is older than the version p4vtep is tested with."""
    version = reported(path)
    tested = TESTED.get(tool, "?")
    if version is None:
        return f"{path}, reports no version (tested with {tested})"
    if older_than_tested(tool, version):
        return (
            f"{path}, version {version}, WARNING: older than {tested}, the version "
            f"p4vtep is tested with; compiles or switch tests may fail"
        )
    return f"{path}, version {version} (tested with {tested})"
