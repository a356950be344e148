"""The CPU path on two BMv2 ToRs driven by the controller (issue 39): what a
ToR punts reaches the controller's responder, which answers as a router on
the wire would. A traceroute's probes from a VM on tor1 to a VM in another
subnet on tor2 get time exceeded from each ToR (tor2's over the L3 VNI) and
then reach the target, for both families; an unrouted destination gets
"net unreachable" / "no route"; the gateway answers an echo request with
TTL 1, with IP options and in fragments; a Router Solicitation gets an
advertisement with the VNI's prefix, and periodic ones arrive unasked; an
IPv6 packet longer than the destination VNI's MTU gets Packet Too Big from
the far ToR; a
TTL-1 flood at 10x the CoPP rate is policed to that rate in the data plane
while a migration goes through; a backup controller answers nothing."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from helpers import wait_until
from p4vtep.controller import Controller
from p4vtep.cpu.frames import PuntedFrame
from p4vtep.cpu.metrics import ResponderCollector
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, punt_counts
from p4vtep.dataplane.packet_io import PuntClass
from p4vtep.model.fabric import RouterAdvertisements, Vm
from p4vtep.runtime.client import SwitchConnection
from p4vtep.state.sqlite_store import Store
from prometheus_client import CollectorRegistry, generate_latest
from scapy.layers.inet import (
    ICMP,
    IP,
    UDP,
    IPerror,
    IPOption_Router_Alert,
    UDPerror,
    defragment,
    fragment,
)
from scapy.layers.inet6 import (
    ICMPv6DestUnreach,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptMTU,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    ICMPv6PacketTooBig,
    ICMPv6TimeExceeded,
    IPerror6,
    IPv6,
    IPv6ExtHdrFragment,
    defragment6,
    fragment6,
)
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
from scapy.utils import wrpcap
from switch_fabric import (
    ANYCAST,
    GATEWAY_LLA,
    needs_switch,
    route_dual_stack_tenant,
    routed_fabric_fixtures,
    send_frames,
    start_controller,
)

pytestmark = needs_switch()

WEB = Vm("web", "02:0c:00:00:00:01", ("192.168.1.10", "2001:db8:1::10"), 5000, "s11", 10)
DB = Vm("db", "02:0c:00:00:01:01", ("192.168.2.10", "2001:db8:2::10"), 5001, "s21", 11)
APP = Vm("app", "02:0c:00:00:00:02", ("192.168.1.11", "2001:db8:1::11"), 5000, "s12", 12)
VMS = [WEB, DB, APP]
GATEWAY4 = {5000: "192.168.1.254", 5001: "192.168.2.254"}
GATEWAY6 = {5000: "2001:db8:1::1", 5001: "2001:db8:2::1"}
RA_INTERVAL = 4  # the smallest MaxRtrAdvInterval (RFC 4861): the first comes within it


DB_MTU = 1400  # VNI 5001's (db's): packet too big from web (VNI 5000, 9000)


def route(sf) -> None:
    """Tenant red, two dual-stack subnets, no route beyond them; db's VNI
    with a 1400-byte MTU."""
    route_dual_stack_tenant(sf, router_advertisements=RouterAdvertisements(interval=RA_INTERVAL))
    vni = sf.fabric.vnis[DB.vni]
    sf.fabric.vnis[DB.vni] = replace(
        vni, router_advertisements=replace(vni.router_advertisements, mtu=DB_MTU)
    )


sf, controller = routed_fabric_fixtures(route, VMS)


def tagged(vm: Vm, packet) -> Ether:
    """``packet`` as ``vm`` sends it to its gateway, with its VF tag."""
    return Ether(src=vm.mac, dst=ANYCAST) / Dot1Q(vlan=vm.vlan) / packet


def answers(sf, vm: Vm, frames, timeout: float = 2.0) -> list[Ether]:
    """Send ``frames`` from ``vm``'s VF; what comes back to it."""
    iface = sf.host_ifaces[vm.server]
    return [Ether(data) for data in send_frames(iface, frames, iface, timeout)]


def from_gateway(frames: list[Ether], vm: Vm, layer) -> list[Ether]:
    """The frames to ``vm`` from the anycast MAC on its VLAN that carry ``layer``."""
    return [
        f
        for f in frames
        if f.haslayer(layer) and f.src == ANYCAST and f.dst == vm.mac and f[Dot1Q].vlan == vm.vlan
    ]


