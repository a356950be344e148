"""IPv6 tenants: ND suppression (the ToR answers a VM's Neighbor Solicitation
for an address it knows; DAD, unknown targets and invalid solicitations are
flooded as before), the gateway's IPv6 echo reply, IPv6 routing (local/local,
local/remote over the L3 VNI, remote/local, host before prefix, ::/0, two VRFs
with the same prefixes, extension headers), each routed IPv6 drop reason, and
bridged IPv6.

The fabric is test_routing's routed fabric made dual-stack: each subnet gets
an IPv6 /64 beside its IPv4 /24 (192.168.1.0/24 and 2001:db8:1::/64 in VNI A
and B, 192.168.2.0/24 and 2001:db8:2::/64 in their second VNIs), gateway ::1
of each, and the gateways' link-local address fe80::EUI-64(anycast MAC). Every
packet out is checked whole, bytes as scapy builds them (checksums included)."""

from socket import AF_INET6, inet_ntop, inet_pton

from base import (
    A1,
    A2,
    A3,
    A4,
    B1,
    B2,
    B3,
    LOCAL_VMS,
    REMOTE_VTEP_1,
    REMOTE_VTEP_2,
    ROUTER_MAC,
    UPLINK_1,
    UPLINK_2,
    UPLINKS,
    VNI_A,
    VNI_B,
    VTEP_FLOOD_UPLINK,
    VTEP_REPLICA_ID,
    DropReason,
    ReferenceVm,
    expected_encap,
    from_remote,
    retag,
    tu,
    untag,
)
from p4vtep.dataplane.drop_reasons import DROP_REASON_COUNT
from p4vtep.dataplane.entries import EGRESS_DROP_COUNTER, INGRESS_DROP_COUNTER, RemoteVtepHop
from p4vtep.runtime import entities
from ptf.mask import Mask
from scapy.layers.inet import UDP
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    in6_chksum,
    in6_getnsma,
    in6_getnsmac,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw
from test_routing import (
    A5,
    A6,
    ANYCAST_MAC,
    B5,
    FIREWALL,
    L3VNI_A,
    REMOTE_RMAC_1,
    REMOTE_RMAC_2,
    VNI_A2,
    VNI_B2,
    VRF,
    VRF_A,
    VRF_B,
    RoutedFabricTest,
    local_hop,
)

# --- the dual-stack fabric -------------------------------------------------------
# Each VM's IPv6 address; tenant B reuses tenant A's (its own VRF).
IP6 = {
    "a1": "2001:db8:1::11",
    "a2": "2001:db8:1::12",
    "a3": "2001:db8:1::13",
    "a4": "2001:db8:1::14",
    "a5": "2001:db8:2::5",
    "a6": "2001:db8:2::6",
    "b1": "2001:db8:1::11",
    "b2": "2001:db8:1::12",
    "b3": "2001:db8:1::13",
    "b5": "2001:db8:2::5",
}
SUBNET6_2 = "2001:db8:2::"  # /64: VNI_A2, VNI_B2
# Each routed VNI's gateway (::1 of its /64)
GATEWAY6 = {
    VNI_A: "2001:db8:1::1",
    VNI_A2: "2001:db8:2::1",
    VNI_B: "2001:db8:1::1",
    VNI_B2: "2001:db8:2::1",
}
# fe80::EUI-64(00:00:5e:00:01:01): the U/L bit flipped, ff:fe in the middle
GATEWAY_LLA = "fe80::200:5eff:fe00:101"
A1_LLA = "fe80::200:aff:fe00:1"  # fe80::EUI-64(a1's MAC)
OUTSIDE6 = "2001:4860:4860::8888"  # only tenant A's ::/0 (its firewall) reaches it
UNKNOWN6 = "2001:db8:1::99"  # in the subnet, no VM has it
ALL_NODES, ALL_NODES_MAC = "ff02::1", "33:33:00:00:00:01"
# An RFC 7527 nonce option (type 14, one 8-byte unit), as enhanced DAD sends it.
NONCE_OPTION = bytes([14, 1]) + bytes.fromhex("0123456789ab")


def ip6(vm: ReferenceVm) -> str:
    return IP6[vm.name]


def solicited_node(target: str) -> tuple[str, str]:
    """The solicited-node multicast address of ``target`` and its MAC."""
    packed = inet_pton(AF_INET6, target)
    return inet_ntop(AF_INET6, in6_getnsma(packed)), in6_getnsmac(packed)


def frozen(pkt: Packet) -> Packet:
    """``pkt`` as it goes on the wire: lengths and checksums filled in."""
    return Ether(bytes(pkt))


