"""Port security (issue 38, p4src/include/control/port_security.p4): a guarded
VM sends only as itself. Each spoof is dropped with its reason counted once,
in the drop counter and in the VM's own cell of port_security_drop_counter;
the legitimate variant of the same packet comes out exactly as it was sent
(or as ARP/ND suppression answers it).

The fabric is test_ipv6's dual-stack routed fabric, with port security as
the controller would write it (docs/pipeline.md):
- a1 guarded: its IPv4 and IPv6 address (fe80::/64 and ::, DAD's, are the
  pipeline's own rule: no entry), and two allowed pairs: a VRRP virtual IP
  192.168.1.200 with its virtual MAC (an extra source MAC of a1's VF) and
  the prefix 10.20.0.0/16 it may route for; and 2001:db8:1::200 (IPv6 VIP);
- a2 guarded and allowed to serve DHCP;
- b1 opted out (guarded 0): only the MAC check of before."""

from base import (
    A1,
    A2,
    B1,
    B2,
    BROADCAST,
    DropReason,
    ReferenceVm,
    retag,
    tu,
    vm_frame,
)
from p4vtep.dataplane.entries import (
    PORT_SECURITY_DROP_COUNTER,
    PORT_SECURITY_REASONS,
    port_security_index,
)
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import (
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6ND_Redirect,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Packet, Raw
from test_arp import arp_reply
from test_ipv6 import (
    A1_LLA,
    ALL_NODES,
    ALL_NODES_MAC,
    GATEWAY6,
    GATEWAY_LLA,
    NONCE_OPTION,
    DualStackFabricTest,
    frozen,
    ip6,
    ip6_frame,
    neighbor_advert,
    neighbor_solicitation,
    solicited_node,
)
from test_routing import A5, GATEWAY_1, VRF, delivered, routed_frame

# a1's allowed pairs: a VRRP virtual IP with its virtual MAC, a prefix it
# routes for (a firewall's), an IPv6 virtual IP.
VRRP_MAC = "00:00:5e:00:01:07"
VRRP_VIP = "192.168.1.200"
PAIR_PREFIX, PAIR_SOURCE = ("10.20.0.0", 16), "10.20.3.4"
VIP6 = "2001:db8:1::200"
# Link-local sources: a stable-privacy one (RFC 7217: no MAC in it), a1's own
# MAC-derived one (test_ipv6.A1_LLA), a2's MAC-derived one.
STABLE_LLA = "fe80::3c1a:97ff:1e42:a5d0"
A2_LLA = "fe80::200:aff:fe00:2"


def arp(
    vm: ReferenceVm,
    *,
    spa: str,
    tpa: str,
    sha: str | None = None,
    src_mac: str | None = None,
    op: int = 1,
) -> Packet:
    """An ARP frame as ``vm`` sends it through its VF, broadcast."""
    return (
        Ether(src=src_mac or vm.mac, dst=BROADCAST)
        / Dot1Q(vlan=vm.vlan)
        / ARP(op=op, hwsrc=sha or src_mac or vm.mac, psrc=spa, hwdst="00:00:00:00:00:00", pdst=tpa)
    )


def unsolicited_na(vm: ReferenceVm, target: str, *, tllao: str | None = None, extra=b"") -> Packet:
    """An unsolicited Neighbor Advertisement for ``target`` to all-nodes (what a
    VM sends when it takes an address over), with its target link-layer
    address option (``tllao``, by default its MAC)."""
    pkt = (
        Ether(src=vm.mac, dst=ALL_NODES_MAC)
        / Dot1Q(vlan=vm.vlan)
        / IPv6(src=ip6(vm), dst=ALL_NODES, hlim=255)
        / ICMPv6ND_NA(R=0, S=0, O=1, tgt=target)
        / ICMPv6NDOptDstLLAddr(lladdr=tllao or vm.mac)
    )
    if extra:
        pkt = pkt / Raw(extra)
    return frozen(pkt)


def icmpv6_from(vm: ReferenceVm, message: Packet, *, src_ip: str = A1_LLA) -> Packet:
    """An ICMPv6 message to all-nodes from ``vm``'s link-local address."""
    return frozen(
        Ether(src=vm.mac, dst=ALL_NODES_MAC)
        / Dot1Q(vlan=vm.vlan)
        / IPv6(src=src_ip, dst=ALL_NODES, hlim=255)
        / message
    )


def dhcp4(src: ReferenceVm, dst_mac: str, src_ip: str, dst_ip: str, sport: int, dport: int):
    return (
        Ether(src=src.mac, dst=dst_mac)
        / Dot1Q(vlan=src.vlan)
        / IP(src=src_ip, dst=dst_ip, ttl=64)
        / UDP(sport=sport, dport=dport)
        / Raw(b"\x01\x01\x06\x00" + b"\x00" * 60)  # (a BOOTP header's start)
    )


def dhcp6_advertise(src: ReferenceVm, src_ip: str, dst: ReferenceVm, dst_ip: str) -> Packet:
    """A DHCPv6 server message (UDP 547 -> 546) from ``src`` to ``dst``."""
    return ip6_frame(
        src,
        dst.mac,
        dst_ip,
        src_ip=src_ip,
        l4=UDP(sport=547, dport=546) / Raw(b"\x02\x00\x00\x01" + b"\x00" * 40),
    )


class PortSecurityFabricTest(DualStackFabricTest):
    """test_ipv6's fabric with a1 and a2 guarded (a2 a DHCP server), a1's
    pairs, and b1 left unguarded. As the controller binds them, each binding
    holds the VM's IPv4 address (``bound_ipv4``: BMv2 then skips the IPv4
    guard's lookup for a frame claiming it; the guard lists it too)."""

    bound_ipv4 = True

    def setUp(self) -> None:
        super().setUp()
        e = self.entries
        self.sw.modify(
            e.access_binding(
                A1.port,
                A1.vlan,
                A1.vni,
                A1.index,
                A1.mac,
                VRF[A1.vni],
                guarded=True,
                ipv4=A1.ip if self.bound_ipv4 else 0,
            ),
            e.access_binding(
                A2.port,
                A2.vlan,
                A2.vni,
                A2.index,
                A2.mac,
                VRF[A2.vni],
                guarded=True,
                dhcp_server=True,
                ipv4=A2.ip if self.bound_ipv4 else 0,
            ),
        )
        updates = []
        for vm in (A1, A2):
            updates += [
                e.source_guard(vm.port, vm.vlan, vm.ip, 32),
                e.source_guard(vm.port, vm.vlan, ip6(vm), 128),
            ]
        updates += [
            e.source_guard(A1.port, A1.vlan, VRRP_VIP, 32),
            e.source_guard(A1.port, A1.vlan, *PAIR_PREFIX),
            e.source_guard(A1.port, A1.vlan, VIP6, 128),
            e.allowed_source_mac(A1.port, A1.vlan, VRRP_MAC),
        ]
        self.sw.insert(*updates)

    # --- counters -------------------------------------------------------------
    def vm_drops(self, vm: ReferenceVm) -> dict[str, int]:
        """``vm``'s cells of port_security_drop_counter, by reason."""
        return {
            reason.name: self.counter(
                PORT_SECURITY_DROP_COUNTER, port_security_index(vm.index, reason)
            )[0]
            for reason in PORT_SECURITY_REASONS
        }

    def assert_refused(self, vm: ReferenceVm, pkt: Packet, reason: DropReason) -> None:
        """``pkt`` from ``vm`` is dropped; ``reason`` is counted once in the
        drop counter (no other reason moves) and once in ``vm``'s cells."""
        before = self.vm_drops(vm)
        self.assert_dropped_only(vm.port, pkt, reason)
        after = self.vm_drops(vm)
        moved = {r: after[r] - before[r] for r in after if after[r] != before[r]}
        self.assertEqual(moved, {reason.name: 1}, f"{vm.name}'s port security cells")

    def assert_passes(self, vm: ReferenceVm, pkt: Packet, port: int, out: Packet) -> None:
        """``pkt`` from ``vm`` comes out of ``port`` exactly as ``out``, and
        nothing else; no drop counted."""
        before = self.all_drops()
        tu.send_packet(self, vm.port, pkt)
        self.expect(port, out)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.all_drops(), before, "drop counters")

    def assert_floods(self, vm: ReferenceVm, pkt: Packet) -> None:
        """``pkt`` from ``vm`` is flooded in its VNI as sent; the only drop
        counted is the group's copy back to ``vm``'s own VF (split horizon)."""
        before = self.all_drops()
        tu.send_packet(self, vm.port, pkt)
        self.expect_flooded(pkt, vm)
        after = self.all_drops()
        moved = {
            DropReason(i).name: after[i] - before[i]
            for i in range(len(after))
            if after[i] != before[i]
        }
        self.assertEqual(moved, {"SPLIT_HORIZON": 1}, "drop counters that moved")


