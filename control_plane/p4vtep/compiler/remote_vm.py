"""Builder: a MAC behind another VTEP, in a VNI this ToR hosts. A VM on
another of our ToRs points at that ToR's VTEP; a MAC learned through EVPN (or
a static one) points at the external VTEP. Their ARP entries are answered here."""

from __future__ import annotations

from collections.abc import Iterable

from ..model import Fabric, Vm
from .encode import Encoder
from .learned import LearnedMac
from .state import Encoded


def build(enc: Encoder, fabric: Fabric, vm: Vm) -> list[Encoded]:
    vtep_ip = fabric.tors[fabric.servers[vm.server].tor].vtep_ip
    out = [enc.mac_to_remote_vtep(vm.vni, vm.mac, vtep_ip)]
    out += [enc.arp_suppression(vm.vni, ip, vm.mac) for ip in vm.ips]
    return out


def learned(enc: Encoder, macs: Iterable[LearnedMac], vms: Iterable[Vm]) -> list[Encoded]:
    """The learned MACs of one VNI. A MAC or IP that a VM of ours in the VNI
    (``vms``) has is left to the VM's entries: the learned table only lets a
    remote claim on our VM's MAC win when the VM moved away, and until the
    inventory follows, the VM's own entries stand (never two writers of one
    entry). An IP claimed by two learned MACs goes to the lower MAC."""
    vm_macs: set[str] = set()
    vm_ips: set[str] = set()
    for vm in vms:
        vm_macs.add(vm.mac)
        vm_ips.update(vm.ips)
    out = []
    for m in sorted(macs, key=lambda m: m.mac):
        if m.mac in vm_macs:
            continue
        out.append(enc.mac_to_remote_vtep(m.vni, m.mac, m.vtep))
        for ip in sorted(m.ips):
            if ip not in vm_ips:
                vm_ips.add(ip)
                out.append(enc.arp_suppression(m.vni, ip, m.mac))
    return out
