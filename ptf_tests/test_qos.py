"""Per-VM policing in both directions (RFC 2698 trTCM) and YELLOW marking."""

from base import (
    A1,
    A2,
    A3,
    REMOTE_VTEP_1,
    UPLINK_1,
    VNI_A,
    DropReason,
    MeterRates,
    VtepFabricTest,
    from_remote,
    retag,
    tu,
    untag,
    vm_frame,
)
from scapy.layers.inet import IP

BURST = 30
# 2 KB/s with a 1 KB bucket: a few frames pass, then RED.
TIGHT = MeterRates(cir=2000, cburst=1000, pir=2000, pburst=1000)


class PolicingTest(VtepFabricTest):
    def send_burst(self, port, make_frame, expect, expect_port) -> int:
        """Send BURST frames back to back; return how many were delivered."""
        frames = [make_frame(i) for i in range(BURST)]
        for frame in frames:
            tu.send_packet(self, port, frame)
        delivered = self.count_delivered(expect_port, [expect(f) for f in frames])
        tu.verify_no_other_packets(self)
        return delivered


class TxPolicingTest(PolicingTest):
    """a1 is policed on transmit, a2 is not: a1 sees RED drops, a2 none."""

    def runTest(self):
        self.sw.modify(self.entries.vm_meter("tx", A1.index, TIGHT))
        red_before = self.drops(DropReason.METER_RED_TX)
        delivered = self.send_burst(
            A1.port,
            lambda i: vm_frame(A1, A2.mac, A2.ip, sport=i, payload_len=200),
            lambda f: retag(f, A2.vlan),
            A2.port,
        )
        red = self.drops(DropReason.METER_RED_TX) - red_before
        self.assertGreater(delivered, 0, "nothing passed the meter")
        self.assertLess(delivered, BURST, "the meter dropped nothing")
        self.assertEqual(delivered + red, BURST)

        delivered = self.send_burst(
            A2.port,
            lambda i: vm_frame(A2, A1.mac, A1.ip, sport=i, payload_len=200),
            lambda f: retag(f, A1.vlan),
            A1.port,
        )
        self.assertEqual(delivered, BURST, "unpoliced VM lost packets")


class RxPolicingTest(PolicingTest):
    """Traffic from the fabric to a2 is policed at a2's receive meter; the
    same burst to a1 (no receive policy) arrives whole."""

    def runTest(self):
        self.sw.modify(self.entries.vm_meter("rx", A2.index, TIGHT))
        red_before = self.drops(DropReason.METER_RED_RX)

        def to(vm):
            return lambda i: from_remote(
                untag(vm_frame(A3, vm.mac, vm.ip, sport=i, payload_len=200)), VNI_A, REMOTE_VTEP_1
            )

        def delivered_as(vm):
            return lambda pkt: retag(pkt.payload.payload.payload.payload, vm.vlan)

        delivered = self.send_burst(UPLINK_1, to(A2), delivered_as(A2), A2.port)
        red = self.drops(DropReason.METER_RED_RX) - red_before
        self.assertGreater(delivered, 0)
        self.assertLess(delivered, BURST)
        self.assertEqual(delivered + red, BURST)
        self.assertEqual(self.send_burst(UPLINK_1, to(A1), delivered_as(A1), A1.port), BURST)


class YellowMarkingTest(VtepFabricTest):
    """Above the committed rate but under the peak: forwarded, and the outer
    header carries DSCP CS1 so the underlay drops it first."""

    def runTest(self):
        self.sw.modify(
            self.entries.vm_meter(
                "tx", A1.index, MeterRates(cir=1, cburst=1, pir=10_000_000, pburst=1_000_000)
            )
        )
        frame = vm_frame(A1, A3.mac, A3.ip)
        frame[IP].tos = 0xB8
        tu.send_packet(self, A1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1, tos=8 << 2)
        tu.verify_no_other_packets(self)
