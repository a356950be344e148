"""`p4vtep switch run`: one ToR of the fabric as a BMv2 simple_switch_grpc
with every option the pipeline needs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def parse_interfaces(specs: Sequence[str]) -> dict[int, str]:
    """["1@veth1", ...] -> {1: "veth1", ...}; ValueError names a bad one."""
    ports: dict[int, str] = {}
    for spec in specs:
        port, at, iface = spec.partition("@")
        if not at or not port.isdigit() or not iface:
            raise ValueError(f"-i {spec}: expected PORT@INTERFACE, e.g. 1@veth1")
        if int(port) in ports:
            raise ValueError(f"-i {spec}: port {port} is already {ports[int(port)]}")
        ports[int(port)] = iface
    return ports


def switch_run(args: argparse.Namespace) -> int:
    """Start simple_switch_grpc for one ToR of the fabric, in the foreground
    (this process becomes the switch), with every option the pipeline needs."""
    import shlex

    from ..model.validation import ValidationError, check_fabric
    from ..sources.fabric_file import ConfigError, load_fabric
    from ..switch.bmv2 import find_simple_switch_grpc, switch_command, switch_environment
    from ..switch.queue_rates import thrift_address

    fabric = load_fabric(args.fabric)
    problems = check_fabric(fabric)
    if problems:
        raise ValidationError(problems)
    tor = fabric.tors.get(args.tor)
    if tor is None:
        raise ConfigError(
            f"{args.fabric}: no ToR named {args.tor!r} (has: {', '.join(sorted(fabric.tors))})"
        )
    binary = args.binary or find_simple_switch_grpc()
    if binary is None:
        raise FileNotFoundError("simple_switch_grpc not found (see docs/toolchain.md)")
    try:
        ports = parse_interfaces(args.interface or [])
        cmd = switch_command(
            binary,
            tor.device_id,
            tor.address,
            args.thrift_port or thrift_address(tor)[1],
            ports,
            tls=tor.tls,
            log_file=args.log_file,
        )
        env = switch_environment()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    used = {u.port: "uplink" for u in tor.uplinks}
    used.update({s.port: f"server {s.name}" for s in fabric.servers.values() if s.tor == tor.name})
    for port, what in sorted(used.items()):
        if port not in ports:
            print(f"p4vtep: warning: {tor.name} port {port} ({what}) has no -i", file=sys.stderr)
    if args.print_command:
        # (as a shell would run it: the allocator the switch would get, first)
        preload = env.get("LD_PRELOAD")
        changed = [f"LD_PRELOAD={preload}"] if preload != os.environ.get("LD_PRELOAD") else []
        print(shlex.join([*changed, *cmd]))
        return 0
    sys.stdout.flush()
    os.execve(binary, cmd, env)
    return 0  # not reached
