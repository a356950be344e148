"""Path 3: an archive the user names (unpacked into the prefix its manifest records),
and `make toolchain-archive`, which packs an installed toolchain for the other
machines of a team, whatever installed it."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from . import system, versions
from .found import Found, from_prefix
from .settings import MANIFEST, Settings, ToolchainError, say

_STAMP = ".p4vtep-archive-sha256"


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


def fetch(location: str, cache: Path, timeout: float) -> Path:
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


def _escapes(p: PurePosixPath) -> bool:
    return p.is_absolute() or os.path.normpath(str(p)).split("/")[0] == ".."


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


def read_manifest(archive: Path) -> dict[str, Any]:
    """The archive's p4vtep-toolchain.json (packing writes it first: cheap to read)."""
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
    `env` need not decompress a large archive to read its manifest again."""
    index_path = workdir / "archive-prefixes.json"
    st = archive.stat()
    key = f"{archive.resolve()}|{st.st_size}|{int(st.st_mtime)}"
    try:
        index: dict[str, str] = json.loads(index_path.read_text())
    except (OSError, ValueError):
        index = {}
    if key not in index or known is not None:
        index[key] = known or read_manifest(archive)["prefix"]
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            index_path.write_text(json.dumps(index, indent=1) + "\n")
        except OSError:
            pass  # only a cache
    return Path(index[key])


def unpacked_prefix(archive: str, s: Settings) -> Path | None:
    """Where an archive named by path or URL was (or would be) unpacked; no side effects
    beyond the prefix cache."""
    parsed = urllib.parse.urlparse(archive)
    if parsed.scheme in ("", "file"):
        path = Path(parsed.path if parsed.scheme else archive)
    else:  # a URL: the copy `fetch` downloaded
        path = s.workdir / "downloads" / Path(parsed.path).name
    if not path.is_file():
        return None
    try:
        return archive_prefix(path, s.workdir)
    except (ToolchainError, tarfile.TarError, OSError, ValueError):
        return None


def unpack(location: str, sha256: str | None, s: Settings, tools: Sequence[str]) -> Found:
    """Verify, unpack into the prefix the manifest names, install runtime packages, check."""
    archive = fetch(location, s.workdir, s.network_timeout)
    want = expected_sha256(archive, sha256)
    if want:
        got = sha256_of(archive)
        if got != want:
            raise ToolchainError(
                f"{archive}: sha256 {got} does not match the expected {want}; nothing unpacked"
            )
    manifest = read_manifest(archive)
    prefix = archive_prefix(archive, s.workdir, known=manifest["prefix"])
    stamp = prefix / _STAMP
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
    system.install_debian_packages(manifest.get("debian_runtime_packages", []), s)
    if s.make_links:  # the manifest's links, by name, in our link directory
        links = manifest.get("links", {})
        make_links(prefix, {str(s.link_dir / Path(k).name): v for k, v in links.items()})
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
    system.make_writable_dir(prefix)
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


def make_links(prefix: Path, links: Mapping[str, str]) -> None:
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
# Packing (make toolchain-archive)


def _is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def _with_link_targets(path: Path, prefix: Path) -> set[Path]:
    """A file and, when it is a symlink chain inside the prefix, every link and target."""
    out = {path}
    while path.is_symlink():
        path = (path.parent / os.readlink(path)).absolute()
        if not path.is_relative_to(prefix):
            break
        out.add(path)
    return out


def toolchain_files(tools: Mapping[str, str]) -> tuple[Path, list[str], list[str]]:
    """What makes up an installed toolchain, found from its binaries rather than from
    how it was installed: (prefix, files relative to it, Debian runtime packages).

    Files: the tools, p4c's companions in its directory (the backends p4c-* and
    p4test it runs), its share/p4c (p4include and the driver's configuration),
    BMv2's generated ``sswitch_runtime`` Python classes (queue rates), and
    every shared library the binaries load from inside the prefix that no Debian
    package of the distribution provides (a p4lang-* package's own libraries are
    packed). The other libraries' packages are what unpacking must install."""
    resolved = {t: Path(p).resolve() for t, p in tools.items()}
    prefixes = {p.parent.parent for p in resolved.values()}
    if len(prefixes) != 1:
        where = ", ".join(f"{t} in {p.parent.parent}" for t, p in sorted(resolved.items()))
        raise ToolchainError(f"the tools live under different prefixes ({where}): pack one")
    prefix = prefixes.pop()
    for tool, path in resolved.items():
        if path.name != tool:
            raise ToolchainError(f"{tools[tool]} is {path}: an archive needs it as bin/{tool}")
    files: set[Path] = set(resolved.values())
    if "p4c" in resolved:
        bindir = resolved["p4c"].parent
        files |= {f for f in bindir.iterdir() if f.name.startswith(("p4c-", "p4test"))}
        share = prefix / "share" / "p4c"
        if share.is_dir():
            files |= {f for f in share.rglob("*") if f.is_file() or f.is_symlink()}
    if "simple_switch_grpc" in resolved:
        # BMv2's generated Thrift classes for its queue settings (docs/toolchain.md)
        for package in prefix.glob("lib/python3*/*-packages/sswitch_runtime"):
            files |= {f for f in package.glob("*.py") if f.is_file()}
    binaries = [f for f in files if f.is_file() and _is_elf(f)]
    libraries = system.shared_libraries(binaries)
    owners = system.package_owners(libraries)
    packages: set[str] = set()
    for lib in libraries:
        owner = owners.get(lib)
        if Path(lib).is_relative_to(prefix) and (owner is None or owner.startswith("p4lang")):
            files |= _with_link_targets(Path(lib), prefix)
        elif owner is not None:
            packages.add(owner)
    relative = sorted(str(f.relative_to(prefix)) for f in files if f.is_relative_to(prefix))
    return prefix, relative, system.runtime_packages(packages)


def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.system()
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)', text, re.MULTILINE)
    return m.group(1) if m else platform.system()