# --- IPv4 ------------------------------------------------------------------------------
class Ipv4SourceGuardTest(PortSecurityFabricTest):
    """a1 from its own address (bridged to a2, routed to a5) comes out exactly;
    from a2's address, from an address nobody has, and routed from a5's, it
    is dropped as spoofed_ip."""

    def runTest(self):
        own = vm_frame(A1, A2.mac, A2.ip)
        self.assert_passes(A1, own, A2.port, retag(own, A2.vlan))
        routed = routed_frame(A1, A5.ip)
        self.assert_passes(A1, routed, A5.port, delivered(routed, A5))
        for source in (A2.ip, "192.168.1.99"):
            spoofed = vm_frame(A1, A2.mac, A2.ip)
            spoofed[IP].src = source
            self.assert_refused(A1, spoofed, DropReason.SPOOFED_IP)
        spoofed = routed_frame(A1, A2.ip)
        spoofed[IP].src = A5.ip
        self.assert_refused(A1, spoofed, DropReason.SPOOFED_IP)


class Ipv4SourceGuardWithoutBoundAddressTest(Ipv4SourceGuardTest):
    """The same frames, verdicts and counts with bindings that hold no IPv4
    address (0): every frame is looked up in the guard, which lists a1's
    address, so the short-cut changes no verdict."""

    bound_ipv4 = False


