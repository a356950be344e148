"""Routing between a tenant's subnets on two BMv2 ToRs driven by the controller:
VMs of two subnets on both ToRs reach each other both ways (routed on one ToR,
and across the fabric in the VRF's L3 VNI), a second tenant with the same
subnets stays apart, a routed VM migrates under a probe every 20 ms, and the
switches read back exactly what the controller compiles."""

from __future__ import annotations

from dataclasses import replace

from helpers import wait_until
from p4vtep.model.fabric import StaticRoute, Subnet, Vm, Vni, Vrf
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw
from switch_fabric import (
    assert_make_before_break,
    needs_switch,
    probe_a_migration,
    read_back_matches,
    restarted_controller,
    routed_fabric_fixtures,
    send_and_receive,
)

pytestmark = needs_switch()

ANYCAST = "00:00:5e:00:01:01"
# Tenant red and tenant blue use the same two subnets, each in its own VRF.
WEB = Vm("web", "02:0a:00:00:00:01", ("192.168.1.10",), 5000, "s11", 10)
DB = Vm("db", "02:0a:00:00:01:01", ("192.168.2.10",), 5001, "s21", 11)
DB_NEAR = Vm("db-near", "02:0a:00:00:01:02", ("192.168.2.20",), 5001, "s12", 12)
# fw forwards the default route: a router appliance, port security off (docs/security.md)
FW = Vm("fw", "02:0a:00:00:00:03", ("192.168.1.3",), 5000, "s22", 13, port_security=False)
BLUE_WEB = Vm("blue-web", "02:0b:00:00:00:01", ("192.168.1.10",), 6000, "s12", 20)
BLUE_DB = Vm("blue-db", "02:0b:00:00:01:01", ("192.168.2.10",), 6001, "s22", 21)
VMS = [WEB, DB, DB_NEAR, FW, BLUE_WEB, BLUE_DB]


def route(sf) -> None:
    """Make the test fabric routed (docs/examples/fabric-routed.yaml's tenants)."""
    fabric = sf.fabric
    fabric.anycast_gateway_mac = ANYCAST
    fabric.vrfs["red"] = Vrf("red", 50000, (StaticRoute("0.0.0.0/0", FW.ips[0]),))
    fabric.vrfs["blue"] = Vrf("blue", 60000)
    for vni, vrf, prefix in (
        (5000, "red", "192.168.1"),
        (5001, "red", "192.168.2"),
        (6000, "blue", "192.168.1"),
        (6001, "blue", "192.168.2"),
    ):
        base = fabric.vnis.get(vni, Vni(vni, f"{vrf}-{vni}"))
        fabric.vnis[vni] = replace(
            base, vrf=vrf, subnets=(Subnet(f"{prefix}.0/24", f"{prefix}.254"),)
        )


sf, controller = routed_fabric_fixtures(route, VMS)


def routed(src: Vm, dst_ip: str, ttl: int = 64, tag: int = 0) -> Packet:
    return (
        Ether(src=src.mac, dst=ANYCAST)
        / Dot1Q(vlan=src.vlan)
        / IP(src=src.ips[0], dst=dst_ip, ttl=ttl, id=tag)
        / UDP(sport=2000 + tag, dport=80)
        / Raw(b"routed" * 10)
    )


def as_delivered(sent: Packet, dst: Vm, vlan: int | None = None, hops: int = 1) -> bytes:
    """Routed once on one ToR, twice across the fabric (symmetric IRB: by the
    sender's ToR and by the receiver's)."""
    inner = sent[IP].copy()
    inner.ttl -= hops
    inner.chksum = None
    return bytes(Ether(src=ANYCAST, dst=dst.mac) / Dot1Q(vlan=vlan or dst.vlan) / inner)


def reaches(sf, src: Vm, dst: Vm, server: str | None = None, vlan: int | None = None) -> bool:
    sent = routed(src, dst.ips[0])
    server = server or dst.server
    got = send_and_receive(sf.host_ifaces[src.server], sent, sf.host_ifaces[server])
    servers = sf.fabric.servers
    hops = 1 if servers[src.server].tor == servers[server].tor else 2
    return any(bytes(p) == as_delivered(sent, dst, vlan, hops) for p in got)


