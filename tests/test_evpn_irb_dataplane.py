"""Symmetric IRB between a p4vtep ToR (BMv2) and an FRR 8.4 VTEP, data plane:
a VM in a subnet behind the ToR and a host in another subnet behind Linux
route to each other over the VRF's L3 VNI, and a routed VM migrates from the
ToR to the FRR host and back; over IPv4, and over IPv6 with the tenant
dual-stack on both sides.

    [ns vma] a1 192.168.2.1 (vlan 10) ─ port 1 ┐
    host     probe 192.168.2.2 (vlan 20) port 2 ├ [tor1 BMv2] port 3 ══ up0 [ns frr] zebra+bgpd
    [ns mvt] mover 192.168.1.3 (vlan 30) port 4 ┘     (s3: the wire)    vxlan50000/5007/5000
                                                                         │ (underlay here)
    [ns ctl] gobgpd (the controller's speaker) ── ctl0/frr0 ──┘          ▼
                                        FRR's VRF: br50000 (router MAC), br5007 192.168.7.1
                                        ── vm0 192.168.7.10 [ns vm]; br5000 192.168.1.254
                                        (the fabric's anycast gateway) ── mv0 [ns vm·mv]

In the IPv6 lab every one of them has an IPv6 address beside its IPv4 one
(a1 2001:db8:2::11, the probe 2001:db8:2::12, the mover 2001:db8:1::13;
FRR's VM fd00:7::10 behind fd00:7::1; FRR's br5000 2001:db8:1::1, the
anycast gateway), and the tests route IPv6: FRR's VRF imports our IPv6
routes with next hop ``::ffff:<our VTEP>``, the ToR takes FRR's into
``ipv6_host_route``/``ipv6_prefix_route``; the outer header is IPv4 either
way. FRR's hosts do not forward IPv6 (net.ipv6.conf.all.forwarding=0, set
by frr_irb_lab.py): a host that does answers neighbour solicitations as a
router, FRR then puts the ND extended community on its MAC+IPv6 route and
GoBGP takes that route as withdrawn (docs/evpn.md, "Two GoBGP pitfalls";
tests/test_evpn_ipv6_frr.py pins it).

The fabric file names FRR only as a BGP peer. FRR programs the Linux side
itself from what it learned from us: with the namespace VRF backend (this
kernel has no VRF devices) the VRF is a network namespace whose VXLAN devices
keep FRR's namespace as their underlay (frr_irb_lab.py); with ``vrf`` (a
kernel VRF device, the usual layout) the IPv4 tests run where the kernel has
VRF devices, and skip with the reason where it has not.

Every frame is checked exactly (scapy), both directions: what the ToR sends
onto the wire (outer header, VNI 50000, FRR's router MAC, TTL or hop limit
- 1), what reaches FRR's VM (- 2: routed by both VTEPs), what FRR sends (its
router MAC to ours, - 1), what the ToR delivers.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from fabric_fixture import ANYCAST_MAC
from frr_irb_lab import (
    FRR_RMAC,
    FRR_VNI,
    L3VNI,
    VM_MAC,
    FrrIrbLab,
    SharedVni,
    kernel_vrf_missing,
    our_evpn_config,
)
from frr_lab import needs_frr, start_evpn_controller
from netns_socket import Capture, send_frame
from p4vtep.compiler import Encoder
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.model.fabric import Fabric, Server, Subnet, Tor, Uplink, Vm, Vni, Vrf
from p4vtep.processes import stop_processes
from p4vtep.runtime.client import SwitchConnection
from p4vtep.sources.evpn import EvpnSource
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from p4vtep.switch.reconciler import SwitchReader
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw
from switch_fabric import needs_switch, read_back_matches
from vm_netns import vm_behind_port

pytestmark = [pytest.mark.evpn, needs_frr(), *needs_switch()]

TOR_VTEP, TOR_MAC = "10.0.0.1", "00:aa:00:00:00:01"  # (TOR_MAC: its router MAC too)
UP_MAC = "00:5e:00:00:99:01"  # FRR's underlay interface, the ToR's next hop
# The ToR's VMs, dual-stack as in the IPv6 lab (the IPv4 lab's have their
# IPv4 address only: Family.vm).
A1 = Vm("a1", "00:00:0a:00:02:01", ("192.168.2.1", "2001:db8:2::11"), 5001, "s1", 10)
PROBE = Vm("probe", "00:00:0a:00:02:02", ("192.168.2.2", "2001:db8:2::12"), 5001, "s2", 20)
MOVER = Vm("mover", "00:00:0a:00:01:03", ("192.168.1.3", "2001:db8:1::13"), 5000, "s4", 30)
# Keeps the mover's subnet (VNI 5000) on the ToR while the mover is away.
STAY = Vm("stay", "00:00:0a:00:01:04", ("192.168.1.4", "2001:db8:1::14"), 5000, "s2", 21)
GATEWAYS = {5000: "192.168.1.254", 5001: "192.168.2.254"}
GATEWAYS6 = {5000: "2001:db8:1::1", 5001: "2001:db8:2::1"}
OUTER_TTL = 64  # p4src/include/defines.p4
VXLAN_PORT = 4789
ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)


@dataclass(frozen=True)
class Family:
    """The address family a lab's tests route: IPv4 (the tenant IPv4 only),
    or IPv6 (the tenant dual-stack on both sides)."""

    name: str  # "ipv4" or "ipv6", as FRR's show commands spell it
    index: int  # of a VM's addresses (A1..., FrrIrbLab.vm_ips: IPv4 first)
    our_subnet: str  # VNI 5001's: a1's and the probe's
    our_vtep: str  # our VTEP as the next hop of this family's routes in FRR's VRF

    @property
    def dual_stack(self) -> bool:
        return self.name == "ipv6"

    @property
    def ip_flag(self) -> str:
        """``ip`` and ``ping``'s option for the family: -4 or -6."""
        return "-6" if self.dual_stack else "-4"

    def ip(self, vm: Vm) -> str:
        """``vm``'s address of this family."""
        return vm.ips[self.index]

    def vm(self, vm: Vm) -> Vm:
        """``vm`` as this lab's tenant has it."""
        return vm if self.dual_stack else replace(vm, ips=vm.ips[:1])

    def subnets(self, vni: int, n: int) -> tuple[Subnet, ...]:
        """VRF red's subnets of ``vni`` (192.168.<n>.0/24, 2001:db8:<n>::/64)."""
        ipv4 = Subnet(f"192.168.{n}.0/24", GATEWAYS[vni])
        return (ipv4, Subnet(f"2001:db8:{n}::/64", GATEWAYS6[vni])) if self.dual_stack else (ipv4,)

    def gateways(self, vni: int) -> list[str]:
        """The gateway addresses of ``vni``'s subnets, the IPv6 one first."""
        return [GATEWAYS6[vni], GATEWAYS[vni]] if self.dual_stack else [GATEWAYS[vni]]


