"""Checks on the desired state before anything is written to a switch.

A bad change is refused whole: ``validate`` returns every problem, each naming
the VM (or fabric object) and the field, so an operator can fix them in one go.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TypeVar

from ..dataplane import limits
from ..dataplane.limits import VLAN_MAX, VLAN_MIN, VNI_MAX
from ..dataplane.targets import Target
from . import cpu_path_checks, port_security, routing_checks
from .addressing import (
    IPS_PER_FAMILY_MAX,
    canonical_ip,
    host_ip_problem,
    host_ipv6_problem,
    ip_address,
    ipv6_unsupported,
    mac_problem,
    not_an_address,
    spelling_problem,
)
from .addressing import MAC_RE as MAC_RE
from .addressing import VNI_MIN as VNI_MIN
from .addressing import normalise_mac as normalise_mac
from .allocation import EXTERNAL_VTEP
from .bit_rates import format_bit_rate
from .fabric import Fabric, Tor, Vm
from .problems import Problem as Problem
from .problems import ValidationError as ValidationError
from .problems import subject as subject_for

K = TypeVar("K")

# A VM name is a key in the store, a label in metrics and a word in every log
# line and error about the VM: bounded, and with no character that breaks a
# line or hides itself (control, format, line/paragraph separators).
VM_NAME_MAX = 64
# A meter bucket smaller than this never lets a full-size frame (1500-byte
# MTU) conform.
FULL_FRAME_BYTES = 1518
NAME_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _port_problem(port: int, tor: Tor) -> str | None:
    """Why ``port`` of ``tor`` cannot carry a server or an uplink: outside
    port_t, or reserved on the ToR's target (each chip has its own CPU port)."""
    try:
        target = Target.parse(tor.target)
    except ValueError:
        target = Target.BMV2  # (the unknown target is reported on its own)
    return limits.BMV2.port_problem(port, target)


def _ipv6_without_tables(fabric: Fabric) -> list[Problem]:
    """A fabric with IPv6 subnets or routes on a ToR whose target's pipeline
    has no IPv6 tables (its committed build predates them): refused, since
    the ToR could not take the entries. (BMv2's own case is addressing's.)"""
    uses_ipv6 = any(":" in s.prefix for v in fabric.vnis.values() for s in v.subnets) or any(
        ":" in r.prefix for vrf in fabric.vrfs.values() for r in vrf.routes
    )
    if not uses_ipv6:
        return []
    problems = []
    for tor in fabric.tors.values():
        try:
            target = Target.parse(tor.target)
        except ValueError:
            continue  # (reported on its own)
        if target is not Target.BMV2 and not limits.target_takes_ipv6(target):
            problems.append(
                Problem(
                    f"tor {tor.name}",
                    "target",
                    f"the committed {target.value} pipeline has no IPv6 tables "
                    f"({', '.join(limits.IPV6_TABLES)}) and this fabric has IPv6 subnets or "
                    "routes: compile p4src/tna with them (make p4-tofino, docs/tofino.md)",
                )
            )
    return problems


