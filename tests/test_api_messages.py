"""api/messages.py: the one VM <-> p4vtep.v1.VM conversion, and every other
message the service builds."""

import pytest
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api.counters import Counters, Traffic, VmCounters, VniCounters
from p4vtep.api.messages import (
    counters_response,
    detach_response,
    event_to_pb,
    evpn_peers_response,
    evpn_route_to_pb,
    evpn_routes_response,
    list_routes_response,
    list_switches_response,
    list_vms_response,
    list_vrfs_response,
    switch_errors,
    switch_to_pb,
    traffic_to_pb,
    vm_from_pb,
    vm_response,
    vm_to_pb,
)
from p4vtep.events import EvpnSessionDown, RoutesChanged, WriteFailed
from p4vtep.evpn.status import PeerReport, RouteReport
from p4vtep.model.fabric import Vm
from p4vtep.model.tenant_routes import RouteRow, VrfRow
from p4vtep.model.validation import ValidationError
from p4vtep.switch.supervisor import SwitchStatus


def test_round_trip_keeps_every_field():
    for vm in (
        Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1", "10.0.0.9"), 5000, "s11", 10, "gold", "api"),
        Vm("b1", "00:00:0b:00:00:01", (), 6000, "s12", 30, None, "api"),
    ):
        assert vm_from_pb(vm_to_pb(vm), source="api") == vm


def test_read_only_fields_are_filled_by_the_service_only():
    message = vm_to_pb(Vm("a1", "00:00:0a:00:00:01", (), 5000, "s11", 10), tor="tor1", error="x")
    assert (message.tor, message.error, message.qos, message.source) == (
        "tor1",
        "x",
        "",
        "inventory",
    )
    assert vm_from_pb(message, source="api").source == "api"


def test_request_mac_is_normalised_and_a_name_required():
    vm = vm_from_pb(pb.VM(name="a1", mac="00-00-0A-00-00-01"), source="api")
    assert vm.mac == "00:00:0a:00:00:01"
    with pytest.raises(ValidationError, match="vm: name: a name is required"):
        vm_from_pb(pb.VM(mac="00:00:0a:00:00:01"), source="api")


# ---- what the service builds (api/server.py returns these) --------------------


def test_switch_errors_names_each_switch_in_order():
    assert switch_errors({}) == ""
    assert switch_errors({"tor2": "table full", "tor1": "mac_table: no room"}) == (
        "tor1: mac_table: no room; tor2: table full"
    )


def test_vm_and_detach_responses():
    vm = vm_to_pb(Vm("a1", "00:00:0a:00:00:01", (), 5000, "s11", 10), tor="tor1")
    response = vm_response(vm, 7, applied=True)
    assert (response.vm, response.version, response.applied) == (vm, 7, True)
    assert not vm_response(vm, 8).applied  # SetQoS does not wait
    assert detach_response(9, False) == pb.DetachVMResponse(version=9, applied=False)
    listed = list_vms_response(
        iter([vm, vm_to_pb(Vm("b1", "00:00:0b:00:00:01", (), 6000, "s12", 30))])
    )
    assert [m.name for m in listed.vms] == ["a1", "b1"]


def test_switches_by_name_with_their_status():
    up = SwitchStatus(
        "tor2", "127.0.0.1:9560", connected=True, primary=True, cookie=42, entries=120,
        reconciles=3, writes=17, vm_errors={"a1": "full", "a2": "full"},
    )  # fmt: skip
    down = SwitchStatus("tor1", "127.0.0.1:9561", last_error="connection refused")
    response = list_switches_response({"tor2": up, "tor1": down})
    assert [s.name for s in response.switches] == ["tor1", "tor2"]
    first, second = response.switches
    assert second == pb.Switch(
        name="tor2", address="127.0.0.1:9560", connected=True, primary=True,
        pipeline_cookie=42, entries=120, reconciles=3, writes=17, vms_not_installed=2,
    )  # fmt: skip
    assert first.pipeline_cookie == 0  # no cookie read yet
    assert (first.connected, first.last_error) == (False, "connection refused")
    assert switch_to_pb("x", down).name == "x"  # the supervisor's key names it


def test_counters_leave_out_empty_drop_reasons_and_name_unreachable_switches():
    counters = Counters(
        vms=[VmCounters("a1", "tor1", Traffic(3, 300), Traffic(4, 400))],
        vnis=[VniCounters(5000, "tor1", Traffic(5, 500), Traffic(6, 600))],
        drops={"tor2": {"no_vm": 0, "vlan": 2}, "tor1": {"no_vm": 1}},
        unreachable={"tor4": "not connected", "tor3": "deadline exceeded"},
    )
    response = counters_response(counters)
    assert [
        (v.name, v.tor, v.tx.packets, v.tx.bytes, v.rx.packets, v.rx.bytes) for v in response.vms
    ] == [("a1", "tor1", 3, 300, 4, 400)]
    assert [(v.vni, v.tor, v.tx.packets, v.rx.bytes) for v in response.vnis] == [
        (5000, "tor1", 5, 600)
    ]
    assert [(d.tor, d.reason, d.packets) for d in response.drops] == [
        ("tor1", "no_vm", 1),
        ("tor2", "vlan", 2),
    ]
    assert [(u.switch, u.error) for u in response.unreachable] == [
        ("tor3", "deadline exceeded"),
        ("tor4", "not connected"),
    ]
    assert traffic_to_pb(Traffic(1, 64)) == pb.Traffic(packets=1, bytes=64)