# --- packet builders ---------------------------------------------------------------
def neighbor_solicitation(
    asker: ReferenceVm,
    target: str,
    *,
    src_ip: str | None = None,
    dst_ip: str | None = None,
    dst_mac: str | None = None,
    sllao: bool = True,
    extra_option: bytes = b"",
    hlim: int = 255,
    code: int = 0,
) -> Packet:
    """An NS as ``asker`` sends it through its VF: by default multicast to the
    target's solicited-node address, from the asker's address, with its
    source link-layer address option."""
    group, group_mac = solicited_node(target)
    pkt = (
        Ether(src=asker.mac, dst=dst_mac or group_mac)
        / Dot1Q(vlan=asker.vlan)
        / IPv6(src=ip6(asker) if src_ip is None else src_ip, dst=dst_ip or group, hlim=hlim)
        / ICMPv6ND_NS(tgt=target, code=code)
    )
    if sllao:
        pkt = pkt / ICMPv6NDOptSrcLLAddr(lladdr=asker.mac)
    if extra_option:
        pkt = pkt / Raw(extra_option)
    return frozen(pkt)


def neighbor_advert(
    asker: ReferenceVm,
    target: str,
    target_mac: str,
    *,
    router: bool = False,
    dst_ip: str | None = None,
    dad: bool = False,
) -> Packet:
    """The NA the ToR answers ``asker``'s NS with, out of the asker's VF: from
    the target (MAC and address), hop limit 255, S and O set (R for the
    gateway), the target's link-layer address option. To a DAD probe: to
    all-nodes, S clear (RFC 4861 7.2.4)."""
    if dad:
        dst_mac, dst_ip, solicited = ALL_NODES_MAC, ALL_NODES, 0
    else:
        dst_mac, dst_ip, solicited = asker.mac, dst_ip or ip6(asker), 1
    return frozen(
        Ether(src=target_mac, dst=dst_mac)
        / Dot1Q(vlan=asker.vlan)
        / IPv6(src=target, dst=dst_ip, hlim=255)
        / ICMPv6ND_NA(R=int(router), S=solicited, O=1, tgt=target)
        / ICMPv6NDOptDstLLAddr(lladdr=target_mac)
    )


def ip6_frame(
    src: ReferenceVm,
    dst_mac: str,
    dst_ip: str,
    *,
    src_ip: str | None = None,
    hlim: int = 64,
    l4: Packet | None = None,
) -> Packet:
    """An IPv6 frame as VM ``src`` sends it, tagged with its VF VLAN (UDP
    unless ``l4`` says otherwise)."""
    if l4 is None:
        l4 = UDP(sport=1234, dport=80) / Raw(b"\xab" * 64)
    return frozen(
        Ether(src=src.mac, dst=dst_mac)
        / Dot1Q(vlan=src.vlan)
        / IPv6(src=ip6(src) if src_ip is None else src_ip, dst=dst_ip, hlim=hlim)
        / l4
    )


def routed6(src: ReferenceVm, dst_ip: str, **kwargs) -> Packet:
    """What ``src`` sends to a host of another subnet: to the anycast gateway MAC."""
    return ip6_frame(src, ANYCAST_MAC, dst_ip, **kwargs)


def hop_decremented(frame: Packet) -> Packet:
    """The IPv6 packet of ``frame`` (and all it carries) with the hop limit - 1:
    nothing else changes (IPv6 has no header checksum, the hop limit is not
    in the upper layers' pseudo-header)."""
    inner = frame[IPv6].copy()
    inner.hlim -= 1
    return inner


def delivered6(frame: Packet, dst: ReferenceVm) -> Packet:
    """``frame`` routed to local VM ``dst``: from the gateway MAC, hop limit - 1,
    dst's VLAN."""
    return frozen(
        Ether(src=ANYCAST_MAC, dst=dst.mac) / Dot1Q(vlan=dst.vlan) / hop_decremented(frame)
    )


def routed_by(rmac: str, src_ip: str, dst_ip: str, hlim: int = 63) -> Packet:
    """A routed IPv6 frame as the VTEP with router MAC ``rmac`` sends it in the
    L3 VNI: to our router MAC, untagged."""
    return frozen(
        Ether(src=rmac, dst=ROUTER_MAC)
        / IPv6(src=src_ip, dst=dst_ip, hlim=hlim)
        / UDP(sport=5000, dport=80)
        / Raw(b"\xcd" * 40)
    )


