"""Run a command as on a machine without the P4 toolchain (issue 41).

    python3 tools/without_toolchain.py COMMAND [ARG...]

The unit tier needs neither p4c nor BMv2 (CONTRIBUTING.md), and
`make check-no-toolchain` holds it to that by running it through this.
PATH becomes one temporary directory of symlinks to every program on PATH
but the toolchain's (``is_toolchain``): hidden by program, not by directory,
since the directory a toolchain is linked into (/usr/local/bin) holds other
tools the tests use. The variables that name the tools are unset, and the
project's toolchain prefix points at a directory that does not exist, so
`make toolchain`'s lookups find nothing either. Exits with the command's
status, or 2 when a toolchain program is still found.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

# Variables that name a toolchain program or where one is (docs/toolchain.md).
TOOL_VARIABLES = (
    "P4C",
    "P4C_TOFINO",
    "SIMPLE_SWITCH_GRPC",
    "P4VTEP_TOOLCHAIN_ARCHIVE",
    "P4VTEP_TOOLCHAIN_SHA256",
)
# Programs checked for after the hiding (what the project looks up).
LOOKED_UP = ("p4c", "p4c-tofino", "p4c-bm2-ss", "p4test", "simple_switch_grpc", "simple_switch")


def is_toolchain(name: str) -> bool:
    """p4c and its backends (p4c-bm2-ss, p4c-tofino, ...), p4test, and
    BMv2's switches and their CLIs (simple_switch_grpc, simple_switch_CLI,
    psa_switch, ...); bf-p4c is the driver under Intel's name."""
    return name in ("p4c", "bf-p4c") or name.startswith(
        ("p4c-", "p4test", "simple_switch", "psa_switch")
    )


def hidden_path(path: str, into: Path) -> list[str]:
    """Fill ``into`` with a symlink to each program on ``path`` (the first
    of each name, as a lookup finds it) that is not the toolchain's; returns
    the names left out."""
    left_out: set[str] = set()
    for directory in path.split(os.pathsep):
        if not directory or not os.path.isdir(directory):
            continue
        for entry in sorted(os.listdir(directory)):
            program = os.path.join(directory, entry)
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                continue
            if is_toolchain(entry):
                left_out.add(entry)
                continue
            link = into / entry
            if not os.path.lexists(link):
                link.symlink_to(os.path.abspath(program))
    return sorted(left_out)


def environment(env: Mapping[str, str], bin_dir: Path, nowhere: Path) -> dict[str, str]:
    """``env`` with PATH on ``bin_dir`` and no variable that names a tool."""
    out = {k: v for k, v in env.items() if k not in TOOL_VARIABLES}
    out["PATH"] = str(bin_dir)
    out["P4VTEP_TOOLCHAIN_PREFIX"] = str(nowhere)
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="p4vtep-no-toolchain-") as tmp:
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        left_out = hidden_path(os.environ.get("PATH", os.defpath), bin_dir)
        env = environment(os.environ, bin_dir, Path(tmp) / "no-prefix")
        found = [p for p in LOOKED_UP if shutil.which(p, path=env["PATH"])]
        if found:
            print(f"without_toolchain: still found: {', '.join(found)}", file=sys.stderr)
            return 2
        print(
            "without the P4 toolchain: "
            + (f"hidden {', '.join(left_out)}" if left_out else "none on PATH")
            + "; "
            + ", ".join(TOOL_VARIABLES)
            + " unset",
            file=sys.stderr,
        )
        return subprocess.run(argv, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
