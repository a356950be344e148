"""The CPU path's packets, built and parsed back with scapy: ICMP errors
(RFC 1812, RFC 4443), echo replies (options, fragments, both families) and
router advertisements (RFC 4861), field by field, checksums verified."""

from __future__ import annotations

from ipaddress import IPv6Network

import pytest
from p4vtep.cpu.echo import EchoResponder
from p4vtep.cpu.frames import Ignored
from p4vtep.cpu.icmp_errors import (
    PACKET_TOO_BIG,
    TIME_EXCEEDED,
    UNREACHABLE,
    icmp_error,
    refusal,
)
from p4vtep.cpu.parse import parse
from p4vtep.cpu.router_adverts import (
    AdvertisedPrefix,
    RaContent,
    router_advert,
    solicitation_problem,
)
from p4vtep.model.fabric import RouterAdvertisements
from scapy.layers.inet import ICMP, IP, UDP, IPOption_RR, fragment
from scapy.layers.inet6 import (
    ICMPv6DestUnreach,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptMTU,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    ICMPv6PacketTooBig,
    ICMPv6TimeExceeded,
    IPv6,
    IPv6ExtHdrFragment,
    fragment6,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.utils import checksum

VM_MAC, GW_MAC = "00:00:0a:00:00:01", "00:00:5e:00:01:01"
GW_LLA = "fe80::200:5eff:fe00:101"


def tagged(ip: Packet, vlan: int = 10) -> bytes:
    return bytes(Ether(src=VM_MAC, dst=GW_MAC) / Dot1Q(vlan=vlan) / ip)


def ip_checksum_ok(packet: bytes) -> bool:
    """Whether an IPv4 header's checksum is what scapy computes for it."""
    p = IP(packet)
    again = p.copy()
    del again.chksum
    return bool(IP(bytes(again)).chksum == p.chksum)


def outer_checksums_ok(packet: bytes, version: int) -> bool:
    """Whether the IPv4 header and the ICMP message (IPv4: RFC 792; IPv6:
    over the pseudo-header, RFC 4443 2.3) each sum to zero (RFC 1071)."""
    if version == 4:
        ihl = (packet[0] & 0x0F) * 4
        return checksum(packet[:ihl]) == 0 and checksum(packet[ihl:]) == 0
    message = packet[40:]
    pseudo = packet[8:40] + len(message).to_bytes(4, "big") + bytes(3) + bytes([58])
    return packet[6] == 58 and checksum(pseudo + message) == 0


# --- ICMP errors ----------------------------------------------------------------------


def test_ipv4_time_exceeded_quotes_the_packet_from_the_subnets_gateway() -> None:
    probe = IP(src="192.168.1.1", dst="10.9.9.9", ttl=1, id=77) / UDP(sport=40000, dport=33434)
    probe = probe / Raw(b"x" * 32)
    frame = parse(tagged(probe))
    assert frame is not None
    assert refusal(frame) is None
    error = icmp_error(TIME_EXCEEDED, frame, "192.168.1.254", 64)
    p = IP(error)
    assert (p.src, p.dst, p.ttl, p.proto, p.flags, p.frag) == (
        "192.168.1.254",
        "192.168.1.1",
        64,
        1,
        0,
        0,
    )
    assert (p[ICMP].type, p[ICMP].code, p[ICMP].unused) == (11, 0, 0)
    assert error[28:] == bytes(probe)  # the whole packet, as received
    assert len(error) == 20 + 8 + len(bytes(probe))
    assert outer_checksums_ok(error, 4)
    assert ip_checksum_ok(error)


def test_ipv4_unreachable_is_net_unreachable_and_at_most_576_bytes() -> None:
    big = IP(src="192.168.1.1", dst="10.9.9.9", ttl=9) / UDP() / Raw(b"y" * 1300)
    frame = parse(tagged(big))
    assert frame is not None
    error = icmp_error(UNREACHABLE, frame, "192.168.1.254", 65)
    p = IP(error)
    assert (p[ICMP].type, p[ICMP].code, p.ttl) == (3, 0, 65)
    assert len(error) == 576
    assert error[28:] == bytes(big)[:548]
    assert outer_checksums_ok(error, 4)


def test_ipv6_time_exceeded_and_no_route_at_most_1280_bytes() -> None:
    probe = (
        IPv6(src="2001:db8:1::a", dst="2001:db8:9::9", hlim=1) / UDP(dport=33434) / Raw(b"z" * 1400)
    )
    frame = parse(tagged(probe))
    assert frame is not None
    assert refusal(frame) is None
    error = icmp_error(TIME_EXCEEDED, frame, "2001:db8:1::1", 64)
    p = IPv6(error)
    assert (p.src, p.dst, p.hlim, p.nh) == ("2001:db8:1::1", "2001:db8:1::a", 64, 58)
    assert isinstance(p.payload, ICMPv6TimeExceeded)
    assert p.payload.code == 0
    assert len(error) == 1280
    assert error[48:] == bytes(probe)[:1232]
    assert outer_checksums_ok(error, 6)
    small = IPv6(src="2001:db8:1::a", dst="2001:db8:9::9", hlim=7) / UDP() / Raw(b"q" * 10)
    frame = parse(tagged(small))
    assert frame is not None
    error = icmp_error(UNREACHABLE, frame, "2001:db8:1::1", 64)
    p = IPv6(error)
    assert isinstance(p.payload, ICMPv6DestUnreach)
    assert p.payload.code == 0
    assert error[48:] == bytes(small)
    assert outer_checksums_ok(error, 6)


def test_ipv6_packet_too_big_carries_the_mtu_and_quotes_up_to_1280_bytes() -> None:
    """RFC 4443 3.2, byte for byte: type 2, code 0, the MTU in the word
    after the checksum, then the offending packet as received, cut so that
    the error is 1280 bytes; the checksum over the pseudo-header. A punted
    frame BMv2 truncated to 1400 bytes (1374 of the IP packet) quotes the
    same 1232: the quote never needs more than BMv2 punts."""
    big = (
        IPv6(src="2001:db8:1::a", dst="2001:db8:2::a", hlim=63, fl=0x12345)
        / UDP(sport=40000, dport=9)
        / Raw(bytes(range(256)) * 6)
    )
    packet = bytes(big)
    assert len(packet) == 1584
    punts = (tagged(big), tagged(big)[: 1400 - 8])  # whole, and as BMv2 punts it
    for punted in punts:
        frame = parse(punted)
        assert frame is not None
        assert refusal(frame) is None
        error = icmp_error(PACKET_TOO_BIG, frame, "2001:db8:1::1", 64, mtu=1400)
        assert len(error) == 1280
        header = (
            bytes.fromhex("60000000")  # version 6, traffic class and flow label 0
            + (1280 - 40).to_bytes(2, "big")
            + bytes([58, 64])  # ICMPv6, hop limit 64
            + IPv6Network("2001:db8:1::1/128").network_address.packed
            + IPv6Network("2001:db8:1::a/128").network_address.packed
        )
        assert error[:40] == header
        assert error[40:42] == bytes([2, 0])  # type 2 (Packet Too Big), code 0
        assert error[44:48] == (1400).to_bytes(4, "big")  # the MTU
        assert error[48:] == packet[:1232]
        assert outer_checksums_ok(error, 6)
        p = IPv6(error)
        assert isinstance(p.payload, ICMPv6PacketTooBig)
        assert p.payload.mtu == 1400
    # A small packet too big (an MTU test's) is quoted whole.
    small = IPv6(src="2001:db8:1::a", dst="2001:db8:2::a") / UDP() / Raw(b"s" * 1300)
    frame = parse(tagged(small))
    assert frame is not None
    error = icmp_error(PACKET_TOO_BIG, frame, "2001:db8:1::1", 64, mtu=1280)
    assert (len(error), error[48:]) == (1280, bytes(small)[:1232])
    ipv4 = parse(tagged(IP(src="192.168.1.1", dst="10.9.9.9") / UDP()))
    assert ipv4 is not None
    with pytest.raises(ValueError, match="ICMPv6 error: IPv4 is not checked"):
        icmp_error(PACKET_TOO_BIG, ipv4, "192.168.1.254", 64, mtu=1400)


def test_a_short_frames_padding_is_not_quoted() -> None:
    probe = IP(src="192.168.1.1", dst="10.9.9.9", ttl=1) / UDP()
    raw = tagged(probe) + bytes(30)  # (Ethernet padding)
    frame = parse(raw)
    assert frame is not None
    assert frame.raw == bytes(probe)


@pytest.mark.parametrize(
    ("packet", "dst_mac", "why"),
    [
        (
            IP(src="192.168.1.1", dst="10.9.9.9") / ICMP(type=11) / IP() / UDP(),
            GW_MAC,
            "an ICMP error",
        ),
        (IP(src="192.168.1.1", dst="10.9.9.9") / ICMP(type=3, code=1), GW_MAC, "an ICMP error"),
        (
            IPv6(src="2001:db8:1::a", dst="2001:db8:9::9") / ICMPv6DestUnreach() / IPv6(),
            GW_MAC,
            "an ICMP error",
        ),
        (
            IP(src="192.168.1.1", dst="224.0.0.5") / UDP(),
            GW_MAC,
            "a multicast or broadcast destination",
        ),
        (
            IP(src="192.168.1.1", dst="255.255.255.255") / UDP(),
            GW_MAC,
            "a multicast or broadcast destination",
        ),
        (
            IP(src="192.168.1.1", dst="192.168.2.255") / UDP(),
            GW_MAC,
            "a multicast or broadcast destination",
        ),
        (
            IP(src="192.168.1.1", dst="10.9.9.9") / UDP(),
            "ff:ff:ff:ff:ff:ff",
            "a multicast or broadcast frame",
        ),
        (
            IPv6(src="2001:db8:1::a", dst="ff05::2") / UDP(),
            GW_MAC,
            "a multicast or broadcast destination",
        ),
        (
            IP(src="192.168.1.1", dst="10.9.9.9", frag=185) / Raw(b"a" * 8),
            GW_MAC,
            "a fragment other than the first",
        ),
        (
            IPv6(src="2001:db8:1::a", dst="2001:db8:9::9")
            / IPv6ExtHdrFragment(offset=10)
            / Raw(b"b" * 8),
            GW_MAC,
            "a fragment other than the first",
        ),
        (
            IP(src="0.0.0.0", dst="10.9.9.9") / UDP(),
            GW_MAC,
            "a source that is no host (unspecified (this network))",
        ),
        (
            IP(src="224.1.1.1", dst="10.9.9.9") / UDP(),
            GW_MAC,
            "a source that is no host (multicast)",
        ),
        (
            IPv6(src="::", dst="2001:db8:9::9") / UDP(),
            GW_MAC,
            "a source that is no host (unspecified)",
        ),
        (
            IPv6(src="ff02::1", dst="2001:db8:9::9") / UDP(),
            GW_MAC,
            "a source that is no host (multicast)",
        ),
    ],
)
def test_no_error_is_ever_sent_about(packet: Packet, dst_mac: str, why: str) -> None:
    frame = parse(bytes(Ether(src=VM_MAC, dst=dst_mac) / Dot1Q(vlan=10) / packet))
    assert frame is not None
    assert refusal(frame, frozenset({"192.168.2.255"})) == why


def test_a_first_fragment_gets_its_error() -> None:
    whole = IP(src="192.168.1.1", dst="10.9.9.9", ttl=1, id=5) / UDP() / Raw(b"c" * 3000)
    first = fragment(whole, 1480)[0]
    frame = parse(tagged(first))
    assert frame is not None
    assert refusal(frame) is None


# --- echo -----------------------------------------------------------------------------


def reply_of(packets: list[bytes], version: int) -> Packet:
    assert len(packets) == 1
    return IP(packets[0]) if version == 4 else IPv6(packets[0])


def test_ipv4_echo_with_options_is_answered_without_them() -> None:
    request = IP(src="192.168.1.1", dst="192.168.1.254", ttl=64, options=[IPOption_RR()])
    request = request / ICMP(type=8, id=0x1234, seq=7) / Raw(b"ping-data")
    frame = parse(tagged(request))
    assert frame is not None
    packets = EchoResponder().reply("s", frame, 64, 9000, 0.0)
    p = reply_of(packets, 4)
    assert (p.src, p.dst, p.ttl, p.ihl, p.flags, p.frag) == (
        "192.168.1.254",
        "192.168.1.1",
        64,
        5,
        0,
        0,
    )
    assert (p[ICMP].type, p[ICMP].code, p[ICMP].id, p[ICMP].seq) == (0, 0, 0x1234, 7)
    assert bytes(p[ICMP].payload) == b"ping-data"
    assert outer_checksums_ok(packets[0], 4)


def test_ttl_1_echo_to_the_gateway_is_answered() -> None:
    request = IP(src="192.168.1.1", dst="192.168.1.254", ttl=1) / ICMP(type=8, id=1, seq=1) / b"t"
    frame = parse(tagged(request))
    assert frame is not None
    p = reply_of(EchoResponder().reply("s", frame, 64, 9000, 0.0), 4)
    assert (p[ICMP].type, p.ttl, bytes(p[ICMP].payload)) == (0, 64, b"t")


def test_a_fragmented_ipv4_echo_is_reassembled_and_the_reply_fits_the_mtu() -> None:
    data = bytes(range(256)) * 12  # 3072 bytes
    request = (
        IP(src="192.168.1.1", dst="192.168.1.254", id=99) / ICMP(type=8, id=5, seq=6) / Raw(data)
    )
    parts = fragment(request, 1200)
    assert len(parts) == 3
    echo = EchoResponder()
    # (out of order: the last first)
    assert echo.reply("s", parse(tagged(parts[2])), 64, 1500, 0.0) == []  # type: ignore[arg-type]
    assert echo.reply("s", parse(tagged(parts[0])), 64, 1500, 0.1) == []  # type: ignore[arg-type]
    assert echo.pending() == 1
    packets = echo.reply("s", parse(tagged(parts[1])), 64, 1500, 0.2)  # type: ignore[arg-type]
    assert echo.pending() == 0
    assert len(packets) == 3
    assert all(len(p) <= 1500 for p in packets)
    pieces = [IP(p) for p in packets]
    assert all(p.id == pieces[0].id and p.src == "192.168.1.254" for p in pieces)
    assert [p.flags.MF for p in pieces] == [1, 1, 0]
    payload = b"".join(bytes(p.payload) for p in sorted(pieces, key=lambda p: p.frag))
    icmp = ICMP(payload)
    assert (icmp.type, icmp.id, icmp.seq, bytes(icmp.payload)) == (0, 5, 6, data)
    assert icmp.chksum == ICMP(bytes(ICMP(type=0, id=5, seq=6) / Raw(data))).chksum
    assert all(ip_checksum_ok(p) for p in packets)


def test_a_fragmented_ipv6_echo_is_reassembled_and_fragmented_back() -> None:
    data = b"v6" * 1500
    request = IPv6(src="2001:db8:1::a", dst="2001:db8:1::1") / IPv6ExtHdrFragment(id=42)
    request = request / ICMPv6EchoRequest(id=3, seq=4, data=data)
    parts = fragment6(request, 1280)
    echo = EchoResponder()
    out: list[bytes] = []
    for part in parts:
        frame = parse(tagged(part))
        assert frame is not None
        out = echo.reply("s", frame, 64, 1500, 0.0)
    assert len(out) == 3
    assert all(len(p) <= 1500 for p in out)
    pieces = [IPv6(p) for p in out]
    assert all(
        p.src == "2001:db8:1::1" and p.dst == "2001:db8:1::a" and p.hlim == 64 for p in pieces
    )
    ident = pieces[0][IPv6ExtHdrFragment].id
    assert all(p[IPv6ExtHdrFragment].id == ident for p in pieces)
    from scapy.layers.inet6 import defragment6

    whole = defragment6(pieces)
    reply = whole[ICMPv6EchoReply]
    assert (reply.id, reply.seq, bytes(reply.data)) == (3, 4, data)
    expected = IPv6(
        bytes(
            IPv6(src="2001:db8:1::1", dst="2001:db8:1::a") / ICMPv6EchoReply(id=3, seq=4, data=data)
        )
    )
    assert reply.cksum == expected[ICMPv6EchoReply].cksum


def test_link_local_gateway_echo_is_answered_from_it() -> None:
    request = IPv6(src="fe80::200:aff:fe00:1", dst=GW_LLA, hlim=1) / ICMPv6EchoRequest(
        id=9, seq=1, data=b"ll"
    )
    frame = parse(tagged(request))
    assert frame is not None
    p = reply_of(EchoResponder().reply("s", frame, 64, 9000, 0.0), 6)
    assert (p.src, p.dst, p.hlim) == (GW_LLA, "fe80::200:aff:fe00:1", 64)
    assert isinstance(p.payload, ICMPv6EchoReply)
    assert bytes(p.payload.data) == b"ll"
    assert outer_checksums_ok(bytes(p), 6)


def test_reassembly_is_bounded_in_time_and_datagrams() -> None:
    echo = EchoResponder(window=30.0, datagrams_max=2)
    for ident in range(3):
        request = (
            IP(src="192.168.1.1", dst="192.168.1.254", id=ident) / ICMP(type=8) / Raw(b"d" * 3000)
        )
        first = fragment(request, 1480)[0]
        assert echo.reply("s", parse(tagged(first)), 64, 1500, float(ident)) == []  # type: ignore[arg-type]
    assert echo.pending() == 2  # the oldest went
    late = IP(src="192.168.1.1", dst="192.168.1.254", id=7) / ICMP(type=8) / Raw(b"d" * 3000)
    echo.reply("s", parse(tagged(fragment(late, 1480)[0])), 64, 1500, 100.0)  # type: ignore[arg-type]
    assert echo.pending() == 1  # the others timed out


def test_overlapping_fragments_drop_the_datagram() -> None:
    request = IP(src="192.168.1.1", dst="192.168.1.254", id=3) / ICMP(type=8) / Raw(b"o" * 3000)
    first = fragment(request, 1480)[0]
    echo = EchoResponder()
    echo.reply("s", parse(tagged(first)), 64, 1500, 0.0)  # type: ignore[arg-type]
    with pytest.raises(Ignored, match="overlap"):
        echo.reply("s", parse(tagged(first)), 64, 1500, 0.1)  # type: ignore[arg-type]
    assert echo.pending() == 0


def test_not_an_echo_request_is_ignored() -> None:
    frame = parse(tagged(IP(src="192.168.1.1", dst="192.168.1.254") / UDP(dport=53)))
    assert frame is not None
    with pytest.raises(Ignored, match="not an echo request"):
        EchoResponder().reply("s", frame, 64, 9000, 0.0)


# --- router advertisements -------------------------------------------------------------


def content(**settings: object) -> RaContent:
    return RaContent(
        GW_MAC,
        GW_LLA,
        RouterAdvertisements(**settings),  # type: ignore[arg-type]
        (
            AdvertisedPrefix(IPv6Network("2001:db8:1::/64"), True, False),
            AdvertisedPrefix(IPv6Network("2001:db8:5::/64"), False, True),
        ),
    )


def test_a_router_advert_field_by_field() -> None:
    frame = router_advert(
        content(router_lifetime=1800, mtu=9000, managed=True), 10, "33:33:00:00:00:01", "ff02::1"
    )
    p = Ether(frame)
    assert (p.src, p.dst, p[Dot1Q].vlan, p[Dot1Q].type) == (GW_MAC, "33:33:00:00:00:01", 10, 0x86DD)
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == (GW_LLA, "ff02::1", 255)
    ra = p[ICMPv6ND_RA]
    assert (
        ra.code,
        ra.chlim,
        ra.M,
        ra.O,
        ra.prf,
        ra.routerlifetime,
        ra.reachabletime,
        ra.retranstimer,
    ) == (
        0,
        64,
        1,
        0,
        0,
        1800,
        0,
        0,
    )
    assert p[ICMPv6NDOptSrcLLAddr].lladdr == GW_MAC
    assert p[ICMPv6NDOptMTU].mtu == 9000
    first = p[ICMPv6NDOptPrefixInfo]
    second = first.payload
    assert (first.prefix, first.prefixlen, first.L, first.A) == ("2001:db8:1::", 64, 1, 0)
    assert (second.prefix, second.prefixlen, second.L, second.A) == ("2001:db8:5::", 64, 0, 1)
    assert (first.validlifetime, first.preferredlifetime) == (2592000, 604800)
    assert outer_checksums_ok(bytes(p[IPv6]), 6)


def test_a_router_advert_is_scapys_frame_whatever_the_vlan() -> None:
    """The advert is built once per VNI and destination and re-tagged per VF:
    each VF's frame must be the one scapy builds with that VF's tag."""
    c = content(router_lifetime=1800, mtu=9000, managed=True)
    for vlan in (1, 10, 255, 256, 2049, 4094):
        for dst_mac, dst_ip in (("33:33:00:00:00:01", "ff02::1"), (VM_MAC, "fe80::5")):
            whole = (
                Ether(dst=dst_mac, src=GW_MAC)
                / Dot1Q(vlan=vlan)
                / IPv6(src=GW_LLA, dst=dst_ip, hlim=255)
            )
            got = Ether(router_advert(c, vlan, dst_mac, dst_ip))
            assert bytes(got) == bytes(whole / got[ICMPv6ND_RA].copy())
            assert got[Dot1Q].vlan == vlan
            assert outer_checksums_ok(bytes(got[IPv6]), 6)


def test_solicitations_are_checked() -> None:
    good = (
        IPv6(src="fe80::1", dst="ff02::2", hlim=255)
        / ICMPv6ND_RS()
        / ICMPv6NDOptSrcLLAddr(lladdr=VM_MAC)
    )
    assert solicitation_problem(parse(tagged(good))) is None  # type: ignore[arg-type]
    low = IPv6(src="fe80::1", dst="ff02::2", hlim=64) / ICMPv6ND_RS()
    assert solicitation_problem(parse(tagged(low))) == "an invalid router solicitation"  # type: ignore[arg-type]
    unspecified = (
        IPv6(src="::", dst="ff02::2", hlim=255)
        / ICMPv6ND_RS()
        / ICMPv6NDOptSrcLLAddr(lladdr=VM_MAC)
    )
    assert solicitation_problem(parse(tagged(unspecified))) == "an invalid router solicitation"  # type: ignore[arg-type]
