"""Per-VM QoS (docs/qos.md): two-rate three-colour meters (RFC 2698) in both
directions, each colour to its queue, RED dropped and counted, the colour
counters, and YELLOW marking.

Which queue a frame took is shown with the probe switches run_suite.py starts
beside the main one: the same pipeline with 1 and with 7 priority queues
(PTF devices 1 and 2), where BMv2 drops a frame whose queue does not exist
("Priority out of range"). A frame that passes the 1-queue switch took queue
0 (best effort); one that the 7-queue switch drops took queue 7 (guaranteed).
"""

from base import (
    A1,
    A2,
    A3,
    ACCESS_PORT_1,
    ACCESS_PORT_2,
    BROADCAST,
    LOCAL_FLOOD_GROUP,
    REMOTE_VTEP_1,
    REPLICA_ID,
    UPLINK_1,
    UPLINK_2,
    VNI_A,
    DropReason,
    MeterRates,
    VtepFabricTest,
    expected_encap,
    from_remote,
    retag,
    tu,
    untag,
    vm_frame,
)
from p4vtep.dataplane.entries import COLOR_COUNTERS, color_index
from p4vtep.dataplane.targets import Target, profile
from p4vtep.runtime.client import SwitchConnection
from ptf.mask import Mask
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

BURST = 30
# 2 KB/s with a 1 KB bucket: a few frames pass, then RED.
TIGHT = MeterRates(cir=2000, cburst=1000, pir=2000, pburst=1000)
# Every frame one colour: buckets far larger than the test sends, or smaller
# than one frame (such a frame never conforms).
ALL_GREEN = MeterRates(cir=10**9, cburst=10**8, pir=10**9, pburst=10**8)
ALL_YELLOW = MeterRates(cir=1, cburst=1, pir=10**9, pburst=10**8)
ALL_RED = MeterRates(cir=1, cburst=1, pir=1, pburst=1)
BMV2 = profile(Target.BMV2)
GREEN, YELLOW, RED = 0, BMV2.meter_yellow, BMV2.meter_red
COLORS = {GREEN: "GREEN", YELLOW: "YELLOW", RED: "RED"}
TC_GUARANTEED = 7
DSCP_CS1_TOS = 8 << 2


class QosTest(VtepFabricTest):
    def police(self, vm, tx=None, rx=None, sw=None):
        """Give local VM ``vm`` a policy as the controller does: the meters,
        and ``policed`` in the entries that name it (binding for tx, MAC entry
        and flood replica for rx)."""
        sw = sw or self.sw
        e = self.entries
        sw.modify(
            e.access_binding(vm.port, vm.vlan, vm.vni, vm.index, vm.mac, policed=tx is not None),
            e.mac_to_local_vm(vm.vni, vm.mac, vm.port, vm.vlan, vm.index, policed=rx is not None),
            e.replica_to_vm(REPLICA_ID[vm.name], vm.vlan, vm.index, policed=rx is not None),
        )
        for direction, rates in (("tx", tx), ("rx", rx)):
            if rates is not None:
                sw.modify(*e.policy_meters(direction, vm.index, rates))

    def color_cells(self, counter, vm):
        """colour -> (packets, bytes) of ``vm``'s cells of one colour counter."""
        return {c: self.counter(counter, color_index(vm.index, c)) for c in COLORS}

    def assert_colored(self, counter, vm, before, color, frames, length):
        """Since ``before``, exactly ``frames`` frames of ``length`` bytes were
        counted in ``color`` and nothing in the other colours."""
        after = self.color_cells(counter, vm)
        for c in COLORS:
            want = (frames, frames * length) if c == color else (0, 0)
            got = tuple(a - b for a, b in zip(after[c], before[c], strict=True))
            self.assertEqual(got, want, f"{counter}[{vm.name}, {COLORS[c]}]")

    def send_burst(self, port, make_frame, expect, expect_port) -> int:
        """Send BURST frames back to back; return how many were delivered."""
        frames = [make_frame(i) for i in range(BURST)]
        for frame in frames:
            tu.send_packet(self, port, frame)
        delivered = self.count_delivered(expect_port, [expect(f) for f in frames])
        tu.verify_no_other_packets(self)
        return delivered


def to_vm(vm, sport=1234):
    """A frame from the remote VM a3 to local ``vm``, as the fabric brings it."""
    return from_remote(untag(vm_frame(A3, vm.mac, vm.ip, sport=sport)), VNI_A, REMOTE_VTEP_1)