class Ipv4AllowedPairsTest(PortSecurityFabricTest):
    """a1's pairs: from the VRRP virtual IP, sent from the virtual MAC (an
    extra source MAC of a1's VF) or its own; routed from inside its allowed
    prefix 10.20.0.0/16. Outside the prefix: spoofed_ip. The virtual MAC is
    a1's VF's only: from a2's VF it is spoofed_source."""

    def runTest(self):
        for mac in (VRRP_MAC, A1.mac):
            vip = vm_frame(A1, A2.mac, A2.ip, src_mac=mac)
            vip[IP].src = VRRP_VIP
            self.assert_passes(A1, vip, A2.port, retag(vip, A2.vlan))
        routed = routed_frame(A1, A5.ip)
        routed[IP].src = PAIR_SOURCE
        self.assert_passes(A1, routed, A5.port, delivered(routed, A5))
        outside = routed_frame(A1, A5.ip)
        outside[IP].src = "10.21.0.1"
        self.assert_refused(A1, outside, DropReason.SPOOFED_IP)
        stolen = vm_frame(A2, A1.mac, A1.ip, src_mac=VRRP_MAC)
        self.assert_dropped_only(A2.port, stolen, DropReason.SPOOFED_SOURCE)


class SpoofedMacComesFirstTest(PortSecurityFabricTest):
    """A frame spoofing both its MAC and its IPv4 source counts as
    spoofed_source (the MAC check runs first), not in a1's port security cells."""

    def runTest(self):
        frame = vm_frame(A1, A2.mac, A2.ip, src_mac=B1.mac)
        frame[IP].src = A2.ip
        before = self.vm_drops(A1)
        self.assert_dropped_only(A1.port, frame, DropReason.SPOOFED_SOURCE)
        self.assertEqual(self.vm_drops(A1), before)


class DhcpTest(PortSecurityFabricTest):
    """a1's DHCP discover from 0.0.0.0 to the broadcast is flooded in its VNI
    as sent. A DHCP server message (UDP 67 -> 68) from a1 is dropped
    (dhcp_server_from_vm); from a2, which may serve DHCP, it reaches a1."""

    def runTest(self):
        discover = dhcp4(A1, BROADCAST, "0.0.0.0", "255.255.255.255", 68, 67)
        self.assert_floods(A1, discover)
        offer = dhcp4(A1, A2.mac, A1.ip, A2.ip, 67, 68)
        self.assert_refused(A1, offer, DropReason.DHCP_SERVER_FROM_VM)
        broadcast_offer = dhcp4(A1, BROADCAST, A1.ip, "255.255.255.255", 67, 68)
        self.assert_refused(A1, broadcast_offer, DropReason.DHCP_SERVER_FROM_VM)
        served = dhcp4(A2, A1.mac, A2.ip, A1.ip, 67, 68)
        self.assert_passes(A2, served, A1.port, retag(served, A1.vlan))


