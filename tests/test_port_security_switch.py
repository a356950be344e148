"""Port security on two BMv2 ToRs driven by the controller (issue 38,
docs/security.md): a VM that sends gratuitous ARPs and unsolicited Neighbor
Advertisements claiming a neighbour's addresses does not take the
neighbour's traffic (the spoofs reach no other VM, the neighbour's pings
keep reaching it, the attacker's per-VM drop counters rise, read through
the controller's API, `p4vtep counters` and Prometheus); a rogue router
advertisement reaches no other VM unless the VM's port security is off; a
VRRP-style virtual IP and MAC, an allowed pair of two VMs, moves from one
to the other (each one's gratuitous ARP accepted, frames to the virtual MAC
flooded in the VNI as unknown unicast), and a third VM's gratuitous ARP for
it is dropped until it gets the pair too. The VMs are frames on the
servers' ends of the cables, tagged with their VF VLAN, as a VF sends them."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterable
from dataclasses import replace

from helpers import api_client, scrape
from netns_socket import ETH_P_ALL, PACKET_AUXDATA, SOL_PACKET, receive
from p4vtep.api import overlay_pb2 as pb
from p4vtep.model.addressing import link_local
from p4vtep.model.fabric import AllowedPair, Subnet, Vm, Vni, Vrf
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import (
    ICMPv6ND_NA,
    ICMPv6ND_RA,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Packet, Raw
from switch_fabric import SwitchFabric, needs_switch, read_back_matches, routed_fabric_fixtures

pytestmark = needs_switch()

ANYCAST = "00:00:5e:00:01:01"
BROADCAST = "ff:ff:ff:ff:ff:ff"
ALL_NODES, ALL_NODES_MAC = "ff02::1", "33:33:00:00:00:01"
VIP = "192.168.1.100"
VMAC = "00:00:5e:00:01:07"  # VRRP virtual router 7's MAC (RFC 5798)
PAIR = AllowedPair(f"{VIP}/32", VMAC)
# VNI 5000, routed in VRF red (dual-stack): the victim on tor1, its
# neighbour on tor2, an attacker beside the victim on tor1; two VRRP
# routers r1 (tor1) and r2 (tor2) sharing VIP and VMAC, and r3 without them.
VICTIM = Vm("victim", "02:0a:00:00:00:10", ("192.168.1.10", "2001:db8:1::10"), 5000, "s11", 10)
PEER = Vm("peer", "02:0a:00:00:00:20", ("192.168.1.20", "2001:db8:1::20"), 5000, "s21", 20)
ATTACKER = Vm("attacker", "02:0a:00:00:00:66", ("192.168.1.66", "2001:db8:1::66"), 5000, "s12", 66)
R1 = Vm("r1", "02:0a:00:00:00:31", ("192.168.1.31",), 5000, "s12", 31, allowed_pairs=(PAIR,))
R2 = Vm("r2", "02:0a:00:00:00:32", ("192.168.1.32",), 5000, "s22", 32, allowed_pairs=(PAIR,))
R3 = Vm("r3", "02:0a:00:00:00:33", ("192.168.1.33",), 5000, "s22", 33)
VMS = [VICTIM, PEER, ATTACKER, R1, R2, R3]


def route(sf) -> None:
    fabric = sf.fabric
    fabric.anycast_gateway_mac = ANYCAST
    fabric.vrfs["red"] = Vrf("red", 50000)
    base = fabric.vnis.get(5000, Vni(5000, "red-web"))
    subnets = (
        Subnet("192.168.1.0/24", "192.168.1.254"),
        Subnet("2001:db8:1::/64", "2001:db8:1::1"),
    )
    fabric.vnis[5000] = replace(base, vrf="red", subnets=subnets)


sf, controller = routed_fabric_fixtures(route, VMS)


# --- frames -------------------------------------------------------------------------


def tagged(vm: Vm, dst: str, src: str | None = None) -> Packet:
    return Ether(src=src or vm.mac, dst=dst) / Dot1Q(vlan=vm.vlan)


def gratuitous_arp(vm: Vm, ip: str, mac: str | None = None) -> Packet:
    """An ARP announcement from ``vm`` that ``ip`` is at ``mac`` (its own
    MAC unless given, as sender hardware address and Ethernet source)."""
    mac = mac or vm.mac
    return tagged(vm, BROADCAST, mac) / ARP(
        op=1, hwsrc=mac, psrc=ip, hwdst="00:00:00:00:00:00", pdst=ip
    )


def unsolicited_na(vm: Vm, target: str) -> Packet:
    """An unsolicited Neighbor Advertisement (override set) that ``target``
    is at ``vm``'s MAC, to all nodes, from ``vm``'s own address."""
    return (
        tagged(vm, ALL_NODES_MAC)
        / IPv6(src=vm.ips[1], dst=ALL_NODES, hlim=255)
        / ICMPv6ND_NA(tgt=target, R=0, S=0, O=1)
        / ICMPv6NDOptDstLLAddr(lladdr=vm.mac)
    )


def router_advert(vm: Vm) -> Packet:
    """A router advertisement from ``vm``'s own link-local address offering
    itself as the default router and a prefix of its own."""
    return (
        tagged(vm, ALL_NODES_MAC)
        / IPv6(src=link_local(vm.mac), dst=ALL_NODES, hlim=255)
        / ICMPv6ND_RA(routerlifetime=1800)
        / ICMPv6NDOptSrcLLAddr(lladdr=vm.mac)
        / ICMPv6NDOptPrefixInfo(prefix="2001:db8:66::", prefixlen=64)
    )


def ping(src: Vm, dst_mac: str, dst_ip: str, seq: int, src_ip: str | None = None) -> Packet:
    return (
        tagged(src, dst_mac)
        / IP(src=src_ip or src.ips[0], dst=dst_ip)
        / ICMP(type=8, id=38, seq=seq)
        / Raw(b"port-security")
    )


# --- sending and listening -----------------------------------------------------------


def exchange(
    sf: SwitchFabric,
    sent: Iterable[tuple[Vm, Packet]],
    listeners: Iterable[Vm],
    timeout: float = 1.5,
) -> dict[str, list[Ether]]:
    """Send each (VM, frame) on its VM's server end, in order; return what
    reaches each listener's server end on the listener's VLAN, by listener
    name, within ``timeout`` of the last frame sent."""
    listeners = list(listeners)
    ifaces = {vm.server: sf.host_ifaces[vm.server] for vm in listeners}
    sockets: dict[str, socket.socket] = {}
    senders: dict[str, socket.socket] = {}
    try:
        for server, iface in ifaces.items():
            rx = sockets[server] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            rx.bind((iface, ETH_P_ALL))
            rx.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            rx.setblocking(False)
        for vm, frame in sent:
            tx = senders.get(vm.server)
            if tx is None:
                tx = senders[vm.server] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
                tx.bind((sf.host_ifaces[vm.server], 0))
            tx.send(bytes(frame))
        got: dict[str, list[Ether]] = {vm.name: [] for vm in listeners}
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(sockets.values()), [], [], left)
            for server, rx in sockets.items():
                if rx not in ready:
                    continue
                data, outgoing = receive(rx)
                if outgoing:
                    continue
                pkt = Ether(data)
                for vm in listeners:
                    if vm.server == server and Dot1Q in pkt and pkt[Dot1Q].vlan == vm.vlan:
                        got[vm.name].append(pkt)
        return got
    finally:
        for s in (*sockets.values(), *senders.values()):
            s.close()


def claims(frames: list[Ether], ip: str) -> list[Ether]:
    """The ARP frames and Neighbor Advertisements among ``frames`` about ``ip``."""
    return [
        pkt
        for pkt in frames
        if (ARP in pkt and pkt[ARP].psrc == ip)
        or (ICMPv6ND_NA in pkt and pkt[ICMPv6ND_NA].tgt == ip)
    ]


def port_security_drops(controller, vm: str) -> dict[str, int]:
    """A VM's port-security drops by reason, as the API reports them."""
    with api_client(controller) as (client, _):
        [row] = client.GetCounters(pb.GetCountersRequest(vms=[vm])).vms
    return {d.reason: d.dropped.packets for d in row.port_security_drops}


