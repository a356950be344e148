"""Checks on the routing model (docs/routing.md): the anycast gateway MAC,
the VRFs and their static routes, the routed VNIs' subnets, and what they ask
of the VMs.

Fabric problems carry where they lie in the fabric file (``Problem.at``), so
the loader names the line; the controller reports the same problems for a
fabric built in code. validation.py calls the VM-side checks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from ipaddress import IPv6Network

from ..dataplane.limits import VNI_MAX
from .addressing import (
    MAC_RE,
    NOT_IPV6_HOST_RANGES,
    NOT_ROUTED_RANGES,
    VNI_MIN,
    IPAddress,
    IPNetwork,
    canonical_ip,
    in_any_subnet_problem,
    ip_address,
    ip_network,
    ipv6_taken,
    ipv6_unsupported,
    mac_problem,
    not_an_address,
    routed_ipv6_network_problem,
    routed_network_problem,
    spelling_problem,
    within,
)
from .fabric import Fabric, StaticRoute, Subnet, Vm, Vni, Vrf
from .problems import Problem, subject


@dataclass(frozen=True)
class ParsedSubnet:
    network: IPNetwork  # IPv4 or IPv6
    gateway: IPAddress | None  # None: not an address (check_routing says so)


@lru_cache(maxsize=65536)  # per VNI value: check_vm asks once per routed VM
def subnets_of(vni: Vni) -> tuple[ParsedSubnet, ...]:
    """The VNI's subnets that parse, of both families (check_routing reports
    the others)."""
    parsed = []
    for subnet in vni.subnets:
        try:
            network = ip_network(subnet.prefix)
        except ValueError:
            continue
        parsed.append(ParsedSubnet(network, ip_address(subnet.gateway)))
    return tuple(parsed)


def routing_configured(fabric: Fabric) -> bool:
    return bool(fabric.vrfs) or any(v.vrf is not None for v in fabric.vnis.values())


def check_routing(fabric: Fabric) -> list[Problem]:
    """Every problem of the fabric's routing model; none for an L2-only fabric."""
    if not routing_configured(fabric) and fabric.anycast_gateway_mac is None:
        return []
    return (
        _gateway_mac(fabric)
        + _router_macs(fabric)
        + _vrfs(fabric)
        + _routed_vnis(fabric)
        + _routes(fabric)
    )


def _gateway_mac(fabric: Fabric) -> list[Problem]:
    at: tuple[str | int, ...] = ("anycast_gateway_mac",)
    mac = fabric.anycast_gateway_mac
    if mac is None:
        routed = next((v for v in fabric.vnis.values() if v.vrf is not None), None)
        if routed is None:
            return []
        message = f"required: vni {routed.name} ({routed.vni}) is routed in VRF {routed.vrf}"
        return [Problem("fabric", "anycast_gateway_mac", message, at)]
    why = mac_problem(mac)
    if why is not None:
        return [Problem("fabric", "anycast_gateway_mac", why, at)]
    for tor in fabric.tors.values():
        if tor.router_mac == mac:
            message = f"{mac} is the router_mac of tor {tor.name} (the gateway MAC is not a ToR's)"
            return [Problem("fabric", "anycast_gateway_mac", message, at)]
    return []


def _router_macs(fabric: Fabric) -> list[Problem]:
    """With routing, each ToR's router_mac is its RMAC in every VRF: a
    peer refuses a multicast or zero RMAC, and two ToRs cannot share one."""
    if not routing_configured(fabric):
        return []
    problems = []
    owners: dict[str, str] = {}
    for tor in fabric.tors.values():
        at: tuple[str | int, ...] = ("tors", tor.name, "router_mac")
        if not MAC_RE.match(tor.router_mac):
            continue  # (check_fabric reports a malformed MAC)
        why = mac_problem(tor.router_mac)
        if why is not None:
            problems.append(
                Problem(subject("tor", tor.name), "router_mac", f"{why} (the ToR's RMAC)", at)
            )
        elif tor.router_mac in owners:
            message = f"{tor.router_mac} is already the router_mac of tor {owners[tor.router_mac]}"
            problems.append(Problem(subject("tor", tor.name), "router_mac", message, at))
        owners.setdefault(tor.router_mac, tor.name)
    return problems


def _vrfs(fabric: Fabric) -> list[Problem]:
    problems = []
    l3vnis: dict[int, str] = {}
    for vrf in fabric.vrfs.values():
        at: tuple[str | int, ...] = ("vrfs", vrf.name)
        name = subject("vrf", vrf.name)
        if not vrf.name or not vrf.name.isprintable():
            problems.append(Problem(name, "name", "a printable name is required", at + ("name",)))
        message = None
        if not VNI_MIN <= vrf.l3vni <= VNI_MAX:
            message = f"{vrf.l3vni} outside {VNI_MIN}-{VNI_MAX}"
        elif vrf.l3vni in fabric.vnis:
            message = f"{vrf.l3vni} is already the VNI of vni {fabric.vnis[vrf.l3vni].name}"
        elif vrf.l3vni in l3vnis:
            message = f"{vrf.l3vni} is already the l3vni of vrf {l3vnis[vrf.l3vni]}"
        if message is not None:
            problems.append(Problem(name, "l3vni", message, at + ("l3vni",)))
        l3vnis.setdefault(vrf.l3vni, vrf.name)
    return problems


