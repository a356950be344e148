"""The CPU path (issue 39) on the dual-stack routed fabric (test_ipv6.py):
with the controller's punt_policy (test_routing.PUNT_POLICY), each routed
drop it answers reaches it as a packet-in, exactly as received, with the
port, VNI and VLAN it came on; without the policy each is dropped and
counted as before. Packet-outs: ROUTE (to a local VM, to a remote one; a
frame the pipeline would drop is dropped, never punted back) and FLOOD.
CoPP: a class's meter bounds its packet-ins, the rest counted as dropped.
Ordinary routed and bridged traffic raises no packet-in with the policy on.
Packet too big: routed IPv6 over its destination VNI's MTU is punted, one
of exactly the MTU forwarded, through the class's own CoPP meter."""

import time
from dataclasses import replace

import test_ipv6
import test_routing
from base import (
    A1,
    B1,
    LOCAL_VMS,
    REMOTE_VTEP_1,
    REMOTE_VTEP_2,
    ROUTER_MAC,
    UPLINK_1,
    VNI_A,
    VNI_B,
    VTEP_FLOOD_UPLINK,
    VTEP_REPLICA_ID,
    DropReason,
    expected_encap,
    from_remote,
    retag,
    tu,
)
from p4vtep.dataplane.entries import COPP_DROP_COUNTER, PUNT_COUNTER
from p4vtep.dataplane.packet_io import PacketInMeta, PacketOutMode, PuntClass
from scapy.layers.inet import ICMP, IP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptSrcLLAddr,
    ICMPv6TimeExceeded,
    IPv6,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw
from test_ipv6 import (
    A1_LLA,
    GATEWAY6,
    GATEWAY_LLA,
    OUTSIDE6,
    DualStackFabricTest,
    delivered6,
    frozen,
    ip6,
    routed6,
    routed_by,
)
from test_routing import (
    A5,
    A6,
    ANYCAST_MAC,
    FIREWALL,
    GATEWAY_1,
    GATEWAY_2,
    L3VNI_A,
    REMOTE_RMAC_1,
    VNI_A2,
    VRF_A,
    VRF_B,
    delivered,
    local_hop,
    routed_frame,
)

ALL_ROUTERS_MAC = "33:33:00:00:00:02"  # ff02::2
ALL_NODES_MAC = "33:33:00:00:00:01"  # ff02::1
PUNT_TRUNCATE_BYTES = 1400  # defines.p4
PACKET_IN_HEADER_BYTES = 8  # packet_in_t: 64 bits


def echo_to_gateway(**ip_fields) -> Packet:
    """a1's echo request to its IPv4 gateway, with ``ip_fields`` in its IP header."""
    return frozen(
        Ether(src=A1.mac, dst=ANYCAST_MAC)
        / Dot1Q(vlan=A1.vlan)
        / IP(src=A1.ip, dst=GATEWAY_1, ttl=64, id=9, **ip_fields)
        / ICMP(type=8, id=0x77, seq=1)
        / Raw(b"ping" * 8)
    )


def router_solicitation(vm=A1) -> Packet:
    """An RS as a VM sends it: to all-routers, from its link-local address,
    with its link-layer address."""
    return frozen(
        Ether(src=vm.mac, dst=ALL_ROUTERS_MAC)
        / Dot1Q(vlan=vm.vlan)
        / IPv6(src=A1_LLA, dst="ff02::2", hlim=255)
        / ICMPv6ND_RS()
        / ICMPv6NDOptSrcLLAddr(lladdr=vm.mac)
    )


def from_fabric_ttl1() -> tuple[Packet, Packet]:
    """A routed frame VTEP 1 sends in tenant A's L3 VNI with TTL 1: the
    VXLAN packet, and the tenant frame inside it."""
    inner = frozen(
        Ether(src=REMOTE_RMAC_1, dst=ROUTER_MAC)
        / IP(src=A6.ip, dst=A5.ip, ttl=1)
        / UDP(sport=5000, dport=80)
        / Raw(b"\xcd" * 40)
    )
    return from_remote(inner, L3VNI_A, REMOTE_VTEP_1), inner


