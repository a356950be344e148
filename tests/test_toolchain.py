"""toolchain/p4toolchain: the order in which the P4 toolchain is found (PATH and
variables, the project's prefix, a named archive, upstream's packages), packing an
installed toolchain, the versions it reports, and what a user sees without one.

Stub binaries, fake archives unpacked into temporary prefixes, a fake os-release, a
fake apt-get and a repository served on loopback: no network, no root, nothing
installed on the machine. The project builds nothing (issue 27): no test here does."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4toolchain import archive as tca
from p4toolchain import cli, packages, versions
from p4toolchain.settings import MANIFEST, NETWORK_TIMEOUT_S, Settings, ToolchainError

REPO = Path(__file__).resolve().parents[1]
# A PATH with the usual system tools but none of the P4 ones (they live in /usr/local/bin
# or a prefix on the project's machines).
BARE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
UNREACHABLE = "http://127.0.0.1:9"  # discard port: connection refused at once


def stub(path: Path, text: str, version: str = "") -> Path:
    """An executable that prints `text`, or `version` when asked for --version."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{version}"; exit 0; fi\necho \'{text}\'\n'
    )
    path.chmod(0o755)
    return path


def stub_prefix(prefix: Path, manifest: bool = True, packages: list[str] | None = None) -> Path:
    stub(prefix / "bin" / "p4c", f"p4c stub in {prefix}", "p4c 1.2.5.16 (SHA: 6b7ec98e7)")
    stub(prefix / "bin" / "simple_switch_grpc", f"simple_switch_grpc stub in {prefix}", "1.15.5")
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "lib" / "libstub.so.0.0.0").write_bytes(b"\x7fELF stub")
    (prefix / "lib" / "libstub.so.0").symlink_to("libstub.so.0.0.0")
    if manifest:
        (prefix / MANIFEST).write_text(
            json.dumps(
                {
                    "prefix": str(prefix),
                    "versions": {"p4c": "1.2.5.16", "simple_switch_grpc": "1.15.5"},
                    "links": {},
                    "debian_runtime_packages": packages if packages is not None else ["python3"],
                }
            )
        )
    return prefix


def fake_archive(tmp: Path, prefix: Path, name: str = "fake.tar.xz", **kw: object) -> Path:
    """An archive as another machine would make it: the manifest, bin/, lib/."""
    content = stub_prefix(tmp / "content", **kw)  # type: ignore[arg-type]
    manifest = json.loads((content / MANIFEST).read_text())
    manifest["prefix"] = str(prefix)
    (content / MANIFEST).write_text(json.dumps(manifest))
    archive = tmp / name
    with tarfile.open(archive, "w:xz") as tf:
        for entry in (MANIFEST, "bin", "lib"):
            tf.add(content / entry, arcname=entry)
    return archive


def settings(tmp: Path, **kw: object) -> Settings:
    base: dict[str, object] = {
        "prefix": tmp / "own-prefix",
        "tofino_prefix": tmp / "own-tofino",
        "workdir": tmp / "work",
        "network_timeout": 2.0,
        "install_packages": False,
        "make_links": False,
        "use_packages": False,
        "os_release": tmp / "no-os-release",
    }
    base.update(kw)
    return Settings(**base)  # type: ignore[arg-type]


def bare_env(**extra: str) -> dict[str, str]:
    return {"PATH": BARE_PATH, "HOME": os.environ.get("HOME", "/root"), **extra}


# --- 1. PATH and the P4C / SIMPLE_SWITCH_GRPC variables -----------------------------------


def test_tools_on_path_win_over_everything_else(tmp_path: Path) -> None:
    bindir = stub_prefix(tmp_path / "onpath", manifest=False) / "bin"
    stub_prefix(tmp_path / "own-prefix")
    s = settings(tmp_path, archive=str(tmp_path / "never-read.tar.xz"), use_packages=True)
    env = bare_env(PATH=f"{bindir}:{BARE_PATH}")
    assert cli.plan(s, env) == ("found", "on PATH")
    found = cli.ensure(s, env)
    assert found is not None
    assert found.tools == {
        "p4c": str(bindir / "p4c"),
        "simple_switch_grpc": str(bindir / "simple_switch_grpc"),
    }


def test_variables_name_the_tools(tmp_path: Path) -> None:
    a = stub(tmp_path / "a" / "my-p4c", "p4c")
    b = stub(tmp_path / "b" / "my-switch", "switch")
    env = bare_env(P4C=str(a), SIMPLE_SWITCH_GRPC=str(b))
    kind, how = cli.plan(settings(tmp_path), env)
    assert kind == "found"
    assert "P4C" in how
    assert "SIMPLE_SWITCH_GRPC" in how
    assert cli.locate_env(settings(tmp_path), env) == [f"P4C={a}", f"SIMPLE_SWITCH_GRPC={b}"]


def test_a_variable_naming_nothing_is_an_error(tmp_path: Path, capsys) -> None:
    env = bare_env(SIMPLE_SWITCH_GRPC=str(tmp_path / "nope"))
    with pytest.raises(ToolchainError, match=r"SIMPLE_SWITCH_GRPC=.*not an executable"):
        cli.plan(settings(tmp_path), env)
    env["P4VTEP_TOOLCHAIN_PREFIX"] = str(tmp_path / "p")
    assert cli.main(["plan"], env=env) == 1
    assert "not an executable" in capsys.readouterr().out