def test_evpn_peers_in_the_order_given_and_refusals_by_reason():
    peers = [
        PeerReport("10.99.38.3", 65099, "ACTIVE", 0.0, 0, 0, 0),
        PeerReport("10.99.38.2", 65000, "ESTABLISHED", 13.5, 3, 2, 3),
    ]
    response = evpn_peers_response(65000, "10.99.38.1", peers, {"unknown-vni": 1, "conflict": 2})
    assert (response.asn, response.router_id) == (65000, "10.99.38.1")
    assert [p.address for p in response.peers] == ["10.99.38.3", "10.99.38.2"]
    assert response.peers[1] == pb.EvpnPeer(
        address="10.99.38.2", asn=65000, state="ESTABLISHED", uptime_seconds=13.5,
        routes_received=3, routes_accepted=2, routes_advertised=3,
    )  # fmt: skip
    assert [(r.reason, r.routes) for r in response.refused] == [("conflict", 2), ("unknown-vni", 1)]


def test_evpn_routes_keep_every_field():
    routes = [
        RouteReport(2, 5000, "52:54:00:f0:00:01", ("192.168.1.9",), "10.99.38.2", 1,
                    "10.99.38.2", "10.99.38.2:2", True, ""),
        RouteReport(3, 7000, "", (), "10.99.38.2", 0, "10.99.38.2", "10.99.38.2:3",
                    False, "unknown-vni"),
    ]  # fmt: skip
    response = evpn_routes_response(routes)
    assert response.routes[0] == pb.EvpnRoute(
        type=2, vni=5000, mac="52:54:00:f0:00:01", ips=["192.168.1.9"], vtep="10.99.38.2",
        sequence=1, source="10.99.38.2", rd="10.99.38.2:2", installed=True,
    )  # fmt: skip
    assert (response.routes[1].installed, response.routes[1].refused) == (False, "unknown-vni")
    assert evpn_route_to_pb(routes[1]) == response.routes[1]


def test_an_evpn_route_of_a_routed_tenant_keeps_its_vrf_l3vni_and_router_mac():
    irb = RouteReport(2, 5000, "52:54:00:f0:00:01", ("192.168.1.9",), "10.99.38.2", 0,
                      "10.99.38.2", "10.99.38.2:2", True, "", vrf="red", l3vni=50000,
                      router_mac="00:aa:00:00:00:09")  # fmt: skip
    message = evpn_route_to_pb(irb)
    assert (message.vrf, message.l3vni, message.router_mac) == (
        "red",
        50000,
        "00:aa:00:00:00:09",
    )


def test_vrfs_and_routes():
    vrf = VrfRow("tenant-a", 9000, (5000, 5001), ("192.168.1.0/24",), ("tor1",), 3)
    assert list_vrfs_response([vrf]).vrfs[0] == pb.Vrf(
        name="tenant-a", l3vni=9000, vnis=[5000, 5001], subnets=["192.168.1.0/24"],
        tors=["tor1"], vms=3,
    )  # fmt: skip
    route = RouteRow(
        "tenant-a", "10.9.0.0/16", "STATIC", "a1", 5000, "tor1", "10.0.0.1", "192.168.1.1"
    )
    assert list_routes_response([route]).routes[0] == pb.Route(
        vrf="tenant-a", prefix="10.9.0.0/16", kind="STATIC", vm="a1", vni=5000, tor="tor1",
        vtep="10.0.0.1", next_hop="192.168.1.1",
    )  # fmt: skip


def test_events_as_watch_events_shows_them():
    down = event_to_pb(EvpnSessionDown(peer="10.99.38.2", asn=65000, routes_withdrawn=2, at=5.0))
    assert down == pb.Event(
        at=5.0, switch="", kind="EvpnSessionDown",
        detail="peer=10.99.38.2 asn=65000 routes_withdrawn=2",
    )  # fmt: skip
    failed = event_to_pb(WriteFailed(switch="tor1", errors=("e1", "e2"), vms=("a1",)))
    assert (failed.switch, failed.kind, failed.detail) == (
        "tor1",
        "WriteFailed",
        "errors=e1,e2 vms=a1",
    )
    assert event_to_pb(RoutesChanged(vrf="v", added=("10.0.0.1/32",))).detail == (
        "vrf=v added=10.0.0.1/32 removed= moved="
    )