# --- the fixture ---------------------------------------------------------------------
class DualStackFabricTest(RoutedFabricTest):
    """The routed fabric with IPv6: each VM's IPv6 address in ND suppression
    (its VNI) and as an IPv6 host route of its VRF (local: a1, a2, a5, b1,
    b5; behind VTEP 1: a3, a6); each
    gateway's global and link-local address in ND suppression (router) and
    as a gateway address of the VRF; tenant A's 2001:db8:2::/64 behind VTEP 2
    (host routes beat it) and its ::/0 through its firewall VM."""

    def setUp(self) -> None:
        super().setUp()
        e = self.entries
        updates = [e.nd_suppression(vm.vni, ip6(vm), vm.mac) for vm in (*LOCAL_VMS, A3, A4, B3)]
        updates += [e.nd_suppression(vm.vni, ip6(vm), vm.mac) for vm in (A5, A6, B5)]
        for vni, gateway in GATEWAY6.items():
            updates += [
                e.nd_suppression(vni, gateway, ANYCAST_MAC, router=True),
                e.nd_suppression(vni, GATEWAY_LLA, ANYCAST_MAC, router=True),
            ]
        for vrf in (VRF_A, VRF_B):
            updates.append(e.gateway_address(vrf, GATEWAY_LLA))
        for vrf, vni in ((VRF_A, VNI_A), (VRF_A, VNI_A2), (VRF_B, VNI_B), (VRF_B, VNI_B2)):
            updates.append(e.gateway_address(vrf, GATEWAY6[vni]))
        for vm in (A1, A2, A5, B1, B5):
            updates.append(e.host_route(VRF[vm.vni], ip6(vm), local_hop(vm)))
        vtep_1 = RemoteVtepHop(REMOTE_VTEP_1, REMOTE_RMAC_1, L3VNI_A)
        updates += [
            e.host_route(VRF_A, ip6(A3), vtep_1),
            e.host_route(VRF_A, ip6(A6), vtep_1),
            e.prefix_route(
                VRF_A, SUBNET6_2, 64, RemoteVtepHop(REMOTE_VTEP_2, REMOTE_RMAC_2, L3VNI_A)
            ),
            e.prefix_route(VRF_A, "::", 0, local_hop(FIREWALL)),
        ]
        self.sw.insert(*updates)

    # --- receiving ---------------------------------------------------------------
    def expect(self, port: int, expected: Packet | Mask) -> bytes:
        """The next packet out of ``port`` must be ``expected`` (exactly: a
        packet, or a mask): returns it. Stricter than tu.verify_packet, which
        skips whatever comes before a match."""
        mask = expected if isinstance(expected, Mask) else Mask(expected)
        result = tu.dp_poll(self, device_number=0, port_number=port, timeout=2)
        if not isinstance(result, self.dataplane.PollSuccess):
            self.fail(f"nothing out of port {port}; expected {mask.exp_pkt!r}")
        if not mask.pkt_match(result.packet):
            self.fail(f"port {port}:\ngot      {Ether(result.packet)!r}\nexpected {mask.exp_pkt!r}")
        self.assert_no_packet_in()
        return result.packet

    def assert_icmpv6_checksum(self, raw: bytes) -> None:
        """The ICMPv6 checksum of a received packet, recomputed from its bytes."""
        pkt = Ether(raw)
        message = bytearray(bytes(pkt[IPv6].payload))
        sent = int.from_bytes(message[2:4], "big")
        message[2:4] = b"\x00\x00"
        self.assertEqual(in6_chksum(58, pkt[IPv6], bytes(message)), sent, "ICMPv6 checksum")

    def expect_answer(self, ns: Packet, asker: ReferenceVm, answer: Packet) -> None:
        """``ns`` from ``asker`` is answered with exactly ``answer``, out of its
        VF, checksum right; nothing else is sent (nothing flooded)."""
        tu.send_packet(self, asker.port, ns)
        raw = self.expect(asker.port, answer)
        self.assert_icmpv6_checksum(raw)
        tu.verify_no_other_packets(self)

    def expect_flooded(self, frame: Packet, sender: ReferenceVm) -> None:
        """``frame`` from local VM ``sender`` is flooded in its VNI as it was
        sent: retagged to each other local VM of the VNI, and one VXLAN copy
        per remote VTEP of the VNI (on the uplink its flood replica names);
        nothing else."""
        for vm in LOCAL_VMS:
            if vm.vni == sender.vni and vm is not sender:
                self.expect(vm.port, retag(frame, vm.vlan))
        for vni, vtep in VTEP_REPLICA_ID:
            if vni == sender.vni:
                uplink = VTEP_FLOOD_UPLINK[vtep]
                self.expect(uplink, expected_encap(untag(frame), vni, vtep, uplink))
        tu.verify_no_other_packets(self)

    def expect_routed_encap6(self, frame: Packet, vtep: str, rmac: str) -> None:
        """``frame`` routed to ``vtep``: VXLAN in tenant A's L3 VNI, inner from
        our router MAC to the VTEP's, hop limit - 1, no VF tag."""
        inner = Ether(src=ROUTER_MAC, dst=rmac) / hop_decremented(frame)
        port, raw = self.receive_any(UPLINKS)
        expected = expected_encap(inner, L3VNI_A, vtep, port)
        if not expected.pkt_match(raw):
            self.fail(f"got {Ether(raw)!r}\nexpected {expected.exp_pkt!r}")
        tu.verify_no_other_packets(self)
        self.assert_no_packet_in()

    # --- counters ----------------------------------------------------------------
    def nd_replies(self, vni: int, target: str, mac: str, router: bool = False) -> int:
        """Packets nd_reply_counter counted on one nd_suppression entry."""
        entry = self.entries.nd_suppression(vni, target, mac, router)
        [read] = self.sw.read(entities.direct_counter_entry(entry))
        return read.direct_counter_entry.data.packet_count

    def all_drops(self) -> list[int]:
        """Packets dropped per reason, ingress and egress together."""
        counts = [0] * DROP_REASON_COUNT
        for counter in (INGRESS_DROP_COUNTER, EGRESS_DROP_COUNTER):
            for entity in self.sw.read(self.entries.counter(counter)):
                entry = entity.counter_entry
                counts[entry.index.index] += entry.data.packet_count
        return counts

    def assert_dropped_only(self, port: int, pkt: Packet, reason: DropReason) -> None:
        """assert_dropped, and no other reason counted it."""
        before = self.all_drops()
        self.assert_dropped(port, pkt, reason)
        after = self.all_drops()
        changed = {
            DropReason(i).name: after[i] - before[i]
            for i in range(DROP_REASON_COUNT)
            if after[i] != before[i]
        }
        self.assertEqual(changed, {reason.name: 1}, "drop counters that moved")


