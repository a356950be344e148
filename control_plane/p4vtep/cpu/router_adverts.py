"""Router advertisements from the anycast gateway (RFC 4861 6.2), per
routed VNI with IPv6 subnets, to each local VM's VF: never over VXLAN (every
ToR advertises to its own VMs, the same gateway everywhere).

An advert comes from the gateway's link-local address (the modified EUI-64
of the anycast MAC, as ND suppression answers for it), with hop limit 255,
the anycast MAC as source link-layer address, the VNI's MTU and a prefix
information option per IPv6 subnet (L and A as the subnet says).

``RaSchedule`` decides when: unsolicited every MaxRtrAdvInterval/3 to
MaxRtrAdvInterval at random (the first three at most 16 s apart, the first
within 16 s of a VF appearing), multicast adverts at least 3 s apart per VF
(MIN_DELAY_BETWEEN_RAS), and an answer to each solicitation at once
(within MAX_RA_DELAY_TIME, 0.5 s): unicast to the VM when it solicited from
an address, else multicast, held back to keep the 3 s.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import random
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from ipaddress import IPv6Network
from typing import Generic, TypeVar

from scapy.layers.inet6 import (
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptMTU,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet

from ..model.fabric import RouterAdvertisements
from .icmp_errors import icmpv6_of
from .parse import IpFrame

ALL_NODES = "ff02::1"
ALL_NODES_MAC = "33:33:00:00:00:01"
ND_HOP_LIMIT = 255
CUR_HOP_LIMIT = 64  # AdvCurHopLimit: what a VM should put on what it sends
VALID_LIFETIME = 2592000  # AdvValidLifetime: 30 days (RFC 4861 6.2.1)
PREFERRED_LIFETIME = 604800  # AdvPreferredLifetime: 7 days
# RFC 4861 10.
MAX_INITIAL_RTR_ADVERT_INTERVAL = 16.0
MAX_INITIAL_RTR_ADVERTISEMENTS = 3
MIN_DELAY_BETWEEN_RAS = 3.0


@dataclass(frozen=True)
class AdvertisedPrefix:
    network: IPv6Network
    on_link: bool  # L
    autonomous: bool  # A (SLAAC)


@dataclass(frozen=True)
class RaContent:
    """What one VNI's adverts say (the same to each of its VFs)."""

    gateway_mac: str  # the anycast gateway MAC
    gateway_lla: str  # its link-local address: the adverts' source
    settings: RouterAdvertisements
    prefixes: tuple[AdvertisedPrefix, ...]


def router_advert(content: RaContent, vlan: int, dst_mac: str, dst_ip: str) -> bytes:
    """An advert as it leaves the VM's VF port: tagged with ``vlan``."""
    untagged = _advert_frame(content, dst_mac, dst_ip)
    # Every VF of a VNI gets the same frame but for its tag (the checksum
    # covers IPv6 and ICMPv6 only): scapy builds it once per VNI and
    # destination, at about 0.7 ms a frame (10,000 VFs' first adverts after
    # a controller start were 7 CPU-s), and the VID goes into the built
    # 802.1Q tag (bytes 14-15, priority and DEI 0 as scapy leaves them).
    return untagged[:14] + (vlan & 0xFFF).to_bytes(2, "big") + untagged[16:]


@functools.lru_cache(maxsize=1024)
def _advert_frame(content: RaContent, dst_mac: str, dst_ip: str) -> bytes:
    s = content.settings
    ra = ICMPv6ND_RA(
        chlim=CUR_HOP_LIMIT,
        M=int(s.managed),
        O=int(s.other),
        prf=0,  # medium (RFC 4191)
        routerlifetime=s.router_lifetime,
        reachabletime=0,  # (unspecified: the VM keeps its own)
        retranstimer=0,
    )
    options: Packet = ICMPv6NDOptSrcLLAddr(lladdr=content.gateway_mac) / ICMPv6NDOptMTU(mtu=s.mtu)
    for prefix in content.prefixes:
        options = options / ICMPv6NDOptPrefixInfo(
            prefixlen=prefix.network.prefixlen,
            L=int(prefix.on_link),
            A=int(prefix.autonomous),
            validlifetime=VALID_LIFETIME,
            preferredlifetime=PREFERRED_LIFETIME,
            prefix=str(prefix.network.network_address),
        )
    return bytes(
        Ether(dst=dst_mac, src=content.gateway_mac)
        / Dot1Q(vlan=0)
        / IPv6(src=content.gateway_lla, dst=dst_ip, hlim=ND_HOP_LIMIT)
        / ra
        / options
    )