IPV4 = Family("ipv4", 0, "192.168.2.0/24", TOR_VTEP)
IPV6 = Family("ipv6", 1, "2001:db8:2::/64", f"::ffff:{TOR_VTEP}")


@dataclass
class Lab:
    frr: FrrIrbLab
    family: Family
    switch: Bmv2Switch
    fabric: Fabric
    store: Path
    wire: str  # the ToR's end of its uplink to FRR (port 3), in this namespace
    ifaces: dict[int, str]  # ToR port -> its far end
    vma: str  # a1's namespace
    mvt: str  # the mover's namespace on the ToR side
    controller: Controller | None = None
    source: EvpnSource | None = None

    @property
    def ctl(self) -> Controller:
        assert self.controller is not None
        return self.controller

    @property
    def evpn(self) -> EvpnService:
        assert self.source is not None
        return self.source.service

    @property
    def frr_vm_ip(self) -> str:
        """FRR's VM's address of the family routed."""
        return self.frr.vm_ips[self.family.index]

    def start_controller(self) -> None:
        """As the CLI does: the EVPN source first, then the supervisors."""
        self.controller, self.source = start_evpn_controller(
            self.fabric, self.store, self.frr.ctl_ns, self.frr.ctl_ip
        )

    def stop_controller(self) -> None:
        if self.controller is not None:
            self.controller.stop()
        if self.source is not None:
            self.source.stop()