class TxPolicingTest(QosTest):
    """a1 is policed on transmit, a2 is not: a1 sees RED drops, a2 none."""

    def runTest(self):
        self.police(A1, tx=TIGHT)
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
        # Every frame was coloured once; RED is what was dropped.
        cells = self.color_cells(COLOR_COUNTERS["tx"][0], A1)
        self.assertEqual(sum(cells[c][0] for c in COLORS), BURST)
        self.assertEqual(cells[RED][0], red)

        delivered = self.send_burst(
            A2.port,
            lambda i: vm_frame(A2, A1.mac, A1.ip, sport=i, payload_len=200),
            lambda f: retag(f, A1.vlan),
            A1.port,
        )
        self.assertEqual(delivered, BURST, "unpoliced VM lost packets")


class RxPolicingTest(QosTest):
    """Traffic from the fabric to a2 is policed at a2's receive meter; the
    same burst to a1 (no receive policy) arrives whole."""

    def runTest(self):
        self.police(A2, rx=TIGHT)
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
        cells = self.color_cells(COLOR_COUNTERS["rx"][0], A2)
        self.assertEqual(sum(cells[c][0] for c in COLORS), BURST)
        self.assertEqual(cells[RED][0], red)
        self.assertEqual(self.send_burst(UPLINK_1, to(A1), delivered_as(A1), A1.port), BURST)


class TxColorsTest(QosTest):
    """Per colour, a1's frames toward a remote VM: GREEN and YELLOW tunnelled
    (YELLOW with outer DSCP CS1), RED dropped as METER_RED_TX; each frame
    counted once in its colour, with its bytes."""

    def runTest(self):
        counter = COLOR_COUNTERS["tx"][0]
        for rates, color in ((ALL_GREEN, GREEN), (ALL_YELLOW, YELLOW), (ALL_RED, RED)):
            self.police(A1, tx=rates)
            before = self.color_cells(counter, A1)
            red_before = self.drops(DropReason.METER_RED_TX)
            frames = [vm_frame(A1, A3.mac, A3.ip, sport=i) for i in range(5)]
            for frame in frames:
                tu.send_packet(self, A1.port, frame)
                if color != RED:
                    tos = DSCP_CS1_TOS if color == YELLOW else 0
                    self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1, tos=tos)
            tu.verify_no_other_packets(self)
            red = 5 if color == RED else 0
            self.assertEqual(self.drops(DropReason.METER_RED_TX) - red_before, red)
            self.assert_colored(counter, A1, before, color, 5, len(frames[0]))


class RxColorsTest(QosTest):
    """Per colour, unicast from the fabric to a2: GREEN and YELLOW delivered,
    RED dropped as METER_RED_RX (in ingress, where the colour picks the
    queue); counted in a2's unicast RX colour cells with the bytes of the
    VXLAN packet as it entered."""

    def runTest(self):
        counter = COLOR_COUNTERS["rx"][0]
        for rates, color in ((ALL_GREEN, GREEN), (ALL_YELLOW, YELLOW), (ALL_RED, RED)):
            self.police(A2, rx=rates)
            before = self.color_cells(counter, A2)
            red_before = self.drops(DropReason.METER_RED_RX)
            packets = [to_vm(A2, sport=i) for i in range(5)]
            for pkt in packets:
                tu.send_packet(self, UPLINK_1, pkt)
                if color != RED:
                    tu.verify_packet(self, retag(pkt[Ether].payload[Ether], A2.vlan), A2.port)
            tu.verify_no_other_packets(self)
            red = 5 if color == RED else 0
            self.assertEqual(self.drops(DropReason.METER_RED_RX) - red_before, red)
            self.assert_colored(counter, A2, before, color, 5, len(packets[0]))


class FloodRxColorsTest(QosTest):
    """A broadcast from the fabric reaches a1 and a2; a2's copy passes a2's
    flood meter in egress: RED dropped (METER_RED_RX, counted once per copy),
    YELLOW delivered (a copy cannot be requeued), counted in a2's flood cells.
    a1, unpoliced, gets every copy."""

    def runTest(self):
        counter = COLOR_COUNTERS["rx"][1]
        inner = untag(vm_frame(A3, BROADCAST, "192.168.1.255"))
        for rates, color in ((ALL_YELLOW, YELLOW), (ALL_RED, RED)):
            self.police(A2, rx=rates)
            before = self.color_cells(counter, A2)
            red_before = self.drops(DropReason.METER_RED_RX)
            pkt = from_remote(inner, VNI_A, REMOTE_VTEP_1)
            for _ in range(3):
                tu.send_packet(self, UPLINK_1, pkt)
                tu.verify_packet(self, retag(inner, A1.vlan), A1.port)
                if color != RED:
                    tu.verify_packet(self, retag(inner, A2.vlan), A2.port)
            tu.verify_no_other_packets(self)
            self.assertEqual(
                self.drops(DropReason.METER_RED_RX) - red_before, 3 if color == RED else 0
            )
            self.assert_colored(counter, A2, before, color, 3, len(pkt))


