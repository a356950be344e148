"""tenant_routes: the operator's view of each VRF and its routes, from the
desired state (what `p4vtep vrf list` and `route list` print)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_fixture import routed_fabric, routed_vms
from p4vtep.model.tenant_routes import GATEWAY, HOST, STATIC, RouteRow, VrfRow, route_rows, vrf_rows


def test_a_vrf_lists_its_vnis_subnets_tors_and_vms():
    assert vrf_rows(routed_fabric(), routed_vms()) == [
        VrfRow(
            "red",
            50000,
            (5000, 5001),
            ("192.168.1.0/24", "192.168.2.0/24"),
            ("tor1", "tor2"),
            3,  # web-1, db-1, fw; b1 is in the L2-only VNI
        )
    ]


def test_routes_say_where_each_leads():
    rows = route_rows(routed_fabric(), routed_vms())
    assert rows == [
        RouteRow("red", "0.0.0.0/0", STATIC, "fw", 5000, "tor2", "10.0.0.2", "192.168.1.3"),
        RouteRow("red", "192.168.1.1/32", HOST, "web-1", 5000, "tor1", "10.0.0.1"),
        RouteRow("red", "192.168.1.3/32", HOST, "fw", 5000, "tor2", "10.0.0.2"),
        RouteRow("red", "192.168.1.254/32", GATEWAY, "", 5000, "", ""),
        RouteRow("red", "192.168.2.1/32", HOST, "db-1", 5001, "tor2", "10.0.0.2"),
        RouteRow("red", "192.168.2.254/32", GATEWAY, "", 5001, "", ""),
    ]


def test_dual_stack_routes_list_ipv4_then_ipv6_with_128_bit_host_prefixes():
    """IPv4 first, as before; then IPv6, in address order, hosts and
    gateways as /128."""
    from p4vtep.model.fabric import StaticRoute, Subnet

    fabric, vms = routed_fabric(), routed_vms()
    web = fabric.vnis[5000]
    fabric.vnis[5000] = replace(
        web, subnets=(*web.subnets, Subnet("2001:db8:1::/64", "2001:db8:1::1"))
    )
    red = fabric.vrfs["red"]
    fabric.vrfs["red"] = replace(red, routes=(*red.routes, StaticRoute("::/0", "2001:db8:1::3")))
    six = {"web-1": "2001:db8:1::a", "fw": "2001:db8:1::3"}
    vms = [replace(vm, ips=(six[vm.name], *vm.ips)) if vm.name in six else vm for vm in vms]
    ipv4 = route_rows(routed_fabric(), routed_vms())  # (as before)
    assert route_rows(fabric, vms) == [
        *ipv4,
        RouteRow("red", "::/0", STATIC, "fw", 5000, "tor2", "10.0.0.2", "2001:db8:1::3"),
        RouteRow("red", "2001:db8:1::1/128", GATEWAY, "", 5000, "", ""),
        RouteRow("red", "2001:db8:1::3/128", HOST, "fw", 5000, "tor2", "10.0.0.2"),
        RouteRow("red", "2001:db8:1::a/128", HOST, "web-1", 5000, "tor1", "10.0.0.1"),
    ]


def test_a_static_route_follows_its_next_hop_and_says_when_nobody_owns_it():
    fabric, vms = routed_fabric(), routed_vms()
    moved = [replace(vm, server="s12", vlan=31) if vm.name == "fw" else vm for vm in vms]
    [static] = [r for r in route_rows(fabric, moved, "red") if r.kind == STATIC]
    assert (static.vm, static.tor, static.vtep) == ("fw", "tor1", "10.0.0.1")
    without = [vm for vm in vms if vm.name != "fw"]
    [static] = [r for r in route_rows(fabric, without, "red") if r.kind == STATIC]
    assert (static.vm, static.tor, static.next_hop) == ("", "", "192.168.1.3")


def test_an_unrouted_fabric_has_no_vrfs_or_routes():
    fabric = routed_fabric()
    fabric.vrfs.clear()
    assert vrf_rows(fabric, routed_vms()) == []
    assert route_rows(fabric, routed_vms()) == []


def test_route_counts_are_the_rows_counted():
    from collections import Counter

    from p4vtep.model.tenant_routes import route_counts

    fabric, vms = routed_fabric(), routed_vms()
    for population in (vms, [vm for vm in vms if vm.name != "fw"]):
        rows = Counter(
            (r.vrf, r.kind) for r in route_rows(fabric, population) if r.vm or r.kind == GATEWAY
        )
        counts = route_counts(fabric, population)
        assert {k: v for k, v in counts.items() if v} == dict(rows)
    assert route_counts(fabric, [])[("red", HOST)] == 0


# --- the API and the CLI ----------------------------------------------------------------------


@pytest.fixture
def routed_controller(tmp_path):
    from p4vtep.controller import Controller
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.state.sqlite_store import Store

    controller = Controller(routed_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    for vm in routed_vms():
        controller.attach(vm)
    return controller


def test_the_api_lists_vrfs_and_routes_and_names_an_unknown_vrf(routed_controller):
    import grpc
    from helpers import api_client
    from p4vtep.api import overlay_pb2 as pb

    with api_client(routed_controller) as (client, _):
        [vrf] = client.ListVrfs(pb.ListVrfsRequest()).vrfs
        assert (vrf.name, vrf.l3vni, list(vrf.vnis), list(vrf.tors), vrf.vms) == (
            "red",
            50000,
            [5000, 5001],
            ["tor1", "tor2"],
            3,
        )
        routes = client.ListRoutes(pb.ListRoutesRequest(vrf="red")).routes
        assert [(r.prefix, r.kind, r.vm, r.tor) for r in routes] == [
            (r.prefix, r.kind, r.vm, r.tor)
            for r in route_rows(routed_controller.fabric, routed_vms(), "red")
        ]
        with pytest.raises(grpc.RpcError) as info:
            client.ListRoutes(pb.ListRoutesRequest(vrf="blue"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert info.value.details() == "no VRF named 'blue'"


def test_the_cli_prints_vrfs_and_where_each_route_leads(routed_controller, capsys):
    from helpers import api_client
    from p4vtep.cli import main as cli_main

    with api_client(routed_controller) as (_, address):
        assert cli_main(["--api", address, "vrf", "list"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split() == ["VRF", "L3VNI", "VNIS", "SUBNETS", "TORS", "VMS"]
        assert lines[2].split() == [
            "red",
            "50000",
            "5000,5001",
            "192.168.1.0/24,192.168.2.0/24",
            "tor1,tor2",
            "3",
        ]
        assert cli_main(["--api", address, "route", "list", "--vrf", "red"]) == 0
        out = capsys.readouterr().out
        assert "0.0.0.0/0         static   192.168.1.3  fw (VNI 5000) on tor2, VTEP 10.0.0.2" in out
        assert "192.168.2.254/32  gateway  -" in out
        assert cli_main(["--api", address, "route", "list", "--vrf", "blue"]) == 1
        assert "NOT_FOUND: no VRF named 'blue'" in capsys.readouterr().err


# --- route changes (RoutesChanged events, p4vtep_route_changes_total) -------------------------


def test_route_deltas_name_what_a_commit_changed():
    from p4vtep.model.tenant_routes import RouteDelta, route_deltas

    fabric = routed_fabric()
    vms = {vm.name: vm for vm in routed_vms()}
    fw = vms["fw"]
    # Attached: its host route, and the default route now has an owner.
    assert route_deltas(fabric, {"fw": None}, {"fw": fw}) == [
        RouteDelta("red", ("0.0.0.0/0", "192.168.1.3/32"), (), ())
    ]
    # Migrated to tor1: both lead elsewhere.
    moved = replace(fw, server="s12", vlan=31)
    assert route_deltas(fabric, {"fw": fw}, {"fw": moved}) == [
        RouteDelta("red", (), (), ("0.0.0.0/0", "192.168.1.3/32"))
    ]
    # On the same ToR a new VLAN changes no route; a QoS change neither.
    assert route_deltas(fabric, {"fw": fw}, {"fw": replace(fw, vlan=33)}) == []
    assert route_deltas(fabric, {"fw": fw}, {"fw": replace(fw, qos="gold")}) == []
    # Detached: both go.
    assert route_deltas(fabric, {"fw": fw}, {"fw": None}) == [
        RouteDelta("red", (), ("0.0.0.0/0", "192.168.1.3/32"), ())
    ]
    # An L2-only VM has no routes.
    assert route_deltas(fabric, {"b1": vms["b1"]}, {"b1": None}) == []


def test_route_deltas_say_ipv6_hosts_as_128_bit_prefixes_after_ipv4():
    from p4vtep.model.fabric import StaticRoute
    from p4vtep.model.tenant_routes import RouteDelta, route_deltas

    fabric = routed_fabric()
    # (203.0.113.0/24 after 2001:db8:1::3 in text order; IPv4 comes first)
    fabric.vrfs["red"] = replace(
        fabric.vrfs["red"], routes=(StaticRoute("203.0.113.0/24", "192.168.1.3"),)
    )
    fw = next(vm for vm in routed_vms() if vm.name == "fw")
    dual = replace(fw, ips=("2001:db8:1::3", *fw.ips))
    assert route_deltas(fabric, {"fw": None}, {"fw": dual}) == [
        RouteDelta("red", ("192.168.1.3/32", "203.0.113.0/24", "2001:db8:1::3/128"), (), ())
    ]
    assert route_deltas(fabric, {"fw": dual}, {"fw": fw}) == [
        RouteDelta("red", (), ("2001:db8:1::3/128",), ())
    ]


def test_an_ip_handed_from_one_vm_to_another_in_one_commit_is_moved():
    from p4vtep.model.fabric import Vm
    from p4vtep.model.tenant_routes import RouteDelta, route_deltas

    fabric = routed_fabric()
    web = routed_vms()[0]
    other = Vm("web-2", "00:00:0a:00:00:09", web.ips, 5000, "s21", 21)
    assert route_deltas(fabric, {"web-1": web, "web-2": None}, {"web-1": None, "web-2": other}) == [
        RouteDelta("red", (), (), ("192.168.1.1/32",))
    ]


def test_the_controller_publishes_route_changes_and_the_api_shows_them(routed_controller):
    from p4vtep import events

    controller = routed_controller
    watch = controller.bus.subscribe()
    controller.migrate("db-1", "s12", vlan=21, timeout=0)
    seen = []
    while not watch.empty():
        seen.append(watch.get_nowait())
    assert [e for e in seen if isinstance(e, events.RoutesChanged)] == [
        events.RoutesChanged(
            vrf="red", moved=("192.168.2.1/32",), at=_at_of(seen, events.RoutesChanged)
        )
    ]
    controller.detach("web-1")
    changes = [e for e in _drain(watch) if isinstance(e, events.RoutesChanged)]
    assert [(e.vrf, e.removed) for e in changes] == [("red", ("192.168.1.1/32",))]
    controller.detach("b1")
    assert not [e for e in _drain(watch) if isinstance(e, events.RoutesChanged)]


def _drain(q):
    out = []
    while not q.empty():
        out.append(q.get_nowait())
    return out


def _at_of(seen, kind):
    return next(e.at for e in seen if isinstance(e, kind))


def test_watch_events_shows_a_route_change(routed_controller):
    import threading

    from helpers import api_client
    from p4vtep.api import overlay_pb2 as pb

    with api_client(routed_controller) as (client, _):
        stream = client.WatchEvents(pb.WatchEventsRequest())
        detach = threading.Timer(0.3, lambda: client.DetachVM(pb.DetachVMRequest(name="fw")))
        detach.start()
        events_seen = iter(stream)
        event = next(e for e in events_seen if e.kind == "RoutesChanged")
        detach.join(timeout=10)
        stream.cancel()
    assert event.detail == "vrf=red added= removed=0.0.0.0/0,192.168.1.3/32 moved="


def test_route_changes_are_counted_in_prometheus(routed_controller):
    import time
    import urllib.request

    from helpers import free_port
    from p4vtep.api.metrics import start_metrics

    port = free_port()
    stop = start_metrics(routed_controller, port)
    routed_controller.detach("fw")
    routed_controller.migrate("db-1", "s12", vlan=21, timeout=0)
    want = (
        'p4vtep_route_changes_total{change="removed",vrf="red"} 2.0',
        'p4vtep_route_changes_total{change="moved",vrf="red"} 1.0',
    )
    deadline = time.monotonic() + 5
    while True:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        if all(line in body.decode() for line in want) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    stop()
    for line in want:
        assert line in body.decode()