def _fabric(grpc: str, frr: FrrIrbLab, family: Family) -> Fabric:
    """One ToR, VRF red (L3 VNI 50000) with two routed subnets (two
    dual-stack ones for IPv6); FRR is only a BGP peer."""
    fabric = Fabric()
    fabric.tors["tor1"] = Tor("tor1", grpc, 1, TOR_VTEP, TOR_MAC, (Uplink(3, UP_MAC),))
    for port in (1, 2, 4):
        fabric.servers[f"s{port}"] = Server(f"s{port}", "tor1", port)
    fabric.anycast_gateway_mac = ANYCAST_MAC
    fabric.vrfs["red"] = Vrf("red", L3VNI)
    for vni, n in ((5000, 1), (5001, 2)):
        fabric.vnis[vni] = Vni(vni, f"red-{vni}", vrf="red", subnets=family.subnets(vni, n))
    fabric.evpn = our_evpn_config(frr, fabric)
    return fabric


# The IPv6 lab on the namespace backend only: this kernel has no VRF
# devices to try FRR's kernel-VRF IPv6 routing on.
LABS = [
    pytest.param(("netns", IPV4), id="netns-ipv4"),
    pytest.param(("vrf", IPV4), id="vrf-ipv4"),
    pytest.param(("netns", IPV6), id="netns-ipv6"),
]


@pytest.fixture(scope="module", params=LABS)
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    backend, family = request.param
    if backend == "vrf" and (why := kernel_vrf_missing()):
        pytest.skip(f"FRR's kernel-VRF data plane not run: {why}")
    tmp = tmp_path_factory.mktemp(f"evpn-irb-dp-{backend}-{family.name}")
    tag = os.getpid() % 10000
    relays: list[subprocess.Popen[bytes]] = []
    vma, mvt = f"p4vj-a{tag}", f"p4vj-m{tag}"
    gateways6 = GATEWAYS6 if family.dual_stack else {}  # (none in the IPv4 lab)
    # FRR serves 192.168.1.0/24 (and 2001:db8:1::/64) too, with the anycast gateway.
    shared = SharedVni(5000, 24, GATEWAYS[5000], ANYCAST_MAC, gateways6.get(5000))
    with (
        FrrIrbLab(l3vni=L3VNI, l2vni=FRR_VNI, backend=backend, shared=shared,
                  ipv6=family.dual_stack) as frr,
        VethSet(f"pj{tag}", 4) as veths,
    ):  # fmt: skip
        (s1, h1), (s2, h2), (s3, h3), (s4, h4) = veths.pairs
        switch = Bmv2Switch(
            "tor1", 1, free_port(), free_port(), {1: s1, 2: s2, 3: s3, 4: s4}, log_dir=tmp
        )
        lab = None
        try:
            frr.attach_underlay(h3, UP_MAC, TOR_VTEP, TOR_MAC)
            relays.append(vm_behind_port(vma, h1, family.vm(A1), GATEWAYS[5001],
                                         gateways6.get(5001)))  # fmt: skip
            relays.append(vm_behind_port(mvt, h4, family.vm(MOVER), GATEWAYS[5000],
                                         gateways6.get(5000)))  # fmt: skip
            # (down: the mover starts on the ToR; its IPv4 address, and IPv6 in the IPv6 lab)
            frr.add_vm("mv", MOVER.mac, *family.vm(MOVER).ips)
            switch.start()
            lab = Lab(frr, family, switch, _fabric(switch.grpc_address, frr, family),
                      tmp / "state.db", s3, {1: h1, 2: h2, 4: h4}, vma, mvt)  # fmt: skip
            lab.start_controller()
            for vm in (A1, PROBE, MOVER, STAY):
                lab.ctl.attach(family.vm(vm))
            assert lab.ctl.wait_converged(30)
            assert wait_for(frr.session_established, 30), f"no session; logs in {frr.dir}"
            assert wait_for(frr.l3vni_up, 10), frr.vtysh("show evpn vni")
            frr.vm_speaks()  # (in the IPv6 lab both families: FRR advertises both MAC+IP routes)
            yield lab
        finally:
            if lab is not None:
                lab.stop_controller()
            switch.stop()
            stop_processes(relays)
            for ns in (vma, mvt):
                subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