def check_fabric(fabric: Fabric) -> list[Problem]:
    problems: list[Problem] = []
    vteps: dict[str, str] = {}
    for tor in fabric.tors.values():
        subject = f"tor {tor.name}"
        if tor.name.startswith(EXTERNAL_VTEP):
            # (the prefix of external VTEPs' keys in the ToR index space)
            problems.append(Problem(subject, "name", f"may not start with {EXTERNAL_VTEP!r}"))
        try:
            Target.parse(tor.target)
        except ValueError as exc:
            problems.append(Problem(subject, "target", str(exc)))
        try:
            ipaddress.IPv4Address(tor.vtep_ip)
        except ValueError:
            problems.append(Problem(subject, "vtep_ip", f"{tor.vtep_ip!r} is not an IPv4 address"))
        if tor.vtep_ip in vteps:
            problems.append(
                Problem(
                    subject, "vtep_ip", f"{tor.vtep_ip} is already the VTEP of {vteps[tor.vtep_ip]}"
                )
            )
        vteps[tor.vtep_ip] = tor.name
        if not MAC_RE.match(tor.router_mac):
            problems.append(Problem(subject, "router_mac", f"{tor.router_mac!r} is not a MAC"))
        if not tor.uplinks:
            problems.append(Problem(subject, "uplinks", "at least one uplink is needed"))
        for uplink in tor.uplinks:
            why = _port_problem(uplink.port, tor)
            if why:
                problems.append(Problem(subject, "uplinks.port", why))
            if not MAC_RE.match(uplink.next_hop_mac):
                problems.append(
                    Problem(
                        subject, "uplinks.next_hop_mac", f"{uplink.next_hop_mac!r} is not a MAC"
                    )
                )
    problems += _ipv6_without_tables(fabric)
    ports: dict[tuple[str, int], str] = {}
    for server in fabric.servers.values():
        subject = f"server {server.name}"
        server_tor = fabric.tors.get(server.tor)
        if server_tor is None:
            problems.append(Problem(subject, "tor", f"unknown ToR {server.tor!r}"))
            continue
        why = _port_problem(server.port, server_tor)
        if why:
            problems.append(Problem(subject, "port", why))
        if server.port in {u.port for u in server_tor.uplinks}:
            problems.append(
                Problem(subject, "port", f"port {server.port} is an uplink of {server_tor.name}")
            )
        if (server.tor, server.port) in ports:
            problems.append(
                Problem(
                    subject,
                    "port",
                    f"{server.tor} port {server.port} is already "
                    f"server {ports[(server.tor, server.port)]}",
                )
            )
        ports[(server.tor, server.port)] = server.name
    for vni in fabric.vnis.values():
        if not VNI_MIN <= vni.vni <= VNI_MAX:
            problems.append(
                Problem(f"vni {vni.name}", "vni", f"{vni.vni} outside {VNI_MIN}-{VNI_MAX}")
            )
        if not 0 <= vni.traffic_class <= limits.TRAFFIC_CLASS_MAX:
            problems.append(
                Problem(
                    f"vni {vni.name}",
                    "traffic_class",
                    f"{vni.traffic_class} outside 0-{limits.TRAFFIC_CLASS_MAX}",
                )
            )
    for policy in fabric.policies.values():
        for direction in ("tx", "rx"):
            rates = getattr(policy, direction)
            if rates is None:
                continue
            if min(rates.cir, rates.cburst, rates.pir, rates.pburst) <= 0:
                problems.append(
                    Problem(f"qos {policy.name}", direction, "rates and bursts must be positive")
                )
                continue
            if rates.pir < rates.cir:
                problems.append(
                    Problem(f"qos {policy.name}", direction, "peak rate below committed rate")
                )
            for bucket in ("cburst", "pburst"):
                size = getattr(rates, bucket)
                if size < FULL_FRAME_BYTES:
                    problems.append(
                        Problem(
                            f"qos {policy.name}",
                            f"{direction}.{bucket}",
                            f"{size} B is smaller than a full-size frame ({FULL_FRAME_BYTES} B):"
                            " such a frame could never conform",
                        )
                    )
    return problems + routing_checks.check_routing(fabric) + cpu_path_checks.check_cpu_path(fabric)


def vm_name_problem(name: str) -> str | None:
    if not name:
        return "a name is required"
    if len(name) > VM_NAME_MAX:
        return f"{len(name)} characters, longer than {VM_NAME_MAX}"
    for char in name:
        category = unicodedata.category(char)
        if category in NAME_FORBIDDEN_CATEGORIES:
            return f"contains U+{ord(char):04X} ({category}: control or invisible character)"
    return None