# --- ND suppression ------------------------------------------------------------------
class NdSuppressionVmTest(DualStackFabricTest):
    """a1's multicast NS (SLLAO, hop limit 255) for a2 (local) and a3 (behind
    VTEP 1): an NA out of a1's VF from the target's MAC and address to a1, S
    and O set, R clear, the target's link-layer address option, checksum
    right; nothing flooded; the entry's direct counter counts it."""

    def runTest(self):
        for target in (A2, A3):
            ns = neighbor_solicitation(A1, ip6(target))
            self.assertEqual(ns[IPv6].plen, 32)
            self.expect_answer(ns, A1, neighbor_advert(A1, ip6(target), target.mac))
            self.assertEqual(self.nd_replies(VNI_A, ip6(target), target.mac), 1)


class NdSuppressionPerTenantTest(DualStackFabricTest):
    """2001:db8:1::12 is a2 in tenant A and b2 in tenant B: each asker learns
    its own tenant's MAC."""

    def runTest(self):
        for asker, target in ((B1, B2), (A1, A2)):
            ns = neighbor_solicitation(asker, ip6(target))
            self.expect_answer(ns, asker, neighbor_advert(asker, ip6(target), target.mac))


class NdSuppressionGatewayTest(DualStackFabricTest):
    """NS for the gateway's global address and for its link-local address
    (fe80::EUI-64 of the anycast MAC), from VMs of both VNIs of VRF A: an NA
    from the anycast MAC with R, S and O set."""

    def runTest(self):
        for asker, vni in ((A1, VNI_A), (A5, VNI_A2)):
            gateway = GATEWAY6[vni]
            ns = neighbor_solicitation(asker, gateway)
            advert = neighbor_advert(asker, gateway, ANYCAST_MAC, router=True)
            self.expect_answer(ns, asker, advert)
            self.assertEqual(self.nd_replies(vni, gateway, ANYCAST_MAC, router=True), 1)
        # what a VM asks first: its router's link-local address, from its own
        ns = neighbor_solicitation(A1, GATEWAY_LLA, src_ip=A1_LLA)
        advert = neighbor_advert(A1, GATEWAY_LLA, ANYCAST_MAC, router=True, dst_ip=A1_LLA)
        self.expect_answer(ns, A1, advert)
        self.assertEqual(self.nd_replies(VNI_A, GATEWAY_LLA, ANYCAST_MAC, router=True), 1)


