"""Dual-stack tenants on two BMv2 ToRs driven by the controller (issue 37):
VMs with IPv4 and IPv6 addresses reach each other over both families, bridged
in one VNI across the fabric and routed between subnets on one ToR and across
the L3 VNI; the ToRs answer neighbour solicitations (a VM's and the gateway's
addresses) and echo requests to the gateway; a routed dual-stack VM migrates
under an IPv6 probe every 20 ms; a restart over IPv6 state writes nothing; the
switches read back exactly what the controller compiles."""

from __future__ import annotations

import socket
from dataclasses import replace

from helpers import wait_until
from p4vtep.model.fabric import StaticRoute, Vm
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    in6_getnsma,
    in6_getnsmac,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.utils6 import inet_pton
from switch_fabric import (
    ANYCAST,
    GATEWAY_LLA,
    assert_make_before_break,
    needs_switch,
    probe_a_migration,
    read_back_matches,
    restarted_controller,
    route_dual_stack_tenant,
    routed_fabric_fixtures,
    send_and_receive,
)

pytestmark = needs_switch()

# Two subnets of VRF red, each dual-stack; web and db-near on tor1, db and fw on tor2.
WEB = Vm("web", "02:0a:00:00:00:01", ("192.168.1.10", "2001:db8:1::10"), 5000, "s11", 10)
WEB2 = Vm("web2", "02:0a:00:00:00:02", ("192.168.1.11", "2001:db8:1::11"), 5000, "s21", 14)
DB = Vm("db", "02:0a:00:00:01:01", ("192.168.2.10", "2001:db8:2::10"), 5001, "s21", 11)
DB_NEAR = Vm("db-near", "02:0a:00:00:01:02", ("192.168.2.20", "2001:db8:2::20"), 5001, "s12", 12)
# fw forwards the default routes: a router appliance, port security off (docs/security.md)
FW = Vm(
    "fw",
    "02:0a:00:00:00:03",
    ("192.168.1.3", "2001:db8:1::3"),
    5000,
    "s22",
    13,
    port_security=False,
)
VMS = [WEB, WEB2, DB, DB_NEAR, FW]
GATEWAY6 = {5000: "2001:db8:1::1", 5001: "2001:db8:2::1"}


def route(sf) -> None:
    """Tenant red: two dual-stack subnets, default routes of both families via fw."""
    route_dual_stack_tenant(
        sf, (StaticRoute("0.0.0.0/0", FW.ips[0]), StaticRoute("::/0", FW.ips[1]))
    )


sf, controller = routed_fabric_fixtures(route, VMS)


def udp6(src: Vm, dst_mac: str, dst_ip: str, hlim: int = 64, tag: int = 0) -> Packet:
    return (
        Ether(src=src.mac, dst=dst_mac)
        / Dot1Q(vlan=src.vlan)
        / IPv6(src=src.ips[1], dst=dst_ip, hlim=hlim, fl=tag)
        / UDP(sport=2000 + tag % 1000, dport=80)
        / Raw(b"routed6" * 10)
    )


def as_routed(sent: Packet, dst: Vm, hops: int, vlan: int | None = None) -> bytes:
    """Routed once on one ToR, twice across the fabric (symmetric IRB)."""
    inner = sent[IPv6].copy()
    inner.hlim -= hops
    return bytes(Ether(src=ANYCAST, dst=dst.mac) / Dot1Q(vlan=vlan or dst.vlan) / inner)


def hops(sf, src: Vm, server: str) -> int:
    servers = sf.fabric.servers
    return 1 if servers[src.server].tor == servers[server].tor else 2


def reaches6(sf, src: Vm, dst: Vm, server: str | None = None, vlan: int | None = None) -> bool:
    sent = udp6(src, ANYCAST, dst.ips[1])
    server = server or dst.server
    got = send_and_receive(sf.host_ifaces[src.server], sent, sf.host_ifaces[server])
    return any(bytes(p) == as_routed(sent, dst, hops(sf, src, server), vlan) for p in got)


def reaches4(sf, src: Vm, dst: Vm) -> bool:
    sent = (
        Ether(src=src.mac, dst=ANYCAST)
        / Dot1Q(vlan=src.vlan)
        / IP(src=src.ips[0], dst=dst.ips[0], ttl=64)
        / UDP(sport=2000, dport=80)
        / Raw(b"routed" * 10)
    )
    got = send_and_receive(sf.host_ifaces[src.server], sent, sf.host_ifaces[dst.server])
    inner = sent[IP].copy()
    inner.ttl -= hops(sf, src, dst.server)
    inner.chksum = None
    want = bytes(Ether(src=ANYCAST, dst=dst.mac) / Dot1Q(vlan=dst.vlan) / inner)
    return any(bytes(p) == want for p in got)