# --- ARP -------------------------------------------------------------------------------
class ArpSpoofingTest(PortSecurityFabricTest):
    """a1's ARP: a request for a2 from its own address and MAC is answered by
    the ToR as before; a probe (sender 0.0.0.0) and a gratuitous ARP for its
    own address are flooded as sent. Dropped as spoofed_arp: a sender MAC
    other than the frame's source, a gratuitous ARP or reply claiming a2's
    address or the gateway's, a request from an address that is not a1's."""

    def runTest(self):
        request = arp(A1, spa=A1.ip, tpa=A2.ip)
        self.assert_passes(A1, request, A1.port, arp_reply(A1, A2.ip, A2.mac))
        self.assert_floods(A1, arp(A1, spa="0.0.0.0", tpa="192.168.1.50"))
        self.assert_floods(A1, arp(A1, spa=A1.ip, tpa=A1.ip))
        for spoof in (
            arp(A1, spa=A1.ip, tpa=A2.ip, sha=B1.mac),
            arp(A1, spa=A2.ip, tpa=A2.ip),
            arp(A1, spa=A2.ip, tpa=A2.ip, op=2),
            arp(A1, spa=GATEWAY_1, tpa=GATEWAY_1),
            arp(A1, spa="192.168.1.99", tpa=A2.ip),
        ):
            self.assert_refused(A1, spoof, DropReason.SPOOFED_ARP)


class ArpSpoofingWithoutBoundAddressTest(ArpSpoofingTest):
    """ArpSpoofingTest with bindings that hold no IPv4 address (0): an ARP
    probe's sender 0.0.0.0 then equals the binding's 0 and skips the lookup,
    which 0.0.0.0 never needed; the verdicts are the same."""

    bound_ipv4 = False


class ArpVirtualIpTest(PortSecurityFabricTest):
    """A VRRP master's gratuitous ARP for the virtual IP, from the virtual MAC
    (sender MAC the same): flooded as sent. The same claim with a1's MAC as
    the sender MAC but the virtual MAC as the frame's source: spoofed_arp."""

    def runTest(self):
        self.assert_floods(A1, arp(A1, spa=VRRP_VIP, tpa=VRRP_VIP, src_mac=VRRP_MAC))
        mixed = arp(A1, spa=VRRP_VIP, tpa=VRRP_VIP, src_mac=VRRP_MAC, sha=A1.mac)
        self.assert_refused(A1, mixed, DropReason.SPOOFED_ARP)


# --- IPv6 ------------------------------------------------------------------------------
class Ipv6SourceGuardTest(PortSecurityFabricTest):
    """a1 from its IPv6 address, from its IPv6 virtual IP, from a
    stable-privacy link-local address and from its own MAC-derived one:
    bridged to a2 exactly, with no guard entry for the link-local ones (the
    pipeline's rule). Dropped as spoofed_ip: a2's address, an unknown one,
    one in fe80::/10 but outside fe80::/64 (the rule's whole extent), a2's
    MAC-derived link-local address and the gateway's
    (fe80::200:5eff:fe00:101: a MAC-derived link-local address must be the
    VM's own MAC's)."""

    def runTest(self):
        for source in (ip6(A1), VIP6, STABLE_LLA, A1_LLA):
            frame = ip6_frame(A1, A2.mac, ip6(A2), src_ip=source)
            self.assert_passes(A1, frame, A2.port, retag(frame, A2.vlan))
        for source in (ip6(A2), "2001:db8:1::99", "fe80:0:0:1::5", A2_LLA, GATEWAY_LLA):
            frame = ip6_frame(A1, A2.mac, ip6(A2), src_ip=source)
            self.assert_refused(A1, frame, DropReason.SPOOFED_IP)


