"""Builder: a VM on another ToR, in a VNI this ToR hosts. Its MAC points at
that ToR's VTEP; its ARP entries are answered here."""

from __future__ import annotations

from ..model import Fabric, Vm
from .encode import Encoder
from .state import Encoded


def build(enc: Encoder, fabric: Fabric, vm: Vm) -> list[Encoded]:
    vtep_ip = fabric.tors[fabric.servers[vm.server].tor].vtep_ip
    out = [enc.mac_to_remote_vtep(vm.vni, vm.mac, vtep_ip)]
    out += [enc.arp_suppression(vm.vni, ip, vm.mac) for ip in vm.ips]
    return out
