"""A small fabric for controller unit tests: two ToRs, two servers each."""

from collections.abc import Iterable
from typing import Any

from p4vtep.evpn.config import EvpnConfig, VniRouting
from p4vtep.evpn.routes import IpPrefixRoute, MacIpRoute
from p4vtep.model.fabric import Fabric, QosPolicy, Rates, Server, Tor, Uplink, Vm, Vni

TOR1, TOR2 = "10.0.0.1", "10.0.0.2"  # the ToRs' VTEP IPs
TOR1_RMAC, TOR2_RMAC = "00:aa:00:00:00:01", "00:aa:00:00:00:02"  # their router MACs
L3VNI = 50000  # routed_fabric's VRF red


def two_tor_fabric() -> Fabric:
    fabric = Fabric()
    tors = (("tor1", TOR1, TOR1_RMAC), ("tor2", TOR2, TOR2_RMAC))
    for i, (name, vtep, router_mac) in enumerate(tors, start=1):
        fabric.tors[name] = Tor(
            name,
            f"127.0.0.1:{9559 + i}",
            i,
            vtep,
            router_mac,
            (Uplink(3, f"00:5e:00:0{i}:01:01"), Uplink(4, f"00:5e:00:0{i}:01:02")),
        )
        for j in (1, 2):
            fabric.servers[f"s{i}{j}"] = Server(f"s{i}{j}", name, j)
    fabric.vnis[5000] = Vni(5000, "tenant-a", traffic_class=2)
    fabric.vnis[6000] = Vni(6000, "tenant-b", traffic_class=1)
    fabric.policies["gold"] = QosPolicy(
        "gold",
        tx=Rates(1_000_000, 10_000, 2_000_000, 20_000),
        rx=Rates(1_000_000, 10_000, 2_000_000, 20_000),
    )
    return fabric


def vms() -> list[Vm]:
    return [
        Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10, "gold"),
        Vm("a2", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s21", 20),
        Vm("b1", "00:00:0b:00:00:01", ("192.168.1.1",), 6000, "s12", 30),
        Vm("b2", "00:00:0b:00:00:02", ("192.168.1.2",), 6000, "s12", 40),
    ]


ANYCAST_MAC = "00:00:5e:00:01:01"


def routed_fabric() -> Fabric:
    """two_tor_fabric with tenant A routed (docs/routing.md): VNI 5000
    (192.168.1.0/24) and VNI 5001 (192.168.2.0/24) in VRF "red", L3 VNI 50000,
    and a default route through 192.168.1.3; VNI 6000 stays L2 only."""
    from dataclasses import replace

    from p4vtep.model.fabric import StaticRoute, Subnet, Vrf

    fabric = two_tor_fabric()
    fabric.anycast_gateway_mac = ANYCAST_MAC
    fabric.vrfs["red"] = Vrf("red", L3VNI, (StaticRoute("0.0.0.0/0", "192.168.1.3"),))
    fabric.vnis[5000] = replace(
        fabric.vnis[5000], vrf="red", subnets=(Subnet("192.168.1.0/24", "192.168.1.254"),)
    )
    fabric.vnis[5001] = Vni(
        5001, "tenant-a-db", vrf="red", subnets=(Subnet("192.168.2.0/24", "192.168.2.254"),)
    )
    return fabric


