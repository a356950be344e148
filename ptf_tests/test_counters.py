"""Counters read back exactly over P4Runtime."""

from base import A1, A2, VNI_A, VNI_INDEX, DropReason, VtepFabricTest, retag, tu, vm_frame
from p4vtep.dataplane.entries import (
    PORT_RX_COUNTER,
    PORT_TX_COUNTER,
    VM_RX_COUNTER,
    VM_TX_COUNTER,
    VNI_RX_COUNTER,
    VNI_TX_COUNTER,
)

PACKETS = 3


class CountersTest(VtepFabricTest):
    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip, payload_len=100)
        size = len(frame)
        for _ in range(PACKETS):
            tu.send_packet(self, A1.port, frame)
            tu.verify_packet(self, retag(frame, A2.vlan), A2.port)
        # One dropped frame, to see the drop counter move by exactly one.
        tu.send_packet(self, A1.port, vm_frame(A1, A2.mac, A2.ip, vlan=999))
        tu.verify_no_other_packets(self)
        expected = (PACKETS, PACKETS * size)
        vni = VNI_INDEX[VNI_A]
        self.assertEqual(self.counter(VM_TX_COUNTER, A1.index), expected)
        self.assertEqual(self.counter(VM_RX_COUNTER, A2.index), expected)
        self.assertEqual(self.counter(VNI_TX_COUNTER, vni), expected)
        self.assertEqual(self.counter(VNI_RX_COUNTER, vni), expected)
        self.assertEqual(self.counter(PORT_RX_COUNTER, A1.port)[0], PACKETS + 1)
        self.assertEqual(self.counter(PORT_TX_COUNTER, A2.port), expected)
        self.assertEqual(self.counter(VM_TX_COUNTER, A2.index), (0, 0))
        self.assertEqual(self.drops(DropReason.UNKNOWN_VLAN), 1)
        self.assertEqual(self.drops(DropReason.SPOOFED_SOURCE), 0)