def assert_checksums(ip: IP) -> None:
    """The IPv4 and ICMP checksums as sent are what scapy computes."""
    for layer in (IP, ICMP):
        sent = IP(bytes(ip))
        want = sent[layer].chksum
        del sent[layer].chksum
        assert IP(bytes(sent))[layer].chksum == want, layer.__name__


def probe4(ttl: int, sport: int) -> IP:
    return IP(src=WEB.ips[0], dst=DB.ips[0], ttl=ttl, id=sport) / UDP(sport=sport, dport=33434)


def probe6(hlim: int, sport: int) -> IPv6:
    return IPv6(src=WEB.ips[1], dst=DB.ips[1], hlim=hlim) / UDP(sport=sport, dport=33434)


def test_traceroute_ipv4_lists_both_tors_then_reaches_the_target(sf, controller):
    """TTL 1 expires at tor1, TTL 2 at tor2 (its error routed back over the
    L3 VNI); both come from the gateway of the sender's subnet and quote the
    probe; TTL 3 reaches db."""
    for ttl, tor in ((1, "tor1"), (2, "tor2")):
        before = controller.responder.punt_counts()
        got = from_gateway(answers(sf, WEB, [tagged(WEB, probe4(ttl, 40000 + ttl))]), WEB, ICMP)
        assert len(got) == 1, got
        error = got[0][IP]
        assert (error.src, error.dst) == (GATEWAY4[5000], WEB.ips[0])
        assert (error[ICMP].type, error[ICMP].code) == (11, 0)
        quoted = error[ICMP].payload
        assert quoted[IPerror].dst == DB.ips[0]
        assert quoted[UDPerror].sport == 40000 + ttl
        assert_checksums(error)
        key = (tor, "ttl_expired", "answered", "")
        assert controller.responder.punt_counts().get(key, 0) == before.get(key, 0) + 1
    # What Prometheus scrapes (api/metrics.py serves the responder's counters).
    registry = CollectorRegistry()
    registry.register(ResponderCollector(controller.responder))
    text = generate_latest(registry).decode()
    for tor in ("tor1", "tor2"):
        labels = f'class="ttl_expired",outcome="answered",reason="",tor="{tor}"'
        assert f"p4vtep_cpu_punts_total{{{labels}}}" in text, text
    iface = sf.host_ifaces[DB.server]
    got = [
        Ether(d)
        for d in send_frames(sf.host_ifaces[WEB.server], [tagged(WEB, probe4(3, 40003))], iface)
    ]
    assert any(f.haslayer(UDP) and f[UDP].sport == 40003 and f[IP].ttl == 1 for f in got), got


def test_traceroute_ipv6_lists_both_tors_then_reaches_the_target(sf, controller):
    for hlim, tor in ((1, "tor1"), (2, "tor2")):
        before = controller.responder.punt_counts()
        got = answers(sf, WEB, [tagged(WEB, probe6(hlim, 41000 + hlim))])
        got = from_gateway(got, WEB, ICMPv6TimeExceeded)
        assert len(got) == 1, got
        error = got[0][IPv6]
        assert (error.src, error.dst) == (GATEWAY6[5000], WEB.ips[1])
        assert error[ICMPv6TimeExceeded].code == 0
        quoted = error[ICMPv6TimeExceeded].payload
        assert quoted[IPerror6].dst == DB.ips[1]
        assert quoted[UDPerror].sport == 41000 + hlim
        key = (tor, "ttl_expired", "answered", "")
        assert controller.responder.punt_counts().get(key, 0) == before.get(key, 0) + 1
    got = [
        Ether(d)
        for d in send_frames(
            sf.host_ifaces[WEB.server],
            [tagged(WEB, probe6(3, 41003))],
            sf.host_ifaces[DB.server],
        )
    ]
    assert any(f.haslayer(UDP) and f[UDP].sport == 41003 for f in got), got


def test_an_unrouted_destination_is_net_unreachable(sf, controller):
    v4 = IP(src=WEB.ips[0], dst="10.99.0.1") / UDP(sport=42000, dport=53)
    v6 = IPv6(src=WEB.ips[1], dst="2001:db8:99::1") / UDP(sport=42001, dport=53)
    got = answers(sf, WEB, [tagged(WEB, v4), tagged(WEB, v6)])
    icmp4 = from_gateway(got, WEB, ICMP)
    assert [(f[ICMP].type, f[ICMP].code, f[IP].src) for f in icmp4] == [(3, 0, GATEWAY4[5000])], (
        controller.responder.punt_counts(),
        [f.summary() for f in got],
    )
    assert icmp4[0][IPerror].dst == "10.99.0.1"
    icmp6 = from_gateway(got, WEB, ICMPv6DestUnreach)
    assert [(f[ICMPv6DestUnreach].code, f[IPv6].src) for f in icmp6] == [(0, GATEWAY6[5000])]


