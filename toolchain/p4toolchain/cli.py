"""The commands `make toolchain`, `make toolchain-archive` and the Makefile's
TOOLCHAIN_VARS run: ensure, env, plan, archive."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import archive, packages, versions
from .found import Found, from_path_or_env, from_prefix, tofino_from_path_or_prefix
from .settings import BMV2_TOOLS, TOFINO_LINK, Settings, ToolchainError, say

# Upstream's own install pages: packages, Docker images, building from source.
UPSTREAM_PAGES = """\
    p4c:  https://github.com/p4lang/p4c#installing-packaged-versions-of-p4c
          (Docker: https://github.com/p4lang/p4c#docker; building: https://github.com/p4lang/p4c#installing-p4c-from-source)
    BMv2: https://github.com/p4lang/behavioral-model#installing-bmv2
          (simple_switch_grpc needs BMv2 built with PI: https://github.com/p4lang/PI)"""

NOTHING_FOUND = f"""\
no P4 toolchain (p4c, simple_switch_grpc).
  `make test` runs everything else and skips the switch tests; `make demo` fails.
  Ways to provide it:
    1. put p4c and simple_switch_grpc on PATH, or name them: P4C=... SIMPLE_SWITCH_GRPC=...
    2. an archive packed on another machine: P4VTEP_TOOLCHAIN_ARCHIVE=<path or URL> make toolchain
    3. upstream's packages (p4lang-p4c, p4lang-bmv2; Ubuntu 20.04+, Debian 11): make toolchain
       adds upstream's signed repository and installs them
  Upstream's install pages:
{UPSTREAM_PAGES}
  See docs/toolchain.md."""

NO_TOFINO = """\
no Tofino compiler (p4c-tofino): put it on PATH or name it (P4C_TOFINO=...), or name an
  archive (P4VTEP_TOFINO_ARCHIVE=...). Upstream publishes no package of it: it is p4c's
  Tofino backend (https://github.com/p4lang/p4c, backends/tofino) and comes with
  open-p4studio (https://github.com/p4lang/open-p4studio)."""


def plan(s: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    """What `ensure` would do first, without doing it: (kind, detail)."""
    found = (
        tofino_from_path_or_prefix(env, s.tofino_prefix)
        if s.tofino
        else from_path_or_env(env) or from_prefix(s.prefix)
    )
    if found:
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
    what = "Tofino compiler" if s.tofino else "P4 toolchain"
    if s.tofino:
        found = tofino_from_path_or_prefix(env, s.tofino_prefix)
        if found is None and s.tofino_archive:
            say(f"{what} from archive {s.tofino_archive}")
            unpacked = archive.unpack(s.tofino_archive, s.tofino_archive_sha256, s, ("p4c",))
            found = Found({TOFINO_LINK: unpacked.tools["p4c"]}, unpacked.how)
        if found is None:
            say(NO_TOFINO)
            return None
        if s.make_links:
            link_tofino(Path(found.tools[TOFINO_LINK]), s.link_dir)
    else:
        found = from_path_or_env(env) or from_prefix(s.prefix)
        if found is None and s.archive:
            say(f"{what} from archive {s.archive}")
            found = archive.unpack(s.archive, s.archive_sha256, s, tuple(BMV2_TOOLS))
        if found is None:
            found = packages.install(s, env)
        if found is None:
            say(NOTHING_FOUND)
            return None
    say(f"{what} {found.how}")
    for line in versions.report(found.tools):
        say(line)
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
        found = from_path_or_env(env) or from_prefix(s.prefix)
    except ToolchainError:
        found = None
    if found is None and s.archive:
        found = from_prefix(archive.unpacked_prefix(s.archive, s) or s.prefix)
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
    found = from_path_or_env(env) or from_prefix(s.prefix)
    if found is None:
        raise ToolchainError("no p4c and simple_switch_grpc installed to pack")
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
