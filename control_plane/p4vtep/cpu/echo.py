"""Echo replies from the gateway for the requests the data plane punts
instead of answering: IPv4 with options, fragmented requests (IPv4, and
IPv6 behind a fragment header), and requests whose TTL or hop limit ran
out on the way to a gateway address (punted as ttl_expired: a host answers
what is addressed to it, it does not report its expiry).

Fragments are reassembled (scapy's ``defragment``/``defragment6``) within a
bounded buffer and time window: at most ``DATAGRAMS_MAX`` datagrams being
reassembled at once (the oldest goes), ``FRAGMENTS_MAX`` fragments and
65,535 bytes each, ``WINDOW`` seconds from the first fragment; overlapping
fragments drop the datagram (RFC 5722). The reply is fragmented to fit the
sender's subnet MTU. IP options are not reflected (RFC 1122 3.2.2.6's
SHOULD): the reply carries none.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from scapy.layers.inet import ICMP, IP, defragment, fragment
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrFragment,
    defragment6,
    fragment6,
)
from scapy.packet import Packet, Raw

from .frames import Ignored
from .icmp_errors import icmpv6_of
from .parse import IpFrame

WINDOW = 30.0  # s from a datagram's first fragment (Linux's ipfrag_time)
DATAGRAMS_MAX = 64
FRAGMENTS_MAX = 64
DATAGRAM_MAX = 65535  # bytes of an IPv4 datagram; an IPv6 payload's most without a jumbogram
ECHO_REQUEST, ECHO_REPLY = 8, 0
PROTO_ICMP, NH_ICMPV6 = 1, 58

# scapy's (un-annotated) fragmentation helpers, typed as they are used here.
_fragment: Callable[..., list[Packet]] = fragment
_fragment6: Callable[..., list[Packet]] = fragment6
_defragment: Callable[[list[Packet]], list[Packet]] = defragment
_defragment6: Callable[[list[Packet]], Packet] = defragment6


def echo_request(ip: Packet, version: int) -> Packet | None:
    """The echo request message of an unfragmented IP packet, else None."""
    if version == 4:
        icmp = ip.getlayer(ICMP)
        if int(ip.proto) != PROTO_ICMP or icmp is None or int(icmp.type) != ECHO_REQUEST:
            return None
        return icmp if int(icmp.code) == 0 else None
    message = icmpv6_of(ip)
    return message if isinstance(message, ICMPv6EchoRequest) else None


def _reply(ip: Packet, version: int, ttl: int, ident: int) -> Packet:
    """The reply to an (unfragmented or reassembled) echo request, from the
    address it was sent to."""
    request = echo_request(ip, version)
    if request is None:
        raise Ignored("to the gateway, not an echo request")
    if version == 4:
        header: Packet = IP(src=ip.dst, dst=ip.src, ttl=ttl, id=ident)
        icmp = ICMP(type=ECHO_REPLY, code=0, id=request.id, seq=request.seq)
        return header / icmp / Raw(bytes(request.payload))
    header6: Packet = IPv6(src=ip.dst, dst=ip.src, hlim=ttl)
    return header6 / ICMPv6EchoReply(id=request.id, seq=request.seq, data=bytes(request.data))


def fit(packet: Packet, version: int, mtu: int, ident: int) -> list[bytes]:
    """``packet`` as it goes out: whole if it fits ``mtu``, else fragmented."""
    if len(packet) <= mtu:
        return [bytes(packet)]
    if version == 4:
        # (the reply has no options: a 20-byte header in front of each part)
        return [bytes(f) for f in _fragment(packet, fragsize=(mtu - 20) // 8 * 8)]
    header = packet[IPv6]
    whole = (
        IPv6(src=header.src, dst=header.dst, hlim=header.hlim)
        / IPv6ExtHdrFragment(id=ident)
        / header.payload
    )
    return [bytes(f) for f in _fragment6(whole, mtu)]


@dataclass
class _Datagram:
    first_seen: float
    fragments: list[Packet] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)  # [start, end) of payload bytes
    total: int | None = None  # payload length, once the last fragment came

    def complete(self) -> bool:
        if self.total is None:
            return False
        reach = 0
        for start, end in sorted(self.ranges):
            if start > reach:
                return False
            reach = max(reach, end)
        return reach >= self.total


class EchoResponder:
    """Echo replies, with the reassembly state that fragmented requests need."""

    def __init__(
        self,
        window: float = WINDOW,
        datagrams_max: int = DATAGRAMS_MAX,
        fragments_max: int = FRAGMENTS_MAX,
    ) -> None:
        self.window = window
        self.datagrams_max = datagrams_max
        self.fragments_max = fragments_max
        self._pending: OrderedDict[Hashable, _Datagram] = OrderedDict()
        self._ids = itertools.count(1)

    def _ident(self) -> int:
        return next(self._ids) & 0xFFFF or next(self._ids) & 0xFFFF

    def reply(self, scope: Hashable, frame: IpFrame, ttl: int, mtu: int, now: float) -> list[bytes]:
        """The IP packets (fragments, or one) answering the echo request in
        ``frame``; [] while a fragmented request is still incomplete.
        Ignored when ``frame`` is no echo request. ``scope`` keeps
        reassembly apart per ToR and VRF."""
        if frame.truncated:
            raise Ignored("truncated by the punt")
        whole = frame.ip if not frame.fragmented() else self._reassemble(scope, frame, now)
        if whole is None:
            return []
        ident = self._ident()
        return fit(_reply(whole, frame.version, ttl, ident), frame.version, mtu, ident)

    def _expire(self, now: float) -> None:
        while self._pending:
            key, oldest = next(iter(self._pending.items()))
            if now - oldest.first_seen < self.window:
                return
            del self._pending[key]

    def _reassemble(self, scope: Hashable, frame: IpFrame, now: float) -> Packet | None:
        self._expire(now)
        ip = IP(frame.raw) if frame.version == 4 else IPv6(frame.raw)
        if frame.version == 4:
            key: Hashable = (scope, 4, frame.src, frame.dst, int(ip.id), int(ip.proto))
            start = int(ip.frag) * 8
            length = int(ip.len) - int(ip.ihl) * 4
            last = not int(ip.flags) & 1
        else:
            header = ip[IPv6ExtHdrFragment]
            key = (scope, 6, frame.src, frame.dst, int(header.id))
            start = int(header.offset) * 8
            length = len(bytes(header.payload))
            last = not int(header.m)
        end = start + length
        datagram = self._pending.get(key)
        if datagram is None:
            if end > DATAGRAM_MAX:
                raise Ignored("fragment beyond the largest datagram")
            datagram = self._pending[key] = _Datagram(now)
            if len(self._pending) > self.datagrams_max:
                self._pending.popitem(last=False)
        if (
            end > DATAGRAM_MAX
            or len(datagram.fragments) >= self.fragments_max
            or any(start < e and s < end for s, e in datagram.ranges)
            or (datagram.total is not None and end > datagram.total)
            or (last and any(e > end for _, e in datagram.ranges))
        ):
            self._pending.pop(key, None)
            raise Ignored("fragments overlap or exceed the reassembly bounds")
        datagram.fragments.append(ip)
        datagram.ranges.append((start, end))
        if last:
            datagram.total = end
        if not datagram.complete():
            return None
        del self._pending[key]
        # (scapy takes them in offset order: it reads a jump back as an overlap)
        order = sorted(range(len(datagram.ranges)), key=lambda i: datagram.ranges[i])
        datagram.fragments = [datagram.fragments[i] for i in order]
        if frame.version == 4:
            done = _defragment(datagram.fragments)
            if len(done) != 1:
                raise Ignored("fragments do not reassemble")
            whole: Packet = IP(bytes(done[0]))
        else:
            whole = IPv6(bytes(_defragment6(datagram.fragments)))
        return whole

    def pending(self) -> int:
        """Datagrams being reassembled."""
        return len(self._pending)
