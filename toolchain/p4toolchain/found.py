"""Paths 1 and 2: tools already on PATH or named by a variable, and a toolchain
unpacked into the project's prefix before (recognised by its manifest)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from .settings import BMV2_TOOLS, MANIFEST, TOFINO_LINK, TOOL_VARIABLES, ToolchainError, executable


@dataclasses.dataclass
class Found:
    tools: dict[str, str]  # tool name -> absolute path
    how: str  # human-readable: where they came from

    def env_lines(self) -> list[str]:
        return [f"{TOOL_VARIABLES[t]}={p}" for t, p in sorted(self.tools.items())]


def from_path_or_env(env: Mapping[str, str]) -> Found | None:
    """Path 1. A variable naming something that is not an executable is an error,
    not a reason to look elsewhere: the user asked for that program."""
    tools: dict[str, str] = {}
    for tool, var in BMV2_TOOLS.items():
        named = env.get(var)
        hit = shutil.which(named or tool, path=env.get("PATH", ""))
        if named and hit is None:
            raise ToolchainError(f"{var}={named} is not an executable program")
        if hit is not None:
            tools[tool] = os.path.abspath(hit)
    if len(tools) < len(BMV2_TOOLS):
        return None
    given = [var for var in BMV2_TOOLS.values() if env.get(var)]
    return Found(tools, "named by " + " and ".join(given) if given else "on PATH")


def from_prefix(prefix: Path, tools: Sequence[str] = tuple(BMV2_TOOLS)) -> Found | None:
    """Path 2 (and where path 3 leaves its result): a prefix with our manifest and the tools."""
    if not (prefix / MANIFEST).is_file():
        return None
    found = {t: str(prefix / "bin" / t) for t in tools}
    if not all(executable(p) for p in found.values()):
        return None
    return Found(found, f"installed in {prefix}")


def tofino_from_path_or_prefix(env: Mapping[str, str], prefix: Path) -> Found | None:
    named = env.get("P4C_TOFINO")
    hit = shutil.which(named or TOFINO_LINK, path=env.get("PATH", ""))
    if named and hit is None:
        raise ToolchainError(f"P4C_TOFINO={named} is not an executable program")
    if hit:
        how = "named by P4C_TOFINO" if named else "on PATH"
        return Found({TOFINO_LINK: os.path.abspath(hit)}, how)
    if from_prefix(prefix, ("p4c",)):
        return Found({TOFINO_LINK: str(prefix / "bin" / "p4c")}, f"installed in {prefix}")
    return None