# ---- looking -------------------------------------------------------------------


def switch_entities(lab: Lab) -> dict[bytes, bytes]:
    tor = lab.fabric.tors["tor1"]
    with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
        state = SwitchReader(bmv2_pipeline().p4info).read(conn)
    return {**state.entities, **state.meters, **state.defaults}


def switch_holds(lab: Lab, item: tuple[bytes, bytes]) -> bool:
    key, data = item
    return switch_entities(lab).get(key) == data


def read_back(lab: Lab) -> None:
    """The switch holds exactly what the controller compiles."""
    assert lab.ctl.wait_converged(10)
    read_back_matches(SimpleNamespace(fabric=lab.fabric), lab.ctl)


def frr_mac_paths(frr: FrrIrbLab, mac: str, ip: str) -> dict[str, dict]:
    """FRR's MAC+IP paths for ``mac`` and ``ip``, by next hop."""
    length = 128 if ":" in ip else 32
    return {
        nh["ip"]: path
        for path in frr.evpn_routes()
        if f"[{mac}]:[{length}]:[{ip}]" in path["prefix"]
        for nh in path.get("nexthops", [])
    }


def mobility_seq(path: dict) -> int:
    for word in path.get("extendedCommunity", {}).get("string", "").split():
        if word.startswith("MM:"):
            return int(word[3:].split(",")[0])
    return 0


def forwarding(frr: FrrIrbLab, ns: str) -> str:
    """Whether the host in ``ns`` forwards IPv6 ("0": no, a host)."""
    return frr.in_ns(ns, "sysctl", "-n", "net.ipv6.conf.all.forwarding").strip()


# ---- frames --------------------------------------------------------------------

PAYLOAD = b"p4vtep symmetric IRB" * 3


def routed(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, tag: int,
           vlan: int | None = None) -> Packet:  # fmt: skip
    """A UDP packet tagged ``tag`` (source port 3000 + tag; the IPv4 id or
    the IPv6 flow label too), TTL or hop limit 64, in the family of ``dst_ip``."""
    head = Ether(src=src_mac, dst=dst_mac)
    if vlan is not None:
        head = head / Dot1Q(vlan=vlan)
    if ":" in dst_ip:
        packet = IPv6(src=src_ip, dst=dst_ip, hlim=64, fl=tag)
    else:
        packet = IP(src=src_ip, dst=dst_ip, ttl=64, id=tag)
    return head / packet / UDP(sport=3000 + tag, dport=5001) / Raw(PAYLOAD)


def hop(sent: Packet, hops: int) -> IP | IPv6:
    """The sent IP packet after ``hops`` routers: TTL (hop limit) less, an
    IPv4 header checksum anew (IPv6 has none; the UDP checksum covers
    neither)."""
    if IPv6 in sent:
        inner6 = sent[IPv6].copy()
        inner6.hlim -= hops
        return inner6
    inner = sent[IP].copy()
    inner.ttl -= hops
    inner.chksum = None
    return inner


def tagged(frame: Ether, tag: int) -> bool:
    return (IP in frame or IPv6 in frame) and UDP in frame and frame[UDP].sport == 3000 + tag


def inner_of(frame: Ether) -> Ether:
    return Ether(bytes(frame[VXLAN].payload))


def check_tor_encap(got: Ether, frr: FrrIrbLab, inner: Packet) -> None:
    """What the ToR puts on the wire towards FRR, byte for byte: outer
    Ethernet to its next hop, IPv4 from its VTEP (TTL 64, no DF, id 0, DSCP
    of the inner), UDP to 4789 from a source port whose top two bits are set
    (the rest a flow hash), checksum 0, VXLAN with the L3 VNI, and the routed
    frame from its router MAC to FRR's."""
    sport = got[UDP].sport
    assert sport >> 14 == 0b11, sport
    want = (
        Ether(src=TOR_MAC, dst=UP_MAC)
        / IP(src=TOR_VTEP, dst=frr.frr_ip, ttl=OUTER_TTL, id=0, flags=0, tos=0)
        / UDP(sport=sport, dport=VXLAN_PORT, chksum=0)
        / VXLAN(flags=0x08, vni=L3VNI)
        / Ether(src=TOR_MAC, dst=FRR_RMAC)
        / inner
    )
    assert bytes(got) == bytes(want), (got.show(dump=True), want.show(dump=True))


