#!/usr/bin/env python3
"""Makes the P4 toolchain p4vtep needs available: p4c (BMv2 backend, p4test) and
simple_switch_grpc (BMv2 with PI/P4Runtime). Python 3 standard library only.

`ensure` takes the first of these that works (docs/toolchain.md explains each):
  1. p4c and simple_switch_grpc on PATH, or named by P4C / SIMPLE_SWITCH_GRPC;
  2. a toolchain this script installed in its prefix (P4VTEP_TOOLCHAIN_PREFIX);
  3. a prebuilt archive (P4VTEP_TOOLCHAIN_ARCHIVE: path or URL; P4VTEP_TOOLCHAIN_SHA256
     or a `<archive>.sha256` file beside it is checked when present), or one found in
     the team cache directory (--team-cache);
  4. a build from the upstream sources at pinned revisions, from local git repositories
     under P4VTEP_SOURCES, or from the network;
  5. none of these: say so and what to set (exit status 0; the callers decide).

Other commands: `env` prints P4C=... SIMPLE_SWITCH_GRPC=... for what is already there
(no side effects), `archive` packs an installed prefix, `build` forces path 4.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

MANIFEST = "p4vtep-toolchain.json"
DEFAULT_PREFIX = "/opt/p4vtep-toolchain"
DEFAULT_TOFINO_PREFIX = "/opt/p4vtep-toolchain-tofino"
DEFAULT_GIT_BASE = "https://github.com"
NETWORK_TIMEOUT_S = 8.0
# The binaries p4vtep runs; p4c finds p4c-bm2-ss and p4test next to itself.
BMV2_TOOLS = {"p4c": "P4C", "simple_switch_grpc": "SIMPLE_SWITCH_GRPC"}
TOFINO_LINK = "p4c-tofino"

# Pinned upstream revisions. p4c's own CMake files pin protobuf, Abseil and P4Runtime
# (cmake/Protobuf.cmake, cmake/Abseil.cmake, CMakeLists.txt); PI pins its submodules
# (googletest, gnmi, openconfig/public, p4runtime, uthash) by gitlink.
PINS: dict[str, str] = {
    "p4lang/p4c": "v1.2.5.16",
    "p4lang/behavioral-model": "1.15.5",
    "p4lang/PI": "f96af95e090619491e3abf2df69df340c2c9cb46",
    "p4lang/p4runtime": "ec4eb5ef70dbcbcbf2f8357a4b2b8c2f218845a5",
    "protocolbuffers/protobuf": "v25.3",
    "abseil/abseil-cpp": "20240722.1",
}
PI_SUBMODULES = (
    "google/googletest",
    "openconfig/gnmi",
    "openconfig/public",
    "p4lang/p4runtime",
    "troydhanson/uthash",
)
TOFINO_PINS: dict[str, str] = {"gabime/spdlog": "v1.8.3"}
BMV2_SOURCES = tuple(PINS) + PI_SUBMODULES
TOFINO_SOURCES = (
    "p4lang/p4c",
    "p4lang/p4runtime",
    "protocolbuffers/protobuf",
    "abseil/abseil-cpp",
    "gabime/spdlog",
)

# Debian 12 packages the build needs (PI, BMv2 and p4c READMEs, plus what was
# learnt: BMv2 wants jsoncpp, xxhash, nanomsg and thrift from Debian).
BUILD_PACKAGES = (
    "build-essential", "git", "autoconf", "automake", "libtool", "pkg-config", "python3",
    "python3-venv", "cpp", "bison", "flex", "libfl-dev", "libgc-dev", "libgmp-dev",
    "libssl-dev", "libevent-dev", "libreadline-dev", "libjudy-dev",
    "libboost-dev", "libboost-iostreams-dev", "libboost-graph-dev",
    "libboost-program-options-dev", "libboost-system-dev", "libboost-filesystem-dev",
    "libboost-thread-dev", "libboost-test-dev",
    "libprotobuf-dev", "protobuf-compiler", "libgrpc++-dev", "protobuf-compiler-grpc",
    "libjsoncpp-dev", "libxxhash-dev", "libpcap-dev", "libnanomsg-dev",
    "thrift-compiler", "libthrift-dev",
)  # fmt: skip
TOFINO_BUILD_PACKAGES = ("libzstd-dev",)
# Debian 12's CMake (3.25) is too old for p4c's FetchContent use; pip has newer.
MIN_CMAKE = (3, 27)
PIP_CMAKE = "cmake>=3.27,<4"
PIP_Z3 = "z3-solver==4.11.2.0"

# Stage minutes on 2 cores for the progress lines: PI and BMv2 measured (docs/toolchain.md),
# p4c and p4c-tofino estimated until a build on this hardware finishes.
EXPECTED_MIN = {"PI": 9, "BMv2": 30, "p4c": 70, "p4c-tofino": 110}
HEARTBEAT_S = 300

# ------------------------------------------------------------------------------------
# Settings


@dataclasses.dataclass
class Settings:
    prefix: Path = Path(DEFAULT_PREFIX)
    tofino_prefix: Path = Path(DEFAULT_TOFINO_PREFIX)
    archive: str | None = None
    archive_sha256: str | None = None
    tofino_archive: str | None = None
    tofino_archive_sha256: str | None = None
    team_cache: Path | None = None
    sources: Path | None = None
    git_base: str = DEFAULT_GIT_BASE
    network_timeout: float = NETWORK_TIMEOUT_S
    workdir: Path = Path.home() / ".cache" / "p4vtep-toolchain"
    jobs: int = os.cpu_count() or 1
    tofino: bool = False
    install_packages: bool = True  # apt-get for runtime/build packages when missing
    make_links: bool = True  # create the links an archive's manifest records
    link_dir: Path = Path("/usr/local/bin")  # where p4c-tofino is linked

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> Settings:
        s = cls()
        if env.get("P4VTEP_TOOLCHAIN_PREFIX"):
            s.prefix = Path(env["P4VTEP_TOOLCHAIN_PREFIX"])
        if env.get("P4VTEP_TOFINO_PREFIX"):
            s.tofino_prefix = Path(env["P4VTEP_TOFINO_PREFIX"])
        s.archive = env.get("P4VTEP_TOOLCHAIN_ARCHIVE") or None
        s.archive_sha256 = env.get("P4VTEP_TOOLCHAIN_SHA256") or None
        s.tofino_archive = env.get("P4VTEP_TOFINO_ARCHIVE") or None
        s.tofino_archive_sha256 = env.get("P4VTEP_TOFINO_SHA256") or None
        if env.get("P4VTEP_SOURCES"):
            s.sources = Path(env["P4VTEP_SOURCES"])
        s.git_base = env.get("P4VTEP_GIT_BASE") or DEFAULT_GIT_BASE
        if env.get("P4VTEP_NETWORK_TIMEOUT"):
            s.network_timeout = float(env["P4VTEP_NETWORK_TIMEOUT"])
        if env.get("P4VTEP_TOOLCHAIN_WORKDIR"):
            s.workdir = Path(env["P4VTEP_TOOLCHAIN_WORKDIR"])
        if env.get("P4VTEP_LINK_DIR"):
            s.link_dir = Path(env["P4VTEP_LINK_DIR"])
        if env.get("P4VTEP_JOBS"):
            s.jobs = int(env["P4VTEP_JOBS"])
        for key, value in overrides.items():
            if value is not None:
                setattr(s, key, value)
        return s


class ToolchainError(Exception):
    """A clear, user-facing failure (bad input, failed build); nothing half-done is used."""


def say(msg: str) -> None:
    print(f"[toolchain] {msg}", flush=True)


# ------------------------------------------------------------------------------------
# Resolution


@dataclasses.dataclass
class Found:
    tools: dict[str, str]  # tool name -> absolute path
    how: str  # human-readable: where they came from

    def env_lines(self) -> list[str]:
        names = {**BMV2_TOOLS, TOFINO_LINK: "P4C_TOFINO"}
        return [f"{names[t]}={p}" for t, p in sorted(self.tools.items())]


def _executable(path: str | Path) -> bool:
    p = Path(path)
    return p.is_file() and os.access(p, os.X_OK)


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
    """Path 2 (and the result of 3 and 4): a prefix holding our manifest and the tools."""
    if not (prefix / MANIFEST).is_file():
        return None
    found = {t: str(prefix / "bin" / t) for t in tools}
    if not all(_executable(p) for p in found.values()):
        return None
    return Found(found, f"installed in {prefix}")


def tofino_from_path_or_prefix(env: Mapping[str, str], prefix: Path) -> Found | None:
    named = env.get("P4C_TOFINO")
    hit = shutil.which(named or TOFINO_LINK, path=env.get("PATH", ""))
    if named and hit is None:
        raise ToolchainError(f"P4C_TOFINO={named} is not an executable program")
    if hit:
        return Found({TOFINO_LINK: os.path.abspath(hit)}, "on PATH")
    if from_prefix(prefix, ("p4c",)):
        return Found({TOFINO_LINK: str(prefix / "bin" / "p4c")}, f"installed in {prefix}")
    return None


def team_archive(team_cache: Path | None, kind: str) -> str | None:
    """The newest p4-toolchain-<kind>-*.tar.xz in the team cache directory."""
    if team_cache is None or not team_cache.is_dir():
        return None
    hits = sorted(team_cache.glob(f"p4-toolchain-{kind}-*.tar.xz"))
    return str(hits[-1]) if hits else None


def source_dir(sources: Path, project: str) -> Path | None:
    """A local git repository for owner/name: sources/owner+name, sources/name (any case);
    bare or not."""
    owner, name = project.split("/")
    for candidate in (f"{owner}+{name}", name, f"{owner}+{name}.git", f"{name}.git"):
        for entry in (sources / candidate, sources / candidate.lower()):
            if (entry / "HEAD").is_file() or (entry / ".git").exists():
                return entry
    return None


def network_reachable(git_base: str, timeout: float) -> bool:
    """True when the upstream git host answers within `timeout` seconds."""
    url = f"{git_base.rstrip('/')}/p4lang/p4c"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/true"}
    try:
        r = subprocess.run(
            ["git", "ls-remote", "--heads", url, "refs/heads/main"],
            capture_output=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError):
        return False
    return r.returncode == 0


@dataclasses.dataclass
class Plan:
    """What `ensure` would do: kind is found / archive / sources / network / none."""

    kind: str
    found: Found | None = None
    archive: str | None = None
    detail: str = ""


def plan_bmv2(s: Settings, env: Mapping[str, str]) -> Plan:
    found = from_path_or_env(env) or from_prefix(s.prefix)
    if found:
        return Plan("found", found=found)
    archive = s.archive or team_archive(s.team_cache, "bmv2")
    if archive:
        return Plan("archive", archive=archive, detail="" if s.archive else "team cache")
    return plan_build(s, BMV2_SOURCES)


def plan_tofino(s: Settings, env: Mapping[str, str]) -> Plan:
    found = tofino_from_path_or_prefix(env, s.tofino_prefix)
    if found:
        return Plan("found", found=found)
    archive = s.tofino_archive or team_archive(s.team_cache, "tofino")
    if archive:
        return Plan("archive", archive=archive, detail="" if s.tofino_archive else "team cache")
    return plan_build(s, TOFINO_SOURCES)


def plan_build(s: Settings, projects: Sequence[str]) -> Plan:
    if s.sources is not None:
        missing = [p for p in projects if source_dir(s.sources, p) is None]
        if missing:
            raise ToolchainError(
                f"P4VTEP_SOURCES={s.sources} lacks git repositories for: "
                + ", ".join(missing)
                + " (one directory per project, named owner+name or name)"
            )
        return Plan("sources", detail=str(s.sources))
    if network_reachable(s.git_base, s.network_timeout):
        return Plan("network", detail=s.git_base)
    return Plan(
        "none",
        detail=(
            f"no P4VTEP_SOURCES and {s.git_base} not reachable "
            f"(gave up after {s.network_timeout:g} s at most)"
        ),
    )


NOTHING_FOUND = """\
no P4 toolchain (p4c, simple_switch_grpc): {why}.
  `make test` runs everything else and skips the switch tests; `make demo` fails.
  Three ways to get it:
    1. put p4c and simple_switch_grpc on PATH, or name them: P4C=... SIMPLE_SWITCH_GRPC=...
    2. a prebuilt archive: P4VTEP_TOOLCHAIN_ARCHIVE=<path or URL> make toolchain (~1 min)
    3. a build from sources (~2 h on 2 cores): make toolchain with access to github.com,
       or P4VTEP_SOURCES=<directory of local git repositories> make toolchain
  See docs/toolchain.md."""


# ------------------------------------------------------------------------------------
# Small helpers: privilege, packages, files


def _sudo() -> list[str]:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        return ["sudo"]
    raise ToolchainError("needs root (or sudo) to install Debian packages / write the prefix")


def make_writable_dir(path: Path) -> None:
    """Create `path` owned by the current user (with sudo when its parent is not ours)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        subprocess.run(
            [*_sudo(), "install", "-d", "-o", str(os.getuid()), "-g", str(os.getgid()), str(path)],
            check=True,
        )
    if not os.access(path, os.W_OK):
        raise ToolchainError(f"{path} is not writable: run as root or choose another prefix")


