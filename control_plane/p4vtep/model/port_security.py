"""Port security's rules (docs/security.md): what a VM's allowed address
pairs may be, and what the static routes of its VRF ask of a guarded VM.

Per VM (``vm_problems``, called by ``validation.check_vm``): each pair's
prefix an IPv4 or IPv6 network in canonical text, of any length, clear of
the ranges no VM sends from (this network, loopback, multicast, reserved,
link-local, IPv4-mapped) and of every gateway address of the VM's VRF (or
VNI); its MAC, if any, a unicast MAC that is neither the anycast gateway
MAC nor a ToR's router MAC; at most ``PAIRS_MAX`` pairs, none twice. A VRF
static route whose next hop is a guarded VM needs a pair of that VM
covering the route's prefix (what the VM forwards comes from there). A
subnet advertised for SLAAC (``slaac: true``) needs each guarded VM of its
VNI to list the address it forms there (``slaac_problems``).

Between VMs (``PairIndex``, held by ``validation.VmIndex``): no pair may
contain another VM's address in the same VRF (routed VNI) or VNI (L2 only),
and no pair's MAC may be another VM's MAC in the VNI: a pair never lets a
VM pose as another VM or the gateway. Two VMs may list the same or
overlapping pairs (a VRRP virtual IP and MAC they share).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from ipaddress import IPv4Address, IPv6Address, IPv6Network

from .addressing import (
    IPV6_HOST_RANGES,
    IPV6_HOST_RULE,
    NOT_IPV6_HOST_RANGES,
    NOT_ROUTED_RANGES,
    IPNetwork,
    canonical_ip,
    canonical_prefix,
    ip_address,
    ip_network,
    ipv6_unsupported,
    link_local,
    mac_problem,
    normalise_mac,
    within,
)
from .fabric import AllowedPair, Fabric, Vm
from .problems import Problem, subject
from .routing_checks import subnets_of

# Pairs one VM may list: each is a source-guard entry (and its MAC an
# allowed_source_mac entry) on the VM's ToR; Neutron's default quota is 10.
PAIRS_MAX = 8
FIELD = "allowed_pairs"

LINK_LOCAL_V6 = IPv6Network("fe80::/10")

# Where a pair's rule scope lies: ("vrf", name) for a routed VNI's VMs, ("vni",
# number) for an L2-only VNI's.
Scope = tuple[str, str | int]


def scope_of(vrf_of: Mapping[int, str], vni: int) -> Scope:
    vrf = vrf_of.get(vni)
    return ("vrf", vrf) if vrf is not None else ("vni", vni)


def scope_text(scope: Scope) -> str:
    kind, name = scope
    return f"VRF {name}" if kind == "vrf" else f"VNI {name}"


# --- inputs ---------------------------------------------------------------------


def pair_prefix(text: str) -> str:
    """A pair's prefix as the model keeps it: a bare address is its host
    prefix (/32, /128), a network is in canonical text (IPv6: RFC 5952);
    what does not parse, or has host bits set, stays as written for the
    checks to say what is wrong."""
    text = text.strip()
    if "/" not in text:
        address = ip_address(text)
        if address is None:
            return text
        return f"{canonical_ip(text)}/{address.max_prefixlen}"
    try:
        network = ip_network(text)
    except ValueError:
        return canonical_prefix(text)
    return canonical_prefix(str(network)) if network.version == 6 else str(network)


def pair(prefix: str, mac: str | None = None) -> AllowedPair:
    """An allowed pair from an input's fields (prefix canonical, MAC normalised)."""
    mac = normalise_mac(mac) if mac is not None and mac.strip() else None
    return AllowedPair(pair_prefix(prefix), mac)


def parse_pair(text: str) -> AllowedPair:
    """``PREFIX`` or ``PREFIX,MAC`` (the CLI's and libvirt's form) as a pair."""
    prefix, _, mac = text.partition(",")
    return pair(prefix, mac or None)


