"""Access ingress: (port, VLAN) -> VM, anti-spoofing, malformed frames."""

from base import A1, A2, ACCESS_PORT_1, B1, DropReason, VtepFabricTest, vm_frame
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw


class SpoofedSourceMacTest(VtepFabricTest):
    """a1's VF with another VM's source MAC is dropped and counted."""

    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip, src_mac=B1.mac)
        self.assert_dropped(A1.port, frame, DropReason.SPOOFED_SOURCE)


class SpoofedVlanTest(VtepFabricTest):
    """a1 sending on b1's VLAN (same port) is not b1: dropped as spoofed."""

    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip, vlan=B1.vlan)
        self.assert_dropped(A1.port, frame, DropReason.SPOOFED_SOURCE)


class UnknownVlanTest(VtepFabricTest):
    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip, vlan=999)
        self.assert_dropped(A1.port, frame, DropReason.UNKNOWN_VLAN)


class UntaggedAccessFrameTest(VtepFabricTest):
    def runTest(self):
        frame = Ether(src=A1.mac, dst=A2.mac) / IP(src=A1.ip, dst=A2.ip) / UDP() / Raw(b"x" * 40)
        self.assert_dropped(A1.port, frame, DropReason.UNTAGGED_ACCESS)


class DoubleTaggedFrameTest(VtepFabricTest):
    def runTest(self):
        frame = (
            Ether(src=A1.mac, dst=A2.mac)
            / Dot1Q(vlan=A1.vlan)
            / Dot1Q(vlan=A2.vlan)
            / IP(src=A1.ip, dst=A2.ip)
            / UDP()
            / Raw(b"x" * 40)
        )
        self.assert_dropped(A1.port, frame, DropReason.DOUBLE_TAGGED)


class UnknownPortTest(VtepFabricTest):
    """Port 5 has no role: everything arriving there is dropped."""

    def runTest(self):
        self.assert_dropped(5, vm_frame(A1, A2.mac, A2.ip), DropReason.UNKNOWN_PORT)


class BadIpVersionTest(VtepFabricTest):
    """EtherType IPv4 with version 6 in the header is malformed."""

    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip)
        frame[IP].version = 6
        self.assert_dropped(ACCESS_PORT_1, frame, DropReason.MALFORMED)
