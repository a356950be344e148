"""Local switching within a VNI, VLAN rewrite per VF, and no leak between VNIs."""

from base import (
    A1,
    A2,
    ACCESS_PORT_1,
    B1,
    B2,
    REMOTE_VTEP_1,
    REMOTE_VTEP_2,
    UPLINK_1,
    UPLINK_2,
    VNI_A,
    DropReason,
    VtepFabricTest,
    expected_encap,
    retag,
    tu,
    untag,
    vm_frame,
)


class LocalUnicastTest(VtepFabricTest):
    """a1 -> a2: out of a2's port with a2's VF VLAN, frame otherwise untouched."""

    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip)
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, retag(frame, A2.vlan), A2.port)
        tu.verify_no_other_packets(self)


class SameSubnetTwoTenantsTest(VtepFabricTest):
    """a1 and b1 share an IP; each reaches only its own tenant's .2."""

    def runTest(self):
        for src, dst in ((A1, A2), (B1, B2)):
            frame = vm_frame(src, dst.mac, dst.ip)
            tu.send_packet(self, src.port, frame)
            tu.verify_packet(self, retag(frame, dst.vlan), dst.port)
            tu.verify_no_other_packets(self)


class NoUnicastLeakBetweenVnisTest(VtepFabricTest):
    """a1 sends to b2's MAC: unknown in VNI A, so it floods VNI A only
    (a2 and the VNI A VTEPs), never b2's VF."""

    def runTest(self):
        frame = vm_frame(A1, B2.mac, B2.ip)
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, retag(frame, A2.vlan), A2.port)
        inner = untag(frame)
        received = {}
        for _ in range(2):
            port, pkt = self.receive_any((UPLINK_1, UPLINK_2))
            received[port] = pkt
        for port, vtep in ((UPLINK_1, REMOTE_VTEP_1), (UPLINK_2, REMOTE_VTEP_2)):
            self.assertIn(port, received)
            self.assertTrue(
                expected_encap(inner, VNI_A, vtep, port).pkt_match(bytes(received[port]))
            )
        tu.verify_no_other_packets(self)


class HairpinDroppedTest(VtepFabricTest):
    """A frame to the sender's own MAC would go back out of its VF: dropped."""

    def runTest(self):
        self.assert_dropped(A1.port, vm_frame(A1, A1.mac, A1.ip), DropReason.SPLIT_HORIZON)


class SameServerOtherVfTest(VtepFabricTest):
    """Two VMs of one tenant on one server port: delivered back out of that
    port on the other VF's VLAN (the NIC switches it to the VF)."""

    def runTest(self):
        a5_vlan, a5_mac = 50, "00:00:0a:00:00:05"
        e = self.entries
        self.sw.insert(
            e.access_binding(ACCESS_PORT_1, a5_vlan, VNI_A, 5, a5_mac),
            e.mac_to_local_vm(VNI_A, a5_mac, ACCESS_PORT_1, a5_vlan, 5),
        )
        frame = vm_frame(A1, a5_mac, "192.168.1.5")
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, retag(frame, a5_vlan), ACCESS_PORT_1)
        tu.verify_no_other_packets(self)
