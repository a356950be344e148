"""A real etcd cluster for tests: 1 or 3 members on free loopback ports.

Each member is an `etcd` process (Debian's etcd-server) with its data dir in a
temporary directory. A member can be killed (SIGKILL) and restarted with its
data, so tests can take one member away or break quorum and bring it back.
Teardown kills exactly the processes this object started.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from p4vtep.processes import stop_process
from p4vtep.switch.bmv2 import free_port

ETCD = shutil.which("etcd")

# One transaction may carry a whole initial import (10,000 VMs and their
# indices); etcd's defaults (128 operations, 1.5 MiB) are for small configs.
MAX_TXN_OPS = 65536
MAX_REQUEST_BYTES = 32 * 1024 * 1024


def needs_etcd() -> pytest.MarkDecorator:
    missing = [
        f"{tool} not found (Debian {package}; make deps)"
        for tool, package in (("etcd", "etcd-server"), ("etcdctl", "etcd-client"))
        if shutil.which(tool) is None
    ]
    return pytest.mark.skipif(bool(missing), reason="; ".join(missing) + ": etcd tests skipped")


class MemberExited(RuntimeError):
    pass


@dataclass(frozen=True)
class ClusterTls:
    """PEM files: clients must present a certificate signed by ``ca``."""

    ca: Path
    server_cert: Path  # for 127.0.0.1
    server_key: Path
    client_cert: Path  # used by the harness's own health checks
    client_key: Path


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log: Path
    host: str = "127.0.0.1"
    wrap: tuple[str, ...] = ()  # command prefix, e.g. ("ip", "netns", "exec", ns)
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer_port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class EtcdCluster:
    def __init__(
        self,
        size: int = 3,
        root: Path | None = None,
        token: str = "p4vtep-test",
        tls: ClusterTls | None = None,
        placement: list[tuple[str, tuple[str, ...]]] | None = None,
    ) -> None:
        """``placement``: per member, the address it listens on and a command
        prefix to start it with (e.g. in a network namespace)."""
        if ETCD is None:
            raise RuntimeError("etcd not found (install Debian's etcd-server)")
        self._tmp = None if root is not None else tempfile.TemporaryDirectory(prefix="etcd-")
        self.root = root if root is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        self.token = token
        self.tls = tls
        self.scheme = "https" if tls else "http"
        self.size = size
        self.placement = placement or [("127.0.0.1", ())] * size
        self._new_members("")

    def _new_members(self, tag: str) -> None:
        self.members = [
            Member(
                f"m{i}",
                free_port(),
                free_port(),
                self.root / f"m{i}{tag}.etcd",
                self.root / f"m{i}{tag}.log",
                *self.placement[i],
            )
            for i in range(self.size)
        ]
        self._initial_cluster = ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    def start(self, timeout: float = 20.0, attempts: int = 3) -> EtcdCluster:
        for attempt in range(attempts):
            for member in self.members:
                self._spawn(member)
            try:
                self.wait_healthy(timeout)
                return self
            except MemberExited:
                # A free port was taken before etcd bound it (other tests
                # run beside us): start over on new ports with empty dirs.
                if attempt == attempts - 1:
                    raise
                for index in range(len(self.members)):
                    self.kill(index)
                self._new_members(f"retry{attempt}")
        return self

    def _spawn(self, member: Member) -> None:
        assert ETCD is not None
        state = "existing" if member.data_dir.exists() else "new"
        args = [
            *member.wrap,
            ETCD,
            "--name",
            member.name,
            "--data-dir",
            str(member.data_dir),
            "--listen-client-urls",
            f"{self.scheme}://{member.endpoint}",
            "--advertise-client-urls",
            f"{self.scheme}://{member.endpoint}",
            "--listen-peer-urls",
            member.peer_url,
            "--initial-advertise-peer-urls",
            member.peer_url,
            "--initial-cluster",
            self._initial_cluster,
            "--initial-cluster-state",
            state,
            "--initial-cluster-token",
            self.token,
            "--max-txn-ops",
            str(MAX_TXN_OPS),
            "--max-request-bytes",
            str(MAX_REQUEST_BYTES),
        ]
        if self.tls is not None:
            args += ["--cert-file", str(self.tls.server_cert), "--key-file"]
            args += [str(self.tls.server_key), "--client-cert-auth", "--trusted-ca-file"]
            args += [str(self.tls.ca)]
        log = member.log.open("ab")
        member.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def wait_healthy(self, timeout: float = 20.0, members: list[Member] | None = None) -> None:
        """Wait until each given (default: every live) member answers a
        linearizable read, i.e. it is part of a cluster with a raft leader."""
        deadline = time.monotonic() + timeout
        for member in members or [m for m in self.members if m.alive]:
            while True:
                if not member.alive:
                    tail = member.log.read_text(errors="replace").splitlines()[-3:]
                    raise MemberExited(f"etcd {member.name} exited: " + " | ".join(tail))
                if self._healthy(member):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"etcd {member.name} not healthy in {timeout} s")
                time.sleep(0.1)

    def _healthy(self, member: Member) -> bool:
        return self._etcdctl(member, "endpoint", "health").returncode == 0

    def _etcdctl(self, member: Member, *args: str) -> subprocess.CompletedProcess[str]:
        etcdctl = shutil.which("etcdctl")
        if etcdctl is None:
            raise RuntimeError("etcdctl not found (Debian etcd-client)")
        tls = []
        if self.tls is not None:
            tls = [f"--cacert={self.tls.ca}", f"--cert={self.tls.client_cert}"]
            tls += [f"--key={self.tls.client_key}"]
        return subprocess.run(
            [*member.wrap, etcdctl, "--endpoints", member.endpoint, "--command-timeout=1s"]
            + [*tls, *args],
            capture_output=True,
            text=True,
            check=False,
            env={"ETCDCTL_API": "3"},
        )

    def raft_leader(self) -> int:
        """Index of the member that is the raft leader now."""
        for index, member in enumerate(self.members):
            if not member.alive:
                continue
            result = self._etcdctl(member, "endpoint", "status", "-w", "json")
            if result.returncode == 0:
                status = json.loads(result.stdout)[0]["Status"]
                if status["header"]["member_id"] == status["leader"]:
                    return index
        raise RuntimeError("no member is the raft leader")

    def move_raft_leader(self, index: int) -> None:
        """Make member ``index`` etcd's raft leader."""
        leader = self.members[self.raft_leader()]
        target = self._etcdctl(self.members[index], "endpoint", "status", "-w", "json")
        member_id = json.loads(target.stdout)[0]["Status"]["header"]["member_id"]
        if leader is not self.members[index]:
            result = self._etcdctl(leader, "move-leader", f"{member_id:x}")
            if result.returncode != 0:
                raise RuntimeError(f"etcdctl move-leader: {result.stderr.strip()}")

    def compact(self, revision: int) -> None:
        """Drop the history before ``revision`` (as etcd's auto-compaction does)."""
        member = next(m for m in self.members if m.alive)
        result = self._etcdctl(member, "compact", str(revision))
        if result.returncode != 0:
            raise RuntimeError(f"etcdctl compact {revision}: {result.stderr.strip()}")

    def kill(self, index: int) -> None:
        """SIGKILL one member (its data stays for restart)."""
        member = self.members[index]
        if member.process is not None:
            stop_process(member.process, timeout=0, group=True)

    def restart(self, index: int, wait: bool = True) -> None:
        member = self.members[index]
        if member.alive:
            return
        self._spawn(member)
        if wait:
            self.wait_healthy(members=[member])

    def stop(self) -> None:
        for index in range(len(self.members)):
            self.kill(index)
        if self._tmp is not None:
            self._tmp.cleanup()


@contextmanager
def etcd_cluster(
    size: int = 3,
    tls: ClusterTls | None = None,
    placement: list[tuple[str, tuple[str, ...]]] | None = None,
) -> Iterator[EtcdCluster]:
    cluster = EtcdCluster(size, tls=tls, placement=placement)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
