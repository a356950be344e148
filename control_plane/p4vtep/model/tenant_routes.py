"""What each VRF routes, and where each route leads, read from the desired state
(`p4vtep vrf list`, `p4vtep route list`, the API's ListVrfs / ListRoutes, the
route metrics). The ToRs hold the same routes (compiler/routing.py); this is
the operator's view of them, not a read of the switches."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .addressing import IPNetwork, ip_network
from .fabric import Fabric, Vm

# A route's kind: to a VM's IP, a static route via a VM, or a subnet's gateway
# (answered by every ToR holding the VRF).
HOST, STATIC, GATEWAY = "host", "static", "gateway"


@dataclass(frozen=True)
class VrfRow:
    name: str
    l3vni: int
    vnis: tuple[int, ...]
    subnets: tuple[str, ...]
    tors: tuple[str, ...]  # the ToRs holding it: those hosting a VM of its VNIs
    vms: int


@dataclass(frozen=True)
class RouteRow:
    vrf: str
    prefix: str
    kind: str  # HOST, STATIC or GATEWAY
    vm: str  # the VM it leads to ("" for a gateway, or a static route with no owner)
    vni: int  # the VM's VNI, or the gateway's
    tor: str  # the ToR the VM is on ("" for a gateway: every ToR of the VRF)
    vtep: str  # that ToR's VTEP, where the other ToRs tunnel to
    next_hop: str = ""  # a static route's next hop IP


def vrf_rows(fabric: Fabric, vms: Iterable[Vm]) -> list[VrfRow]:
    vms = list(vms)
    rows = []
    for name in sorted(fabric.vrfs):
        vrf = fabric.vrfs[name]
        vnis = tuple(sorted(v.vni for v in fabric.vnis.values() if v.vrf == name))
        members = [vm for vm in vms if vm.vni in vnis]
        rows.append(
            VrfRow(
                name,
                vrf.l3vni,
                vnis,
                tuple(s.prefix for vni in vnis for s in fabric.vnis[vni].subnets),
                tuple(sorted({fabric.servers[vm.server].tor for vm in members})),
                len(members),
            )
        )
    return rows


def route_rows(fabric: Fabric, vms: Iterable[Vm], vrf: str | None = None) -> list[RouteRow]:
    """Every route of one VRF (or all), sorted by VRF and prefix."""
    names = [vrf] if vrf is not None else sorted(fabric.vrfs)
    by_vni: dict[int, list[Vm]] = {}
    for vm in vms:
        by_vni.setdefault(vm.vni, []).append(vm)
    rows = []
    for name in names:
        vnis = sorted(v.vni for v in fabric.vnis.values() if v.vrf == name)
        owners = {ip: vm for vni in vnis for vm in by_vni.get(vni, ()) for ip in vm.ips}
        for vni in vnis:
            for subnet in fabric.vnis[vni].subnets:
                rows.append(RouteRow(name, _host_prefix(subnet.gateway), GATEWAY, "", vni, "", ""))
        for ip, vm in owners.items():
            rows.append(_to_vm(fabric, name, _host_prefix(ip), HOST, vm))
        for route in fabric.vrfs[name].routes:
            owner = owners.get(route.next_hop)
            if owner is None:
                rows.append(RouteRow(name, route.prefix, STATIC, "", 0, "", "", route.next_hop))
            else:
                rows.append(_to_vm(fabric, name, route.prefix, STATIC, owner, route.next_hop))
    return sorted(rows, key=lambda r: (r.vrf, _network_order(r.prefix), r.kind))


def _host_prefix(ip: str) -> str:
    """An address as the prefix of its host route: /32, or /128 for IPv6."""
    return f"{ip}/128" if ":" in ip else f"{ip}/32"


def _network_order(prefix: str) -> tuple[int, IPNetwork]:
    """IPv4 networks before IPv6 ones (the two do not compare), each in address order."""
    net = ip_network(prefix)
    return net.version, net


def _to_vm(
    fabric: Fabric, vrf: str, prefix: str, kind: str, vm: Vm, next_hop: str = ""
) -> RouteRow:
    tor = fabric.servers[vm.server].tor
    return RouteRow(vrf, prefix, kind, vm.name, vm.vni, tor, fabric.tors[tor].vtep_ip, next_hop)


def route_counts(fabric: Fabric, vms: Iterable[Vm]) -> dict[tuple[str, str], int]:
    """(VRF, kind) -> how many routes: `route_rows` counted, without building or
    sorting the rows (a metrics scrape over every VM)."""
    counts = {(name, kind): 0 for name in fabric.vrfs for kind in (HOST, STATIC, GATEWAY)}
    vrf_of = {v.vni: v.vrf for v in fabric.vnis.values() if v.vrf is not None}
    owned: dict[str, set[str]] = {name: set() for name in fabric.vrfs}
    for vm in vms:
        vrf = vrf_of.get(vm.vni)
        if vrf in owned:
            counts[(vrf, HOST)] += len(vm.ips)
            owned[vrf].update(vm.ips)
    for vni, vrf in vrf_of.items():
        if vrf in owned:
            counts[(vrf, GATEWAY)] += len(fabric.vnis[vni].subnets)
    for name, vrf_spec in fabric.vrfs.items():
        counts[(name, STATIC)] = sum(r.next_hop in owned[name] for r in vrf_spec.routes)
    return counts


@dataclass(frozen=True)
class RouteDelta:
    """How one commit changed a VRF's routes: the prefixes that appeared, went,
    or now lead to another VM or ToR (a migration, an IP handed over)."""

    vrf: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    moved: tuple[str, ...]


def route_deltas(
    fabric: Fabric, before: Mapping[str, Vm | None], after: Mapping[str, Vm | None]
) -> list[RouteDelta]:
    """The route changes of one commit, from the changed VMs alone: ``before``
    and ``after`` map each changed VM's name to it (None: absent). A VM that
    did not change keeps its host routes, and a static route changes only
    when its next hop's owner is one of the changed VMs (an IP has one owner
    per VRF, so an unchanged owner cannot be involved)."""
    # (the changed VMs' VNIs only: a map of every VNI, made at every commit,
    # cost the commit time in proportion to the tenants)
    vnis = {vm.vni for vms in (before, after) for vm in vms.values() if vm is not None}
    vrf_of = {v: spec.vrf for v in vnis if (spec := fabric.vnis.get(v)) and spec.vrf is not None}
    old = _leads(fabric, vrf_of, before.values())
    new = _leads(fabric, vrf_of, after.values())
    deltas = []
    for vrf in sorted(set(old) | set(new)):
        was, now = old.get(vrf, {}), new.get(vrf, {})
        # Static routes via a next hop whose owner is among the changed VMs.
        for route in fabric.vrfs[vrf].routes:
            if route.next_hop in was:
                was[route.prefix] = was[route.next_hop]
            if route.next_hop in now:
                now[route.prefix] = now[route.next_hop]
        added = tuple(sorted((p for p in now if p not in was), key=_ipv4_first))
        removed = tuple(sorted((p for p in was if p not in now), key=_ipv4_first))
        moved = tuple(sorted((p for p in now if p in was and now[p] != was[p]), key=_ipv4_first))
        if added or removed or moved:
            deltas.append(RouteDelta(vrf, _prefixes(added), _prefixes(removed), _prefixes(moved)))
    return deltas


def _leads(
    fabric: Fabric, vrf_of: Mapping[int, str], vms: Iterable[Vm | None]
) -> dict[str, dict[str, tuple[str, str]]]:
    """VRF -> IP -> (VM, ToR) for the routed VMs among ``vms``."""
    leads: dict[str, dict[str, tuple[str, str]]] = {}
    for vm in vms:
        if vm is None or vm.vni not in vrf_of:
            continue
        tor = fabric.servers[vm.server].tor if vm.server in fabric.servers else ""
        per_vrf = leads.setdefault(vrf_of[vm.vni], {})
        for ip in vm.ips:
            per_vrf[ip] = (vm.name, tor)
    return leads


def _ipv4_first(key: str) -> tuple[bool, str]:
    """IPs and prefixes of both families: IPv4 first, each family in text order."""
    return ":" in key, key


def _prefixes(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Host routes are keyed by IP until here; say them as /32 or /128 prefixes."""
    return tuple(k if "/" in k else _host_prefix(k) for k in keys)