class NdSuppressionUnicastNudTest(DualStackFabricTest):
    """A unicast NS without options (neighbor unreachability detection: 24
    bytes of ICMPv6) for a2 and for the gateway is answered too: the NA gains
    the target link-layer address option (32 bytes)."""

    def runTest(self):
        for target, mac, router in ((ip6(A2), A2.mac, False), (GATEWAY6[VNI_A], ANYCAST_MAC, True)):
            ns = neighbor_solicitation(A1, target, dst_ip=target, dst_mac=mac, sllao=False)
            self.assertEqual(ns[IPv6].plen, 24)
            advert = neighbor_advert(A1, target, mac, router=router)
            self.assertEqual(advert[IPv6].plen, 32)
            self.expect_answer(ns, A1, advert)


class DadOwnAddressFloodsTest(DualStackFabricTest):
    """a1's Duplicate Address Detection for its own address (NS from ::, no
    SLLAO; then with a nonce option) is not answered, or a1 would give the
    address up: it is flooded in VNI A as sent (a2's VF, VTEP 1 on uplink 1,
    VTEP 2 on uplink 2). The entry's counter sees both probes."""

    def runTest(self):
        for extra in (b"", NONCE_OPTION):
            probe = neighbor_solicitation(A1, ip6(A1), src_ip="::", sllao=False, extra_option=extra)
            tu.send_packet(self, A1.port, probe)
            self.expect_flooded(probe, A1)
        self.assertEqual(self.nd_replies(VNI_A, ip6(A1), A1.mac), 2)


class DadOtherOwnerAnsweredTest(DualStackFabricTest):
    """a1 probing (DAD) an address a2 owns, or the gateway's: the ToR defends
    it, to all-nodes (ff02::1, 33:33:00:00:00:01) with S clear and O set, from
    the owner's address and MAC, out of a1's VF; nothing flooded. With a
    nonce option the same (the option becomes the TLLAO)."""

    def runTest(self):
        for extra in (b"", NONCE_OPTION):
            probe = neighbor_solicitation(A1, ip6(A2), src_ip="::", sllao=False, extra_option=extra)
            self.expect_answer(probe, A1, neighbor_advert(A1, ip6(A2), A2.mac, dad=True))
        gateway = GATEWAY6[VNI_A]
        probe = neighbor_solicitation(A1, gateway, src_ip="::", sllao=False)
        advert = neighbor_advert(A1, gateway, ANYCAST_MAC, router=True, dad=True)
        self.expect_answer(probe, A1, advert)


class NdUnknownTargetFloodsTest(DualStackFabricTest):
    """An NS for an address nobody has in the asker's VNI is flooded as
    sent, in that VNI only: a1's for 2001:db8:1::99 to a2's VF and VTEPs 1
    and 2 in VNI A; b1's for a4's address (tenant A only) to b2's VF and
    VTEP 1 in VNI B."""

    def runTest(self):
        for asker, target in ((A1, UNKNOWN6), (B1, ip6(A4))):
            ns = neighbor_solicitation(asker, target)
            tu.send_packet(self, asker.port, ns)
            self.expect_flooded(ns, asker)


class NdInvalidSolicitationNotAnsweredTest(DualStackFabricTest):
    """What ND suppression leaves alone, flooded as sent: an NS for a2 with hop
    limit 64 (RFC 4861 7.1.1: invalid), with code 1, and with two options
    (SLLAO and a nonce: 16 bytes of options)."""

    def runTest(self):
        for ns in (
            neighbor_solicitation(A1, ip6(A2), hlim=64),
            neighbor_solicitation(A1, ip6(A2), code=1),
            neighbor_solicitation(A1, ip6(A2), extra_option=NONCE_OPTION),
        ):
            tu.send_packet(self, A1.port, ns)
            self.expect_flooded(ns, A1)
        self.assertEqual(self.nd_replies(VNI_A, ip6(A2), A2.mac), 0)


class NdFromFabricNotAnsweredTest(DualStackFabricTest):
    """a3's NS for a1, from VTEP 1 in VNI A: not answered (the remote VTEP
    answers for its own VMs), decapsulated and flooded to VNI A's local VFs
    only (a1 and a2); nothing goes back to the fabric."""

    def runTest(self):
        group, group_mac = solicited_node(ip6(A1))
        ns = frozen(
            Ether(src=A3.mac, dst=group_mac)
            / IPv6(src=ip6(A3), dst=group, hlim=255)
            / ICMPv6ND_NS(tgt=ip6(A1))
            / ICMPv6NDOptSrcLLAddr(lladdr=A3.mac)
        )
        tu.send_packet(self, UPLINK_1, from_remote(ns, VNI_A, REMOTE_VTEP_1))
        for vm in (A1, A2):
            self.expect(vm.port, retag(ns, vm.vlan))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.nd_replies(VNI_A, ip6(A1), A1.mac), 0)