# (name, ingress port, frame, its drop reason, the packet-in expected, the
# payload expected: the frame as received, or the tenant frame from VXLAN)
def punted_cases() -> list[tuple[str, int, Packet, DropReason, PacketInMeta, Packet]]:
    vxlan, inner = from_fabric_ttl1()
    vxlan6 = from_remote(routed_by(REMOTE_RMAC_1, ip6(A6), ip6(A5), hlim=1), L3VNI_A, REMOTE_VTEP_1)
    cases = [
        (
            "IPv4 TTL 1",
            routed_frame(A1, A5.ip, ttl=1),
            DropReason.TENANT_TTL_EXPIRED,
            PuntClass.TTL_EXPIRED,
        ),
        (
            "IPv6 hop limit 1",
            routed6(A1, ip6(A5), hlim=1),
            DropReason.TENANT_HOP_LIMIT,
            PuntClass.TTL_EXPIRED,
        ),
        (
            "IPv4 no route",
            routed_frame(B1, "8.8.8.8"),
            DropReason.NO_TENANT_ROUTE,
            PuntClass.NO_ROUTE,
        ),
        (
            "IPv6 no route",
            routed6(B1, "2001:db8:77::1"),
            DropReason.NO_TENANT_ROUTE,
            PuntClass.NO_ROUTE,
        ),
        (
            "echo with IP options",
            echo_to_gateway(options=[IPOption_RR(), IPOption_NOP()]),
            DropReason.TO_GATEWAY,
            PuntClass.TO_GATEWAY,
        ),
        (
            "echo, first fragment (MF)",
            echo_to_gateway(flags="MF"),
            DropReason.TO_GATEWAY,
            PuntClass.TO_GATEWAY,
        ),
        (
            "echo, later fragment",
            echo_to_gateway(frag=8),
            DropReason.TO_GATEWAY,
            PuntClass.TO_GATEWAY,
        ),
        (
            "router solicitation",
            router_solicitation(),
            DropReason.ROUTER_SOLICITATION,
            PuntClass.ROUTER_SOLICITATION,
        ),
    ]
    out = []
    for name, frame, reason, punt in cases:
        src = B1 if frame[Ether].src == B1.mac else A1
        meta = PacketInMeta(src.port, punt, src.vni, src.vlan)
        out.append((name, src.port, frame, reason, meta, frame))
    out.append(
        (
            "IPv4 TTL 1 from the fabric",
            UPLINK_1,
            vxlan,
            DropReason.TENANT_TTL_EXPIRED,
            PacketInMeta(UPLINK_1, PuntClass.TTL_EXPIRED, L3VNI_A, 0),
            inner,
        )
    )
    out.append(
        (
            "IPv6 hop limit 1 from the fabric",
            UPLINK_1,
            vxlan6,
            DropReason.TENANT_HOP_LIMIT,
            PacketInMeta(UPLINK_1, PuntClass.TTL_EXPIRED, L3VNI_A, 0),
            vxlan6[VXLAN].payload,
        )
    )
    return out


class CpuPathTest(DualStackFabricTest):
    """The dual-stack fabric with the controller's punt policy."""

    punting = True

    def expect_punted(
        self,
        port: int,
        frame: Packet,
        reason: DropReason,
        meta: PacketInMeta,
        payload: Packet | bytes,
        name: str = "",
    ) -> None:
        """``frame`` sent on ``port`` reaches the controller with ``meta`` and
        exactly ``payload``; nothing else is sent; it is counted once under its
        drop reason and once in its class's punt counter."""
        drops, punts = self.drops(reason), self.counter(PUNT_COUNTER, meta.reason)[0]
        tu.send_packet(self, port, frame)
        got, data = self.next_packet_in()
        self.assertEqual(got, meta, name)
        self.assertEqual(data, bytes(payload), f"{name}: payload")
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()
        self.assertEqual(self.drops(reason), drops + 1, f"{name}: drop counter")
        self.assertEqual(self.counter(PUNT_COUNTER, meta.reason)[0], punts + 1, f"{name}: punts")


class PuntedTest(CpuPathTest):
    """Each punt class from a VM (TTL/hop limit 1, no route v4 and v6, echo to
    the gateway with options or fragmented, RS in a routed VNI) and from the
    fabric (TTL/hop limit 1 in the L3 VNI: the decapsulated frame)."""

    def runTest(self):
        for name, port, frame, reason, meta, payload in punted_cases():
            self.expect_punted(port, frame, reason, meta, payload, name)


class NotPuntedWithoutPolicyTest(DualStackFabricTest):
    """Without punt_policy entries every one of them is dropped and counted
    under its reason alone, as before; nothing reaches the controller."""

    def runTest(self):
        for _name, port, frame, reason, _meta, _payload in punted_cases():
            self.assert_dropped_only(port, frame, reason)
        self.assert_no_packet_in()


