"""Packet-out from the controller and packet-in to it (CPU port)."""

import queue

from base import A1, A2, VNI_A, VtepFabricTest, tu, vm_frame
from p4vtep.runtime import codec


def metadata_ids(p4info, name):
    meta = p4info.controller_packet_metadata(name)
    return {m.name: m.id for m in meta.metadata}


class PacketOutTest(VtepFabricTest):
    def runTest(self):
        ids = metadata_ids(self.p4info, "packet_out")
        frame = vm_frame(A2, A1.mac, A1.ip)
        self.sw.send_packet_out(bytes(frame), {ids["egress_port"]: codec.encode(A1.port, 9)})
        tu.verify_packet(self, frame, A1.port)
        tu.verify_no_other_packets(self)


class PacketInTest(VtepFabricTest):
    """An l2 entry that traps a MAC sends the frame to the controller with
    the port it came in on."""

    def runTest(self):
        trap_mac = "00:00:0a:00:00:fe"
        self.sw.insert(self.entries.mac_to_cpu(VNI_A, trap_mac))
        frame = vm_frame(A1, trap_mac, "192.168.1.254")
        tu.send_packet(self, A1.port, frame)
        try:
            packet = self.sw.packet_in.get(timeout=3)
        except queue.Empty:
            self.fail("no packet-in")
        ids = metadata_ids(self.p4info, "packet_in")
        meta = {m.metadata_id: codec.decode(m.value) for m in packet.metadata}
        self.assertEqual(meta[ids["ingress_port"]], A1.port)
        self.assertEqual(meta[ids["reason"]], 1)
        self.assertEqual(packet.payload, bytes(frame))
        tu.verify_no_other_packets(self)