# --- the gateway -----------------------------------------------------------------------
def echo_request(src: ReferenceVm, dst_ip: str, src_ip: str | None = None) -> Packet:
    return ip6_frame(
        src,
        ANYCAST_MAC,
        dst_ip,
        src_ip=src_ip,
        l4=ICMPv6EchoRequest(id=0x1234, seq=1, data=b"ping" * 8),
    )


class GatewayEchoTest(DualStackFabricTest):
    """Echo requests to the gateway's global address (from a1's global) and to
    its link-local address (from a1's link-local): an echo reply from the
    gateway, addresses swapped, type 129, same hop limit, from the anycast
    MAC out of a1's VF, checksum right."""

    def runTest(self):
        for gateway, src_ip in ((GATEWAY6[VNI_A], ip6(A1)), (GATEWAY_LLA, A1_LLA)):
            request = echo_request(A1, gateway, src_ip)
            reply = frozen(
                Ether(src=ANYCAST_MAC, dst=A1.mac)
                / Dot1Q(vlan=A1.vlan)
                / IPv6(src=gateway, dst=src_ip, hlim=64)
                / ICMPv6EchoReply(id=0x1234, seq=1, data=b"ping" * 8)
            )
            self.expect_answer(request, A1, reply)


class GatewayNotEchoDroppedTest(DualStackFabricTest):
    """Anything but an echo request to a gateway address is dropped as
    TO_GATEWAY: UDP to its global and to its link-local address, and an echo
    reply."""

    def runTest(self):
        for pkt in (
            routed6(A1, GATEWAY6[VNI_A]),
            routed6(A1, GATEWAY_LLA, src_ip=A1_LLA),
            ip6_frame(A1, ANYCAST_MAC, GATEWAY6[VNI_A], l4=ICMPv6EchoReply(id=1, seq=1)),
        ):
            self.assert_dropped_only(A1.port, pkt, DropReason.TO_GATEWAY)


# --- routing ---------------------------------------------------------------------------
class Routed6LocalToLocalTest(DualStackFabricTest):
    """a1 (2001:db8:1::/64, VNI A) -> a5 (2001:db8:2::/64, VNI A2), both on
    this ToR, UDP and an ICMPv6 echo request: to a5's MAC and VLAN from the
    anycast MAC, hop limit - 1, nothing else changed."""

    def runTest(self):
        for frame in (routed6(A1, ip6(A5)), echo_request(A1, ip6(A5))):
            tu.send_packet(self, A1.port, frame)
            self.expect(A5.port, delivered6(frame, A5))
            tu.verify_no_other_packets(self)


class Routed6LocalToRemoteTest(DualStackFabricTest):
    """a1 -> a6 behind VTEP 1: VXLAN in VRF A's L3 VNI, inner from our router
    MAC to VTEP 1's, hop limit - 1, no VF tag."""

    def runTest(self):
        frame = routed6(A1, ip6(A6))
        tu.send_packet(self, A1.port, frame)
        self.expect_routed_encap6(frame, REMOTE_VTEP_1, REMOTE_RMAC_1)


class Routed6RemoteToLocalTest(DualStackFabricTest):
    """From VTEP 1 in the L3 VNI to our router MAC, a6 -> a5: decapsulated,
    routed to a5 (anycast MAC, a5's VLAN, hop limit - 1)."""

    def runTest(self):
        inner = routed_by(REMOTE_RMAC_1, ip6(A6), ip6(A5))
        tu.send_packet(self, UPLINK_1, from_remote(inner, L3VNI_A, REMOTE_VTEP_1))
        self.expect(A5.port, delivered6(inner, A5))
        tu.verify_no_other_packets(self)


class Routed6FromTenantVniNotRoutedTest(DualStackFabricTest):
    """IPv6 from VTEP 1 in a tenant VNI (VNI A, not the L3 VNI) to the anycast
    gateway MAC (asymmetric IRB): not routed, no route (test_routing.py's
    FromTenantVniNotRoutedTest says why)."""

    def runTest(self):
        inner = frozen(
            Ether(src=A3.mac, dst=ANYCAST_MAC)
            / IPv6(src=ip6(A3), dst=ip6(A5), hlim=63)
            / UDP(sport=5000, dport=80)
            / Raw(b"\xce" * 40)
        )
        self.assert_dropped_only(
            UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1), DropReason.NO_TENANT_ROUTE
        )


