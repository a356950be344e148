"""Model <-> p4vtep.v1 messages: every conversion the service makes (the VM
both ways, used by the CLI too; switches, counters, EVPN reports, VRFs and
routes, events, and the responses built from them). The service
(``server.py``) validates requests, calls the controller and returns what
these functions build."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..events import Event
from ..model import port_security
from ..model.addressing import canonical_ip
from ..model.fabric import AllowedPair, Vm
from ..model.tenant_routes import RouteRow, VrfRow
from ..model.validation import Problem, ValidationError, normalise_mac
from . import overlay_pb2 as pb

if TYPE_CHECKING:  # the CLI imports this module: none of these at run time
    from ..evpn.status import PeerReport, RouteReport
    from ..switch.supervisor import SwitchStatus
    from .counters import Counters, Traffic


def vm_to_pb(vm: Vm, tor: str = "", error: str = "") -> pb.VM:
    """``tor`` and ``error`` are read-only fields the service fills in."""
    return pb.VM(
        name=vm.name,
        mac=vm.mac,
        ips=list(vm.ips),
        vni=vm.vni,
        server=vm.server,
        vlan=vm.vlan,
        qos=vm.qos or "",
        source=vm.source,
        tor=tor,
        error=error,
        port_security=vm.port_security,
        dhcp_server=vm.dhcp_server,
        allowed_pairs=[pair_to_pb(p) for p in vm.allowed_pairs],
    )


def pair_to_pb(pair: AllowedPair) -> pb.AllowedPair:
    return pb.AllowedPair(prefix=pair.prefix, mac=pair.mac or "")


def pair_from_pb(message: pb.AllowedPair) -> AllowedPair:
    """A pair as the model keeps it (``port_security.pair``: a bare address
    is its host prefix, the MAC normalised); the controller checks the rest."""
    return port_security.pair(message.prefix, message.mac or None)


def vm_from_pb(message: pb.VM, source: str) -> Vm:
    """The VM a request describes (MAC normalised, IPv6 addresses in their
    canonical form; read-only fields ignored). Raises ValidationError
    without a name; the controller checks the rest."""
    if not message.name:
        raise ValidationError([Problem("vm", "name", "a name is required")])
    return Vm(
        name=message.name,
        mac=normalise_mac(message.mac),
        ips=tuple(canonical_ip(ip) for ip in message.ips),
        vni=message.vni,
        server=message.server,
        vlan=message.vlan,
        qos=message.qos or None,
        source=source,
        # (unset: on, the default)
        port_security=message.port_security if message.HasField("port_security") else True,
        dhcp_server=message.dhcp_server,
        allowed_pairs=tuple(pair_from_pb(p) for p in message.allowed_pairs),
    )


def vrf_to_pb(row: VrfRow) -> pb.Vrf:
    return pb.Vrf(
        name=row.name,
        l3vni=row.l3vni,
        vnis=list(row.vnis),
        subnets=list(row.subnets),
        tors=list(row.tors),
        vms=row.vms,
    )


def route_to_pb(row: RouteRow) -> pb.Route:
    return pb.Route(
        vrf=row.vrf,
        prefix=row.prefix,
        kind=row.kind,
        vm=row.vm,
        vni=row.vni,
        tor=row.tor,
        vtep=row.vtep,
        next_hop=row.next_hop,
    )


def switch_errors(errors: Mapping[str, str]) -> str:
    """Why switches refused a VM's entries (switch -> reason), as ``VM.error``
    shows it: ``"tor1: ...; tor2: ..."`` by switch name; "" when none did."""
    return "; ".join(f"{switch}: {errors[switch]}" for switch in sorted(errors))


def vm_response(vm: pb.VM, version: int, applied: bool = False) -> pb.VMResponse:
    return pb.VMResponse(vm=vm, version=version, applied=applied)


def detach_response(version: int, applied: bool) -> pb.DetachVMResponse:
    return pb.DetachVMResponse(version=version, applied=applied)


def list_vms_response(vms: Iterable[pb.VM]) -> pb.ListVMsResponse:
    return pb.ListVMsResponse(vms=list(vms))


def switch_to_pb(name: str, status: SwitchStatus) -> pb.Switch:
    return pb.Switch(
        name=name,
        address=status.address,
        connected=status.connected,
        primary=status.primary,
        pipeline_cookie=status.cookie or 0,
        entries=status.entries,
        last_error=status.last_error,
        reconciles=status.reconciles,
        writes=status.writes,
        vms_not_installed=len(status.vm_errors),
    )


def list_switches_response(switches: Mapping[str, SwitchStatus]) -> pb.ListSwitchesResponse:
    """Every switch, by name."""
    return pb.ListSwitchesResponse(
        switches=[switch_to_pb(name, switches[name]) for name in sorted(switches)]
    )


def traffic_to_pb(traffic: Traffic) -> pb.Traffic:
    return pb.Traffic(packets=traffic.packets, bytes=traffic.bytes)


def counters_response(counters: Counters) -> pb.GetCountersResponse:
    """VMs and VNIs in the reader's order; drops and unreachable switches by
    switch name, drop reasons with no packets left out."""
    response = pb.GetCountersResponse()
    for vm in counters.vms:
        row = response.vms.add(
            name=vm.name, tor=vm.tor, tx=traffic_to_pb(vm.tx), rx=traffic_to_pb(vm.rx)
        )
        for direction, colors in vm.colors.items():
            target = row.tx_colors if direction == "tx" else row.rx_colors
            for color, traffic in colors.items():
                getattr(target, color).CopyFrom(traffic_to_pb(traffic))
        for reason, traffic in vm.port_security.items():
            row.port_security_drops.add(reason=reason, dropped=traffic_to_pb(traffic))
    for vni in counters.vnis:
        response.vnis.add(
            vni=vni.vni, tor=vni.tor, tx=traffic_to_pb(vni.tx), rx=traffic_to_pb(vni.rx)
        )
    for tor, reasons in sorted(counters.drops.items()):
        for reason, packets in reasons.items():
            if packets:
                response.drops.add(tor=tor, reason=reason, packets=packets)
    for tor, error in sorted(counters.unreachable.items()):
        response.unreachable.add(switch=tor, error=error)
    return response


def evpn_peers_response(
    asn: int, router_id: str, peers: Iterable[PeerReport], refused: Mapping[str, int]
) -> pb.EvpnPeersResponse:
    """The speaker's identity, its peers in the order given, the refusal
    counts by reason."""
    response = pb.EvpnPeersResponse(asn=asn, router_id=router_id)
    for p in peers:
        response.peers.add(
            address=p.address,
            asn=p.asn,
            state=p.state,
            uptime_seconds=p.uptime,
            routes_received=p.received,
            routes_accepted=p.accepted,
            routes_advertised=p.advertised,
        )
    for reason, routes in sorted(refused.items()):
        response.refused.add(reason=reason, routes=routes)
    return response


def evpn_route_to_pb(r: RouteReport) -> pb.EvpnRoute:
    return pb.EvpnRoute(
        type=r.type,
        vni=r.vni,
        mac=r.mac,
        ips=list(r.ips),
        vtep=r.vtep,
        sequence=r.seq,
        source=r.source,
        rd=r.rd,
        installed=r.installed,
        refused=r.refused,
        vrf=r.vrf,
        l3vni=r.l3vni,
        router_mac=r.router_mac,
    )


def evpn_routes_response(routes: Iterable[RouteReport]) -> pb.EvpnRoutesResponse:
    return pb.EvpnRoutesResponse(routes=[evpn_route_to_pb(r) for r in routes])


def list_vrfs_response(rows: Iterable[VrfRow]) -> pb.ListVrfsResponse:
    return pb.ListVrfsResponse(vrfs=[vrf_to_pb(r) for r in rows])


def list_routes_response(rows: Iterable[RouteRow]) -> pb.ListRoutesResponse:
    return pb.ListRoutesResponse(routes=[route_to_pb(r) for r in rows])


def event_to_pb(event: Event) -> pb.Event:
    """An event as WatchEvents sends it: its class name as ``kind`` and every
    field but ``switch`` and ``at`` as ``name=value`` words in ``detail``."""
    fields = {k: v for k, v in dataclasses.asdict(event).items() if k not in ("switch", "at")}
    return pb.Event(
        at=event.at,
        switch=event.switch,
        kind=type(event).__name__,
        detail=" ".join(f"{k}={_as_text(v)}" for k, v in fields.items()),
    )


def _as_text(value: object) -> str:
    """An event field as WatchEvents shows it: a tuple as a comma list."""
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
