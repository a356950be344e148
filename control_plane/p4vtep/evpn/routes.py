"""EVPN routes as plain values (RFC 7432 section 7, VXLAN use per RFC 8365).

The route types a VXLAN fabric without multihoming needs: type 2 (MAC/IP
advertisement), type 3 (inclusive multicast Ethernet tag, with a PMSI tunnel
attribute of type ingress replication) and, for routed tenants (symmetric
IRB, RFC 9135 / RFC 9136), type 2 with a second label and type 5 (IP
prefix). The VNI travels in the MPLS label field (RFC 8365 section 5.1.3) and
in the PMSI tunnel label; a routed type 2 carries the L3 VNI as its second
label and a type 5 as its label, both with the Router's MAC extended
community (RFC 9135 8.1).

Route distinguishers and route targets are kept as canonical strings
("10.0.0.1:5000", "65000:5000"): they are compared, logged and shown far
more often than they are encoded, and the codec parses them once. So are
IP addresses and prefixes of both families, IPv6 in RFC 5952's form (the
model's: ``model.addressing.ipv6_text``), so a learned host's IP is the key
the compiler and our VMs use for the same address.

VTEPs (next hops, originators, tunnel endpoints) are IPv4. An IPv4-mapped
IPv6 text (``::ffff:10.0.0.1``) is taken for the IPv4 VTEP it maps: FRR
writes an IPv4 VTEP that way as the next hop of the IPv6 routes it imports
(``evpn_convert_nexthop_to_ipv6``), and Go's ``net.IP.String`` prints any
16-byte IPv4-mapped address as a dotted quad, so GoBGP hands us either.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Any

from ..model.addressing import NOT_IPV6_HOST_RANGES, ipv6_text

MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
VNI_MAX = (1 << 24) - 1
SINGLE_HOMED_ESI = "00:00:00:00:00:00:00:00:00:00"  # ESI type 0, value 0 (RFC 7432 5)
ESI_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){9}$")


class RouteError(ValueError):
    """A route that cannot be built or was received malformed."""


def canonical_mac(text: str) -> str:
    mac = text.strip().lower().replace("-", ":")
    if not MAC_RE.match(mac):
        raise RouteError(f"{text!r} is not a MAC address")
    return mac


def unicast_mac(text: str) -> str:
    """A MAC a VM can own: not multicast/broadcast (I/G bit clear), not zero."""
    mac = canonical_mac(text)
    if int(mac[:2], 16) & 1:
        raise RouteError(f"{mac} is a multicast or broadcast MAC")
    if mac == "00:00:00:00:00:00":
        raise RouteError("the zero MAC is not a host")
    return mac


def _ip_text(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return ipv6_text(ip) if isinstance(ip, ipaddress.IPv6Address) else str(ip)


def canonical_ip(text: str) -> str:
    """An IPv4 or IPv6 address, IPv6 in RFC 5952's form (IPv4-mapped ones
    as ``::ffff:192.0.2.1``, section 5)."""
    if type(text) is str and ":" not in text:
        try:  # (an IPv4 address already in its one form: every received host's)
            if socket.inet_ntop(socket.AF_INET, socket.inet_pton(socket.AF_INET, text)) == text:
                return text
        except OSError:
            pass
    try:
        return _ip_text(ipaddress.ip_address(str(text).strip()))
    except ValueError:
        raise RouteError(f"{text!r} is not an IP address") from None


def canonical_network(text: str) -> str:
    """An IP prefix as its canonical network (host bits cleared, IPv6 as
    ``canonical_ip``): ``2001:DB8:0:1::5/64`` is ``2001:db8:0:1::/64``."""
    try:
        network = ipaddress.ip_network(str(text).strip(), strict=False)
    except ValueError:
        raise RouteError(f"{text!r} is not an IP prefix") from None
    return f"{_ip_text(network.network_address)}/{network.prefixlen}"


def canonical_ipv4(text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(str(text).strip()))
    except ValueError:
        raise RouteError(f"{text!r} is not an IPv4 address") from None


@functools.lru_cache(maxsize=4096)
def canonical_vtep(text: str) -> str:
    """A VTEP's IPv4 address; also given as IPv4-mapped IPv6
    (``::ffff:10.0.0.1``: FRR's spelling, see the module's docstring)."""
    value = str(text).strip()
    if ":" in value:
        try:
            mapped = ipaddress.IPv6Address(value).ipv4_mapped
        except ValueError:
            mapped = None
        if mapped is not None:
            return str(mapped)
    return canonical_ipv4(value)


# IPv6 addresses that are never a routed host's: the model's (no VM's IPv6
# address lies in them: link-local, multicast, unspecified, loopback,
# IPv4-mapped) and the rest of ::/8, which the data plane drops with them
# as ``ipv6_scope`` (docs/routing.md). RFC 4291 2.5.6: link-local is never
# routed.
NEVER_ROUTED_IPV6 = (*NOT_IPV6_HOST_RANGES, (ipaddress.IPv6Network("::/8"), "::/8: reserved"))


def ipv6_scope(ip: str) -> str | None:
    """Why an IPv6 address is never a routed host's ("fe80::/10:
    link-local", from ``NEVER_ROUTED_IPV6``); None for an IPv4 address or
    any other IPv6 one."""
    if ":" not in ip:
        return None  # (IPv4)
    address = ipaddress.ip_address(ip)
    if address.version == 4:
        return None
    for network, what in NEVER_ROUTED_IPV6:
        if address in network:
            return what
    return None


def ipv6_prefix_scope(prefix: str) -> str | None:
    """``ipv6_scope`` for a prefix: the never-routed range it lies in (::/0
    lies in none)."""
    network = ipaddress.ip_network(prefix)
    if not isinstance(network, ipaddress.IPv6Network):
        return None
    for scope, what in NEVER_ROUTED_IPV6:
        if network.subnet_of(scope):
            return what
    return None


def check_vni(vni: int) -> int:
    if isinstance(vni, bool) or not isinstance(vni, int) or not 1 <= vni <= VNI_MAX:
        raise RouteError(f"VNI {vni!r} is outside 1..{VNI_MAX}")
    return vni


@dataclass(frozen=True, order=True)
class AdminValue:
    """The <administrator>:<assigned number> pair of an RD or RT (RFC 4364 4.2,
    RFC 4360 3.1). kind: 0 two-octet ASN, 1 IPv4 address, 2 four-octet ASN."""

    kind: int
    admin: str  # ASN in decimal or an IPv4 address
    assigned: int

    def __str__(self) -> str:
        return f"{self.admin}:{self.assigned}"


def parse_admin_value(text: str, what: str) -> AdminValue:
    """Parse "ASN:N" or "IPv4:N" with the field sizes of the three encodings."""
    admin, sep, number = str(text).strip().rpartition(":")
    if not sep or not number.isdigit():
        raise RouteError(f"{what} {text!r}: expected ASN:N or IPv4:N")
    assigned = int(number)
    if admin.isdigit():
        asn = int(admin)
        if asn <= 0xFFFF:
            if assigned > 0xFFFFFFFF:
                raise RouteError(f"{what} {text!r}: the number must fit 32 bits after a 2-byte ASN")
            return AdminValue(0, str(asn), assigned)
        if asn > 0xFFFFFFFF:
            raise RouteError(f"{what} {text!r}: the ASN must fit 32 bits")
        if assigned > 0xFFFF:
            raise RouteError(f"{what} {text!r}: the number must fit 16 bits after a 4-byte ASN")
        return AdminValue(2, str(asn), assigned)
    try:
        ip = ipaddress.IPv4Address(admin)
    except ValueError:
        raise RouteError(
            f"{what} {text!r}: {admin!r} is neither an ASN nor an IPv4 address"
        ) from None
    if assigned > 0xFFFF:
        raise RouteError(f"{what} {text!r}: the number must fit 16 bits after an IPv4 address")
    return AdminValue(1, str(ip), assigned)


@functools.lru_cache(maxsize=4096)
def canonical_rd(text: str) -> str:
    return str(parse_admin_value(text, "route distinguisher"))


@functools.lru_cache(maxsize=4096)
def canonical_rt(text: str) -> str:
    return str(parse_admin_value(text, "route target"))


@dataclass(frozen=True)
class MacIpRoute:
    """Route type 2: one MAC (and optionally one of its IPs) behind a VTEP."""

    rd: str
    mac: str
    vni: int  # label 1 (RFC 8365 5.1.3)
    next_hop: str  # the VTEP that owns the MAC
    ip: str | None = None
    route_targets: tuple[str, ...] = ()
    mobility_seq: int = 0  # MAC mobility extended community; 0 = absent (RFC 7432 7.7)
    sticky: bool = False  # static MAC: must not move (RFC 7432 15.2)
    esi: str = SINGLE_HOMED_ESI
    ethernet_tag: int = 0  # VLAN-based service: always 0 (RFC 8365 5.1.2)
    # Symmetric IRB (RFC 9135 5.1, 8.1): label 2 is the IP-VRF's L3 VNI, and
    # the Router's MAC extended community the inner destination MAC of
    # routed frames to this host's VTEP. Both absent on an L2-only route.
    l3vni: int | None = None
    router_mac: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rd", canonical_rd(self.rd))
        object.__setattr__(self, "mac", canonical_mac(self.mac))
        check_vni(self.vni)
        object.__setattr__(self, "next_hop", canonical_vtep(self.next_hop))
        if self.ip is not None:
            object.__setattr__(self, "ip", canonical_ip(self.ip))
        if self.l3vni is not None:
            check_vni(self.l3vni)
        if self.router_mac is not None:
            object.__setattr__(self, "router_mac", canonical_mac(self.router_mac))
        object.__setattr__(
            self, "route_targets", tuple(sorted({canonical_rt(t) for t in self.route_targets}))
        )
        if not 0 <= self.mobility_seq <= 0xFFFFFFFF:
            raise RouteError(f"MAC mobility sequence {self.mobility_seq} is outside 32 bits")
        if not ESI_RE.match(self.esi):
            raise RouteError(f"ESI {self.esi!r}: expected 10 colon-separated bytes")
        if not 0 <= self.ethernet_tag <= 0xFFFFFFFF:
            raise RouteError(f"Ethernet tag {self.ethernet_tag} is outside 32 bits")

    def nlri_key(self) -> tuple[object, ...]:
        """What identifies the route in BGP (RFC 7432 7.2: RD, Ethernet tag,
        MAC, IP; label and ESI are not part of the key); a withdrawal carries
        only this."""
        return (2, self.rd, self.ethernet_tag, self.mac, self.ip)


def mac_ip_route(**fields: Any) -> MacIpRoute:
    """A ``MacIpRoute`` of fields already in their canonical forms and
    checked, every one given (the codec's decode: it canonicalises each RD,
    next hop, route target and router MAC once per distinct encoding, and
    the MAC and IP per route), without ``__post_init__`` doing it again for
    each of a peer's thousands of routes. Equal to the route built the
    usual way from the same fields."""
    route = object.__new__(MacIpRoute)
    route.__dict__.update(fields)
    return route


@dataclass(frozen=True)
class InclusiveMulticastRoute:
    """Route type 3: the VTEP wants the VNI's BUM traffic, by ingress replication."""

    rd: str
    vni: int  # PMSI tunnel attribute label (RFC 8365 5.1.3)
    originator: str  # originating router's IP in the NLRI: the VTEP
    next_hop: str
    route_targets: tuple[str, ...] = ()
    ethernet_tag: int = 0
    tunnel_endpoint: str | None = None  # PMSI tunnel identifier, when not the originator

    def __post_init__(self) -> None:
        object.__setattr__(self, "rd", canonical_rd(self.rd))
        check_vni(self.vni)
        object.__setattr__(self, "originator", canonical_ipv4(self.originator))
        if self.tunnel_endpoint is not None:
            endpoint = canonical_ipv4(self.tunnel_endpoint)
            object.__setattr__(
                self, "tunnel_endpoint", None if endpoint == self.originator else endpoint
            )
        object.__setattr__(self, "next_hop", canonical_vtep(self.next_hop))
        object.__setattr__(
            self, "route_targets", tuple(sorted({canonical_rt(t) for t in self.route_targets}))
        )
        if not 0 <= self.ethernet_tag <= 0xFFFFFFFF:
            raise RouteError(f"Ethernet tag {self.ethernet_tag} is outside 32 bits")

    @property
    def vtep(self) -> str:
        """Where the VNI's BUM traffic for this VTEP goes (head-end replication)."""
        return self.tunnel_endpoint or self.originator

    def nlri_key(self) -> tuple[object, ...]:
        return (3, self.rd, self.ethernet_tag, self.originator)


