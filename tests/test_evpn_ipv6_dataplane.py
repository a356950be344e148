"""Symmetric IRB over IPv6 between a p4vtep ToR (BMv2) and an FRR 8.4 VTEP,
data plane: what tests/test_evpn_irb_dataplane.py does for IPv4, for a
dual-stack tenant. A VM in an IPv6 subnet behind the ToR and a host in
another IPv6 subnet behind Linux route to each other over the VRF's L3 VNI,
and a routed dual-stack VM migrates from the ToR to the FRR host and back.

    [ns vma] a1 2001:db8:2::11 (vlan 10) ─ port 1 ┐
    host     probe 2001:db8:2::12 (vlan 20) port 2 ├ [tor1 BMv2] port 3 ══ up0 [ns frr]
    [ns mvt] mover 2001:db8:1::13 (vlan 30) port 4 ┘                    zebra+bgpd
                                                          FRR's VRF: br50000, br5007
                                  fd00:7::1 ── vm0 fd00:7::10 [ns vm]; br5000
                                  2001:db8:1::1 (the fabric's anycast gateway) ── mv0

(each also has its IPv4 address, as in the IPv4 test: the tenant is
dual-stack on both sides). FRR's VRF imports our IPv6 routes with next hop
``::ffff:<our VTEP>`` and installs them in the VRF's namespace; the ToR
takes FRR's into ``ipv6_host_route``/``ipv6_prefix_route``.

Every frame is checked exactly (scapy), both directions: what the ToR sends
onto the wire (outer IPv4 header, VNI 50000, FRR's router MAC, hop limit -
1), what reaches FRR's VM (hop limit - 2: routed by both VTEPs), what FRR
sends (its router MAC to ours, hop limit - 1), what the ToR delivers.

FRR's hosts do not forward IPv6 (net.ipv6.conf.all.forwarding=0, set by
frr_irb_lab.py): a host that does answers neighbour solicitations as a
router, FRR then puts the ND extended community on its MAC+IPv6 route and
GoBGP takes that route as withdrawn (docs/evpn.md, "Two GoBGP pitfalls";
tests/test_evpn_ipv6_frr.py pins it). Only the netns backend runs here
(this kernel has no VRF devices); the IPv4 test shows the kernel-VRF one.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
from fabric_fixture import ANYCAST_MAC
from frr_irb_lab import FRR_RMAC, VM_IP6, VM_MAC, FrrIrbLab, SharedVni
from frr_lab import needs_frr
from netns_socket import Capture, send_frame
from p4vtep.compiler import Encoder
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.speaker import wait_for
from p4vtep.model.fabric import Fabric, Server, Subnet, Tor, Uplink, Vm, Vni, Vrf
from p4vtep.processes import stop_processes
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw
from switch_fabric import needs_switch

# The IPv4 test's lab and checks, which hold for an IPv6 inner packet as
# they are (the outer header is IPv4 either way).
from test_evpn_irb_dataplane import (
    TOR_MAC,
    TOR_VTEP,
    UP_MAC,
    Lab,
    check_frr_encap,
    check_tor_encap,
    inner_of,
    mobility_seq,
    read_back,
    switch_holds,
)
from vm_netns import vm_behind_port

pytestmark = [pytest.mark.evpn, needs_frr(), *needs_switch()]

L3VNI, FRR_VNI = 50000, 5007
A1 = Vm("a1", "00:00:0a:00:02:01", ("192.168.2.1", "2001:db8:2::11"), 5001, "s1", 10)
PROBE = Vm("probe", "00:00:0a:00:02:02", ("192.168.2.2", "2001:db8:2::12"), 5001, "s2", 20)
MOVER = Vm("mover", "00:00:0a:00:01:03", ("192.168.1.3", "2001:db8:1::13"), 5000, "s4", 30)
# Keeps the mover's subnet (VNI 5000) on the ToR while the mover is away.
STAY = Vm("stay", "00:00:0a:00:01:04", ("192.168.1.4", "2001:db8:1::14"), 5000, "s2", 21)
GATEWAYS = {5000: "192.168.1.254", 5001: "192.168.2.254"}
GATEWAYS6 = {5000: "2001:db8:1::1", 5001: "2001:db8:2::1"}
# FRR serves 2001:db8:1::/64 (and 192.168.1.0/24) too, with the anycast gateway.
SHARED = SharedVni(5000, 24, GATEWAYS[5000], ANYCAST_MAC, GATEWAYS6[5000])
FRR_SUBNET6 = ("fd00:7::", 64)  # FRR's own subnet (frr_irb_lab.SUBNET6)
MAPPED = f"::ffff:{TOR_VTEP}"  # our VTEP as the next hop of FRR's IPv6 routes
ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)


def v6(vm: Vm) -> str:
    return vm.ips[1]


def _fabric(grpc: str, frr: FrrIrbLab) -> Fabric:
    """One ToR, VRF red (L3 VNI 50000) with two dual-stack routed subnets;
    FRR is only a BGP peer."""
    fabric = Fabric()
    fabric.tors["tor1"] = Tor("tor1", grpc, 1, TOR_VTEP, TOR_MAC, (Uplink(3, UP_MAC),))
    for port in (1, 2, 4):
        fabric.servers[f"s{port}"] = Server(f"s{port}", "tor1", port)
    fabric.anycast_gateway_mac = ANYCAST_MAC
    fabric.vrfs["red"] = Vrf("red", L3VNI)
    for vni, n in ((5000, 1), (5001, 2)):
        fabric.vnis[vni] = Vni(
            vni,
            f"red-{vni}",
            vrf="red",
            subnets=(
                Subnet(f"192.168.{n}.0/24", GATEWAYS[vni]),
                Subnet(f"2001:db8:{n}::/64", GATEWAYS6[vni]),
            ),
        )
    fabric.evpn = EvpnConfig(
        asn=65000,
        router_id=frr.ctl_ip,
        peers=(EvpnPeer(frr.frr_ip, 65000),),
        vnis=tuple(VniRouting(v, None, (f"65000:{v}",), (f"65000:{v}",)) for v in (5000, 5001)),
        hold_time=3,
    ).for_fabric(fabric)
    return fabric


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("evpn-ipv6-dp")
    tag = os.getpid() % 10000
    relays: list[subprocess.Popen[bytes]] = []
    vma, mvt = f"p4vk-a{tag}", f"p4vk-m{tag}"
    with (
        FrrIrbLab(l3vni=L3VNI, l2vni=FRR_VNI, shared=SHARED, ipv6=True) as frr,
        VethSet(f"pk{tag}", 4) as veths,
    ):
        (s1, h1), (s2, h2), (s3, h3), (s4, h4) = veths.pairs
        switch = Bmv2Switch(
            "tor1", 1, free_port(), free_port(), {1: s1, 2: s2, 3: s3, 4: s4}, log_dir=tmp
        )
        lab = None
        try:
            frr.attach_underlay(h3, UP_MAC, TOR_VTEP, TOR_MAC)
            relays.append(vm_behind_port(vma, h1, A1, GATEWAYS[5001], GATEWAYS6[5001]))
            relays.append(vm_behind_port(mvt, h4, MOVER, GATEWAYS[5000], GATEWAYS6[5000]))
            # (down: the mover starts on the ToR)
            frr.add_vm("mv", MOVER.mac, MOVER.ips[0], v6(MOVER))
            switch.start()
            lab = Lab(frr, switch, _fabric(switch.grpc_address, frr), tmp / "state.db", s3,
                      {1: h1, 2: h2, 4: h4}, vma, mvt)  # fmt: skip
            lab.start_controller()
            for vm in (A1, PROBE, MOVER, STAY):
                lab.ctl.attach(vm)
            assert lab.ctl.wait_converged(30)
            assert wait_for(frr.session_established, 30), f"no session; logs in {frr.dir}"
            assert wait_for(frr.l3vni_up, 10), frr.vtysh("show evpn vni")
            frr.vm_speaks()  # (IPv4 and IPv6: FRR advertises both MAC+IP routes)
            yield lab
        finally:
            if lab is not None:
                lab.stop_controller()
            switch.stop()
            stop_processes(relays)
            for ns in (vma, mvt):
                subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


# ---- looking -------------------------------------------------------------------


def frr_rib6(frr: FrrIrbLab) -> dict[str, set[str]]:
    """FRR's VRF IPv6 BGP table: prefix -> next hops (IPv4-mapped ones in
    RFC 5952's form, ``::ffff:10.0.0.1``; FRR writes ``::ffff:a00:1``)."""

    def canonical(ip: str) -> str:
        mapped = ipaddress.IPv6Address(ip).ipv4_mapped
        return f"::ffff:{mapped}" if mapped is not None else ip

    return {
        prefix: {canonical(nh["ip"]) for path in paths for nh in path.get("nexthops", [])}
        for prefix, paths in frr.vrf_routes("ipv6").items()
    }


