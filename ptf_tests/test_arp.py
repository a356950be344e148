"""ARP suppression: the ToR answers for IPs it knows in the asker's VNI."""

from base import (
    A1,
    A2,
    A3,
    A4,
    B1,
    B2,
    REMOTE_VTEP_1,
    UPLINK_1,
    VNI_A,
    VNI_B,
    VtepFabricTest,
    arp_request,
    retag,
    tu,
    untag,
)
from p4vtep.runtime import entities
from scapy.layers.l2 import ARP, Dot1Q, Ether


def arp_reply(asker, target_ip: str, target_mac: str):
    return (
        Ether(src=target_mac, dst=asker.mac)
        / Dot1Q(vlan=asker.vlan)
        / ARP(op=2, hwsrc=target_mac, psrc=target_ip, hwdst=asker.mac, pdst=asker.ip)
    )


class ArpSuppressionTest(VtepFabricTest):
    """a1 asks for a2 (local) and a3 (remote): exact replies out of a1's VF,
    nothing flooded, the entry's direct counter sees each."""

    def runTest(self):
        for target in (A2, A3):
            tu.send_packet(self, A1.port, arp_request(A1, target.ip))
            tu.verify_packet(self, arp_reply(A1, target.ip, target.mac), A1.port)
            tu.verify_no_other_packets(self)
            entry = self.entries.arp_suppression(VNI_A, target.ip, target.mac)
            [read] = self.sw.read(entities.direct_counter_entry(entry))
            self.assertEqual(read.direct_counter_entry.data.packet_count, 1)


class ArpSuppressionPerTenantTest(VtepFabricTest):
    """Same IP in both tenants: b1 learns b2's MAC, a1 learns a2's."""

    def runTest(self):
        for asker, target in ((B1, B2), (A1, A2)):
            tu.send_packet(self, asker.port, arp_request(asker, target.ip))
            tu.verify_packet(self, arp_reply(asker, target.ip, target.mac), asker.port)
            tu.verify_no_other_packets(self)


class ArpUnknownIpFloodsOwnVniTest(VtepFabricTest):
    """192.168.1.4 exists only in tenant A: b1's request is not answered and
    floods tenant B only (b2's VF and VTEP 1 with VNI B)."""

    def runTest(self):
        request = arp_request(B1, A4.ip)
        tu.send_packet(self, B1.port, request)
        tu.verify_packet(self, retag(request, B2.vlan), B2.port)
        self.verify_encap_any_uplink(untag(request), VNI_B, REMOTE_VTEP_1)
        tu.verify_no_other_packets(self)


class GratuitousArpFloodsTest(VtepFabricTest):
    """A VM announcing itself (sender IP == target IP) is not answered by the
    switch; its VNI hears it."""

    def runTest(self):
        garp = arp_request(A1, A1.ip)
        tu.send_packet(self, A1.port, garp)
        tu.verify_packet(self, retag(garp, A2.vlan), A2.port)
        for _ in range(2):
            self.receive_any((UPLINK_1, 4))
        tu.verify_no_other_packets(self)


class ArpProbeFloodsTest(VtepFabricTest):
    """An ARP probe (sender IP 0.0.0.0, RFC 5227) is not answered by the
    switch, whether for the prober's own address (an answer would make it
    give the address up) or another's (whose owner answers the flood)."""

    def runTest(self):
        for target in (A1, A2):
            probe = arp_request(A1, target.ip)
            probe[ARP].psrc = "0.0.0.0"
            tu.send_packet(self, A1.port, probe)
            tu.verify_packet(self, retag(probe, A2.vlan), A2.port)
            for _ in range(2):
                self.receive_any((UPLINK_1, 4))
            tu.verify_no_other_packets(self)
