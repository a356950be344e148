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


def report(tools: dict[str, str]) -> list[str]:
    """One line per tool: its version, and a warning when it is older than tested."""
    lines = []
    for tool, path in sorted(tools.items()):
        version = reported(path)
        tested = TESTED.get(tool, "?")
        if version is None:
            lines.append(f"{tool} ({path}) reports no version; tested with {tested}")
        elif older_than_tested(tool, version):
            lines.append(
                f"WARNING: {tool} {version} ({path}) is older than {tested}, the version "
                f"p4vtep is tested with; compiles or switch tests may fail"
            )
        else:
            lines.append(f"{tool} {version} ({path}); tested with {tested}")
    return lines