def kernel6(frr: FrrIrbLab) -> dict[str, set[tuple[str, str]]]:
    """The VRF's IPv6 kernel routes FRR's BGP installed: dst -> {(gateway, dev)}."""
    out = {}
    for r in frr.kernel_routes("-6"):
        if r.get("protocol") == "bgp":
            out[r["dst"]] = {
                (h.get("gateway", ""), h.get("dev", "")) for h in r.get("nexthops", [r])
            }
    return out


def frr_mac_paths6(frr: FrrIrbLab, mac: str, ip6: str) -> dict[str, dict]:
    """FRR's MAC+IPv6 paths for ``mac`` and ``ip6``, by next hop."""
    return {
        nh["ip"]: path
        for path in frr.evpn_routes()
        if f"[{mac}]:[128]:[{ip6}]" in path["prefix"]
        for nh in path.get("nexthops", [])
    }


def forwarding(frr: FrrIrbLab, ns: str) -> str:
    return frr.in_ns(ns, "sysctl", "-n", "net.ipv6.conf.all.forwarding").strip()


# ---- frames --------------------------------------------------------------------

PAYLOAD = b"p4vtep symmetric IRB over IPv6" * 2


def routed6(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, tag: int,
            vlan: int | None = None) -> Packet:  # fmt: skip
    head = Ether(src=src_mac, dst=dst_mac)
    if vlan is not None:
        head = head / Dot1Q(vlan=vlan)
    return (
        head
        / IPv6(src=src_ip, dst=dst_ip, hlim=64, fl=tag)
        / UDP(sport=3000 + tag, dport=5001)
        / Raw(PAYLOAD)
    )