def sized6(size: int, sport: int) -> IPv6:
    """web's IPv6 packet to db, ``size`` bytes long (UDP)."""
    return (
        IPv6(src=WEB.ips[1], dst=DB.ips[1], hlim=64)
        / UDP(sport=sport, dport=9)
        / Raw(b"m" * (size - 48))
    )


def test_packet_too_big_from_the_far_tor_reaches_the_sender(sf, controller):
    """web (tor1) sends db (tor2, VNI 5001, MTU 1400) 1401 bytes: tor1 routes
    it over the L3 VNI, tor2 punts it after decap instead of delivering it,
    and its Packet Too Big, routed back over the L3 VNI, reaches web from
    its subnet's gateway with db's VNI's MTU, quoting the packet. 1400 bytes
    reach db."""
    before = controller.responder.punt_counts()
    big = sized6(DB_MTU + 1, 45001)
    got = answers(sf, WEB, [tagged(WEB, big)], timeout=3.0)
    ptbs = from_gateway(got, WEB, ICMPv6PacketTooBig)
    assert len(ptbs) == 1, ([f.summary() for f in got], controller.responder.punt_counts())
    error = ptbs[0][IPv6]
    assert (error.src, error.dst) == (GATEWAY6[5000], WEB.ips[1])
    ptb = error[ICMPv6PacketTooBig]
    assert (ptb.type, ptb.code, ptb.mtu) == (2, 0, DB_MTU)
    message = bytes(ptb)
    assert len(bytes(error)) == 1280  # as much of the packet as fits
    # the packet as tor1 routed it (hop limit - 1), cut to the quote
    assert message[8:] == bytes(IPv6(bytes(big)[:7] + b"\x3f" + bytes(big)[8:]))[:1232]
    sent = IPv6(bytes(error))
    want = sent[ICMPv6PacketTooBig].cksum
    del sent[ICMPv6PacketTooBig].cksum
    assert IPv6(bytes(sent))[ICMPv6PacketTooBig].cksum == want
    key = ("tor2", "packet_too_big", "answered", "")
    assert controller.responder.punt_counts().get(key, 0) == before.get(key, 0) + 1
    counts = read_punt_counts(sf, "tor2")[int(PuntClass.PACKET_TOO_BIG)]
    assert counts[0] >= 1  # (its CoPP meter passed it)
    fits = [
        Ether(d)
        for d in send_frames(
            sf.host_ifaces[WEB.server],
            [tagged(WEB, sized6(DB_MTU, 45002))],
            sf.host_ifaces[DB.server],
        )
    ]
    assert any(
        f.haslayer(UDP) and f[UDP].sport == 45002 and len(f[IPv6]) == DB_MTU for f in fits
    ), [f.summary() for f in fits]


def test_the_gateway_answers_echo_with_ttl_1_options_and_fragments(sf, controller):
    gateway = GATEWAY4[5000]
    ttl1 = IP(src=WEB.ips[0], dst=gateway, ttl=1) / ICMP(id=7, seq=1) / Raw(b"ttl one")
    options = (
        IP(src=WEB.ips[0], dst=gateway, options=[IPOption_Router_Alert()])
        / ICMP(id=7, seq=2)
        / Raw(b"options")
    )
    big = IP(src=WEB.ips[0], dst=gateway, id=4242) / ICMP(id=7, seq=3) / Raw(b"f" * 1200)
    pieces = fragment(big, fragsize=600)
    assert len(pieces) > 1
    sent = [tagged(WEB, p) for p in (ttl1, options, *pieces)]
    got = from_gateway(answers(sf, WEB, sent, timeout=3.0), WEB, IP)
    replies = [f[IP] for f in got if f[IP].src == gateway and f[IP].dst == WEB.ips[0]]
    # The fragmented request's reply comes whole or in fragments (it fits
    # the subnet's MTU here): reassembled, every reply is one echo reply.
    echoes = {p[ICMP].seq: p for p in defragment(replies) if p.haslayer(ICMP)}
    assert sorted(echoes) == [1, 2, 3], [p.summary() for p in replies]
    assert all(p[ICMP].type == 0 and p[ICMP].id == 7 for p in echoes.values())
    assert bytes(echoes[1][ICMP].payload) == b"ttl one"
    assert bytes(echoes[2][ICMP].payload) == b"options"
    assert bytes(echoes[3][ICMP].payload) == b"f" * 1200
    for p in echoes.values():
        assert_checksums(p)