def missing_debian_packages(packages: Sequence[str]) -> list[str]:
    if shutil.which("dpkg-query") is None:
        return []  # not Debian: the caller has said which packages are needed
    missing = []
    for p in packages:
        r = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True, check=False
        )
        if "install ok installed" not in r.stdout:
            missing.append(p)
    return missing


def install_debian_packages(packages: Sequence[str], s: Settings) -> None:
    missing = missing_debian_packages(packages)
    if not missing:
        return
    if not s.install_packages:
        raise ToolchainError("missing Debian packages: " + " ".join(missing))
    say("installing Debian packages: " + " ".join(missing))
    sudo = _sudo()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        [*sudo, "apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-q", *missing],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def expected_sha256(archive: Path, given: str | None) -> str | None:
    """The sha256 to check: the one given, else a `<archive>.sha256` file beside it."""
    if given:
        return given.strip().lower()
    sidecar = archive.with_name(archive.name + ".sha256")
    if sidecar.is_file():
        words = sidecar.read_text().split()
        return words[0].lower() if words else None
    return None


# ------------------------------------------------------------------------------------
# Path 3: archives


def fetch_archive(location: str, cache: Path, timeout: float) -> Path:
    """A local path as is; a URL downloaded once into the cache."""
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme in ("", "file"):
        path = Path(parsed.path if parsed.scheme else location)
        if not path.is_file():
            raise ToolchainError(f"P4VTEP_TOOLCHAIN_ARCHIVE={location}: no such file")
        return path
    target = cache / "downloads" / Path(parsed.path).name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"downloading {location}")
    partial = target.with_suffix(target.suffix + ".part")
    try:
        with urllib.request.urlopen(location, timeout=timeout) as r, partial.open("wb") as f:
            shutil.copyfileobj(r, f)
    except (OSError, ValueError) as e:
        partial.unlink(missing_ok=True)
        raise ToolchainError(f"cannot download {location}: {e}") from e
    partial.rename(target)
    return target