class Routed6HostRouteBeatsPrefixTest(DualStackFabricTest):
    """2001:db8:2::6 (a6) has a host route to VTEP 1; the rest of
    2001:db8:2::/64 follows the prefix to VTEP 2; 2001:db8:2::5 is the local a5."""

    def runTest(self):
        frame = routed6(A1, "2001:db8:2::77")
        tu.send_packet(self, A1.port, frame)
        self.expect_routed_encap6(frame, REMOTE_VTEP_2, REMOTE_RMAC_2)
        frame = routed6(A1, ip6(A6))
        tu.send_packet(self, A1.port, frame)
        self.expect_routed_encap6(frame, REMOTE_VTEP_1, REMOTE_RMAC_1)
        frame = routed6(A1, ip6(A5))
        tu.send_packet(self, A1.port, frame)
        self.expect(A5.port, delivered6(frame, A5))
        tu.verify_no_other_packets(self)


class Routed6DefaultRouteTest(DualStackFabricTest):
    """Tenant A's ::/0 goes through its firewall VM (a2)."""

    def runTest(self):
        frame = routed6(A5, OUTSIDE6)
        tu.send_packet(self, A5.port, frame)
        self.expect(FIREWALL.port, delivered6(frame, FIREWALL))
        tu.verify_no_other_packets(self)


class Routed6OverlappingSubnetsTest(DualStackFabricTest):
    """2001:db8:2::5 is a5 in VRF A and b5 in VRF B: each tenant reaches its
    own; VRF B has no ::/0, so what tenant A would send to its firewall is
    dropped in B (NO_TENANT_ROUTE)."""

    def runTest(self):
        for src, dst in ((B1, B5), (A1, A5)):
            frame = routed6(src, ip6(dst))
            tu.send_packet(self, src.port, frame)
            self.expect(dst.port, delivered6(frame, dst))
            tu.verify_no_other_packets(self)
        self.assert_dropped_only(B1.port, routed6(B1, OUTSIDE6), DropReason.NO_TENANT_ROUTE)


class Routed6ExtensionHeadersTest(DualStackFabricTest):
    """Extension headers are not walked but do not stop routing: a1 -> a5 with
    a Hop-by-Hop Options header, a Destination Options header, and as a first
    and a later fragment, each delivered whole with hop limit - 1."""

    def runTest(self):
        udp = UDP(sport=1234, dport=80) / Raw(b"\xab" * 64)
        for l4 in (
            IPv6ExtHdrHopByHop() / udp,
            IPv6ExtHdrDestOpt() / udp,
            IPv6ExtHdrFragment(id=0x1234, offset=0, m=1) / udp,
            IPv6ExtHdrFragment(id=0x1234, offset=9, m=0, nh=17) / Raw(b"\xab" * 24),
        ):
            frame = routed6(A1, ip6(A5), l4=l4)
            tu.send_packet(self, A1.port, frame)
            self.expect(A5.port, delivered6(frame, A5))
            tu.verify_no_other_packets(self)


class Routed6DropsTest(DualStackFabricTest):
    """Each routed IPv6 drop but the scope ones, nothing sent, counted once
    under its own reason and no other: hop limit 1 (from a VM and from the
    fabric); no route (VRF B has no ::/0); routed fabric to fabric."""

    def runTest(self):
        from_vtep_1 = routed_by(REMOTE_RMAC_1, ip6(A6), ip6(A5), hlim=1)
        # VTEP 2 routes to a6, which is behind VTEP 1: this ToR is no transit
        transit = routed_by(REMOTE_RMAC_2, "2001:db8:9::9", ip6(A6))
        drops = [
            (A1.port, routed6(A1, ip6(A5), hlim=1), DropReason.TENANT_HOP_LIMIT),
            (
                UPLINK_1,
                from_remote(from_vtep_1, L3VNI_A, REMOTE_VTEP_1),
                DropReason.TENANT_HOP_LIMIT,
            ),
            (B1.port, routed6(B1, "2001:db8:77::1"), DropReason.NO_TENANT_ROUTE),
            (
                UPLINK_2,
                from_remote(transit, L3VNI_A, REMOTE_VTEP_2, uplink=UPLINK_2),
                DropReason.ROUTED_TRANSIT,
            ),
        ]
        for port, pkt, reason in drops:
            self.assert_dropped_only(port, pkt, reason)