def test_the_gateway_answers_echo_sent_in_full_size_fragments_both_families(sf, controller):
    # 1500-byte fragments (1518-byte frames), longer than what BMv2 keeps of
    # any other punt: a frame to a gateway address is punted whole.
    gateway4, gateway6 = GATEWAY4[5000], GATEWAY6[5000]
    big4 = IP(src=WEB.ips[0], dst=gateway4, id=4343) / ICMP(id=8, seq=1) / Raw(b"g" * 2952)
    big6 = IPv6(src=WEB.ips[1], dst=gateway6) / IPv6ExtHdrFragment(id=4344)
    big6 = big6 / ICMPv6EchoRequest(id=8, seq=2, data=b"h" * 2880)
    pieces = [*fragment(big4, fragsize=1480), *fragment6(big6, 1500)]
    firsts = [p for p in pieces if p.haslayer(IP) and p[IP].flags.MF] + [
        p for p in pieces if p.haslayer(IPv6ExtHdrFragment) and p[IPv6ExtHdrFragment].m
    ]
    assert len(firsts) == 2
    assert min(len(p) for p in firsts) > 1400  # (+ 18 B of Ethernet and VF tag)
    got = answers(sf, WEB, [tagged(WEB, p) for p in pieces], timeout=3.0)
    replies4 = [f[IP] for f in from_gateway(got, WEB, IP) if f[IP].src == gateway4]
    (echo4,) = [p for p in defragment(replies4) if p.haslayer(ICMP)]
    assert (echo4[ICMP].type, echo4[ICMP].id, echo4[ICMP].seq) == (0, 8, 1)
    assert bytes(echo4[ICMP].payload) == b"g" * 2952
    assert_checksums(echo4)
    replies6 = [f[IPv6] for f in from_gateway(got, WEB, IPv6) if f[IPv6].src == gateway6]
    assert replies6, [f.summary() for f in got]
    whole6 = replies6[0] if len(replies6) == 1 else defragment6(replies6)
    echo6 = whole6[ICMPv6EchoReply]
    assert (echo6.id, echo6.seq, bytes(echo6.data)) == (8, 2, b"h" * 2880)
    sent6 = IPv6(bytes(whole6))
    want = sent6[ICMPv6EchoReply].cksum
    del sent6[ICMPv6EchoReply].cksum
    assert IPv6(bytes(sent6))[ICMPv6EchoReply].cksum == want


def test_a_router_solicitation_gets_the_vnis_advertisement(sf, controller):
    rs = IPv6(src="fe80::c:ff:fe00:1", dst="ff02::2", hlim=255) / ICMPv6ND_RS()
    rs = rs / ICMPv6NDOptSrcLLAddr(lladdr=WEB.mac)
    sent = Ether(src=WEB.mac, dst="33:33:00:00:00:02") / Dot1Q(vlan=WEB.vlan) / rs
    got = [
        f
        for f in answers(sf, WEB, [sent], timeout=2.0)
        if f.haslayer(ICMPv6ND_RA) and f[IPv6].dst == "fe80::c:ff:fe00:1"
    ]
    assert len(got) == 1, got
    ra = got[0]
    assert (ra.src, ra.dst, ra[Dot1Q].vlan) == (ANYCAST, WEB.mac, WEB.vlan)
    assert (ra[IPv6].src, ra[IPv6].hlim) == (GATEWAY_LLA, 255)
    assert ra[ICMPv6ND_RA].routerlifetime > 0
    prefix = ra[ICMPv6NDOptPrefixInfo]
    assert (prefix.prefix, prefix.prefixlen, prefix.L, prefix.A) == ("2001:db8:1::", 64, 1, 0)
    assert ra[ICMPv6NDOptSrcLLAddr].lladdr == ANYCAST
    assert ra[ICMPv6NDOptMTU].mtu == 9000


def test_periodic_advertisements_come_unasked(sf, controller):
    iface = sf.host_ifaces[WEB.server]
    got = [
        Ether(d) for d in send_frames(iface, [], iface, timeout=RA_INTERVAL + 2)
    ]  # (the first within the interval; the controller started with the test)
    ras = [f for f in got if f.haslayer(ICMPv6ND_RA) and f.dst == "33:33:00:00:00:01"]
    assert ras, [f.summary() for f in got]
    assert all(f[Dot1Q].vlan == WEB.vlan and f[IPv6].dst == "ff02::1" for f in ras)


