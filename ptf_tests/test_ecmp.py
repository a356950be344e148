"""Underlay ECMP: flows spread over every uplink; a flow keeps its uplink."""

from base import A1, A3, REMOTE_VTEP_1, UPLINKS, VNI_A, VtepFabricTest, tu, untag, vm_frame
from scapy.layers.inet import UDP

FLOWS = 256


class EcmpSpreadTest(VtepFabricTest):
    def runTest(self):
        first_port = {}
        for flow in range(FLOWS):
            frame = vm_frame(A1, A3.mac, A3.ip, sport=2000 + flow, dport=5201)
            tu.send_packet(self, A1.port, frame)
            port, pkt = self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1)
            first_port[flow] = (port, pkt[UDP].sport)
        counts = {port: sum(1 for p, _ in first_port.values() if p == port) for port in UPLINKS}
        for port in UPLINKS:
            # A fair split is 128 each; 25 % is far outside chance for a sane hash.
            self.assertGreater(counts[port], FLOWS // 4, f"uplink use {counts}")
        # Every flow again: same uplink, same outer source port.
        for flow in range(0, FLOWS, 4):
            frame = vm_frame(A1, A3.mac, A3.ip, sport=2000 + flow, dport=5201)
            tu.send_packet(self, A1.port, frame)
            port, pkt = self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1)
            self.assertEqual((port, pkt[UDP].sport), first_port[flow], f"flow {flow} moved")
        tu.verify_no_other_packets(self)