def test_subnets_route_both_ways_on_one_tor_and_across_the_fabric(sf, controller):
    assert reaches(sf, WEB, DB)  # tor1 -> tor2, L3 VNI 50000
    assert reaches(sf, DB, WEB)  # and back
    assert reaches(sf, WEB, DB_NEAR)  # both on tor1
    assert reaches(sf, DB_NEAR, WEB)
    assert reaches(sf, BLUE_WEB, BLUE_DB)  # blue: tor1 -> tor2, L3 VNI 60000
    read_back_matches(sf, controller)


def test_a_tenant_with_the_same_subnets_stays_apart(sf, controller):
    # blue-web asks for 192.168.2.10: blue-db gets it, red's db never does
    sent = routed(BLUE_WEB, "192.168.2.10")
    got = send_and_receive(sf.host_ifaces[BLUE_WEB.server], sent, sf.host_ifaces[DB.server])
    assert not any(Ether(bytes(p)).dst == DB.mac for p in got)
    assert reaches(sf, BLUE_WEB, BLUE_DB)
    # red's default route (through fw) is red's alone: blue has no route to 8.8.8.8
    sent = routed(BLUE_WEB, "8.8.8.8")
    assert send_and_receive(sf.host_ifaces[BLUE_WEB.server], sent, sf.host_ifaces[FW.server]) == []
    sent = routed(WEB, "8.8.8.8")
    got = send_and_receive(sf.host_ifaces[WEB.server], sent, sf.host_ifaces[FW.server])
    assert any(bytes(p) == as_delivered(sent, FW, hops=2) for p in got)  # tor1 -> tor2


def test_a_routed_vm_migrates_under_a_probe_every_20_ms(sf, controller):
    """db moves from tor2 (s21) to tor1 (s12): the host routes on both ToRs move
    with its MAC, make-before-break; a probe every 20 ms from web counts losses."""
    moved = replace(DB, server="s12", vlan=31)
    sent, counts = probe_a_migration(
        sf,
        controller,
        moved,
        WEB.server,
        lambda n: bytes(routed(WEB, DB.ips[0], tag=n % 65536)),
        lambda pkt: pkt.dst == DB.mac and pkt.src == ANYCAST and IP in pkt,
    )
    assert_make_before_break(sent, counts, "routed migration")
    assert wait_until(lambda: reaches(sf, WEB, moved, server="s12", vlan=31), 5)
    read_back_matches(sf, controller)


def test_a_restart_over_routed_state_writes_nothing(sf, tmp_path):
    """VRFs, gateways and host routes are desired state like bridging: a
    controller started against ToRs that hold them writes nothing."""
    with restarted_controller(sf, tmp_path / "restart.db", VMS):
        assert reaches(sf, WEB, DB)


def test_a_host_route_deleted_behind_the_controller_is_put_back(sf, tmp_path):
    from p4vtep.controller import Controller
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.dataplane.entries import RemoteVtepHop
    from p4vtep.runtime import entities
    from p4vtep.runtime.client import SwitchConnection
    from p4vtep.state.sqlite_store import Store

    controller = Controller(
        sf.fabric, bmv2_pipeline(), Store(tmp_path / "drift.db"), resync_seconds=0.5
    )
    controller.start()
    try:
        for vm in VMS:
            controller.attach(vm)
        assert controller.wait_converged(30)
        tor2 = sf.fabric.tors["tor2"]
        # tor1's route to db (on tor2): over red's L3 VNI to tor2's router MAC
        entry = controller.entries.host_route(
            50000, DB.ips[0], RemoteVtepHop(tor2.vtep_ip, tor2.router_mac, 50000)
        )
        controller.supervisors["tor1"].conn.delete(entry)  # behind the reconciler's back

        def held() -> bool:
            tor1 = sf.fabric.tors["tor1"]
            query = entities.table_entry(controller.pipeline.p4info, "host_route")
            with SwitchConnection(tor1.address, tor1.device_id, election_id=0) as conn:
                read = [e.table_entry.SerializeToString() for e in conn.read(query)]
            return entry.SerializeToString() in read

        assert wait_until(held, timeout=10)
        assert reaches(sf, WEB, DB)
    finally:
        controller.stop()
