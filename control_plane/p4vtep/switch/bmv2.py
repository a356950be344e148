"""Running BMv2 simple_switch_grpc: finding it, the one command line that
starts it with every option the pipeline needs, waiting for its gRPC port,
stopping and restarting it. Used by `p4vtep switch run`, the PTF runner, the
integration tests, the benchmarks and the Mininet switch class."""

from __future__ import annotations

import ctypes.util
import functools
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..dataplane.limits import BMV2, BMV2_MAX_MC_GROUPS, CPU_PORT
from ..model.fabric import TlsFiles
from ..processes import stop_process

# One queue per traffic class: without it BMv2 has a single queue and drops
# (with only a log line) every frame whose priority is above 0.
PRIORITY_QUEUES = BMV2.priority_queues
# BMv2's replication engine defaults (4096 groups, 4096 L1 nodes) are far
# below a ToR's needs: a flood group per VNI, one L1 node per (group, copy).
MAX_MC_GROUPS = BMV2_MAX_MC_GROUPS
MAX_MC_L1_ENTRIES = 65536
MAX_MC_L2_ENTRIES = 65536


# Which allocator simple_switch_grpc runs with: "auto" (the default: jemalloc
# when the system has it, else glibc's), "jemalloc" (required) or "system".
ALLOCATOR_ENV = "P4VTEP_BMV2_ALLOCATOR"
ALLOCATORS = ("auto", "jemalloc", "system")


# simple_switch options that ask for a log (or set its level themselves).
LOG_OPTIONS = frozenset({"--log-console", "--log-file", "--log-level", "-L"})


def switch_command(
    binary: str,
    device_id: int,
    grpc_address: str,
    thrift_port: int,
    ports: Mapping[int, str],
    *,
    tls: TlsFiles | None = None,
    log_file: str | Path | None = None,
    extra_args: Sequence[str] = (),
    priority_queues: int = PRIORITY_QUEUES,
) -> list[str]:
    """The simple_switch_grpc command line for one p4vtep ToR.

    ``ports`` maps switch port -> interface; ``tls`` are the files the switch
    serves P4Runtime with (client certificates signed by ``tls.ca`` required).
    ``priority_queues``: one per traffic class; only a test gives fewer (a
    frame whose class has no queue is dropped, which shows its class).
    Raises ValueError for a port the pipeline reserves (the CPU port)."""
    for port in ports:
        why = BMV2.port_problem(port)
        if why:
            raise ValueError(f"-i {port}@{ports[port]}: {why}")
    cmd = [binary, "--device-id", str(device_id), "--no-p4", "--thrift-port", str(thrift_port)]
    for port, iface in sorted(ports.items()):
        cmd += ["-i", f"{port}@{iface}"]
    if log_file is not None:
        cmd += ["--log-file", str(log_file), "--log-flush"]
    elif not any(arg.split("=", 1)[0] in LOG_OPTIONS for arg in extra_args):
        # BMv2 logs at trace level by default, and without a sink it still
        # formats every message (table keys, hit entries) for nothing: half
        # of a p4vtep frame's instructions on a build with logging macros
        # (bench/NOTES.md, "BMv2's logging"). Nothing is lost: no log was asked for.
        cmd += ["--log-level", "off"]
    cmd += list(extra_args)
    cmd += [
        "--",
        "--grpc-server-addr",
        grpc_address,
        "--cpu-port",
        str(CPU_PORT),
        "--priority-queues",
        str(priority_queues),
        "--max-mc-groups",
        str(MAX_MC_GROUPS),
        "--max-l1-entries",
        str(MAX_MC_L1_ENTRIES),
        "--max-l2-entries",
        str(MAX_MC_L2_ENTRIES),
    ]
    if tls is not None:
        cmd += [
            "--grpc-server-ssl",
            "--grpc-server-cacert",
            tls.ca,
            "--grpc-server-cert",
            tls.cert,
            "--grpc-server-key",
            tls.key,
            "--grpc-server-with-client-auth",
        ]
    return cmd


@functools.cache
def find_jemalloc() -> str | None:
    """jemalloc's shared library as the dynamic loader knows it (a soname
    such as ``libjemalloc.so.2``, which LD_PRELOAD looks up as the loader
    would), or None."""
    return ctypes.util.find_library("jemalloc")


