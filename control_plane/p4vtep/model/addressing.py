"""Field rules every checker shares: the VNI range, and what a host's MAC, a
host's IPv4 address and an IPv4 network may be. Each ``*_problem`` returns
why a value is wrong, or None if it is right."""

from __future__ import annotations

import re
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network

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