# --- packet too big ---------------------------------------------------------------
SMALL_MTU = 1280  # a5's VNI (VNI_A2) in PacketTooBig*Test: the IPv6 minimum
FIREWALL_MTU = 1400  # the firewall's (tenant A's ::/0) there


def sized6(frame: Packet, size: int) -> Packet:
    """``frame`` (IPv6 over UDP) with its IPv6 packet ``size`` bytes long."""
    pkt = frame.copy()
    pkt[Raw].load = b"\xab" * (size - 40 - 8)
    pkt[IPv6].plen = None
    pkt[UDP].len = None
    pkt[UDP].chksum = None
    return frozen(pkt)


class _SmallMtu(CpuPathTest):
    """a5's VNI with a 1280-byte MTU, the firewall's (the ::/0 route) 1400:
    a5's IPv6 host route and the IPv6 default route carry it (a5's IPv4
    host route is written from the same hop)."""

    def setUp(self) -> None:
        super().setUp()
        e = self.entries
        small = replace(local_hop(A5), mtu=SMALL_MTU)
        self.sw.modify(
            e.host_route(VRF_A, ip6(A5), small),
            e.host_route(VRF_A, A5.ip, small),  # (IPv4's action takes no MTU)
            e.prefix_route(VRF_A, "::", 0, replace(local_hop(FIREWALL), mtu=FIREWALL_MTU)),
        )


class PacketTooBigTest(_SmallMtu):
    """An IPv6 packet routed into a VNI whose MTU it exceeds by a byte is
    punted as packet_too_big, exactly as received (not rewritten: the hop
    limit as sent; cut to BMv2's 1400-byte punt when longer), with the
    port, VNI and VLAN it came on; one of exactly
    the MTU is routed as before. From a VM to a5 (host route) and to the
    outside (the firewall's ::/0), and from the fabric (VTEP 1 in the L3
    VNI, after decap): the tenant frame."""

    def runTest(self):
        too_big = sized6(routed6(A1, ip6(A5)), SMALL_MTU + 1)
        meta = PacketInMeta(A1.port, PuntClass.PACKET_TOO_BIG, A1.vni, A1.vlan)
        self.expect_punted(
            A1.port, too_big, DropReason.PACKET_TOO_BIG, meta, too_big, "to a5, 1281"
        )
        fits = sized6(routed6(A1, ip6(A5)), SMALL_MTU)
        tu.send_packet(self, A1.port, fits)
        self.expect(A5.port, delivered6(fits, A5))
        # (1419 bytes with Ethernet and VF tag: punted cut to 1400 with packet_in)
        outside = sized6(routed6(A1, OUTSIDE6), FIREWALL_MTU + 1)
        cut = bytes(outside)[: PUNT_TRUNCATE_BYTES - PACKET_IN_HEADER_BYTES]
        self.expect_punted(A1.port, outside, DropReason.PACKET_TOO_BIG, meta, cut, "::/0, 1401")
        fits = sized6(routed6(A1, OUTSIDE6), FIREWALL_MTU)
        tu.send_packet(self, A1.port, fits)
        self.expect(FIREWALL.port, delivered6(fits, FIREWALL))
        # From the fabric: what a remote VM routed to a5.
        inner = sized6(routed_by(REMOTE_RMAC_1, ip6(A6), ip6(A5)), SMALL_MTU + 1)
        vxlan = from_remote(inner, L3VNI_A, REMOTE_VTEP_1)
        meta = PacketInMeta(UPLINK_1, PuntClass.PACKET_TOO_BIG, L3VNI_A, 0)
        self.expect_punted(
            UPLINK_1, vxlan, DropReason.PACKET_TOO_BIG, meta, vxlan[VXLAN].payload, "fabric"
        )
        inner = sized6(routed_by(REMOTE_RMAC_1, ip6(A6), ip6(A5)), SMALL_MTU)
        tu.send_packet(self, UPLINK_1, from_remote(inner, L3VNI_A, REMOTE_VTEP_1))
        self.expect(A5.port, delivered6(inner, A5))
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()


class PacketTooBigNotPuntedWithoutPolicyTest(_SmallMtu):
    """Without the policy it is dropped and counted as packet_too_big, not
    forwarded; IPv4 to the same VM is not checked (routed whatever its size)."""

    punting = False

    def runTest(self):
        too_big = sized6(routed6(A1, ip6(A5)), SMALL_MTU + 1)
        self.assert_dropped_only(A1.port, too_big, DropReason.PACKET_TOO_BIG)
        self.assert_no_packet_in()
        ipv4 = routed_frame(A1, A5.ip, payload_len=SMALL_MTU)
        tu.send_packet(self, A1.port, ipv4)
        self.expect(A5.port, delivered(ipv4, A5))


