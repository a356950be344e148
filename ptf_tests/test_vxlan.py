"""VTEP: encap toward remote VTEPs, decap toward local VFs, termination checks."""

from base import (
    A1,
    A2,
    A3,
    A4,
    B1,
    B3,
    LOCAL_VTEP_IP,
    REMOTE_VTEP_1,
    REMOTE_VTEP_2,
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
    vxlan_packet,
)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw


class EncapToRemoteVtepTest(VtepFabricTest):
    """a1 -> a3 behind VTEP 1: every outer field checked, inner frame is a1's
    frame without its VF tag."""

    def runTest(self):
        frame = vm_frame(A1, A3.mac, A3.ip)
        tu.send_packet(self, A1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1)
        tu.verify_no_other_packets(self)


class EncapOtherTenantTest(VtepFabricTest):
    """b1 -> b3: same VTEP, tenant B's VNI in the header."""

    def runTest(self):
        frame = vm_frame(B1, B3.mac, B3.ip, tcp=True)
        tu.send_packet(self, B1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_B, REMOTE_VTEP_1)
        tu.verify_no_other_packets(self)


class EncapCopiesInnerDscpTest(VtepFabricTest):
    def runTest(self):
        frame = vm_frame(A1, A4.mac, A4.ip)
        frame[IP].tos = 0xB8  # EF
        tu.send_packet(self, A1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_2, tos=0xB8)
        tu.verify_no_other_packets(self)


class UdpSourcePortTest(VtepFabricTest):
    """RFC 7348: the outer UDP source port is in 49152-65535, the same for
    every packet of a flow, and varies between flows."""

    def runTest(self):
        seen = {}
        for flow in range(64):
            for _ in range(2):
                frame = vm_frame(A1, A3.mac, A3.ip, sport=1000 + flow)
                tu.send_packet(self, A1.port, frame)
                _, pkt = self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1)
                sport = pkt[UDP].sport
                self.assertTrue(49152 <= sport <= 65535, f"source port {sport} out of range")
                self.assertEqual(seen.setdefault(flow, sport), sport, f"flow {flow} changed port")
        self.assertGreater(len(set(seen.values())), 32, "source port barely varies across flows")


class DecapToLocalVfTest(VtepFabricTest):
    """VXLAN from VTEP 1, VNI A, a3 -> a1: delivered on a1's port with a1's VLAN."""

    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1))
        tu.verify_packet(self, retag(inner, A1.vlan), A1.port)
        tu.verify_no_other_packets(self)


class DecapPerVniTest(VtepFabricTest):
    """The VNI, not the inner MAC, picks the tenant: b1 gets VNI B's frame."""

    def runTest(self):
        inner = untag(vm_frame(B3, B1.mac, B1.ip))
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_B, REMOTE_VTEP_1))
        tu.verify_packet(self, retag(inner, B1.vlan), B1.port)
        tu.verify_no_other_packets(self)
        # b1's MAC in VNI A is unknown: floods VNI A locally, never b1's VF.
        inner = untag(vm_frame(A3, B1.mac, B1.ip))
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1))
        tu.verify_packet(self, retag(inner, A1.vlan), A1.port)
        tu.verify_packet(self, retag(inner, A2.vlan), A2.port)
        tu.verify_no_other_packets(self)


class UnknownVniTest(VtepFabricTest):
    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        self.assert_dropped(
            UPLINK_1, from_remote(inner, 7777, REMOTE_VTEP_1), DropReason.UNKNOWN_VNI
        )


class WrongUdpPortTest(VtepFabricTest):
    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        pkt = from_remote(inner, VNI_A, REMOTE_VTEP_1)
        pkt[UDP].dport = 4790
        self.assert_dropped(UPLINK_1, Ether(bytes(pkt)), DropReason.WRONG_UDP_PORT)


class ForeignVtepTest(VtepFabricTest):
    """Valid VXLAN for some other VTEP: this ToR does not forward underlay transit."""

    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        pkt = vxlan_packet(
            inner,
            vni=VNI_A,
            outer_src=REMOTE_VTEP_1,
            outer_dst="10.0.0.99",
            src_mac=SPINE_MAC[UPLINK_1],
            dst_mac=ROUTER_MAC,
        )
        self.assert_dropped(UPLINK_1, pkt, DropReason.NOT_FOR_VTEP)


class TruncatedVxlanTest(VtepFabricTest):
    """UDP 4789 to our VTEP with only 4 bytes of VXLAN header."""

    def runTest(self):
        pkt = (
            Ether(src=SPINE_MAC[UPLINK_1], dst=ROUTER_MAC)
            / IP(src=REMOTE_VTEP_1, dst=LOCAL_VTEP_IP)
            / UDP(sport=50000, dport=4789)
            / Raw(b"\x08\x00\x00\x00")
        )
        self.assert_dropped(UPLINK_1, pkt, DropReason.BAD_VXLAN)


class VxlanFlagClearTest(VtepFabricTest):
    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        self.assert_dropped(
            UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1, flags=0), DropReason.BAD_VXLAN
        )


class OuterTtlZeroTest(VtepFabricTest):
    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        self.assert_dropped(
            UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1, ttl=0), DropReason.TTL_EXPIRED
        )


class OuterChecksumWrongTest(VtepFabricTest):
    def runTest(self):
        inner = untag(vm_frame(A3, A1.mac, A1.ip))
        pkt = Ether(bytes(from_remote(inner, VNI_A, REMOTE_VTEP_1)))
        pkt[IP].chksum ^= 0x1234
        self.assert_dropped(UPLINK_1, pkt, DropReason.BAD_CHECKSUM)


class FabricToFabricTest(VtepFabricTest):
    """A remote VTEP's packet for a MAC behind another remote VTEP is not
    sent back into the fabric (split horizon)."""

    def runTest(self):
        inner = untag(vm_frame(A3, A4.mac, A4.ip))
        self.assert_dropped(
            UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1), DropReason.SPLIT_HORIZON
        )


class NoRouteToVtepTest(VtepFabricTest):
    """A remote VM behind a VTEP with no underlay route: dropped as NO_ROUTE."""

    def runTest(self):
        far_mac = "00:00:0a:00:00:99"
        self.sw.insert(self.entries.mac_to_remote_vtep(VNI_A, far_mac, "172.16.0.9"))
        self.assert_dropped(A1.port, vm_frame(A1, far_mac, "192.168.1.99"), DropReason.NO_ROUTE)


class NoLocalVtepTest(VtepFabricTest):
    """Encap before the controller set the local VTEP: dropped, never sent
    with a zero source address."""

    configure_local_vtep = False

    def runTest(self):
        self.assert_dropped(A1.port, vm_frame(A1, A3.mac, A3.ip), DropReason.NO_LOCAL_VTEP)