def is_solicitation(frame: IpFrame) -> bool:
    """Whether a punted frame is a Router Solicitation, valid or not."""
    return frame.version == 6 and isinstance(icmpv6_of(frame.ip), ICMPv6ND_RS)


def solicitation_problem(frame: IpFrame) -> str | None:
    """Why a punted frame is not a valid Router Solicitation to answer
    (RFC 4861 6.1.1: hop limit 255, code 0, no source link-layer option
    from the unspecified address)."""
    if frame.version != 6:
        return "not IPv6"
    rs = icmpv6_of(frame.ip)
    if not isinstance(rs, ICMPv6ND_RS):
        return "not a router solicitation"
    if int(frame.ip.hlim) != ND_HOP_LIMIT or int(rs.code) != 0:
        return "an invalid router solicitation"
    if frame.src == "::" and rs.haslayer(ICMPv6NDOptSrcLLAddr):
        return "an invalid router solicitation"
    return None


@dataclass
class _Vf:
    next_due: float
    last_multicast: float | None = None
    sent: int = 0  # unsolicited adverts so far (the first few come sooner)
    generation: int = 0  # (heap entries of older generations are stale)


K = TypeVar("K", bound=Hashable)


class RaSchedule(Generic[K]):
    """When each VF gets its next multicast advert. Keys are the caller's
    (e.g. (ToR, port, VLAN)); each key's interval is the caller's too.
    The clock is the caller's: every method takes ``now``."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng if rng is not None else random.Random()
        self._vfs: dict[K, _Vf] = {}
        self._interval: dict[K, float] = {}
        self._heap: list[tuple[float, int, K, int]] = []
        self._seq = itertools.count()

    def _push(self, key: K, vf: _Vf, due: float) -> None:
        vf.next_due = due
        vf.generation += 1
        heapq.heappush(self._heap, (due, next(self._seq), key, vf.generation))

    def _next_interval(self, key: K, vf: _Vf) -> float:
        top = self._interval[key]
        interval = self.rng.uniform(top / 3, top)  # MinRtrAdvInterval: a third
        if vf.sent < MAX_INITIAL_RTR_ADVERTISEMENTS:
            interval = min(interval, MAX_INITIAL_RTR_ADVERT_INTERVAL)
        return interval

    def set_vfs(self, vfs: Iterable[tuple[K, float]], now: float) -> None:
        """The VFs that advertise now, each with its MaxRtrAdvInterval: a
        new one gets its first advert within 16 s (spread at random, so a
        start does not send all at once); one gone is forgotten."""
        wanted = dict(vfs)
        for key in [k for k in self._vfs if k not in wanted]:
            del self._vfs[key]
            del self._interval[key]
        for key, interval in wanted.items():
            self._interval[key] = interval
            if key not in self._vfs:
                vf = self._vfs[key] = _Vf(now)
                first = self.rng.uniform(0, min(interval, MAX_INITIAL_RTR_ADVERT_INTERVAL))
                self._push(key, vf, now + first)

    def due(self, now: float) -> list[K]:
        """The VFs whose multicast advert is due, in order; each is then
        counted as sent and given its next time."""
        out = []
        while self._heap and self._heap[0][0] <= now:
            _, _, key, generation = heapq.heappop(self._heap)
            vf = self._vfs.get(key)
            if vf is None or vf.generation != generation:
                continue
            if vf.last_multicast is not None and now - vf.last_multicast < MIN_DELAY_BETWEEN_RAS:
                self._push(key, vf, vf.last_multicast + MIN_DELAY_BETWEEN_RAS)
                continue  # (a solicited one went out just now)
            out.append(key)
            vf.last_multicast = now
            vf.sent += 1
            self._push(key, vf, now + self._next_interval(key, vf))
        return out

    def solicited_multicast(self, key: K, now: float) -> bool:
        """A solicitation from the unspecified address asks for a multicast
        advert: True to send it now; False when one went out less than 3 s
        ago (the next is then brought forward to 3 s after it, RFC 4861
        6.2.6)."""
        vf = self._vfs.get(key)
        if vf is None:
            return False
        if vf.last_multicast is None or now - vf.last_multicast >= MIN_DELAY_BETWEEN_RAS:
            vf.last_multicast = now
            return True
        soonest = vf.last_multicast + MIN_DELAY_BETWEEN_RAS
        if vf.next_due > soonest:
            self._push(key, vf, soonest)
        return False

    def next_due(self) -> float | None:
        """When the next advert is due (None: no VF advertises); stale
        entries may make it early, never late."""
        return self._heap[0][0] if self._heap else None

    def __contains__(self, key: K) -> bool:
        return key in self._vfs

    def __len__(self) -> int:
        return len(self._vfs)
