"""toolchain/p4vtep_toolchain.py: the order in which the P4 toolchain is found, the
archive path (fake archives with stub binaries, unpacked into temporary prefixes),
packing, the resumable build stages, and the messages a user sees without a toolchain.
No network, no root, no real build."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "toolchain" / "p4vtep_toolchain.py"
_spec = importlib.util.spec_from_file_location("p4vtep_toolchain", SCRIPT)
assert _spec
assert _spec.loader
tc = importlib.util.module_from_spec(_spec)
sys.modules["p4vtep_toolchain"] = tc
_spec.loader.exec_module(tc)

# A PATH with the usual system tools but none of the P4 ones (they live in /usr/local/bin
# or a prefix on the project's machines).
BARE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
UNREACHABLE = "http://127.0.0.1:9"  # discard port: connection refused at once


def stub(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{text}'\n")
    path.chmod(0o755)
    return path


def stub_prefix(prefix: Path, manifest: bool = True, packages: list[str] | None = None) -> Path:
    stub(prefix / "bin" / "p4c", f"p4c stub in {prefix}")
    stub(prefix / "bin" / "simple_switch_grpc", f"simple_switch_grpc stub in {prefix}")
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "lib" / "libstub.so.0.0.0").write_bytes(b"\x7fELF stub")
    (prefix / "lib" / "libstub.so.0").symlink_to("libstub.so.0.0.0")
    if manifest:
        (prefix / tc.MANIFEST).write_text(
            json.dumps(
                {
                    "prefix": str(prefix),
                    "revisions": {"p4lang/p4c": "stub"},
                    "links": {},
                    "debian_runtime_packages": packages if packages is not None else ["python3"],
                }
            )
        )
    return prefix


def fake_archive(tmp: Path, prefix: Path, name: str = "fake.tar.xz", **kw: object) -> Path:
    """An archive as another machine would make it: the manifest, bin/, lib/."""
    content = stub_prefix(tmp / "content", **kw)  # type: ignore[arg-type]
    manifest = json.loads((content / tc.MANIFEST).read_text())
    manifest["prefix"] = str(prefix)
    (content / tc.MANIFEST).write_text(json.dumps(manifest))
    archive = tmp / name
    with tarfile.open(archive, "w:xz") as tf:
        for entry in (tc.MANIFEST, "bin", "lib"):
            tf.add(content / entry, arcname=entry)
    return archive


def settings(tmp: Path, **kw: object) -> tc.Settings:
    base = {
        "prefix": tmp / "own-prefix",
        "tofino_prefix": tmp / "own-tofino",
        "workdir": tmp / "work",
        "git_base": UNREACHABLE,
        "network_timeout": 2.0,
        "install_packages": False,
        "make_links": False,
    }
    base.update(kw)
    return tc.Settings(**base)  # type: ignore[arg-type]


def bare_env(**extra: str) -> dict[str, str]:
    return {"PATH": BARE_PATH, "HOME": os.environ.get("HOME", "/root"), **extra}


# --- 1. PATH and the P4C / SIMPLE_SWITCH_GRPC variables -----------------------------------


def test_tools_on_path_win_over_everything_else(tmp_path: Path) -> None:
    bindir = stub_prefix(tmp_path / "onpath", manifest=False) / "bin"
    stub_prefix(tmp_path / "own-prefix")
    s = settings(tmp_path, archive=str(tmp_path / "never-read.tar.xz"))
    plan = tc.plan_bmv2(s, bare_env(PATH=f"{bindir}:{BARE_PATH}"))
    assert plan.kind == "found"
    assert plan.found.how == "on PATH"
    assert plan.found.tools == {
        "p4c": str(bindir / "p4c"),
        "simple_switch_grpc": str(bindir / "simple_switch_grpc"),
    }


def test_variables_name_the_tools(tmp_path: Path) -> None:
    a = stub(tmp_path / "a" / "my-p4c", "p4c")
    b = stub(tmp_path / "b" / "my-switch", "switch")
    env = bare_env(P4C=str(a), SIMPLE_SWITCH_GRPC=str(b))
    plan = tc.plan_bmv2(settings(tmp_path), env)
    assert plan.kind == "found"
    assert plan.found.tools == {"p4c": str(a), "simple_switch_grpc": str(b)}
    assert "P4C" in plan.found.how
    assert "SIMPLE_SWITCH_GRPC" in plan.found.how
    assert tc.locate_env(settings(tmp_path), env) == [f"P4C={a}", f"SIMPLE_SWITCH_GRPC={b}"]


def test_a_variable_naming_nothing_is_an_error(tmp_path: Path, capsys) -> None:
    env = bare_env(SIMPLE_SWITCH_GRPC=str(tmp_path / "nope"))
    with pytest.raises(tc.ToolchainError, match=r"SIMPLE_SWITCH_GRPC=.*not an executable"):
        tc.plan_bmv2(settings(tmp_path), env)
    assert tc.main(["plan", "--prefix", str(tmp_path / "p")], env=env) == 1
    assert "not an executable" in capsys.readouterr().out


def test_one_tool_on_path_is_not_enough(tmp_path: Path) -> None:
    bindir = tmp_path / "half" / "bin"
    stub(bindir / "p4c", "p4c only")
    plan = tc.plan_bmv2(settings(tmp_path), bare_env(PATH=f"{bindir}:{BARE_PATH}"))
    assert plan.kind == "none"


# --- 2. the script's own prefix --------------------------------------------------------------


def test_own_prefix_is_used_when_path_has_nothing(tmp_path: Path) -> None:
    prefix = stub_prefix(tmp_path / "own-prefix")
    plan = tc.plan_bmv2(settings(tmp_path), bare_env())
    assert plan.kind == "found"
    assert plan.found.tools["simple_switch_grpc"] == str(prefix / "bin" / "simple_switch_grpc")
    assert "installed in" in plan.found.how


def test_a_prefix_without_our_manifest_is_not_trusted(tmp_path: Path) -> None:
    stub_prefix(tmp_path / "own-prefix", manifest=False)
    assert tc.plan_bmv2(settings(tmp_path), bare_env()).kind == "none"


# --- 3. archives -----------------------------------------------------------------------------


def test_fake_archive_is_unpacked_into_its_prefix_and_found(tmp_path: Path, capsys) -> None:
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    s = settings(tmp_path, archive=str(archive))
    assert tc.plan_bmv2(s, bare_env()).kind == "archive"
    found = tc.ensure(s, bare_env())
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
    assert tc.locate_env(s, env) == [
        f"P4C={target / 'bin' / 'p4c'}",
        f"SIMPLE_SWITCH_GRPC={target / 'bin' / 'simple_switch_grpc'}",
    ]
    # A second run keeps what is there.
    mtime = (target / "bin" / "p4c").stat().st_mtime_ns
    assert tc.ensure(s, env) is not None
    assert "already unpacked" in capsys.readouterr().out
    assert (target / "bin" / "p4c").stat().st_mtime_ns == mtime


def test_archive_with_the_right_sha256(tmp_path: Path) -> None:
    archive = fake_archive(tmp_path, tmp_path / "opt" / "p4")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    s = settings(tmp_path, archive=str(archive), archive_sha256=digest.upper())
    assert tc.ensure(s, bare_env()) is not None


@pytest.mark.parametrize("how", ["variable", "sidecar file"])
def test_archive_with_a_wrong_sha256_is_refused_and_nothing_unpacked(
    tmp_path: Path, how: str
) -> None:
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    s = settings(tmp_path, archive=str(archive))
    if how == "variable":
        s.archive_sha256 = "0" * 64
    else:
        Path(f"{archive}.sha256").write_text("0" * 64 + "  fake.tar.xz\n")
    with pytest.raises(tc.ToolchainError, match="does not match"):
        tc.ensure(s, bare_env())
    assert not target.exists()


def test_archive_without_manifest_is_refused(tmp_path: Path) -> None:
    content = stub_prefix(tmp_path / "content", manifest=False)
    archive = tmp_path / "plain.tar.xz"
    with tarfile.open(archive, "w:xz") as tf:
        tf.add(content / "bin", arcname="bin")
    with pytest.raises(tc.ToolchainError, match=r"no top-level p4vtep-toolchain\.json"):
        tc.ensure(settings(tmp_path, archive=str(archive)), bare_env())


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
    with pytest.raises(tc.ToolchainError, match="unsafe member 'bin/escape'"):
        tc.ensure(settings(tmp_path, archive=str(evil)), bare_env())
    assert not (target / "bin" / "p4c").exists()


def test_archive_missing_runtime_package_is_a_clear_error(tmp_path: Path) -> None:
    if not Path("/usr/bin/dpkg-query").exists():
        pytest.skip("dpkg-query missing: not Debian")
    archive = fake_archive(
        tmp_path, tmp_path / "opt" / "p4", packages=["python3", "p4vtep-no-such-package"]
    )
    with pytest.raises(tc.ToolchainError, match="missing Debian packages: p4vtep-no-such-package"):
        tc.ensure(settings(tmp_path, archive=str(archive)), bare_env())


def test_tofino_archive_links_p4c_tofino_and_leaves_p4c_alone(tmp_path: Path) -> None:
    bindir = stub_prefix(tmp_path / "usr", manifest=False) / "bin"  # the bmv2 p4c on PATH
    target = tmp_path / "opt" / "p4-tofino"
    archive = fake_archive(tmp_path, target)
    s = settings(tmp_path, tofino=True, tofino_archive=str(archive), make_links=True)
    s.link_dir = bindir
    env = bare_env(PATH=f"{bindir}:{BARE_PATH}")
    assert tc.plan_tofino(s, env).kind == "archive"
    found = tc.ensure(s, env)
    assert found is not None
    assert found.tools == {"p4c-tofino": str(target / "bin" / "p4c")}
    assert os.readlink(bindir / "p4c-tofino") == str(target / "bin" / "p4c")
    assert not (bindir / "p4c").is_symlink()  # the bmv2 p4c is not shadowed
    assert tc.plan_bmv2(s, env).found.tools["p4c"] == str(bindir / "p4c")
    assert tc.plan_tofino(s, env).found.how == "on PATH"
    # without the link on PATH, `env` still names it (make passes P4C_TOFINO on)
    (bindir / "p4c-tofino").unlink()
    assert f"P4C_TOFINO={target / 'bin' / 'p4c'}" in tc.locate_env(s, env)


def test_team_cache_archive_is_used_when_no_archive_is_named(tmp_path: Path) -> None:
    cache = tmp_path / "shared" / "toolchain"
    cache.mkdir(parents=True)
    team = fake_archive(tmp_path, tmp_path / "opt" / "p4", name="t.tar.xz")
    team.rename(cache / "p4-toolchain-bmv2-debian12-amd64.tar.xz")
    plan = tc.plan_bmv2(settings(tmp_path, team_cache=cache), bare_env())
    assert (plan.kind, plan.detail) == ("archive", "team cache")
    assert plan.archive == str(cache / "p4-toolchain-bmv2-debian12-amd64.tar.xz")
    named = settings(tmp_path, team_cache=cache, archive="/elsewhere/x.tar.xz")
    assert tc.plan_bmv2(named, bare_env()).archive == "/elsewhere/x.tar.xz"


def test_archive_by_url_is_downloaded_once_and_found(tmp_path: Path) -> None:
    import functools
    import http.server

    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{archive.name}"
        s = settings(tmp_path, archive=url)
        found = tc.ensure(s, bare_env())
        assert found is not None
        assert found.tools["p4c"] == str(target / "bin" / "p4c")
        cached = tmp_path / "work" / "downloads" / archive.name
        assert cached.read_bytes() == archive.read_bytes()
    finally:
        server.shutdown()
        server.server_close()
    # the server is gone: `env` still names the unpacked tools, from the cached copy
    assert f"P4C={target / 'bin' / 'p4c'}" in tc.locate_env(s, bare_env())


def test_archive_url_that_cannot_be_reached_fails_quickly(tmp_path: Path) -> None:
    s = settings(tmp_path, archive=f"{UNREACHABLE}/p4-toolchain.tar.xz")
    with pytest.raises(tc.ToolchainError, match="cannot download"):
        tc.ensure(s, bare_env())


# --- 4. sources, 5. nothing -------------------------------------------------------------------


def test_local_sources_are_planned_for_a_build(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    for i, project in enumerate(tc.BMV2_SOURCES):
        owner, name = project.split("/")
        # both accepted spellings: owner+name and name
        subprocess.run(
            ["git", "init", "-q", "--bare", str(sources / (f"{owner}+{name}" if i % 2 else name))],
            check=True,
        )
    plan = tc.plan_bmv2(settings(tmp_path, sources=sources), bare_env())
    assert (plan.kind, plan.detail) == ("sources", str(sources))


def test_incomplete_sources_name_what_is_missing(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    subprocess.run(["git", "init", "-q", "--bare", str(sources / "p4lang+p4c")], check=True)
    with pytest.raises(tc.ToolchainError, match="lacks git repositories for: p4lang/behavioral"):
        tc.plan_bmv2(settings(tmp_path, sources=sources), bare_env())


def test_nothing_available_says_how_to_get_it(tmp_path: Path, capsys) -> None:
    env = bare_env(
        P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "p"),
        P4VTEP_TOOLCHAIN_WORKDIR=str(tmp_path / "w"),
        P4VTEP_GIT_BASE=UNREACHABLE,
    )
    assert tc.main(["ensure", "--team-cache", str(tmp_path / "no-cache")], env=env) == 0
    out = capsys.readouterr().out
    assert "no P4 toolchain" in out
    for way in ("SIMPLE_SWITCH_GRPC=", "P4VTEP_TOOLCHAIN_ARCHIVE=", "P4VTEP_SOURCES="):
        assert way in out
    assert not (tmp_path / "p").exists()


def test_a_silent_network_does_not_hang_the_check(tmp_path: Path) -> None:
    """A server that accepts connections and never answers: the probe gives up."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    t = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    t.start()
    try:
        base = f"http://127.0.0.1:{server.getsockname()[1]}"
        plan = tc.plan_bmv2(settings(tmp_path, git_base=base, network_timeout=1.0), bare_env())
        assert plan.kind == "none"
        assert accepted, "the probe never tried the network"
    finally:
        for c in accepted:
            c.close()
        server.close()