def read_punt_counts(sf, tor: str) -> dict[int, tuple[int, int]]:
    pipeline = bmv2_pipeline()
    entries = PipelineEntries(pipeline.p4info)
    address = sf.fabric.tors[tor].address
    with SwitchConnection(address, sf.fabric.tors[tor].device_id, election_id=0) as conn:
        read = conn.read(*entries.punt_counters())
    return {
        cls: (counts.punted_packets, counts.copp_dropped_packets)
        for cls, counts in punt_counts(pipeline.p4info, read).items()
    }


def test_a_ttl_1_flood_is_policed_in_the_data_plane_and_a_migration_goes_through(
    sf, controller, tmp_path: Path
):
    """10x the CoPP rate of TTL-1 frames for 2 s (tcpreplay): the switch
    hands the controller at most its rate (plus the burst), drops and counts
    the rest, and a VM migrated meanwhile lands; another VM's probe is
    still answered afterwards (the responder's limit is per source)."""
    rate = sf.fabric.copp[PuntClass.TTL_EXPIRED]
    pcap = tmp_path / "flood.pcap"
    wrpcap(str(pcap), [tagged(WEB, probe4(1, 43000 + i)) for i in range(50)])
    before = read_punt_counts(sf, "tor1").get(int(PuntClass.TTL_EXPIRED), (0, 0))
    flood = subprocess.Popen(
        [
            "tcpreplay",
            f"--intf1={sf.host_ifaces[WEB.server]}",
            f"--pps={10 * rate.pps}",
            "--loop=40",  # 2,000 frames: 2 s
            str(pcap),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    started = time.monotonic()
    controller.migrate(APP.name, "s22", 13)  # (make-before-break: acked when landed)
    flood.wait(timeout=30)
    elapsed = time.monotonic() - started
    assert flood.returncode == 0, flood.stderr.read() if flood.stderr else ""
    after = read_punt_counts(sf, "tor1")[int(PuntClass.TTL_EXPIRED)]
    punted, dropped = after[0] - before[0], after[1] - before[1]
    assert punted + dropped == 2000
    assert punted <= rate.pps * (elapsed + 1) + rate.burst + 1, (punted, elapsed)
    assert dropped >= 2000 - punted > 0
    moved = controller.get(APP.name)
    assert (moved.server, moved.vlan) == ("s22", 13)
    controller.migrate(APP.name, APP.server, APP.vlan)
    probe = tagged(APP, IP(src=APP.ips[0], dst=DB.ips[0], ttl=1) / UDP(sport=43999, dport=9))
    got = from_gateway(answers(sf, APP, [probe]), APP, ICMP)
    assert [(f[ICMP].type, f[IP].dst) for f in got] == [(11, APP.ips[0])]


def test_a_backup_controller_answers_nothing(sf, tmp_path: Path):
    """Two controllers on the same switches: the primary answers a probe
    once; the backup gets no packet-in, sends no packet-out, and handed a
    punted frame anyway builds nothing."""
    primary = start_controller(sf, tmp_path / "primary.db", VMS, election_id=10)
    backup = Controller(
        sf.fabric,
        bmv2_pipeline(),
        Store(tmp_path / "backup.db"),
        election_id=5,
        resync_seconds=3600,
    )
    backup.start()
    try:
        assert wait_until(lambda: all(s.status.connected for s in backup.supervisors.values()))
        assert not any(s.status.primary for s in backup.supervisors.values())
        got = from_gateway(answers(sf, WEB, [tagged(WEB, probe4(1, 44000))]), WEB, ICMP)
        assert len(got) == 1  # the primary's answer, once
        assert sum(s.packet_ins + s.packet_outs for s in backup.supervisors.values()) == 0
        assert backup.responder.sent_counts() == {}
        frame = bytes(tagged(WEB, probe4(1, 44001)))
        punted = PuntedFrame("tor1", int(PuntClass.TTL_EXPIRED), 1, WEB.vni, WEB.vlan, frame)
        assert backup.responder.handle(punted) == []
        outcomes = Counter()
        for key, count in backup.responder.punt_counts().items():
            outcomes[key[2]] += count
        assert outcomes == Counter({"not_primary": 1})
    finally:
        backup.stop()
        primary.stop()