class PacketTooBigCoppTest(_SmallMtu):
    """The packet_too_big class passes its own CoPP meter: at 1 packet/s,
    burst 1, of 6 frames sent at once at most 2 reach the controller (BMv2
    passes one more than the burst: CoppTest), the rest counted as CoPP
    drops; all 6 under the drop reason. The TTL class's meter is untouched."""

    SENT = 6

    def runTest(self):
        cls = PuntClass.PACKET_TOO_BIG
        self.sw.modify(self.entries.copp_meter(cls, 1, 1))
        too_big = sized6(routed6(A1, ip6(A5)), SMALL_MTU + 1)
        for _ in range(self.SENT):
            tu.send_packet(self, A1.port, too_big)
        received = 0
        while True:
            try:
                meta, payload = self.next_packet_in(timeout=1.0)
            except AssertionError:  # quiet for a second: all in
                break
            self.assertEqual((meta.punt_class, payload), (cls, bytes(too_big)))
            received += 1
        self.assertIn(received, (1, 2))
        self.assertEqual(self.counter(PUNT_COUNTER, cls)[0], received)
        self.assertEqual(self.counter(COPP_DROP_COUNTER, cls)[0], self.SENT - received)
        self.assertEqual(self.drops(DropReason.PACKET_TOO_BIG), self.SENT)
        self.assertEqual(self.counter(COPP_DROP_COUNTER, PuntClass.TTL_EXPIRED)[0], 0)
        tu.verify_no_other_packets(self)


class PuntTruncatedTest(CpuPathTest):
    """A long punted frame reaches the controller cut to PUNT_TRUNCATE_BYTES
    (packet_in header included): its start, exactly."""

    def runTest(self):
        frame = routed_frame(A1, A5.ip, ttl=1, payload_len=1440)
        tu.send_packet(self, A1.port, frame)
        meta, data = self.next_packet_in()
        self.assertEqual(meta.punt_class, PuntClass.TTL_EXPIRED)
        self.assertEqual(data, bytes(frame)[: PUNT_TRUNCATE_BYTES - PACKET_IN_HEADER_BYTES])


class RouterSolicitationL2OnlyFloodedTest(CpuPathTest):
    """In a VNI without a VRF an RS is flooded as before (the tenant's own
    routers answer it), not punted."""

    def runTest(self):
        e = self.entries
        self.sw.modify(e.access_binding(A1.port, A1.vlan, A1.vni, A1.index, A1.mac, vrf=0))
        tu.send_packet(self, A1.port, router_solicitation())
        self.expect_flooded(router_solicitation(), A1)
        self.assert_no_packet_in()


class CoppTest(CpuPathTest):
    """The TTL class's meter at 20 packets/s, burst 5; 60 frames sent at
    50/s: at most rate * time + burst (+ 1, below) reach the controller, the
    CoPP drop counter counts the rest and the punt counter what passed (read
    back), every one counted under its drop reason.

    BMv2's packet meter lets one frame more than the burst through at once:
    6 of a 5-frame burst sent in 28 and 40 ms (two runs), where rate * time +
    burst is 5.6 and 5.8; so the bound here is one more than that."""

    RATE, BURST, SENT, GAP = 20, 5, 60, 0.02

    def runTest(self):
        cls = PuntClass.TTL_EXPIRED
        self.sw.modify(self.entries.copp_meter(cls, self.RATE, self.BURST))
        frame = routed_frame(A1, A5.ip, ttl=1)
        start = time.monotonic()
        for _ in range(self.SENT):
            tu.send_packet(self, A1.port, frame)
            time.sleep(self.GAP)
        received = 0
        last = time.monotonic()
        while True:
            try:
                meta, payload = self.next_packet_in(timeout=1.0)
            except AssertionError:  # quiet for a second: all in
                break
            self.assertEqual((meta.punt_class, payload), (cls, bytes(frame)))
            received += 1
            last = time.monotonic()
        elapsed = last - start  # longer than the meter's window: the bound is safe
        self.assertGreaterEqual(received, self.BURST, "the burst passes")
        self.assertLessEqual(received, self.RATE * elapsed + self.BURST + 1, f"in {elapsed:.2f} s")
        self.assertEqual(self.counter(PUNT_COUNTER, cls)[0], received)
        self.assertEqual(self.counter(COPP_DROP_COUNTER, cls)[0], self.SENT - received)
        self.assertEqual(self.drops(DropReason.TENANT_TTL_EXPIRED), self.SENT)
        tu.verify_no_other_packets(self)


