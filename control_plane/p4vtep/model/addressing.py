"""Field rules every checker shares: the VNI range, and what a host's MAC, a
host's IP address (IPv4 or IPv6) and a network may be. Each ``*_problem``
returns why a value is wrong, or None if it is right.

A text with a colon is read as IPv6, any other as IPv4 (so a wrong IPv4
address is still called "not an IPv4 address"). IPv6 is kept and shown in
its canonical form (RFC 5952: ``canonical_ip``); the inputs store that form
and the checks refuse any other spelling, so two spellings of one address
never count as two."""

from __future__ import annotations

import re
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import TypeAlias

from ..dataplane import limits

IPAddress: TypeAlias = IPv4Address | IPv6Address
IPNetwork: TypeAlias = IPv4Network | IPv6Network

VNI_MIN = 1  # (VNI_MAX comes from the pipeline: dataplane/limits.py)
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
ZERO_MAC = "00:00:00:00:00:00"

# No host owns an address in these ranges, whatever its VNI (checked in this
# order: the broadcast address before the reserved range it lies in).
# Accepted: private (RFC 1918), shared (100.64.0.0/10), link-local
# (169.254.0.0/16: on-link only, e.g. a metadata service in an L2 VNI),
# documentation and public addresses.
NOT_HOST_RANGES: tuple[tuple[IPv4Network, str], ...] = (
    (IPv4Network("0.0.0.0/8"), "0.0.0.0/8: this network, unspecified"),
    (IPv4Network("127.0.0.0/8"), "127.0.0.0/8: loopback"),
    (IPv4Network("224.0.0.0/4"), "224.0.0.0/4: multicast"),
    (IPv4Network("255.255.255.255/32"), "the limited broadcast address"),
    (IPv4Network("240.0.0.0/4"), "240.0.0.0/4: reserved"),
)
# A routed subnet lies in none of them, nor in link-local space: routers do
# not forward 169.254.0.0/16 (RFC 3927 section 7).
NOT_ROUTED_RANGES = NOT_HOST_RANGES + (
    (IPv4Network("169.254.0.0/16"), "169.254.0.0/16: link-local, never routed"),
)


# IPv6. A VM's address is global unicast or unique local; a refused one is
# named by the first of these it lies in (IPv4-mapped lies outside both).
IPV6_HOST_RANGES = (IPv6Network("2000::/3"), IPv6Network("fc00::/7"))
IPV6_HOST_RULE = "only global unicast 2000::/3 and unique local fc00::/7 are"
NOT_IPV6_HOST_RANGES: tuple[tuple[IPv6Network, str], ...] = (
    (IPv6Network("::/128"), "::/128: unspecified"),
    (IPv6Network("::1/128"), "::1/128: loopback"),
    (IPv6Network("ff00::/8"), "ff00::/8: multicast"),
    (IPv6Network("fe80::/10"), "fe80::/10: link-local"),
    (IPv6Network("::ffff:0:0/96"), "::ffff:0:0/96: IPv4-mapped"),
)
# A routed IPv6 subnet is one link: /64 is the usual (RFC 4291's 64-bit
# interface identifiers, SLAAC; RFC 7421). Longer prefixes are taken for
# statically addressed VMs down to /126, the smallest with room for the
# subnet-router anycast address, the gateway and a VM (a /127 is a
# point-to-point link, RFC 6164: no gateway). Shorter than /48 is more than
# a whole site (RFC 6177; a unique local site is one /48, RFC 4193), most
# likely a typo for /64 (/6, /46).
IPV6_SUBNET_PREFIXLEN = (48, 126)
# Addresses of each family one VM may hold (8 IPv4 and 8 IPv6). Each is an
# ARP (ND) entry on every ToR with the VNI and a host route on every ToR
# holding the VRF: 8 is the ARP suppression table per VM slot
# (ARP_SUPPRESSION_TABLE_SIZE / VM_COUNT in p4src/v1model/sizes.p4, 65536 /
# 8192), so one VM cannot take the room of many.
IPS_PER_FAMILY_MAX = 8


def normalise_mac(mac: str) -> str:
    return mac.strip().lower().replace("-", ":")


def mac_problem(mac: str) -> str | None:
    """Why ``mac`` (normalised) cannot be a host's or a gateway's MAC."""
    if not MAC_RE.match(mac):
        return f"{mac!r} is not a MAC address"
    if int(mac[:2], 16) & 1:
        return f"{mac} is a multicast MAC"
    if mac == ZERO_MAC:
        return f"{mac} is the zero MAC, which no host has"
    return None


def ipv4(text: str) -> IPv4Address | None:
    """``text`` as an IPv4 address (dotted quad, no leading zeros), or None."""
    try:
        return IPv4Address(text)
    except ValueError:
        return None