class UnpolicedVmPassesNoMeterTest(QosTest):
    """Meters configured but the entries say "not policed" (a VM without a
    policy): every frame passes, nothing is coloured."""

    def runTest(self):
        e = self.entries
        self.sw.modify(*e.policy_meters("tx", A1.index, ALL_RED))
        self.sw.modify(*e.policy_meters("rx", A2.index, ALL_RED))
        before_tx = self.color_cells(COLOR_COUNTERS["tx"][0], A1)
        before_rx = self.color_cells(COLOR_COUNTERS["rx"][0], A2)
        for i in range(5):
            frame = vm_frame(A1, A2.mac, A2.ip, sport=i)
            tu.send_packet(self, A1.port, frame)
            tu.verify_packet(self, retag(frame, A2.vlan), A2.port)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.color_cells(COLOR_COUNTERS["tx"][0], A1), before_tx)
        self.assertEqual(self.color_cells(COLOR_COUNTERS["rx"][0], A2), before_rx)


class YellowMarkingTest(QosTest):
    """Above the committed rate but under the peak: forwarded, and the outer
    header carries DSCP CS1 so the underlay drops it first."""

    def runTest(self):
        self.police(A1, tx=MeterRates(cir=1, cburst=1, pir=10_000_000, pburst=1_000_000))
        frame = vm_frame(A1, A3.mac, A3.ip)
        frame[IP].tos = 0xB8
        tu.send_packet(self, A1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1, tos=DSCP_CS1_TOS)
        tu.verify_no_other_packets(self)


# --- which queue each colour takes (probe switches) -------------------------------
def probes():
    """PTF device -> (P4Runtime device id, priority queues, gRPC address)."""
    out = {}
    for item in tu.test_param_get("probes").split(","):
        device, device_id, queues, address = item.split("/", 3)
        out[int(device)] = (int(device_id), int(queues), address)
    return out


class QueueTest(QosTest):
    """Each colour to its queue, per direction: GREEN of a policed VM to
    queue 7, YELLOW to queue 0, everything else (unpoliced VMs, flood
    copies, a sender's GREEN toward a local VM) to its VNI's class (VNI A: 2).
    A frame's queue is read from which probe switches drop it."""

    def runTest(self):
        for device, (device_id, queues, address) in sorted(probes().items()):
            probe = SwitchConnection(address, device_id, election_id=10)
            try:
                self.assertTrue(probe.connect(), f"probe {device}: could not become primary")
                probe.set_pipeline(
                    self.p4info.message, self.pipeline.device_config, self.pipeline.cookie
                )
                self.install_reference_fabric(probe)
                self.check_queues(probe, device, queues)
            finally:
                probe.clear_multicast_groups()
                probe.close()

    def expect(self, device, queues, queue, pkt, port):
        """``pkt`` arrives on ``port`` of the probe iff the probe has ``queue``."""
        if queue < queues:
            tu.verify_packet(self, pkt, (device, port))
        tu.verify_no_other_packets(self, device_number=device)

    def check_queues(self, probe, device, queues):
        def send(vm, dst, sport):
            frame = vm_frame(vm, dst.mac, dst.ip, sport=sport)
            tu.send_packet(self, (device, vm.port), frame)
            return frame

        # TX toward the fabric: a1's GREEN -> 7, YELLOW -> 0 (with CS1);
        # a2 (unpoliced) -> VNI A's class, 2.
        for rates, queue, tos in ((ALL_GREEN, TC_GUARANTEED, 0), (ALL_YELLOW, 0, DSCP_CS1_TOS)):
            self.police(A1, tx=rates, sw=probe)
            self.expect_encap(device, queues, queue, send(A1, A3, 1), tos)
        self.police(A1, sw=probe)  # (no policy)
        self.expect_encap(device, queues, 2, send(A2, A3, 2))
        # TX GREEN toward a local VM without a receive policy: the VNI's class,
        # not 7 (the receiving server's guarantees are its VMs' receive CIRs).
        self.police(A1, tx=ALL_GREEN, sw=probe)
        frame = send(A1, A2, 3)
        self.expect(device, queues, 2, retag(frame, A2.vlan), ACCESS_PORT_2)
        # RX from the fabric: a2's GREEN -> 7, YELLOW -> 0; a1 (unpoliced) -> 2.
        self.police(A1, sw=probe)
        for rates, queue in ((ALL_GREEN, TC_GUARANTEED), (ALL_YELLOW, 0)):
            self.police(A2, rx=rates, sw=probe)
            pkt = to_vm(A2, sport=4)
            tu.send_packet(self, (device, UPLINK_1), pkt)
            delivered = retag(pkt[Ether].payload[Ether], A2.vlan)
            self.expect(device, queues, queue, delivered, ACCESS_PORT_2)
        pkt = to_vm(A1, sport=5)
        tu.send_packet(self, (device, UPLINK_1), pkt)
        self.expect(device, queues, 2, retag(pkt[Ether].payload[Ether], A1.vlan), ACCESS_PORT_1)
        # Flood copies: the VNI's class whatever the colours (queues are
        # chosen in ingress for every copy at once). a2's receive policy
        # (YELLOW now) does not move its copy.
        inner = untag(vm_frame(A3, BROADCAST, "192.168.1.255"))
        tu.send_packet(self, (device, UPLINK_1), from_remote(inner, VNI_A, REMOTE_VTEP_1))
        if queues > 2:
            tu.verify_packet(self, retag(inner, A1.vlan), (device, ACCESS_PORT_1))
            tu.verify_packet(self, retag(inner, A2.vlan), (device, ACCESS_PORT_2))
        tu.verify_no_other_packets(self, device_number=device)

    def expect_encap(self, device, queues, queue, frame, tos=0):
        """One encapsulated copy on either uplink of the probe iff it has ``queue``."""
        if queue < queues:
            result = tu.dp_poll(self, device_number=device, timeout=2)
            self.assertIsInstance(result, self.dataplane.PollSuccess, "no encapsulated copy")
            self.assertIn(result.port, (UPLINK_1, UPLINK_2))
            expected = expected_encap(untag(frame), VNI_A, REMOTE_VTEP_1, result.port, tos)
            self.assertTrue(expected.pkt_match(result.packet), f"{Ether(result.packet)!r}")
        tu.verify_no_other_packets(self, device_number=device)


