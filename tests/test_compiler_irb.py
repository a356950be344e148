"""Routes learned through EVPN compiled into a routed tenant's VRF (symmetric
IRB with other VTEPs): host routes (type 2 with the L3 VNI, or a MAC+IP route
in a routed VNI we host) and prefixes (type 5) on every ToR holding the VRF,
towards the external VTEP's router MAC; ours win where both claim an entry,
except that a host route follows its MAC to the VTEP that won it. Entities
are compared with what the pipeline's entry builders make and read back from
the compiled state; the incremental path equals the whole compile at every
step."""

from __future__ import annotations

from dataclasses import replace

from fabric_fixture import add_tor3, routed_fabric, routed_vms
from p4vtep.compiler import DesiredState, Encoder, Learned, LearnedMac, compile_tor
from p4vtep.compiler.learned import LearnedHost, LearnedPrefix
from p4vtep.compiler.underlay import ECMP_GROUP_ID
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop
from p4vtep.model.allocation import Allocations
from p4vtep.model.fabric import Fabric, Vm

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)
L3VNI = 50000
FRR, BORDER = "192.0.2.10", "192.0.2.20"
FRR_RMAC, BORDER_RMAC = "02:fe:00:00:00:10", "02:fe:00:00:00:20"
TOR2_RMAC = "00:aa:00:00:00:02"
# A host of VRF red behind FRR in an L2 VNI this fabric does not have.
REMOTE = LearnedHost("red", "192.168.9.10", FRR, FRR_RMAC, L3VNI, 9000, "52:54:00:f0:00:09")
TO_FRR = RemoteVtepHop(FRR, FRR_RMAC, L3VNI)


def fabric3() -> Fabric:
    """routed_fabric plus tor3, which hosts only tenant B (L2): it does not hold red."""
    fabric = routed_fabric()
    add_tor3(fabric)
    return fabric


def vms3() -> list[Vm]:
    return [*routed_vms(), Vm("b3", "00:00:0b:00:00:03", ("192.168.1.3",), 6000, "s31", 10)]


def desired(learned: Learned | None = None) -> DesiredState:
    state = DesiredState(fabric3(), ENC, Allocations())
    state.change(vms3(), [])
    state.set_learned(learned or Learned())
    for compiler in state.tors.values():
        compiler.take_changes()
    return state


def holds(d: DesiredState, tor: str, message) -> bool:
    key, data = ENC.of(message)
    return d.tors[tor].state.get(key) == data


def held_key(d: DesiredState, tor: str, message) -> bool:
    key, _ = ENC.of(message)
    return d.tors[tor].state.get(key) is not None


def same_as_full_compile(d: DesiredState) -> None:
    for tor, compiler in d.tors.items():
        reference = compile_tor(d.fabric, d.view(tor).values(), tor, d.alloc, ENC, d.learned)
        assert compiler.state == reference, tor


def changes(d: DesiredState, tor: str) -> dict:
    return {key: (old, new) for key, old, new in d.tors[tor].take_changes()}


def test_a_learned_host_route_goes_to_every_tor_holding_the_vrf_towards_the_router_mac():
    d = desired()
    d.set_learned(Learned.of([], hosts=[REMOTE]))
    route = ENTRIES.host_route(L3VNI, REMOTE.ip, TO_FRR)
    for tor in ("tor1", "tor2"):
        assert holds(d, tor, route)
        assert holds(d, tor, ENTRIES.underlay_route(FRR, 32, group_id=ECMP_GROUP_ID))
        # Read back: the action the data plane runs, with its parameters.
        entity = d.tors[tor].state.entity(ENC.of(route)[0])
        action = entity.table_entry.action.action
        assert ENTRIES.p4info.alias_of(action.action_id) == "route_to_remote_vtep"
        assert [p.value for p in action.params] == [
            bytes([192, 0, 2, 10]),
            bytes.fromhex("02fe00000010"),
            L3VNI.to_bytes(3, "big").lstrip(b"\0"),
        ]
    assert not held_key(d, "tor3", route)  # tor3 does not hold red
    # ... but reaches FRR's VTEP like every ToR (the underlay is fabric-wide).
    assert holds(d, "tor3", ENTRIES.underlay_route(FRR, 32, group_id=ECMP_GROUP_ID))
    same_as_full_compile(d)
    d.set_learned(Learned())
    for tor in d.tors:
        assert not held_key(d, tor, route)
        assert not held_key(d, tor, ENTRIES.underlay_route(FRR, 32, group_id=ECMP_GROUP_ID))
    same_as_full_compile(d)