# --- one VM -----------------------------------------------------------------------


def _reserved(network: IPNetwork) -> str | None:
    """Which range no VM sends from ``network`` overlaps, if any."""
    if isinstance(network, IPv6Network):
        for reserved, what in NOT_IPV6_HOST_RANGES:
            if network.overlaps(reserved):
                return f"overlaps {what}"
        if not any(network.subnet_of(space) for space in IPV6_HOST_RANGES):
            return f"is outside the addresses VMs have ({IPV6_HOST_RULE})"
        return None
    for reserved4, what in NOT_ROUTED_RANGES:
        if network.overlaps(reserved4):
            return f"overlaps {what}"
    return None


def _gateways(fabric: Fabric, vm: Vm) -> list[tuple[str, str, str]]:
    """(gateway IP, its subnet, its VNI's name) of every routed subnet of the
    VM's VRF (all of them: a pair holding any would let it answer for a
    gateway); none for an L2-only VNI."""
    vni = fabric.vnis.get(vm.vni)
    if vni is None or vni.vrf is None:
        return []
    out = []
    for other in fabric.vnis.values():
        if other.vrf != vni.vrf:
            continue
        for subnet in subnets_of(other):
            if subnet.gateway is not None:
                out.append((str(subnet.gateway), str(subnet.network), other.name))
    return out


def prefix_problem(fabric: Fabric, vm: Vm, prefix: str) -> str | None:
    """Why ``prefix`` cannot be one of the VM's pairs, whatever the other
    VMs hold (``PairIndex`` checks those)."""
    try:
        network = ip_network(prefix)
    except ValueError as exc:
        return str(exc)
    text = canonical_prefix(str(network)) if network.version == 6 else str(network)
    if network.version == 6:
        why = ipv6_unsupported(text, "allowed pairs")
        if why is not None:
            return why
    if text != prefix:
        return f"{prefix} is not in canonical form: write it as {text}"
    why = _reserved(network)
    if why is not None:
        if network.overlaps(LINK_LOCAL_V6):
            return f"{text} {why}: every link-local source is allowed without a pair"
        return f"{text} {why}: a pair is a unicast range a VM may send from"
    for gateway, network_text, vni_name in _gateways(fabric, vm):
        address = ip_address(gateway)
        if address is not None and address in network:
            return (
                f"{text} contains {gateway}, the gateway of {network_text} (vni {vni_name}): "
                "a pair may not let a VM answer for the gateway"
            )
    return None


def _mac_problem(fabric: Fabric, mac: str) -> str | None:
    why = mac_problem(mac)
    if why is not None:
        return why
    if mac == fabric.anycast_gateway_mac:
        return f"{mac} is the fabric's anycast_gateway_mac"
    for tor in fabric.tors.values():
        if mac == tor.router_mac:
            return f"{mac} is the router_mac of tor {tor.name}"
    return None


def vm_problems(fabric: Fabric, vm: Vm) -> list[Problem]:
    """Every problem of the VM's own pairs, and of the VRF's static routes
    through it (``route_problems``)."""
    name = subject("vm", vm.name)
    problems = []
    if len(vm.allowed_pairs) > PAIRS_MAX:
        message = f"{len(vm.allowed_pairs)} pairs: a VM has at most {PAIRS_MAX}"
        problems.append(Problem(name, FIELD, message))
    seen: set[AllowedPair] = set()
    for p in vm.allowed_pairs:
        if p in seen:
            problems.append(Problem(name, FIELD, f"{p} is listed twice"))
            continue
        seen.add(p)
        why = prefix_problem(fabric, vm, p.prefix)
        if why is None and p.mac is not None:
            why = _mac_problem(fabric, p.mac)
        if why is not None:
            problems.append(Problem(name, FIELD, why))
    return problems + route_problems(fabric, vm) + slaac_problems(fabric, vm)