def test_spoofed_arp_and_na_do_not_take_a_neighbours_traffic(sf, controller, capsys):
    # (the switches live for the module: counters are compared with before)
    before = port_security_drops(controller, "attacker")
    assert set(before) == {
        "spoofed_ip",
        "spoofed_arp",
        "spoofed_nd",
        "ra_from_vm",
        "dhcp_server_from_vm",
    }
    victim_before = port_security_drops(controller, "victim")
    # The attacker announces the victim's addresses, over and over, while the
    # peer pings the victim (by its MAC, as a peer with a clean cache does).
    rounds = 10
    sent: list[tuple[Vm, Packet]] = []
    for n in range(rounds):
        sent.append((ATTACKER, gratuitous_arp(ATTACKER, VICTIM.ips[0])))
        sent.append((ATTACKER, unsolicited_na(ATTACKER, VICTIM.ips[1])))
        sent.append((PEER, ping(PEER, VICTIM.mac, VICTIM.ips[0], n)))
    got = exchange(sf, sent, [VICTIM, PEER, ATTACKER, R2])
    # No spoof reached anyone: no cache learns the attacker's MAC for them.
    for name in ("victim", "peer", "r2"):
        assert claims(got[name], VICTIM.ips[0]) == [], name
        assert claims(got[name], VICTIM.ips[1]) == [], name
    # The pings kept reaching the victim, none the attacker.
    pings = [p for p in got["victim"] if ICMP in p and p[ICMP].id == 38]
    assert len(pings) == rounds
    assert not [p for p in got["attacker"] if ICMP in p and p[ICMP].id == 38]
    assert rose(controller, "attacker", before) == {"spoofed_arp": rounds, "spoofed_nd": rounds}
    # The same announcements of the attacker's own addresses pass, and so
    # does its own traffic; a ping with the victim's source does not.
    got = exchange(
        sf,
        [
            (ATTACKER, gratuitous_arp(ATTACKER, ATTACKER.ips[0])),
            (ATTACKER, unsolicited_na(ATTACKER, ATTACKER.ips[1])),
            (ATTACKER, ping(ATTACKER, PEER.mac, PEER.ips[0], 1)),
            (ATTACKER, ping(ATTACKER, PEER.mac, PEER.ips[0], 2, src_ip=VICTIM.ips[0])),
        ],
        [PEER],
    )
    assert len(claims(got["peer"], ATTACKER.ips[0])) == 1
    assert len(claims(got["peer"], ATTACKER.ips[1])) == 1
    pings = [p[IP].src for p in got["peer"] if ICMP in p and p[ICMP].id == 38]
    assert pings == [ATTACKER.ips[0]]
    assert rose(controller, "attacker", before) == {
        "spoofed_ip": 1,
        "spoofed_arp": rounds,
        "spoofed_nd": rounds,
    }
    assert rose(controller, "victim", victim_before) == {}
    # `p4vtep counters` and Prometheus show the same.
    check_cli_and_metrics(controller, capsys, port_security_drops(controller, "attacker"))
    read_back_matches(sf, controller)