def test_prefixes_go_to_the_lpm_table_a_default_route_without_a_match_on_the_prefix():
    fabric = fabric3()
    fabric.vrfs["red"] = replace(fabric.vrfs["red"], routes=())  # (no static default route)
    d = DesiredState(fabric, ENC, Allocations())
    d.change(vms3(), [])
    border = RemoteVtepHop(BORDER, BORDER_RMAC, L3VNI)
    d.set_learned(
        Learned.of(
            [],
            hosts=[REMOTE],
            prefixes=[
                LearnedPrefix("red", "0.0.0.0/0", BORDER, BORDER_RMAC, L3VNI),
                LearnedPrefix("red", "192.168.9.0/24", FRR, FRR_RMAC, L3VNI),
            ],
        )
    )
    for tor in ("tor1", "tor2"):
        assert holds(d, tor, ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))
        assert holds(d, tor, ENTRIES.prefix_route(L3VNI, "192.168.9.0", 24, TO_FRR))
        # the host route inside that prefix is an entry of its own (host_route
        # is looked up first: host routes beat prefixes)
        assert holds(d, tor, ENTRIES.host_route(L3VNI, REMOTE.ip, TO_FRR))
    entity = d.tors["tor1"].state.entity(
        ENC.of(ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))[0]
    )
    te = entity.table_entry
    assert [f.field_id for f in te.match] == [ENTRIES.p4info.match_field(te.table_id, "vrf").id]
    same_as_full_compile(d)


def test_a_static_route_beats_a_learned_prefix_while_its_next_hop_has_an_owner():
    d = desired()  # red's 0.0.0.0/0 goes to fw (192.168.1.3, on tor2)
    default = LearnedPrefix("red", "0.0.0.0/0", BORDER, BORDER_RMAC, L3VNI)
    d.set_learned(Learned.of([], prefixes=[default]))
    fw = d.vms["fw"]
    to_fw = RemoteVtepHop("10.0.0.2", TOR2_RMAC, L3VNI)
    border = RemoteVtepHop(BORDER, BORDER_RMAC, L3VNI)
    assert holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, to_fw))
    assert not holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))
    same_as_full_compile(d)
    changes(d, "tor1")
    d.change([], ["fw"])  # the static route's next hop has no owner: inactive
    assert holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))
    assert changes(d, "tor1")[ENC.of(ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))[0]] == (
        ENC.of(ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, to_fw))[1],
        ENC.of(ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))[1],
    )  # (one entry, modified in place)
    same_as_full_compile(d)
    d.change([fw], [])
    assert holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, to_fw))
    same_as_full_compile(d)


def test_our_vms_ips_and_the_gateways_stay_ours_against_another_mac():
    d = desired()
    web = d.vms["web-1"]  # 192.168.1.1 on tor1
    thief = LearnedHost("red", web.ips[0], FRR, FRR_RMAC, L3VNI, 5000, "52:54:00:f0:00:66")
    gateway = LearnedHost("red", "192.168.1.254", FRR, FRR_RMAC, L3VNI, 5000, "52:54:00:f0:00:67")
    before = {tor: d.tors[tor].state.copy() for tor in d.tors}
    d.set_learned(Learned.of([], hosts=[thief, gateway]))
    index = d.alloc.vm["tor1"]["web-1"]
    local = LocalVmHop(1, web.vlan, index, d.alloc.vni[5000], web.mac)
    assert holds(d, "tor1", ENTRIES.host_route(L3VNI, web.ips[0], local))
    assert holds(
        d,
        "tor2",
        ENTRIES.host_route(
            L3VNI, web.ips[0], RemoteVtepHop("10.0.0.1", "00:aa:00:00:00:01", L3VNI)
        ),
    )
    assert holds(d, "tor1", ENTRIES.gateway_address(L3VNI, "192.168.1.254"))
    same_as_full_compile(d)
    # Only the underlay route to FRR's VTEP came (it is named by the facts).
    underlay = ENC.of(ENTRIES.underlay_route(FRR, 32, group_id=ECMP_GROUP_ID))
    for tor in d.tors:
        state = d.tors[tor].state
        assert set(state.entities) - set(before[tor].entities) == {underlay[0]}
        assert {k: v for k, v in state.entities.items() if k != underlay[0]} == before[tor].entities


