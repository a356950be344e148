"""Checks on what the CPU path takes from the fabric file
(docs/routing.md#the-cpu-path): the CoPP rates per punt class, each routed
VNI's ``router_advertisements:`` and the IPv6 subnets' advertised flags.

Fabric problems carry where they lie in the fabric file (``Problem.at``), so
the loader names the line; the controller reports the same problems for a
fabric built in code. ``slaac_warnings`` are not refusals: the loader logs
them. port_security.py holds what a SLAAC subnet asks of a guarded VM.
"""

from __future__ import annotations

from ipaddress import IPv6Network

from .addressing import ip_network
from .fabric import Fabric, RouterAdvertisements, Subnet, Vni, punt_class_key
from .problems import Problem, subject

# Bounds of a CoPP meter: at least one packet; at most what the controller
# can answer (it builds each answer in Python with scapy, well under 1,000
# a second per core), per class and ToR.
COPP_PPS_MAX = 1000
COPP_BURST_MAX = 1000
# RFC 4861 6.2.1.
RA_INTERVAL_MIN, RA_INTERVAL_MAX = 4, 1800  # MaxRtrAdvInterval
RA_LIFETIME_MAX = 9000  # AdvDefaultLifetime: 0, or MaxRtrAdvInterval to 9000
IPV6_MIN_MTU, RA_MTU_MAX = 1280, 9000  # RFC 8200 5; the VF's MTU (fabric.TENANT_MTU)
SLAAC_PREFIX_LEN = 64  # RFC 4862 5.5.3 (d) with 64-bit interface ids (RFC 4291)


def check_cpu_path(fabric: Fabric) -> list[Problem]:
    """Every problem of the fabric's CPU path settings."""
    return _copp(fabric) + [p for vni in fabric.vnis.values() for p in _vni(vni)]


def _copp(fabric: Fabric) -> list[Problem]:
    problems = []
    for punt_class, rate in sorted(fabric.copp.items()):
        for name, value, top in (
            ("pps", rate.pps, COPP_PPS_MAX),
            ("burst", rate.burst, COPP_BURST_MAX),
        ):
            if not 1 <= value <= top:
                problems.append(
                    Problem(
                        "copp",
                        f"{punt_class_key(punt_class)}.{name}",
                        f"{value} outside 1-{top}",
                        ("copp", punt_class_key(punt_class), name),
                    )
                )
    return problems


def ipv6_subnets(vni: Vni) -> list[tuple[int, Subnet, IPv6Network]]:
    """The VNI's IPv6 subnets that parse (check_routing reports the others),
    with their position in ``subnets``."""
    out = []
    for i, subnet in enumerate(vni.subnets):
        try:
            network = ip_network(subnet.prefix)
        except ValueError:
            continue
        if isinstance(network, IPv6Network):
            out.append((i, subnet, network))
    return out


def advertises(vni: Vni) -> bool:
    """Whether the ToRs send router advertisements in ``vni``: routed, with
    an IPv6 subnet, and not turned off."""
    return vni.vrf is not None and vni.router_advertisements.enabled and bool(ipv6_subnets(vni))


def _vni(vni: Vni) -> list[Problem]:
    who = subject("vni", vni.name)
    problems = []

    def problem(path: tuple[str | int, ...], message: str) -> None:
        field = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path)
        problems.append(Problem(who, field.replace(".[", "["), message, ("vnis", vni.vni, *path)))

    ra = vni.router_advertisements
    if ra != RouterAdvertisements():
        if vni.vrf is None:
            problem(("router_advertisements",), "an L2-only VNI has no gateway to advertise")
        elif ra.enabled and not ipv6_subnets(vni):
            problem(
                ("router_advertisements",),
                "no IPv6 subnet to advertise (router advertisements are IPv6 only)",
            )
    at = ("router_advertisements",)
    if not RA_INTERVAL_MIN <= ra.interval <= RA_INTERVAL_MAX:
        problem(
            (*at, "interval"),
            f"{ra.interval} s outside {RA_INTERVAL_MIN}-{RA_INTERVAL_MAX} "
            "(RFC 4861 6.2.1: MaxRtrAdvInterval)",
        )
    if ra.router_lifetime != 0 and not ra.interval <= ra.router_lifetime <= RA_LIFETIME_MAX:
        problem(
            (*at, "router_lifetime"),
            f"{ra.router_lifetime} s: 0 (not a default router) or {ra.interval}-{RA_LIFETIME_MAX} "
            "(RFC 4861 6.2.1: no shorter than the interval)",
        )
    if not IPV6_MIN_MTU <= ra.mtu <= RA_MTU_MAX:
        problem(
            (*at, "mtu"),
            f"{ra.mtu} outside {IPV6_MIN_MTU}-{RA_MTU_MAX} "
            "(IPv6's minimum; the VF's MTU: a VM frame is at most 9018 bytes)",
        )
    v6 = {i for i, _, _ in ipv6_subnets(vni)}
    for i, subnet in enumerate(vni.subnets):
        if i not in v6 and (subnet.slaac or not subnet.on_link):
            field = "slaac" if subnet.slaac else "on_link"
            problem(("subnets", i, field), "only an IPv6 subnet is advertised")
    for i, subnet, network in ipv6_subnets(vni):
        if subnet.slaac and network.prefixlen != SLAAC_PREFIX_LEN:
            problem(
                ("subnets", i, "slaac"),
                f"{network} is a /{network.prefixlen}: SLAAC forms addresses in a /64 only "
                "(64-bit interface identifiers, RFC 4862 5.5.3)",
            )
    return problems


def slaac_warnings(vni: Vni) -> list[tuple[tuple[str | int, ...], str]]:
    """What the loader logs for each subnet advertised with the A flag:
    a guarded VM's self-formed addresses are dropped (docs/security.md)."""
    return [
        (
            ("vnis", vni.vni, "subnets", i, "slaac"),
            f"{network} is advertised for SLAAC: with port security on, the ToR drops what "
            "a VM sends from an address it forms itself; each guarded VM of the VNI must list "
            "its EUI-64 address in ips (or have the allowed pair "
            f"{network}, or port_security: false), or it is refused",
        )
        for i, subnet, network in ipv6_subnets(vni)
        if subnet.slaac and vni.vrf is not None
    ]