def check_frr_encap(got: Ether, frr: FrrIrbLab, inner: Packet) -> None:
    """What Linux (programmed by FRR) sends to the ToR: the routed frame from
    FRR's router MAC to the ToR's, in the L3 VNI, to the ToR's VTEP through
    the neighbour entry of the underlay, byte for byte; of the outer header,
    what Linux chooses per packet (IP id, UDP source port and checksum) is
    taken from the frame, the rest is fixed."""
    outer_ip, outer_udp = got[IP], got[UDP]
    want = (
        Ether(src=UP_MAC, dst=TOR_MAC)
        / IP(
            src=frr.frr_ip, dst=TOR_VTEP, ttl=OUTER_TTL, id=outer_ip.id, flags=outer_ip.flags, tos=0
        )
        / UDP(sport=outer_udp.sport, dport=VXLAN_PORT, chksum=outer_udp.chksum)
        / VXLAN(flags=0x08, vni=L3VNI)
        / Ether(src=FRR_RMAC, dst=TOR_MAC)
        / inner
    )
    assert bytes(got) == bytes(want), (got.show(dump=True), want.show(dump=True))


# ---- the tests, in order -------------------------------------------------------


def test_each_side_installs_the_others_routes_towards_its_router_mac(lab: Lab) -> None:
    frr, family = lab.frr, lab.family
    to_frr = RemoteVtepHop(frr.frr_ip, FRR_RMAC, L3VNI)
    # FRR's hosts are hosts: they do not forward IPv6 (GoBGP would drop
    # their MAC+IPv6 routes, the router flag's ND community on them).
    assert forwarding(frr, frr.vm_ns) == "0"
    # FRR's host and subnet on the ToR (host_route and prefix_route, or
    # their ipv6_ tables), towards FRR's VTEP and router MAC.
    assert wait_for(lambda: switch_holds(lab, ENC.host_route(L3VNI, lab.frr_vm_ip, to_frr)), 20), (
        lab.evpn.view.learned(),
        dict(lab.evpn.intake.refused),
    )
    address, length = frr.subnets[family.index].split("/")
    frr_subnet = ENC.of(ENTRIES.prefix_route(L3VNI, address, int(length), to_frr))
    assert wait_for(lambda: switch_holds(lab, frr_subnet), 10)
    assert switch_holds(lab, ENC.underlay_route(frr.frr_ip, 32, 1))
    read_back(lab)
    # Ours in FRR's VRF: its BGP table and the kernel's routing table hold
    # our hosts and subnet 192.168.2.0/24 (2001:db8:2::/64) via our VTEP
    # (::ffff:<our VTEP> for IPv6) on the L3 SVI, whose neighbour entry is
    # our router MAC, with an FDB entry for it towards our VTEP.
    via, svi = family.our_vtep, f"br{L3VNI}"
    hosts = [family.ip(vm) for vm in (A1, PROBE, MOVER, STAY)]
    host_len = 128 if family.dual_stack else 32
    rib = {f"{ip}/{host_len}": {via} for ip in hosts} | {family.our_subnet: {via}}
    assert wait_for(lambda: rib.items() <= frr.vrf_next_hops(family.name).items(), 15), (
        frr.vrf_next_hops(family.name)
    )
    want = {ip: {(via, svi)} for ip in hosts} | {family.our_subnet: {(via, svi)}}
    assert wait_for(lambda: want.items() <= frr.bgp_kernel_routes(family.ip_flag).items(), 15), (
        frr.kernel_routes(family.ip_flag)
    )
    assert wait_for(lambda: frr.kernel_neighbours().get(via) == TOR_MAC, 10), (
        frr.kernel_neighbours()
    )
    assert any(e["mac"] == TOR_MAC and e["dst"] == TOR_VTEP for e in frr.kernel_fdb(L3VNI)), (
        frr.kernel_fdb(L3VNI)
    )
    # FRR shows where it took them from (the recipe reads these).
    assert TOR_MAC in frr.vtysh("show evpn rmac vni all")
    assert TOR_VTEP in frr.vtysh("show evpn next-hops vni all")