def test_one_tool_on_path_is_used_and_the_other_is_still_looked_for(tmp_path: Path) -> None:
    """Issue 41: each tool is found on its own. p4c alone on PATH is used (and passed
    on by `env`); nothing supplies simple_switch_grpc, so the plan for it is none."""
    bindir = tmp_path / "half" / "bin"
    p4c = stub(bindir / "p4c", "p4c only", "p4c 1.2.5.16")
    env = bare_env(PATH=f"{bindir}:{BARE_PATH}")
    assert cli.plan(settings(tmp_path), env) == ("none", "")
    found = cli.ensure(settings(tmp_path), env)
    assert found is not None
    assert found.tools == {"p4c": str(p4c)}
    assert cli.locate_env(settings(tmp_path), env) == [f"P4C={p4c}"]


def test_each_tool_says_where_it_came_from(tmp_path: Path, capsys) -> None:
    """P4C names one tool, PATH has the other: each line names its own origin."""
    p4c = stub(tmp_path / "named" / "my-p4c", "p4c", "p4c 1.2.5.16")
    switch = stub(tmp_path / "bin" / "simple_switch_grpc", "switch", "1.15.5")
    env = bare_env(PATH=f"{switch.parent}:{BARE_PATH}", P4C=str(p4c))
    found = cli.ensure(settings(tmp_path), env)
    assert found is not None
    assert found.how == "p4c named by P4C; simple_switch_grpc on PATH"
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"[toolchain] p4c: found named by P4C: {p4c}, version 1.2.5.16 (tested with 1.2.5.16)",
        f"[toolchain] simple_switch_grpc: found on PATH: {switch}, version 1.15.5 "
        "(tested with 1.15.5)",
    ]


def test_path_tool_wins_and_the_prefix_supplies_the_other(tmp_path: Path) -> None:
    bindir = tmp_path / "half" / "bin"
    switch = stub(bindir / "simple_switch_grpc", "switch", "1.15.5")
    prefix = stub_prefix(tmp_path / "own-prefix")
    found = cli.ensure(settings(tmp_path), bare_env(PATH=f"{bindir}:{BARE_PATH}"))
    assert found is not None
    assert found.tools == {"p4c": str(prefix / "bin" / "p4c"), "simple_switch_grpc": str(switch)}
    assert found.origin("p4c") == f"installed in {prefix}"
    assert found.origin("simple_switch_grpc") == "on PATH"


# --- 2. the project's prefix -------------------------------------------------------------------


def test_own_prefix_is_used_when_path_has_nothing(tmp_path: Path) -> None:
    prefix = stub_prefix(tmp_path / "own-prefix")
    found = cli.ensure(settings(tmp_path), bare_env())
    assert found is not None
    assert found.tools["simple_switch_grpc"] == str(prefix / "bin" / "simple_switch_grpc")
    assert found.how == f"installed in {prefix}"


def test_a_prefix_without_our_manifest_is_not_trusted(tmp_path: Path) -> None:
    stub_prefix(tmp_path / "own-prefix", manifest=False)
    assert cli.plan(settings(tmp_path), bare_env()) == ("none", "")


# --- 3. archives the user names ------------------------------------------------------------------


def test_fake_archive_is_unpacked_into_its_prefix_and_found(tmp_path: Path, capsys) -> None:
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    s = settings(tmp_path, archive=str(archive))
    assert cli.plan(s, bare_env()) == ("archive", str(archive))
    found = cli.ensure(s, bare_env())
    assert found is not None
    assert found.tools == {
        "p4c": str(target / "bin" / "p4c"),
        "simple_switch_grpc": str(target / "bin" / "simple_switch_grpc"),
    }
    out = subprocess.run(
        [found.tools["simple_switch_grpc"]], capture_output=True, text=True, check=False
    )
    assert out.stdout.strip() == f"simple_switch_grpc stub in {tmp_path / 'content'}"
    assert os.readlink(target / "lib" / "libstub.so.0") == "libstub.so.0.0.0"
    assert "unpacking" in capsys.readouterr().out
    # `env` (what make passes to the tests) now finds the unpacked prefix, without unpacking.
    env = bare_env()
    assert cli.locate_env(s, env) == [
        f"P4C={target / 'bin' / 'p4c'}",
        f"SIMPLE_SWITCH_GRPC={target / 'bin' / 'simple_switch_grpc'}",
    ]
    # A second run keeps what is there.
    mtime = (target / "bin" / "p4c").stat().st_mtime_ns
    assert cli.ensure(s, env) is not None
    assert "already unpacked" in capsys.readouterr().out
    assert (target / "bin" / "p4c").stat().st_mtime_ns == mtime


def test_archive_with_the_right_sha256(tmp_path: Path) -> None:
    archive = fake_archive(tmp_path, tmp_path / "opt" / "p4")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    s = settings(tmp_path, archive=str(archive), archive_sha256=digest.upper())
    assert cli.ensure(s, bare_env()) is not None