def ipv6(text: str) -> IPv6Address | None:
    """``text`` as an IPv6 address (any valid spelling, no zone id), or None."""
    if "%" in text:
        return None
    try:
        return IPv6Address(text)
    except ValueError:
        return None


def ip_address(text: str) -> IPAddress | None:
    """``text`` as an IP address: IPv6 if it has a colon, else IPv4; or None."""
    return ipv6(text) if ":" in text else ipv4(text)


def not_an_address(text: str) -> str:
    """What ``text``, which ``ip_address`` refused, is not."""
    if ":" in text:
        zone = " (a tenant address has no zone id)" if "%" in text else ""
        return f"{text!r} is not an IPv6 address{zone}"
    return f"{text!r} is not an IPv4 address"


def ipv6_text(ip: IPv6Address) -> str:
    """RFC 5952: Python's form, and dotted quad in the IPv4-mapped range
    (section 5; Python before 3.13 writes ::ffff:c000:201)."""
    mapped = ip.ipv4_mapped
    return str(ip) if mapped is None else f"::ffff:{mapped}"


def link_local(mac: str) -> str:
    """The IPv6 link-local address an interface with ``mac`` generates:
    fe80::/64 and the modified EUI-64 of the MAC (RFC 4291 appendix A: the
    universal/local bit flipped, ff:fe inserted in the middle), as Linux
    does. The gateway's is that of the anycast gateway MAC, so every ToR
    (and an FRR VTEP with that MAC) answers for the same one."""
    octets = bytes.fromhex(mac.replace(":", ""))
    interface_id = bytes([octets[0] ^ 0x02]) + octets[1:3] + b"\xff\xfe" + octets[3:]
    return ipv6_text(IPv6Address(b"\xfe\x80" + bytes(6) + interface_id))


def canonical_ip(text: str) -> str:
    """``text`` in its canonical form if it is an IPv6 address (RFC 5952:
    lower case, no leading zeros, the longest run of zero groups as ``::``);
    anything else (IPv4, not an address) unchanged, for the checks to judge."""
    if ":" not in text:
        return text
    ip = ipv6(text)
    return text if ip is None else ipv6_text(ip)


def canonical_prefix(text: str) -> str:
    """An IPv6 network ``text`` in its canonical form (address as
    ``canonical_ip``, length without leading zeros), host bits kept for the
    checks to report; anything else unchanged."""
    address, slash, length = text.partition("/")
    if ":" not in address or not slash or not length.isdigit():
        return text
    return f"{canonical_ip(address)}/{int(length)}"


def spelling_problem(text: str) -> str | None:
    """Why an IPv6 address (or network) text that parses is kept wrong: not
    in its canonical form. Inputs store that form; this guards code."""
    canonical = canonical_prefix(text) if "/" in text else canonical_ip(text)
    if canonical != text:
        return f"{text} is not in canonical form (RFC 5952): write it as {canonical}"
    return None


def ipv6_taken() -> bool:
    """Whether the pipeline has the IPv6 tables (dataplane/limits.py), read at
    each call: a test sets limits.IPV6_SUPPORTED to check the IPv6 rules."""
    return limits.IPV6_SUPPORTED


def ipv6_unsupported(ip: str, what: str) -> str | None:
    """Why IPv6 ``what`` (tenant addresses, subnets, routes) cannot be taken
    at all: the pipeline has no IPv6 tables; None if it has."""
    if ipv6_taken():
        return None
    tables = ", ".join(limits.IPV6_TABLES)
    return (
        f"{ip}: IPv6 {what} need a pipeline with IPv6 tables ({tables}): "
        "this pipeline has none, it takes IPv4 only"
    )


def host_ipv6_problem(ip: IPv6Address) -> str | None:
    """Why ``ip`` cannot be a VM's IPv6 address, whatever its subnet."""
    for network, what in NOT_IPV6_HOST_RANGES:
        if ip in network:
            return f"{ipv6_text(ip)} is not a VM's IPv6 address ({what})"
    if not any(ip in network for network in IPV6_HOST_RANGES):
        return f"{ip} is not a VM's IPv6 address ({IPV6_HOST_RULE})"
    return None


def host_ip_problem(ip: IPv4Address) -> str | None:
    """Why ``ip`` cannot be a host's unicast address, whatever its subnet."""
    for network, what in NOT_HOST_RANGES:
        if ip in network:
            return f"{ip} is not a unicast host address ({what})"
    return None