def check_vm(fabric: Fabric, vm: Vm) -> list[Problem]:
    subject = subject_for("vm", vm.name)
    problems = []
    why = vm_name_problem(vm.name)
    if why is not None:
        problems.append(Problem(subject, "name", why))
    why = mac_problem(vm.mac)
    if why is not None:
        problems.append(Problem(subject, "mac", why))
    problems += _ip_problems(subject, vm.ips)
    if not VNI_MIN <= vm.vni <= VNI_MAX:
        problems.append(Problem(subject, "vni", f"{vm.vni} outside {VNI_MIN}-{VNI_MAX}"))
    elif vm.vni not in fabric.vnis:
        problems.append(Problem(subject, "vni", f"VNI {vm.vni} is not defined in the fabric"))
    if not VLAN_MIN <= vm.vlan <= VLAN_MAX:
        problems.append(Problem(subject, "vlan", f"{vm.vlan} outside {VLAN_MIN}-{VLAN_MAX}"))
    if vm.server not in fabric.servers:
        problems.append(Problem(subject, "server", f"unknown server {vm.server!r}"))
    if vm.qos is not None and vm.qos not in fabric.policies:
        problems.append(Problem(subject, "qos", f"unknown QoS policy {vm.qos!r}"))
    problems += routing_checks.vm_problems(fabric, vm)
    problems += _ipv6_unguarded_on_tor(fabric, vm)
    return problems + port_security.vm_problems(fabric, vm)


def _ipv6_unguarded_on_tor(fabric: Fabric, vm: Vm) -> list[Problem]:
    """A guarded VM with an IPv6 address or pair on a ToR whose pipeline
    guards IPv4 only (Tofino 1): refused, since that ToR drops every IPv6
    frame of a guarded VM (docs/security.md#on-tofino-1) and the VM would
    lose IPv6 without a word. Unguarded, the VM's IPv6 is untouched."""
    server = fabric.servers.get(vm.server)
    tor = fabric.tors.get(server.tor) if server is not None else None
    if not vm.port_security or tor is None:
        return []
    try:
        target = Target.parse(tor.target)
    except ValueError:
        return []  # (reported on its own)
    if target is Target.BMV2 or not limits.target_guards_only_ipv4(target):
        return []
    why = (
        f"is IPv6, and tor {tor.name} ({target.value}) guards IPv4 sources only: it would "
        "drop every IPv6 frame of this VM (docs/security.md#on-tofino-1); "
        "set port_security: false or keep the VM's IPv6 off that ToR"
    )
    subject = subject_for("vm", vm.name)
    problems = [Problem(subject, "ips", f"{ip} {why}") for ip in vm.ips if ":" in ip]
    problems += [
        Problem(subject, port_security.FIELD, f"{p} {why}")
        for p in vm.allowed_pairs
        if ":" in p.prefix
    ]
    return problems


def _ip_problems(subject: str, ips: Iterable[str]) -> list[Problem]:
    """Each of a VM's addresses: an IPv4 or IPv6 host address, listed once
    (two spellings of an IPv6 address are one), IPv6 in canonical form, at
    most IPS_PER_FAMILY_MAX of each family; IPv6 only with a pipeline that
    has the IPv6 tables (then only that is said of an IPv6 address)."""
    problems = []
    seen: set[str] = set()
    count = {4: 0, 6: 0}
    for ip in ips:
        address = ip_address(ip)
        if address is None:
            problems.append(Problem(subject, "ips", not_an_address(ip)))
            continue
        key = canonical_ip(ip)
        if address.version == 6:
            why = ipv6_unsupported(key, "tenant addresses")
            if why is not None:
                problems.append(Problem(subject, "ips", why))
                continue
            why = spelling_problem(ip) or host_ipv6_problem(address)
        else:
            why = host_ip_problem(address)
        if why is not None:
            problems.append(Problem(subject, "ips", why))
        if key in seen:
            problems.append(Problem(subject, "ips", f"{key} is listed twice"))
            continue
        seen.add(key)
        count[address.version] += 1
    for version, n in count.items():
        if n > IPS_PER_FAMILY_MAX:
            message = (
                f"{n} IPv{version} addresses: a VM has at most {IPS_PER_FAMILY_MAX} IPv4 "
                f"and {IPS_PER_FAMILY_MAX} IPv6 addresses"
            )
            problems.append(Problem(subject, "ips", message))
    return problems