class Routed6ScopeDropsTest(DualStackFabricTest):
    """A routed IPv6 frame with a non-global source or destination (link-local
    fe80::/10, multicast ff00::/8, or ::/8: unspecified, loopback,
    IPv4-mapped) is dropped as IPV6_SCOPE, once, nothing sent, even where
    tenant A's ::/0 would take it: a link-local destination other than the
    gateway's; a multicast destination to the anycast MAC and, from the
    fabric, to the router MAC; ::, ::1 and ::ffff:192.168.2.5 as destination;
    a link-local, ::, ::1 or multicast source routed to another subnet; and a
    link-local source toward a destination without a route (the scope
    decides first, as on Tofino)."""

    def runTest(self):
        to_multicast = routed_by(REMOTE_RMAC_1, ip6(A6), "ff05::2")
        drops = [
            (A1.port, routed6(A1, "fe80::1234")),
            (A1.port, routed6(A1, "ff0e::1")),
            (UPLINK_1, from_remote(to_multicast, L3VNI_A, REMOTE_VTEP_1)),
            (A5.port, routed6(A5, "::")),
            (A5.port, routed6(A5, "::1")),
            (A5.port, routed6(A5, "::ffff:192.168.2.5")),
            (A1.port, routed6(A1, ip6(A5), src_ip=A1_LLA)),
            (A1.port, routed6(A1, ip6(A5), src_ip="::")),
            (A1.port, routed6(A1, ip6(A5), src_ip="::1")),
            (A1.port, routed6(A1, ip6(A5), src_ip="ff02::1")),
            (B1.port, routed6(B1, "2001:db8:77::1", src_ip=A1_LLA)),
        ]
        for port, pkt in drops:
            self.assert_dropped_only(port, pkt, DropReason.IPV6_SCOPE)


class Bridged6Test(DualStackFabricTest):
    """IPv6 between two VMs of one VNI is bridged as before, delivered as sent
    (same hop limit, same MACs) retagged with the receiver's VLAN: a1 -> a2
    UDP, and a2's own Neighbor Advertisement to a1 (an NA is not touched,
    its checksum as the VM computed it)."""

    def runTest(self):
        advert = frozen(
            Ether(src=A2.mac, dst=A1.mac)
            / Dot1Q(vlan=A2.vlan)
            / IPv6(src=ip6(A2), dst=ip6(A1), hlim=255)
            / ICMPv6ND_NA(R=0, S=1, O=1, tgt=ip6(A2))
            / ICMPv6NDOptDstLLAddr(lladdr=A2.mac)
        )
        for src, dst, frame in ((A1, A2, ip6_frame(A1, A2.mac, ip6(A2))), (A2, A1, advert)):
            tu.send_packet(self, src.port, frame)
            self.expect(dst.port, retag(frame, dst.vlan))
            tu.verify_no_other_packets(self)


class Bridged6FabricTest(DualStackFabricTest):
    """Bridged IPv6 with a VM behind VTEP 1 in VNI A: a1 -> a3 leaves as VXLAN
    (VNI A) with the frame as sent, untagged, the outer DSCP its traffic
    class's; a3 -> a1 arrives as VXLAN and is
    delivered as sent, tagged with a1's VLAN (the inner IPv6 header the
    parser took out goes back in its place)."""

    def runTest(self):
        frame = ip6_frame(A1, A3.mac, ip6(A3))
        tu.send_packet(self, A1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1)
        tu.verify_no_other_packets(self)
        # The outer DSCP is the IPv6 traffic class's (EF, 46: tos 0xB8), as an
        # inner IPv4 DSCP is copied.
        frame = frozen(Ether(bytes(frame)))
        frame[IPv6].tc = 0xB8
        frame = frozen(frame)
        tu.send_packet(self, A1.port, frame)
        self.verify_encap_any_uplink(untag(frame), VNI_A, REMOTE_VTEP_1, tos=0xB8)
        tu.verify_no_other_packets(self)
        inner = frozen(
            Ether(src=A3.mac, dst=A1.mac)
            / IPv6(src=ip6(A3), dst=ip6(A1))
            / UDP(sport=5000, dport=80)
            / Raw(b"\xcd" * 40)
        )
        tu.send_packet(self, UPLINK_1, from_remote(inner, VNI_A, REMOTE_VTEP_1))
        self.expect(A1.port, retag(inner, A1.vlan))
        tu.verify_no_other_packets(self)