def eui64_address(network: IPv6Network, mac: str) -> str:
    """The address a VM with ``mac`` forms in a /64 with modified EUI-64
    interface ids (Linux's ``addr_gen_mode`` 0): the link-local's interface id."""
    interface_id = IPv6Address(link_local(mac)).packed[8:]
    return canonical_ip(str(IPv6Address(network.network_address.packed[:8] + interface_id)))


def slaac_problems(fabric: Fabric, vm: Vm) -> list[Problem]:
    """The SLAAC subnets (A flag advertised) of the VM's VNI where a guarded
    VM could send from an address the source guard does not hold: refused
    unless it lists its EUI-64 address there in ``ips`` or a pair covers the
    prefix (docs/security.md#link-local-and-slaac)."""
    vni = fabric.vnis.get(vm.vni)
    if not vm.port_security or vni is None or vni.vrf is None:
        return []
    problems = []
    for subnet in vni.subnets:
        if not subnet.slaac:
            continue
        try:
            network = ip_network(subnet.prefix)
        except ValueError:
            continue  # (check_routing reports it)
        if not isinstance(network, IPv6Network) or network.prefixlen != 64 or covered(vm, network):
            continue
        formed = eui64_address(network, vm.mac)
        if formed in vm.ips:
            continue
        problems.append(
            Problem(
                subject("vm", vm.name),
                "ips",
                f"vni {vni.name} advertises {network} for SLAAC (slaac: true): with port "
                f"security on, the ToR drops what vm {vm.name} sends from an address it forms "
                f"itself (spoofed_ip): list its EUI-64 address {formed} in ips, cover "
                f"{network} with an allowed pair, or set port_security: false",
            )
        )
    return problems


def covered(vm: Vm, network: IPNetwork) -> bool:
    """Whether one of the VM's pairs covers ``network``."""
    for p in vm.allowed_pairs:
        try:
            if within(network, ip_network(p.prefix)):
                return True
        except ValueError:
            continue
    return False


def route_problems(fabric: Fabric, vm: Vm) -> list[Problem]:
    """The VRF's static routes whose next hop is this guarded VM and whose
    prefix none of its pairs covers: what the VM forwards for that prefix
    would be dropped as spoofed (its source is not the VM's)."""
    vni = fabric.vnis.get(vm.vni)
    if not vm.port_security or vni is None or vni.vrf is None or vni.vrf not in fabric.vrfs:
        return []
    vrf = fabric.vrfs[vni.vrf]
    ips = {canonical_ip(ip) for ip in vm.ips}
    problems = []
    for j, route in enumerate(vrf.routes):
        if canonical_ip(route.next_hop) not in ips:
            continue
        try:
            network = ip_network(route.prefix)
        except ValueError:
            continue  # (check_routing reports it)
        if covered(vm, network):
            continue
        text = canonical_prefix(str(network)) if network.version == 6 else str(network)
        lead = (
            f"{route.next_hop} is the next hop of vrf {vrf.name}'s route {text} "
            f"(routes[{j}]): with port security on, the ToR drops what vm {vm.name} forwards "
            f"from {text} (spoofed_ip)"
        )
        why = _reserved(network)
        if why is not None:
            message = f"{lead}; {text} cannot be a pair ({why}): set port_security: false"
        else:
            message = f"{lead}: add the allowed pair {text} or set port_security: false"
        problems.append(Problem(subject("vm", vm.name), FIELD, message))
    return problems


# --- between VMs -------------------------------------------------------------------


def _parsed(vm: Vm) -> list[tuple[AllowedPair, IPNetwork]]:
    """The VM's pairs that are networks clear of the reserved ranges, parsed
    (``vm_problems`` reports the others: they are not checked against the
    other VMs too)."""
    out = []
    for p in vm.allowed_pairs:
        try:
            network = ip_network(p.prefix)
        except ValueError:
            continue
        if _reserved(network) is None:
            out.append((p, network))
    return out


