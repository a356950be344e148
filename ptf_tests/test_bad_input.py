"""Malformed and hostile input: each is dropped and counted under its reason,
and the switch keeps forwarding good traffic afterwards."""

from base import (
    A1,
    A2,
    A3,
    B1,
    REMOTE_VTEP_1,
    ROUTER_MAC,
    SPINE_MAC,
    UPLINK_1,
    VNI_A,
    VNI_B,
    DropReason,
    VtepFabricTest,
    from_remote,
    retag,
    tu,
    untag,
    vm_frame,
)
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.packet import Raw


class BadInputTest(VtepFabricTest):
    def assert_still_forwarding(self):
        frame = vm_frame(A1, A2.mac, A2.ip)
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, retag(frame, A2.vlan), A2.port)
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1))
        tu.verify_packet(self, retag(inner, A1.vlan), A1.port)
        tu.verify_no_other_packets(self)


class TruncatedHeadersTest(BadInputTest):
    """IPv4 cut inside its header, UDP cut inside its header, VXLAN cut short."""

    def runTest(self):
        whole = bytes(from_remote(untag(vm_frame(A3, A1.mac, A1.ip)), VNI_A, REMOTE_VTEP_1))
        cases = (
            (whole[: 14 + 12], DropReason.MALFORMED),  # inside IPv4
            (whole[: 14 + 20 + 4], DropReason.MALFORMED),  # inside UDP
            (whole[: 14 + 20 + 8 + 5], DropReason.BAD_VXLAN),
        )  # inside VXLAN
        for raw, reason in cases:
            self.assert_dropped(UPLINK_1, Ether(raw), reason)
        self.assert_still_forwarding()


class WrongIpVersionOnFabricTest(BadInputTest):
    def runTest(self):
        pkt = Ether(bytes(from_remote(untag(vm_frame(A3, A1.mac, A1.ip)), VNI_A, REMOTE_VTEP_1)))
        pkt[IP].version = 5
        self.assert_dropped(UPLINK_1, Ether(bytes(pkt)), DropReason.MALFORMED)
        self.assert_still_forwarding()


class VniZeroTest(BadInputTest):
    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        self.assert_dropped(UPLINK_1, from_remote(inner, 0, REMOTE_VTEP_1), DropReason.UNKNOWN_VNI)
        self.assert_still_forwarding()


class TaggedInnerFrameTest(BadInputTest):
    """RFC 7348: a VLAN-tagged inner frame is dropped at decap."""

    def runTest(self):
        inner = vm_frame(A3, A1.mac, A1.ip, vlan=A1.vlan)  # still tagged
        self.assert_dropped(
            UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1), DropReason.BAD_VXLAN
        )
        self.assert_still_forwarding()


class NonIpOnFabricTest(BadInputTest):
    def runTest(self):
        pkt = Ether(src=SPINE_MAC[UPLINK_1], dst=ROUTER_MAC, type=0x88B5) / Raw(b"x" * 50)
        self.assert_dropped(UPLINK_1, pkt, DropReason.NOT_IPV4_FABRIC)
        self.assert_still_forwarding()


class SameMacInTwoTenantsTest(VtepFabricTest):
    """One MAC used by a VM in each tenant (allowed): each tenant's frames to
    that MAC reach its own VM only."""

    def runTest(self):
        shared_mac, vlan_a, vlan_b = "00:00:0c:00:00:99", 60, 70
        e = self.entries
        self.sw.insert(
            e.access_binding(A2.port, vlan_a, VNI_A, 6, shared_mac),
            e.mac_to_local_vm(VNI_A, shared_mac, A2.port, vlan_a, 6),
            e.arp_suppression(VNI_A, "192.168.1.60", shared_mac),
            e.access_binding(A2.port, vlan_b, VNI_B, 7, shared_mac),
            e.mac_to_local_vm(VNI_B, shared_mac, A2.port, vlan_b, 7),
        )
        for sender, vlan in ((A1, vlan_a), (B1, vlan_b)):
            frame = vm_frame(sender, shared_mac, "192.168.1.60")
            tu.send_packet(self, sender.port, frame)
            tu.verify_packet(self, retag(frame, vlan), A2.port)
            tu.verify_no_other_packets(self)


class IpHeaderLengthTooShortTest(BadInputTest):
    """IHL 4 (a 16-byte IPv4 header) is malformed, on the fabric and from a VM."""

    def runTest(self):
        pkt = Ether(bytes(from_remote(untag(vm_frame(A3, A1.mac, A1.ip)), VNI_A, REMOTE_VTEP_1)))
        pkt[IP].ihl = 4
        self.assert_dropped(UPLINK_1, Ether(bytes(pkt)), DropReason.MALFORMED)
        frame = Ether(bytes(vm_frame(A1, A2.mac, A2.ip)))
        frame[IP].ihl = 4
        self.assert_dropped(A1.port, Ether(bytes(frame)), DropReason.MALFORMED)
        self.assert_still_forwarding()


class OversizeFrameTest(BadInputTest):
    """A VM frame over 9018 bytes (9000-byte MTU) is dropped; one at the
    limit is switched."""

    def runTest(self):
        headers = 14 + 4 + 20 + 8  # Ethernet, VF tag, IPv4, UDP
        at_limit = vm_frame(A1, A2.mac, A2.ip, payload_len=9018 - headers)
        self.assertEqual(len(at_limit), 9018)
        tu.send_packet(self, A1.port, at_limit)
        tu.verify_packet(self, retag(at_limit, A2.vlan), A2.port)
        tu.verify_no_other_packets(self)
        self.assert_dropped(
            A1.port, vm_frame(A1, A2.mac, A2.ip, payload_len=9100), DropReason.OVERSIZE
        )
        self.assert_still_forwarding()
