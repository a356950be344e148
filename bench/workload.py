"""Synthetic fabrics and VM populations for the benchmarks."""

from __future__ import annotations

from ipaddress import IPv6Address, IPv6Network

from p4vtep.model.fabric import Fabric, Server, Subnet, Tor, Uplink, Vm, Vni, Vrf

SERVER_PORTS = (1, 2, 5, 6)  # ports 3 and 4 are uplinks
VNI_BASE = 10000
L3VNI_BASE = 20000
ANYCAST_GATEWAY_MAC = "00:00:5e:00:01:01"
# A routed VNI's subnet holds the VMs' addresses 1-253 and the gateway at .254:
# a /24 per VNI, ``routed`` populations at most 253 VMs per VNI.
HOSTS_PER_SUBNET = 253
# Dual-stack (issue 37): a routed VNI's IPv6 subnet is 2001:db8:<VNI index>::/64,
# its VMs ::1 to ::fd as in IPv4 and the gateway ::fe; a bridged VM's IPv6
# address is 2001:db8:ffff:: plus its number (a VNI index that large is not
# generated: 0xffff VNIs would be 65,535 tenants).
IPV6_GATEWAY_HOST = 0xFE
BRIDGED_IPV6_BASE = int(IPv6Address("2001:db8:ffff::"))


def fabric(addresses: list[str], vnis: int) -> Fabric:
    f = Fabric()
    for t, address in enumerate(addresses, start=1):
        name = f"tor{t}"
        f.tors[name] = Tor(
            name,
            address,
            t,
            f"10.0.{t // 256}.{t % 256}",
            f"00:aa:00:00:{t // 256:02x}:{t % 256:02x}",
            (Uplink(3, "00:5e:00:00:01:01"), Uplink(4, "00:5e:00:00:01:02")),
        )
        for port in SERVER_PORTS:
            f.servers[f"s{t}-{port}"] = Server(f"s{t}-{port}", name, port)
    for v in range(vnis):
        f.vnis[VNI_BASE + v] = Vni(VNI_BASE + v, f"tenant-{v}")
    return f


def routed_fabric(addresses: list[str], vnis: int, dual_stack: bool = False) -> Fabric:
    """``fabric`` with every tenant routed: VNIs in pairs, each pair a tenant's
    two subnets in one VRF (issue 28's "two subnets per tenant"), so that
    every VM has a host route on each ToR that holds its VRF. ``dual_stack``:
    each routed VNI has an IPv6 subnet beside its IPv4 one (``ipv6_subnet``)."""
    f = fabric(addresses, vnis)
    f.anycast_gateway_mac = ANYCAST_GATEWAY_MAC
    for v in range(vnis):
        vrf = f"tenant-{v // 2}"
        f.vrfs.setdefault(vrf, Vrf(vrf, L3VNI_BASE + v // 2))
        subnet = _subnet(v)
        subnets: tuple[Subnet, ...] = (Subnet(f"{subnet}.0/24", f"{subnet}.254"),)
        if dual_stack:
            subnets += (Subnet(str(ipv6_subnet(v)), _ipv6_host(v, IPV6_GATEWAY_HOST)),)
        f.vnis[VNI_BASE + v] = Vni(VNI_BASE + v, vrf, vrf=vrf, subnets=subnets)
    return f


def _subnet(vni_index: int) -> str:
    return f"10.{100 + (vni_index >> 8)}.{vni_index & 0xFF}"


def ipv6_subnet(vni_index: int) -> IPv6Network:
    """The IPv6 subnet of the routed VNI ``VNI_BASE + vni_index``."""
    return IPv6Network(f"2001:db8:{vni_index:x}::/64")


def _ipv6_host(vni_index: int, host: int) -> str:
    """Canonical text (RFC 5952), as the model wants it."""
    return str(ipv6_subnet(vni_index)[host])


def vms(
    count: int,
    tors: int,
    vnis: int,
    tors_per_vni: int | None = None,
    routed: bool = False,
    dual_stack: bool = False,
) -> list[Vm]:
    """``count`` VMs spread evenly over the ToRs' servers. Each VNI lives on
    ``tors_per_vni`` ToRs (all of them by default). ``routed``: addresses in
    the VNI's subnet of ``routed_fabric``. ``dual_stack``: every VM has an
    IPv6 address after its IPv4 one (routed: in its VNI's IPv6 subnet of
    ``routed_fabric(..., dual_stack=True)``, the same host number); the
    IPv4 addresses, MACs and placement are the same as without."""
    per_vni = max(1, count // vnis)
    if routed and per_vni > HOSTS_PER_SUBNET:
        raise ValueError(f"{per_vni} VMs per VNI do not fit a routed VNI's /24")
    result = []
    slots: dict[str, int] = {}
    for i in range(count):
        vni_index = min(i // per_vni, vnis - 1)
        if tors_per_vni:
            tor = (vni_index * tors_per_vni + i % tors_per_vni) % tors + 1
        else:
            tor = i % tors + 1
        port = SERVER_PORTS[(i // tors) % len(SERVER_PORTS)]
        server = f"s{tor}-{port}"
        slots[server] = slots.get(server, 0) + 1
        mac = "02:00:" + ":".join(f"{(i >> shift) & 0xFF:02x}" for shift in (24, 16, 8, 0))
        if routed:
            ip = f"{_subnet(vni_index)}.{i - vni_index * per_vni + 1}"
        else:
            ip = f"10.{(i >> 16) & 0xFF}.{(i >> 8) & 0xFF}.{i & 0xFF}"
        ips: tuple[str, ...] = (ip,)
        if dual_stack and routed:
            ips += (_ipv6_host(vni_index, i - vni_index * per_vni + 1),)
        elif dual_stack:
            ips += (str(IPv6Address(BRIDGED_IPV6_BASE + i)),)
        result.append(Vm(f"vm{i}", mac, ips, VNI_BASE + vni_index, server, slots[server]))
    return result
