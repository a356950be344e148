"""Paths 1 and 2: tools already on PATH or named by a variable, and a toolchain
unpacked into the project's prefix before (recognised by its manifest).

Each tool is found on its own: simple_switch_grpc without p4c is still used (the
switch tests and the demo need only the switch), and a later path is asked only
for what the earlier ones lack."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .settings import BMV2_TOOLS, MANIFEST, TOFINO_LINK, TOOL_VARIABLES, ToolchainError, executable


@dataclasses.dataclass
class Found:
    tools: dict[str, str]  # tool name -> absolute path
    how: str  # human-readable: where they came from
    # tool -> where it came from, when the tools came from different places
    origins: dict[str, str] = dataclasses.field(default_factory=dict)

    def env_lines(self) -> list[str]:
        return [f"{TOOL_VARIABLES[t]}={p}" for t, p in sorted(self.tools.items())]

    def origin(self, tool: str) -> str:
        return self.origins.get(tool, self.how)


def lacking(found: Found | None, wanted: Sequence[str]) -> list[str]:
    """The wanted tools not found (all of them when nothing was)."""
    return [t for t in wanted if found is None or t not in found.tools]


def combine(parts: Iterable[Found | None]) -> Found | None:
    """The tools of several paths, each from the first path that has it (the parts
    come in the order of preference); None when no part has any tool."""
    tools: dict[str, str] = {}
    origins: dict[str, str] = {}
    for part in parts:
        if part is None:
            continue
        for tool, path in part.tools.items():
            if tool not in tools:
                tools[tool] = path
                origins[tool] = part.origin(tool)
    if not tools:
        return None
    hows = list(dict.fromkeys(origins.values()))
    if len(hows) == 1:
        return Found(tools, hows[0])
    how = "; ".join(" and ".join(t for t in tools if origins[t] == h) + f" {h}" for h in hows)
    return Found(tools, how, origins)


def from_path_or_env(env: Mapping[str, str]) -> Found | None:
    """Path 1, for each tool on its own: whichever of them is there (None when
    neither is). A variable naming something that is not an executable is an
    error, not a reason to look elsewhere: the user asked for that program."""
    parts: list[Found] = []
    for tool, var in BMV2_TOOLS.items():
        given = env.get(var)
        hit = shutil.which(given or tool, path=env.get("PATH", ""))
        if given and hit is None:
            raise ToolchainError(f"{var}={given} is not an executable program")
        if hit is not None:
            parts.append(
                Found({tool: os.path.abspath(hit)}, f"named by {var}" if given else "on PATH")
            )
    return combine(parts)


def from_prefix(prefix: Path, tools: Sequence[str] = tuple(BMV2_TOOLS)) -> Found | None:
    """Path 2 (and where path 3 leaves its result): a prefix with our manifest and all
    the tools (an archive carries them together, so a prefix is used whole)."""
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
