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
import subprocess
import sys
from pathlib import Path

from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, find_simple_switch_grpc

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

PORT_COUNT = 8  # switch ports 1..8, PTF device 0 ports 1..8
GRPC_PORT = 9559
# Probe switches (test_qos.py, QueueTest): the same pipeline with fewer
# priority queues, so that a frame whose queue does not exist is dropped
# (BMv2: "Priority out of range"), which shows which queue a frame took.
# PTF device d, switch ports 1..PROBE_PORT_COUNT, gRPC port GRPC_PORT + d.
PROBE_QUEUES = {1: 1, 2: 7}  # PTF device -> --priority-queues
PROBE_PORT_COUNT = 4  # the reference fabric's two access ports and two uplinks

# One line that says why the suite did not run and what to set (issue 9).
SWITCH_MISSING = (
    "simple_switch_grpc not found: run `make toolchain`, or set SIMPLE_SWITCH_GRPC "
    "or P4VTEP_TOOLCHAIN_ARCHIVE (docs/toolchain.md)"
)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


class Namespace:
    """A private network namespace, deleted (with its veths) on exit."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> Namespace:
        sh("ip", "netns", "add", self.name)
        for key in ("all", "default"):
            sh(
                "ip",
                "netns",
                "exec",
                self.name,
                "sysctl",
                "-qw",
                f"net.ipv6.conf.{key}.disable_ipv6=1",
            )
        sh("ip", "-n", self.name, "link", "set", "lo", "up")
        return self

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.name, *args], **kwargs)

    def __exit__(self, *exc) -> None:
        sh("ip", "netns", "delete", self.name, check=False)


def summarise(output: str) -> tuple[int, int, int]:
    """(passed, failed, skipped) from unittest's closing lines."""
    ran = re.search(r"^Ran (\d+) tests?", output, re.MULTILINE)
    total = int(ran.group(1)) if ran else 0
    failed = skipped = 0
    closing = re.search(r"^(OK|FAILED)(?: \((.*)\))?$", output, re.MULTILINE)
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
    parser.add_argument(
        "--switch-log",
        action="store_true",
        help="run the switch with --log-console (slow; for debugging)",
    )
    args = parser.parse_args()

    if find_simple_switch_grpc() is None:
        print(f"SKIP ptf: {SWITCH_MISSING}")
        return 0
    if os.geteuid() != 0:
        print("SKIP ptf: needs root to create a network namespace and veths")
        return 0
    pipeline = bmv2_pipeline()
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    ptf_bin = str(Path(sys.executable).with_name("ptf"))

    with (
        Namespace(f"p4vtep-ptf-{os.getpid()}") as ns,
        VethSet("", PORT_COUNT, netns=ns.name) as veths,
        VethSet("p1", PROBE_PORT_COUNT, netns=ns.name) as probe1_veths,
        VethSet("p2", PROBE_PORT_COUNT, netns=ns.name) as probe2_veths,
    ):
        probe_veths = {1: probe1_veths, 2: probe2_veths}
        probes = {
            device: Bmv2Switch(
                f"probe{device}",
                1 + device,
                GRPC_PORT + device,
                9090 + device,
                log_dir=log_dir,
                netns=ns.name,
                priority_queues=queues,
                ports={i + 1: sw for i, (sw, _) in enumerate(probe_veths[device].pairs)},
            )
            for device, queues in PROBE_QUEUES.items()
        }
        switch = Bmv2Switch(
            "switch",
            1,
            GRPC_PORT,
            9090,
            log_dir=log_dir,
            netns=ns.name,
            debug_log=args.switch_log,
            ports={i + 1: sw for i, (sw, _) in enumerate(veths.pairs)},
        )
        switch.start()
        try:
            for probe in probes.values():
                probe.start()
            probe_params = ",".join(
                f"{device}/{probe.device_id}/{PROBE_QUEUES[device]}/{probe.grpc_address}"
                for device, probe in probes.items()
            )
            params = (
                f"grpc_addr='{switch.grpc_address}';device_id=1;"
                f"p4info='{pipeline.p4info_path}';bmv2_json='{pipeline.device_config_path}';"
                f"probes='{probe_params}';thrift_port={switch.thrift_port}"
            )
            ptf_cmd = [
                ptf_bin,
                "--test-dir",
                str(HERE),
                "--test-params",
                params,
                "--log-file",
                str(log_dir / "ptf.log"),
                "--socket-recv-size",
                "10240000",
            ]
            for i, (_, host) in enumerate(veths.pairs):
                ptf_cmd += ["--interface", f"0-{i + 1}@{host}"]
            for device, probe_set in probe_veths.items():
                for i, (_, host) in enumerate(probe_set.pairs):
                    ptf_cmd += ["--interface", f"{device}-{i + 1}@{host}"]
            ptf_cmd += args.tests
            result = ns.popen(
                ptf_cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=str(log_dir),
            )
            output, _ = result.communicate()
            print(output, end="")
        finally:
            switch.stop()
            for probe in probes.values():
                probe.stop()
    passed, failed, skipped = summarise(output)
    suffix = f", {skipped} skipped" if skipped else ""
    print(f"ptf: {passed} passed, {failed} failed{suffix}")
    return 0 if failed == 0 and result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