def pack(tools: Mapping[str, str], output: Path) -> str:
    """A .tar.xz of the toolchain with a manifest as its first member (its prefix, the
    versions the tools report, the Debian runtime packages); returns the sha256 and
    writes `<output>.sha256` beside it."""
    prefix, files, packages = toolchain_files(tools)
    manifest = {
        "prefix": str(prefix),
        "versions": {t: versions.reported(p) for t, p in sorted(tools.items())},
        "packed_on": f"{_os_name()} {platform.machine()}",
        "links": {},
        "debian_runtime_packages": packages,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".part")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        listing = Path(tmp) / "files"
        listing.write_text("\0".join(files) + "\0")
        with partial.open("wb") as out:
            tar = subprocess.Popen(
                ["tar", "--owner=0", "--group=0", "--numeric-owner", "--no-recursion", "-cf", "-",
                 "-C", tmp, MANIFEST, "-C", str(prefix), "--null", "-T", str(listing)],
                stdout=subprocess.PIPE,
            )  # fmt: skip
            assert tar.stdout is not None
            xz = subprocess.run(
                ["xz", "-T0", "-6", "-c"], stdin=tar.stdout, stdout=out, check=False
            )
            tar.stdout.close()
            if tar.wait() != 0 or xz.returncode != 0:
                partial.unlink(missing_ok=True)
                raise ToolchainError(f"packing {prefix} failed")
    partial.rename(output)
    digest = sha256_of(output)
    output.with_name(output.name + ".sha256").write_text(f"{digest}  {output.name}\n")
    return digest


def default_name(tofino: bool) -> str:
    os_id = version = ""
    try:
        text = Path("/etc/os-release").read_text()
        os_id = re.search(r"^ID=\"?(\w+)", text, re.MULTILINE).group(1)  # type: ignore[union-attr]
        version = re.search(r'^VERSION_ID="?([\w.]+)', text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    except (OSError, AttributeError):
        os_id = platform.system().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"p4-toolchain-{'tofino' if tofino else 'bmv2'}-{os_id}{version}-{arch}.tar.xz"
