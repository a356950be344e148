"""Builder: a VM on this ToR. Its (port, VLAN) binding, its port security
(source guards, extra source MACs), its MAC, its ARP (IPv4) and ND (IPv6)
entries, its flood replica and, with a QoS policy, its meters."""

from __future__ import annotations

from ..model.fabric import Fabric, Rates, Vm
from .encode import Encoder
from .switch_state import Encoded


def rates(r: Rates) -> Rates:
    return Rates(r.cir, r.cburst, r.pir, r.pburst)


def policed(fabric: Fabric, vm: Vm) -> tuple[bool, bool]:
    """Whether the VM's policy meters what it sends and what it receives."""
    policy = fabric.policies.get(vm.qos) if vm.qos else None
    if policy is None:
        return False, False
    return policy.tx is not None, policy.rx is not None


def port_security(enc: Encoder, port: int, vm: Vm) -> list[Encoded]:
    """The VM's port-security entries (docs/security.md): guarded, a source
    guard entry per address (/32, /128) and per pair prefix; guarded or not,
    an allowed source MAC per pair MAC other than its own. Each once, in a
    fixed order. What every guarded VM may claim besides (0.0.0.0; any
    link-local source, fe80::/64, as distributions use RFC 7217 addresses no
    MAC gives away; ::, duplicate address detection's) is the pipeline's own
    rule (port_security.p4), not an entry per VM. A pipeline without an
    IPv6 guard (Tofino 1's profile) gets the IPv4 entries only: it drops
    every IPv6 frame of a guarded VM."""
    vlan, pairs = vm.vlan, vm.allowed_pairs
    out = []
    if vm.port_security:
        guard = enc.source_guard
        # (a VM's addresses are distinct: validation.py; a pair may repeat one)
        prefixes = [(ip, 128 if ":" in ip else 32) for ip in vm.ips]
        if pairs:
            for p in pairs:
                address, _, length = p.prefix.partition("/")
                prefixes.append((address, int(length)))
            prefixes = list(dict.fromkeys(prefixes))
        if not enc.ipv6_guard:
            prefixes = [(ip, length) for ip, length in prefixes if ":" not in ip]
        out = [guard(port, vlan, ip, length) for ip, length in prefixes]
    if pairs:
        macs = dict.fromkeys(p.mac for p in pairs if p.mac is not None and p.mac != vm.mac)
        out += [enc.allowed_source_mac(port, vlan, mac) for mac in macs]
    return out


def bound_ipv4(enc: Encoder, vm: Vm) -> str | int:
    """What the binding says of a guarded VM's IPv4 (BMv2: the short-cut
    past its source guard, which lists the address too): its first IPv4
    address, else 0; 0 for an unguarded VM, whose frames meet no guard."""
    if not (vm.port_security and enc.port_security):
        return 0
    return next((ip for ip in vm.ips if ":" not in ip), 0)


def build(
    enc: Encoder, fabric: Fabric, vm: Vm, index: int, moved_away: bool = False
) -> list[Encoded]:
    """``moved_away``: a remote VTEP won the VM's MAC (EVPN mobility); its
    MAC entry is the learned one (``remote_vm.learned``), the rest stays.
    The binding, MAC entry and replica say whether the VM is policed, so
    that only a policed VM's GREEN frames are committed (docs/qos.md)."""
    port = fabric.servers[vm.server].port
    vrf = fabric.vnis[vm.vni].vrf
    l3vni = fabric.vrfs[vrf].l3vni if vrf is not None else 0  # (the VRF's id: routing.py)
    tx, rx = policed(fabric, vm)
    out = [
        enc.access_binding(
            port,
            vm.vlan,
            vm.vni,
            index,
            vm.mac,
            l3vni,
            tx,
            vm.port_security,
            vm.dhcp_server,
            bound_ipv4(enc, vm),
        )
    ]
    if enc.port_security:
        out += port_security(enc, port, vm)
    if not moved_away:
        out.append(enc.mac_to_local_vm(vm.vni, vm.mac, port, vm.vlan, index, rx))
    out.append(enc.replica_to_vm(index, vm.vlan, index, rx))
    out += [enc.neighbour(vm.vni, ip, vm.mac) for ip in vm.ips]
    policy = fabric.policies.get(vm.qos) if vm.qos else None
    if policy is not None:
        for direction, r in (("tx", policy.tx), ("rx", policy.rx)):
            if r is not None:
                out += enc.policy_meters(direction, index, rates(r))
    return out