def test_a_host_route_follows_its_mac_to_the_vtep_that_won_it_in_one_change():
    """web-1 moved away: a remote VTEP holds its MAC with a higher number, and
    the learned table gives out the MAC and the MAC+IP host route together.
    On every ToR holding red the VM's host route is modified in place to the
    remote VTEP (one writer per entry); withdrawn, the VM's own is back."""
    d = desired()
    web = d.vms["web-1"]
    moved_mac = LearnedMac(5000, web.mac, FRR, web.ips)
    moved_host = LearnedHost("red", web.ips[0], FRR, FRR_RMAC, L3VNI, 5000, web.mac)
    index = d.alloc.vm["tor1"]["web-1"]
    ours = {
        "tor1": ENTRIES.host_route(
            L3VNI, web.ips[0], LocalVmHop(1, web.vlan, index, d.alloc.vni[5000], web.mac)
        ),
        "tor2": ENTRIES.host_route(
            L3VNI, web.ips[0], RemoteVtepHop("10.0.0.1", "00:aa:00:00:00:01", L3VNI)
        ),
    }
    theirs = ENTRIES.host_route(L3VNI, web.ips[0], TO_FRR)
    d.set_learned(Learned.of([moved_mac], hosts=[moved_host]))
    for tor in ("tor1", "tor2"):
        assert holds(d, tor, theirs)
        assert holds(d, tor, ENTRIES.mac_to_remote_vtep(5000, web.mac, FRR))
        delta = changes(d, tor)
        key = ENC.of(theirs)[0]
        assert delta[key] == (ENC.of(ours[tor])[1], ENC.of(theirs)[1])
    same_as_full_compile(d)
    d.set_learned(Learned())
    for tor in ("tor1", "tor2"):
        assert holds(d, tor, ours[tor])
    same_as_full_compile(d)


def test_a_static_route_follows_its_next_hop_vm_that_moved_away():
    d = desired()
    fw = d.vms["fw"]
    d.set_learned(
        Learned.of(
            [LearnedMac(5000, fw.mac, FRR, fw.ips)],
            hosts=[LearnedHost("red", fw.ips[0], FRR, FRR_RMAC, L3VNI, 5000, fw.mac)],
        )
    )
    for tor in ("tor1", "tor2"):
        assert holds(d, tor, ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, TO_FRR))
        assert holds(d, tor, ENTRIES.host_route(L3VNI, fw.ips[0], TO_FRR))
    same_as_full_compile(d)


def test_an_asymmetric_host_route_goes_to_the_host_itself_in_its_own_vni():
    """A single-label MAC+IP route in VNI 5000 (routed in red here): frames
    for it are routed into VNI 5000 towards the host's own MAC at its VTEP."""
    d = desired()
    host = LearnedHost(
        "red", "192.168.1.77", FRR, "52:54:00:f0:00:77", 5000, 5000, "52:54:00:f0:00:77"
    )
    mac = LearnedMac(5000, host.mac, FRR, (host.ip,))
    d.set_learned(Learned.of([mac], hosts=[host]))
    hop = RemoteVtepHop(FRR, "52:54:00:f0:00:77", 5000)
    for tor in ("tor1", "tor2"):
        assert holds(d, tor, ENTRIES.host_route(L3VNI, host.ip, hop))
        assert holds(d, tor, ENTRIES.mac_to_remote_vtep(5000, host.mac, FRR))
        assert holds(d, tor, ENTRIES.arp_suppression(5000, host.ip, host.mac))
    same_as_full_compile(d)