def hop6(sent: Packet, hops: int) -> IPv6:
    """The sent IPv6 packet after ``hops`` routers: hop limit less (IPv6 has
    no header checksum; the UDP checksum does not cover the hop limit)."""
    inner = sent[IPv6].copy()
    inner.hlim -= hops
    return inner


def tagged6(frame: Ether, tag: int) -> bool:
    return IPv6 in frame and UDP in frame and frame[UDP].sport == 3000 + tag


# ---- the tests, in order -------------------------------------------------------


def test_each_side_installs_the_others_ipv6_routes_towards_its_router_mac(lab: Lab) -> None:
    frr = lab.frr
    to_frr = RemoteVtepHop(frr.frr_ip, FRR_RMAC, L3VNI)
    # FRR's hosts are hosts: they do not forward IPv6 (GoBGP would drop
    # their MAC+IPv6 routes, the router flag's ND community on them).
    assert forwarding(frr, frr.vm_ns) == "0"
    # FRR's IPv6 host and subnet on the ToR (ipv6_host_route,
    # ipv6_prefix_route), towards FRR's VTEP and router MAC.
    assert wait_for(lambda: switch_holds(lab, ENC.host_route(L3VNI, VM_IP6, to_frr)), 20), (
        lab.evpn.view.learned(),
        dict(lab.evpn.intake.refused),
    )
    assert wait_for(
        lambda: switch_holds(lab, ENC.of(ENTRIES.prefix_route(L3VNI, *FRR_SUBNET6, to_frr))), 10
    )
    assert switch_holds(lab, ENC.underlay_route(frr.frr_ip, 32, 1))
    read_back(lab)
    # Ours in FRR's VRF: its IPv6 BGP table and the kernel's IPv6 table
    # hold our hosts and subnet 2001:db8:2::/64 via ::ffff:<our VTEP> (on
    # the L3 SVI), whose neighbour entry is our router MAC.
    hosts = [v6(vm) for vm in (A1, PROBE, MOVER, STAY)]
    want_rib = {f"{ip}/128": {MAPPED} for ip in hosts} | {"2001:db8:2::/64": {MAPPED}}
    assert wait_for(lambda: want_rib.items() <= frr_rib6(frr).items(), 15), frr_rib6(frr)
    svi = f"br{L3VNI}"
    want = {ip: {(MAPPED, svi)} for ip in hosts} | {"2001:db8:2::/64": {(MAPPED, svi)}}
    assert wait_for(lambda: want.items() <= kernel6(frr).items(), 15), frr.kernel_routes("-6")
    assert wait_for(lambda: frr.kernel_neighbours().get(MAPPED) == TOR_MAC, 10), (
        frr.kernel_neighbours()
    )
    assert any(e["mac"] == TOR_MAC and e["dst"] == TOR_VTEP for e in frr.kernel_fdb(L3VNI))