class PairIndex:
    """Who lists each pair prefix (per scope, by prefix length) and each
    pair MAC (per VNI), and, per scope and IP version, the VMs' addresses
    in order, so that a VM's pairs and addresses are checked against the
    others' without walking every VM. The ordered addresses are built for a
    scope the first time a pair there needs them (from ``addresses``, the
    owner's index of who holds each address) and kept up to date after;
    scopes without pairs cost nothing."""

    def __init__(
        self,
        vrf_of: Mapping[int, str],
        owner: Callable[[Scope, str], str | None],
        addresses: Callable[[Scope], Iterable[tuple[str, str]]],
    ) -> None:
        """``owner(scope, ip)``: the VM holding a (canonical) IP in the
        scope; ``addresses(scope)``: every (IP, VM) of the scope."""
        self.vrf_of = vrf_of
        self._owner = owner
        self._addresses = addresses
        # (scope, version) -> prefix length -> network as an int -> VM names
        self.nets: dict[tuple[Scope, int], dict[int, dict[int, set[str]]]] = {}
        self.macs: dict[tuple[int, str], set[str]] = {}  # (VNI, pair MAC) -> VM names
        self._ordered: dict[tuple[Scope, int], list[tuple[int, str]]] = {}

    def copy(
        self,
        owner: Callable[[Scope, str], str | None],
        addresses: Callable[[Scope], Iterable[tuple[str, str]]],
    ) -> PairIndex:
        """A copy answering from another owner's index (``VmIndex.copy``)."""
        other = PairIndex(self.vrf_of, owner, addresses)
        other.nets = {
            k: {n: {i: set(names) for i, names in t.items()} for n, t in v.items()}
            for k, v in self.nets.items()
        }
        other.macs = {k: set(v) for k, v in self.macs.items()}
        other._ordered = {k: list(v) for k, v in self._ordered.items()}
        return other

    # --- what the VMs hold ---------------------------------------------------
    def add(self, vm: Vm) -> None:
        scope = scope_of(self.vrf_of, vm.vni)
        for p, network in _parsed(vm):
            lengths = self.nets.setdefault((scope, network.version), {})
            table = lengths.setdefault(network.prefixlen, {})
            table.setdefault(int(network.network_address), set()).add(vm.name)
            if p.mac is not None:
                self.macs.setdefault((vm.vni, p.mac), set()).add(vm.name)
        if self._ordered:
            for key, item in self._items(scope, vm):
                ordered = self._ordered.get(key)
                if ordered is not None:
                    at = bisect.bisect_left(ordered, item)
                    if at == len(ordered) or ordered[at] != item:
                        ordered.insert(at, item)

    def remove(self, vm: Vm) -> None:
        scope = scope_of(self.vrf_of, vm.vni)
        for p, network in _parsed(vm):
            family: tuple[Scope, int] = (scope, network.version)
            table = self.nets.get(family, {}).get(network.prefixlen, {})
            names = table.get(int(network.network_address))
            if names is not None:
                names.discard(vm.name)
                if not names:
                    del table[int(network.network_address)]
                    if not table:
                        del self.nets[family][network.prefixlen]
                        if not self.nets[family]:
                            del self.nets[family]
            if p.mac is not None:
                holders = self.macs.get((vm.vni, p.mac))
                if holders is not None:
                    holders.discard(vm.name)
                    if not holders:
                        del self.macs[(vm.vni, p.mac)]
        if self._ordered:
            for key, item in self._items(scope, vm):
                ordered = self._ordered.get(key)
                if ordered is not None:
                    at = bisect.bisect_left(ordered, item)
                    if at < len(ordered) and ordered[at] == item:
                        del ordered[at]

    @staticmethod
    def _items(scope: Scope, vm: Vm) -> list[tuple[tuple[Scope, int], tuple[int, str]]]:
        """The VM's addresses as the ordered lists hold them, with their list."""
        out: list[tuple[tuple[Scope, int], tuple[int, str]]] = []
        for text in vm.ips:
            address = ip_address(text)
            if address is not None:
                version: int = address.version
                out.append(((scope, version), (int(address), vm.name)))
        return out

    def _ordered_of(self, scope: Scope, version: int) -> list[tuple[int, str]]:
        key = (scope, version)
        ordered = self._ordered.get(key)
        if ordered is None:
            items = []
            for text, name in self._addresses(scope):
                address = ip_address(text)
                if address is not None and address.version == version:
                    items.append((int(address), name))
            ordered = self._ordered[key] = sorted(set(items))
        return ordered

    # --- checks ------------------------------------------------------------------
    def conflicts(
        self, vm: Vm, mac_holder: Callable[[int, str], str | None], both_sides: bool = True
    ) -> list[Problem]:
        """The VM's pairs that contain another VM's address or name another
        VM's MAC; with ``both_sides``, also the VM's addresses and MAC that
        lie in (or are) another VM's pair. ``mac_holder(vni, mac)``: the VM
        with that MAC in the VNI, if any."""
        name = subject("vm", vm.name)
        scope = scope_of(self.vrf_of, vm.vni)
        problems = []
        for p, network in _parsed(vm):
            other = self._address_in(scope, network, vm.name)
            if other is not None:
                ip, holder = other
                problems.append(
                    Problem(
                        name,
                        FIELD,
                        f"{p.prefix} contains {ip}, the address of vm {holder} in "
                        f"{scope_text(scope)}: a pair may not let a VM pose as another VM",
                    )
                )
            if p.mac is not None and p.mac != vm.mac:
                holder_name = mac_holder(vm.vni, p.mac)
                if holder_name is not None and holder_name != vm.name:
                    problems.append(
                        Problem(
                            name,
                            FIELD,
                            f"{p.mac} is the MAC of vm {holder_name} in VNI {vm.vni}: "
                            "a pair may not let a VM pose as another VM",
                        )
                    )
        if not both_sides:
            return problems
        for text in dict.fromkeys(vm.ips):
            address = ip_address(text)
            if address is None:
                continue
            lengths = self.nets.get((scope, address.version), {})
            for length, table in sorted(lengths.items()):
                start = (
                    int(address)
                    >> (address.max_prefixlen - length)
                    << (address.max_prefixlen - length)
                )
                holders = sorted(table.get(start, set()) - {vm.name})
                if holders:
                    prefix = f"{_address_text(address.version, start)}/{length}"
                    problems.append(
                        Problem(
                            name,
                            "ips",
                            f"{canonical_ip(text)} lies in {prefix}, an allowed pair of vm "
                            f"{holders[0]} in {scope_text(scope)}",
                        )
                    )
                    break
        holders = sorted(self.macs.get((vm.vni, vm.mac), set()) - {vm.name})
        if holders:
            problems.append(
                Problem(
                    name,
                    "mac",
                    f"{vm.mac} is an allowed pair MAC of vm {holders[0]} in VNI {vm.vni}",
                )
            )
        return problems

    def _address_in(self, scope: Scope, network: IPNetwork, me: str) -> tuple[str, str] | None:
        """An address another VM of the scope holds inside ``network`` (the
        lowest), with its VM; None if none."""
        if network.prefixlen == network.max_prefixlen:
            # (a host prefix: one lookup, no ordered list needed)
            text = canonical_ip(str(network.network_address))
            holder = self._owner(scope, text)
            return (text, holder) if holder is not None and holder != me else None
        ordered = self._ordered_of(scope, network.version)
        first, last = int(network.network_address), int(network.broadcast_address)
        at = bisect.bisect_left(ordered, (first, ""))
        while at < len(ordered) and ordered[at][0] <= last:
            value, holder = ordered[at]
            if holder != me:
                return _address_text(network.version, value), holder
            at += 1
        return None


def _address_text(version: int, value: int) -> str:
    return canonical_ip(str(IPv4Address(value) if version == 4 else IPv6Address(value)))