class NeighborSolicitationTest(PortSecurityFabricTest):
    """a1's solicitation for a2 with its own address and SLLAO is answered by
    the ToR as before, and so is one from its stable-privacy link-local
    address; its DAD probe (from ::, for its own address) is flooded as
    sent. A source link-layer option other than the frame's source MAC, or
    more options than the switch reads: spoofed_nd; a source that is not a1's
    (a2's, the gateway's link-local): spoofed_ip."""

    def runTest(self):
        ns = neighbor_solicitation(A1, ip6(A2))
        self.assert_passes(A1, ns, A1.port, neighbor_advert(A1, ip6(A2), A2.mac))
        ns = neighbor_solicitation(A1, ip6(A2), src_ip=STABLE_LLA)
        advert = neighbor_advert(A1, ip6(A2), A2.mac, dst_ip=STABLE_LLA)
        self.assert_passes(A1, ns, A1.port, advert)
        self.assert_floods(A1, neighbor_solicitation(A1, ip6(A1), src_ip="::", sllao=False))
        group, group_mac = solicited_node(ip6(A2))
        wrong_sllao = frozen(
            Ether(src=A1.mac, dst=group_mac)
            / Dot1Q(vlan=A1.vlan)
            / IPv6(src=ip6(A1), dst=group, hlim=255)
            / ICMPv6ND_NS(tgt=ip6(A2))
            / ICMPv6NDOptSrcLLAddr(lladdr=B1.mac)
        )
        self.assert_refused(A1, wrong_sllao, DropReason.SPOOFED_ND)
        two_options = neighbor_solicitation(A1, ip6(A2), extra_option=NONCE_OPTION)
        self.assert_refused(A1, two_options, DropReason.SPOOFED_ND)
        for source in (ip6(A2), GATEWAY_LLA):
            ns = neighbor_solicitation(A1, "2001:db8:1::99", src_ip=source)
            self.assert_refused(A1, ns, DropReason.SPOOFED_IP)


class NeighborAdvertisementTest(PortSecurityFabricTest):
    """a1's unsolicited advert for its own address, for its IPv6 virtual IP,
    and for its stable-privacy link-local address, each with its MAC in the
    TLLAO: flooded as sent. Dropped as spoofed_nd: an advert claiming a2's
    address, the gateway's global address or its link-local address, one
    whose TLLAO is not the frame's source MAC, one with two options."""

    def runTest(self):
        for target in (ip6(A1), VIP6, STABLE_LLA):
            self.assert_floods(A1, unsolicited_na(A1, target))
        for spoof in (
            unsolicited_na(A1, ip6(A2)),
            unsolicited_na(A1, GATEWAY6[A1.vni]),
            unsolicited_na(A1, GATEWAY_LLA),
            unsolicited_na(A1, ip6(A1), tllao=B1.mac),
            unsolicited_na(A1, ip6(A1), extra=NONCE_OPTION),
        ):
            self.assert_refused(A1, spoof, DropReason.SPOOFED_ND)


class RouterAdvertisementGuardTest(PortSecurityFabricTest):
    """A Router Advertisement and a Redirect from a1 are dropped as ra_from_vm."""

    def runTest(self):
        self.assert_refused(A1, icmpv6_from(A1, ICMPv6ND_RA()), DropReason.RA_FROM_VM)
        redirect = ICMPv6ND_Redirect(tgt=A1_LLA, dst=ip6(A2))
        self.assert_refused(A1, icmpv6_from(A1, redirect), DropReason.RA_FROM_VM)


class Dhcp6Test(PortSecurityFabricTest):
    """A DHCPv6 server message (547 -> 546) from a1 is dropped
    (dhcp_server_from_vm); from a2, which may serve DHCP, it reaches a1."""

    def runTest(self):
        from_a1 = dhcp6_advertise(A1, A1_LLA, A2, A2_LLA)
        self.assert_refused(A1, from_a1, DropReason.DHCP_SERVER_FROM_VM)
        from_a2 = dhcp6_advertise(A2, A2_LLA, A1, A1_LLA)
        self.assert_passes(A2, from_a2, A1.port, retag(from_a2, A1.vlan))


# --- opted out -------------------------------------------------------------------------
class OptedOutVmTest(PortSecurityFabricTest):
    """b1 (port security off) is held to its MAC only: from another's IPv4 and
    IPv6 address it reaches b2; its Router Advertisement and a gratuitous
    ARP claiming b2's address are flooded in its VNI as sent; nothing is
    counted in its port security cells."""

    def runTest(self):
        before = self.vm_drops(B1)
        frame = vm_frame(B1, B2.mac, B2.ip)
        frame[IP].src = "192.168.1.99"
        self.assert_passes(B1, frame, B2.port, retag(frame, B2.vlan))
        frame6 = ip6_frame(B1, B2.mac, ip6(B2), src_ip=ip6(B2))
        self.assert_passes(B1, frame6, B2.port, retag(frame6, B2.vlan))
        self.assert_floods(B1, icmpv6_from(B1, ICMPv6ND_RA(), src_ip="fe80::b1"))
        self.assert_floods(B1, arp(B1, spa=B2.ip, tpa=B2.ip))
        self.assertEqual(self.vm_drops(B1), before)