def rose(controller, vm: str, before: dict[str, int]) -> dict[str, int]:
    """By how much each of a VM's port-security drop counters rose since ``before``."""
    now = port_security_drops(controller, vm)
    return {reason: now[reason] - before[reason] for reason in now if now[reason] != before[reason]}


def check_cli_and_metrics(controller, capsys, drops: dict[str, int]) -> None:
    from p4vtep.cli.main import main as cli_main

    with api_client(controller) as (_, address):
        capsys.readouterr()
        assert cli_main(["--api", address, "counters", "--vm", "attacker"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {tuple(line.split()[:3]): line.split()[3] for line in out if line.startswith("attacker")}
    for reason in ("spoofed_ip", "spoofed_arp", "spoofed_nd"):  # (those that counted)
        assert rows[("attacker", "tor1", reason)] == str(drops[reason])
    text = scrape(controller)
    line = (
        'p4vtep_vm_port_security_drop_packets_total{reason="spoofed_arp",tor="tor1",'
        f'vm="attacker"}} {float(drops["spoofed_arp"])}'
    )
    assert line in text


def test_a_rogue_router_advertisement_reaches_no_other_vm(sf, controller):
    """Unless the VM's port security is off (a trusted router appliance)."""
    listeners = [VICTIM, PEER, R2]
    before = port_security_drops(controller, "attacker")
    got = exchange(sf, [(ATTACKER, router_advert(ATTACKER))] * 3, listeners)
    for name, frames in got.items():
        assert not rogue_adverts(frames), name
    assert rose(controller, "attacker", before) == {"ra_from_vm": 3}
    with api_client(controller) as (client, _):
        reply = client.SetPortSecurity(
            pb.SetPortSecurityRequest(name="attacker", port_security=False, wait=True)
        )
        assert reply.applied
    got = exchange(sf, [(ATTACKER, router_advert(ATTACKER))], listeners)
    for name, frames in got.items():
        assert len(rogue_adverts(frames)) == 1, name
    assert rose(controller, "attacker", before) == {"ra_from_vm": 3}


def rogue_adverts(frames) -> list:
    """The attacker's router advertisements among ``frames`` (the gateway's
    own, which the ToRs send to every VM of a VNI with IPv6 subnets, are
    not its)."""
    return [p for p in frames if ICMPv6ND_RA in p and p[Ether].src == ATTACKER.mac]


def test_a_vrrp_virtual_ip_moves_between_two_vms_with_allowed_pairs(sf, controller):
    # r1 is master: its announcement (from the virtual MAC) reaches the peer.
    got = exchange(sf, [(R1, gratuitous_arp(R1, VIP, VMAC))], [PEER, VICTIM])
    for name in ("peer", "victim"):
        [announced] = claims(got[name], VIP)
        assert (announced.src, announced[ARP].hwsrc) == (VMAC, VMAC), name
    # The peer's frames to the virtual MAC are flooded in the VNI (no VM has
    # it as its own: unknown unicast), so both routers get them; the
    # master answers from the virtual address and MAC.
    got = exchange(
        sf,
        [
            (PEER, ping(PEER, VMAC, VIP, 1)),
            (R1, tagged(R1, PEER.mac, VMAC) / IP(src=VIP, dst=PEER.ips[0]) / UDP() / Raw(b"r1")),
        ],
        [R1, R2, PEER],
    )
    for name in ("r1", "r2"):
        assert [p[IP].dst for p in got[name] if ICMP in p] == [VIP], name
    assert [p[Raw].load for p in got["peer"] if UDP in p and p[IP].src == VIP] == [b"r1"]
    # r1 fails; r2 takes the address over: its announcement is accepted too.
    got = exchange(
        sf,
        [
            (R2, gratuitous_arp(R2, VIP, VMAC)),
            (R2, tagged(R2, PEER.mac, VMAC) / IP(src=VIP, dst=PEER.ips[0]) / UDP() / Raw(b"r2")),
        ],
        [PEER],
    )
    assert len(claims(got["peer"], VIP)) == 1
    assert [p[Raw].load for p in got["peer"] if UDP in p and p[IP].src == VIP] == [b"r2"]
    # r3 has no pair: its announcement of the address is dropped, from its
    # own MAC (spoofed_arp) or from the virtual one (the source MAC check).
    before = port_security_drops(controller, "r3")
    sent = [(R3, gratuitous_arp(R3, VIP)), (R3, gratuitous_arp(R3, VIP, VMAC))]
    got = exchange(sf, sent, [PEER])
    assert claims(got["peer"], VIP) == []
    assert rose(controller, "r3", before) == {"spoofed_arp": 1}
    # Given the pair (a change on the running VM), its announcement passes.
    with api_client(controller) as (client, _):
        request = pb.SetPortSecurityRequest(
            name="r3", add_pairs=[pb.AllowedPair(prefix=VIP, mac=VMAC)], wait=True
        )
        assert client.SetPortSecurity(request).applied
    got = exchange(sf, [(R3, gratuitous_arp(R3, VIP, VMAC))], [PEER])
    assert len(claims(got["peer"], VIP)) == 1
    read_back_matches(sf, controller)