# --- packet-out -------------------------------------------------------------------
def icmp_error(dst_ip: str, ttl: int = 65) -> Packet:
    """An ICMP time-exceeded as the controller builds it for ROUTE: untagged,
    from the anycast gateway MAC, from a gateway address."""
    return frozen(
        Ether(src=ANYCAST_MAC, dst="00:00:00:00:00:00")
        / IP(src=GATEWAY_2, dst=dst_ip, ttl=ttl, id=0)
        / ICMP(type=11, code=0)
        / Raw(b"\x45" + b"q" * 35)
    )


def icmp6_error(dst_ip: str, hlim: int = 65) -> Packet:
    return frozen(
        Ether(src=ANYCAST_MAC, dst="00:00:00:00:00:00")
        / IPv6(src=GATEWAY6[VNI_A2], dst=dst_ip, hlim=hlim)
        / ICMPv6TimeExceeded()
        / Raw(b"\x60" + b"q" * 47)
    )


class PacketOutRouteLocalTest(CpuPathTest):
    """ROUTE in VRF A to a5 (local): from the anycast MAC to a5's, TTL / hop
    limit - 1, tagged with a5's VLAN, the IPv4 checksum right."""

    def runTest(self):
        frame = icmp_error(A5.ip)
        self.send_packet_out(frame, PacketOutMode.ROUTE, vni=VRF_A)
        self.expect(A5.port, delivered(frame, A5))
        frame6 = icmp6_error(ip6(A5))
        self.send_packet_out(frame6, PacketOutMode.ROUTE, vni=VRF_A)
        self.expect(A5.port, delivered6(frame6, A5))
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()


class PacketOutRouteRemoteTest(CpuPathTest):
    """ROUTE in VRF A to a6 (behind VTEP 1): VXLAN in the L3 VNI, inner from
    this ToR's router MAC to VTEP 1's, TTL / hop limit - 1, every outer field
    exact (lengths and checksum included)."""

    def runTest(self):
        self.send_packet_out(icmp_error(A6.ip), PacketOutMode.ROUTE, vni=VRF_A)
        self.expect_routed_encap(icmp_error(A6.ip), REMOTE_VTEP_1, REMOTE_RMAC_1, L3VNI_A)
        frame6 = icmp6_error(ip6(A6))
        self.send_packet_out(frame6, PacketOutMode.ROUTE, vni=VRF_A)
        self.expect_routed_encap6(frame6, REMOTE_VTEP_1, REMOTE_RMAC_1)


class PacketOutRouteDroppedNotPuntedTest(CpuPathTest):
    """A ROUTE packet-out the pipeline would drop is dropped and counted,
    never punted back (the policy punts these reasons for a VM's frames):
    TTL 1, no route (VRF B has no default route), an echo request to a
    gateway (the data plane's answer would go back to the CPU)."""

    def runTest(self):
        echo = frozen(
            Ether(src=ANYCAST_MAC, dst=ANYCAST_MAC)
            / IP(src=A1.ip, dst=GATEWAY_1)
            / ICMP(type=8)
            / Raw(b"x" * 20)
        )
        for frame, vrf, reason in (
            (icmp_error(A5.ip, ttl=1), VRF_A, DropReason.TENANT_TTL_EXPIRED),
            (icmp_error("8.8.8.8"), VRF_B, DropReason.NO_TENANT_ROUTE),
            (icmp6_error(ip6(A5), hlim=1), VRF_A, DropReason.TENANT_HOP_LIMIT),
            (echo, VRF_A, DropReason.TO_GATEWAY),
        ):
            before = self.drops(reason)
            self.send_packet_out(frame, PacketOutMode.ROUTE, vni=vrf)
            tu.verify_no_other_packets(self)
            self.assertEqual(self.drops(reason), before + 1, reason.name)
            self.assert_no_packet_in()


def router_advert() -> Packet:
    """An RA as the controller floods it: untagged, from the gateway."""
    return frozen(
        Ether(src=ANYCAST_MAC, dst=ALL_NODES_MAC)
        / IPv6(src=GATEWAY_LLA, dst="ff02::1", hlim=255)
        / ICMPv6ND_RA(routerlifetime=1800)
        / ICMPv6NDOptSrcLLAddr(lladdr=ANYCAST_MAC)
    )