def test_learned_routes_come_and_go_with_the_vrf_on_a_tor():
    d = desired(Learned.of([], hosts=[REMOTE]))
    route = ENTRIES.host_route(L3VNI, REMOTE.ip, TO_FRR)
    assert not held_key(d, "tor3", route)
    red_on_tor3 = Vm("web-3", "00:00:0a:00:00:33", ("192.168.1.33",), 5000, "s31", 20)
    d.change([red_on_tor3], [])
    assert holds(d, "tor3", route)
    same_as_full_compile(d)
    d.change([], ["web-3"])
    assert not held_key(d, "tor3", route)
    same_as_full_compile(d)


def test_one_host_route_per_ip_and_one_prefix_route_per_prefix():
    """Two hosts claim an IP: the lower (L2 VNI, MAC) has it; two VTEPs a
    prefix: the lower VTEP IP."""
    a = LearnedHost("red", "192.168.9.1", BORDER, BORDER_RMAC, L3VNI, 9000, "52:54:00:00:00:02")
    b = LearnedHost("red", "192.168.9.1", FRR, FRR_RMAC, L3VNI, 9000, "52:54:00:00:00:01")
    p = LearnedPrefix("red", "10.0.0.0/8", BORDER, BORDER_RMAC, L3VNI)
    q = LearnedPrefix("red", "10.0.0.0/8", FRR, FRR_RMAC, L3VNI)
    learned = Learned.of([], hosts=[a, b], prefixes=[p, q])
    assert learned.hosts == {"red": {"192.168.9.1": b}}
    assert learned.prefixes == {"red": {"10.0.0.0/8": q}}
    assert learned.vteps() == {FRR}


def test_a_vm_whose_mac_moved_away_takes_its_host_routes_along_in_the_same_change():
    """A remote VTEP won web-1's MAC with a MAC-only route (no MAC+IP yet): the
    MAC entry and the VM's host routes change together, on every ToR holding
    red; no ToR keeps routing to where the VM was. A static route through a
    moved VM without a learned host route is inactive, and a learned prefix
    for it takes over."""
    d = desired()
    web, fw = d.vms["web-1"], d.vms["fw"]
    key = ENC.of(ENTRIES.host_route(L3VNI, web.ips[0], TO_FRR))[0]
    mac_key = ENC.of(ENTRIES.mac_to_remote_vtep(5000, web.mac, FRR))[0]
    assert all(d.tors[tor].state.get(key) is not None for tor in ("tor1", "tor2"))
    d.set_learned(Learned.of([LearnedMac(5000, web.mac, FRR)]))
    for tor in ("tor1", "tor2"):
        delta = changes(d, tor)
        assert delta[key][1] is None  # the host route left
        assert delta[mac_key][1] is not None  # with the MAC, in the same change
    same_as_full_compile(d)

    border = RemoteVtepHop(BORDER, BORDER_RMAC, L3VNI)
    to_fw = RemoteVtepHop("10.0.0.2", TOR2_RMAC, L3VNI)
    default = LearnedPrefix("red", "0.0.0.0/0", BORDER, BORDER_RMAC, L3VNI)
    d.set_learned(Learned.of([LearnedMac(5000, fw.mac, FRR)], prefixes=[default]))
    assert holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, border))
    assert not holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, to_fw))
    assert not held_key(d, "tor1", ENTRIES.host_route(L3VNI, fw.ips[0], to_fw))
    same_as_full_compile(d)
    d.set_learned(Learned())  # fw's MAC is ours again: its route and the static route back
    assert holds(d, "tor1", ENTRIES.prefix_route(L3VNI, "0.0.0.0", 0, to_fw))
    assert holds(d, "tor1", ENTRIES.host_route(L3VNI, fw.ips[0], to_fw))
    same_as_full_compile(d)