def validate(
    fabric: Fabric, vms: Iterable[Vm], checked: dict[Vm, list[Problem]] | None = None
) -> None:
    """Raise ValidationError listing every problem of this fabric + VM set.

    ``checked`` caches the per-VM checks (VMs are immutable values) so that a
    change to one VM among thousands re-checks only that one."""
    problems = check_fabric(fabric)
    vms = vms if isinstance(vms, (list, tuple)) else list(vms)  # (walked twice)
    vrfs = vrf_of(fabric)
    macs: dict[tuple[int, str], str] = {}
    ips: dict[tuple[int, str], str] = {}
    vrf_ips: dict[tuple[str, str], str] = {}  # (see VmIndex)
    vlans: dict[tuple[str, int], str] = {}
    names: set[str] = set()
    policies_on: dict[str, Counter[str]] = {}  # server -> QoS policy -> VMs
    for vm in vms:
        subject = subject_for("vm", vm.name)
        if vm.qos is not None:
            policies_on.setdefault(vm.server, Counter())[vm.qos] += 1
        if vm.name in names:
            problems.append(Problem(subject, "name", "declared twice"))
        names.add(vm.name)
        if checked is None:
            problems += check_vm(fabric, vm)
        else:
            if vm not in checked:
                checked[vm] = check_vm(fabric, vm)
            problems += checked[vm]
        key = (vm.vni, vm.mac)
        if key in macs:
            problems.append(
                Problem(
                    subject, "mac", f"{vm.mac} is already used by vm {macs[key]} in VNI {vm.vni}"
                )
            )
        macs.setdefault(key, vm.name)
        vrf = vrfs.get(vm.vni)
        # (an IP listed twice is check_vm's to report; two spellings are one IP)
        for ip in dict.fromkeys(canonical_ip(ip) for ip in vm.ips):
            if (vm.vni, ip) in ips:
                problems.append(
                    Problem(
                        subject,
                        "ips",
                        f"{ip} is already used by vm {ips[(vm.vni, ip)]} in VNI {vm.vni}",
                    )
                )
            elif vrf is not None and (vrf, ip) in vrf_ips:
                problems.append(
                    Problem(
                        subject,
                        "ips",
                        f"{ip} is already used by vm {vrf_ips[(vrf, ip)]} in VRF {vrf}",
                    )
                )
            ips.setdefault((vm.vni, ip), vm.name)
            if vrf is not None:
                vrf_ips.setdefault((vrf, ip), vm.name)
        if vm.server in fabric.servers:
            port_key = (vm.server, vm.vlan)
            if port_key in vlans:
                problems.append(
                    Problem(
                        subject,
                        "vlan",
                        f"VLAN {vm.vlan} on server {vm.server} is already vm {vlans[port_key]}",
                    )
                )
            vlans.setdefault(port_key, vm.name)
    for server, policies in policies_on.items():
        problems += link_problems(fabric, server, policies, f"server {server}", "link_rate")
    problems += _pair_conflicts(vms, vrfs)
    if problems:
        raise ValidationError(problems)


def _pair_conflicts(vms: Iterable[Vm], vrfs: Mapping[int, str]) -> list[Problem]:
    """What the VMs' allowed pairs claim of other VMs (port_security.py),
    each conflict named once, by the VM whose pair it is; nothing to do
    when no VM has a pair."""
    holders = [vm for vm in vms if vm.allowed_pairs]
    if not holders:
        return []
    index = VmIndex.of(vms, vrfs)
    return [p for vm in holders for p in index.pair_conflicts(vm, both_sides=False)]


# What each QoS direction guarantees, as a link problem says it.
GUARANTEE_DIRECTIONS = {"tx": "sent by", "rx": "delivered to"}


def link_problems(
    fabric: Fabric, server_name: str, policies: Mapping[str, int], subject: str, field: str
) -> list[Problem]:
    """Whether the VMs on a server, holding these QoS policies (name -> how
    many VMs), are guaranteed more than its link carries in a direction: the
    ToR could not keep every guarantee when the link is full (docs/controller.md)."""
    server = fabric.servers.get(server_name)
    if server is None or server.link_rate is None:
        return []
    totals = dict.fromkeys(GUARANTEE_DIRECTIONS, 0)  # bytes/s
    for name, count in policies.items():
        policy = fabric.policies.get(name)
        if policy is None:
            continue  # (check_vm reports an unknown policy)
        for direction in totals:
            rates = getattr(policy, direction)
            if rates is not None:
                totals[direction] += count * rates.cir
    return [
        Problem(
            subject,
            field,
            f"the rates guaranteed (cir) to traffic {GUARANTEE_DIRECTIONS[direction]} the VMs "
            f"on server {server_name} would add up to {format_bit_rate(total * 8)}, above its "
            f"link_rate of {format_bit_rate(server.link_rate)}",
        )
        for direction, total in totals.items()
        if total * 8 > server.link_rate
    ]