class PacketOutFloodTest(CpuPathTest):
    """FLOOD in VNI A: one copy to each local VM of the VNI (a1 and a2, tagged
    with their VLANs) and one VXLAN copy per remote VTEP of the VNI, on the
    uplink its flood replica names; exactly. Into an L3 VNI (no flood
    group): dropped as no_flood_group."""

    def runTest(self):
        frame = router_advert()
        self.send_packet_out(frame, PacketOutMode.FLOOD, vni=VNI_A)
        for vm in LOCAL_VMS:
            if vm.vni == VNI_A:
                self.expect(vm.port, retag(frame, vm.vlan))
        for vni, vtep in VTEP_REPLICA_ID:
            if vni == VNI_A:
                uplink = VTEP_FLOOD_UPLINK[vtep]
                self.expect(uplink, expected_encap(frame, VNI_A, vtep, uplink))
        tu.verify_no_other_packets(self)
        before = self.drops(DropReason.NO_FLOOD_GROUP)
        self.send_packet_out(frame, PacketOutMode.FLOOD, vni=L3VNI_A)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.drops(DropReason.NO_FLOOD_GROUP), before + 1)
        self.assert_no_packet_in()


class PacketOutFloodOtherTenantTest(CpuPathTest):
    """FLOOD in VNI B reaches tenant B only (b1, b2, VTEP 1)."""

    def runTest(self):
        frame = router_advert()
        self.send_packet_out(frame, PacketOutMode.FLOOD, vni=VNI_B)
        for vm in LOCAL_VMS:
            if vm.vni == VNI_B:
                self.expect(vm.port, retag(frame, vm.vlan))
        self.expect(UPLINK_1, expected_encap(frame, VNI_B, REMOTE_VTEP_1, UPLINK_1))
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()
        self.assertNotIn(REMOTE_VTEP_2, {vtep for vni, vtep in VTEP_REPLICA_ID if vni == VNI_B})


# --- ordinary traffic, with the policy on: no packet-in --------------------------------
class _PuntingOn:
    """A forwarding test of test_routing / test_ipv6 run with the controller's
    punt policy installed: the same packets out, and nothing punted."""

    punting = True

    def runTest(self):
        super().runTest()
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()


class PuntingOnRoutedLocalToLocalTest(_PuntingOn, test_routing.RoutedLocalToLocalTest):
    pass


class PuntingOnRoutedLocalToRemoteTest(_PuntingOn, test_routing.RoutedLocalToRemoteTest):
    pass


class PuntingOnRoutedRemoteToLocalTest(_PuntingOn, test_routing.RoutedRemoteToLocalTest):
    pass


class PuntingOnGatewayPingTest(_PuntingOn, test_routing.GatewayPingTest):
    pass


class PuntingOnBridgedInRoutedVniTest(_PuntingOn, test_routing.BridgedInRoutedVniTest):
    pass


class PuntingOnRouted6LocalToLocalTest(_PuntingOn, test_ipv6.Routed6LocalToLocalTest):
    pass


class PuntingOnRouted6LocalToRemoteTest(_PuntingOn, test_ipv6.Routed6LocalToRemoteTest):
    pass


class PuntingOnRouted6RemoteToLocalTest(_PuntingOn, test_ipv6.Routed6RemoteToLocalTest):
    pass


class PuntingOnGatewayEchoTest(_PuntingOn, test_ipv6.GatewayEchoTest):
    pass


class PuntingOnNdSuppressionVmTest(_PuntingOn, test_ipv6.NdSuppressionVmTest):
    pass


class PuntingOnBridged6Test(_PuntingOn, test_ipv6.Bridged6Test):
    pass


class PuntingOnBridged6FabricTest(_PuntingOn, test_ipv6.Bridged6FabricTest):
    pass


class PuntingOnFloodTest(CpuPathTest):
    """A VM's BUM in a routed VNI that is not an RS (an echo request to
    all-nodes) is flooded as before."""

    def runTest(self):
        frame = frozen(
            Ether(src=A1.mac, dst=ALL_NODES_MAC)
            / Dot1Q(vlan=A1.vlan)
            / IPv6(src=ip6(A1), dst="ff02::1", hlim=64)
            / ICMPv6EchoRequest(id=1, seq=1)
        )
        tu.send_packet(self, A1.port, frame)
        self.expect_flooded(frame, A1)
        self.assert_no_packet_in()