def _safe_member(m: tarfile.TarInfo) -> bool:
    """Regular files, directories and links that all stay inside the prefix."""
    if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
        return False
    if _escapes(PurePosixPath(m.name)):
        return False
    if m.issym():
        return not _escapes(PurePosixPath(m.name).parent / m.linkname)
    if m.islnk():
        return not _escapes(PurePosixPath(m.linkname))
    return True


def _escapes(p: PurePosixPath) -> bool:
    return p.is_absolute() or os.path.normpath(str(p)).split("/")[0] == ".."


def read_archive_manifest(archive: Path) -> dict[str, Any]:
    """The archive's p4vtep-toolchain.json (`archive` writes it first: cheap to read)."""
    with tarfile.open(archive, "r|*") as tf:
        for m in tf:
            if PurePosixPath(m.name) == PurePosixPath(MANIFEST) and m.isreg():
                f = tf.extractfile(m)
                assert f is not None
                manifest: dict[str, Any] = json.loads(f.read())
                break
        else:
            raise ToolchainError(f"{archive} has no top-level {MANIFEST}: not a toolchain archive")
    if not isinstance(manifest.get("prefix"), str) or not manifest["prefix"].startswith("/"):
        raise ToolchainError(f"{archive}: {MANIFEST} has no absolute 'prefix'")
    return manifest


def archive_prefix(archive: Path, workdir: Path, known: str | None = None) -> Path:
    """The prefix an archive unpacks into, remembered per (path, size, mtime) so that
    `env` need not decompress a large archive whose manifest is not its first member."""
    index_path = workdir / "archive-prefixes.json"
    st = archive.stat()
    key = f"{archive.resolve()}|{st.st_size}|{int(st.st_mtime)}"
    try:
        index: dict[str, str] = json.loads(index_path.read_text())
    except (OSError, ValueError):
        index = {}
    if key not in index or known is not None:
        index[key] = known or read_archive_manifest(archive)["prefix"]
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            index_path.write_text(json.dumps(index, indent=1) + "\n")
        except OSError:
            pass  # only a cache
    return Path(index[key])


def unpack_archive(location: str, sha256: str | None, s: Settings, tools: Sequence[str]) -> Found:
    """Verify, unpack into the prefix the manifest names, install runtime packages, check."""
    archive = fetch_archive(location, s.workdir, s.network_timeout)
    want = expected_sha256(archive, sha256)
    if want:
        got = sha256_of(archive)
        if got != want:
            raise ToolchainError(
                f"{archive}: sha256 {got} does not match the expected {want}; nothing unpacked"
            )
    manifest = read_archive_manifest(archive)
    prefix = archive_prefix(archive, s.workdir, known=manifest["prefix"])
    stamp = prefix / ".p4vtep-archive-sha256"
    digest = want or sha256_of(archive)
    found = from_prefix(prefix, tools)
    if found and stamp.is_file() and stamp.read_text().strip() == digest:
        say(f"archive already unpacked in {prefix}")
    else:
        say(f"unpacking {archive} into {prefix}")
        started = time.monotonic()
        _extract_into(archive, prefix)
        stamp.write_text(digest + "\n")
        say(f"unpacked in {time.monotonic() - started:.0f} s")
    install_debian_packages(manifest.get("debian_runtime_packages", []), s)
    if s.make_links:  # the manifest's links, by name, in our link directory
        links = manifest.get("links", {})
        _make_links(prefix, {str(s.link_dir / Path(k).name): v for k, v in links.items()})
    found = from_prefix(prefix, tools)
    if found is None:
        raise ToolchainError(
            f"{archive} unpacked into {prefix} but lacks bin/{' or bin/'.join(tools)}"
        )
    found.how = f"from archive {archive}, in {prefix}"
    return found