def vrf_of(fabric: Fabric) -> dict[int, str]:
    """The VRF of each routed VNI."""
    return {v.vni: v.vrf for v in fabric.vnis.values() if v.vrf is not None}


class VmIndex:
    """Who holds each (VNI, MAC), (VNI, IP), (VRF, IP) and (server, VLAN), so
    that a change to a few VMs is checked without walking all of them.

    IPs are unique per VNI and, for a routed VNI, per VRF, each keyed by its
    canonical form (``canonical_ip``: two spellings of an IPv6 address are
    one). (Within a VRF the second follows from the first: a routed VM's IPs
    lie in its VNI's subnets and no two subnets of a VRF overlap; indexing
    it anyway keeps the index right if a refused change is undone, and
    answers who owns a static route's next hop without walking the VMs.)"""

    def __init__(self, vrf_of: Mapping[int, str]) -> None:
        self.vrf_of = vrf_of  # VNI -> VRF, routed VNIs only (shared, read-only)
        self.macs: dict[tuple[int, str], str] = {}
        self.ips: dict[tuple[int, str], str] = {}
        self.vrf_ips: dict[tuple[str, str], str] = {}
        self.vlans: dict[tuple[str, int], str] = {}
        self.policies_on: dict[str, Counter[str]] = {}  # server -> QoS policy -> VMs
        # Allowed pairs: who lists each, and the scopes' addresses in order.
        self.pairs = port_security.PairIndex(vrf_of, self._owner, self._addresses)

    def _owner(self, scope: port_security.Scope, ip: str) -> str | None:
        """The VM holding ``ip`` in a VRF or an L2 VNI (``port_security.Scope``)."""
        kind, name = scope
        if kind == "vrf":
            return self.vrf_ips.get((str(name), ip))
        return self.ips.get((int(name), ip))

    def _addresses(self, scope: port_security.Scope) -> list[tuple[str, str]]:
        """Every (IP, VM) of a VRF or an L2 VNI: a walk of every address,
        once per scope where a pair needs them (PairIndex keeps them after)."""
        kind, name = scope
        if kind == "vrf":
            return [(ip, vm) for (vrf, ip), vm in self.vrf_ips.items() if vrf == name]
        return [(ip, vm) for (vni, ip), vm in self.ips.items() if vni == name]

    def pair_conflicts(self, vm: Vm, both_sides: bool = True) -> list[Problem]:
        """``port_security.PairIndex.conflicts`` against this index."""
        return self.pairs.conflicts(vm, lambda vni, mac: self.macs.get((vni, mac)), both_sides)

    @classmethod
    def of(cls, vms: Iterable[Vm], vrf_of: Mapping[int, str]) -> VmIndex:
        index = cls(vrf_of)
        for vm in vms:
            index.add(vm)
        return index

    def copy(self) -> VmIndex:
        other = VmIndex(self.vrf_of)
        other.macs, other.ips, other.vlans = dict(self.macs), dict(self.ips), dict(self.vlans)
        other.vrf_ips = dict(self.vrf_ips)
        other.policies_on = {k: Counter(v) for k, v in self.policies_on.items()}
        other.pairs = self.pairs.copy(other._owner, other._addresses)
        return other

    def add(self, vm: Vm) -> None:
        self.macs[(vm.vni, vm.mac)] = vm.name
        vrf = self.vrf_of.get(vm.vni)
        for ip in map(canonical_ip, vm.ips):
            self.ips[(vm.vni, ip)] = vm.name
            if vrf is not None:
                self.vrf_ips[(vrf, ip)] = vm.name
        self.vlans[(vm.server, vm.vlan)] = vm.name
        if vm.qos is not None:
            self.policies_on.setdefault(vm.server, Counter())[vm.qos] += 1
        self.pairs.add(vm)

    def remove(self, vm: Vm) -> None:
        _release(self.macs, (vm.vni, vm.mac), vm.name)
        _release(self.vlans, (vm.server, vm.vlan), vm.name)
        if vm.qos is not None:
            policies = self.policies_on.get(vm.server)
            if policies is not None and policies[vm.qos] > 0:
                policies[vm.qos] -= 1
                if policies[vm.qos] == 0:
                    del policies[vm.qos]
        vrf = self.vrf_of.get(vm.vni)
        for ip in map(canonical_ip, vm.ips):
            _release(self.ips, (vm.vni, ip), vm.name)
            if vrf is not None:
                _release(self.vrf_ips, (vrf, ip), vm.name)
        self.pairs.remove(vm)

    def conflicts(self, vm: Vm) -> list[Problem]:
        subject = subject_for("vm", vm.name)
        problems = []
        other = self.macs.get((vm.vni, vm.mac))
        if other is not None and other != vm.name:
            problems.append(
                Problem(subject, "mac", f"{vm.mac} is already used by vm {other} in VNI {vm.vni}")
            )
        vrf = self.vrf_of.get(vm.vni)
        # (an IP listed twice is check_vm's to report; two spellings are one IP)
        for ip in dict.fromkeys(canonical_ip(ip) for ip in vm.ips):
            other = self.ips.get((vm.vni, ip))
            if other is not None and other != vm.name:
                problems.append(
                    Problem(subject, "ips", f"{ip} is already used by vm {other} in VNI {vm.vni}")
                )
                continue
            other = None if vrf is None else self.vrf_ips.get((vrf, ip))
            if other is not None and other != vm.name:
                problems.append(
                    Problem(subject, "ips", f"{ip} is already used by vm {other} in VRF {vrf}")
                )
        other = self.vlans.get((vm.server, vm.vlan))
        if other is not None and other != vm.name:
            problems.append(
                Problem(
                    subject, "vlan", f"VLAN {vm.vlan} on server {vm.server} is already vm {other}"
                )
            )
        return problems + self.pair_conflicts(vm)