@pytest.mark.parametrize("how", ["variable", "sidecar file"])
def test_archive_with_a_wrong_sha256_is_refused_and_nothing_unpacked(
    tmp_path: Path, how: str
) -> None:
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    s = settings(tmp_path, archive=str(archive))
    if how == "variable":
        s = dataclasses.replace(s, archive_sha256="0" * 64)
    else:
        Path(f"{archive}.sha256").write_text("0" * 64 + "  fake.tar.xz\n")
    with pytest.raises(ToolchainError, match="does not match"):
        cli.ensure(s, bare_env())
    assert not target.exists()


def test_archive_without_manifest_is_refused(tmp_path: Path) -> None:
    content = stub_prefix(tmp_path / "content", manifest=False)
    archive = tmp_path / "plain.tar.xz"
    with tarfile.open(archive, "w:xz") as tf:
        tf.add(content / "bin", arcname="bin")
    with pytest.raises(ToolchainError, match=r"no top-level p4vtep-toolchain\.json"):
        cli.ensure(settings(tmp_path, archive=str(archive)), bare_env())


def test_archive_member_escaping_the_prefix_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    evil = tmp_path / "evil.tar.xz"
    with tarfile.open(archive) as src, tarfile.open(evil, "w:xz") as dst:
        for m in src.getmembers():
            dst.addfile(m, src.extractfile(m) if m.isreg() else None)
        link = tarfile.TarInfo("bin/escape")
        link.type = tarfile.SYMTYPE
        link.linkname = "../../../../etc/passwd"
        dst.addfile(link)
    with pytest.raises(ToolchainError, match="unsafe member 'bin/escape'"):
        cli.ensure(settings(tmp_path, archive=str(evil)), bare_env())
    assert not (target / "bin" / "p4c").exists()


def test_archive_missing_runtime_package_is_a_clear_error(tmp_path: Path) -> None:
    if not Path("/usr/bin/dpkg-query").exists():
        pytest.skip("dpkg-query missing: not Debian")
    archive = fake_archive(
        tmp_path, tmp_path / "opt" / "p4", packages=["python3", "p4vtep-no-such-package"]
    )
    with pytest.raises(ToolchainError, match="missing Debian packages: p4vtep-no-such-package"):
        cli.ensure(settings(tmp_path, archive=str(archive)), bare_env())


def test_tofino_archive_links_p4c_tofino_and_leaves_p4c_alone(tmp_path: Path) -> None:
    bindir = stub_prefix(tmp_path / "usr", manifest=False) / "bin"  # the bmv2 p4c on PATH
    target = tmp_path / "opt" / "p4-tofino"
    archive = fake_archive(tmp_path, target)
    s = settings(
        tmp_path, tofino=True, tofino_archive=str(archive), make_links=True, link_dir=bindir
    )
    env = bare_env(PATH=f"{bindir}:{BARE_PATH}")
    assert cli.plan(s, env) == ("archive", str(archive))
    found = cli.ensure(s, env)
    assert found is not None
    assert found.tools == {"p4c-tofino": str(target / "bin" / "p4c")}
    assert os.readlink(bindir / "p4c-tofino") == str(target / "bin" / "p4c")
    assert not (bindir / "p4c").is_symlink()  # the bmv2 p4c is not shadowed
    assert cli.plan(dataclasses.replace(s, tofino=False), env) == ("found", "on PATH")
    assert cli.plan(s, env) == ("found", "on PATH")
    # without the link on PATH, `env` still names it (make passes P4C_TOFINO on)
    (bindir / "p4c-tofino").unlink()
    assert f"P4C_TOFINO={target / 'bin' / 'p4c'}" in cli.locate_env(s, env)


def test_no_archive_is_used_unless_the_user_names_one(tmp_path: Path) -> None:
    """No default location: an archive lying in a team directory or the work
    directory is not picked up by itself."""
    (tmp_path / "shared" / "toolchain").mkdir(parents=True)
    fake_archive(tmp_path, tmp_path / "opt" / "p4", name="p4-toolchain-bmv2-x.tar.xz").rename(
        tmp_path / "shared" / "toolchain" / "p4-toolchain-bmv2-debian12-amd64.tar.xz"
    )
    s = settings(tmp_path, workdir=tmp_path / "shared" / "toolchain")
    assert cli.plan(s, bare_env()) == ("none", "")
    assert cli.ensure(s, bare_env()) is None
    assert not (tmp_path / "opt" / "p4").exists()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on loopback serving tmp_path/www; yields its base URL."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # (serve_forever polls for shutdown every poll_interval: 0.5 s by default)
    serve = functools.partial(server.serve_forever, poll_interval=0.01)
    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_archive_by_url_is_downloaded_once_and_found(tmp_path: Path, served: str) -> None:
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    archive.rename(tmp_path / "www" / archive.name)
    s = settings(tmp_path, archive=f"{served}/{archive.name}")
    found = cli.ensure(s, bare_env())
    assert found is not None
    assert found.tools["p4c"] == str(target / "bin" / "p4c")
    cached = tmp_path / "work" / "downloads" / archive.name
    assert cached.read_bytes() == (tmp_path / "www" / archive.name).read_bytes()
    (tmp_path / "www" / archive.name).unlink()  # the server no longer has it:
    # `env` still names the unpacked tools, from the cached copy
    assert f"P4C={target / 'bin' / 'p4c'}" in cli.locate_env(s, bare_env())


