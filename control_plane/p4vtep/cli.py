"""The p4vtep command: run the controller, or talk to a running one."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import grpc

from .events import KINDS

if TYPE_CHECKING:
    from .evpn.options import EvpnOptions
    from .replica import SourceFactory
    from .state.etcd_connection import EtcdSettings

DEFAULT_API = os.environ.get("P4VTEP_API", "127.0.0.1:50051")


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Rows as aligned columns."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --- controller run ------------------------------------------------------------------
def run_controller(args: argparse.Namespace) -> int:
    from .api.server import serve
    from .config import load_fabric
    from .controller import Controller
    from .dataplane.artifacts import bmv2_pipeline
    from .sources.inventory_file import InventoryWatcher
    from .store import Store

    logging.basicConfig(
        level=logging.INFO if not args.verbose else logging.DEBUG,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    fabric = load_fabric(args.fabric)
    etcd = etcd_settings(args)
    libvirt_uris = {s.name: s.libvirt for s in fabric.servers.values() if s.libvirt}
    replica = None
    watcher = None
    libvirt_source = None
    evpn_source = None
    if etcd is None:
        controller = Controller(
            fabric,
            bmv2_pipeline(),
            Store(args.state),
            election_id=args.election_id,
            resync_seconds=args.resync,
        )
        if fabric.evpn is not None:
            from .sources.evpn import EvpnSource

            evpn_source = EvpnSource(controller, evpn_options(args))
        if args.inventory:
            watcher = InventoryWatcher(controller, args.inventory)
            watcher.load_now()
        if evpn_source is not None:
            # Before the supervisors: the switches get the learned routes at once.
            evpn_source.start()
        controller.start()
        if watcher:
            watcher.start()
        if libvirt_uris:
            from .sources.libvirt_domains import LibvirtSource

            libvirt_source = LibvirtSource(controller, libvirt_uris)
            libvirt_source.start()
    else:
        from .replica import Replica, SharedSourceFactory

        shared: list[SharedSourceFactory] = []
        if fabric.evpn is not None:
            # Every replica speaks BGP and learns; only the leader commits
            # (docs/ha.md, "BGP EVPN with replicas").
            from .sources.evpn import EvpnSource

            options = evpn_options(args)
            if options.router_id is None:
                logging.getLogger(__name__).warning(
                    "EVPN with replicas: this replica uses the fabric file's router id %s; "
                    "give each replica its own (--evpn-address or --evpn-router-id)",
                    fabric.evpn.router_id,
                )
            shared.append(lambda controller: EvpnSource(controller, options))
        replica = Replica(
            fabric,
            bmv2_pipeline(),
            etcd,
            args.replica_id,
            args.api_address or args.listen,
            ttl=args.lease_ttl,
            margin=args.lease_margin,
            resync_seconds=args.resync,
            sources=leader_sources(args.inventory, libvirt_uris),
            shared=shared,
        )
        controller = replica.controller
        if fabric.evpn is not None:
            from .sources.evpn import EvpnSource

            evpn_source = next(s for s in replica.shared_sources if isinstance(s, EvpnSource))
        replica.start()
    # BMv2 ToRs: the servers' link rates as egress queue rates (queue_rates.py).
    from .queue_rates import QueueRateSync

    queue_rates = QueueRateSync(controller)
    queue_rates.start()
    credentials = None
    if fabric.api_tls is not None:
        from .tls import server_credentials

        credentials = server_credentials(fabric.api_tls)
    evpn = evpn_source.service if evpn_source is not None else None
    server = serve(controller, args.listen, credentials=credentials, evpn=evpn)
    if args.metrics_port:
        from .metrics import start_metrics

        start_metrics(controller, args.metrics_port, args.metrics_address, evpn=evpn)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    role = f", replica {args.replica_id} (etcd)" if replica is not None else ""
    print(
        f"p4vtep controller: {len(fabric.tors)} ToRs, {len(controller.vms)} VMs, "
        f"API on {args.listen}{role}",
        flush=True,
    )
    stop.wait()
    queue_rates.stop()
    server.stop(grace=1)
    if watcher:
        watcher.stop()
    if libvirt_source:
        libvirt_source.stop()
    if replica is not None:
        replica.stop()  # (and its EVPN source)
    else:
        controller.stop()
        if evpn_source is not None:
            evpn_source.stop()
    return 0


def evpn_options(args: argparse.Namespace) -> EvpnOptions:
    """How this process runs its BGP speaker: ``--evpn-address`` is where
    gobgpd listens and what its sessions come from, and the router id unless
    ``--evpn-router-id`` says otherwise."""
    from .config import ConfigError
    from .evpn.options import EvpnOptions

    address = args.evpn_address
    router_id = args.evpn_router_id or address
    if router_id is not None:
        import ipaddress

        try:
            ipaddress.IPv4Address(router_id)
        except ValueError:
            raise ConfigError(
                f"EVPN router id {router_id!r} is not an IPv4 address (--evpn-router-id)"
            ) from None
    return EvpnOptions(
        listen_addresses=(address,) if address else (),
        local_address=address,
        router_id=router_id,
    )


def leader_sources(inventory: str | None, libvirt_uris: dict[str, str]) -> list[SourceFactory]:
    """The inputs a replica runs while it leads: each replica reads its own
    copy of the inventory file and the fabric file's libvirt URIs. A bad
    inventory file stops the start here, as it does without etcd."""
    from .config import load_inventory
    from .sources.inventory_file import InventoryWatcher

    sources: list[SourceFactory] = []
    if inventory:
        load_inventory(inventory)
        sources.append(lambda controller: InventoryWatcher(controller, inventory))
    if libvirt_uris:
        from .sources.libvirt_domains import LibvirtSource

        sources.append(lambda controller: LibvirtSource(controller, libvirt_uris))
    return sources


def etcd_settings(args: argparse.Namespace) -> EtcdSettings | None:
    """etcd from the command line (--etcd) or else the fabric file's
    ``store:`` section; None: the SQLite store (--state)."""
    from .config import ConfigError, load_store
    from .state.etcd_connection import EtcdSettings

    settings = load_store(args.fabric)
    if args.etcd:
        endpoints = tuple(e.strip() for e in args.etcd.split(",") if e.strip())
        try:
            settings = EtcdSettings(
                endpoints,
                args.etcd_prefix or (settings.prefix if settings else "/p4vtep"),
                settings.tls if settings else None,
            )
        except ValueError as exc:
            raise ConfigError(f"--etcd {args.etcd}: {exc}") from None
    if settings is not None and not args.replica_id:
        raise ConfigError("etcd replicas need --replica-id (unique per controller)")
    return settings


# --- switch run ------------------------------------------------------------------------
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

    from .bmv2 import find_simple_switch_grpc, switch_command
    from .config import ConfigError, load_fabric
    from .queue_rates import thrift_address
    from .validation import ValidationError, check_fabric

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
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    used = {u.port: "uplink" for u in tor.uplinks}
    used.update({s.port: f"server {s.name}" for s in fabric.servers.values() if s.tor == tor.name})
    for port, what in sorted(used.items()):
        if port not in ports:
            print(f"p4vtep: warning: {tor.name} port {port} ({what}) has no -i", file=sys.stderr)
    if args.print_command:
        print(shlex.join(cmd))
        return 0
    sys.stdout.flush()
    os.execv(binary, cmd)
    return 0  # not reached


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


# --- API client commands -------------------------------------------------------------
def stub(args):
    from .api import overlay_pb2_grpc

    if args.ca:
        from .tls import channel_credentials

        credentials = channel_credentials(args.ca, args.cert, args.key)
        return overlay_pb2_grpc.OverlayStub(grpc.secure_channel(args.api, credentials))
    return overlay_pb2_grpc.OverlayStub(grpc.insecure_channel(args.api))


def vm_rows(vms) -> list[list]:
    return [
        [v.name, v.mac, ",".join(v.ips), v.vni, v.server, v.tor, v.vlan, v.qos or "-", v.source]
        for v in vms
    ]


VM_HEADERS = ["NAME", "MAC", "IPS", "VNI", "SERVER", "TOR", "VLAN", "QOS", "SOURCE"]


def vm_attach(args) -> int:
    from .api import overlay_pb2 as pb
    from .api.messages import vm_to_pb
    from .model import Vm

    vm = Vm(
        args.name, args.mac, tuple(args.ip or ()), args.vni, args.server, args.vlan, args.qos, "api"
    )
    reply = stub(args).AttachVM(pb.AttachVMRequest(vm=vm_to_pb(vm), wait=not args.no_wait))
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    print(f"version {reply.version}" + (", applied on every ToR" if reply.applied else ""))
    return 0


def vm_bulk(args) -> int:
    """Attach every VM of an inventory file, showing progress."""
    from .api import overlay_pb2 as pb
    from .api.messages import vm_to_pb
    from .config import load_inventory

    vms = load_inventory(args.file)
    client = stub(args)
    last = 0
    for done, vm in enumerate(vms, start=1):
        reply = client.AttachVM(pb.AttachVMRequest(vm=vm_to_pb(vm)))
        last = reply.version
        print(f"\rattached {done}/{len(vms)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"version {last}")
    return 0


def vm_detach(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).DetachVM(pb.DetachVMRequest(name=args.name, wait=not args.no_wait))
    print(f"detached {args.name} (version {reply.version})")
    return 0


def vm_migrate(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).MigrateVM(
        pb.MigrateVMRequest(name=args.name, server=args.server, vlan=args.vlan or 0)
    )
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    return 0


def vm_qos(args) -> int:
    """Give a VM a QoS policy of the fabric file, or take its policy away."""
    from .api import overlay_pb2 as pb

    reply = stub(args).SetQoS(pb.SetQoSRequest(name=args.name, qos=args.policy or ""))
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    print(f"version {reply.version}")
    return 0


def vm_list(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).ListVMs(pb.ListVMsRequest(vni=args.vni or 0, server=args.server or ""))
    print(table(vm_rows(reply.vms), VM_HEADERS))
    return 0


def vm_show(args) -> int:
    from .api import overlay_pb2 as pb

    vm = stub(args).GetVM(pb.GetVMRequest(name=args.name))
    for key, value in zip(VM_HEADERS, vm_rows([vm])[0], strict=False):
        print(f"{key.lower():8} {value}")
    if vm.error:
        print(f"{'error':8} {vm.error}")
    return 0


def watch_events(args) -> int:
    """Print the controller's events as they happen, one line each, until
    interrupted, ``--count`` events were shown or ``--seconds`` passed."""
    from datetime import datetime

    from .api import overlay_pb2 as pb

    stream = stub(args).WatchEvents(pb.WatchEventsRequest(), timeout=args.seconds)
    kinds = set(args.kind or ())
    shown = 0
    try:
        for event in stream:
            if kinds and event.kind not in kinds:
                continue
            at = datetime.fromtimestamp(event.at).isoformat(sep=" ", timespec="milliseconds")
            print(f"{at}  {event.switch or '-'}  {event.kind}  {event.detail}".rstrip(), flush=True)
            shown += 1
            if shown == args.count:
                break
    except grpc.RpcError as exc:
        if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:  # (--seconds ran out)
            raise
    except KeyboardInterrupt:
        pass
    finally:
        stream.cancel()
    return 0


def status(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).ListSwitches(pb.ListSwitchesRequest())
    rows = [
        [
            s.name,
            s.address,
            "yes" if s.connected else "no",
            "yes" if s.primary else "no",
            f"{s.pipeline_cookie:016x}" if s.pipeline_cookie else "-",
            s.entries,
            s.reconciles,
            s.writes,
            s.last_error or "-",
        ]
        for s in reply.switches
    ]
    print(
        table(
            rows,
            [
                "SWITCH",
                "ADDRESS",
                "CONNECTED",
                "PRIMARY",
                "COOKIE",
                "ENTRIES",
                "RECONCILES",
                "WRITES",
                "LAST ERROR",
            ],
        )
    )
    return 0


def counters(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).GetCounters(pb.GetCountersRequest(vms=args.vm or [], vnis=args.vni or []))
    print(
        table(
            [
                [c.name, c.tor, c.tx.packets, c.tx.bytes, c.rx.packets, c.rx.bytes]
                for c in reply.vms
            ],
            ["VM", "TOR", "TX PKTS", "TX BYTES", "RX PKTS", "RX BYTES"],
        )
    )
    colored = [
        [c.name, c.tor, direction]
        + [x for t in (colors.green, colors.yellow, colors.red) for x in (t.packets, t.bytes)]
        for c in reply.vms
        for direction, field in (("tx", "tx_colors"), ("rx", "rx_colors"))
        if c.HasField(field)
        for colors in [getattr(c, field)]
    ]
    if colored:
        print()
        print(
            table(
                colored,
                ["VM", "TOR", "DIR", "GREEN PKTS", "GREEN BYTES", "YELLOW PKTS", "YELLOW BYTES"]
                + ["RED PKTS", "RED BYTES"],
            )
        )
    print()
    print(
        table(
            [
                [c.vni, c.tor, c.tx.packets, c.tx.bytes, c.rx.packets, c.rx.bytes]
                for c in reply.vnis
            ],
            ["VNI", "TOR", "TX PKTS", "TX BYTES", "RX PKTS", "RX BYTES"],
        )
    )
    if reply.drops:
        print()
        print(
            table(
                [[d.tor, d.reason, d.packets] for d in reply.drops],
                ["TOR", "DROP REASON", "PACKETS"],
            )
        )
    if reply.unreachable:
        print()
    for s in reply.unreachable:
        print(f"{s.switch}: unreachable, its counters are missing: {s.error}")
    return 0


def duration(seconds: float) -> str:
    """An uptime as 1d02h03m, 2h03m04s or 3m04s; "-" for none."""
    if seconds <= 0:
        return "-"
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02}h{minutes:02}m"
    if hours:
        return f"{hours}h{minutes:02}m{s:02}s"
    return f"{minutes}m{s:02}s"


def evpn_peers(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).EvpnPeers(pb.EvpnPeersRequest())
    print(f"local AS {reply.asn}, router id {reply.router_id}")
    rows = [
        [
            p.address,
            p.asn,
            p.state,
            duration(p.uptime_seconds),
            p.routes_received,
            p.routes_accepted,
            p.routes_advertised,
        ]
        for p in reply.peers
    ]
    print(table(rows, ["PEER", "ASN", "STATE", "UPTIME", "RECEIVED", "ACCEPTED", "ADVERTISED"]))
    if reply.refused:
        print()
        print(table([[r.reason, r.routes] for r in reply.refused], ["REFUSED", "ROUTES"]))
    return 0


def evpn_routes(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).EvpnRoutes(pb.EvpnRoutesRequest(vni=args.vni or 0))
    rows = [
        [
            r.type,
            f"{r.vni}/{r.l3vni}" if r.l3vni else r.vni,  # (L2/L3 VNI, as FRR shows it)
            r.mac or "-",
            ",".join(r.ips) or "-",
            r.vtep,
            r.sequence if r.type == 2 else "-",
            r.source,
            r.rd or "-",
            r.vrf or "-",
            r.router_mac or "-",
            ("advertised" if r.source == "local" else "installed") if r.installed else r.refused,
        ]
        for r in reply.routes
    ]
    headers = ["TYPE", "VNI", "MAC", "IPS", "VTEP", "SEQ", "SOURCE", "RD", "VRF", "RMAC", "STATUS"]
    print(table(rows, headers))
    return 0


def vrf_list(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).ListVrfs(pb.ListVrfsRequest())
    rows = [
        [
            v.name,
            v.l3vni,
            ",".join(map(str, v.vnis)),
            ",".join(v.subnets),
            ",".join(v.tors) or "-",
            v.vms,
        ]
        for v in reply.vrfs
    ]
    print(table(rows, ["VRF", "L3VNI", "VNIS", "SUBNETS", "TORS", "VMS"]))
    return 0


def route_list(args) -> int:
    from .api import overlay_pb2 as pb

    reply = stub(args).ListRoutes(pb.ListRoutesRequest(vrf=args.vrf or ""))

    def leads_to(r) -> str:
        if r.kind == "gateway":
            return f"gateway of VNI {r.vni}, on every ToR of the VRF"
        if not r.vm:
            return f"no VM owns {r.next_hop}: not installed"
        return f"{r.vm} (VNI {r.vni}) on {r.tor}, VTEP {r.vtep}"

    rows = [[r.vrf, r.prefix, r.kind, r.next_hop or "-", leads_to(r)] for r in reply.routes]
    print(table(rows, ["VRF", "PREFIX", "KIND", "VIA", "LEADS TO"]))
    return 0


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
    migrate.set_defaults(func=vm_migrate)
    qos = vm.add_parser("qos", help="set a VM's QoS policy, or --clear it")
    qos.add_argument("name")
    policy_or_clear = qos.add_mutually_exclusive_group(required=True)
    policy_or_clear.add_argument(
        "policy", nargs="?", help="a policy name from the fabric file's qos_policies:"
    )
    policy_or_clear.add_argument("--clear", action="store_true", help="remove the VM's policy")
    qos.set_defaults(func=vm_qos)
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
        from .config import ConfigError
        from .validation import ValidationError

        if isinstance(exc, (ConfigError, ValidationError, FileNotFoundError)):
            print(f"p4vtep: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