def test_a_routed_ipv6_frame_from_the_tor_to_frrs_subnet_exactly(lab: Lab) -> None:
    frr = lab.frr
    sent = routed6(PROBE.mac, ANYCAST_MAC, v6(PROBE), VM_IP6, 1, vlan=PROBE.vlan)
    with Capture(None, lab.wire) as wire, Capture(frr.vm_ns, "vm0") as vm:
        send_frame(None, lab.ifaces[2], bytes(sent))
        out = wire.wait_for(lambda f: VXLAN in f and tagged6(inner_of(f), 1), outgoing=True)
        got = vm.wait_for(lambda f: tagged6(f, 1), outgoing=False)
    assert len(out) == 1, out
    check_tor_encap(out[0], frr, hop6(sent, 1))  # routed once: hop limit 63 in the tunnel
    # FRR's VRF routed it again into its subnet: from its SVI, hop limit 62.
    assert [bytes(f) for f in got] == [
        bytes(Ether(src=frr.svi_mac(FRR_VNI), dst=VM_MAC) / hop6(sent, 2))
    ]


def test_a_routed_ipv6_frame_from_frrs_subnet_to_the_tor_exactly(lab: Lab) -> None:
    frr = lab.frr
    sent = routed6(VM_MAC, frr.svi_mac(FRR_VNI), VM_IP6, v6(PROBE), 2)
    with Capture(None, lab.wire) as wire, Capture(None, lab.ifaces[2]) as probe:
        send_frame(frr.vm_ns, "vm0", bytes(sent))
        into = wire.wait_for(lambda f: VXLAN in f and tagged6(inner_of(f), 2), outgoing=False)
        got = probe.wait_for(lambda f: tagged6(f, 2), outgoing=False)
    assert len(into) == 1, into
    check_frr_encap(into[0], frr, hop6(sent, 1))
    # The ToR decapsulated and routed it to the probe's VF: hop limit 62,
    # from the anycast gateway MAC, on the probe's VLAN.
    want = Ether(src=ANYCAST_MAC, dst=PROBE.mac) / Dot1Q(vlan=PROBE.vlan) / hop6(sent, 2)
    assert [bytes(f) for f in got] == [bytes(want)]


def test_ping6_across_subnets_both_ways(lab: Lab) -> None:
    frr = lab.frr
    # a1 (2001:db8:2::11 behind the ToR) <-> FRR's VM (fd00:7::10 behind Linux);
    # replies with hop limit 62 (iputils prints it as ttl): routed by both VTEPs.
    out = frr.in_ns(lab.vma, "ping", "-6", "-c", "3", "-W", "2", VM_IP6, check=False)
    assert "3 received" in out, out
    assert " ttl=62 " in out, out
    out = frr.in_ns(frr.vm_ns, "ping", "-6", "-c", "3", "-W", "2", v6(A1), check=False)
    assert "3 received" in out, out
    assert " ttl=62 " in out, out


