"""Routing between a tenant's subnets on the ToR: the anycast gateway (ARP and
echo), symmetric IRB (local/local, local/remote over the VRF's L3 VNI,
remote/local), host routes before prefixes, a static route via a VM, two VRFs
with the same subnets kept apart, and each routed drop reason.

The routed fabric is the reference fabric with tenant A's VNI routed in VRF 1
beside a second subnet, and tenant B's the same way in VRF 2 (same prefixes)."""

from base import (
    A1,
    A2,
    A3,
    B1,
    LOCAL_VMS,
    REMOTE_VTEP_1,
    REMOTE_VTEP_2,
    ROUTER_MAC,
    UPLINK_1,
    UPLINKS,
    VNI_A,
    VNI_B,
    VNI_INDEX,
    DropReason,
    ReferenceVm,
    VtepFabricTest,
    expected_encap,
    from_remote,
    retag,
    tu,
    vm_frame,
)
from p4vtep.dataplane.entries import VM_RX_COUNTER, VM_TX_COUNTER, LocalVmHop, RemoteVtepHop
from p4vtep.dataplane.packet_io import PuntClass
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Packet, Raw

ANYCAST_MAC = "00:00:5e:00:01:01"
REMOTE_RMAC_1 = "00:aa:00:00:00:02"
REMOTE_RMAC_2 = "00:aa:00:00:00:03"
L3VNI_A, L3VNI_B = 50000, 60000
VRF_A, VRF_B = L3VNI_A, L3VNI_B  # a VRF is named by its L3 VNI (compiler/routing.py)
VNI_A2, VNI_B2 = 5001, 6001  # the tenants' second subnets: 192.168.2.0/24
GATEWAY_1, GATEWAY_2 = "192.168.1.254", "192.168.2.254"
L3_VNI_INDEX = {VNI_A2: 3, VNI_B2: 4, L3VNI_A: 5, L3VNI_B: 6}
VRF = {VNI_A: VRF_A, VNI_A2: VRF_A, VNI_B: VRF_B, VNI_B2: VRF_B}

A5 = ReferenceVm("a5", VNI_A2, "00:00:0a:00:00:05", "192.168.2.5", 2, 50, 5)
A6 = ReferenceVm("a6", VNI_A2, "00:00:0a:00:00:06", "192.168.2.6", vtep=REMOTE_VTEP_1)
B5 = ReferenceVm("b5", VNI_B2, "00:00:0b:00:00:05", "192.168.2.5", 1, 60, 6)
FIREWALL = A2  # tenant A's default route goes through this VM


def local_hop(vm: ReferenceVm) -> LocalVmHop:
    index = VNI_INDEX.get(vm.vni) or L3_VNI_INDEX[vm.vni]
    return LocalVmHop(vm.port, vm.vlan, vm.index, index, vm.mac)


def routed_frame(src: ReferenceVm, dst_ip: str, ttl: int = 64, **kwargs) -> Packet:
    """What `src` sends to a host of another subnet: to the anycast gateway MAC."""
    frame = vm_frame(src, ANYCAST_MAC, dst_ip, **kwargs)
    frame[IP].ttl = ttl
    return frame


def delivered(frame: Packet, dst: ReferenceVm) -> Packet:
    """`frame` as routed to local VM `dst`: from the gateway MAC, TTL - 1, dst's VLAN."""
    inner = frame[IP].copy()
    inner.ttl -= 1
    inner.chksum = None
    return Ether(bytes(Ether(src=ANYCAST_MAC, dst=dst.mac) / Dot1Q(vlan=dst.vlan) / inner))


# What the controller punts (issue 39): each routed drop reason it answers.
PUNT_POLICY = (
    (DropReason.TENANT_TTL_EXPIRED, PuntClass.TTL_EXPIRED),
    (DropReason.TENANT_HOP_LIMIT, PuntClass.TTL_EXPIRED),
    (DropReason.NO_TENANT_ROUTE, PuntClass.NO_ROUTE),
    (DropReason.TO_GATEWAY, PuntClass.TO_GATEWAY),
    (DropReason.ROUTER_SOLICITATION, PuntClass.ROUTER_SOLICITATION),
    (DropReason.PACKET_TOO_BIG, PuntClass.PACKET_TOO_BIG),
)


