"""What the resolver may use and where it writes: one frozen record built from the
environment, so that tests hand it temporary directories and fakes."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

MANIFEST = "p4vtep-toolchain.json"
DEFAULT_PREFIX = Path("/opt/p4vtep-toolchain")
DEFAULT_TOFINO_PREFIX = Path("/opt/p4vtep-toolchain-tofino")
# How long path 4 waits for upstream's repository before giving up (issue: ~10 s).
NETWORK_TIMEOUT_S = 10.0
# The binaries p4vtep runs, and the variable that names each; p4c finds p4c-bm2-ss
# and p4test next to itself.
BMV2_TOOLS = {"p4c": "P4C", "simple_switch_grpc": "SIMPLE_SWITCH_GRPC"}
TOFINO_LINK = "p4c-tofino"
TOOL_VARIABLES = {**BMV2_TOOLS, TOFINO_LINK: "P4C_TOFINO"}
# Upstream's package repository (the openSUSE Build Service project home:p4lang, as
# p4c's and BMv2's READMEs give it); P4VTEP_PACKAGES_BASE points at a mirror.
UPSTREAM_PACKAGES_BASE = "https://download.opensuse.org/repositories/home:/p4lang"


class ToolchainError(Exception):
    """A clear, user-facing failure (bad input, a refused archive); nothing half-done
    is left in use."""


def say(msg: str) -> None:
    print(f"[toolchain] {msg}", flush=True)


@dataclasses.dataclass(frozen=True)
class Settings:
    prefix: Path = DEFAULT_PREFIX
    tofino_prefix: Path = DEFAULT_TOFINO_PREFIX
    archive: str | None = None
    archive_sha256: str | None = None
    tofino_archive: str | None = None
    tofino_archive_sha256: str | None = None
    workdir: Path = Path.home() / ".cache" / "p4vtep-toolchain"
    network_timeout: float = NETWORK_TIMEOUT_S
    tofino: bool = False
    install_packages: bool = True  # apt-get for an archive's runtime packages
    make_links: bool = True  # create the links an archive's manifest records
    link_dir: Path = Path("/usr/local/bin")  # where p4c-tofino is linked
    # Path 4: upstream's packages. Every system location is a field so that tests
    # run it against a fake os-release, a fake apt-get and a local repository.
    use_packages: bool = True
    packages_base: str = UPSTREAM_PACKAGES_BASE
    packages_dist: str | None = None  # force a repository directory, e.g. Debian_12
    os_release: Path = Path("/etc/os-release")
    apt_get: str = "apt-get"
    apt_sources_dir: Path = Path("/etc/apt/sources.list.d")
    apt_keyring_dir: Path = Path("/etc/apt/keyrings")

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> Settings:
        def path(var: str) -> Path | None:
            return Path(env[var]) if env.get(var) else None

        values: dict[str, object] = {
            "prefix": path("P4VTEP_TOOLCHAIN_PREFIX"),
            "tofino_prefix": path("P4VTEP_TOFINO_PREFIX"),
            "archive": env.get("P4VTEP_TOOLCHAIN_ARCHIVE") or None,
            "archive_sha256": env.get("P4VTEP_TOOLCHAIN_SHA256") or None,
            "tofino_archive": env.get("P4VTEP_TOFINO_ARCHIVE") or None,
            "tofino_archive_sha256": env.get("P4VTEP_TOFINO_SHA256") or None,
            "workdir": path("P4VTEP_TOOLCHAIN_WORKDIR"),
            "network_timeout": (
                float(env["P4VTEP_NETWORK_TIMEOUT"]) if env.get("P4VTEP_NETWORK_TIMEOUT") else None
            ),
            "link_dir": path("P4VTEP_LINK_DIR"),
            "use_packages": False if env.get("P4VTEP_NO_PACKAGES") else None,
            "packages_base": env.get("P4VTEP_PACKAGES_BASE") or None,
            "packages_dist": env.get("P4VTEP_PACKAGES_DIST") or None,
        }
        # An override of None leaves the environment's value (the CLI passes its
        # unset flags as None: --no-packages absent must not undo P4VTEP_NO_PACKAGES).
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**{k: v for k, v in values.items() if v is not None})  # type: ignore[arg-type]


def executable(path: str | Path) -> bool:
    p = Path(path)
    return p.is_file() and os.access(p, os.X_OK)