@lru_cache(maxsize=4096)  # (the fabric's few prefixes, parsed once per change)
def ipv4_network(text: str) -> IPv4Network:
    """``text`` (a.b.c.d/len) as an IPv4 network; ValueError saying what is
    wrong, host bits set included."""
    if "/" not in text:
        raise ValueError(f"{text!r} is not an IPv4 network (expected a.b.c.d/len)")
    try:
        loose = IPv4Network(text, strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not an IPv4 network (expected a.b.c.d/len)") from None
    if ipv4(text.partition("/")[0]) != loose.network_address:
        raise ValueError(f"{text} has host bits set (the network is {loose})")
    return loose


@lru_cache(maxsize=4096)
def ipv6_network(text: str) -> IPv6Network:
    """``text`` (address/len) as an IPv6 network; ValueError saying what is
    wrong, host bits set included (shown in canonical form)."""
    message = f"{text!r} is not an IPv6 network (expected address/len, e.g. 2001:db8:1::/64)"
    address, _, length = text.partition("/")
    if "%" in text or not length.isdigit():
        raise ValueError(message)
    try:
        loose = IPv6Network(text, strict=False)
    except ValueError:
        raise ValueError(message) from None
    given = ipv6(address)
    if given != loose.network_address:
        raise ValueError(f"{canonical_prefix(text)} has host bits set (the network is {loose})")
    return loose


def ip_network(text: str) -> IPNetwork:
    """``text`` as a network: IPv6 if it has a colon, else IPv4 (ipv4_network,
    ipv6_network); ValueError saying what is wrong."""
    return ipv6_network(text) if ":" in text else ipv4_network(text)


def within(inner: IPNetwork, outer: IPNetwork) -> bool:
    """Whether ``inner`` lies in ``outer`` (never, across families)."""
    if isinstance(inner, IPv4Network) and isinstance(outer, IPv4Network):
        return inner.subnet_of(outer)
    if isinstance(inner, IPv6Network) and isinstance(outer, IPv6Network):
        return inner.subnet_of(outer)
    return False


def routed_network_problem(network: IPv4Network) -> str | None:
    """Why ``network`` cannot be a routed subnet: in a range no host may use,
    or no room for a network address, gateway, host and broadcast address."""
    for reserved, what in NOT_ROUTED_RANGES:
        if network.overlaps(reserved):
            return f"{network} overlaps {what}"
    if network.prefixlen > 30:
        return f"{network} is too small: a routed subnet is /30 or larger"
    return None


def in_subnet_problem(
    ip: IPv4Address, network: IPv4Network, gateway: IPv4Address | None
) -> str | None:
    """Why ``ip``, inside ``network``, cannot be a VM's: the subnet's network
    or broadcast address, or its gateway."""
    if ip == network.network_address:
        return f"{ip} is the network address of {network}"
    if ip == network.broadcast_address:
        return f"{ip} is the broadcast address of {network}"
    if ip == gateway:
        return f"{ip} is the gateway of {network}"
    return None


def routed_ipv6_network_problem(network: IPv6Network) -> str | None:
    """Why ``network`` cannot be a routed IPv6 subnet: outside global unicast
    and unique local space, or not /48 to /126 (IPV6_SUBNET_PREFIXLEN)."""
    if not any(network.subnet_of(space) for space in IPV6_HOST_RANGES):
        return f"{network} is not a subnet for VMs ({IPV6_HOST_RULE})"
    low, high = IPV6_SUBNET_PREFIXLEN
    if low <= network.prefixlen <= high:
        return None
    size = "too large" if network.prefixlen < low else "too small"
    return f"{network} is {size}: a routed IPv6 subnet is /{low} to /{high} (usually /64)"


def in_ipv6_subnet_problem(
    ip: IPv6Address, network: IPv6Network, gateway: IPAddress | None
) -> str | None:
    """Why ``ip``, inside ``network``, cannot be a VM's: the subnet-router
    anycast address (the network address, RFC 4291 2.6.1), or its gateway."""
    if ip == network.network_address:
        return f"{ip} is the subnet-router anycast address of {network}"
    if ip == gateway:
        return f"{ip} is the gateway of {network}"
    return None


def in_any_subnet_problem(
    ip: IPAddress, network: IPNetwork, gateway: IPAddress | None
) -> str | None:
    """``in_subnet_problem`` or ``in_ipv6_subnet_problem``, by family (``ip``
    lies inside ``network``, so they are of one)."""
    if isinstance(ip, IPv6Address) and isinstance(network, IPv6Network):
        return in_ipv6_subnet_problem(ip, network, gateway)
    if isinstance(ip, IPv4Address) and isinstance(network, IPv4Network):
        v4_gateway = gateway if isinstance(gateway, IPv4Address) else None
        return in_subnet_problem(ip, network, v4_gateway)
    return None