@dataclass(frozen=True)
class _Placed:
    """A subnet that parsed, where it was declared (for overlap reports)."""

    network: IPNetwork
    order: int  # declaration order over the whole file
    vni: Vni
    index: int  # in vni.subnets


def _routed_vnis(fabric: Fabric) -> list[Problem]:
    problems = []
    by_vrf: dict[tuple[str, int], list[_Placed]] = {}  # per VRF and IP version
    order = itertools.count()
    for vni in fabric.vnis.values():
        at: tuple[str | int, ...] = ("vnis", vni.vni)
        name = subject("vni", vni.name)
        if vni.vrf is None:
            if vni.subnets:
                message = "a VNI without a vrf is L2 only: give it a vrf or remove its subnets"
                problems.append(Problem(name, "subnets", message, at + ("subnets",)))
            continue
        if vni.vrf not in fabric.vrfs:
            problems.append(Problem(name, "vrf", f"unknown VRF {vni.vrf!r}", at + ("vrf",)))
        if not vni.subnets:
            message = f"a routed VNI (vrf {vni.vrf}) needs a subnet with its gateway"
            problems.append(Problem(name, "subnets", message, at + ("subnets",)))
        for j, subnet in enumerate(vni.subnets):
            wrong = _subnet_problem(subnet)
            if wrong is not None:
                key, why = wrong
                where = at + ("subnets", j, key)
                problems.append(Problem(name, f"subnets[{j}].{key}", why, where))
            if wrong is None or wrong[0] == "gateway":  # (the prefix is right)
                network = ip_network(subnet.prefix)
                family = (vni.vrf, network.version)
                by_vrf.setdefault(family, []).append(_Placed(network, next(order), vni, j))
    for (vrf_name, _), placed in by_vrf.items():
        problems += _overlaps(vrf_name, placed)
    return problems


def _subnet_problem(subnet: Subnet) -> tuple[str, str] | None:
    """(key, why) of what is wrong with a routed subnet: its prefix, or else
    its gateway (a host address inside the prefix, of its family)."""
    try:
        network = ip_network(subnet.prefix)
    except ValueError as exc:
        return "prefix", str(exc)
    if isinstance(network, IPv6Network):
        why = (
            ipv6_unsupported(str(network), "subnets")
            or spelling_problem(subnet.prefix)
            or routed_ipv6_network_problem(network)
        )
    else:
        why = routed_network_problem(network)
    if why is not None:
        return "prefix", why
    gateway = ip_address(subnet.gateway)
    if gateway is None:
        return "gateway", not_an_address(subnet.gateway)
    if gateway not in network:
        return "gateway", f"{canonical_ip(subnet.gateway)} is outside {network}"
    why = spelling_problem(subnet.gateway) if gateway.version == 6 else None
    why = why or in_any_subnet_problem(gateway, network, None)
    return None if why is None else ("gateway", why)


def _overlaps(vrf_name: str, placed: list[_Placed]) -> list[Problem]:
    """One problem per subnet of the VRF that overlaps another, on the one
    declared later. A sweep by start address: n log n, not every pair.
    (``placed`` are of one IP version: the two never overlap.)"""
    problems = []
    reach: _Placed | None = None  # of the subnets so far, the one ending last
    for current in sorted(placed, key=lambda p: (_first(p), p.network.prefixlen)):
        if reach is not None and _first(current) <= _last(reach):
            later, earlier = (current, reach) if current.order > reach.order else (reach, current)
            message = (
                f"{later.network} overlaps {earlier.network} of vni {earlier.vni.name} "
                f"in VRF {vrf_name}"
            )
            problems.append(
                Problem(
                    subject("vni", later.vni.name),
                    f"subnets[{later.index}].prefix",
                    message,
                    ("vnis", later.vni.vni, "subnets", later.index, "prefix"),
                )
            )
        if reach is None or _last(current) > _last(reach):
            reach = current
    return list(dict.fromkeys(problems))  # (a subnet two others overlap: once per other)


def _first(placed: _Placed) -> int:
    return int(placed.network.network_address)


def _last(placed: _Placed) -> int:
    return int(placed.network.broadcast_address)  # (IPv6: the last address)


def _vrf_subnets(fabric: Fabric) -> dict[str, list[tuple[ParsedSubnet, Vni]]]:
    """Each VRF's subnets that parse, with their VNI."""
    subnets: dict[str, list[tuple[ParsedSubnet, Vni]]] = {name: [] for name in fabric.vrfs}
    for vni in fabric.vnis.values():
        if vni.vrf in subnets:
            subnets[vni.vrf] += [(s, vni) for s in subnets_of(vni)]
    return subnets