def _probe_to_mover_reaches(lab: Lab, ns: str | None, iface: str, want_vlan: int | None,
                            tag: int, hops: int) -> list[Ether]:  # fmt: skip
    """The probe (2001:db8:2::12 on the ToR) sends to the mover's IPv6
    address; what the mover's interface ``iface`` in ``ns`` receives of it,
    checked to be the sent packet after ``hops`` routers from the anycast MAC."""
    sent = routed6(PROBE.mac, ANYCAST_MAC, v6(PROBE), v6(MOVER), tag, vlan=PROBE.vlan)
    with Capture(ns, iface) as there:
        send_frame(None, lab.ifaces[2], bytes(sent))
        got = there.wait_for(lambda f: tagged6(f, tag), outgoing=False, timeout=2)
    head = Ether(src=ANYCAST_MAC, dst=MOVER.mac)
    want = head / Dot1Q(vlan=want_vlan) / hop6(sent, hops) if want_vlan else head / hop6(sent, hops)
    assert [bytes(f) for f in got] in ([], [bytes(want)]), [f.show(dump=True) for f in got]
    return got


def test_a_routed_ipv6_vm_migrates_to_the_frr_host_and_back(lab: Lab) -> None:
    """The mover (2001:db8:1::13 and 192.168.1.3, VNI 5000, which FRR serves
    too with the same anycast gateway) moves ToR -> FRR host -> ToR. Its
    IPv6 host route follows on both sides: our MAC+IPv6 route withdrawn and
    FRR's advertised (with the MAC mobility number) and back; the ToR's
    ipv6_host_route entry towards FRR's VTEP and back to the VM; FRR's
    kernel route towards ::ffff:<our VTEP> and back; the probe (another
    subnet) reaches the mover wherever it runs, hop limit 62 behind FRR."""
    frr, ctl = lab.frr, lab.ctl
    mover_ip = v6(MOVER)
    via_us = {(MAPPED, f"br{L3VNI}")}  # (FRR's kernel route: via our VTEP on the L3 SVI)
    to_frr = RemoteVtepHop(frr.frr_ip, FRR_RMAC, L3VNI)
    assert switch_holds(lab, ENC.host_route(L3VNI, mover_ip, _local_hop(lab)))
    assert wait_for(lambda: TOR_VTEP in frr_mac_paths6(frr, MOVER.mac, mover_ip), 10), frr.vtysh(
        "show bgp l2vpn evpn route type macip"
    )
    assert wait_for(lambda: kernel6(frr).get(mover_ip) == via_us, 10), frr.kernel_routes("-6")
    # on the ToR: routed once, delivered on the mover's VLAN
    assert wait_for(
        lambda: _probe_to_mover_reaches(lab, lab.mvt, lab.ifaces[4], MOVER.vlan, 10, 1), 5
    )

    # To the FRR host: the VM stops on the ToR, starts behind FRR's bridge
    # and speaks to its gateways (FRR's SVI); FRR advertises its MAC with a
    # higher sequence number (a move) or the same (a conflict), as in the
    # IPv4 test; the inventory follows (detach). FRR's MAC+IPv6 route comes
    # when the VM speaks after our MAC+IPv6 route is gone (until then zebra
    # keeps the neighbour entry it made for ours on the SVI).
    conflicts = lab.evpn.table.refused["conflict"]
    start = time.monotonic()
    frr.in_ns(lab.mvt, "ip", "link", "set", "vm", "down")
    frr.vm_up("mv")
    mv_ns = f"{frr.vm_ns}mv"
    assert forwarding(frr, mv_ns) == "0"  # (a host: no router flag, see the module's doc)

    def mover_speaks() -> None:
        frr.in_ns(mv_ns, "ping", "-6", "-c", "1", "-W", "1", GATEWAYS6[5000], check=False)
        frr.in_ns(mv_ns, "ping", "-c", "1", "-W", "1", GATEWAYS[5000], check=False)

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
    assert wait_for(lambda: TOR_VTEP not in frr_mac_paths6(frr, MOVER.mac, mover_ip), 10)
    assert wait_for(
        lambda: mover_speaks() or frr.frr_ip in frr_mac_paths6(frr, MOVER.mac, mover_ip), 15
    ), frr.vtysh(f"show evpn arp-cache vni 5000 ip {mover_ip}")
    path = frr_mac_paths6(frr, MOVER.mac, mover_ip)[frr.frr_ip]
    there_seq = mobility_seq(path)
    # (FRR's route carries no ND extended community: the mover is a host.)
    assert "ND:" not in path.get("extendedCommunity", {}).get("string", ""), path
    # Our type 2 is withdrawn; the ToR's IPv6 host route goes to FRR's VTEP
    # and router MAC (and the MAC to its VTEP), FRR's kernel route to its bridge.
    assert wait_for(lambda: switch_holds(lab, ENC.host_route(L3VNI, mover_ip, to_frr)), 15), (
        lab.evpn.view.host_routes()
    )
    assert wait_for(lambda: _probe_to_mover_reaches(lab, mv_ns, "mv0", None, 11, 2), 10)
    there = time.monotonic() - start
    assert switch_holds(lab, ENC.mac_to_remote_vtep(5000, MOVER.mac, frr.frr_ip))
    assert wait_for(lambda: set(frr_mac_paths6(frr, MOVER.mac, mover_ip)) == {frr.frr_ip}, 10)
    assert wait_for(lambda: mover_ip not in kernel6(frr), 10), frr.kernel_routes("-6")
    read_back(lab)
    # ... and exactly: from the ToR into FRR's VRF, then FRR's anycast SVI.
    sent = routed6(PROBE.mac, ANYCAST_MAC, v6(PROBE), mover_ip, 12, vlan=PROBE.vlan)
    with Capture(None, lab.wire) as wire:
        send_frame(None, lab.ifaces[2], bytes(sent))
        out = wire.wait_for(lambda f: VXLAN in f and tagged6(inner_of(f), 12), outgoing=True)
    assert len(out) == 1
    check_tor_encap(out[0], frr, hop6(sent, 1))

    # And back: the VM starts on the ToR (attached) and stops behind FRR:
    # we advertise FRR's number + 1, FRR withdraws its route, the ToR's host
    # route points at the VM again and FRR's kernel route at our VTEP.
    start = time.monotonic()
    frr.in_ns(lab.mvt, "ip", "link", "set", "vm", "up")
    ctl.attach(MOVER)
    frr.vm_up("mv", False)
    assert wait_for(lambda: switch_holds(lab, ENC.host_route(L3VNI, mover_ip, _local_hop(lab))), 15)
    assert wait_for(lambda: set(frr_mac_paths6(frr, MOVER.mac, mover_ip)) == {TOR_VTEP}, 15), (
        lab.evpn.view.advertisements(),
        frr.vtysh("show bgp l2vpn evpn route type macip"),
    )
    ours = {a.mac: a.seq for a in lab.evpn.view.advertisements()}[MOVER.mac]
    assert ours == there_seq + 1
    assert mobility_seq(frr_mac_paths6(frr, MOVER.mac, mover_ip)[TOR_VTEP]) == ours
    assert wait_for(lambda: kernel6(frr).get(mover_ip) == via_us, 10), frr.kernel_routes("-6")
    # FRR's VM reaches the mover on the ToR again: routed by FRR into the L3
    # VNI, by the ToR onto the mover's VLAN (hop limit 62).
    sent = routed6(VM_MAC, frr.svi_mac(FRR_VNI), VM_IP6, mover_ip, 13)
    assert wait_for(lambda: _frr_vm_reaches_mover(lab, sent), 10)
    back = time.monotonic() - start
    read_back(lab)
    print(
        f"\nrouted IPv6 migration: to the FRR host {there:.2f} s (FRR's MAC first with a {how}, "
        f"its MAC+IPv6 with sequence {there_seq}), back {back:.2f} s (ours with {ours})"
    )


def _local_hop(lab: Lab) -> LocalVmHop:
    """The mover's host route on its ToR: to its VF (its indexes as allocated now)."""
    alloc = lab.ctl.alloc
    return LocalVmHop(4, MOVER.vlan, alloc.vm["tor1"][MOVER.name], alloc.vni[MOVER.vni], MOVER.mac)


def _frr_vm_reaches_mover(lab: Lab, sent: Packet) -> bool:
    tag = sent[UDP].sport - 3000
    with Capture(lab.mvt, lab.ifaces[4]) as there:
        send_frame(lab.frr.vm_ns, "vm0", bytes(sent))
        got = there.wait_for(lambda f: tagged6(f, tag), outgoing=False, timeout=2)
    want = Ether(src=ANYCAST_MAC, dst=MOVER.mac) / Dot1Q(vlan=MOVER.vlan) / hop6(sent, 2)
    assert [bytes(f) for f in got] in ([], [bytes(want)]), [f.show(dump=True) for f in got]
    return bool(got)
