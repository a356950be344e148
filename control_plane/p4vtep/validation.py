"""Checks on the desired state before anything is written to a switch.

A bad change is refused whole: ``validate`` returns every problem, each naming
the VM (or fabric object) and the field, so an operator can fix them in one go.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from .allocation import EXTERNAL_VTEP
from .dataplane import limits
from .dataplane.limits import VLAN_MAX, VLAN_MIN, VNI_MAX
from .dataplane.targets import Target
from .model import Fabric, Tor, Vm

MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
VNI_MIN = 1
K = TypeVar("K")


@dataclass(frozen=True)
class Problem:
    subject: str  # "vm web-1", "tor tor1", ...
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.field}: {self.message}"


class ValidationError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def normalise_mac(mac: str) -> str:
    return mac.strip().lower().replace("-", ":")


def _port_problem(port: int, tor: Tor) -> str | None:
    """Why ``port`` of ``tor`` cannot carry a server or an uplink: outside
    port_t, or reserved on the ToR's target (each chip has its own CPU port)."""
    try:
        target = Target.parse(tor.target)
    except ValueError:
        target = Target.BMV2  # (the unknown target is reported on its own)
    return limits.BMV2.port_problem(port, target)


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
            elif rates.pir < rates.cir:
                problems.append(
                    Problem(f"qos {policy.name}", direction, "peak rate below committed rate")
                )
    return problems


def check_vm(fabric: Fabric, vm: Vm) -> list[Problem]:
    subject = f"vm {vm.name}"
    problems = []
    if not MAC_RE.match(vm.mac):
        problems.append(Problem(subject, "mac", f"{vm.mac!r} is not a MAC address"))
    elif int(vm.mac.split(":")[0], 16) & 1:
        problems.append(Problem(subject, "mac", f"{vm.mac} is a multicast MAC"))
    for ip in vm.ips:
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            problems.append(Problem(subject, "ips", f"{ip!r} is not an IPv4 address"))
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
    return problems


def validate(
    fabric: Fabric, vms: Iterable[Vm], checked: dict[Vm, list[Problem]] | None = None
) -> None:
    """Raise ValidationError listing every problem of this fabric + VM set.

    ``checked`` caches the per-VM checks (VMs are immutable values) so that a
    change to one VM among thousands re-checks only that one."""
    problems = check_fabric(fabric)
    macs: dict[tuple[int, str], str] = {}
    ips: dict[tuple[int, str], str] = {}
    vlans: dict[tuple[str, int], str] = {}
    names: set[str] = set()
    for vm in vms:
        subject = f"vm {vm.name}"
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
        for ip in vm.ips:
            if (vm.vni, ip) in ips:
                problems.append(
                    Problem(
                        subject,
                        "ips",
                        f"{ip} is already used by vm {ips[(vm.vni, ip)]} in VNI {vm.vni}",
                    )
                )
            ips.setdefault((vm.vni, ip), vm.name)
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
    if problems:
        raise ValidationError(problems)


class VmIndex:
    """Who holds each (VNI, MAC), (VNI, IP) and (server, VLAN), so that a change
    to a few VMs is checked without walking all of them."""

    def __init__(self) -> None:
        self.macs: dict[tuple[int, str], str] = {}
        self.ips: dict[tuple[int, str], str] = {}
        self.vlans: dict[tuple[str, int], str] = {}

    @classmethod
    def of(cls, vms: Iterable[Vm]) -> VmIndex:
        index = cls()
        for vm in vms:
            index.add(vm)
        return index

    def copy(self) -> VmIndex:
        other = VmIndex()
        other.macs, other.ips, other.vlans = dict(self.macs), dict(self.ips), dict(self.vlans)
        return other

    def add(self, vm: Vm) -> None:
        self.macs[(vm.vni, vm.mac)] = vm.name
        for ip in vm.ips:
            self.ips[(vm.vni, ip)] = vm.name
        self.vlans[(vm.server, vm.vlan)] = vm.name

    def remove(self, vm: Vm) -> None:
        _release(self.macs, (vm.vni, vm.mac), vm.name)
        _release(self.vlans, (vm.server, vm.vlan), vm.name)
        for ip in vm.ips:
            _release(self.ips, (vm.vni, ip), vm.name)

    def conflicts(self, vm: Vm) -> list[Problem]:
        subject = f"vm {vm.name}"
        problems = []
        other = self.macs.get((vm.vni, vm.mac))
        if other is not None and other != vm.name:
            problems.append(
                Problem(subject, "mac", f"{vm.mac} is already used by vm {other} in VNI {vm.vni}")
            )
        for ip in vm.ips:
            other = self.ips.get((vm.vni, ip))
            if other is not None and other != vm.name:
                problems.append(
                    Problem(subject, "ips", f"{ip} is already used by vm {other} in VNI {vm.vni}")
                )
        other = self.vlans.get((vm.server, vm.vlan))
        if other is not None and other != vm.name:
            problems.append(
                Problem(
                    subject, "vlan", f"VLAN {vm.vlan} on server {vm.server} is already vm {other}"
                )
            )
        return problems


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
            problems.append(Problem(f"vm {vm.name}", "name", "declared twice"))
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