def _extract_into(archive: Path, prefix: Path) -> None:
    """Extract beside the prefix, then move each file into place with rename(2): a binary
    that is running (another user's simple_switch_grpc) is replaced, never rewritten."""
    make_writable_dir(prefix)
    staging = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.unpack-", dir=prefix.parent))
    try:
        with tarfile.open(archive, "r|*") as tf:
            for m in tf:
                if not _safe_member(m):
                    raise ToolchainError(f"{archive}: refusing unsafe member {m.name!r}")
                m.uid = m.gid = 0
                m.uname = m.gname = ""
                tf.extract(m, staging, set_attrs=not m.issym())
        for src in sorted(staging.rglob("*")):
            dst = prefix / src.relative_to(staging)
            if src.is_dir() and not src.is_symlink():
                dst.mkdir(parents=True, exist_ok=True)
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                if dst.is_dir() and not dst.is_symlink():
                    shutil.rmtree(dst)
                os.replace(src, dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _make_links(prefix: Path, links: Mapping[str, str]) -> None:
    """Create the links the manifest records, but never replace something else."""
    for link, rel in links.items():
        target = prefix / rel
        lp = Path(link)
        if lp.is_symlink() and Path(os.readlink(lp)) == target:
            continue
        if lp.exists() or lp.is_symlink():
            say(f"not linking {lp}: something else is there")
            continue
        try:
            lp.parent.mkdir(parents=True, exist_ok=True)
            lp.symlink_to(target)
        except PermissionError:
            say(f"not linking {lp}: no permission")


# ------------------------------------------------------------------------------------
# Path 4: building from sources


@dataclasses.dataclass
class Stage:
    name: str
    key: str  # what the result depends on; a changed key rebuilds the stage
    log: Path


class Builder:
    """Builds PI, BMv2 and p4c into `prefix`, one resumable stage at a time."""

    def __init__(self, s: Settings, origin: str, prefix: Path) -> None:
        self.s = s
        self.origin = origin  # "sources" or "network"
        self.prefix = prefix
        self.work = s.workdir / "build"
        self.src = self.work / "src"
        self.logs = self.work / "logs"
        self.stamps = self.work / "stamps"
        self.started = time.monotonic()
        self.env = dict(os.environ)
        self.env.pop("MAKEFLAGS", None)  # our -j, not the calling make's jobserver
        self.env.pop("MFLAGS", None)
        self.env["PKG_CONFIG_PATH"] = f"{prefix}/lib/pkgconfig"
        self.env["GIT_TERMINAL_PROMPT"] = "0"

    # --- progress and logging ---------------------------------------------------------
    def _clock(self) -> str:
        return _minutes(time.monotonic() - self.started)

    def run(self, stage: Stage, cmd: Sequence[str], cwd: Path | None = None) -> None:
        with stage.log.open("a") as log:
            log.write(f"\n$ {' '.join(cmd)}   (in {cwd or Path.cwd()})\n")
            log.flush()
            proc = subprocess.Popen(
                list(cmd), cwd=cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
            while True:
                # a "still building" line every HEARTBEAT_S of the stage, across its commands
                wait = self._next_beat - time.monotonic()
                try:
                    rc = proc.wait(timeout=max(wait, 0.1))
                    break
                except subprocess.TimeoutExpired:
                    self._next_beat += HEARTBEAT_S
                    say(
                        f"{stage.name}: still building, "
                        f"{_minutes(time.monotonic() - self._stage_start)}"
                        f" of ~{EXPECTED_MIN.get(stage.name, 1)} min expected"
                    )
        if rc != 0:
            tail = stage.log.read_text(errors="replace").splitlines()[-40:]
            print("\n".join(tail), file=sys.stderr)
            raise ToolchainError(
                f"{stage.name} failed ({cmd[0]} exited {rc}); full log: {stage.log}\n"
                f"  a re-run resumes at this stage"
            )

    _stage_start = 0.0
    _next_beat = 0.0

    def stage(self, name: str, key: str, index: int, total: int, body: Any) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.stamps.mkdir(parents=True, exist_ok=True)
        stamp = self.stamps / f"{name}.json"
        if stamp.is_file():
            done = json.loads(stamp.read_text())
            if done.get("key") == key:
                say(f"[{index}/{total}] {name}: already built ({_minutes(done['seconds'])}), kept")
                return
        log = self.logs / f"{name}.log"
        expected = EXPECTED_MIN.get(name)
        say(
            f"[{index}/{total}] {name}: building"
            + (f" (~{expected} min expected on 2 cores)" if expected else "")
            + f"; elapsed {self._clock()}; log {log}"
        )
        self._stage_start = time.monotonic()
        self._next_beat = self._stage_start + HEARTBEAT_S
        body(Stage(name, key, log))
        seconds = time.monotonic() - self._stage_start
        stamp.write_text(json.dumps({"key": key, "seconds": round(seconds)}) + "\n")
        say(f"[{index}/{total}] {name}: done in {_minutes(seconds)}; elapsed {self._clock()}")

    # --- sources -----------------------------------------------------------------------
    def origin_url(self, project: str) -> str:
        if self.origin == "sources":
            assert self.s.sources is not None
            d = source_dir(self.s.sources, project)
            if d is None:
                raise ToolchainError(f"no local repository for {project} in {self.s.sources}")
            return str(d.resolve())
        return f"{self.s.git_base.rstrip('/')}/{project}.git"

    def checkout(self, stage: Stage, project: str, rev: str) -> Path:
        """A work tree of `project` at `rev` under the build directory. Idempotent: a tree
        already at `rev` is left as it is (patched files and timestamps kept)."""
        dest = self.src / project.split("/")[1]
        if not (dest / ".git").exists():
            clone = ["git", "clone", "--no-checkout"]
            if self.origin == "network":
                clone.append("--filter=blob:none")
            self.run(stage, [*clone, self.origin_url(project), str(dest)])
        marker = dest / ".git" / "p4vtep-checked-out"
        commit = _git_out(dest, "rev-parse", f"{rev}^{{commit}}")
        if not marker.is_file() or marker.read_text() != commit:
            if self.origin == "sources":
                self.leave_out_missing(project, dest, rev)
            self.run(stage, ["git", "-C", str(dest), "checkout", "-q", "--force", "--detach", rev])
            marker.write_text(commit)
        return dest

    def leave_out_missing(self, project: str, dest: Path, rev: str) -> None:
        """Local mirrors may lack some large blobs (p4c's docs/compiler-design.pptx in
        ours): check out everything else, by sparse-checkout, and say what was left out."""
        listing = _git_out(dest, "ls-tree", "-r", "-z", rev, strip=False)
        blobs: dict[str, str] = {}
        for entry in filter(None, listing.split("\0")):
            meta, path = entry.split("\t", 1)
            _mode, kind, sha = meta.split()
            if kind == "blob":
                blobs[path] = sha
        status = subprocess.run(
            ["git", "-C", str(dest), "cat-file", "--batch-check"],
            input="\n".join(blobs.values()) + "\n",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        absent = {line.split()[0] for line in status.splitlines() if line.endswith(" missing")}
        missing = sorted(p for p, sha in blobs.items() if sha in absent)
        sparse = dest / ".git" / "info" / "sparse-checkout"
        if not missing:
            return
        say(f"{project}: {len(missing)} file(s) absent from the local repository, "
            f"left out: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")  # fmt: skip
        sparse.parent.mkdir(parents=True, exist_ok=True)
        sparse.write_text("/*\n" + "".join(f"!/{_escape_pattern(p)}\n" for p in missing))
        subprocess.run(
            ["git", "-C", str(dest), "config", "core.sparseCheckout", "true"], check=True
        )

    def configure(self, stage: Stage, tree: Path, args: Sequence[str]) -> None:
        """autogen.sh + configure, skipped when a re-run finds them done with the same
        arguments (so `make` resumes instead of rebuilding)."""
        marker = tree / ".p4vtep-configure-args"
        wanted = json.dumps(list(args))
        if (tree / "config.status").exists() and marker.is_file() and marker.read_text() == wanted:
            with stage.log.open("a") as log:
                log.write(f"\n(configure already done in {tree})\n")
            return
        self.run(stage, ["./autogen.sh"], cwd=tree)
        self.run(stage, ["./configure", *args], cwd=tree)
        marker.write_text(wanted)

    def submodules(self, stage: Stage, tree: Path) -> None:
        """Check out pinned submodules, from the local sources when building offline."""
        self.run(stage, ["git", "-C", str(tree), "submodule", "init"])
        if self.origin == "sources":
            listing = subprocess.run(
                ["git", "-C", str(tree), "config", "--get-regexp", r"^submodule\..*\.url$"],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            for line in listing.splitlines():
                key, url = line.split(maxsplit=1)
                m = re.search(r"github\.com[/:]([^/]+)/([^/]+?)(?:\.git)?/?$", url)
                if not m:
                    raise ToolchainError(f"submodule {key}: cannot map {url} to a local source")
                self.run(stage, ["git", "-C", str(tree), "config", key,
                                 self.origin_url(f"{m.group(1)}/{m.group(2)}")])  # fmt: skip
        # git >= 2.38 refuses file:// submodules unless allowed explicitly.
        self.run(stage, ["git", "-C", str(tree), "-c", "protocol.file.allow=always",
                         "submodule", "update", "--force"])  # fmt: skip

    # --- tools ---------------------------------------------------------------------
    def ensure_cmake(self, stage: Stage, extra_pip: Sequence[str] = ()) -> None:
        venv = self.work / "tools-venv"
        if not (venv / "bin" / "python").exists():
            self.run(stage, [sys.executable, "-m", "venv", str(venv)])
        wanted = [] if _cmake_ok(venv / "bin" / "cmake") else [PIP_CMAKE]
        wanted += [p for p in extra_pip if not (venv / (".have-" + _slug(p))).exists()]
        if wanted:
            self.run(stage, [str(venv / "bin" / "pip"), "install", "-q", *wanted])
            for p in extra_pip:
                (venv / (".have-" + _slug(p))).touch()
        self.env["PATH"] = f"{venv / 'bin'}:{self.env.get('PATH', '')}"

    # --- the three components -----------------------------------------------------------
    def build_pi(self, stage: Stage) -> None:
        tree = self.checkout(stage, "p4lang/PI", PINS["p4lang/PI"])
        self.submodules(stage, tree)
        rpath = f"-Wl,-rpath,{self.prefix}/lib"
        self.configure(stage, tree, [f"--prefix={self.prefix}", "--with-proto",
                                     "--without-internal-rpc", "--without-cli", "--without-bmv2",
                                     "CFLAGS=-O2", "CXXFLAGS=-O2", f"LDFLAGS={rpath}"])  # fmt: skip
        self.run(stage, ["make", f"-j{self.s.jobs}"], cwd=tree)
        self.run(stage, ["make", "install"], cwd=tree)

    def build_bmv2(self, stage: Stage) -> None:
        tree = self.checkout(stage, "p4lang/behavioral-model", PINS["p4lang/behavioral-model"])
        p = self.prefix
        # Logging macros stay on (the debug logs are how one reads a failing test);
        # the event logger (nanomsg) is off: nothing here listens to it.
        self.configure(stage, tree, [f"--prefix={p}", "--with-pi", "--disable-elogger",
                                     "CFLAGS=-O2", "CXXFLAGS=-O2", f"CPPFLAGS=-I{p}/include",
                                     f"LDFLAGS=-L{p}/lib -Wl,-rpath,{p}/lib"])  # fmt: skip
        self.run(stage, ["make", f"-j{self.s.jobs}"], cwd=tree)
        self.run(stage, ["make", "install"], cwd=tree)

    def fetchcontent_dirs(self, stage: Stage) -> list[str]:
        """p4c fetches protobuf, Abseil and P4Runtime at configure time; hand it checked
        out trees instead so the build works offline and uses the pinned revisions."""
        repos = {
            "PROTOBUF": "protocolbuffers/protobuf",
            "ABSEIL": "abseil/abseil-cpp",
            "P4RUNTIME": "p4lang/p4runtime",
        }
        dirs = {name: self.checkout(stage, repo, PINS[repo]) for name, repo in repos.items()}
        return [f"-DFETCHCONTENT_SOURCE_DIR_{k}={v}" for k, v in dirs.items()]

    def p4c_tree(self, stage: Stage) -> Path:
        tree = self.checkout(stage, "p4lang/p4c", PINS["p4lang/p4c"])
        patch_gcc12(tree / "ir" / "visitor.cpp")
        return tree

    def build_p4c(self, stage: Stage) -> None:
        self.ensure_cmake(stage)
        tree = self.p4c_tree(stage)
        build = self.work / "p4c-build"
        self.run(stage, ["cmake", "-S", str(tree), "-B", str(build),
                         f"-DCMAKE_INSTALL_PREFIX={self.prefix}", "-DCMAKE_BUILD_TYPE=Release",
                         *P4C_BMV2_OPTIONS, *self.fetchcontent_dirs(stage)])  # fmt: skip
        self.run(stage, ["cmake", "--build", str(build), f"-j{self.s.jobs}"])
        self.run(stage, ["cmake", "--install", str(build)])

    def build_p4c_tofino(self, stage: Stage) -> None:
        """Not run on the project's machines yet (docs/toolchain.md says so)."""
        self.ensure_cmake(stage, extra_pip=[PIP_Z3])
        tree = self.p4c_tree(stage)
        patch_tofino_driver(tree / "backends" / "tofino" / "bf-p4c" / "driver" / "barefoot.py")
        spdlog = self.checkout(stage, "gabime/spdlog", TOFINO_PINS["gabime/spdlog"])
        z3 = _pip_z3_dir(self.work / "tools-venv")
        build = self.work / "p4c-tofino-build"
        p = self.prefix
        self.run(stage, ["cmake", "-S", str(tree), "-B", str(build),
                         f"-DCMAKE_INSTALL_PREFIX={p}", "-DCMAKE_BUILD_TYPE=Release",
                         f"-DCMAKE_INSTALL_RPATH={p}/lib", *P4C_TOFINO_OPTIONS,
                         f"-DFETCHCONTENT_SOURCE_DIR_SPDLOG={spdlog}",
                         f"-DZ3_INCLUDE_DIR={z3}/include", f"-DZ3_LIBRARY={z3}/lib/libz3.so",
                         *self.fetchcontent_dirs(stage)])  # fmt: skip
        self.run(stage, ["cmake", "--build", str(build), f"-j{self.s.jobs}"])
        self.run(stage, ["cmake", "--install", str(build)])
        (p / "lib").mkdir(exist_ok=True)
        shutil.copy2(f"{z3}/lib/libz3.so", p / "lib" / "libz3.so")


# Only the backends p4vtep uses: bmv2 (p4c-bm2-ss) and p4test. Boehm GC from Debian.
P4C_BMV2_OPTIONS = (
    "-DENABLE_BMV2=ON", "-DENABLE_P4TEST=ON", "-DENABLE_EBPF=OFF", "-DENABLE_UBPF=OFF",
    "-DENABLE_DPDK=OFF", "-DENABLE_P4TC=OFF", "-DENABLE_P4FMT=OFF", "-DENABLE_P4C_GRAPHS=OFF",
    "-DENABLE_TEST_TOOLS=OFF", "-DENABLE_GTESTS=OFF", "-DENABLE_DOCS=OFF",
    "-DP4C_USE_PREINSTALLED_BDWGC=ON",
)  # fmt: skip
P4C_TOFINO_OPTIONS = (
    "-DENABLE_TOFINO=ON", "-DENABLE_BMV2=OFF", "-DENABLE_P4TEST=OFF", "-DENABLE_EBPF=OFF",
    "-DENABLE_UBPF=OFF", "-DENABLE_DPDK=OFF", "-DENABLE_P4TC=OFF", "-DENABLE_P4FMT=OFF",
    "-DENABLE_P4C_GRAPHS=OFF", "-DENABLE_TEST_TOOLS=OFF", "-DENABLE_GTESTS=OFF",
    "-DP4C_USE_PREINSTALLED_BDWGC=ON", "-DUSE_PREINSTALLED_Z3=ON",
)  # fmt: skip

GCC12_BAD = "(flow_join_points_t::value_type &el)"
GCC12_GOOD = "(const flow_join_points_t::value_type &el)"


def patch_gcc12(visitor_cpp: Path) -> bool:
    """GCC 12 rejects p4c 1.2.5.16's erase_if lambdas in ir/visitor.cpp taking a non-const
    reference to a map element; take it by const reference. Idempotent; True if changed."""
    text = visitor_cpp.read_text()
    if GCC12_BAD not in text:
        return False
    visitor_cpp.write_text(text.replace(GCC12_BAD, GCC12_GOOD))
    return True


TOFINO_DRIVER_BAD = "if cmd[0].find('/') != 0 and (find_bin(cmd[0]) == None):"
TOFINO_DRIVER_GOOD = "if str(cmd[0]).find('/') != 0 and (find_bin(str(cmd[0])) == None):"


def patch_tofino_driver(barefoot_py: Path) -> bool:
    """The Tofino driver's checkAndRunCmd calls str methods on a command that p4c's core
    driver now gives as a pathlib.Path; make it a str. Idempotent; True if changed."""
    text = barefoot_py.read_text()
    if TOFINO_DRIVER_BAD not in text:
        return False
    barefoot_py.write_text(text.replace(TOFINO_DRIVER_BAD, TOFINO_DRIVER_GOOD))
    return True


def _git_out(repo: Path, *args: str, strip: bool = True) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    return r.stdout.strip() if strip else r.stdout


def _escape_pattern(path: str) -> str:
    """A path as a literal gitignore-style pattern."""
    return re.sub(r"([\\*?\[!# ])", r"\\\1", path)


def _cmake_ok(cmake: Path) -> bool:
    if not cmake.exists():
        return False
    out = subprocess.run([str(cmake), "--version"], capture_output=True, text=True, check=False)
    m = re.search(r"(\d+)\.(\d+)", out.stdout)
    return m is not None and (int(m.group(1)), int(m.group(2))) >= MIN_CMAKE


def _pip_z3_dir(venv: Path) -> Path:
    hits = sorted(venv.glob("lib/python3*/site-packages/z3"))
    if not hits:
        raise ToolchainError("z3-solver from pip not found in the tools venv")
    return hits[0]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text)


def _minutes(seconds: float) -> str:
    m, sec = divmod(int(seconds), 60)
    return f"{m}m{sec:02d}s"


def build_from_sources(s: Settings, origin: str, tofino: bool = False) -> Found:
    prefix = s.tofino_prefix if tofino else s.prefix
    tools = ("p4c",) if tofino else tuple(BMV2_TOOLS)
    if (prefix / MANIFEST).exists():
        done = from_prefix(prefix, tools)
        if done is None:
            raise ToolchainError(f"{prefix} holds a manifest but not {', '.join(tools)}; remove it")
        say(f"{prefix} already holds a finished build")
        return done
    make_writable_dir(prefix)
    make_writable_dir(s.workdir)
    b = Builder(s, origin, prefix)
    source = f"local sources in {s.sources}" if origin == "sources" else s.git_base
    say(f"building from {source} into {prefix}; build directory {b.work}")
    packages = BUILD_PACKAGES + (TOFINO_BUILD_PACKAGES if tofino else ())
    install_debian_packages(packages, s)
    if tofino:
        stages = [("p4c-tofino", f"{PINS['p4lang/p4c']} tofino {prefix}", b.build_p4c_tofino)]
    else:
        stages = [
            ("PI", f"{PINS['p4lang/PI']} {prefix}", b.build_pi),
            ("BMv2", f"{PINS['p4lang/behavioral-model']} {PINS['p4lang/PI']} {prefix}",
             b.build_bmv2),
            ("p4c", f"{PINS['p4lang/p4c']} {prefix}", b.build_p4c),
        ]  # fmt: skip
    for i, (name, key, body) in enumerate(stages, 1):
        b.stage(name, key, i, len(stages), body)
    write_manifest(prefix, tofino)
    found = from_prefix(prefix, tools)
    if found is None:
        raise ToolchainError(f"build finished but {prefix}/bin lacks {' or '.join(tools)}")
    say(f"built in {b._clock()}: {', '.join(found.tools.values())}")
    return found


def write_manifest(prefix: Path, tofino: bool) -> dict[str, Any]:
    gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=False)
    pins = (
        dict(PINS)
        if not tofino
        else {**{k: PINS[k] for k in TOFINO_SOURCES if k in PINS}, **TOFINO_PINS}
    )
    manifest: dict[str, Any] = {
        "prefix": str(prefix),
        "built_on": f"{_os_name()} {platform.machine()}, gcc {gcc.stdout.strip()}",
        "revisions": pins,
        "backends": ["tofino"] if tofino else ["bmv2", "p4test"],
        "patches": [f"ir/visitor.cpp: {GCC12_BAD} -> {GCC12_GOOD} (GCC 12)"]
        + ([f"barefoot.py checkAndRunCmd: {TOFINO_DRIVER_GOOD}"] if tofino else []),
        "links": {},
        "debian_runtime_packages": runtime_packages(prefix),
    }
    (prefix / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.system()
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)', text, re.MULTILINE)
    return m.group(1) if m else platform.system()


def _usrmerge_variants(path: str) -> set[str]:
    out = set()
    for p in (path, os.path.realpath(path)):
        out.add(p)
        out.add(p[4:] if p.startswith("/usr/lib/") else "/usr" + p if p.startswith("/lib/") else p)
    return out


def runtime_packages(prefix: Path) -> list[str]:
    """The Debian packages owning the shared libraries the prefix's binaries load
    (ldd, then dpkg -S), plus cpp and python3, which the p4c driver runs."""
    libs: set[str] = set()
    for f in [*prefix.glob("bin/*"), *prefix.glob("lib/*.so*")]:
        if not f.is_file() or f.is_symlink():
            continue
        ldd = subprocess.run(["ldd", str(f)], capture_output=True, text=True, check=False)
        for m in re.finditer(r"=>\s+(/\S+)", ldd.stdout):
            if not m.group(1).startswith(str(prefix)):
                libs.update(_usrmerge_variants(m.group(1)))
    packages = {"cpp", "python3"}
    if libs and shutil.which("dpkg"):
        # dpkg knows each file under one spelling (/lib or /usr/lib); ask for all of them.
        owners = subprocess.run(
            ["dpkg", "-S", *sorted(libs)], capture_output=True, text=True, check=False
        )
        for line in owners.stdout.splitlines():
            for pkg in line.split(":", 1)[0].split(","):
                pkg = pkg.strip()
                if pkg and not pkg.startswith(("libc6", "libgcc-s1", "libstdc++6")):
                    packages.add(pkg)
    return sorted(packages)


# ------------------------------------------------------------------------------------
# Packing an installed prefix (make toolchain-archive)


def pack_archive(prefix: Path, output: Path) -> str:
    """A .tar.xz of the prefix's contents with the manifest first; returns its sha256
    and writes `<output>.sha256` beside it."""
    manifest_path = prefix / MANIFEST
    if not manifest_path.is_file():
        raise ToolchainError(f"{prefix} has no {MANIFEST}: not a toolchain this script installed")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("prefix") != str(prefix):
        raise ToolchainError(
            f"{manifest_path} records prefix {manifest.get('prefix')}, not {prefix}"
        )
    for field in ("revisions", "debian_runtime_packages"):
        if field not in manifest:
            raise ToolchainError(f"{manifest_path} lacks '{field}'")
    entries = sorted(
        p.name for p in prefix.iterdir() if p.name not in (MANIFEST, ".p4vtep-archive-sha256")
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".part")
    with partial.open("wb") as out:
        tar = subprocess.Popen(
            ["tar", "-C", str(prefix), "--owner=0", "--group=0", "--numeric-owner", "-cf", "-",
             MANIFEST, *entries],
            stdout=subprocess.PIPE,
        )  # fmt: skip
        assert tar.stdout is not None
        xz = subprocess.run(["xz", "-T0", "-6", "-c"], stdin=tar.stdout, stdout=out, check=False)
        tar.stdout.close()
        if tar.wait() != 0 or xz.returncode != 0:
            partial.unlink(missing_ok=True)
            raise ToolchainError(f"packing {prefix} failed")
    partial.rename(output)
    digest = sha256_of(output)
    output.with_name(output.name + ".sha256").write_text(f"{digest}  {output.name}\n")
    return digest


def default_archive_name(tofino: bool) -> str:
    os_id = version = ""
    try:
        text = Path("/etc/os-release").read_text()
        os_id = re.search(r"^ID=\"?(\w+)", text, re.MULTILINE).group(1)  # type: ignore[union-attr]
        version = re.search(r'^VERSION_ID="?([\w.]+)', text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    except (OSError, AttributeError):
        os_id = platform.system().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"p4-toolchain-{'tofino' if tofino else 'bmv2'}-{os_id}{version}-{arch}.tar.xz"


# ------------------------------------------------------------------------------------
# Commands


def ensure(s: Settings, env: Mapping[str, str]) -> Found | None:
    plan = plan_tofino(s, env) if s.tofino else plan_bmv2(s, env)
    what = "Tofino compiler" if s.tofino else "P4 toolchain"
    if plan.kind == "found":
        assert plan.found is not None
        found = plan.found
    elif plan.kind == "archive":
        assert plan.archive is not None
        source = f" ({plan.detail})" if plan.detail else ""
        say(f"{what} from archive {plan.archive}{source}")
        sha = s.tofino_archive_sha256 if s.tofino else s.archive_sha256
        tools = ("p4c",) if s.tofino else tuple(BMV2_TOOLS)
        found = unpack_archive(plan.archive, sha, s, tools)
        if s.tofino:
            found = Found({TOFINO_LINK: found.tools["p4c"]}, found.how)
    elif plan.kind in ("sources", "network"):
        found = build_from_sources(s, plan.kind, tofino=s.tofino)
        if s.tofino:
            found = Found({TOFINO_LINK: found.tools["p4c"]}, found.how)
    else:
        if s.tofino:
            say(f"no Tofino compiler: {plan.detail}; set P4VTEP_TOFINO_ARCHIVE or P4VTEP_SOURCES")
        else:
            say(NOTHING_FOUND.format(why=plan.detail))
        return None
    if s.tofino and s.make_links:
        link_tofino(Path(found.tools[TOFINO_LINK]), s.link_dir)
    say(f"{what} {found.how}: " + ", ".join(f"{t}={p}" for t, p in sorted(found.tools.items())))
    return found


def link_tofino(p4c: Path, bindir: Path) -> None:
    """p4c-tofino -> the Tofino p4c (its default target is tofino, so it is never `p4c`)."""
    link = bindir / TOFINO_LINK
    if link.resolve() == p4c.resolve():
        return
    _make_links(p4c.parent.parent, {str(link): str(p4c.relative_to(p4c.parent.parent))})


def locate_env(s: Settings, env: Mapping[str, str]) -> list[str]:
    """VAR=path lines for what is already usable, including an archive's prefix that
    an earlier `ensure` unpacked. No side effects."""
    lines: list[str] = []
    try:
        found = from_path_or_env(env) or from_prefix(s.prefix)
    except ToolchainError:
        found = None
    archive = s.archive or team_archive(s.team_cache, "bmv2")
    if found is None and archive:
        found = from_prefix(_unpacked_prefix(archive, s) or s.prefix)
    if found:
        lines += found.env_lines()
    try:
        tofino = tofino_from_path_or_prefix(env, s.tofino_prefix)
    except ToolchainError:
        tofino = None
    archive = s.tofino_archive or team_archive(s.team_cache, "tofino")
    if tofino is None and archive:
        tofino_prefix = _unpacked_prefix(archive, s)
        if tofino_prefix and from_prefix(tofino_prefix, ("p4c",)):
            tofino = Found({TOFINO_LINK: str(tofino_prefix / "bin" / "p4c")}, "archive")
    if tofino:
        lines += tofino.env_lines()
    return lines


def _unpacked_prefix(archive: str, s: Settings) -> Path | None:
    parsed = urllib.parse.urlparse(archive)
    if parsed.scheme in ("", "file"):
        path = Path(parsed.path if parsed.scheme else archive)
    else:  # a URL: the copy fetch_archive downloaded
        path = s.workdir / "downloads" / Path(parsed.path).name
    if not path.is_file():
        return None
    try:
        return archive_prefix(path, s.workdir)
    except (ToolchainError, tarfile.TarError, OSError, ValueError):
        return None


def _settings(args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    return Settings.from_env(
        env,
        prefix=Path(args.prefix) if args.prefix else None,
        team_cache=Path(args.team_cache).resolve() if args.team_cache else None,
        tofino=args.tofino or None,
        install_packages=False if args.no_packages else None,
    )


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="ensure",
                        choices=["ensure", "env", "plan", "build", "archive"])  # fmt: skip
    parser.add_argument("--prefix", help=f"own install prefix (default {DEFAULT_PREFIX})")
    parser.add_argument("--team-cache", help="directory holding prebuilt archives")
    parser.add_argument("--tofino", action="store_true", help="the Tofino compiler instead")
    parser.add_argument("--no-packages", action="store_true", help="never run apt-get")
    parser.add_argument("--output", help="archive: output file")
    args = parser.parse_args(argv)
    try:
        s = _settings(args, env)
        if args.command == "env":
            print(" ".join(locate_env(s, env)))
        elif args.command == "plan":
            plan = plan_tofino(s, env) if s.tofino else plan_bmv2(s, env)
            print(plan.kind, plan.archive or plan.detail or (plan.found.how if plan.found else ""))
        elif args.command == "build":
            origin = "sources" if s.sources else "network"
            build_from_sources(s, origin, tofino=s.tofino)
        elif args.command == "archive":
            prefix = s.tofino_prefix if s.tofino else s.prefix
            if not args.prefix and not (prefix / MANIFEST).is_file():
                found = from_path_or_env(env)
                if found and not s.tofino:
                    prefix = Path(found.tools["p4c"]).resolve().parent.parent
            output = Path(args.output or default_archive_name(s.tofino)).resolve()
            say(f"packing {prefix} into {output}")
            digest = pack_archive(prefix, output)
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
