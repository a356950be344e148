"""The commands `make toolchain`, `make toolchain-archive` and the Makefile's
TOOLCHAIN_VARS run: ensure, env, plan, archive."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import archive, packages, versions
from .found import (
    Found,
    combine,
    from_path_or_env,
    from_prefix,
    lacking,
    tofino_from_path_or_prefix,
)
from .settings import BMV2_TOOLS, TOFINO_LINK, Settings, ToolchainError, say

# What each tool's absence takes away, said when it is missing: the compiled
# pipeline is committed, so only recompiling needs p4c, and everything that runs a
# switch needs only simple_switch_grpc.
WITHOUT = {
    "p4c": "`make p4` cannot recompile p4src/ and the P4 output freshness test "
    "(tests/test_p4_outputs.py) skips; the switch tests, the PTF suite and `make demo` "
    "run the committed outputs",
    "simple_switch_grpc": "the switch tests and the PTF suite skip, and `make demo` fails",
    TOFINO_LINK: "the Tofino tier does not run: `make p4-tofino` fails and the compiling "
    "tests of tests/test_tofino_outputs.py (freshness, stage fit, warnings) skip",
}

# Upstream's own install pages: packages, Docker images, building from source.
UPSTREAM_PAGES = {
    "p4c": """\
    p4c:  https://github.com/p4lang/p4c#installing-packaged-versions-of-p4c
          (Docker: https://github.com/p4lang/p4c#docker; building: https://github.com/p4lang/p4c#installing-p4c-from-source)""",
    "simple_switch_grpc": """\
    BMv2: https://github.com/p4lang/behavioral-model#installing-bmv2
          (simple_switch_grpc needs BMv2 built with PI: https://github.com/p4lang/PI)""",
}

TOFINO_WAYS = """\
Ways to provide p4c-tofino: put it on PATH or name it (P4C_TOFINO=...), or name an
  archive (P4VTEP_TOFINO_ARCHIVE=...). Upstream publishes no package of it: it is p4c's
  Tofino backend (https://github.com/p4lang/p4c, backends/tofino) and comes with
  open-p4studio (https://github.com/p4lang/open-p4studio)."""


def ways(missing: Sequence[str]) -> str:
    """How to provide the missing BMv2 tools, and upstream's pages for them."""
    them = "it" if len(missing) == 1 else "them"
    variables = " ".join(f"{BMV2_TOOLS[t]}=..." for t in missing)
    wanted = " and ".join(packages.PACKAGE_OF[t] for t in missing)
    pages = "\n".join(UPSTREAM_PAGES[t] for t in missing)
    return f"""\
Ways to provide {" and ".join(missing)}:
    1. put {them} on PATH, or name {them}: {variables}
    2. an archive packed on another machine (it carries p4c and simple_switch_grpc):
       P4VTEP_TOOLCHAIN_ARCHIVE=<path or URL> make toolchain
    3. upstream's packages ({wanted}; Ubuntu 20.04+, Debian 11): make toolchain
       adds upstream's signed repository and installs them
  Upstream's install pages:
{pages}
  See docs/toolchain.md."""


def report(found: Found | None, wanted: Sequence[str]) -> None:
    """One line per tool: found (how, where, its version) or missing (and what that
    takes away), then how to provide what is missing."""
    for tool in wanted:
        if found is not None and tool in found.tools:
            detail = versions.describe(tool, found.tools[tool])
            say(f"{tool}: found {found.origin(tool)}: {detail}")
        else:
            say(f"{tool}: missing: {WITHOUT[tool]}")
    missing = lacking(found, wanted)
    if not missing:
        return
    if TOFINO_LINK in missing:
        say(TOFINO_WAYS)
        return
    if found is None:
        say("no P4 toolchain: neither p4c nor simple_switch_grpc found")
    say(ways(missing))


def _bmv2_found(s: Settings, env: Mapping[str, str]) -> Found | None:
    """Paths 1 and 2, each tool from the first that has it."""
    return combine([from_path_or_env(env), from_prefix(s.prefix)])


