"""Path 4: upstream's published binary packages, p4lang-p4c and p4lang-bmv2 (which
carries simple_switch_grpc), from upstream's signed apt repository, on the
distributions upstream publishes them for.

Never unsigned: the repository's key is fetched first and the source names it with
`signed-by`. Never hanging: when the repository does not answer within the
settings' network timeout (10 s) the path gives up, and a failure at any step
removes the source and key it added, so the machine is as it was."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import system
from .found import Found, from_path_or_env, lacking
from .settings import BMV2_TOOLS, Settings, ToolchainError, say

# The package that carries each tool; only those of the missing tools are installed.
PACKAGE_OF = {"p4c": "p4lang-p4c", "simple_switch_grpc": "p4lang-bmv2"}
# Where upstream publishes them (p4c's and BMv2's READMEs, "Installing packaged
# versions"): Ubuntu 20.04 and newer, Debian 11. A repository directory per release.
_MIN_UBUNTU = (20, 4)
_DEBIAN = ("11",)
SOURCE_NAME = "p4vtep-p4lang"
_KEY_HEADER = b"-----BEGIN PGP PUBLIC KEY BLOCK-----"
APT_UPDATE_TIMEOUT_S = 300.0
APT_INSTALL_TIMEOUT_S = 1800.0


def read_os_release(path: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
        if m:
            fields[m.group(1)] = m.group(2).strip().strip("'\"")
    return fields


def repository_dir(os_release: Mapping[str, str]) -> str | None:
    """Upstream's repository directory for this distribution, or None when upstream
    publishes no packages for it."""
    dist, version = os_release.get("ID", ""), os_release.get("VERSION_ID", "")
    if dist == "ubuntu" and re.fullmatch(r"\d+\.\d+", version):
        major, minor = (int(x) for x in version.split("."))
        return f"xUbuntu_{version}" if (major, minor) >= _MIN_UBUNTU else None
    if dist == "debian" and version in _DEBIAN:
        return f"Debian_{version}"
    return None


def _fetch_within(url: str, seconds: float) -> bytes:
    """GET `url`, giving up after `seconds` in all, however the server behaves (a
    socket timeout alone restarts with each byte a slow server trickles)."""
    result: list[bytes] = []
    error: list[BaseException] = []

    def get() -> None:
        try:
            with urllib.request.urlopen(url, timeout=seconds) as r:
                result.append(r.read(1 << 20))
        except (OSError, ValueError) as e:
            error.append(e)

    worker = threading.Thread(target=get, daemon=True)
    worker.start()
    worker.join(seconds)
    if result:
        return result[0]
    reason = str(error[0]) if error else "no answer"
    raise ToolchainError(f"{url}: {reason} (gave up after {seconds:g} s at most)")


class _Source:
    """The apt source and key this path adds, removed again if the install fails."""

    def __init__(self, s: Settings, url: str) -> None:
        self.key = s.apt_keyring_dir / f"{SOURCE_NAME}.asc"
        self.list = s.apt_sources_dir / f"{SOURCE_NAME}.list"
        self.line = f"deb [signed-by={self.key}] {url}/ /\n"

    def add(self, key: bytes) -> None:
        for d in (self.key.parent, self.list.parent):
            system.make_writable_dir(d)
        self.key.write_bytes(key)
        os.chmod(self.key, 0o644)  # apt reads keys as the _apt user
        self.list.write_text(self.line)

    def remove(self) -> None:
        self.key.unlink(missing_ok=True)
        self.list.unlink(missing_ok=True)


def _apt(s: Settings, args: list[str], timeout: float) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        run = subprocess.run(
            [*system.sudo(), s.apt_get, *args],
            env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        raise ToolchainError(f"{s.apt_get} {args[0]} did not finish in {timeout:g} s") from e
    if run.returncode != 0:
        tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-5:])
        raise ToolchainError(f"{s.apt_get} {' '.join(args)} failed:\n{tail}")


def install(
    s: Settings, env: Mapping[str, str], tools: Sequence[str] = tuple(BMV2_TOOLS)
) -> Found | None:
    """Install upstream's packages of `tools` when this distribution has them; None
    (with one line saying why) when it has not or the repository cannot be reached
    in time."""
    if not s.use_packages or not tools:
        return None
    wanted = [PACKAGE_OF[t] for t in tools]
    try:
        os_release = read_os_release(s.os_release)
    except OSError:
        say(f"packages: no {s.os_release}; not a distribution upstream publishes for")
        return None
    directory = s.packages_dist or repository_dir(os_release)
    name = os_release.get("PRETTY_NAME", os_release.get("ID", "this system"))
    if directory is None:
        say(f"packages: upstream publishes p4lang packages for Ubuntu 20.04+ and Debian 11, "
            f"not for {name}")  # fmt: skip
        return None
    url = f"{s.packages_base.rstrip('/')}/{directory}"
    started = time.monotonic()
    try:
        key = _fetch_within(f"{url}/Release.key", s.network_timeout)
    except ToolchainError as e:
        say(f"packages: upstream's repository not reachable: {e}")
        return None
    if not key.lstrip().startswith(_KEY_HEADER):
        say(f"packages: {url}/Release.key is not an OpenPGP public key; not adding the repository")
        return None
    say(f"packages: {url} answered in {time.monotonic() - started:.1f} s; installing "
        + " ".join(wanted))  # fmt: skip
    source = _Source(s, url)
    source.add(key)
    try:
        # Only this source is refreshed: the rest of the machine's apt state is not ours.
        _apt(s, ["update", "-q", "-o", f"Dir::Etc::sourcelist={source.list}",
                 "-o", "Dir::Etc::sourceparts=-", "-o", "APT::Get::List-Cleanup=0",
                 "-o", f"Acquire::http::Timeout={s.network_timeout:g}"],
             APT_UPDATE_TIMEOUT_S)  # fmt: skip
        _apt(s, ["install", "-y", "-q", *wanted], APT_INSTALL_TIMEOUT_S)
    except ToolchainError as e:
        source.remove()
        say(f"packages: {e}; the repository was removed again")
        return None
    found = from_path_or_env({**env, "PATH": env.get("PATH", "") + ":/usr/bin:/usr/local/bin"})
    absent = lacking(found, tools)
    if found is None or absent:
        raise ToolchainError(
            f"{' and '.join(wanted)} installed, but {' or '.join(absent)} is not on PATH"
        )
    return Found({t: found.tools[t] for t in tools}, f"from upstream's packages ({url})")