def switch_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment simple_switch_grpc runs in: ``env`` (default this
    process's) with jemalloc preloaded unless $P4VTEP_BMV2_ALLOCATOR says
    otherwise.

    Why: every P4Runtime write that changes a multicast group makes PI build
    the group anew (a node and a protobuf message per copy) and free the old
    one, and with glibc's allocator the next gRPC call's arena allocation
    then merges those thousands of freed chunks (``malloc_consolidate``):
    under churn over flood groups of 2,500 copies, 54 % of the switch's CPU
    was in glibc's malloc. With jemalloc the switches use 37-43 % less CPU
    for the same writes (bench/NOTES.md, "The switch's allocator").
    Raises ValueError for an unknown allocator, or "jemalloc" asked for and
    not installed."""
    out = dict(os.environ if env is None else env)
    choice = out.get(ALLOCATOR_ENV, "auto") or "auto"
    if choice not in ALLOCATORS:
        raise ValueError(f"{ALLOCATOR_ENV}={choice}: expected one of {', '.join(ALLOCATORS)}")
    if choice == "system":
        return out
    library = find_jemalloc()
    if library is None:
        if choice == "jemalloc":
            raise ValueError(
                f"{ALLOCATOR_ENV}=jemalloc: jemalloc is not installed (Debian: libjemalloc2)"
            )
        return out
    preloaded = out.get("LD_PRELOAD", "").split()
    if library not in preloaded:
        out["LD_PRELOAD"] = " ".join([library, *preloaded])
    return out


def find_simple_switch_grpc() -> str | None:
    """$SIMPLE_SWITCH_GRPC, else simple_switch_grpc on PATH."""
    return os.environ.get("SIMPLE_SWITCH_GRPC") or shutil.which("simple_switch_grpc")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Bmv2Switch:
    """One simple_switch_grpc process. ``ports`` maps switch port -> interface."""

    name: str
    device_id: int
    grpc_port: int
    thrift_port: int
    ports: dict[int, str] = field(default_factory=dict)
    log_dir: Path = Path("logs")
    netns: str | None = None
    grpc_host: str = "127.0.0.1"
    debug_log: bool = False
    binary: str | None = None
    extra_args: list[str] = field(default_factory=list)
    tls: TlsFiles | None = None  # serve P4Runtime over TLS, client certificates required
    priority_queues: int = PRIORITY_QUEUES  # (fewer only in tests: see switch_command)
    process: subprocess.Popen[bytes] | None = None

    @property
    def grpc_address(self) -> str:
        return f"{self.grpc_host}:{self.grpc_port}"

    def command(self) -> list[str]:
        binary = self.binary or find_simple_switch_grpc()
        if binary is None:
            raise FileNotFoundError("simple_switch_grpc not found (see docs/toolchain.md)")
        cmd = switch_command(
            binary,
            self.device_id,
            self.grpc_address,
            self.thrift_port,
            self.ports,
            tls=self.tls,
            log_file=self.log_dir / self.name if self.debug_log else None,
            extra_args=self.extra_args,
            priority_queues=self.priority_queues,
        )
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        return cmd

    def start(self, timeout: float = 20.0) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{self.name}.out", "ab") as out:
            self.process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, env=switch_environment()
            )
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name}: simple_switch_grpc exited with "
                    f"{self.process.returncode} (see {self.log_dir}/{self.name}.out)"
                )
            if self._port_open():
                return
            time.sleep(0.1)
        raise TimeoutError(f"{self.name}: gRPC port {self.grpc_address} did not open")

    def _port_open(self) -> bool:
        if self.netns:
            probe = (
                "import socket; "
                f"socket.create_connection(('{self.grpc_host}', {self.grpc_port}), 0.5)"
            )
            return (
                subprocess.run(
                    ["ip", "netns", "exec", self.netns, "python3", "-c", probe],
                    check=False,
                    capture_output=True,
                ).returncode
                == 0
            )
        try:
            socket.create_connection((self.grpc_host, self.grpc_port), 0.5).close()
            return True
        except OSError:
            return False

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        stop_process(self.process, timeout=0 if kill else 10)
        self.process = None

    def restart(self, timeout: float = 20.0) -> None:
        self.stop(kill=True)
        # The kernel may hold the port for a moment after the kill.
        deadline = time.monotonic() + timeout
        while self._port_open() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.start(timeout)


class VethSet:
    """veth pairs made for a test and removed after it: (switch end, host end)."""

    def __init__(self, prefix: str, count: int, netns: str | None = None) -> None:
        self.prefix = prefix
        self.count = count
        self.netns = netns
        self.pairs = [(f"{prefix}s{i}", f"{prefix}h{i}") for i in range(1, count + 1)]

    def _ip(self, *args: str, check: bool = True) -> None:
        base = ["ip"] + (["-n", self.netns] if self.netns else [])
        subprocess.run(base + list(args), check=check, capture_output=True)

    def __enter__(self) -> VethSet:
        try:
            for sw, host in self.pairs:
                self._ip("link", "add", sw, "type", "veth", "peer", "name", host)
                for end in (sw, host):
                    sysctl = ["sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1"]
                    if self.netns:
                        sysctl = ["ip", "netns", "exec", self.netns] + sysctl
                    subprocess.run(sysctl, check=False, capture_output=True)
                    self._ip("link", "set", end, "mtu", "9500", "up")
                    # Frames must reach sockets as sent: no VLAN or checksum offload.
                    ethtool = [
                        "ethtool",
                        "-K",
                        end,
                        "rxvlan",
                        "off",
                        "txvlan",
                        "off",
                        "tx",
                        "off",
                        "rx",
                        "off",
                    ]
                    if self.netns:
                        ethtool = ["ip", "netns", "exec", self.netns] + ethtool
                    subprocess.run(ethtool, check=False, capture_output=True)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for sw, _ in self.pairs:
            self._ip("link", "delete", sw, check=False)