def test_a_routed_frame_from_the_tor_to_frrs_subnet_exactly(lab: Lab) -> None:
    frr, family = lab.frr, lab.family
    sent = routed(PROBE.mac, ANYCAST_MAC, family.ip(PROBE), lab.frr_vm_ip, 1, vlan=PROBE.vlan)
    with Capture(None, lab.wire) as wire, Capture(frr.vm_ns, "vm0") as vm:
        send_frame(None, lab.ifaces[2], bytes(sent))
        out = wire.wait_for(lambda f: VXLAN in f and tagged(inner_of(f), 1), outgoing=True)
        got = vm.wait_for(lambda f: tagged(f, 1), outgoing=False)
    assert len(out) == 1, out
    check_tor_encap(out[0], frr, hop(sent, 1))  # routed once: TTL (hop limit) 63 in the tunnel
    # FRR's VRF routed it again into its subnet: from its SVI, TTL 62.
    assert [bytes(f) for f in got] == [
        bytes(Ether(src=frr.svi_mac(FRR_VNI), dst=VM_MAC) / hop(sent, 2))
    ]


def test_a_routed_frame_from_frrs_subnet_to_the_tor_exactly(lab: Lab) -> None:
    frr, family = lab.frr, lab.family
    sent = routed(VM_MAC, frr.svi_mac(FRR_VNI), lab.frr_vm_ip, family.ip(PROBE), 2)
    with Capture(None, lab.wire) as wire, Capture(None, lab.ifaces[2]) as probe:
        send_frame(frr.vm_ns, "vm0", bytes(sent))
        into = wire.wait_for(lambda f: VXLAN in f and tagged(inner_of(f), 2), outgoing=False)
        got = probe.wait_for(lambda f: tagged(f, 2), outgoing=False)
    assert len(into) == 1, into
    check_frr_encap(into[0], frr, hop(sent, 1))
    # The ToR decapsulated and routed it to the probe's VF: TTL 62, from the
    # anycast gateway MAC, on the probe's VLAN.
    want = Ether(src=ANYCAST_MAC, dst=PROBE.mac) / Dot1Q(vlan=PROBE.vlan) / hop(sent, 2)
    assert [bytes(f) for f in got] == [bytes(want)]


def test_ping_across_subnets_both_ways(lab: Lab) -> None:
    frr, family = lab.frr, lab.family
    # a1 (192.168.2.1 or 2001:db8:2::11, behind the ToR) <-> FRR's VM
    # (192.168.7.10 or fd00:7::10, behind Linux); replies with TTL (hop
    # limit) 62: routed by both VTEPs.
    ping = ("ping", family.ip_flag, "-c", "3", "-W", "2")
    out = frr.in_ns(lab.vma, *ping, lab.frr_vm_ip, check=False)
    assert "3 received" in out, out
    assert " ttl=62 " in out, out
    out = frr.in_ns(frr.vm_ns, *ping, family.ip(A1), check=False)
    assert "3 received" in out, out
    assert " ttl=62 " in out, out


def _probe_to_mover_reaches(lab: Lab, ns: str | None, iface: str, want_vlan: int | None,
                            tag: int, hops: int) -> list[Ether]:  # fmt: skip
    """The probe (on the ToR) sends to the mover's address; what the
    mover's interface ``iface`` in ``ns`` receives of it, and checks that
    it is the sent packet after ``hops`` routers from the anycast MAC."""
    ips = lab.family.ip(PROBE), lab.family.ip(MOVER)
    sent = routed(PROBE.mac, ANYCAST_MAC, *ips, tag, vlan=PROBE.vlan)
    with Capture(ns, iface) as there:
        send_frame(None, lab.ifaces[2], bytes(sent))
        got = there.wait_for(lambda f: tagged(f, tag), outgoing=False, timeout=2)
    head = Ether(src=ANYCAST_MAC, dst=MOVER.mac)
    want = head / Dot1Q(vlan=want_vlan) / hop(sent, hops) if want_vlan else head / hop(sent, hops)
    assert [bytes(f) for f in got] in ([], [bytes(want)]), [f.show(dump=True) for f in got]
    return got