class RoutedFabricTest(VtepFabricTest):
    # Install PUNT_POLICY (test_cpu_path.py); without it every routed drop is
    # dropped, as these tests expect.
    punting = False

    def setUp(self) -> None:
        super().setUp()
        e = self.entries
        if self.punting:
            self.sw.insert(*(e.punt_policy(reason, punt) for reason, punt in PUNT_POLICY))
        # the reference fabric's VMs of A and B, bound to their VRFs now
        self.sw.modify(
            *(
                e.access_binding(vm.port, vm.vlan, vm.vni, vm.index, vm.mac, VRF[vm.vni])
                for vm in LOCAL_VMS
            )
        )
        updates = [
            e.vni_config(VNI_A2, L3_VNI_INDEX[VNI_A2], 0, 0),
            e.vni_config(VNI_B2, L3_VNI_INDEX[VNI_B2], 0, 0),
            e.l3vni_config(L3VNI_A, L3_VNI_INDEX[L3VNI_A], 0),
            e.l3vni_config(L3VNI_B, L3_VNI_INDEX[L3VNI_B], 0),
            e.mac_to_router(L3VNI_A, ROUTER_MAC, ANYCAST_MAC),
            e.mac_to_router(L3VNI_B, ROUTER_MAC, ANYCAST_MAC),
        ]
        for vrf, vnis in ((VRF_A, (VNI_A, VNI_A2)), (VRF_B, (VNI_B, VNI_B2))):
            for vni, gateway in zip(vnis, (GATEWAY_1, GATEWAY_2), strict=True):
                updates += [
                    e.mac_to_router(vni, ANYCAST_MAC, ANYCAST_MAC),
                    e.arp_suppression(vni, gateway, ANYCAST_MAC),
                    e.gateway_address(vrf, gateway),
                ]
        for vm in (A5, B5):
            updates += [
                e.access_binding(vm.port, vm.vlan, vm.vni, vm.index, vm.mac, VRF[vm.vni]),
                e.mac_to_local_vm(vm.vni, vm.mac, vm.port, vm.vlan, vm.index),
            ]
        for vm in (A1, A2, A5):
            updates.append(e.host_route(VRF_A, vm.ip, local_hop(vm)))
        for vm in (B1, B5):
            updates.append(e.host_route(VRF_B, vm.ip, local_hop(vm)))
        updates += [
            e.host_route(VRF_A, A3.ip, RemoteVtepHop(REMOTE_VTEP_1, REMOTE_RMAC_1, L3VNI_A)),
            e.host_route(VRF_A, A6.ip, RemoteVtepHop(REMOTE_VTEP_1, REMOTE_RMAC_1, L3VNI_A)),
            # the rest of 192.168.2.0/24 is behind VTEP 2; host routes beat it
            e.prefix_route(
                VRF_A, "192.168.2.0", 24, RemoteVtepHop(REMOTE_VTEP_2, REMOTE_RMAC_2, L3VNI_A)
            ),
            # a static default route through the firewall VM
            e.prefix_route(VRF_A, "0.0.0.0", 0, local_hop(FIREWALL)),
        ]
        self.sw.insert(*updates)

    def expect_routed_encap(self, frame: Packet, vtep: str, rmac: str, vni: int) -> None:
        inner = frame[IP].copy()
        inner.ttl -= 1
        inner.chksum = None
        port, raw = self.receive_any(UPLINKS)
        expected = expected_encap(Ether(src=ROUTER_MAC, dst=rmac) / inner, vni, vtep, port)
        if not expected.pkt_match(raw):
            self.fail(f"got {Ether(raw)!r}\nexpected {expected.exp_pkt!r}")
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()


class GatewayArpTest(RoutedFabricTest):
    """A VM asking for its gateway gets the anycast MAC, from the ToR."""

    def runTest(self):
        request = (
            Ether(src=A5.mac, dst="ff:ff:ff:ff:ff:ff")
            / Dot1Q(vlan=A5.vlan)
            / ARP(op=1, hwsrc=A5.mac, psrc=A5.ip, pdst=GATEWAY_2)
        )
        reply = (
            Ether(src=ANYCAST_MAC, dst=A5.mac)
            / Dot1Q(vlan=A5.vlan)
            / ARP(op=2, hwsrc=ANYCAST_MAC, psrc=GATEWAY_2, hwdst=A5.mac, pdst=A5.ip)
        )
        tu.send_packet(self, A5.port, request)
        tu.verify_packet(self, reply, A5.port)
        tu.verify_no_other_packets(self)