def solicitation(src: Vm, target: str) -> Packet:
    """A multicast NS from `src` (its IPv6 address, with its link-layer option)."""
    group = in6_getnsma(inet_pton(socket.AF_INET6, target))
    return (
        Ether(src=src.mac, dst=in6_getnsmac(group))
        / Dot1Q(vlan=src.vlan)
        / IPv6(src=src.ips[1], dst=socket.inet_ntop(socket.AF_INET6, group), hlim=255)
        / ICMPv6ND_NS(tgt=target)
        / ICMPv6NDOptSrcLLAddr(lladdr=src.mac)
    )


def advert(asker: Vm, target: str, mac: str, router: bool) -> bytes:
    return bytes(
        Ether(src=mac, dst=asker.mac)
        / Dot1Q(vlan=asker.vlan)
        / IPv6(src=target, dst=asker.ips[1], hlim=255)
        / ICMPv6ND_NA(tgt=target, R=int(router), S=1, O=1)
        / ICMPv6NDOptDstLLAddr(lladdr=mac)
    )


def test_dual_stack_vms_reach_each_other_over_both_families(sf, controller):
    # routed IPv6: across the fabric (L3 VNI 50000) both ways, and on one ToR
    assert reaches6(sf, WEB, DB)
    assert reaches6(sf, DB, WEB)
    assert reaches6(sf, WEB, DB_NEAR)
    assert reaches6(sf, DB_NEAR, WEB)
    # routed IPv4 beside it, unchanged
    assert reaches4(sf, WEB, DB)
    assert reaches4(sf, DB_NEAR, WEB)
    # bridged IPv6 in VNI 5000 across the fabric: delivered as sent
    sent = udp6(WEB, WEB2.mac, WEB2.ips[1])
    got = send_and_receive(sf.host_ifaces[WEB.server], sent, sf.host_ifaces[WEB2.server])
    want = Ether(bytes(sent))
    want[Dot1Q].vlan = WEB2.vlan
    assert bytes(want) in [bytes(p) for p in got]
    # the default route ::/0 goes through fw
    sent = udp6(WEB, ANYCAST, "2001:db8:99::1")
    got = send_and_receive(sf.host_ifaces[WEB.server], sent, sf.host_ifaces[FW.server])
    assert as_routed(sent, FW, 2) in [bytes(p) for p in got]
    read_back_matches(sf, controller)


def test_the_tors_answer_neighbour_solicitations_and_gateway_pings(sf, controller):
    cases = [
        (DB_NEAR, DB.ips[1], DB.mac, False),  # a VM of its VNI behind the other ToR
        (WEB, WEB2.ips[1], WEB2.mac, False),  # likewise, in the other VNI
        (WEB, GATEWAY6[5000], ANYCAST, True),  # the gateway's global address
        (DB, GATEWAY_LLA, ANYCAST, True),  # the gateway's link-local address
    ]
    for asker, target, mac, router in cases:
        got = send_and_receive(
            sf.host_ifaces[asker.server], solicitation(asker, target), sf.host_ifaces[asker.server]
        )
        assert advert(asker, target, mac, router) in [bytes(p) for p in got], (asker, target)
    for gateway in (GATEWAY6[5000], GATEWAY_LLA):
        ping = (
            Ether(src=WEB.mac, dst=ANYCAST)
            / Dot1Q(vlan=WEB.vlan)
            / IPv6(src=WEB.ips[1], dst=gateway)
            / ICMPv6EchoRequest(id=7, seq=1, data=b"ping6")
        )
        want = bytes(
            Ether(src=ANYCAST, dst=WEB.mac)
            / Dot1Q(vlan=WEB.vlan)
            / IPv6(src=gateway, dst=WEB.ips[1])
            / ICMPv6EchoReply(id=7, seq=1, data=b"ping6")
        )
        got = send_and_receive(sf.host_ifaces[WEB.server], ping, sf.host_ifaces[WEB.server])
        assert want in [bytes(p) for p in got], gateway


def test_a_routed_dual_stack_vm_migrates_under_an_ipv6_probe_every_20_ms(sf, controller):
    """db moves from tor2 (s21) to tor1 (s12): its IPv6 host routes move with
    its MAC, make-before-break; a routed IPv6 probe every 20 ms from web."""
    moved = replace(DB, server="s12", vlan=31)
    sent, counts = probe_a_migration(
        sf,
        controller,
        moved,
        WEB.server,
        lambda n: bytes(udp6(WEB, ANYCAST, DB.ips[1], tag=n % 65536)),
        lambda pkt: pkt.dst == DB.mac and pkt.src == ANYCAST and IPv6 in pkt,
    )
    assert_make_before_break(sent, counts, "routed IPv6 migration")
    assert wait_until(lambda: reaches6(sf, WEB, moved, server="s12", vlan=31), 5)
    read_back_matches(sf, controller)


def test_a_restart_over_ipv6_state_writes_nothing(sf, tmp_path):
    with restarted_controller(sf, tmp_path / "restart.db", VMS):
        assert reaches6(sf, WEB, DB)