# --- packing (make toolchain-archive) ----------------------------------------------------------


def test_packed_archive_unpacks_and_is_found(tmp_path: Path) -> None:
    prefix = stub_prefix(tmp_path / "opt" / "tc")
    archive = tmp_path / "out" / "tc.tar.xz"
    digest = tc.pack_archive(prefix, archive)
    assert digest == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert Path(f"{archive}.sha256").read_text().split() == [digest, "tc.tar.xz"]
    with tarfile.open(archive) as tf:
        names = tf.getnames()
    assert names[0] == tc.MANIFEST  # first: cheap to read
    assert {"bin/p4c", "bin/simple_switch_grpc", "lib/libstub.so.0"} <= set(names)
    manifest = tc.read_archive_manifest(archive)
    assert manifest["prefix"] == str(prefix)
    assert {"revisions", "debian_runtime_packages"} <= set(manifest)
    # another machine: the prefix is not there yet
    (tmp_path / "moved").mkdir()
    prefix.rename(tmp_path / "moved" / "tc")
    found = tc.ensure(settings(tmp_path, archive=str(archive)), bare_env())
    assert found is not None
    assert found.tools["p4c"] == str(prefix / "bin" / "p4c")
    run = subprocess.run([found.tools["p4c"]], capture_output=True, text=True, check=False)
    assert run.stdout.strip() == f"p4c stub in {prefix}"


