"""Packet-out from the controller and packet-in to it (CPU port): a packet-out
to a port, and an l2 trap. The CPU path's punting, CoPP and the ROUTE and
FLOOD packet-outs: test_cpu_path.py."""

from base import A1, A2, VNI_A, VtepFabricTest, tu, vm_frame
from p4vtep.dataplane.entries import PUNT_COUNTER
from p4vtep.dataplane.packet_io import PacketInMeta, PacketOutMode, PuntClass


class PacketOutTest(VtepFabricTest):
    def runTest(self):
        frame = vm_frame(A2, A1.mac, A1.ip)
        self.send_packet_out(frame, PacketOutMode.PORT, egress_port=A1.port)
        tu.verify_packet(self, frame, A1.port)
        tu.verify_no_other_packets(self)


class PacketInTest(VtepFabricTest):
    """An l2 entry that traps a MAC sends the frame to the controller as it
    came (VF tag included), with the port, VNI and VLAN it came on, class
    l2_trap, counted in its punt counter (its CoPP meter is unconfigured:
    GREEN)."""

    def runTest(self):
        trap_mac = "00:00:0a:00:00:fe"
        self.sw.insert(self.entries.mac_to_cpu(VNI_A, trap_mac))
        frame = vm_frame(A1, trap_mac, "192.168.1.254")
        before = self.counter(PUNT_COUNTER, PuntClass.L2_TRAP)[0]
        tu.send_packet(self, A1.port, frame)
        meta, payload = self.next_packet_in()
        self.assertEqual(meta, PacketInMeta(A1.port, PuntClass.L2_TRAP, VNI_A, A1.vlan))
        self.assertEqual(payload, bytes(frame))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.counter(PUNT_COUNTER, PuntClass.L2_TRAP)[0], before + 1)