def test_archive_url_that_cannot_be_reached_fails_quickly(tmp_path: Path) -> None:
    s = settings(tmp_path, archive=f"{UNREACHABLE}/p4-toolchain.tar.xz")
    with pytest.raises(ToolchainError, match="cannot download"):
        cli.ensure(s, bare_env())


# --- packing an installed toolchain (make toolchain-archive) -------------------------------------


def test_packed_archive_unpacks_and_is_found(tmp_path: Path) -> None:
    prefix = stub_prefix(tmp_path / "opt" / "tc", manifest=False)  # e.g. on PATH, any installer
    stub(prefix / "bin" / "p4c-bm2-ss", "backend")
    (prefix / "share" / "p4c" / "p4include").mkdir(parents=True)
    (prefix / "share" / "p4c" / "p4include" / "core.p4").write_text("// core\n")
    stub(prefix / "bin" / "unrelated-tool", "not ours")
    tools = {t: str(prefix / "bin" / t) for t in ("p4c", "simple_switch_grpc")}
    archive = tmp_path / "out" / "tc.tar.xz"
    digest = tca.pack(tools, archive)
    assert digest == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert Path(f"{archive}.sha256").read_text().split() == [digest, "tc.tar.xz"]
    with tarfile.open(archive) as tf:
        names = tf.getnames()
    assert names[0] == MANIFEST  # first: cheap to read
    assert set(names) == {
        MANIFEST,
        "bin/p4c",
        "bin/simple_switch_grpc",
        "bin/p4c-bm2-ss",
        "share/p4c/p4include/core.p4",
    }
    manifest = tca.read_manifest(archive)
    assert manifest["prefix"] == str(prefix)
    assert manifest["versions"] == {"p4c": "1.2.5.16", "simple_switch_grpc": "1.15.5"}
    assert {"cpp", "python3"} <= set(manifest["debian_runtime_packages"])
    # another machine: the prefix is not there yet
    shutil.rmtree(prefix)
    found = cli.ensure(settings(tmp_path, archive=str(archive)), bare_env())
    assert found is not None
    assert found.tools["p4c"] == str(prefix / "bin" / "p4c")
    run = subprocess.run([found.tools["p4c"]], capture_output=True, text=True, check=False)
    assert run.stdout.strip() == f"p4c stub in {prefix}"
    assert (prefix / "share" / "p4c" / "p4include" / "core.p4").read_text() == "// core\n"


C_LIB = "int p4vtep_answer(void) { return 42; }\n"
C_MAIN = (
    '#include <stdio.h>\nint p4vtep_answer(void);\nint main(void) {\n'
    '  printf("simple_switch_grpc %d\\n", p4vtep_answer());\n  return 0;\n}\n'
)  # fmt: skip