def _holder(
    subnets: list[tuple[ParsedSubnet, Vni]], ip: IPAddress
) -> tuple[ParsedSubnet, Vni] | None:
    """The subnet of a VRF that ``ip`` lies in (at most one: they do not
    overlap; an address is never in a network of the other family)."""
    return next(((s, vni) for s, vni in subnets if ip in s.network), None)


def _routes(fabric: Fabric) -> list[Problem]:
    problems = []
    subnets = _vrf_subnets(fabric)
    for vrf in fabric.vrfs.values():
        name = subject("vrf", vrf.name)
        seen: dict[IPNetwork, int] = {}
        for j, route in enumerate(vrf.routes):
            at: tuple[str | int, ...] = ("vrfs", vrf.name, "routes", j)
            why = _route_prefix_problem(route.prefix, subnets[vrf.name], seen, j)
            if why is not None:
                problems.append(Problem(name, f"routes[{j}].prefix", why, at + ("prefix",)))
            why = _next_hop_problem(route, vrf, subnets[vrf.name])
            if why is not None:
                problems.append(Problem(name, f"routes[{j}].next_hop", why, at + ("next_hop",)))
    return problems


def _route_prefix_problem(
    prefix: str,
    subnets: list[tuple[ParsedSubnet, Vni]],
    seen: dict[IPNetwork, int],
    index: int,
) -> str | None:
    try:
        network = ip_network(prefix)
    except ValueError as exc:
        return str(exc)
    if isinstance(network, IPv6Network):
        why = ipv6_unsupported(str(network), "routes") or spelling_problem(prefix)
        if why is not None:
            return why
    if network in seen:
        return f"{network} is already routes[{seen[network]}] (one next hop per prefix)"
    seen[network] = index
    reserved_ranges: tuple[tuple[IPNetwork, str], ...] = (
        NOT_IPV6_HOST_RANGES if isinstance(network, IPv6Network) else NOT_ROUTED_RANGES
    )
    for reserved, what in reserved_ranges:
        if within(network, reserved):
            return f"{network} lies in {what}"
    for subnet, vni in subnets:
        if within(network, subnet.network):
            # Its hosts reach those addresses on-link (ARP), not through the
            # gateway: the route would hold for routed traffic only.
            return f"{network} lies inside subnet {subnet.network} of vni {vni.name}"
    return None


def _next_hop_problem(
    route: StaticRoute, vrf: Vrf, subnets: list[tuple[ParsedSubnet, Vni]]
) -> str | None:
    """Why a route's next hop cannot be a VM of the VRF: not an address, not
    of the prefix's family, in none of the VRF's subnets, or an address of a
    subnet no VM has. (Nothing about an IPv6 next hop of an IPv6 prefix when
    the pipeline takes no IPv6: the prefix says it.)"""
    ip = ip_address(route.next_hop)
    if ip is None:
        return not_an_address(route.next_hop)
    try:
        prefix: IPNetwork | None = ip_network(route.prefix)
    except ValueError:
        prefix = None  # (its own problem)
    if prefix is not None and prefix.version != ip.version:
        return (
            f"{canonical_ip(route.next_hop)} is an IPv{ip.version} address, {prefix} an "
            f"IPv{prefix.version} prefix (the next hop is of the prefix's family)"
        )
    if ip.version == 6:
        why = ipv6_unsupported(str(ip), "routes")
        if why is not None:
            return None if prefix is not None else why
        why = spelling_problem(route.next_hop)
        if why is not None:
            return why
    held = _holder(subnets, ip)
    if held is None:
        return f"{ip} is in none of the subnets of VRF {vrf.name} (the next hop is a VM of the VRF)"
    why = in_any_subnet_problem(ip, held[0].network, held[0].gateway)
    return None if why is None else f"{why}, not a VM's address"


def vm_problems(fabric: Fabric, vm: Vm) -> list[Problem]:
    """What routing asks of one VM: not to own the anycast gateway MAC (in
    any VNI: every ToR answers for it); on a routed VNI, every IP a host
    address of one of the VNI's subnets, and not its gateway."""
    name = subject("vm", vm.name)
    problems = []
    if fabric.anycast_gateway_mac is not None and vm.mac == fabric.anycast_gateway_mac:
        problems.append(Problem(name, "mac", f"{vm.mac} is the fabric's anycast_gateway_mac"))
    vni = fabric.vnis.get(vm.vni)
    if vni is None or vni.vrf is None:
        return problems
    subnets = subnets_of(vni)
    for text in dict.fromkeys(vm.ips):
        ip = ip_address(text)
        if ip is None or (ip.version == 6 and not ipv6_taken()):
            continue  # (check_vm reports it)
        held = next((s for s in subnets if ip in s.network), None)
        if held is None:
            prefixes = ", ".join(str(s.network) for s in subnets)
            why: str | None = f"{ip} is outside the subnets of vni {vni.name} ({prefixes})"
        else:
            why = in_any_subnet_problem(ip, held.network, held.gateway)
        if why is not None:
            problems.append(Problem(name, "ips", why))
    return problems
