"""Per-VM QoS (docs/qos.md): two-rate three-colour meters (RFC 2698) in both
directions, RED dropped and counted, the colour counters, YELLOW marking,
and colours as drop precedence: every frame of a VNI takes the VNI's queue
whatever its colour, and a congested queue keeps its last places for
committed (GREEN) frames.

Which queue a frame took is shown with the probe switches run_suite.py starts
beside the main one: the same pipeline with 1 and with 7 priority queues
(PTF devices 1 and 2), where BMv2 drops a frame whose queue does not exist
("Priority out of range"). A congested queue is made with BMv2's own queue
rates, through the switch's Thrift service (run_suite.py's thrift_port).
"""

import math
import time
from typing import NamedTuple

from base import (
    A1,
    A2,
    A3,
    ACCESS_PORT_1,
    ACCESS_PORT_2,
    BROADCAST,
    ECMP_GROUP_ID,
    REMOTE_VTEP_1,
    REPLICA_ID,
    TC_A,
    UPLINK_1,
    UPLINK_2,
    VNI_A,
    DropReason,
    MeterRates,
    ReferenceVm,
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
from p4vtep.switch.bmv2_thrift import SimpleSwitchThrift
from ptf.mask import Mask
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

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
    """Every frame of VNI A takes VNI A's class (2), whatever its colour and
    whether or not its VM is policed, in both directions, and flood copies
    too: a flow that runs above its guarantee is never reordered. A frame's
    queue is read from which probe switches drop it (queue 2 exists on the
    7-queue probe only)."""

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

    def expect(self, device, queues, pkt, port):
        """``pkt`` arrives on ``port`` of the probe iff the probe has VNI A's queue."""
        if queues > TC_A:
            tu.verify_packet(self, pkt, (device, port))
        tu.verify_no_other_packets(self, device_number=device)

    def check_queues(self, probe, device, queues):
        def send(vm, dst, sport):
            frame = vm_frame(vm, dst.mac, dst.ip, sport=sport)
            tu.send_packet(self, (device, vm.port), frame)
            return frame

        # TX toward the fabric: a1's GREEN, a1's YELLOW (with CS1), a2 unpoliced.
        for sport, (rates, tos) in enumerate(((ALL_GREEN, 0), (ALL_YELLOW, DSCP_CS1_TOS))):
            self.police(A1, tx=rates, sw=probe)
            self.expect_encap(device, queues, send(A1, A3, 1 + sport), tos)
        self.police(A1, sw=probe)  # (no policy)
        self.expect_encap(device, queues, send(A2, A3, 3))
        # Local: a1's GREEN toward a2.
        self.police(A1, tx=ALL_GREEN, sw=probe)
        frame = send(A1, A2, 4)
        self.expect(device, queues, retag(frame, A2.vlan), ACCESS_PORT_2)
        # RX from the fabric: a2's GREEN and YELLOW, a1 unpoliced.
        self.police(A1, sw=probe)
        for sport, rates in enumerate((ALL_GREEN, ALL_YELLOW)):
            self.police(A2, rx=rates, sw=probe)
            pkt = to_vm(A2, sport=5 + sport)
            tu.send_packet(self, (device, UPLINK_1), pkt)
            self.expect(device, queues, retag(pkt[Ether].payload[Ether], A2.vlan), ACCESS_PORT_2)
        pkt = to_vm(A1, sport=7)
        tu.send_packet(self, (device, UPLINK_1), pkt)
        self.expect(device, queues, retag(pkt[Ether].payload[Ether], A1.vlan), ACCESS_PORT_1)
        # Flood copies (a2's receive policy YELLOW now).
        inner = untag(vm_frame(A3, BROADCAST, "192.168.1.255"))
        tu.send_packet(self, (device, UPLINK_1), from_remote(inner, VNI_A, REMOTE_VTEP_1))
        if queues > TC_A:
            tu.verify_packet(self, retag(inner, A1.vlan), (device, ACCESS_PORT_1))
            tu.verify_packet(self, retag(inner, A2.vlan), (device, ACCESS_PORT_2))
        tu.verify_no_other_packets(self, device_number=device)

    def expect_encap(self, device, queues, frame, tos=0):
        """One encapsulated copy on either uplink of the probe iff it has VNI A's queue."""
        if queues > TC_A:
            result = tu.dp_poll(self, device_number=device, timeout=2)
            self.assertIsInstance(result, self.dataplane.PollSuccess, "no encapsulated copy")
            self.assertIn(result.port, (UPLINK_1, UPLINK_2))
            expected = expected_encap(untag(frame), VNI_A, REMOTE_VTEP_1, result.port, tos)
            self.assertTrue(expected.pkt_match(result.packet), f"{Ether(result.packet)!r}")
        tu.verify_no_other_packets(self, device_number=device)


# --- a congested queue: drop precedence ------------------------------------------------
# v1model/queue_admission.p4: excess is admitted while fewer than 48 frames
# wait; BMv2's queues hold 64.
EXCESS_QUEUE_DEPTH = 48
QUEUE_CAPACITY = 64
SLOW_QUEUE_PPS = 50  # the congested queue's rate: the burst below takes seconds to leave
EXCESS_FRAMES = 100
COMMITTED_EVERY = 10  # a committed frame after every 10 excess ones: 10 in all
# A VM of VNI A beside a2 on access port 2 (both then share VNI A's queue there).
A5 = ReferenceVm("a5", VNI_A, "00:00:0a:00:00:05", "192.168.1.5", ACCESS_PORT_2, 21, 5)


class Sent(NamedTuple):
    port: int  # sent from
    frame: Packet
    expected: Mask  # how it leaves the switch
    committed: bool


class CongestedQueueTest(QosTest):
    """Drop precedence at a congested queue, exact to the frame: what arrives
    of each flow arrives in the order sent (one queue for every colour),
    every committed frame arrives, and every excess frame that does not was
    dropped and counted as EXCESS_CONGESTED. The queue is made slow with
    BMv2's queue rate (the link rate's mechanism, docs/qos.md), so that it
    fills."""

    def setUp(self):
        super().setUp()
        self.thrift = SimpleSwitchThrift("127.0.0.1", int(tu.test_param_get("thrift_port")))
        self.slowed = []

    def tearDown(self):
        for port in self.slowed:  # (the switch outlives the pipeline: unlimited again)
            self.thrift.set_priority_queue_rate(port, TC_A, 0)
        self.thrift.close()
        super().tearDown()

    def slow(self, port):
        self.thrift.set_priority_queue_rate(port, TC_A, SLOW_QUEUE_PPS)
        self.slowed.append(port)

    @staticmethod
    def mix(make_committed, make_excess) -> list[Sent]:
        """EXCESS_FRAMES excess frames with a committed one after every
        COMMITTED_EVERY; each make_* gives (port, frame, expected) for an
        index."""
        frames = []
        for i in range(EXCESS_FRAMES):
            frames.append(Sent(*make_excess(i), committed=False))
            if i % COMMITTED_EVERY == COMMITTED_EVERY - 1:
                frames.append(Sent(*make_committed(i), committed=True))
        return frames

    def congest(self, frames: list[Sent], out_port: int) -> None:
        """Send ``frames`` in order; check what ``out_port`` delivered
        against them."""
        dropped_before = self.drops(DropReason.EXCESS_CONGESTED)
        started = time.monotonic()
        for sent in frames:
            tu.send_packet(self, sent.port, sent.frame)
        # Frames the queue sent on while the burst was still being sent
        # (a loaded machine sends it slowly) made room for as many more.
        left_meanwhile = math.ceil((time.monotonic() - started) * SLOW_QUEUE_PPS)
        got = self.collect(out_port, timeout=2.0)
        tu.verify_no_other_packets(self)
        # Per flow (the committed frames, the excess ones), each frame that
        # arrived is the next of that flow's that matches it: a frame that
        # overtook another of its flow would leave none to match.
        flows = {c: [f for f in frames if f.committed == c] for c in (True, False)}
        position = dict.fromkeys(flows, 0)
        delivered = []
        for raw in got:
            flow = next(
                (c for c in flows if any(f.expected.pkt_match(raw) for f in flows[c])), None
            )
            self.assertIsNotNone(flow, f"unexpected frame: {Ether(raw)!r}")
            i = position[flow]
            while i < len(flows[flow]) and not flows[flow][i].expected.pkt_match(raw):
                i += 1
            self.assertLess(i, len(flows[flow]), f"reordered: {Ether(raw)!r}")
            delivered.append(flows[flow][i])
            position[flow] = i + 1
        committed = sum(1 for f in frames if f.committed)
        self.assertEqual(sum(1 for f in delivered if f.committed), committed, "committed lost")
        excess_delivered = len(delivered) - committed
        dropped = self.drops(DropReason.EXCESS_CONGESTED) - dropped_before
        self.assertGreater(dropped, 0, "the queue never congested")
        self.assertEqual(excess_delivered + dropped, EXCESS_FRAMES, "excess lost uncounted")
        # Excess went in until EXCESS_QUEUE_DEPTH frames waited (committed
        # ones among them), and no further than the queue holds and what
        # left it while the burst was sent.
        self.assertGreaterEqual(excess_delivered, EXCESS_QUEUE_DEPTH - committed)
        self.assertLessEqual(excess_delivered, QUEUE_CAPACITY + left_meanwhile)


class CongestedServerQueueTest(CongestedQueueTest):
    """Toward a server: a2 (its receive policy: GREEN, committed) and a5
    (unpoliced, then YELLOW of its own policy: excess), both on access port
    2, from the fabric."""

    def runTest(self):
        e = self.entries
        self.sw.insert(
            e.access_binding(A5.port, A5.vlan, A5.vni, A5.index, A5.mac),
            e.mac_to_local_vm(A5.vni, A5.mac, A5.port, A5.vlan, A5.index),
        )
        self.police(A2, rx=ALL_GREEN)
        self.slow(ACCESS_PORT_2)

        def to(vm):
            def make(i):
                pkt = to_vm(vm, sport=i)
                return UPLINK_1, pkt, Mask(retag(pkt[Ether].payload[Ether], vm.vlan))

            return make

        self.congest(self.mix(to(A2), to(A5)), ACCESS_PORT_2)
        # a5 policed, every frame YELLOW: excess as well.
        self.sw.modify(
            e.mac_to_local_vm(A5.vni, A5.mac, A5.port, A5.vlan, A5.index, policed=True),
            *e.policy_meters("rx", A5.index, ALL_YELLOW),
        )
        self.congest(self.mix(to(A2), to(A5)), ACCESS_PORT_2)


class CongestedUplinkQueueTest(CongestedQueueTest):
    """Toward the fabric, on one uplink: a1 (its transmit policy: GREEN,
    committed) and a2 (unpoliced: excess) sending to the remote a3, each
    frame with its own flow (so ECMP could spread them: one uplink left in
    the group)."""

    def runTest(self):
        self.sw.modify(self.entries.ecmp_group(ECMP_GROUP_ID, [UPLINK_1]))
        self.police(A1, tx=ALL_GREEN)
        self.slow(UPLINK_1)

        def from_(vm):
            def make(i):
                frame = vm_frame(vm, A3.mac, A3.ip, sport=i)
                return (
                    vm.port,
                    frame,
                    expected_encap(untag(frame), VNI_A, REMOTE_VTEP_1, UPLINK_1),
                )

            return make

        self.congest(self.mix(from_(A1), from_(A2)), UPLINK_1)
