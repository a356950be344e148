#!/usr/bin/env python3
"""Run the PTF conformance suite against BMv2 simple_switch_grpc.

Everything runs inside a private network namespace that this script creates
and deletes: veth pairs (switch side s<N>, test side t<N>), the switch, and
PTF. Nothing is left in the host's namespace.

    ptf_tests/run_suite.py                  # the whole suite
    ptf_tests/run_suite.py test_l2          # PTF test selection (module, class)

Prints one line "N passed, N failed" at the end; exits non-zero on failure.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "control_plane"))

from p4vtep.dataplane.artifacts import bmv2_pipeline  # noqa: E402

PORTS = range(1, 9)          # switch ports 1..8, PTF device 0 ports 1..8
CPU_PORT = 255
GRPC_ADDR = "127.0.0.1:9559"


def find_switch() -> str | None:
    return os.environ.get("SIMPLE_SWITCH_GRPC") or shutil.which("simple_switch_grpc")


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


class Namespace:
    """A network namespace with one veth pair per switch port."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> "Namespace":
        sh("ip", "netns", "add", self.name)
        try:
            self.exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            self.exec("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
            self.exec("ip", "link", "set", "lo", "up")
            for port in PORTS:
                self.exec("ip", "link", "add", f"s{port}", "type", "veth", "peer", "name", f"t{port}")
                for end in (f"s{port}", f"t{port}"):
                    self.exec("ip", "link", "set", end, "mtu", "9500", "up")
                    # No offloads: the switch must see the frames as sent.
                    self.exec("ethtool", "-K", end, "tx", "off", "rx", "off", check=False)
        except BaseException:
            self.__exit__()
            raise
        return self

    def exec(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.name, *args, check=check)

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.name, *args], **kwargs)

    def __exit__(self, *exc) -> None:
        sh("ip", "netns", "delete", self.name, check=False)   # removes the veths too


def wait_for_grpc(ns: Namespace, switch: subprocess.Popen, timeout: float = 20.0) -> None:
    host, port = GRPC_ADDR.rsplit(":", 1)
    probe = (f"import socket; socket.create_connection(('{host}', {port}), 0.5)")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if switch.poll() is not None:
            raise RuntimeError(f"simple_switch_grpc exited with {switch.returncode}")
        if ns.exec(sys.executable, "-c", probe, check=False).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("simple_switch_grpc did not open its gRPC port")


def summarise(output: str) -> tuple[int, int, int]:
    """(passed, failed, skipped) from unittest's closing lines."""
    ran = re.search(r"^Ran (\d+) tests?", output, re.M)
    total = int(ran.group(1)) if ran else 0
    failed = skipped = 0
    closing = re.search(r"^(OK|FAILED)(?: \((.*)\))?$", output, re.M)
    if closing and closing.group(2):
        for part in closing.group(2).split(","):
            key, _, value = part.strip().partition("=")
            if key in ("failures", "errors", "unexpected successes"):
                failed += int(value)
            elif key == "skipped":
                skipped += int(value)
    if not closing:
        failed = max(failed, 1)
    return total - failed - skipped, failed, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="*", help="PTF test selection")
    parser.add_argument("--log-dir", default=str(REPO / "logs" / "ptf"))
    parser.add_argument("--switch-log", action="store_true",
                        help="run the switch with --log-console (slow; for debugging)")
    args = parser.parse_args()

    switch_bin = find_switch()
    if switch_bin is None:
        print("SKIP ptf: simple_switch_grpc not found (set SIMPLE_SWITCH_GRPC or see "
              "docs/toolchain.md)")
        return 0
    if os.geteuid() != 0:
        print("SKIP ptf: needs root to create a network namespace and veths")
        return 0
    pipeline = bmv2_pipeline()
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    ptf_bin = str(Path(sys.executable).with_name("ptf"))

    with Namespace(f"p4vtep-ptf-{os.getpid()}") as ns:
        switch_cmd = [switch_bin, "--device-id", "1", "--no-p4", "--thrift-port", "9090"]
        for port in PORTS:
            switch_cmd += ["-i", f"{port}@s{port}"]
        switch_cmd += ["--log-file", str(log_dir / "switch"), "--log-flush"] \
            if args.switch_log else []
        switch_cmd += ["--", "--grpc-server-addr", GRPC_ADDR, "--cpu-port", str(CPU_PORT),
                       "--priority-queues", "8"]
        with open(log_dir / "switch.out", "w") as switch_out:
            switch = ns.popen(switch_cmd, stdout=switch_out, stderr=subprocess.STDOUT)
        try:
            wait_for_grpc(ns, switch)
            params = (f"grpc_addr='{GRPC_ADDR}';device_id=1;"
                      f"p4info='{pipeline.p4info_path}';bmv2_json='{pipeline.device_config_path}'")
            ptf_cmd = [ptf_bin, "--test-dir", str(HERE), "--test-params", params,
                       "--log-file", str(log_dir / "ptf.log"),
                       "--pcap", str(log_dir / "ptf.pcap"), "--socket-recv-size", "10240000"]
            for port in PORTS:
                ptf_cmd += ["--interface", f"0-{port}@t{port}"]
            ptf_cmd += args.tests
            result = ns.popen(ptf_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, cwd=str(log_dir))
            output, _ = result.communicate()
            print(output, end="")
        finally:
            switch.terminate()
            try:
                switch.wait(timeout=10)
            except subprocess.TimeoutExpired:
                switch.kill()
    passed, failed, skipped = summarise(output)
    suffix = f", {skipped} skipped" if skipped else ""
    print(f"ptf: {passed} passed, {failed} failed{suffix}")
    return 0 if failed == 0 and result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
