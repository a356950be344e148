"""The host: privilege, directories, Debian packages, and which packages a binary's
shared libraries come from."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from .settings import Settings, ToolchainError, say

# Always there on a Debian system: never worth recording as a runtime dependency.
_BASE_LIBRARIES = ("libc6", "libgcc-s1", "libstdc++6")


def sudo() -> list[str]:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        return ["sudo"]
    raise ToolchainError("needs root (or sudo) to install packages or write the prefix")


def make_writable_dir(path: Path) -> None:
    """Create `path` owned by the current user (with sudo when its parent is not ours)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        subprocess.run(
            [*sudo(), "install", "-d", "-o", str(os.getuid()), "-g", str(os.getgid()), str(path)],
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
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["update", "-q"], ["install", "-y", "-q", *missing]):
        subprocess.run([*sudo(), s.apt_get, *args], check=True, env=env, stdout=subprocess.DEVNULL)


def _usrmerge_variants(path: str) -> set[str]:
    """dpkg knows each file under one spelling (/lib or /usr/lib): ask for both."""
    out = set()
    for p in (path, os.path.realpath(path)):
        out.add(p)
        out.add(p[4:] if p.startswith("/usr/lib/") else "/usr" + p if p.startswith("/lib/") else p)
    return out


def shared_libraries(binaries: Iterable[Path]) -> set[str]:
    """Every shared library the binaries load (ldd resolves the whole closure);
    scripts and other files that are not dynamic executables contribute nothing."""
    libs: set[str] = set()
    for f in binaries:
        ldd = subprocess.run(["ldd", str(f)], capture_output=True, text=True, check=False)
        libs.update(m.group(1) for m in re.finditer(r"=>\s+(/\S+)", ldd.stdout))
    return libs


def package_owners(files: Iterable[str]) -> dict[str, str]:
    """file -> the Debian package that owns it (files no package owns are absent)."""
    wanted = {v: f for f in files for v in _usrmerge_variants(f)}
    if not wanted or shutil.which("dpkg") is None:
        return {}
    run = subprocess.run(
        ["dpkg", "-S", *sorted(wanted)], capture_output=True, text=True, check=False
    )
    owners: dict[str, str] = {}
    for line in run.stdout.splitlines():
        if ": " not in line:
            continue
        pkgs, path = line.split(": ", 1)
        if path.strip() in wanted:
            pkg = pkgs.split(",")[0].strip().split(":")[0]  # drop an architecture qualifier
            owners[wanted[path.strip()]] = pkg
    return owners


def runtime_packages(owners: Iterable[str]) -> list[str]:
    """The packages to install on another machine: the owners of the libraries the
    toolchain loads, less the base libraries, plus cpp and python3 (the p4c driver)."""
    return sorted({"cpp", "python3", *(p for p in owners if not p.startswith(_BASE_LIBRARIES))})