def test_packing_refuses_a_prefix_without_manifest(tmp_path: Path) -> None:
    prefix = stub_prefix(tmp_path / "p", manifest=False)
    with pytest.raises(tc.ToolchainError, match=r"has no p4vtep-toolchain\.json"):
        tc.pack_archive(prefix, tmp_path / "x.tar.xz")
    assert not (tmp_path / "x.tar.xz").exists()


def test_make_toolchain_then_make_passes_the_unpacked_tools_on(tmp_path: Path) -> None:
    """The Makefile wiring: `make toolchain` unpacks, TOOLCHAIN_VARS names the result."""
    target = tmp_path / "opt" / "p4"
    archive = fake_archive(tmp_path, target)
    env = bare_env(
        P4VTEP_TOOLCHAIN_ARCHIVE=str(archive),
        P4VTEP_TOOLCHAIN_PREFIX=str(tmp_path / "own"),
        P4VTEP_TOOLCHAIN_WORKDIR=str(tmp_path / "work"),
    )
    make = ["make", "-s", "-C", str(REPO), f"TOOLCHAIN_CACHE={tmp_path / 'no-cache'}"]
    first = subprocess.run(
        [*make, "toolchain"], env=env, capture_output=True, text=True, check=False
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"into {target}" in first.stdout
    show = subprocess.run(
        [*make, "--eval", "show-vars: ; @echo $(TOOLCHAIN_VARS)", "show-vars"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert show.stdout.split() == [
        f"P4C={target / 'bin' / 'p4c'}",
        f"SIMPLE_SWITCH_GRPC={target / 'bin' / 'simple_switch_grpc'}",
    ]


# --- building: stages, resume, the GCC 12 fix, offline submodules -----------------------------


def test_stages_resume_and_a_failure_shows_the_log(tmp_path: Path, capsys) -> None:
    b = tc.Builder(settings(tmp_path), "sources", tmp_path / "prefix")
    calls: list[str] = []

    def ok(stage: tc.Stage) -> None:
        calls.append(stage.name)
        b.run(stage, ["sh", "-c", "echo compiling"])

    b.stage("PI", "rev-1", 1, 3, ok)
    b.stage("PI", "rev-1", 1, 3, ok)  # finished: kept
    assert calls == ["PI"]
    out = capsys.readouterr().out
    assert "[1/3] PI: building (~9 min expected on 2 cores)" in out
    assert "PI: done in" in out
    assert "PI: already built" in out
    b.stage("PI", "rev-2", 1, 3, ok)  # a changed pin rebuilds
    assert calls == ["PI", "PI"]

    def broken(stage: tc.Stage) -> None:
        b.run(stage, ["sh", "-c", "echo step one; echo 'error: it broke'; exit 3"])

    with pytest.raises(tc.ToolchainError) as err:
        b.stage("BMv2", "rev", 2, 3, broken)
    log = tmp_path / "work" / "build" / "logs" / "BMv2.log"
    assert str(log) in str(err.value)
    assert "exited 3" in str(err.value)
    assert "error: it broke" in capsys.readouterr().err  # the log's last lines
    assert not (tmp_path / "work" / "build" / "stamps" / "BMv2.json").exists()


def test_a_long_stage_reports_it_is_alive(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(tc, "HEARTBEAT_S", 0.2)
    b = tc.Builder(settings(tmp_path), "sources", tmp_path / "prefix")
    b.stage("p4c", "k", 3, 3, lambda stage: b.run(stage, ["sleep", "0.5"]))
    out = capsys.readouterr().out
    assert "p4c: still building, 0m00s of ~70 min expected" in out


def test_gcc12_patch(tmp_path: Path) -> None:
    f = tmp_path / "visitor.cpp"
    f.write_text(
        "erase_if(*fjp,\n"
        "         [this](flow_join_points_t::value_type &el) { return el.second.count == 0; });\n"
    )
    assert tc.patch_gcc12(f) is True
    assert "[this](const flow_join_points_t::value_type &el)" in f.read_text()
    assert tc.patch_gcc12(f) is False


def test_tofino_driver_patch(tmp_path: Path) -> None:
    f = tmp_path / "barefoot.py"
    f.write_text("        if cmd[0].find('/') != 0 and (find_bin(cmd[0]) == None):\n")
    assert tc.patch_tofino_driver(f) is True
    assert "str(cmd[0]).find('/')" in f.read_text()
    assert "find_bin(str(cmd[0]))" in f.read_text()
    assert tc.patch_tofino_driver(f) is False


def git(*args: str, cwd: Path | None = None) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_offline_checkout_takes_submodules_from_local_sources(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    sub = sources / "google+googletest"
    git("init", "-q", str(sub))
    (sub / "README").write_text("googletest stand-in\n")
    git("add", "README", cwd=sub)
    git("commit", "-q", "-m", "sub", cwd=sub)
    main = sources / "p4lang+PI"
    git("init", "-q", str(main))
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "third_party/gt",
        cwd=main)  # fmt: skip
    # as upstream has it: the submodule points at GitHub
    git("config", "-f", ".gitmodules", "submodule.third_party/gt.url",
        "https://github.com/google/googletest", cwd=main)  # fmt: skip
    git("commit", "-q", "-am", "main", cwd=main)
    rev = subprocess.run(
        ["git", "-C", str(main), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    b = tc.Builder(settings(tmp_path, sources=sources), "sources", tmp_path / "prefix")
    b.logs.mkdir(parents=True)
    stage = tc.Stage("PI", "k", b.logs / "PI.log")
    tree = b.checkout(stage, "p4lang/PI", rev)
    b.submodules(stage, tree)
    assert (tree / "third_party" / "gt" / "README").read_text() == "googletest stand-in\n"


def test_offline_checkout_leaves_out_blobs_the_mirror_lacks(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "sources" / "p4lang+p4c"
    git("init", "-q", str(repo))
    (repo / "docs").mkdir()
    (repo / "docs" / "big.pptx").write_bytes(b"slides that the mirror dropped")
    (repo / "CMakeLists.txt").write_text("project(x)\n")
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "x", cwd=repo)
    blob = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD:docs/big.pptx"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    b = tc.Builder(settings(tmp_path, sources=tmp_path / "sources"), "sources", tmp_path / "p")
    b.logs.mkdir(parents=True)
    stage = tc.Stage("p4c", "k", b.logs / "p4c.log")
    tree = b.checkout(stage, "p4lang/p4c", "HEAD")
    assert (tree / "CMakeLists.txt").read_text() == "project(x)\n"
    assert not (tree / "docs" / "big.pptx").exists()
    assert "1 file(s) absent from the local repository, left out: docs/big.pptx" in (
        capsys.readouterr().out
    )
    (tree / "CMakeLists.txt").write_text("patched\n")
    assert b.checkout(stage, "p4lang/p4c", "HEAD") == tree  # already there: left alone
    assert (tree / "CMakeLists.txt").read_text() == "patched\n"


def test_configure_is_not_rerun_on_resume(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    runs = tree / "runs"
    (tree / "autogen.sh").write_text(f"#!/bin/sh\necho autogen >> {runs}\n")
    (tree / "configure").write_text(
        f'#!/bin/sh\necho "configure $*" >> {runs}\ntouch config.status\n'
    )
    for f in ("autogen.sh", "configure"):
        (tree / f).chmod(0o755)
    b = tc.Builder(settings(tmp_path), "sources", tmp_path / "p")
    b.logs.mkdir(parents=True)
    stage = tc.Stage("BMv2", "k", b.logs / "BMv2.log")
    b.configure(stage, tree, ["--prefix=/a"])
    b.configure(stage, tree, ["--prefix=/a"])
    assert runs.read_text().splitlines() == ["autogen", "configure --prefix=/a"]
    b.configure(stage, tree, ["--prefix=/b"])  # other arguments: configure again
    assert runs.read_text().splitlines()[-1] == "configure --prefix=/b"


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


def test_demo_fails_and_names_the_three_ways() -> None:
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
    assert "Three ways to get it:" in run.stdout
    for way in ("P4C=... SIMPLE_SWITCH_GRPC=...", "P4VTEP_TOOLCHAIN_ARCHIVE=", "P4VTEP_SOURCES="):
        assert way in run.stdout