# --- a congested port --------------------------------------------------------------
COPIES = 80  # flood copies of one frame to a2's port: more than its queue holds (64)
ATTEMPTS = 5


class CongestedPortServesGreenFirstTest(QosTest):
    """a2's port is congested by flood copies (one broadcast from the fabric
    makes COPIES copies to it, queued in VNI A's class, 2). A unicast to a2
    sent right behind it: unpoliced, it waits in the same queue behind every
    copy queued before it (or is dropped with the overflow); GREEN of a2's
    receive policy, it takes queue 7 and leaves before the copies still
    queued. (BMv2's queues drain as fast as its egress thread runs, so the
    congestion here is that of BMv2's egress, not of a rate-limited link:
    see docs/qos.md.)"""

    def runTest(self):
        e = self.entries
        first = 1000
        replicas = [e.replica_to_vm(first + i, A2.vlan, A2.index) for i in range(COPIES)]
        self.sw.insert(*replicas)
        self.sw.modify(
            e.flood_group(
                LOCAL_FLOOD_GROUP[VNI_A], [(ACCESS_PORT_2, first + i) for i in range(COPIES)]
            )
        )
        for attempt in range(ATTEMPTS):
            unpoliced = self.copies_after(sport=10 + attempt)
            self.assertIn(unpoliced, (None, 0), "an unpoliced unicast overtook the copies")
        self.police(A2, rx=ALL_GREEN)
        # The port is congested only while copies are queued: on a busy
        # machine the send of the unicast can come after BMv2 drained them
        # all, so a few rounds, of which one must see the overtaking. (Every
        # GREEN unicast must arrive in every round.)
        overtook = []
        for attempt in range(ATTEMPTS):
            green = self.copies_after(sport=20 + attempt)
            self.assertIsNotNone(green, "the GREEN unicast was lost")
            overtook.append(green)
        self.assertGreater(max(overtook), 0, f"no GREEN unicast overtook the copies: {overtook}")

    def copies_after(self, sport):
        """Send the broadcast, then the unicast; how many copies arrived after
        the unicast (None: it did not arrive)."""
        inner = untag(vm_frame(A3, BROADCAST, "192.168.1.255"))
        unicast = to_vm(A2, sport=sport)
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1))
        tu.send_packet(self, UPLINK_1, unicast)
        expected = Mask(retag(unicast[Ether].payload[Ether], A2.vlan))
        order = self.collect(ACCESS_PORT_2)
        tu.verify_no_other_packets(self)
        self.assertGreater(len(order), 1, "no flood copies")
        position = next((i for i, raw in enumerate(order) if expected.pkt_match(raw)), None)
        return None if position is None else len(order) - 1 - position