class GatewayPingTest(RoutedFabricTest):
    """Echo request to the gateway IP: answered in the data plane, checksums right."""

    def runTest(self):
        request = (
            Ether(src=A1.mac, dst=ANYCAST_MAC)
            / Dot1Q(vlan=A1.vlan)
            / IP(src=A1.ip, dst=GATEWAY_1, ttl=64, id=7)
            / ICMP(type=8, id=0x1234, seq=1)
            / Raw(b"ping" * 8)
        )
        reply = Ether(
            bytes(
                Ether(src=ANYCAST_MAC, dst=A1.mac)
                / Dot1Q(vlan=A1.vlan)
                / IP(src=GATEWAY_1, dst=A1.ip, ttl=64, id=7)
                / ICMP(type=0, id=0x1234, seq=1)
                / Raw(b"ping" * 8)
            )
        )
        tu.send_packet(self, A1.port, request)
        tu.verify_packet(self, reply, A1.port)
        tu.verify_no_other_packets(self)


class RoutedLocalToLocalTest(RoutedFabricTest):
    """a1 (192.168.1.0/24) -> a5 (192.168.2.0/24), both on this ToR: from the
    gateway MAC to a5's MAC and VLAN, TTL - 1, the IPv4 checksum right; a1's TX
    and a5's RX counters count it."""

    def runTest(self):
        frame = routed_frame(A1, A5.ip)
        tx_before = self.counter(VM_TX_COUNTER, A1.index)[0]
        rx_before = self.counter(VM_RX_COUNTER, A5.index)[0]
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, delivered(frame, A5), A5.port)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.counter(VM_TX_COUNTER, A1.index)[0], tx_before + 1)
        self.assertEqual(self.counter(VM_RX_COUNTER, A5.index)[0], rx_before + 1)


class RoutedLocalToRemoteTest(RoutedFabricTest):
    """a1 -> a6 behind VTEP 1: VXLAN in the L3 VNI, inner from our router MAC to
    VTEP 1's, TTL - 1, no VF tag."""

    def runTest(self):
        frame = routed_frame(A1, A6.ip)
        tu.send_packet(self, A1.port, frame)
        self.expect_routed_encap(frame, REMOTE_VTEP_1, REMOTE_RMAC_1, L3VNI_A)


class RoutedRemoteToLocalTest(RoutedFabricTest):
    """From VTEP 1 in the L3 VNI to our router MAC: decapsulated, routed to a5."""

    def runTest(self):
        inner = (
            Ether(src=REMOTE_RMAC_1, dst=ROUTER_MAC)
            / IP(src=A6.ip, dst=A5.ip, ttl=63)
            / UDP(sport=5000, dport=80)
            / Raw(b"\xcd" * 40)
        )
        tu.send_packet(self, UPLINK_1, from_remote(inner, L3VNI_A, REMOTE_VTEP_1))
        tu.verify_packet(self, delivered(inner, A5), A5.port)
        tu.verify_no_other_packets(self)


class FromTenantVniNotRoutedTest(RoutedFabricTest):
    """From VTEP 1 in a tenant VNI (VNI A, not the L3 VNI) to the anycast
    gateway MAC, as an asymmetric-IRB peer would send it: not routed
    (docs/routing.md), on both targets under the same reason: a frame from the
    fabric is routed in the VRF its VNI names, and only an L3 VNI names one,
    so there is no route for it. (On BMv2 routing moves the tenant's IP header
    that decap left behind first, as Tofino's decap does.)"""

    def runTest(self):
        inner = (
            Ether(src=A3.mac, dst=ANYCAST_MAC)
            / IP(src=A3.ip, dst=A5.ip, ttl=63)
            / UDP(sport=5000, dport=80)
            / Raw(b"\xce" * 40)
        )
        self.assert_dropped(
            UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1), DropReason.NO_TENANT_ROUTE
        )


class HostRouteBeatsPrefixTest(RoutedFabricTest):
    """192.168.2.6 has a host route (VTEP 1); the rest of 192.168.2.0/24 follows
    the prefix (VTEP 2); 192.168.2.5 is the local a5."""

    def runTest(self):
        frame = routed_frame(A1, "192.168.2.77")
        tu.send_packet(self, A1.port, frame)
        self.expect_routed_encap(frame, REMOTE_VTEP_2, REMOTE_RMAC_2, L3VNI_A)
        frame = routed_frame(A1, A6.ip)
        tu.send_packet(self, A1.port, frame)
        self.expect_routed_encap(frame, REMOTE_VTEP_1, REMOTE_RMAC_1, L3VNI_A)


