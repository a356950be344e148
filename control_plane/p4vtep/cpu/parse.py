"""A punted frame taken apart: its Ethernet addresses, its VF tag, and the
IP packet it carries, both as scapy parsed it and as the bytes received
(an ICMP error quotes those, not scapy's rebuild of them)."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet

ETHER_HEADER = 14
VLAN_TAG = 4


@dataclass(frozen=True)
class IpFrame:
    src_mac: str
    dst_mac: str
    vlan: int  # the outer VF tag, 0 if untagged
    version: int  # 4 or 6
    ip: Packet  # scapy's IP or IPv6 layer (and what follows)
    raw: bytes  # the IP packet as received: to its length field, or truncated
    truncated: bool = False  # shorter than its length field (the punt cut it)

    @property
    def src(self) -> str:
        return str(self.ip.src)

    @property
    def dst(self) -> str:
        return str(self.ip.dst)

    @property
    def source(self) -> IPv4Address | IPv6Address:
        return ip_address(self.src)

    @property
    def destination(self) -> IPv4Address | IPv6Address:
        return ip_address(self.dst)

    def fragment_offset(self) -> int:
        """The fragment offset (8-byte units); 0 for an unfragmented packet
        or a first fragment."""
        if self.version == 4:
            return int(self.ip.frag)
        header = self.ip.getlayer(IPv6ExtHdrFragment)
        return 0 if header is None else int(header.offset)

    def fragmented(self) -> bool:
        if self.version == 4:
            return bool(int(self.ip.flags) & 1) or int(self.ip.frag) != 0
        return bool(self.ip.haslayer(IPv6ExtHdrFragment))


def parse(frame: bytes) -> IpFrame | None:
    """The IPv4 or IPv6 packet in an Ethernet frame (with up to two VLAN
    tags); None for anything else or a frame too short to hold its header."""
    try:
        ether = Ether(frame)
    except Exception:  # noqa: BLE001 (scapy raises what its dissectors raise)
        return None
    offset = ETHER_HEADER
    vlan = 0
    layer = ether.payload
    while isinstance(layer, Dot1Q):
        if offset == ETHER_HEADER:
            vlan = int(layer.vlan)
        offset += VLAN_TAG
        layer = layer.payload
    if isinstance(layer, IP):
        version, header = 4, 20
        length = int(layer.len) if layer.len is not None else 0
    elif isinstance(layer, IPv6):
        version, header = 6, 40
        length = 40 + (int(layer.plen) if layer.plen is not None else 0)
    else:
        return None
    raw = frame[offset:]
    if len(raw) < header:
        return None
    # (a short frame is padded to 60 bytes: the packet ends at its length)
    truncated = len(raw) < length
    if length >= header:
        raw = raw[:length]
    return IpFrame(str(ether.src), str(ether.dst), vlan, version, layer, raw, truncated)