def test_a_routed_vm_migrates_to_the_frr_host_and_back(lab: Lab) -> None:
    """The mover (192.168.1.3, and 2001:db8:1::13 in the IPv6 lab; VNI
    5000, which FRR serves too with the same anycast gateway) moves ToR ->
    FRR host -> ToR. Its host route of the family follows on both sides:
    our MAC+IP route withdrawn and FRR's advertised (with the MAC mobility
    number) and back; the ToR's host route entry towards FRR's VTEP and
    back to the VM; FRR's kernel route towards our VTEP and back; the probe
    (another subnet) reaches the mover wherever it runs, TTL (hop limit)
    62 behind FRR."""
    frr, ctl, family = lab.frr, lab.ctl, lab.family
    mover_ip = family.ip(MOVER)
    via_us = {(family.our_vtep, f"br{L3VNI}")}  # (FRR's kernel route: via our VTEP on the L3 SVI)
    to_frr = ENC.host_route(L3VNI, mover_ip, RemoteVtepHop(frr.frr_ip, FRR_RMAC, L3VNI))

    def frr_paths() -> dict[str, dict]:
        return frr_mac_paths(frr, MOVER.mac, mover_ip)

    def kernel_route() -> set[tuple[str, str]] | None:
        return frr.bgp_kernel_routes(family.ip_flag).get(mover_ip)

    assert switch_holds(lab, ENC.host_route(L3VNI, mover_ip, _local_hop(lab)))
    assert wait_for(lambda: TOR_VTEP in frr_paths(), 10), frr.vtysh(
        "show bgp l2vpn evpn route type macip"
    )
    assert wait_for(lambda: kernel_route() == via_us, 10), frr.kernel_routes(family.ip_flag)
    # on the ToR: routed once, delivered on the mover's VLAN
    assert wait_for(
        lambda: _probe_to_mover_reaches(lab, lab.mvt, lab.ifaces[4], MOVER.vlan, 10, 1), 5
    )

    # To the FRR host: the VM stops on the ToR, starts behind FRR's bridge
    # and speaks to its gateways (FRR's SVI); FRR advertises its MAC with a
    # higher sequence number (a move: we stop advertising it, the MAC goes
    # to FRR's VTEP) or the same (a conflict: FRR 8.4 did that in
    # test_evpn_dataplane.py's lab; ours stay). Either way the
    # inventory follows: the VM is detached here. FRR's MAC+IP route comes
    # when the VM speaks after our MAC+IP route is gone (until then zebra
    # keeps the neighbour entry it made for ours, which ARP and ND do not
    # override).
    conflicts = lab.evpn.table.refused["conflict"]
    start = time.monotonic()
    frr.in_ns(lab.mvt, "ip", "link", "set", "vm", "down")
    frr.vm_up("mv")
    mv_ns = f"{frr.vm_ns}mv"
    assert forwarding(frr, mv_ns) == "0"  # (a host: no router flag, see the module's doc)

    def mover_speaks() -> None:
        for gateway in family.gateways(5000):
            frr.in_ns(mv_ns, "ping", "-c", "1", "-W", "1", gateway, check=False)

    mover_speaks()
    assert wait_for(
        lambda: (
            (5000, MOVER.mac) in lab.evpn.view.moved_away()
            or lab.evpn.table.refused["conflict"] > conflicts
        ),
        15,
    ), frr.vtysh(f"show evpn mac vni 5000 mac {MOVER.mac}")
    how = "conflict" if lab.evpn.table.refused["conflict"] > conflicts else "higher number"
    ctl.detach(MOVER.name)
    assert wait_for(lambda: TOR_VTEP not in frr_paths(), 10)
    assert wait_for(lambda: mover_speaks() or frr.frr_ip in frr_paths(), 15), frr.vtysh(
        f"show evpn arp-cache vni 5000 ip {mover_ip}"
    )
    path = frr_paths()[frr.frr_ip]
    there_seq = mobility_seq(path)
    # (FRR's route carries no ND extended community: the mover is a host.)
    assert "ND:" not in path.get("extendedCommunity", {}).get("string", ""), path
    # Our type 2 is withdrawn; the ToR's host route goes to FRR's VTEP and
    # router MAC (and the MAC to its VTEP), FRR's kernel route to its bridge.
    assert wait_for(lambda: switch_holds(lab, to_frr), 15), lab.evpn.view.host_routes()
    assert wait_for(lambda: _probe_to_mover_reaches(lab, mv_ns, "mv0", None, 11, 2), 10)
    there = time.monotonic() - start
    assert switch_holds(lab, ENC.mac_to_remote_vtep(5000, MOVER.mac, frr.frr_ip))
    assert wait_for(lambda: set(frr_paths()) == {frr.frr_ip}, 10)
    assert wait_for(lambda: kernel_route() is None, 10), frr.kernel_routes(family.ip_flag)
    read_back(lab)
    # ... and exactly: from the ToR into FRR's VRF, then FRR's anycast SVI.
    sent = routed(PROBE.mac, ANYCAST_MAC, family.ip(PROBE), mover_ip, 12, vlan=PROBE.vlan)
    with Capture(None, lab.wire) as wire:
        send_frame(None, lab.ifaces[2], bytes(sent))
        out = wire.wait_for(lambda f: VXLAN in f and tagged(inner_of(f), 12), outgoing=True)
    assert len(out) == 1
    check_tor_encap(out[0], frr, hop(sent, 1))

    # And back: the VM starts on the ToR (attached) and stops behind FRR:
    # we advertise FRR's number + 1, FRR withdraws its route, the ToR's host
    # route points at the VM again and FRR's kernel route at our VTEP.
    start = time.monotonic()
    frr.in_ns(lab.mvt, "ip", "link", "set", "vm", "up")
    ctl.attach(family.vm(MOVER))
    frr.vm_up("mv", False)
    assert wait_for(lambda: switch_holds(lab, ENC.host_route(L3VNI, mover_ip, _local_hop(lab))), 15)
    assert wait_for(lambda: set(frr_paths()) == {TOR_VTEP}, 15), (
        lab.evpn.view.advertisements(),
        frr.vtysh("show bgp l2vpn evpn route type macip"),
    )
    ours = {a.mac: a.seq for a in lab.evpn.view.advertisements()}[MOVER.mac]
    assert ours == there_seq + 1
    assert mobility_seq(frr_paths()[TOR_VTEP]) == ours
    assert wait_for(lambda: kernel_route() == via_us, 10), frr.kernel_routes(family.ip_flag)
    # FRR's VM reaches the mover on the ToR again: routed by FRR into the L3
    # VNI, by the ToR onto the mover's VLAN (TTL 62).
    sent = routed(VM_MAC, frr.svi_mac(FRR_VNI), lab.frr_vm_ip, mover_ip, 13)
    assert wait_for(lambda: _frr_vm_reaches_mover(lab, sent), 10)
    back = time.monotonic() - start
    read_back(lab)
    print(
        f"\nrouted {family.name} migration: to the FRR host {there:.2f} s (FRR's MAC first with "
        f"a {how}, its MAC+IP with sequence {there_seq}), back {back:.2f} s (ours with {ours})"
    )


def _local_hop(lab: Lab) -> LocalVmHop:
    """The mover's host route on its ToR: to its VF (its indexes as allocated now)."""
    alloc = lab.ctl.alloc
    return LocalVmHop(4, MOVER.vlan, alloc.vm["tor1"][MOVER.name], alloc.vni[MOVER.vni], MOVER.mac)


def _frr_vm_reaches_mover(lab: Lab, sent: Packet) -> bool:
    tag = sent[UDP].sport - 3000
    with Capture(lab.mvt, lab.ifaces[4]) as there:
        send_frame(lab.frr.vm_ns, "vm0", bytes(sent))
        got = there.wait_for(lambda f: tagged(f, tag), outgoing=False, timeout=2)
    want = Ether(src=ANYCAST_MAC, dst=MOVER.mac) / Dot1Q(vlan=MOVER.vlan) / hop(sent, 2)
    assert [bytes(f) for f in got] in ([], [bytes(want)]), [f.show(dump=True) for f in got]
    return bool(got)