@dataclass(frozen=True)
class IpPrefixRoute:
    """Route type 5 (RFC 9136), interface-less (section 4.4.1): an IP prefix
    of an IP-VRF behind a VTEP, label = the VRF's L3 VNI, the VTEP's router
    MAC in the Router's MAC extended community; ESI and gateway IP 0 (no
    overlay index)."""

    rd: str
    prefix: str  # "10.1.0.0/16", "2001:db8:1::/64": canonical network (host bits cleared)
    l3vni: int  # the label (RFC 8365 5.1.3)
    next_hop: str  # the VTEP
    route_targets: tuple[str, ...] = ()
    router_mac: str | None = None
    gateway_ip: str | None = None  # overlay index (RFC 9136 3.2), prefix's family; None = 0
    esi: str = SINGLE_HOMED_ESI  # overlay index when not 0
    ethernet_tag: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "rd", canonical_rd(self.rd))
        object.__setattr__(self, "prefix", canonical_network(self.prefix))
        check_vni(self.l3vni)
        object.__setattr__(self, "next_hop", canonical_vtep(self.next_hop))
        object.__setattr__(
            self, "route_targets", tuple(sorted({canonical_rt(t) for t in self.route_targets}))
        )
        if self.router_mac is not None:
            object.__setattr__(self, "router_mac", canonical_mac(self.router_mac))
        if self.gateway_ip is not None:
            object.__setattr__(self, "gateway_ip", _gateway(self.gateway_ip, self.ipv4))
        if not ESI_RE.match(self.esi):
            raise RouteError(f"ESI {self.esi!r}: expected 10 colon-separated bytes")
        if not 0 <= self.ethernet_tag <= 0xFFFFFFFF:
            raise RouteError(f"Ethernet tag {self.ethernet_tag} is outside 32 bits")

    @property
    def ipv4(self) -> bool:
        return ipaddress.ip_network(self.prefix).version == 4

    def nlri_key(self) -> tuple[object, ...]:
        """RD, Ethernet tag and the prefix (RFC 9136 3.1: the ESI, gateway IP
        and label are not part of the route's key)."""
        return (5, self.rd, self.ethernet_tag, self.prefix)