class StaticRouteViaVmTest(RoutedFabricTest):
    """Tenant A's default route goes through its firewall VM (a2)."""

    def runTest(self):
        frame = routed_frame(A5, "8.8.8.8")
        tu.send_packet(self, A5.port, frame)
        tu.verify_packet(self, delivered(frame, FIREWALL), FIREWALL.port)
        tu.verify_no_other_packets(self)


class OverlappingSubnetsStayApartTest(RoutedFabricTest):
    """192.168.2.5 is a5 in VRF 1 and b5 in VRF 2: each tenant reaches its own."""

    def runTest(self):
        frame = routed_frame(B1, B5.ip)
        tu.send_packet(self, B1.port, frame)
        tu.verify_packet(self, delivered(frame, B5), B5.port)
        tu.verify_no_other_packets(self)
        frame = routed_frame(A1, A5.ip)
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, delivered(frame, A5), A5.port)
        tu.verify_no_other_packets(self)
        # VRF 2 has no default route: what tenant A would send to its firewall is dropped
        self.assert_dropped(B1.port, routed_frame(B1, "8.8.8.8"), DropReason.NO_TENANT_ROUTE)


class BridgedInRoutedVniTest(RoutedFabricTest):
    """Routing changes nothing for frames to a VM's own MAC: a1 -> a2 is bridged
    as before (same TTL, same source MAC)."""

    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip)
        tu.send_packet(self, A1.port, frame)
        tu.verify_packet(self, retag(frame, A2.vlan), A2.port)
        tu.verify_no_other_packets(self)


class RoutedDropsTest(RoutedFabricTest):
    """Each routed drop counted once under its own reason, nothing sent."""

    def runTest(self):
        self.assert_dropped(A1.port, routed_frame(A1, A5.ip, ttl=1), DropReason.TENANT_TTL_EXPIRED)
        # (IPv6 is routed now: test_ipv6.py; anything else is not)
        not_ip = (
            Ether(src=A1.mac, dst=ANYCAST_MAC) / Dot1Q(vlan=A1.vlan, type=0x88B5) / Raw(b"x" * 46)
        )
        self.assert_dropped(A1.port, not_ip, DropReason.NOT_IP_ROUTED)
        to_gateway = vm_frame(A1, ANYCAST_MAC, GATEWAY_1, tcp=True)
        self.assert_dropped(A1.port, to_gateway, DropReason.TO_GATEWAY)
        wrong_rmac = Ether(src=REMOTE_RMAC_1, dst="00:aa:00:00:00:99") / IP(dst=A5.ip) / UDP()
        self.assert_dropped(
            UPLINK_1, from_remote(wrong_rmac, L3VNI_A, REMOTE_VTEP_1), DropReason.WRONG_ROUTER_MAC
        )
        transit = Ether(src=REMOTE_RMAC_2, dst=ROUTER_MAC) / IP(dst=A6.ip, ttl=10) / UDP()
        self.assert_dropped(
            UPLINK_1, from_remote(transit, L3VNI_A, REMOTE_VTEP_2), DropReason.ROUTED_TRANSIT
        )
        inner_ttl = Ether(src=REMOTE_RMAC_1, dst=ROUTER_MAC) / IP(dst=A5.ip, ttl=1) / UDP()
        self.assert_dropped(
            UPLINK_1,
            from_remote(inner_ttl, L3VNI_A, REMOTE_VTEP_1),
            DropReason.TENANT_TTL_EXPIRED,
        )


class AnycastMacNotRoutedWithoutVrfTest(VtepFabricTest):
    """In the reference fabric (no VRF) the anycast MAC is an unknown unicast MAC:
    flooded in the VNI like before, never routed."""

    def runTest(self):
        frame = routed_frame(A1, "192.168.2.5")
        tu.send_packet(self, A1.port, frame)
        self.assertEqual(self.count_delivered(A2.port, [retag(frame, A2.vlan)]), 1)
        encapsulated = self.collect(UPLINK_1) + self.collect(UPLINKS[1])
        self.assertEqual(len(encapsulated), 2, "one flood copy per remote VTEP of VNI A")