def validate_change(
    fabric: Fabric,
    current: dict[str, Vm],
    index: VmIndex,
    upserts: list[Vm],
    removals: list[str],
    checked: dict[Vm, list[Problem]] | None = None,
) -> VmIndex:
    """Check a change to a state already known to be valid. ``index`` is
    updated in place to the new state and returned (no copy: a change costs
    the same with 100 or 100,000 VMs); if the change is refused it raises
    ValidationError naming every problem and leaves ``index`` as it was."""
    removed = [current[name] for name in removals if name in current]
    removed += [current[vm.name] for vm in upserts if vm.name in current]
    for vm in removed:
        index.remove(vm)
    problems: list[Problem] = []
    added: list[Vm] = []
    seen: set[str] = set()
    for vm in upserts:
        if vm.name in seen:
            problems.append(Problem(subject_for("vm", vm.name), "name", "declared twice"))
        seen.add(vm.name)
        if checked is not None:
            if vm not in checked:
                checked[vm] = check_vm(fabric, vm)
            problems += checked[vm]
        else:
            problems += check_vm(fabric, vm)
        conflicts = index.conflicts(vm)
        problems += conflicts
        if not conflicts:
            index.add(vm)
            added.append(vm)
    if not problems:
        # Guarantees above a server's link, naming the first VM that adds one there.
        first_on: dict[str, Vm] = {}
        for vm in added:
            if vm.qos is not None:
                first_on.setdefault(vm.server, vm)
        for server, vm in first_on.items():
            problems += link_problems(
                fabric,
                server,
                index.policies_on.get(server, {}),
                subject_for("vm", vm.name),
                "qos",
            )
    if problems:
        for vm in added:
            index.remove(vm)
        for vm in removed:
            index.add(vm)
        raise ValidationError(problems)
    return index


def _release(holders: dict[K, str], key: K, name: str) -> None:
    """Forget that ``name`` holds ``key`` (another VM may hold it by now)."""
    if holders.get(key) == name:
        del holders[key]
