"""ICMP errors from the gateway: time exceeded and destination unreachable
(no route), IPv4 (RFC 792, RFC 1812 4.3.2) and IPv6 (RFC 4443), and
ICMPv6 Packet Too Big (RFC 4443 3.2; IPv6 only: IPv4's fragmentation needed
is not sent).

Each quotes as much of the offending packet as fits the error into 576
bytes (IPv4, RFC 1812 4.3.2.3) or 1280 bytes (IPv6, RFC 4443 2.4(c)), and
none is sent about an ICMP error, to a multicast or broadcast destination,
for a fragment other than the first, or to a source that is not one host
(RFC 1812 4.3.2.7, RFC 4443 2.4(e)): ``refusal`` says why not.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from scapy.layers.inet import ICMP, IP
from scapy.layers.inet6 import (
    ICMPv6DestUnreach,
    ICMPv6PacketTooBig,
    ICMPv6TimeExceeded,
    IPv6,
    _ICMPv6,
    _IPv6ExtHdr,
)
from scapy.packet import NoPayload, Packet, Raw

from .parse import IpFrame

IPV4_ERROR_MAX = 576
IPV6_ERROR_MAX = 1280
ICMP_HEADER = 8
# What an error quotes at most: the rest of its maximum size.
IPV4_QUOTE_MAX = IPV4_ERROR_MAX - 20 - ICMP_HEADER  # 548
IPV6_QUOTE_MAX = IPV6_ERROR_MAX - 40 - ICMP_HEADER  # 1232

# The hop count of what the gateway originates; one more when the data
# plane routes it (ROUTE mode decrements it as for any routed frame).
ORIGINATED_TTL = 64

# ICMPv4 error types (RFC 792, RFC 1812): unreachable, source quench,
# redirect, time exceeded, parameter problem. ICMPv6 errors are types 0-127.
ICMPV4_ERRORS = frozenset({3, 4, 5, 11, 12})
ICMPV6_ERROR_MAX_TYPE = 127
PROTO_ICMP = 1

TIME_EXCEEDED = "time_exceeded"
UNREACHABLE = "unreachable"
PACKET_TOO_BIG = "packet_too_big"  # (IPv6 only)

_NOT_A_V4_HOST = (
    (IPv4Network("0.0.0.0/8"), "unspecified (this network)"),
    (IPv4Network("127.0.0.0/8"), "loopback"),
    (IPv4Network("224.0.0.0/4"), "multicast"),
    (IPv4Network("240.0.0.0/4"), "reserved or broadcast"),
)
_NOT_A_V6_HOST = (
    (IPv6Network("::/128"), "unspecified"),
    (IPv6Network("::1/128"), "loopback"),
    (IPv6Network("ff00::/8"), "multicast"),
)


def _mac_is_group(mac: str) -> bool:
    return int(mac.split(":")[0], 16) & 1 == 1


def refusal(frame: IpFrame, broadcasts: frozenset[str] = frozenset()) -> str | None:
    """Why no ICMP error may be sent about ``frame`` (None: one may be).
    ``broadcasts``: the directed broadcast addresses of the VRF's IPv4 subnets."""
    if frame.fragment_offset() != 0:
        return "a fragment other than the first"
    if _is_icmp_error(frame):
        return "an ICMP error"
    destination, source = frame.destination, frame.source
    if _mac_is_group(frame.dst_mac):
        return "a multicast or broadcast frame"
    if destination.is_multicast or frame.dst == "255.255.255.255" or frame.dst in broadcasts:
        return "a multicast or broadcast destination"
    if frame.src in broadcasts:
        return "a broadcast source"
    ranges = _NOT_A_V4_HOST if isinstance(source, IPv4Address) else _NOT_A_V6_HOST
    for network, what in ranges:
        if source in network:
            return f"a source that is no host ({what})"
    return None


def _is_icmp_error(frame: IpFrame) -> bool:
    if frame.version == 4:
        icmp = frame.ip.getlayer(ICMP)
        return int(frame.ip.proto) == PROTO_ICMP and (
            icmp is None or int(icmp.type) in ICMPV4_ERRORS  # (a truncated one counts)
        )
    icmp6 = icmpv6_of(frame.ip)
    return icmp6 is not None and int(icmp6.type) <= ICMPV6_ERROR_MAX_TYPE


def icmpv6_of(ip6: Packet) -> Packet | None:
    """The ICMPv6 message of an IPv6 packet, behind its extension headers
    (scapy's getlayer does not take ICMPv6's base class)."""
    layer = ip6.payload
    while isinstance(layer, Packet) and not isinstance(layer, (NoPayload, Raw)):
        if isinstance(layer, _ICMPv6):
            return layer
        if not isinstance(layer, _IPv6ExtHdr):
            return None
        layer = layer.payload
    return None


def quote(frame: IpFrame) -> bytes:
    """The offending packet, as received, cut to what the error may carry."""
    return frame.raw[: IPV4_QUOTE_MAX if frame.version == 4 else IPV6_QUOTE_MAX]


def icmp_error(
    kind: str, frame: IpFrame, source: str, ttl: int = ORIGINATED_TTL, mtu: int = 0
) -> bytes:
    """The IP packet (no Ethernet header) of an error ``kind``
    (TIME_EXCEEDED, UNREACHABLE: no route, or PACKET_TOO_BIG with the
    next hop's ``mtu``, IPv6 only) from ``source`` to the sender of
    ``frame``; the caller has checked ``refusal``."""
    data = Raw(quote(frame))
    if kind == PACKET_TOO_BIG:
        if frame.version != 6:
            raise ValueError("packet too big is an ICMPv6 error: IPv4 is not checked")
        ip6 = IPv6(src=source, dst=frame.src, hlim=ttl)
        return bytes(ip6 / ICMPv6PacketTooBig(code=0, mtu=mtu) / data)
    if frame.version == 4:
        ip = IP(src=source, dst=frame.src, ttl=ttl, id=0)
        icmp = ICMP(type=11, code=0) if kind == TIME_EXCEEDED else ICMP(type=3, code=0)
        return bytes(ip / icmp / data)
    ip6 = IPv6(src=source, dst=frame.src, hlim=ttl)
    icmp6 = ICMPv6TimeExceeded(code=0) if kind == TIME_EXCEEDED else ICMPv6DestUnreach(code=0)
    return bytes(ip6 / icmp6 / data)


def is_unicast_v6(address: IPv6Address) -> bool:
    return not (address.is_multicast or address.is_unspecified or address.is_loopback)
