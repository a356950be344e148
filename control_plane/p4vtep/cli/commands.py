"""The commands that talk to a running controller through its gRPC API:
vm, events, status, counters, evpn, vrf and route."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import grpc


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Rows as aligned columns."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def stub(args):
    from ..api import overlay_pb2_grpc

    if args.ca:
        from ..tls import channel_credentials

        credentials = channel_credentials(args.ca, args.cert, args.key)
        return overlay_pb2_grpc.OverlayStub(grpc.secure_channel(args.api, credentials))
    return overlay_pb2_grpc.OverlayStub(grpc.insecure_channel(args.api))


def security(vm) -> str:
    """A VM's port security as the tables show it: on or off, and whether
    it may serve DHCP (docs/security.md)."""
    on = "off" if vm.HasField("port_security") and not vm.port_security else "on"
    return f"{on},dhcp-server" if vm.dhcp_server else on


def pairs_text(vm) -> str:
    """A VM's allowed pairs, ``PREFIX[,MAC]`` each, separated by ``;``."""
    return ";".join(p.prefix + (f",{p.mac}" if p.mac else "") for p in vm.allowed_pairs) or "-"


def vm_rows(vms) -> list[list]:
    return [
        [
            v.name,
            v.mac,
            ",".join(v.ips),
            v.vni,
            v.server,
            v.tor,
            v.vlan,
            v.qos or "-",
            v.source,
            security(v),
            pairs_text(v),
        ]
        for v in vms
    ]


VM_HEADERS = [
    "NAME",
    "MAC",
    "IPS",
    "VNI",
    "SERVER",
    "TOR",
    "VLAN",
    "QOS",
    "SOURCE",
    "SECURITY",
    "PAIRS",
]


def vm_attach(args) -> int:
    from ..api import overlay_pb2 as pb
    from ..api.messages import vm_to_pb
    from ..model.fabric import Vm
    from ..model.port_security import parse_pair

    vm = Vm(
        args.name,
        args.mac,
        tuple(args.ip or ()),
        args.vni,
        args.server,
        args.vlan,
        args.qos,
        "api",
        port_security=not args.no_port_security,
        dhcp_server=args.dhcp_server,
        allowed_pairs=tuple(parse_pair(text) for text in args.allowed_pair or ()),
    )
    reply = stub(args).AttachVM(pb.AttachVMRequest(vm=vm_to_pb(vm), wait=not args.no_wait))
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    print(f"version {reply.version}" + (", applied on every ToR" if reply.applied else ""))
    return 0


def vm_bulk(args) -> int:
    """Attach every VM of an inventory file, showing progress."""
    from ..api import overlay_pb2 as pb
    from ..api.messages import vm_to_pb
    from ..sources.fabric_file import load_inventory

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
    from ..api import overlay_pb2 as pb

    reply = stub(args).DetachVM(pb.DetachVMRequest(name=args.name, wait=not args.no_wait))
    print(f"detached {args.name} (version {reply.version})")
    return 0


def vm_migrate(args) -> int:
    from ..api import overlay_pb2 as pb

    reply = stub(args).MigrateVM(
        pb.MigrateVMRequest(
            name=args.name, server=args.server, vlan=args.vlan or 0, wait=not args.no_wait
        )
    )
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    print(f"version {reply.version}" + (", applied on every ToR" if reply.applied else ""))
    return 0


def vm_qos(args) -> int:
    """Give a VM a QoS policy of the fabric file, or take its policy away."""
    from ..api import overlay_pb2 as pb

    reply = stub(args).SetQoS(pb.SetQoSRequest(name=args.name, qos=args.policy or ""))
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    print(f"version {reply.version}")
    return 0


def vm_port_security(args) -> int:
    """Change a running VM's port security: on or off, DHCP server, pairs."""
    from ..api import overlay_pb2 as pb
    from ..api.messages import pair_to_pb
    from ..model.port_security import parse_pair

    request = pb.SetPortSecurityRequest(
        name=args.name,
        clear_pairs=args.clear_pairs,
        remove_pairs=[pair_to_pb(parse_pair(t)) for t in args.remove_pair or ()],
        add_pairs=[pair_to_pb(parse_pair(t)) for t in args.add_pair or ()],
        wait=not args.no_wait,
    )
    if args.state is not None:
        request.port_security = args.state == "on"
    if args.dhcp_server is not None:
        request.dhcp_server = args.dhcp_server
    reply = stub(args).SetPortSecurity(request)
    print(table(vm_rows([reply.vm]), VM_HEADERS))
    print(f"version {reply.version}" + (", applied on every ToR" if reply.applied else ""))
    return 0


def vm_list(args) -> int:
    from ..api import overlay_pb2 as pb

    reply = stub(args).ListVMs(pb.ListVMsRequest(vni=args.vni or 0, server=args.server or ""))
    print(table(vm_rows(reply.vms), VM_HEADERS))
    return 0


def vm_show(args) -> int:
    from ..api import overlay_pb2 as pb

    vm = stub(args).GetVM(pb.GetVMRequest(name=args.name))
    for key, value in zip(VM_HEADERS, vm_rows([vm])[0], strict=False):
        if key == "PAIRS":
            continue
        print(f"{key.lower():8} {value}")
    for i, p in enumerate(vm.allowed_pairs):  # (one a line: a pair has a comma)
        print(f"{'pairs' if i == 0 else '':8} {p.prefix}" + (f" mac {p.mac}" if p.mac else ""))
    if not vm.allowed_pairs:
        print(f"{'pairs':8} -")
    if vm.error:
        print(f"{'error':8} {vm.error}")
    return 0


def watch_events(args) -> int:
    """Print the controller's events as they happen, one line each, until
    interrupted, ``--count`` events were shown or ``--seconds`` passed."""
    from datetime import datetime

    from ..api import overlay_pb2 as pb

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
    from ..api import overlay_pb2 as pb

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
    from ..api import overlay_pb2 as pb

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
    guarded = [
        [c.name, c.tor, d.reason, d.dropped.packets, d.dropped.bytes]
        for c in reply.vms
        for d in c.port_security_drops
        if d.dropped.packets
    ]
    if guarded:
        print()
        print(table(guarded, ["VM", "TOR", "PORT SECURITY DROP", "PACKETS", "BYTES"]))
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
    from ..api import overlay_pb2 as pb

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
    from ..api import overlay_pb2 as pb

    reply = stub(args).EvpnRoutes(pb.EvpnRoutesRequest(vni=args.vni or 0))
    rows = [
        [
            r.type,
            # (a type 2's L2/L3 VNI, as FRR shows it; a type 5's label is its L3 VNI)
            f"{r.vni}/{r.l3vni}" if r.l3vni and r.type == 2 else r.vni,
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
    from ..api import overlay_pb2 as pb

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
    from ..api import overlay_pb2 as pb

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
