"""The p4vtep command line: the parser of every verb, and ``main``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

import grpc

from ..events import KINDS
from .commands import (
    counters,
    evpn_peers,
    evpn_routes,
    route_list,
    status,
    vm_attach,
    vm_bulk,
    vm_detach,
    vm_list,
    vm_migrate,
    vm_port_security,
    vm_qos,
    vm_show,
    vrf_list,
    watch_events,
)
from .controller_run import run_controller
from .switch_run import switch_run

DEFAULT_API = os.environ.get("P4VTEP_API", "127.0.0.1:50051")


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse type: a number of ``kind`` above zero."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not above zero")
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4vtep", description="VXLAN overlay offload to P4 ToRs")
    p.add_argument("--api", default=DEFAULT_API, help="controller API address (P4VTEP_API)")
    p.add_argument(
        "--ca",
        default=os.environ.get("P4VTEP_API_CA"),
        help="CA certificate of the API (enables TLS; P4VTEP_API_CA)",
    )
    p.add_argument(
        "--cert",
        default=os.environ.get("P4VTEP_API_CERT"),
        help="client certificate for mutual TLS (P4VTEP_API_CERT)",
    )
    p.add_argument(
        "--key",
        default=os.environ.get("P4VTEP_API_KEY"),
        help="client key for mutual TLS (P4VTEP_API_KEY)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    ctl = sub.add_parser("controller", help="run the controller").add_subparsers(
        dest="action", required=True
    )
    run = ctl.add_parser("run", help="run the controller in the foreground")
    run.add_argument("--fabric", required=True, help="fabric YAML")
    run.add_argument("--inventory", help="inventory YAML (watched for edits)")
    run.add_argument("--state", default="p4vtep-state.db", help="SQLite file of desired state")
    run.add_argument("--listen", default=DEFAULT_API, help="API listen address")
    run.add_argument("--metrics-port", type=int, default=0, help="Prometheus port (0: off)")
    run.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        help="address the Prometheus endpoint listens on (default: loopback only)",
    )
    run.add_argument(
        "--election-id",
        type=int,
        default=1,
        help="P4Runtime election id; the highest live one is primary",
    )
    run.add_argument("--resync", type=float, default=30.0, help="seconds between drift repairs")
    ha = run.add_argument_group("replicas (desired state and leadership in etcd; docs/ha.md)")
    ha.add_argument(
        "--etcd",
        metavar="HOST:PORT,...",
        help="etcd endpoints (overrides the fabric file's store: section); SQLite if neither",
    )
    ha.add_argument("--etcd-prefix", help="key prefix in etcd (default /p4vtep)")
    ha.add_argument("--replica-id", help="this replica's name, unique among the replicas")
    ha.add_argument(
        "--api-address",
        help="where other replicas send clients to reach this API (default: --listen)",
    )
    ha.add_argument("--lease-ttl", type=int, default=5, help="leader lease TTL, seconds")
    ha.add_argument(
        "--lease-margin",
        type=float,
        default=1.0,
        help="stop writing this long before the lease can expire, seconds",
    )
    bgp = run.add_argument_group("BGP EVPN (the fabric file's evpn: section; docs/evpn.md)")
    bgp.add_argument(
        "--evpn-address",
        metavar="IP",
        help="the speaker listens on this address only and opens its sessions from it; "
        "also the router id unless --evpn-router-id (replicas: each its own, "
        "every one a neighbor of the peers)",
    )
    bgp.add_argument(
        "--evpn-router-id",
        metavar="IPV4",
        help="this speaker's BGP identifier (default: --evpn-address, else the fabric file's)",
    )
    run.add_argument("-v", "--verbose", action="store_true")
    run.set_defaults(func=run_controller)

    switch = sub.add_parser("switch", help="BMv2 switches").add_subparsers(
        dest="action", required=True
    )
    srun = switch.add_parser(
        "run",
        help="start simple_switch_grpc for one ToR of the fabric (in the foreground)",
        description="Start simple_switch_grpc for one ToR with every option the p4vtep "
        "pipeline needs: device id and P4Runtime address from the fabric file, CPU port, "
        "priority queues, replication-engine limits, and the ToR's TLS files if it has any.",
    )
    srun.add_argument("tor", help="ToR name in the fabric file")
    srun.add_argument("--fabric", required=True, help="fabric YAML")
    srun.add_argument(
        "-i",
        "--interface",
        action="append",
        metavar="PORT@IFACE",
        help="attach a network interface to a switch port (repeat)",
    )
    srun.add_argument(
        "--thrift-port",
        type=int,
        help="BMv2 Thrift port (default: the ToR's thrift_port, else 9089 + device id)",
    )
    srun.add_argument("--log-file", help="BMv2's own log (flushed per line)")
    srun.add_argument("--binary", help="simple_switch_grpc to run ($SIMPLE_SWITCH_GRPC, PATH)")
    srun.add_argument(
        "--print-command", action="store_true", help="print the command line instead of running it"
    )
    srun.set_defaults(func=switch_run)

    vm = sub.add_parser("vm", help="VM bindings").add_subparsers(dest="action", required=True)
    attach = vm.add_parser("attach", help="attach (or replace) a VM")
    attach.add_argument("name")
    attach.add_argument("--mac", required=True)
    attach.add_argument("--ip", action="append", help="repeat for several")
    attach.add_argument("--vni", type=int, required=True)
    attach.add_argument("--server", required=True)
    attach.add_argument("--vlan", type=int, required=True, help="the VF's VLAN")
    attach.add_argument("--qos")
    attach.add_argument(
        "--allowed-pair",
        action="append",
        metavar="PREFIX[,MAC]",
        help="an extra prefix (and MAC) the VM may send from, e.g. a VRRP address "
        "(repeat; docs/security.md)",
    )
    attach.add_argument(
        "--no-port-security",
        action="store_true",
        help="check only the VM's source MAC (a trusted appliance: firewall, router)",
    )
    attach.add_argument(
        "--dhcp-server", action="store_true", help="the VM may send DHCP server messages"
    )
    attach.add_argument("--no-wait", action="store_true", help="do not wait for the switches")
    attach.set_defaults(func=vm_attach)
    bulk = vm.add_parser("attach-file", help="attach every VM of an inventory file")
    bulk.add_argument("file")
    bulk.set_defaults(func=vm_bulk)
    detach = vm.add_parser("detach")
    detach.add_argument("name")
    detach.add_argument("--no-wait", action="store_true")
    detach.set_defaults(func=vm_detach)
    migrate = vm.add_parser("migrate", help="move a VM (make-before-break)")
    migrate.add_argument("name")
    migrate.add_argument("--server", required=True)
    migrate.add_argument("--vlan", type=int)
    migrate.add_argument(
        "--no-wait",
        action="store_true",
        help="return once the move is committed, not when every ToR holds it",
    )
    migrate.set_defaults(func=vm_migrate)
    qos = vm.add_parser("qos", help="set a VM's QoS policy, or --clear it")
    qos.add_argument("name")
    policy_or_clear = qos.add_mutually_exclusive_group(required=True)
    policy_or_clear.add_argument(
        "policy", nargs="?", help="a policy name from the fabric file's qos_policies:"
    )
    policy_or_clear.add_argument("--clear", action="store_true", help="remove the VM's policy")
    qos.set_defaults(func=vm_qos)
    security = vm.add_parser(
        "port-security",
        help="change a VM's port security: on/off, DHCP server, allowed pairs",
        description="Change a running VM's port security (docs/security.md). Pairs are "
        "cleared first (--clear-pairs), then removed, then added.",
    )
    security.add_argument("name")
    security.add_argument(
        "state", nargs="?", choices=("on", "off"), help="turn port security on or off"
    )
    dhcp = security.add_mutually_exclusive_group()
    dhcp.add_argument(
        "--dhcp-server",
        dest="dhcp_server",
        action="store_const",
        const=True,
        help="the VM may send DHCP server messages",
    )
    dhcp.add_argument(
        "--no-dhcp-server",
        dest="dhcp_server",
        action="store_const",
        const=False,
        help="drop the VM's DHCP server messages (the default)",
    )
    security.add_argument("--add-pair", action="append", metavar="PREFIX[,MAC]")
    security.add_argument("--remove-pair", action="append", metavar="PREFIX[,MAC]")
    security.add_argument("--clear-pairs", action="store_true", help="remove every pair")
    security.add_argument("--no-wait", action="store_true")
    security.set_defaults(func=vm_port_security)
    listing = vm.add_parser("list")
    listing.add_argument("--vni", type=int)
    listing.add_argument("--server")
    listing.set_defaults(func=vm_list)
    show = vm.add_parser("show")
    show.add_argument("name")
    show.set_defaults(func=vm_show)

    sub.add_parser("status", help="switch sessions").set_defaults(func=status)
    watch = sub.add_parser(
        "events", help="print the controller's events as they happen (WatchEvents)"
    )
    watch.add_argument(
        "--kind", action="append", choices=KINDS, help="only events of this kind (repeat)"
    )
    watch.add_argument("--count", type=positive(int), help="stop after this many events")
    watch.add_argument("--seconds", type=positive(float), help="stop after this long")
    watch.set_defaults(func=watch_events)
    cnt = sub.add_parser("counters", help="per-VM, per-VNI and drop counters")
    cnt.add_argument("--vm", action="append")
    cnt.add_argument("--vni", type=int, action="append")
    cnt.set_defaults(func=counters)

    evpn = sub.add_parser("evpn", help="BGP EVPN sessions and routes").add_subparsers(
        dest="action", required=True
    )
    evpn.add_parser(
        "peers", help="sessions: state, uptime, routes received/accepted/advertised"
    ).set_defaults(func=evpn_peers)
    routes = evpn.add_parser(
        "routes", help="learned, static and advertised routes, and the refused ones"
    )
    routes.add_argument("--vni", type=int, help="only this VNI")
    routes.set_defaults(func=evpn_routes)

    vrf = sub.add_parser("vrf", help="tenants' IP VRFs (routing)").add_subparsers(
        dest="action", required=True
    )
    vrf.add_parser("list", help="VRFs: L3 VNI, VNIs, subnets, ToRs, VMs").set_defaults(
        func=vrf_list
    )
    route = sub.add_parser("route", help="routes between a tenant's subnets").add_subparsers(
        dest="action", required=True
    )
    rlist = route.add_parser("list", help="host, static and gateway routes, and where each leads")
    rlist.add_argument("--vrf", help="only this VRF")
    rlist.set_defaults(func=route_list)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (``p4vtep events | head``): what it wanted was
        # shown. Standard output now goes nowhere, so that the interpreter's
        # flush at exit does not fail on the closed pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except grpc.RpcError as exc:
        print(f"p4vtep: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 1
    except Exception as exc:  # config errors and the like: one clear line
        from ..model.validation import ValidationError
        from ..sources.fabric_file import ConfigError

        if isinstance(exc, (ConfigError, ValidationError, FileNotFoundError)):
            print(f"p4vtep: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
