"""Builder: a MAC behind another VTEP, in a VNI this ToR hosts. A VM on
another of our ToRs points at that ToR's VTEP; a MAC learned through EVPN (or
a static one) points at the external VTEP. Their ARP (IPv4) and ND (IPv6)
entries are answered here."""

from __future__ import annotations

from collections.abc import Iterable

from ..model.fabric import Fabric, Vm
from .encode import Encoder
from .learned import LearnedMac
from .switch_state import Encoded


def build(enc: Encoder, fabric: Fabric, vm: Vm, moved_away: bool = False) -> list[Encoded]:
    """``moved_away``: a remote VTEP won the VM's MAC; the learned entry
    replaces the VM's MAC entry (its ARP and ND entries stay)."""
    vtep_ip = fabric.tors[fabric.servers[vm.server].tor].vtep_ip
    out = [] if moved_away else [enc.mac_to_remote_vtep(vm.vni, vm.mac, vtep_ip)]
    out += [enc.neighbour(vm.vni, ip, vm.mac) for ip in vm.ips]
    return out


def learned(enc: Encoder, macs: Iterable[LearnedMac], vms: Iterable[Vm]) -> list[Encoded]:
    """The learned MACs of one VNI, each towards its VTEP. The learned table
    lets a remote claim on one of our VMs' MACs win only when the VM moved
    away (a higher sequence number): then the MAC entry is this one, and the
    VM's builders leave theirs out. An IP that a VM of ours in the VNI
    (``vms``) has stays the VM's ARP or ND entry (never two writers of one entry);
    an IP claimed by two learned MACs goes to the lower MAC."""
    vm_ips: set[str] = set()
    for vm in vms:
        vm_ips.update(vm.ips)
    out = []
    for m in sorted(macs, key=lambda m: m.mac):
        out.append(enc.mac_to_remote_vtep(m.vni, m.mac, m.vtep))
        for ip in sorted(m.ips):
            if ip not in vm_ips:
                vm_ips.add(ip)
                out.append(enc.neighbour(m.vni, ip, m.mac))
    return out