def _gateway(text: str, ipv4: bool) -> str | None:
    """A type 5's gateway IP (its overlay index, RFC 9136 3.2) in the
    prefix's family; None when it is zero, in either family.

    The NLRI carries the gateway in the prefix's family (RFC 9136 3.1: 4
    bytes beside an IPv4 prefix, 16 beside an IPv6 one), but GoBGP's text
    loses the family: Go prints a 16-byte IPv4-mapped address as a dotted
    quad (``net.IP.String`` takes ``To4()`` when it is not nil). So the
    gateway ``::ffff:0.0.0.0`` beside an IPv6 prefix reaches us as
    "0.0.0.0", and a ``::ffff:<VTEP>`` gateway as "<VTEP>". Both are taken
    in the prefix's family here, and ``::ffff:0.0.0.0`` counts as zero: it
    is what GoBGP itself puts on the wire for an IPv6 prefix given the
    gateway "0.0.0.0" (``NewEVPNIPPrefixRoute`` parses it to 16 bytes, and
    ``Serialize`` writes ``To16()`` of it), i.e. an interface-less route
    from a GoBGP-like speaker, not an overlay index anyone meant."""
    try:
        gateway = ipaddress.ip_address(str(text).strip())
    except ValueError:
        raise RouteError(f"gateway IP {text!r} is not an IP address") from None
    if isinstance(gateway, ipaddress.IPv6Address) and gateway.ipv4_mapped is not None:
        gateway = gateway.ipv4_mapped  # (the family is the prefix's; see above)
    if int(gateway) == 0:
        return None
    if ipv4:
        if gateway.version != 4:
            raise RouteError(f"gateway IP {text!r} of an IPv4 prefix is not an IPv4 address")
        return str(gateway)
    if isinstance(gateway, ipaddress.IPv4Address):
        return f"::ffff:{gateway}"
    return ipv6_text(gateway)


EvpnRoute = MacIpRoute | InclusiveMulticastRoute | IpPrefixRoute


def auto_route_target(asn: int, vni: int) -> str:
    """The auto-derived RT as FRR derives it, low 16 bits of the ASN : VNI, so
    a p4vtep fabric and FRR VTEPs agree without configuration. (RFC 8365
    5.1.2.1 packs type and domain bits above the VNI; FRR does not, and FRR is
    what we meet in the field.)"""
    return f"{asn & 0xFFFF}:{check_vni(vni)}"
