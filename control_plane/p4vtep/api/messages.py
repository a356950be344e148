"""VM <-> p4vtep.v1.VM: the one conversion, used by the service and the CLI."""

from __future__ import annotations

from ..model import Vm
from ..tenant_routes import RouteRow, VrfRow
from ..validation import Problem, ValidationError, normalise_mac
from . import overlay_pb2 as pb


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
    )


def vm_from_pb(message: pb.VM, source: str) -> Vm:
    """The VM a request describes (MAC normalised; read-only fields ignored).
    Raises ValidationError without a name; the controller checks the rest."""
    if not message.name:
        raise ValidationError([Problem("vm", "name", "a name is required")])
    return Vm(
        name=message.name,
        mac=normalise_mac(message.mac),
        ips=tuple(message.ips),
        vni=message.vni,
        server=message.server,
        vlan=message.vlan,
        qos=message.qos or None,
        source=source,
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