def test_packing_takes_the_libraries_the_binaries_load(tmp_path: Path) -> None:
    """A real dynamic executable and a library of its own in the prefix, found by ldd:
    the library is packed, libc's package is not a runtime dependency."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to make a dynamic executable")
    prefix = tmp_path / "prefix"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "bin").mkdir()
    (tmp_path / "lib.c").write_text(C_LIB)
    (tmp_path / "main.c").write_text(C_MAIN)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(prefix / "lib" / "libanswer.so.1.0"),
                    "-Wl,-soname,libanswer.so.1", str(tmp_path / "lib.c")], check=True)  # fmt: skip
    (prefix / "lib" / "libanswer.so.1").symlink_to("libanswer.so.1.0")
    switch = prefix / "bin" / "simple_switch_grpc"
    subprocess.run([cc, "-o", str(switch), str(tmp_path / "main.c"), f"-L{prefix / 'lib'}",
                    "-l:libanswer.so.1", f"-Wl,-rpath,{prefix / 'lib'}"], check=True)  # fmt: skip
    stub(prefix / "bin" / "p4c", "p4c")
    # BMv2's generated Thrift classes go with the switch (queue rates)
    runtime_dir = prefix / "lib" / "python3.11" / "site-packages" / "sswitch_runtime"
    runtime_dir.mkdir(parents=True)
    for name in ("__init__.py", "SimpleSwitch.py"):
        (runtime_dir / name).write_text("# generated\n")
    _, files, runtime = tca.toolchain_files(
        {"p4c": str(prefix / "bin" / "p4c"), "simple_switch_grpc": str(switch)}
    )
    assert files == [
        "bin/p4c",
        "bin/simple_switch_grpc",
        "lib/libanswer.so.1",
        "lib/libanswer.so.1.0",
        "lib/python3.11/site-packages/sswitch_runtime/SimpleSwitch.py",
        "lib/python3.11/site-packages/sswitch_runtime/__init__.py",
    ]
    assert "libc6" not in runtime
    run = subprocess.run([str(switch)], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "simple_switch_grpc 42"


def test_packing_refuses_tools_from_two_prefixes(tmp_path: Path) -> None:
    a = stub(tmp_path / "a" / "bin" / "p4c", "p4c")
    b = stub(tmp_path / "b" / "bin" / "simple_switch_grpc", "switch")
    with pytest.raises(ToolchainError, match="different prefixes"):
        tca.pack({"p4c": str(a), "simple_switch_grpc": str(b)}, tmp_path / "x.tar.xz")
    assert not (tmp_path / "x.tar.xz").exists()


def test_archive_command_packs_what_is_on_path(tmp_path: Path, capsys) -> None:
    bindir = stub_prefix(tmp_path / "usr", manifest=False) / "bin"
    out = tmp_path / "team.tar.xz"
    env = bare_env(PATH=f"{bindir}:{BARE_PATH}", P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "own"))
    assert cli.main(["archive", "--output", str(out)], env=env) == 0
    assert tca.read_manifest(out)["prefix"] == str(tmp_path / "usr")
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert printed == hashlib.sha256(out.read_bytes()).hexdigest()


# --- versions ------------------------------------------------------------------------------------


def test_versions_reported_and_older_ones_warned(tmp_path: Path) -> None:
    new = stub(tmp_path / "p4c", "p4c", "p4c 1.2.5.16 (SHA: 6b7ec98e7 BUILD: Release)")
    old = stub(tmp_path / "simple_switch_grpc", "switch", "1.14.0-1ab2c3d4")
    silent = stub(tmp_path / "p4c-tofino", "tofino", "")
    assert versions.reported(str(new)) == "1.2.5.16"
    assert versions.reported(str(old)) == "1.14.0"
    assert versions.describe("p4c", str(new)) == f"{new}, version 1.2.5.16 (tested with 1.2.5.16)"
    assert versions.describe("p4c-tofino", str(silent)) == (
        f"{silent}, reports no version (tested with 1.2.5.16)"
    )
    assert versions.describe("simple_switch_grpc", str(old)) == (
        f"{old}, version 1.14.0, WARNING: older than 1.15.5, the version p4vtep is tested "
        "with; compiles or switch tests may fail"
    )
    # numeric, not textual: 1.15.10 is newer than 1.15.5
    assert not versions.older_than_tested("simple_switch_grpc", "1.15.10")
    assert versions.older_than_tested("p4c", "1.2.5.9")


def test_docs_state_the_tested_versions() -> None:
    doc = (REPO / "docs" / "toolchain.md").read_text()
    for tool, version in versions.TESTED.items():
        assert f"| `{tool}` | {version} |" in doc


# --- 4. upstream's packages ----------------------------------------------------------------------

UBUNTU = 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n'
KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQENBFake\n-----END PGP PUBLIC KEY BLOCK-----\n"


@pytest.mark.parametrize(
    ("os_release", "directory"),
    [
        ({"ID": "ubuntu", "VERSION_ID": "22.04"}, "xUbuntu_22.04"),
        ({"ID": "ubuntu", "VERSION_ID": "24.04"}, "xUbuntu_24.04"),
        ({"ID": "ubuntu", "VERSION_ID": "18.04"}, None),
        ({"ID": "debian", "VERSION_ID": "11"}, "Debian_11"),
        ({"ID": "debian", "VERSION_ID": "12"}, None),
        ({"ID": "fedora", "VERSION_ID": "40"}, None),
        ({}, None),
    ],
)
def test_repository_directory_per_distribution(os_release: dict[str, str], directory) -> None:
    assert packages.repository_dir(os_release) == directory


class FakeApt:
    """apt-get as a script: logs its arguments, and `install` puts stub tools in `bindir`
    (as the packages would in /usr/bin); `fail` makes one verb exit 100."""

    def __init__(self, tmp: Path, fail: str = "") -> None:
        self.log = tmp / "apt.log"
        self.bindir = tmp / "usr-bin"
        self.path = tmp / "apt-get"
        self.path.write_text(
            "#!/bin/sh\n"
            f'echo "$@" >> {self.log}\n'
            f'if [ "$1" = "{fail}" ]; then echo "E: {fail} failed" >&2; exit 100; fi\n'
            'if [ "$1" = install ]; then\n'
            f"  mkdir -p {self.bindir}\n"
            f"  printf '#!/bin/sh\\necho \"p4c 1.2.5.16\"\\n' > {self.bindir}/p4c\n"
            f"  printf '#!/bin/sh\\necho 1.15.5\\n' > {self.bindir}/simple_switch_grpc\n"
            f"  chmod +x {self.bindir}/p4c {self.bindir}/simple_switch_grpc\n"
            "fi\n"
        )
        self.path.chmod(0o755)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def packages_settings(tmp: Path, base: str, apt: FakeApt, **kw: object) -> Settings:
    (tmp / "os-release").write_text(UBUNTU)
    return settings(
        tmp,
        use_packages=True,
        packages_base=base,
        os_release=tmp / "os-release",
        apt_get=str(apt.path),
        apt_sources_dir=tmp / "etc-apt" / "sources.list.d",
        apt_keyring_dir=tmp / "etc-apt" / "keyrings",
        **kw,
    )


def test_packages_are_installed_from_upstreams_signed_repository(
    tmp_path: Path, served: str, capsys
) -> None:
    (tmp_path / "www" / "xUbuntu_22.04").mkdir()
    (tmp_path / "www" / "xUbuntu_22.04" / "Release.key").write_text(KEY)
    apt = FakeApt(tmp_path)
    s = packages_settings(tmp_path, served, apt)
    env = bare_env(PATH=f"{apt.bindir}:{BARE_PATH}")
    assert cli.plan(s, env) == ("packages", f"{served}/xUbuntu_22.04")
    found = cli.ensure(s, env)
    assert found is not None
    assert found.tools == {
        "p4c": str(apt.bindir / "p4c"),
        "simple_switch_grpc": str(apt.bindir / "simple_switch_grpc"),
    }
    assert found.how == f"from upstream's packages ({served}/xUbuntu_22.04)"
    key = tmp_path / "etc-apt" / "keyrings" / "p4vtep-p4lang.asc"
    listing = tmp_path / "etc-apt" / "sources.list.d" / "p4vtep-p4lang.list"
    assert key.read_text() == KEY
    assert listing.read_text() == f"deb [signed-by={key}] {served}/xUbuntu_22.04/ /\n"
    update, install = apt.calls()
    assert update.startswith(f"update -q -o Dir::Etc::sourcelist={listing} ")
    assert "trusted=yes" not in listing.read_text() + update
    assert install == "install -y -q p4lang-p4c p4lang-bmv2"
    out = capsys.readouterr().out
    how = f"from upstream's packages ({served}/xUbuntu_22.04)"
    # the versions found are printed, each tool on its own line
    assert f"p4c: found {how}: {apt.bindir / 'p4c'}, version 1.2.5.16" in out
    assert (
        f"simple_switch_grpc: found {how}: {apt.bindir / 'simple_switch_grpc'}, version 1.15.5"
        in out
    )


def test_packages_install_only_what_is_missing(tmp_path: Path, served: str, capsys) -> None:
    """simple_switch_grpc on PATH, no p4c: only p4lang-p4c is installed, and the
    switch on PATH stays the one used."""
    (tmp_path / "www" / "xUbuntu_22.04").mkdir()
    (tmp_path / "www" / "xUbuntu_22.04" / "Release.key").write_text(KEY)
    apt = FakeApt(tmp_path)
    own = stub(tmp_path / "own-bin" / "simple_switch_grpc", "own switch", "1.15.5")
    s = packages_settings(tmp_path, served, apt)
    env = bare_env(PATH=f"{own.parent}:{apt.bindir}:{BARE_PATH}")
    assert cli.plan(s, env) == ("packages", f"{served}/xUbuntu_22.04")
    found = cli.ensure(s, env)
    assert found is not None
    assert found.tools == {"p4c": str(apt.bindir / "p4c"), "simple_switch_grpc": str(own)}
    assert apt.calls()[1] == "install -y -q p4lang-p4c"
    out = capsys.readouterr().out
    assert f"simple_switch_grpc: found on PATH: {own}" in out
    assert "missing" not in out


def test_packages_path_is_skipped_where_upstream_publishes_none(tmp_path: Path, capsys) -> None:
    apt = FakeApt(tmp_path)
    s = packages_settings(tmp_path, UNREACHABLE, apt)
    (tmp_path / "os-release").write_text(
        'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'
    )
    assert cli.plan(s, bare_env()) == ("none", "")
    assert cli.ensure(s, bare_env()) is None
    out = capsys.readouterr().out
    assert "not for Debian GNU/Linux 12 (bookworm)" in out
    assert apt.calls() == []


def test_a_repository_that_does_not_answer_is_given_up_on_in_time(tmp_path: Path, capsys) -> None:
    """A server that accepts connections and never answers: path 4 gives up after the
    network timeout (10 s by default; 1 s here) and installs nothing."""
    assert Settings().network_timeout == NETWORK_TIMEOUT_S == 10.0
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    apt = FakeApt(tmp_path)
    s = packages_settings(
        tmp_path, f"http://127.0.0.1:{server.getsockname()[1]}", apt, network_timeout=1.0
    )
    try:
        started = time.monotonic()
        assert cli.ensure(s, bare_env()) is None
        assert time.monotonic() - started < 5.0
    finally:
        server.close()
    out = capsys.readouterr().out
    assert "upstream's repository not reachable" in out
    assert "gave up after 1 s" in out
    assert "no P4 toolchain" in out
    assert apt.calls() == []
    assert not (tmp_path / "etc-apt" / "sources.list.d" / "p4vtep-p4lang.list").exists()


def test_a_key_that_is_not_a_key_adds_no_repository(tmp_path: Path, served: str, capsys) -> None:
    (tmp_path / "www" / "xUbuntu_22.04").mkdir()
    (tmp_path / "www" / "xUbuntu_22.04" / "Release.key").write_text("<html>captive portal</html>")
    apt = FakeApt(tmp_path)
    assert cli.ensure(packages_settings(tmp_path, served, apt), bare_env()) is None
    assert "not an OpenPGP public key" in capsys.readouterr().out
    assert apt.calls() == []
    assert not (tmp_path / "etc-apt" / "sources.list.d").exists()


@pytest.mark.parametrize("verb", ["update", "install"])
def test_a_failed_apt_step_removes_the_repository_again(
    tmp_path: Path, served: str, verb: str, capsys
) -> None:
    (tmp_path / "www" / "xUbuntu_22.04").mkdir()
    (tmp_path / "www" / "xUbuntu_22.04" / "Release.key").write_text(KEY)
    apt = FakeApt(tmp_path, fail=verb)
    assert cli.ensure(packages_settings(tmp_path, served, apt), bare_env()) is None
    out = capsys.readouterr().out
    assert f"E: {verb} failed" in out
    assert "the repository was removed again" in out
    assert list((tmp_path / "etc-apt" / "sources.list.d").iterdir()) == []
    assert list((tmp_path / "etc-apt" / "keyrings").iterdir()) == []


# --- 5. nothing ---------------------------------------------------------------------------------


def test_nothing_available_says_how_to_get_it(tmp_path: Path, capsys) -> None:
    env = bare_env(
        P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "p"),
        P4VTEP_TOOLCHAIN_WORKDIR=str(tmp_path / "w"),
        P4VTEP_NO_PACKAGES="1",
    )
    assert cli.main(["ensure"], env=env) == 0
    out = capsys.readouterr().out
    assert "no P4 toolchain" in out
    # each tool on its own line, with what its absence disables
    assert f"[toolchain] p4c: missing: {cli.WITHOUT['p4c']}\n" in out
    assert f"[toolchain] simple_switch_grpc: missing: {cli.WITHOUT['simple_switch_grpc']}\n" in out
    assert "`make demo` fails" in cli.WITHOUT["simple_switch_grpc"]
    for way in ("SIMPLE_SWITCH_GRPC=", "P4VTEP_TOOLCHAIN_ARCHIVE=", "p4lang-bmv2"):
        assert way in out
    assert "https://github.com/p4lang/p4c#installing-packaged-versions-of-p4c" in out
    assert "https://github.com/p4lang/behavioral-model#installing-bmv2" in out
    assert not (tmp_path / "p").exists()


def toolchain_vars(make: list[str], env: dict[str, str]) -> list[str]:
    """What the Makefile's TOOLCHAIN_VARS expands to (what make test passes on)."""
    show = subprocess.run(
        [*make, "--eval", "show-vars: ; @echo $(TOOLCHAIN_VARS)", "show-vars"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return show.stdout.split()


def test_only_the_switch_found_is_reported_as_such_and_used(tmp_path: Path) -> None:
    """Issue 41: simple_switch_grpc on PATH and no p4c. `make toolchain` said "no P4
    toolchain (p4c, simple_switch_grpc)" and "`make demo` fails", and `env` passed
    nothing on; yet the demo and the switch tests need only the switch."""
    bindir = tmp_path / "bin"
    switch = stub(bindir / "simple_switch_grpc", "switch", "1.15.5-693e69e6")
    env = bare_env(
        PATH=f"{bindir}:{BARE_PATH}",
        P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "p"),
        P4VTEP_TOOLCHAIN_WORKDIR=str(tmp_path / "w"),
        P4VTEP_NO_PACKAGES="1",
    )
    make = ["make", "-s", "-C", str(REPO)]
    run = subprocess.run([*make, "toolchain"], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr  # make test goes on
    out = run.stdout
    assert (
        f"[toolchain] simple_switch_grpc: found on PATH: {switch}, version 1.15.5 "
        "(tested with 1.15.5)\n" in out
    )
    assert (
        "[toolchain] p4c: missing: `make p4` cannot recompile p4src/ and the P4 output "
        "freshness test (tests/test_p4_outputs.py) skips; the switch tests, the PTF suite "
        "and `make demo` run the committed outputs\n" in out
    )
    assert "no P4 toolchain" not in out
    assert "`make demo` fails" not in out
    assert "Ways to provide p4c:" in out
    assert "P4C=..." in out
    assert "SIMPLE_SWITCH_GRPC=..." not in out  # nothing to provide for the switch
    assert "p4lang-bmv2" not in out
    assert "installing-bmv2" not in out
    assert toolchain_vars(make, env) == [f"SIMPLE_SWITCH_GRPC={switch}"]


def test_no_tofino_compiler_is_reported_and_not_an_error(tmp_path: Path, capsys) -> None:
    env = bare_env(P4VTEP_TOFINO_PREFIX=str(tmp_path / "t"), P4VTEP_NO_PACKAGES="1")
    assert cli.main(["ensure", "--tofino"], env=env) == 0
    out = capsys.readouterr().out
    assert (
        "[toolchain] p4c-tofino: missing: the Tofino tier does not run: `make p4-tofino` "
        "fails and the compiling tests of tests/test_tofino_outputs.py" in out
    )
    assert "P4C_TOFINO=..." in out
    assert "p4c:" not in out.replace("p4c-tofino:", "")  # about the Tofino compiler only


def test_tofino_compiler_found_is_reported(tmp_path: Path, capsys) -> None:
    tofino = stub(tmp_path / "bin" / "p4c-tofino", "tofino", "p4c 1.2.5.16 (SHA: 0)")
    s = settings(tmp_path, tofino=True)
    assert cli.ensure(s, bare_env(PATH=f"{tofino.parent}:{BARE_PATH}")) is not None
    assert capsys.readouterr().out == (
        f"[toolchain] p4c-tofino: found on PATH: {tofino}, version 1.2.5.16 "
        "(tested with 1.2.5.16)\n"
    )


def test_no_packages_variable_is_honoured_by_the_command() -> None:
    """`python3 -m p4toolchain ensure` without --no-packages passes use_packages=None:
    that must leave P4VTEP_NO_PACKAGES=1 in force (it undid it, so path 4 ran)."""
    env = {"P4VTEP_NO_PACKAGES": "1"}
    assert Settings.from_env(env, tofino=None, use_packages=None).use_packages is False
    assert Settings.from_env({}, use_packages=None).use_packages is True
    assert Settings.from_env({}, use_packages=False).use_packages is False


def test_packing_needs_both_tools_and_names_the_missing_one(tmp_path: Path, capsys) -> None:
    bindir = tmp_path / "bin"
    stub(bindir / "simple_switch_grpc", "switch", "1.15.5")
    env = bare_env(PATH=f"{bindir}:{BARE_PATH}", P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "p"))
    out = tmp_path / "x.tar.xz"
    assert cli.main(["archive", "--output", str(out)], env=env) == 1
    assert "no p4c installed to pack" in capsys.readouterr().out
    assert not out.exists()


def test_make_toolchain_then_make_passes_the_unpacked_tools_on(tmp_path: Path) -> None:
    """The Makefile wiring: `make toolchain` unpacks, TOOLCHAIN_VARS names the result."""
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    env = bare_env(
        P4VTEP_TOOLCHAIN_ARCHIVE=str(archive),
        P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "own"),
        P4VTEP_TOOLCHAIN_WORKDIR=str(tmp_path / "work"),
        P4VTEP_NO_PACKAGES="1",
    )
    make = ["make", "-s", "-C", str(REPO)]
    first = subprocess.run(
        [*make, "toolchain"], env=env, capture_output=True, text=True, check=False
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"into {target}" in first.stdout
    assert f"p4c: found from archive {archive}, in {target}: " in first.stdout
    assert "version 1.2.5.16" in first.stdout
    assert toolchain_vars(make, env) == [
        f"P4C={target / 'bin' / 'p4c'}",
        f"SIMPLE_SWITCH_GRPC={target / 'bin' / 'simple_switch_grpc'}",
    ]


def test_the_tree_builds_no_upstream_project() -> None:
    """Issue 27: no configure/cmake/make invocation or clone of an upstream P4 project,
    anywhere in the tracked tree (this file spells the patterns in pieces)."""
    patterns = [
        "auto" + "gen\\.sh",
        "cmake " + "-(S|B|D)",
        "ENABLE_" + "TOFINO",
        "git clone .*p4" + "lang",
        "\\./" + "configure",
        "P4VTEP_" + "SOURCES",
    ]
    run = subprocess.run(
        ["git", "-C", str(REPO), "grep", "-n", "-E", "|".join(patterns)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout  # 1: no match


# --- what the user sees without a toolchain ----------------------------------------------------


def no_toolchain_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SIMPLE_SWITCH_GRPC", "P4C")}
    env["PATH"] = BARE_PATH
    return env


def test_ptf_suite_skip_line() -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "ptf_tests" / "run_suite.py")],
        env=no_toolchain_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0
    assert run.stdout.strip() == (
        "SKIP ptf: simple_switch_grpc not found: run `make toolchain`, or set "
        "SIMPLE_SWITCH_GRPC or P4VTEP_TOOLCHAIN_ARCHIVE (docs/toolchain.md)"
    )


def test_switch_tests_skip_reason(monkeypatch) -> None:
    import switch_fabric

    monkeypatch.setenv("PATH", BARE_PATH)
    monkeypatch.delenv("SIMPLE_SWITCH_GRPC", raising=False)
    (skip,) = [m for m in switch_fabric.needs_switch() if m.name == "skipif"]
    reason = skip.kwargs["reason"]
    assert reason.startswith(
        "simple_switch_grpc not found (run `make toolchain`, or set SIMPLE_SWITCH_GRPC "
        "or P4VTEP_TOOLCHAIN_ARCHIVE; docs/toolchain.md)"
    )
    assert reason.endswith(": switch tests skipped")


def test_demo_fails_and_names_the_ways() -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "topologies" / "demo.py")],
        env=no_toolchain_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1
    assert "demo not run: missing" in run.stdout
    assert "simple_switch_grpc" in run.stdout
    for way in (
        "SIMPLE_SWITCH_GRPC=...",
        "P4VTEP_TOOLCHAIN_ARCHIVE=",
        "p4lang-bmv2",
        "https://github.com/p4lang/behavioral-model#installing-bmv2",
    ):
        assert way in run.stdout
    # The demo needs the switch only: it must not send the user after p4c.
    assert "p4lang-p4c" not in run.stdout
    assert "P4C=" not in run.stdout
