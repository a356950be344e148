"""A p4vtep ToR (BMv2) and a Linux VTEP run by FRR learn each other through
BGP EVPN alone, and carry traffic.

    [ns vma] a1 (vlan 10) ─ port 1 ┐
    host     probe (vlan 20) port 2 ├ [tor1 BMv2] port 3 ══ up0 [ns frr] zebra+bgpd
    [ns mvt] mover (vlan 30) port 4 ┘                         br5000 ─ vxlan5000
                                                              ├─ vm0    [ns vm]
    [ns ctl] gobgpd (the controller's speaker) ── ctl0/frr0 ──┘└─ mv0 [ns vm·mv]

No static knowledge: the fabric file names FRR only as a BGP peer. One lab
for the module, in order: learning both ways, ping, ARP suppression, BUM both
ways, migration there and back, refused routes, a controller restart (no
write), and last the peer failure (FRR's bgpd frozen: hold timer).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from frr_lab import VM_MAC, FrrLab, needs_frr, start_evpn_controller
from p4vtep.compiler import ECMP_GROUP_ID, VTEP_REPLICA_BASE, Encoder, flood_group
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.model.allocation import external_vtep_key
from p4vtep.model.fabric import Fabric, Server, Tor, Uplink, Vm, Vni
from p4vtep.processes import stop_processes
from p4vtep.runtime.client import SwitchConnection
from p4vtep.sources.evpn import EvpnSource
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from p4vtep.switch.reconciler import SwitchReader, diff
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw
from switch_fabric import needs_switch, send_and_receive
from vm_netns import vm_behind_port

pytestmark = [pytest.mark.evpn, needs_frr(), *needs_switch()]

VNI = 5000
TOR_VTEP, TOR_MAC = "10.0.0.1", "00:aa:00:00:00:01"
UP_MAC = "00:5e:00:00:99:01"  # FRR's underlay interface, the ToR's next hop
FRR_VM_IP = "192.168.1.20"
A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), VNI, "s1", 10)
PROBE = Vm("probe", "00:00:0a:00:00:02", ("192.168.1.2",), VNI, "s2", 20)
MOVER = Vm("mover", "00:00:0a:00:00:03", ("192.168.1.3",), VNI, "s4", 30)
RT = (f"65000:{VNI}",)
ENC = Encoder(PipelineEntries(bmv2_pipeline().p4info))


@dataclass
class Lab:
    frr: FrrLab
    switch: Bmv2Switch
    fabric: Fabric
    store: Path
    controller: Controller
    ifaces: dict[int, str]  # ToR port -> its far end (host end, or moved into a namespace)
    vma: str  # a1's namespace
    mvt: str  # the mover's namespace on the ToR side
    source: EvpnSource | None = None  # EVPN beside the controller

    @property
    def evpn(self) -> EvpnService:
        assert self.source is not None
        return self.source.service

    def start_controller(self) -> Controller:
        """As the CLI does: the EVPN source first, then the supervisors."""
        self.controller, self.source = start_evpn_controller(
            self.fabric, self.store, self.frr.ctl_ns, self.frr.ctl_ip
        )
        return self.controller

    def stop_controller(self) -> None:
        self.controller.stop()
        if self.source is not None:
            self.source.stop()


def _fabric(grpc: str, frr: FrrLab) -> Fabric:
    fabric = Fabric()
    fabric.tors["tor1"] = Tor("tor1", grpc, 1, TOR_VTEP, TOR_MAC, (Uplink(3, UP_MAC),))
    for port in (1, 2, 4):
        fabric.servers[f"s{port}"] = Server(f"s{port}", "tor1", port)
    fabric.vnis[VNI] = Vni(VNI, "tenant-a")
    fabric.evpn = EvpnConfig(
        asn=65000,
        router_id=frr.ctl_ip,
        peers=(EvpnPeer(frr.frr_ip, 65000),),
        vnis=(VniRouting(VNI, None, RT, RT),),
        hold_time=3,
    )
    return fabric


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("evpn-dp")
    tag = os.getpid() % 10000
    relays: list[subprocess.Popen[bytes]] = []
    vma, mvt = f"p4ve-a{tag}", f"p4ve-m{tag}"
    with FrrLab(vni=VNI, asn=65000, hold_time=3) as frr, VethSet(f"pe{tag}", 4) as veths:
        (s1, h1), (s2, h2), (s3, h3), (s4, h4) = veths.pairs
        switch = Bmv2Switch(
            "tor1", 1, free_port(), free_port(), {1: s1, 2: s2, 3: s3, 4: s4}, log_dir=tmp
        )
        try:
            frr.attach_underlay(h3, UP_MAC, TOR_VTEP, TOR_MAC)
            relays.append(vm_behind_port(vma, h1, A1))
            relays.append(vm_behind_port(mvt, h4, MOVER))
            frr.set_vm_ip(FRR_VM_IP)
            frr.add_vm_mac()
            switch.start()
            fabric = _fabric(switch.grpc_address, frr)
            lab = Lab(frr, switch, fabric, tmp / "state.db", None, {1: h1, 2: h2, 4: h4}, vma, mvt)  # type: ignore[arg-type]
            controller = lab.start_controller()
            for vm in (A1, PROBE, MOVER):
                controller.attach(vm)
            assert controller.wait_converged(30)
            yield lab
            lab.stop_controller()
        finally:
            switch.stop()
            stop_processes(relays)
            for ns in (vma, mvt):
                subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


# ---- looking -------------------------------------------------------------------


def switch_entities(lab: Lab) -> dict[bytes, bytes]:
    reader = SwitchReader(bmv2_pipeline().p4info)
    tor = lab.fabric.tors["tor1"]
    with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
        state = reader.read(conn)
    return {**state.entities, **state.meters, **state.defaults}


def switch_holds(lab: Lab, item: tuple[bytes, bytes]) -> bool:
    key, data = item
    return switch_entities(lab).get(key) == data


def read_back_matches(lab: Lab) -> None:
    reader = SwitchReader(bmv2_pipeline().p4info)
    tor = lab.fabric.tors["tor1"]
    _, desired = lab.controller.compile_for("tor1")
    with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
        left = diff(desired, reader.read(conn))
    assert len(left) == 0, (len(left.inserts), len(left.modifies), len(left.deletes))


def frr_has(frr: FrrLab, fragment: str, next_hop: str) -> bool:
    return any(
        fragment in path["prefix"]
        and any(nh.get("ip") == next_hop for nh in path.get("nexthops", []))
        for path in frr.evpn_routes()
    )


def fdb_has(frr: FrrLab, mac: str, dst: str) -> bool:
    return any(e.get("mac") == mac and e.get("dst") == dst for e in frr.fdb())


def ping(lab: Lab, ns: str, ip: str, count: int = 1) -> bool:
    out = lab.frr.in_ns(ns, "ping", "-c", str(count), "-W", "1", ip, check=False)
    return f"{count} received" in out


def converged(lab: Lab) -> bool:
    return lab.controller.wait_converged(10)


# ---- the tests, in order -------------------------------------------------------


def test_each_side_learns_the_other_and_the_tables_hold_it(lab: Lab) -> None:
    frr = lab.frr
    # FRR's VM (MAC, MAC+IP) and FRR's VTEP in the flood list: on the switch.
    assert wait_for(lambda: switch_holds(lab, ENC.mac_to_remote_vtep(VNI, VM_MAC, frr.frr_ip)), 20)
    assert wait_for(lambda: switch_holds(lab, ENC.neighbour(VNI, FRR_VM_IP, VM_MAC)), 10)
    assert wait_for(lambda: lab.controller.desired.learned.flood.get(VNI) == {frr.frr_ip}, 10)
    assert converged(lab)
    read_back_matches(lab)
    # Ours in FRR's BGP table and in the Linux FDB, next hop = the ToR's VTEP.
    for vm in (A1, PROBE, MOVER):
        assert wait_for(lambda vm=vm: frr_has(frr, f"[{vm.mac}]:[32]:[{vm.ips[0]}]", TOR_VTEP), 10)
        assert wait_for(lambda vm=vm: fdb_has(frr, vm.mac, TOR_VTEP), 10), frr.fdb()
    assert frr_has(frr, f"[3]:[0]:[32]:[{TOR_VTEP}]", TOR_VTEP)
    assert fdb_has(frr, "00:00:00:00:00:00", TOR_VTEP)


def test_ping_both_ways(lab: Lab) -> None:
    assert wait_for(lambda: ping(lab, lab.vma, FRR_VM_IP), 10)
    assert ping(lab, lab.frr.vm_ns, A1.ips[0], count=3)
    assert ping(lab, lab.vma, FRR_VM_IP, count=3)


def test_arp_for_frrs_vm_is_answered_by_the_tor(lab: Lab) -> None:
    frr = lab.frr
    before = frr.counter(frr.frr_ns, "up0")
    request = (
        Ether(src=PROBE.mac, dst="ff:ff:ff:ff:ff:ff")
        / Dot1Q(vlan=PROBE.vlan)
        / ARP(op=1, hwsrc=PROBE.mac, psrc=PROBE.ips[0], pdst=FRR_VM_IP)
    )
    got = send_and_receive(lab.ifaces[2], request, lab.ifaces[2])
    replies = [p for p in got if ARP in p and p[ARP].op == 2]
    assert [(p[ARP].hwsrc, p[ARP].psrc) for p in replies] == [(VM_MAC, FRR_VM_IP)]
    assert frr.counter(frr.frr_ns, "up0") == before  # nothing went to FRR's host


def _broadcast(src_mac: str, vlan: int | None, tag: bytes) -> Ether:
    head = Ether(src=src_mac, dst="ff:ff:ff:ff:ff:ff")
    frame = head / Dot1Q(vlan=vlan, type=0x88B5) if vlan else Ether(bytes(head), type=0x88B5)
    return frame / Raw(tag + bytes(46))


def test_bum_is_flooded_both_ways(lab: Lab) -> None:
    frr = lab.frr
    # ToR -> FRR: the probe's broadcast reaches FRR's VM.
    before = frr.counter(frr.vm_ns, "vm0")
    send_and_receive(
        lab.ifaces[2], _broadcast(PROBE.mac, PROBE.vlan, b"p4vtep"), lab.ifaces[2], 0.5
    )
    assert wait_for(lambda: frr.counter(frr.vm_ns, "vm0") > before, 5)
    # FRR -> ToR: FRR's VM's broadcast reaches the probe, on the probe's VLAN.
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)) as rx:
        rx.bind((lab.ifaces[2], 0))
        rx.settimeout(0.2)
        frr.vm_speaks()  # one broadcast frame, ethertype 0x88b5, from VM_MAC
        deadline, seen = time.monotonic() + 5, False
        while not seen and time.monotonic() < deadline:
            try:
                data = rx.recv(2048)
            except TimeoutError:
                continue
            frame = Ether(data)
            seen = frame.src == VM_MAC and frame.dst == "ff:ff:ff:ff:ff:ff"
    assert seen


def _mover_seq(frr: FrrLab, next_hop: str) -> int | None:
    for path in frr.evpn_routes():
        if MOVER.mac in path["prefix"] and any(n.get("ip") == next_hop for n in path["nexthops"]):
            text = path.get("extendedCommunity", {}).get("string", "")
            for word in text.split():
                if word.startswith("MM:"):
                    return int(word[3:].split(",")[0])
            return 0
    return None


def test_migration_to_the_frr_host_and_back(lab: Lab) -> None:
    frr, controller = lab.frr, lab.controller
    mover_ns = frr.add_vm("mv", MOVER.mac, MOVER.ips[0])
    assert wait_for(lambda: ping(lab, lab.vma, MOVER.ips[0]), 10)  # a1 -> mover on the ToR

    # To the FRR host: the VM stops here, starts there and announces itself,
    # and FRR advertises it. A higher number than ours is a move (we stop
    # advertising it); FRR 8.4 keeps 0 here (its zebra shows "Local Seq: 0
    # Remote Seq: 0"), the same as ours: a conflict, refused and counted.
    # Either way the VM's entries stay until the inventory follows: the VM
    # is detached here, and FRR's route is installed.
    conflicts = lab.evpn.table.refused["conflict"]
    start = time.monotonic()
    frr.in_ns(lab.mvt, "ip", "link", "set", "vm", "down")
    frr.vm_up("mv")
    frr.in_ns(mover_ns, "ping", "-c", "1", "-W", "1", A1.ips[0], check=False)
    assert wait_for(
        lambda: (
            (VNI, MOVER.mac) in lab.evpn.view.moved_away()
            or lab.evpn.table.refused["conflict"] > conflicts
        ),
        10,
    ), frr.vtysh(f"show evpn mac vni {VNI} mac {MOVER.mac}")
    assert _mover_seq(frr, frr.frr_ip) is not None
    controller.detach("mover")
    assert wait_for(lambda: ping(lab, lab.vma, MOVER.ips[0]), 15)
    there = time.monotonic() - start
    # (the first pings may have been flooded, before the entry was written)
    there_entry = ENC.mac_to_remote_vtep(VNI, MOVER.mac, frr.frr_ip)
    assert wait_for(lambda: switch_holds(lab, there_entry), 10)
    assert wait_for(lambda: _mover_seq(frr, TOR_VTEP) is None, 10)

    # And back: the VM starts on the ToR (attached here) and then stops
    # there: we advertise FRR's number + 1, FRR gives the MAC up, traffic
    # follows.
    there_seq = {m.mac: m.seq for m in lab.evpn.view.remote_macs()}[MOVER.mac]
    start = time.monotonic()
    frr.in_ns(lab.mvt, "ip", "link", "set", "vm", "up")
    controller.attach(MOVER)
    frr.vm_up("mv", False)
    assert wait_for(lambda: fdb_has(frr, MOVER.mac, TOR_VTEP), 15), frr.fdb()
    assert wait_for(lambda: ping(lab, frr.vm_ns, MOVER.ips[0]), 15)
    back = time.monotonic() - start
    ours = {a.mac: a.seq for a in lab.evpn.view.advertisements()}[MOVER.mac]
    assert ours == there_seq + 1
    assert wait_for(lambda: _mover_seq(frr, TOR_VTEP) == ours, 10), frr.vtysh("show bgp l2vpn evpn")
    assert wait_for(lambda: _mover_seq(frr, frr.frr_ip) is None, 10)
    assert converged(lab)
    read_back_matches(lab)
    print(f"\nEVPN migration convergence: to FRR {there:.2f} s, back {back:.2f} s")


def test_bad_routes_are_refused_counted_and_change_nothing(lab: Lab) -> None:
    """As if FRR had sent them: a VNI we do not route, our own VTEP as next
    hop, FRR's VM's MAC claimed by another VTEP with the same number."""
    frr = lab.frr
    assert converged(lab)
    before = switch_entities(lab)
    refused = dict(lab.evpn.intake.refused)
    conflicts = lab.evpn.table.refused["conflict"]
    other = "192.0.2.77"
    bad = {
        "unknown-vni": MacIpRoute(f"{frr.frr_ip}:9", "52:54:00:00:00:99", 7000, frr.frr_ip),
        "own-vtep": MacIpRoute(f"{frr.frr_ip}:9", "52:54:00:00:00:99", VNI, TOR_VTEP, None, RT),
        "conflict": MacIpRoute(f"{other}:9", VM_MAC, VNI, other, None, RT),
    }
    for route in bad.values():
        lab.evpn._route(frr.frr_ip, route)
    assert lab.evpn.intake.refused["unknown-vni"] == refused.get("unknown-vni", 0) + 1
    assert lab.evpn.intake.refused["own-vtep"] == refused.get("own-vtep", 0) + 1
    assert lab.evpn.table.refused["conflict"] == conflicts + 1
    assert converged(lab)
    assert switch_entities(lab) == before
    lab.evpn._withdraw(frr.frr_ip, bad["conflict"].nlri_key())  # (as FRR would)


def test_a_restarted_controller_relearns_and_writes_nothing(lab: Lab) -> None:
    lab.stop_controller()
    controller = lab.start_controller()
    assert converged(lab)
    assert controller.supervisors["tor1"].status.writes == 0
    assert VM_MAC in controller.desired.learned.macs[VNI]
    read_back_matches(lab)
    assert wait_for(lambda: ping(lab, lab.vma, FRR_VM_IP), 10)


def test_frr_gone_its_routes_leave_the_tor_after_the_hold_time(lab: Lab) -> None:
    frr, controller = lab.frr, lab.controller
    assert converged(lab)
    before = switch_entities(lab)
    replica = VTEP_REPLICA_BASE + controller.alloc.tor[external_vtep_key(frr.frr_ip)]
    group = flood_group(controller.alloc.vni[VNI])
    frrs = {  # what FRR's routes put on the switch
        ENC.mac_to_remote_vtep(VNI, VM_MAC, frr.frr_ip)[0],
        ENC.neighbour(VNI, FRR_VM_IP, VM_MAC)[0],
        ENC.underlay_route(frr.frr_ip, 32, ECMP_GROUP_ID)[0],
        ENC.replica_to_vtep(replica, frr.frr_ip, UP_MAC)[0],
    }
    assert frrs <= set(before)
    start = time.monotonic()
    frr.freeze_bgpd()  # no keepalives, TCP still open: only the hold timer tells
    assert wait_for(lambda: not controller.desired.learned.macs, 15)
    gone_after = time.monotonic() - start
    assert converged(lab)
    after = switch_entities(lab)
    assert gone_after >= 2.0  # (hold time 3 s, less what had elapsed since the last keepalive)
    # FRR's entries are gone, its copy left the VNI's flood group; nothing else changed.
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == frrs | {b"2%d" % group}
    assert not frrs & set(after)
    read_back_matches(lab)
    print(f"\nEVPN peer failure: FRR's routes removed {gone_after:.2f} s after bgpd froze")