def plan(s: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    """What `ensure` would do first, without doing it: (kind, detail). "found" when
    paths 1 and 2 have every tool; otherwise the path that would be asked for the
    missing ones ("none" when no path would)."""
    if s.tofino:
        found = tofino_from_path_or_prefix(env, s.tofino_prefix)
        missing = lacking(found, (TOFINO_LINK,))
    else:
        found = _bmv2_found(s, env)
        missing = lacking(found, tuple(BMV2_TOOLS))
    if found and not missing:
        return "found", found.how
    named = s.tofino_archive if s.tofino else s.archive
    if named:
        return "archive", named
    if not s.tofino and s.use_packages:
        try:
            directory = s.packages_dist or packages.repository_dir(
                packages.read_os_release(s.os_release)
            )
        except OSError:
            directory = None
        if directory:
            return "packages", f"{s.packages_base.rstrip('/')}/{directory}"
    return "none", ""


def ensure(s: Settings, env: Mapping[str, str]) -> Found | None:
    """Whatever the paths provide, each tool from the first path that has it; what
    is still missing is reported, not an error (callers decide whether it is fatal)."""
    if s.tofino:
        found = tofino_from_path_or_prefix(env, s.tofino_prefix)
        if found is None and s.tofino_archive:
            say(f"Tofino compiler from archive {s.tofino_archive}")
            unpacked = archive.unpack(s.tofino_archive, s.tofino_archive_sha256, s, ("p4c",))
            found = Found({TOFINO_LINK: unpacked.tools["p4c"]}, unpacked.how)
        if found is not None and s.make_links:
            link_tofino(Path(found.tools[TOFINO_LINK]), s.link_dir)
        report(found, (TOFINO_LINK,))
        return found
    wanted = tuple(BMV2_TOOLS)
    found = _bmv2_found(s, env)
    if lacking(found, wanted) and s.archive:
        say(f"P4 toolchain from archive {s.archive}")
        found = combine([found, archive.unpack(s.archive, s.archive_sha256, s, wanted)])
    if lacking(found, wanted):
        found = combine([found, packages.install(s, env, lacking(found, wanted))])
    report(found, wanted)
    return found


def link_tofino(p4c: Path, bindir: Path) -> None:
    """p4c-tofino -> the Tofino compiler, so that `p4c` stays the BMv2 one."""
    link = bindir / TOFINO_LINK
    if link.resolve() == p4c.resolve():
        return
    archive.make_links(p4c.parent.parent, {str(link): str(p4c.relative_to(p4c.parent.parent))})


def locate_env(s: Settings, env: Mapping[str, str]) -> list[str]:
    """VAR=path lines for what is already usable, including the prefix a named archive
    was unpacked into. No side effects."""
    lines: list[str] = []
    try:
        on_path = from_path_or_env(env)
    except ToolchainError:
        on_path = None
    found = combine([on_path, from_prefix(s.prefix)])
    if lacking(found, tuple(BMV2_TOOLS)) and s.archive:
        unpacked = archive.unpacked_prefix(s.archive, s)
        found = combine([found, from_prefix(unpacked) if unpacked else None])
    if found:
        lines += found.env_lines()
    try:
        tofino = tofino_from_path_or_prefix(env, s.tofino_prefix)
    except ToolchainError:
        tofino = None
    if tofino is None and s.tofino_archive:
        prefix = archive.unpacked_prefix(s.tofino_archive, s)
        if prefix and from_prefix(prefix, ("p4c",)):
            tofino = Found({TOFINO_LINK: str(prefix / "bin" / "p4c")}, "archive")
    if tofino:
        lines += tofino.env_lines()
    return lines


def _tools_to_pack(s: Settings, env: Mapping[str, str]) -> dict[str, str]:
    if s.tofino:
        tofino = tofino_from_path_or_prefix(env, s.tofino_prefix)
        if tofino is None:
            raise ToolchainError("no Tofino compiler installed to pack")
        return {"p4c": tofino.tools[TOFINO_LINK]}
    found = _bmv2_found(s, env)
    missing = lacking(found, tuple(BMV2_TOOLS))
    if found is None or missing:
        # unpacking needs both: an archive is one toolchain, used whole
        raise ToolchainError(f"no {' and no '.join(missing)} installed to pack")
    return found.tools


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(prog="p4toolchain", description=__doc__)
    parser.add_argument("command", nargs="?", default="ensure",
                        choices=["ensure", "env", "plan", "archive"])  # fmt: skip
    parser.add_argument("--tofino", action="store_true", help="the Tofino compiler instead")
    parser.add_argument("--no-packages", action="store_true", help="never use path 4")
    parser.add_argument("--output", help="archive: output file")
    args = parser.parse_args(argv)
    try:
        s = Settings.from_env(
            env, tofino=args.tofino or None, use_packages=False if args.no_packages else None
        )
        if args.command == "env":
            print(" ".join(locate_env(s, env)))
        elif args.command == "plan":
            print(" ".join(plan(s, env)).strip())
        elif args.command == "archive":
            output = Path(args.output or archive.default_name(s.tofino)).resolve()
            tools = _tools_to_pack(s, env)
            say(f"packing {', '.join(sorted(tools.values()))} into {output}")
            digest = archive.pack(tools, output)
            size = output.stat().st_size / 1e6
            say(f"{output}: {size:.1f} MB, sha256 {digest} (also in {output.name}.sha256)")
            print(digest)
        else:
            ensure(s, env)
    except ToolchainError as e:
        say(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
