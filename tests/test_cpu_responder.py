"""The CPU path's responder: whom it answers, how (PORT to a local VM,
ROUTE in the VRF to a sender behind another VTEP), from which address,
how often (per-source limits, RA schedule with an injected clock), and
that a backup never sends."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from random import Random

import pytest
from fabric_fixture import ANYCAST_MAC, L3VNI, TOR1_RMAC, dual_stack_fabric, dual_stack_vms
from p4vtep.cpu.frames import Emit, EmitMode, PuntClass, PuntedFrame
from p4vtep.cpu.rate_limit import RateLimiter
from p4vtep.cpu.responder import Responder
from p4vtep.cpu.router_adverts import RaSchedule
from p4vtep.model.fabric import Fabric, RouterAdvertisements, Subnet, Vm, punt_class_key
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptMTU,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    ICMPv6PacketTooBig,
    ICMPv6TimeExceeded,
    IPv6,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw

WEB1_MAC = "00:00:0a:00:00:01"  # web-1: tor1 port 1 (s11), VLAN 10, VNI 5000
GW_LLA = "fe80::200:5eff:fe00:101"


@dataclass(frozen=True)
class View:
    version: int
    fabric: Fabric
    vms: Mapping[str, Vm]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    responder: Responder
    sent: list[Emit]
    clock: Clock
    primary: set[str]


def rig(fabric: Fabric | None = None, vms: list[Vm] | None = None) -> Rig:
    fabric = fabric if fabric is not None else dual_stack_fabric()
    vms = vms if vms is not None else dual_stack_vms()
    sent: list[Emit] = []
    clock = Clock()
    primary = {"tor1", "tor2"}
    view = View(1, fabric, {vm.name: vm for vm in vms})
    responder = Responder(view, sent.append, primary.__contains__, clock=clock, rng=Random(7))
    return Rig(responder, sent, clock, primary)


def from_web1(ip: Packet, punt_class: PuntClass) -> PuntedFrame:
    frame = bytes(Ether(src=WEB1_MAC, dst=ANYCAST_MAC) / Dot1Q(vlan=10) / ip)
    return PuntedFrame("tor1", punt_class, 1, 5000, 10, frame)


def from_fabric(ip: Packet, punt_class: PuntClass, vni: int = L3VNI) -> PuntedFrame:
    frame = bytes(Ether(src="00:aa:00:00:00:02", dst=TOR1_RMAC) / ip)
    return PuntedFrame("tor1", punt_class, 3, vni, 0, frame)


def test_time_exceeded_to_a_local_vm_goes_out_of_its_port_tagged() -> None:
    r = rig()
    probe = IP(src="192.168.1.1", dst="10.1.2.3", ttl=1) / UDP(dport=33434)
    emits = r.responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))
    assert emits == r.sent
    assert len(emits) == 1
    out = emits[0]
    assert (out.tor, out.mode, out.egress_port, out.vni) == ("tor1", EmitMode.PORT, 1, 0)
    p = Ether(out.frame)
    assert (p.dst, p.src, p[Dot1Q].vlan, p[Dot1Q].type) == (WEB1_MAC, ANYCAST_MAC, 10, 0x0800)
    assert (p[IP].src, p[IP].dst, p[IP].ttl) == ("192.168.1.254", "192.168.1.1", 64)
    assert (p[ICMP].type, p[ICMP].code) == (11, 0)
    assert r.responder.punt_counts() == {("tor1", "ttl_expired", "answered", ""): 1}
    assert r.responder.sent_counts() == {("tor1", "time_exceeded"): 1}


def test_an_error_to_a_sender_behind_another_vtep_is_routed_in_its_vrf() -> None:
    r = rig()
    probe = IPv6(src="2001:db8:2::a", dst="2001:db8:7::1", hlim=1) / UDP()
    (out,) = r.responder.handle(from_fabric(probe, PuntClass.TTL_EXPIRED))
    assert (out.mode, out.egress_port, out.vni) == (EmitMode.ROUTE, 0, L3VNI)
    p = Ether(out.frame)
    assert (p.src, p.dst, p.type) == (ANYCAST_MAC, TOR1_RMAC, 0x86DD)
    assert not p.haslayer(Dot1Q)
    # from the gateway of the sender's own subnet (db-1's, 2001:db8:2::/64);
    # 65: the data plane decrements it when it routes it
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == ("2001:db8:2::1", "2001:db8:2::a", 65)
    assert isinstance(p[IPv6].payload, ICMPv6TimeExceeded)


def test_the_source_falls_back_to_the_vrfs_first_gateway_of_the_family() -> None:
    r = rig()
    probe = IP(src="10.77.0.9", dst="192.168.1.1", ttl=5) / UDP()  # an external host (type 5)
    (out,) = r.responder.handle(from_fabric(probe, PuntClass.NO_ROUTE))
    p = Ether(out.frame)
    assert (p[IP].src, p[IP].dst, p[ICMP].type, p[ICMP].code) == (
        "192.168.1.254",
        "10.77.0.9",
        3,
        0,
    )


@pytest.mark.parametrize(
    ("punted", "why"),
    [
        (
            from_web1(IP(src="192.168.1.1", dst="224.0.0.9") / UDP(), PuntClass.NO_ROUTE),
            "a multicast or broadcast destination",
        ),
        (
            from_web1(IP(src="192.168.1.1", dst="192.168.2.255") / UDP(), PuntClass.NO_ROUTE),
            "a multicast or broadcast destination",
        ),
        (
            from_web1(IP(src="192.168.1.1", dst="10.0.0.1") / ICMP(type=3), PuntClass.NO_ROUTE),
            "an ICMP error",
        ),
        (
            from_web1(
                IP(src="192.168.1.1", dst="10.0.0.1", frag=20) / Raw(b"x" * 16),
                PuntClass.TTL_EXPIRED,
            ),
            "a fragment other than the first",
        ),
        (
            from_web1(IPv6(src="::", dst="2001:db8:7::1", hlim=1) / UDP(), PuntClass.TTL_EXPIRED),
            "a source that is no host (unspecified)",
        ),
        (
            from_web1(IP(src="192.168.1.1", dst="192.168.1.254") / UDP(), PuntClass.TO_GATEWAY),
            "to the gateway, not an echo request",
        ),
        (
            from_web1(IP(src="192.168.1.1", dst="10.0.0.1") / ICMP(), PuntClass.TO_GATEWAY),
            "not to a gateway address",
        ),
        (
            from_web1(IP(src="192.168.1.1", dst="10.0.0.1") / UDP(), PuntClass.L2_TRAP),
            "no handler for l2 traps",
        ),
        (
            from_fabric(
                IP(src="192.168.2.1", dst="10.0.0.1") / UDP(), PuntClass.NO_ROUTE, vni=5000
            ),
            "from the fabric, not in a VRF's L3 VNI",
        ),
        (
            replace(
                from_web1(IP(src="192.168.1.1", dst="10.0.0.1") / UDP(), PuntClass.NO_ROUTE),
                vlan=99,
            ),
            "from a VF with no VM",
        ),
        (
            replace(
                from_web1(IP(), PuntClass.NO_ROUTE), frame=b"\x00" * 12 + b"\x88\xcc" + b"\x00" * 50
            ),
            "not IPv4 or IPv6",
        ),
    ],
)
def test_never_answered(punted: PuntedFrame, why: str) -> None:
    r = rig()
    assert r.responder.handle(punted) == []
    assert r.sent == []
    assert r.responder.punt_counts() == {
        ("tor1", punt_class_key(PuntClass(punted.punt_class)), "ignored", why): 1
    }


def test_errors_are_limited_per_source_and_other_sources_still_get_theirs() -> None:
    r = rig()
    probe = IP(src="192.168.1.1", dst="10.1.2.3", ttl=1) / UDP()
    answered = sum(
        len(r.responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))) for _ in range(50)
    )
    assert answered == 20  # the burst
    other = IP(src="192.168.2.1", dst="10.1.2.3", ttl=1) / UDP()
    assert len(r.responder.handle(from_fabric(other, PuntClass.TTL_EXPIRED))) == 1
    r.clock.now += 1.0  # 10 more a second
    answered = sum(
        len(r.responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))) for _ in range(50)
    )
    assert answered == 10
    counts = r.responder.punt_counts()
    assert counts[("tor1", "ttl_expired", "rate_limited", "per-source ICMP error limit")] == 70


def test_buckets_are_bounded_and_idle_ones_go() -> None:
    limiter = RateLimiter(rate=10, burst=20, max_buckets=100)
    for i in range(1000):
        assert limiter.allow(("tor1", "red", f"10.0.{i // 256}.{i % 256}"), 0.0)
    assert len(limiter) == 100
    limiter.allow("late", 100.0)  # long after: the full buckets are dropped as it goes
    limiter.allow("later", 100.0)
    assert len(limiter) < 100


def test_a_backup_never_sends() -> None:
    r = rig()
    assert r.responder.tick() == []  # (the adverts' schedule starts)
    r.primary.discard("tor1")
    probe = IP(src="192.168.1.1", dst="10.1.2.3", ttl=1) / UDP()
    assert r.responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED)) == []
    r.clock.now += 20
    assert {e.tor for e in r.responder.tick()} == {"tor2"}  # (tor2's VMs: still primary there)
    assert {e.tor for e in r.sent} == {"tor2"}
    assert r.responder.punt_counts() == {("tor1", "ttl_expired", "not_primary", ""): 1}
    assert r.responder.sent_counts()[("tor1", "router_advert_not_primary")] >= 1


def test_echo_to_the_gateway_with_ttl_1_is_answered_not_reported() -> None:
    r = rig()
    ping = IPv6(src="2001:db8:1::a", dst="2001:db8:1::1", hlim=1) / ICMPv6EchoRequest(
        id=1, seq=2, data=b"hi"
    )
    (out,) = r.responder.handle(from_web1(ping, PuntClass.TTL_EXPIRED))
    p = Ether(out.frame)
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == ("2001:db8:1::1", "2001:db8:1::a", 64)
    assert isinstance(p[IPv6].payload, ICMPv6EchoReply)
    assert p[ICMPv6EchoReply].data == b"hi"
    lla = IPv6(src="fe80::200:aff:fe00:1", dst=GW_LLA) / ICMPv6EchoRequest(id=1, seq=3)
    (out,) = r.responder.handle(from_web1(lla, PuntClass.TO_GATEWAY))
    assert Ether(out.frame)[IPv6].src == GW_LLA
    assert r.responder.sent_counts() == {("tor1", "echo_reply"): 2}


def test_a_fragment_waits_for_its_datagram() -> None:
    from scapy.layers.inet import fragment

    r = rig()
    ping = (
        IP(src="192.168.1.1", dst="192.168.1.254", id=4)
        / ICMP(type=8, id=1, seq=1)
        / Raw(b"f" * 2000)
    )
    first, second = fragment(ping, 1200)
    assert r.responder.handle(from_web1(first, PuntClass.TO_GATEWAY)) == []
    out = r.responder.handle(from_web1(second, PuntClass.TO_GATEWAY))
    assert len(out) == 1  # 2028 bytes fit the VNI's 9000
    assert r.responder.punt_counts()[("tor1", "to_gateway", "buffered", "")] == 1


# --- router advertisements -----------------------------------------------------------


def rs(src: str) -> Packet:
    rs = IPv6(src=src, dst="ff02::2", hlim=255) / ICMPv6ND_RS()
    return rs / ICMPv6NDOptSrcLLAddr(lladdr=WEB1_MAC) if src != "::" else rs


def test_a_solicitation_is_answered_at_once_to_the_vm() -> None:
    r = rig()
    (out,) = r.responder.handle(
        from_web1(rs("fe80::200:aff:fe00:1"), PuntClass.ROUTER_SOLICITATION)
    )
    assert (out.mode, out.egress_port) == (EmitMode.PORT, 1)
    p = Ether(out.frame)
    assert (p.dst, p.src, p[Dot1Q].vlan) == (WEB1_MAC, ANYCAST_MAC, 10)
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == (GW_LLA, "fe80::200:aff:fe00:1", 255)
    ra = p[ICMPv6ND_RA]
    assert (ra.routerlifetime, ra.M, ra.O) == (1800, 0, 0)
    assert p[ICMPv6NDOptSrcLLAddr].lladdr == ANYCAST_MAC
    assert p[ICMPv6NDOptMTU].mtu == 9000
    prefix = p[ICMPv6NDOptPrefixInfo]
    assert (prefix.prefix, prefix.prefixlen, prefix.L, prefix.A) == ("2001:db8:1::", 64, 1, 0)
    assert not isinstance(prefix.payload, ICMPv6NDOptPrefixInfo)  # (the IPv4 subnet is not one)


def test_a_solicitation_to_the_gateways_own_address_is_answered_like_one_to_all_routers() -> None:
    # (RFC 4861 lets a host solicit a router at its unicast address: the data
    # plane punts that as to_gateway, a host route of the gateway's address)
    r = rig()
    unicast = IPv6(src="fe80::200:aff:fe00:1", dst=GW_LLA, hlim=255) / ICMPv6ND_RS()
    unicast = unicast / ICMPv6NDOptSrcLLAddr(lladdr=WEB1_MAC)
    (out,) = r.responder.handle(from_web1(unicast, PuntClass.TO_GATEWAY))
    p = Ether(out.frame)
    assert (out.mode, out.egress_port, p.dst, p[Dot1Q].vlan) == (EmitMode.PORT, 1, WEB1_MAC, 10)
    assert (p[IPv6].src, p[IPv6].dst) == (GW_LLA, "fe80::200:aff:fe00:1")
    assert p[ICMPv6ND_RA].routerlifetime == 1800
    assert r.responder.punt_counts()[("tor1", "to_gateway", "answered", "")] == 1
    assert r.responder.sent_counts()[("tor1", "router_advert")] == 1
    # A solicitation with a hop limit other than 255 crossed a router: not answered.
    forwarded = IPv6(src="fe80::200:aff:fe00:1", dst=GW_LLA, hlim=254) / ICMPv6ND_RS()
    assert r.responder.handle(from_web1(forwarded, PuntClass.TO_GATEWAY)) == []
    counts = r.responder.punt_counts()
    assert counts[("tor1", "to_gateway", "ignored", "an invalid router solicitation")] == 1


def test_solicitations_from_the_unspecified_address_get_multicast_adverts_3_s_apart() -> None:
    r = rig()
    r.primary.discard("tor2")  # (only web-1's VF here)
    (out,) = r.responder.handle(from_web1(rs("::"), PuntClass.ROUTER_SOLICITATION))
    p = Ether(out.frame)
    assert (p.dst, p[IPv6].dst) == ("33:33:00:00:00:01", "ff02::1")
    r.clock.now += 1.0
    assert r.responder.handle(from_web1(rs("::"), PuntClass.ROUTER_SOLICITATION)) == []
    assert r.responder.punt_counts()[("tor1", "router_solicitation", "deferred", "")] == 1
    while r.clock.now < 1002.9:
        assert r.responder.tick() == []  # (the periodic one waits too)
        r.clock.now += 0.1
    r.clock.now = 1003.0  # 3 s after the first: the deferred one goes out
    due = r.responder.tick()
    assert [(e.tor, e.egress_port) for e in due] == [("tor1", 1)]


def test_periodic_adverts_go_to_each_local_vf_within_the_intervals() -> None:
    r = rig()
    start = r.clock.now
    times: dict[tuple[str, int], list[float]] = {}
    while r.clock.now < start + 3600:
        for e in r.responder.tick():
            p = Ether(e.frame)
            assert (p.dst, p[IPv6].dst, p[IPv6].src, p[IPv6].hlim) == (
                "33:33:00:00:00:01",
                "ff02::1",
                GW_LLA,
                255,
            )
            times.setdefault((e.tor, p[Dot1Q].vlan), []).append(r.clock.now)
        r.clock.now += 0.5
    # web-1 (tor1, VLAN 10), db-1 (tor2, 20) and fw (tor2, 30); b1 is L2 only
    assert set(times) == {("tor1", 10), ("tor2", 20), ("tor2", 30)}
    for sent in times.values():
        assert sent[0] - start <= 16
        gaps = [b - a for a, b in itertools.pairwise(sent)]
        assert all(g <= 16.5 for g in gaps[:2])  # the first three, 16 s apart at most
        assert all(200 - 0.5 <= g <= 600 + 0.5 for g in gaps[3:])  # max/3 .. max


def test_adverts_follow_the_desired_state_and_their_settings() -> None:
    r = rig()
    r.responder.tick()  # (the schedule starts: every VF's first advert within 16 s)
    fabric = dual_stack_fabric()
    spec = fabric.vnis[5000]
    fabric.vnis[5000] = replace(
        spec,
        router_advertisements=RouterAdvertisements(
            interval=30, router_lifetime=0, mtu=1500, other=True
        ),
        subnets=(spec.subnets[0], replace(spec.subnets[1], slaac=True)),
    )
    vms = [vm for vm in dual_stack_vms() if vm.name != "db-1"]
    r.responder.update(View(2, fabric, {vm.name: vm for vm in vms}))
    r.clock.now += 17
    out = r.responder.tick()
    assert sorted((e.tor, Ether(e.frame)[Dot1Q].vlan) for e in out) == [("tor1", 10), ("tor2", 30)]
    p = Ether(out[0].frame)
    assert (p[ICMPv6ND_RA].routerlifetime, p[ICMPv6ND_RA].O, p[ICMPv6NDOptMTU].mtu) == (0, 1, 1500)
    assert p[ICMPv6NDOptPrefixInfo].A == 1
    fabric.vnis[5000] = replace(
        fabric.vnis[5000], router_advertisements=RouterAdvertisements(enabled=False)
    )
    r.responder.update(View(3, fabric, {vm.name: vm for vm in vms}))
    r.clock.now += 100
    assert r.responder.tick() == []
    assert r.responder.handle(from_web1(rs("fe80::1"), PuntClass.ROUTER_SOLICITATION)) == []


def test_no_ipv6_subnet_no_adverts() -> None:
    fabric = dual_stack_fabric()
    for vni in (5000, 5001):
        spec = fabric.vnis[vni]
        fabric.vnis[vni] = replace(spec, subnets=spec.subnets[:1])
    vms = [replace(vm, ips=vm.ips[:1]) for vm in dual_stack_vms()]
    r = rig(fabric, vms)
    r.clock.now += 3600
    assert r.responder.tick() == []
    assert r.responder.next_due() is None
    assert isinstance(fabric.vnis[5000].subnets[0], Subnet)


def test_the_schedule_spreads_new_vfs_and_forgets_gone_ones() -> None:
    schedule: RaSchedule[str] = RaSchedule(Random(1))
    schedule.set_vfs([(f"vf{i}", 600.0) for i in range(100)], 0.0)
    firsts = []
    now = 0.0
    while len(firsts) < 100:
        firsts += schedule.due(now)
        now += 0.25
        assert now <= 16.25
    schedule.set_vfs([("vf1", 600.0)], now)
    assert len(schedule) == 1
    assert "vf2" not in schedule


def test_the_counters_for_prometheus() -> None:
    from p4vtep.cpu.metrics import ResponderCollector
    from prometheus_client import CollectorRegistry, generate_latest

    r = rig()
    probe = IP(src="192.168.1.1", dst="10.1.2.3", ttl=1) / UDP()
    r.responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))
    r.responder.handle(
        from_web1(IP(src="192.168.1.1", dst="224.0.0.9") / UDP(), PuntClass.NO_ROUTE)
    )
    registry = CollectorRegistry()
    registry.register(ResponderCollector(r.responder))
    text = generate_latest(registry).decode()
    assert (
        'p4vtep_cpu_punts_total{class="ttl_expired",outcome="answered",reason="",tor="tor1"} 1.0'
        in text
    )
    assert (
        'p4vtep_cpu_punts_total{class="no_route",outcome="ignored",'
        'reason="a multicast or broadcast destination",tor="tor1"} 1.0' in text
    )
    assert 'p4vtep_cpu_sent_total{kind="time_exceeded",tor="tor1"} 1.0' in text


def test_a_view_source_is_read_at_most_once_a_second_under_churn() -> None:
    fabric, vms = dual_stack_fabric(), {vm.name: vm for vm in dual_stack_vms()}
    reads = []

    def source() -> View:
        reads.append(1)
        return View(len(reads), fabric, dict(vms))

    clock = Clock()
    sent: list[Emit] = []
    responder = Responder(source, sent.append, lambda tor: True, clock=clock, rng=Random(1))
    probe = IP(src="192.168.1.1", dst="10.1.2.3", ttl=1) / UDP()
    assert len(responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))) == 1
    assert len(reads) == 1
    del vms["web-1"]  # detached; many commits follow within the second
    for _ in range(10):
        responder.changed()
        responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))
        clock.now += 0.05
    assert len(reads) == 1  # (web-1 still answered from the view before)
    clock.now += 1.0
    assert responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED)) == []
    assert len(reads) == 2
    counts = responder.punt_counts()
    assert counts[("tor1", "ttl_expired", "ignored", "from a VF with no VM")] == 1


# --- packet too big ---------------------------------------------------------------------
def small_mtus() -> Fabric:
    """dual_stack_fabric with VNI 5000 (web-1, fw) at MTU 1280 and VNI 5001
    (db-1) at 1400."""
    fabric = dual_stack_fabric()
    for number, mtu in ((5000, 1280), (5001, 1400)):
        vni = fabric.vnis[number]
        fabric.vnis[number] = replace(vni, router_advertisements=RouterAdvertisements(mtu=mtu))
    return fabric


def too_big(src: str, dst: str, size: int) -> Packet:
    """An IPv6 packet of ``size`` bytes (UDP)."""
    return IPv6(src=src, dst=dst, hlim=63) / UDP(sport=7, dport=9) / Raw(b"b" * (size - 48))


def test_packet_too_big_to_a_local_vm_carries_the_destination_vnis_mtu() -> None:
    """web-1 (VNI 5000) sends 1401 bytes to db-1 (VNI 5001, MTU 1400): the
    ICMPv6 Packet Too Big goes out of web-1's VF, from its subnet's
    gateway, with db-1's VNI's MTU, quoting the packet (here whole)."""
    r = rig(small_mtus())
    packet = too_big("2001:db8:1::a", "2001:db8:2::a", 1401)
    (out,) = r.responder.handle(from_web1(packet, PuntClass.PACKET_TOO_BIG))
    assert (out.tor, out.mode, out.egress_port, out.vni) == ("tor1", EmitMode.PORT, 1, 0)
    p = Ether(out.frame)
    assert (p.dst, p.src, p[Dot1Q].vlan, p[Dot1Q].type) == (WEB1_MAC, ANYCAST_MAC, 10, 0x86DD)
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == ("2001:db8:1::1", "2001:db8:1::a", 64)
    ptb = p[IPv6].payload
    assert isinstance(ptb, ICMPv6PacketTooBig)
    assert (ptb.type, ptb.code, ptb.mtu) == (2, 0, 1400)
    error = bytes(p[IPv6])
    assert len(error) == 1280
    assert error[48:] == bytes(packet)[:1232]
    assert r.responder.punt_counts() == {("tor1", "packet_too_big", "answered", ""): 1}
    assert r.responder.sent_counts() == {("tor1", "packet_too_big"): 1}


def test_packet_too_big_from_the_fabric_is_routed_back_in_the_vrf() -> None:
    """db-1 behind tor2 sends 1281 bytes to web-1 (VNI 5000, MTU 1280), which
    tor1 punts after decap: routed back in the L3 VNI with MTU 1280 (the
    destination VNI's, not the sender's 1400)."""
    r = rig(small_mtus())
    packet = too_big("2001:db8:2::a", "2001:db8:1::a", 1281)
    (out,) = r.responder.handle(from_fabric(packet, PuntClass.PACKET_TOO_BIG))
    assert (out.mode, out.egress_port, out.vni) == (EmitMode.ROUTE, 0, L3VNI)
    p = Ether(out.frame)
    assert (p.src, p.dst, p.type) == (ANYCAST_MAC, TOR1_RMAC, 0x86DD)
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == ("2001:db8:2::1", "2001:db8:2::a", 65)
    assert p[ICMPv6PacketTooBig].mtu == 1280
    assert bytes(p[IPv6])[48:] == bytes(packet)[:1232]


def test_packet_too_big_through_a_static_route_takes_its_next_hops_vni() -> None:
    """To the outside through ::/0 (next hop fw, VNI 5000): MTU 1280."""
    r = rig(small_mtus())
    packet = too_big("2001:db8:2::a", "2001:4860::8888", 1300)
    (out,) = r.responder.handle(from_fabric(packet, PuntClass.PACKET_TOO_BIG))
    assert Ether(out.frame)[ICMPv6PacketTooBig].mtu == 1280


@pytest.mark.parametrize(
    ("packet", "why"),
    [
        (too_big("2001:db8:1::a", "2001:db8:2::a", 1400), "not longer than its VNI's MTU"),
        (IP(src="192.168.1.1", dst="192.168.2.1") / Raw(b"4" * 1500), "not IPv6"),
        (
            IPv6(src="2001:db8:1::a", dst="2001:db8:2::a")
            / ICMPv6PacketTooBig(mtu=1400)
            / Raw(b"q" * 1400),
            "an ICMP error",
        ),
        (too_big("2001:db8:1::a", "ff0e::1", 1500), "a multicast or broadcast destination"),
        (
            too_big("2001:db8:1::a", "fd00:77::1", 1500),
            "its destination is in none of the VRF's VNIs",
        ),
    ],
)
def test_packet_too_big_never_answered(packet: Packet, why: str) -> None:
    fabric = small_mtus()
    if why.startswith("its destination"):  # (no default route: nothing leads there)
        fabric.vrfs["red"] = replace(fabric.vrfs["red"], routes=())
    r = rig(fabric)
    assert r.responder.handle(from_web1(packet, PuntClass.PACKET_TOO_BIG)) == []
    assert r.sent == []
    assert r.responder.punt_counts() == {("tor1", "packet_too_big", "ignored", why): 1}


def test_packet_too_big_shares_the_senders_error_bucket() -> None:
    """The per-source limit counts every ICMP error to a sender: 20 at once
    (time exceeded and packet too big together), then 10 a second."""
    r = rig(small_mtus())
    probe = IPv6(src="2001:db8:1::a", dst="2001:db8:7::1", hlim=1) / UDP()
    for _ in range(15):
        assert len(r.responder.handle(from_web1(probe, PuntClass.TTL_EXPIRED))) == 1
    packet = too_big("2001:db8:1::a", "2001:db8:2::a", 1401)
    answered = sum(
        len(r.responder.handle(from_web1(packet, PuntClass.PACKET_TOO_BIG))) for _ in range(10)
    )
    assert answered == 5
    counts = r.responder.punt_counts()
    assert counts[("tor1", "packet_too_big", "rate_limited", "per-source ICMP error limit")] == 5


def test_a_tors_vfs_start_advertising_once_it_holds_its_entries() -> None:
    """Until a ToR holds its entries (the controller: its first write pass
    done) its VFs get no adverts, not even counted as skipped; from then,
    each gets its first within 16 s, as a new VF would."""
    ready = {"tor2"}
    view = View(1, dual_stack_fabric(), {vm.name: vm for vm in dual_stack_vms()})
    clock = Clock()
    sent: list[Emit] = []
    responder = Responder(
        view, sent.append, lambda tor: True, clock=clock, rng=Random(7), ready=ready.__contains__
    )
    for _ in range(40):
        responder.tick()
        clock.now += 0.5
    assert {e.tor for e in sent} == {"tor2"}
    assert ("tor1", "router_advert_not_primary") not in responder.sent_counts()
    ready.add("tor1")
    became_ready = clock.now
    first: dict[int, float] = {}
    while clock.now < became_ready + 20:
        for e in responder.tick():
            if e.tor == "tor1":
                first.setdefault(Ether(e.frame)[Dot1Q].vlan, clock.now)
        clock.now += 0.5
    assert set(first) == {10}  # web-1
    assert first[10] - became_ready <= 16.5
