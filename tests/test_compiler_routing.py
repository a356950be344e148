"""compiler.routing: what each ToR holds for a routed tenant (the anycast
gateway, the L3 VNI, host routes to every VM of the VRF, static routes), built
whole and change by change. Entities are compared with what the pipeline's
entry builders make, so a name or a parameter out of place fails here."""

from __future__ import annotations

from dataclasses import replace

from fabric_fixture import ANYCAST_MAC, routed_fabric, routed_vms
from helpers import table_entries
from p4vtep.compiler import DesiredState, Encoder, compile_tor
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop
from p4vtep.model.allocation import Allocations, allocate
from p4vtep.model.fabric import Fabric, Vm

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)
L3VNI = 50000
TOR1_RMAC, TOR2_RMAC = "00:aa:00:00:00:01", "00:aa:00:00:00:02"


def routing_entities(fabric: Fabric, vms: list[Vm], tor: str, alloc: Allocations) -> dict:
    """The ToR's entities in the routing tables (and the routing entries of the
    shared ones), by key."""
    state = compile_tor(fabric, vms, tor, alloc, ENC)
    tables, actions = {"host_route", "prefix_route"}, {"to_router", "set_l3vni_params"}
    return table_entries(state, ENTRIES.p4info, tables, actions)


def built(*messages) -> dict:
    return dict(ENC.of(m) for m in messages)


def test_each_tor_holds_the_gateway_the_l3vni_and_a_host_route_per_vm_of_the_vrf():
    fabric, vms = routed_fabric(), routed_vms()
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    e = ENTRIES
    web = LocalVmHop(1, 10, alloc.vm["tor1"]["web-1"], alloc.vni[5000], "00:00:0a:00:00:01")
    on_tor2 = RemoteVtepHop("10.0.0.2", TOR2_RMAC, L3VNI)
    assert routing_entities(fabric, vms, "tor1", alloc) == built(
        e.l3vni_config(L3VNI, 0, 0),
        e.mac_to_router(L3VNI, TOR1_RMAC, ANYCAST_MAC),
        e.mac_to_router(5000, ANYCAST_MAC, ANYCAST_MAC),
        e.gateway_address(L3VNI, "192.168.1.254"),
        # tor1 does not host 5001: no gateway of it here, but routes to its VMs
        e.host_route(L3VNI, "192.168.1.1", web),
        e.host_route(L3VNI, "192.168.2.1", on_tor2),
        e.host_route(L3VNI, "192.168.1.3", on_tor2),
        e.prefix_route(L3VNI, "0.0.0.0", 0, on_tor2),  # the default route: fw is on tor2
    )
    db = LocalVmHop(1, 20, alloc.vm["tor2"]["db-1"], alloc.vni[5001], "00:00:0a:00:01:01")
    fw = LocalVmHop(2, 30, alloc.vm["tor2"]["fw"], alloc.vni[5000], "00:00:0a:00:00:03")
    on_tor1 = RemoteVtepHop("10.0.0.1", TOR1_RMAC, L3VNI)
    assert routing_entities(fabric, vms, "tor2", alloc) == built(
        e.l3vni_config(L3VNI, 0, 0),
        e.mac_to_router(L3VNI, TOR2_RMAC, ANYCAST_MAC),
        e.mac_to_router(5000, ANYCAST_MAC, ANYCAST_MAC),
        e.mac_to_router(5001, ANYCAST_MAC, ANYCAST_MAC),
        e.gateway_address(L3VNI, "192.168.1.254"),
        e.gateway_address(L3VNI, "192.168.2.254"),
        e.host_route(L3VNI, "192.168.1.1", on_tor1),
        e.host_route(L3VNI, "192.168.2.1", db),
        e.host_route(L3VNI, "192.168.1.3", fw),
        e.prefix_route(L3VNI, "0.0.0.0", 0, fw),
    )


def test_routed_vms_are_bound_to_their_vrf_and_the_gateway_answers_arp():
    fabric, vms = routed_fabric(), routed_vms()
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    state = compile_tor(fabric, vms, "tor2", alloc, ENC)
    e = ENTRIES
    db, fw = alloc.vm["tor2"]["db-1"], alloc.vm["tor1"].get("b1")
    for key, data in built(
        e.arp_suppression(5001, "192.168.2.254", ANYCAST_MAC),
        e.arp_suppression(5000, "192.168.1.254", ANYCAST_MAC),
        e.access_binding(
            1, 20, 5001, db, "00:00:0a:00:01:01", vrf=L3VNI, guarded=True, ipv4="192.168.2.1"
        ),
    ).items():
        assert state.entities[key] == data
    # tenant B's VNI is not routed: its VM is bound to no VRF
    tor1 = compile_tor(fabric, vms, "tor1", alloc, ENC)
    [(key, data)] = built(
        e.access_binding(2, 30, 6000, fw, "00:00:0b:00:00:01", guarded=True, ipv4="192.168.1.1")
    ).items()
    assert tor1.entities[key] == data


def test_a_tor_without_vms_of_the_vrf_holds_no_routing():
    fabric = routed_fabric()
    vms = [vm for vm in routed_vms() if vm.name == "b1"]  # only the L2 tenant, on tor1
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    assert routing_entities(fabric, vms, "tor1", alloc) == {}
    assert routing_entities(fabric, vms, "tor2", alloc) == {}


def incremental_equals_full(desired: DesiredState, alloc: Allocations) -> None:
    for tor, compiler in desired.tors.items():
        reference = compile_tor(desired.fabric, desired.view(tor).values(), tor, alloc, ENC)
        assert compiler.state == reference, tor


def test_changes_move_host_routes_and_static_routes_with_their_vm():
    fabric = routed_fabric()
    alloc = Allocations()
    desired = DesiredState(fabric, ENC, alloc)
    for tor in desired.tors.values():
        tor.state  # noqa: B018 -- built now: what follows are changes
    vms = {vm.name: vm for vm in routed_vms()}
    desired.change(list(vms.values()), [])
    incremental_equals_full(desired, alloc)
    # the firewall (the default route's next hop) moves to tor1
    desired.change([replace(vms["fw"], server="s12", vlan=31)], [])
    changes = {tor: c.take_changes() for tor, c in desired.tors.items()}
    incremental_equals_full(desired, alloc)
    e = ENTRIES
    fw_here = LocalVmHop(2, 31, alloc.vm["tor1"]["fw"], alloc.vni[5000], "00:00:0a:00:00:03")
    [(key, data)] = built(e.prefix_route(L3VNI, "0.0.0.0", 0, fw_here)).items()
    assert (key, data) in {(k, new) for k, _old, new in changes["tor1"]}
    # db-1 leaves: with fw gone too, no VM of the VRF is left on tor2, which
    # gives the VRF up: no routes at all
    desired.change([], ["db-1"])
    incremental_equals_full(desired, alloc)
    assert not any(
        ENTRIES.p4info.alias_of(desired.tors["tor2"].state.entity(k).table_entry.table_id)
        in ("host_route", "prefix_route")
        for k in desired.tors["tor2"].state.entities
        if desired.tors["tor2"].state.entity(k).WhichOneof("entity") == "table_entry"
    )
    # and takes it back when a VM of the other subnet arrives there
    desired.change([replace(vms["db-1"], server="s22", vlan=21)], [])
    incremental_equals_full(desired, alloc)