def routed_vms() -> list[Vm]:
    """web-1 on tor1, db-1 on tor2 (the other subnet), fw (the default route's
    next hop) on tor2, and tenant B's b1 (L2 only) on tor1. fw forwards what
    it did not originate, from any address: port security off (docs/security.md)."""
    return [
        Vm("web-1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10),
        Vm("db-1", "00:00:0a:00:01:01", ("192.168.2.1",), 5001, "s21", 20),
        Vm("fw", "00:00:0a:00:00:03", ("192.168.1.3",), 5000, "s22", 30, port_security=False),
        Vm("b1", "00:00:0b:00:00:01", ("192.168.1.1",), 6000, "s12", 30),
    ]


def dual_stack_fabric() -> Fabric:
    """routed_fabric with an IPv6 subnet beside each IPv4 one (VNI 5000:
    2001:db8:1::/64, gateway 2001:db8:1::1; VNI 5001: 2001:db8:2::/64,
    gateway 2001:db8:2::1) and an IPv6 default route through fw's IPv6
    address (2001:db8:1::3) beside the IPv4 one."""
    from dataclasses import replace

    from p4vtep.model.fabric import StaticRoute, Subnet, Vrf

    fabric = routed_fabric()
    red = fabric.vrfs["red"]
    fabric.vrfs["red"] = Vrf("red", red.l3vni, (*red.routes, StaticRoute("::/0", "2001:db8:1::3")))
    for vni, n in ((5000, 1), (5001, 2)):
        spec = fabric.vnis[vni]
        ipv6 = Subnet(f"2001:db8:{n}::/64", f"2001:db8:{n}::1")
        fabric.vnis[vni] = replace(spec, subnets=(*spec.subnets, ipv6))
    return fabric


def dual_stack_vms() -> list[Vm]:
    """routed_vms for dual_stack_fabric: web-1, db-1 and fw with an IPv6
    address each (fw's, 2001:db8:1::3, the IPv6 default route's next hop);
    b1 (L2 only) as before."""
    from dataclasses import replace

    ipv6 = {"web-1": "2001:db8:1::a", "db-1": "2001:db8:2::a", "fw": "2001:db8:1::3"}
    return [
        replace(vm, ips=(*vm.ips, ipv6[vm.name])) if vm.name in ipv6 else vm for vm in routed_vms()
    ]


def evpn_for(fabric: Fabric, vnis: Iterable[int], **options: Any) -> EvpnConfig:
    """EVPN in AS 65000 for ``vnis`` of ``fabric``, each with the automatic
    RD and route targets 65000:<VNI> (FRR's convention), the fabric's
    routing copied in (VRFs, subnets, router MACs: ``for_fabric``);
    ``options``: the rest of the EvpnConfig (router_id, peers, ...)."""
    routing = tuple(VniRouting(v, None, (f"65000:{v}",), (f"65000:{v}",)) for v in vnis)
    return EvpnConfig(asn=65000, vnis=routing, **options).for_fabric(fabric)


def symmetric_type2(
    vtep: str, router_mac: str, mac: str, ip: str, /, **overrides: Any
) -> MacIpRoute:
    """``vtep``'s two-label type 2 (router MAC ``router_mac``) for host
    ``mac`` at ``ip`` in its VNI 9000, which the fabric does not have, into
    VRF red (L3 VNI 50000): RD <vtep>:3, route targets 65000:9000 and
    65000:50000; ``overrides``: other field values."""
    fields = {
        "rd": f"{vtep}:3",
        "mac": mac,
        "vni": 9000,
        "next_hop": vtep,
        "ip": ip,
        "route_targets": ("65000:9000", "65000:50000"),
        "l3vni": L3VNI,
        "router_mac": router_mac,
    }
    return MacIpRoute(**{**fields, **overrides})


def vrf_type5(vtep: str, router_mac: str, prefix: str, /, **overrides: Any) -> IpPrefixRoute:
    """``vtep``'s interface-less type 5 (router MAC ``router_mac``) for
    ``prefix`` into VRF red (L3 VNI 50000): RD <vtep>:2, route target
    65000:50000; ``overrides``: other field values."""
    fields = {
        "rd": f"{vtep}:2",
        "prefix": prefix,
        "l3vni": L3VNI,
        "next_hop": vtep,
        "route_targets": ("65000:50000",),
        "router_mac": router_mac,
    }
    return IpPrefixRoute(**{**fields, **overrides})


def add_tor3(fabric: Fabric) -> Fabric:
    """A third ToR, tor3 (VTEP 10.0.0.3, one uplink), with its server s31."""
    fabric.tors["tor3"] = Tor(
        "tor3",
        "127.0.0.1:9599",
        3,
        "10.0.0.3",
        "00:aa:00:00:00:03",
        (Uplink(3, "00:5e:00:03:01:01"),),
    )
    fabric.servers["s31"] = Server("s31", "tor3", 1)
    return fabric
