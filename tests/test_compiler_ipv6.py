"""IPv6 tenants in the compiler: ND suppression beside ARP, IPv6 host and
prefix routes beside the IPv4 ones, the gateway's global and link-local
addresses (docs/routing.md). Entities are compared with what the
pipeline's entry builders make."""

from __future__ import annotations

from dataclasses import replace

from fabric_fixture import ANYCAST_MAC, routed_fabric, routed_vms
from helpers import table_entries
from p4vtep.compiler import DesiredState, Encoder, Learned, LearnedMac, compile_tor
from p4vtep.compiler.learned import NOTHING, LearnedHost, LearnedPrefix
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, RemoteVtepHop, RouteHop
from p4vtep.model.addressing import link_local
from p4vtep.model.allocation import Allocations, allocate
from p4vtep.model.fabric import Fabric, RouterAdvertisements, StaticRoute, Subnet, Vm, Vrf
from p4vtep.runtime.describe import describe
from p4vtep.runtime.entities import to_entity


def test_the_link_local_address_of_a_mac_is_its_modified_eui64():
    """RFC 4291 appendix A: the U/L bit flipped, ff:fe in the middle, as a
    Linux interface with that MAC takes it."""
    assert link_local("00:00:5e:00:01:01") == "fe80::200:5eff:fe00:101"
    assert link_local("52:54:00:12:34:56") == "fe80::5054:ff:fe12:3456"
    assert link_local("02:00:00:00:00:00") == "fe80::ff:fe00:0"  # (U/L set: flipped to 0)


# --- a dual-stack tenant ---------------------------------------------------------

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)
L3VNI, BLUE_L3VNI = 50000, 60000
TOR1_RMAC, TOR2_RMAC = "00:aa:00:00:00:01", "00:aa:00:00:00:02"
LLA = "fe80::200:5eff:fe00:101"  # the anycast MAC's
WEB6, DB6 = Subnet("2001:db8:1::/64", "2001:db8:1::1"), Subnet("fd00:a:2::/64", "fd00:a:2::1")
WEB_MAC, DB_MAC, FW_MAC = "00:00:0a:00:00:01", "00:00:0a:00:01:01", "00:00:0a:00:00:03"
B1_MAC = "00:00:0b:00:00:01"
# The tables (and, of the shared ones, the actions) that routing and
# ARP/ND suppression fill.
TABLES = {
    "arp_suppression",
    "nd_suppression",
    "host_route",
    "ipv6_host_route",
    "prefix_route",
    "ipv6_prefix_route",
}
ACTIONS = {"to_router", "set_l3vni_params"}


def dual_stack_fabric() -> Fabric:
    """routed_fabric with an IPv6 subnet beside each IPv4 one of VRF red
    (gateways at ::1), the default route of each family through fw, and
    2001:db8:ff::/48 through db-1."""
    fabric = routed_fabric()
    for vni, subnet in ((5000, WEB6), (5001, DB6)):
        old = fabric.vnis[vni]
        fabric.vnis[vni] = replace(old, subnets=(*old.subnets, subnet))
    fabric.vrfs["red"] = replace(
        fabric.vrfs["red"],
        routes=(
            StaticRoute("0.0.0.0/0", "192.168.1.3"),
            StaticRoute("::/0", "2001:db8:1::3"),
            StaticRoute("2001:db8:ff::/48", "fd00:a:2::11"),
        ),
    )
    return fabric


def dual_stack_vms() -> list[Vm]:
    """routed_vms, web-1, db-1 and fw dual-stack (db-1's IPv6 address first)."""
    six = {"web-1": "2001:db8:1::a", "db-1": "fd00:a:2::11", "fw": "2001:db8:1::3"}
    out = []
    for vm in routed_vms():
        if vm.name == "db-1":
            vm = replace(vm, ips=(six["db-1"], *vm.ips))
        elif vm.name in six:
            vm = replace(vm, ips=(*vm.ips, six[vm.name]))
        out.append(vm)
    return out


def entities(fabric: Fabric, vms: list[Vm], tor: str, alloc: Allocations, learned=NOTHING) -> dict:
    """The ToR's entities in the routing and ARP/ND tables (and the routing
    entries of the shared ones), by key."""
    state = compile_tor(fabric, vms, tor, alloc, ENC, learned)
    return table_entries(state, ENTRIES.p4info, TABLES, ACTIONS)


def built(*messages) -> dict:
    out = dict(ENC.of(m) for m in messages)
    assert len(out) == len(messages), "two messages with one key"
    return out


def allocated(fabric: Fabric, vms: list[Vm]) -> Allocations:
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    return alloc


def gateway(vni: int, addresses: tuple[str, ...], l3vni: int = L3VNI) -> list:
    """A routed VNI's gateway: the anycast MAC routed, each gateway address
    answered (ARP or ND with the R flag) and held as the gateway's."""
    e = ENTRIES
    out = [e.mac_to_router(vni, ANYCAST_MAC, ANYCAST_MAC)]
    for ip in addresses:
        answer = (
            e.nd_suppression(vni, ip, ANYCAST_MAC, router=True)
            if ":" in ip
            else e.arp_suppression(vni, ip, ANYCAST_MAC)
        )
        out += [answer, e.gateway_address(l3vni, ip)]
    return out


def red_routes(web: RouteHop, db: RouteHop, fw: RouteHop) -> list:
    """VRF red's routes on a ToR: every address of web-1, db-1 and fw
    towards the hop given for the VM (its VF, or the ToR it is on), the
    default route of each family via fw and 2001:db8:ff::/48 via db-1."""
    e = ENTRIES
    return [
        e.host_route(L3VNI, "192.168.1.1", web),
        e.host_route(L3VNI, "2001:db8:1::a", web),
        e.host_route(L3VNI, "fd00:a:2::11", db),
        e.host_route(L3VNI, "192.168.2.1", db),
        e.host_route(L3VNI, "192.168.1.3", fw),
        e.host_route(L3VNI, "2001:db8:1::3", fw),
        e.prefix_route(L3VNI, "0.0.0.0", 0, fw),
        e.prefix_route(L3VNI, "::", 0, fw),
        e.prefix_route(L3VNI, "2001:db8:ff::", 48, db),
    ]


def test_a_dual_stack_vrf_on_each_tor():
    """ND beside ARP for every VM address of a hosted VNI; an IPv6 host route
    beside the IPv4 one for every VM of the VRF; the IPv6 gateway answered
    with the R flag, and its link-local address by ND in each routed VNI
    hosted, held as the gateway once per VRF; the IPv6 static routes (::/0
    as a wildcard) in the IPv6 prefix table."""
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    alloc = allocated(fabric, vms)
    e = ENTRIES
    web = LocalVmHop(1, 10, alloc.vm["tor1"]["web-1"], alloc.vni[5000], WEB_MAC)
    on_tor2 = RemoteVtepHop("10.0.0.2", TOR2_RMAC, L3VNI)
    assert entities(fabric, vms, "tor1", alloc) == built(
        e.l3vni_config(L3VNI, 0, 0),
        e.mac_to_router(L3VNI, TOR1_RMAC, ANYCAST_MAC),
        e.gateway_address(L3VNI, LLA),
        # VNI 5000 (tor1 hosts no VM of 5001: neither its gateway nor its VMs' ARP/ND)
        *gateway(5000, ("192.168.1.254", "2001:db8:1::1")),
        e.nd_suppression(5000, LLA, ANYCAST_MAC, router=True),
        e.arp_suppression(5000, "192.168.1.1", WEB_MAC),
        e.nd_suppression(5000, "2001:db8:1::a", WEB_MAC),
        e.arp_suppression(5000, "192.168.1.3", FW_MAC),
        e.nd_suppression(5000, "2001:db8:1::3", FW_MAC),
        e.arp_suppression(6000, "192.168.1.1", B1_MAC),  # (tenant B, L2 only: as before)
        *red_routes(web=web, db=on_tor2, fw=on_tor2),
    )
    db = LocalVmHop(1, 20, alloc.vm["tor2"]["db-1"], alloc.vni[5001], DB_MAC)
    fw = LocalVmHop(2, 30, alloc.vm["tor2"]["fw"], alloc.vni[5000], FW_MAC)
    on_tor1 = RemoteVtepHop("10.0.0.1", TOR1_RMAC, L3VNI)
    assert entities(fabric, vms, "tor2", alloc) == built(
        e.l3vni_config(L3VNI, 0, 0),
        e.mac_to_router(L3VNI, TOR2_RMAC, ANYCAST_MAC),
        e.gateway_address(L3VNI, LLA),  # (once, for both VNIs)
        *gateway(5000, ("192.168.1.254", "2001:db8:1::1")),
        e.nd_suppression(5000, LLA, ANYCAST_MAC, router=True),
        *gateway(5001, ("192.168.2.254", "fd00:a:2::1")),
        e.nd_suppression(5001, LLA, ANYCAST_MAC, router=True),
        e.arp_suppression(5000, "192.168.1.1", WEB_MAC),
        e.nd_suppression(5000, "2001:db8:1::a", WEB_MAC),
        e.arp_suppression(5000, "192.168.1.3", FW_MAC),
        e.nd_suppression(5000, "2001:db8:1::3", FW_MAC),
        e.arp_suppression(5001, "192.168.2.1", DB_MAC),
        e.nd_suppression(5001, "fd00:a:2::11", DB_MAC),
        *red_routes(web=on_tor1, db=db, fw=fw),
    )


def described(
    fabric: Fabric, vms: list[Vm], tor: str, alloc: Allocations, tables: set, learned=NOTHING
) -> set:
    """The ToR's entries of ``tables``, as ``describe`` reads them back."""
    state = compile_tor(fabric, vms, tor, alloc, ENC, learned)
    p4info = ENTRIES.p4info
    out = set()
    for key in state.entities:
        entity = state.entity(key)
        table_id = entity.table_entry.table_id  # (0: not a table entry)
        if table_id and p4info.alias_of(table_id) in tables:
            out.add(describe(entity, p4info))
    return out


def test_the_ipv6_entries_read_back_table_match_action_and_parameters():
    """The IPv6 tables of tor1, read back: the _v6 actions, the gateway's R
    flag, the default route without its LPM field (a wildcard)."""
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    alloc = allocated(fabric, vms)
    vm, vni = alloc.vm["tor1"]["web-1"], alloc.vni[5000]
    to_web = (
        f"route_to_local_vm_v6(port=1, vlan_id=10, vm={vm}, vni_index={vni}, vm_mac={WEB_MAC}, "
        "policed=0, too_big_payload_len=8961)"  # (the default MTU, 9000: 40 + 8961 is over it)
    )
    to_tor2 = f"route_to_remote_vtep_v6(vtep_ip=10.0.0.2, router_mac={TOR2_RMAC}, l3vni=50000)"

    def nd(target: str, mac: str, router: int) -> str:
        entry = f"nd_suppression{{vni=5000, target_ip={target}}}"
        return f"{entry} -> nd_reply(target_mac={mac}, router={router})"

    assert described(fabric, vms, "tor1", alloc, {"nd_suppression"}) == {
        nd("2001:db8:1::1", ANYCAST_MAC, 1),
        nd(LLA, ANYCAST_MAC, 1),
        nd("2001:db8:1::a", WEB_MAC, 0),
        nd("2001:db8:1::3", FW_MAC, 0),
    }
    assert described(fabric, vms, "tor1", alloc, {"ipv6_host_route", "ipv6_prefix_route"}) == {
        "ipv6_host_route{vrf=50000, dst_ip=2001:db8:1::1} -> to_gateway()",
        f"ipv6_host_route{{vrf=50000, dst_ip={LLA}}} -> to_gateway()",
        f"ipv6_host_route{{vrf=50000, dst_ip=2001:db8:1::a}} -> {to_web}",
        f"ipv6_host_route{{vrf=50000, dst_ip=2001:db8:1::3}} -> {to_tor2}",
        f"ipv6_host_route{{vrf=50000, dst_ip=fd00:a:2::11}} -> {to_tor2}",
        f"ipv6_prefix_route{{vrf=50000}} -> {to_tor2}",
        f"ipv6_prefix_route{{vrf=50000, dst_prefix=2001:db8:ff::/48}} -> {to_tor2}",
    }  # fmt: skip
    # and none of it in the IPv4 tables
    ipv4 = described(fabric, vms, "tor1", alloc, {"arp_suppression", "host_route", "prefix_route"})
    assert not [line for line in ipv4 if "::" in line]


def test_an_ipv6_route_to_a_local_vm_carries_its_vnis_mtu():
    """route_to_local_vm_v6's too_big_payload_len is the MTU of the VM's own
    VNI less 39: the shortest payload over it with the 40-byte header (the
    data plane punts such a packet as packet_too_big), for host routes and
    for a static route through the VM; the IPv4 route to the same VM has no
    such parameter."""
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    fabric.vnis[5000] = replace(
        fabric.vnis[5000], router_advertisements=RouterAdvertisements(mtu=1400)
    )
    alloc = allocated(fabric, vms)
    tables = {"host_route", "ipv6_host_route", "ipv6_prefix_route"}
    held = described(fabric, vms, "tor2", alloc, tables)
    fw = alloc.vm["tor2"]["fw"]
    db = alloc.vm["tor2"]["db-1"]
    to_fw = (
        f"route_to_local_vm_v6(port=2, vlan_id=30, vm={fw}, vni_index={alloc.vni[5000]}, "
        f"vm_mac={FW_MAC}, policed=0, too_big_payload_len=1361)"
    )
    to_db = (
        f"route_to_local_vm_v6(port=1, vlan_id=20, vm={db}, vni_index={alloc.vni[5001]}, "
        f"vm_mac={DB_MAC}, policed=0, too_big_payload_len=8961)"
    )
    assert f"ipv6_host_route{{vrf=50000, dst_ip=2001:db8:1::3}} -> {to_fw}" in held
    assert f"ipv6_prefix_route{{vrf=50000}} -> {to_fw}" in held  # (::/0 through fw)
    assert f"ipv6_host_route{{vrf=50000, dst_ip=fd00:a:2::11}} -> {to_db}" in held
    assert f"ipv6_prefix_route{{vrf=50000, dst_prefix=2001:db8:ff::/48}} -> {to_db}" in held
    assert not [line for line in held if line.startswith("host_route") and "too_big" in line]
    assert [line for line in held if line.startswith("host_route{vrf=50000, dst_ip=192.168.1.3}")]
    # The incremental compile holds the same, built first and changed after.
    desired = DesiredState(fabric, ENC, Allocations())
    for compiler in desired.tors.values():
        compiler.state  # noqa: B018 -- built now: what follows are changes
    desired.change(vms, [])
    incremental_equals_full(desired)


def test_an_ipv4_only_vrf_has_no_link_local_gateway():
    fabric, vms = routed_fabric(), routed_vms()
    alloc = allocated(fabric, vms)
    for tor in ("tor1", "tor2"):
        held = described(fabric, vms, tor, alloc, TABLES)
        assert held  # (the IPv4 ones)
        assert not [line for line in held if ":" in line.split("->")[0]]


def two_vrf_fabric() -> Fabric:
    """dual_stack_fabric with tenant B routed too: VNI 6000 in VRF blue (L3
    VNI 60000) with VNI 5000's very subnets, 192.168.1.0/24 and 2001:db8:1::/64."""
    fabric = dual_stack_fabric()
    fabric.vrfs["blue"] = Vrf("blue", BLUE_L3VNI)
    fabric.vnis[6000] = replace(fabric.vnis[6000], vrf="blue", subnets=fabric.vnis[5000].subnets)
    return fabric


def test_two_vrfs_with_the_same_ipv6_subnet_are_kept_apart():
    """b1 (blue) has web-1's IPv6 address: each VRF routes it to its own VM,
    each VNI answers ND with its own MAC, and each VRF holds the gateway's
    addresses (the link-local one too) under its own L3 VNI."""
    fabric = two_vrf_fabric()
    vms = [
        replace(vm, ips=(*vm.ips, "2001:db8:1::a")) if vm.name == "b1" else vm
        for vm in dual_stack_vms()
    ]
    alloc = allocated(fabric, vms)
    e = ENTRIES
    web = LocalVmHop(1, 10, alloc.vm["tor1"]["web-1"], alloc.vni[5000], WEB_MAC)
    b1 = LocalVmHop(2, 30, alloc.vm["tor1"]["b1"], alloc.vni[6000], B1_MAC)
    held = entities(fabric, vms, "tor1", alloc)
    for message in (
        e.host_route(L3VNI, "2001:db8:1::a", web),
        e.host_route(BLUE_L3VNI, "2001:db8:1::a", b1),
        e.host_route(BLUE_L3VNI, "192.168.1.1", b1),
        e.nd_suppression(5000, "2001:db8:1::a", WEB_MAC),
        e.nd_suppression(6000, "2001:db8:1::a", B1_MAC),
        *gateway(6000, ("192.168.1.254", "2001:db8:1::1"), BLUE_L3VNI),
        e.nd_suppression(6000, LLA, ANYCAST_MAC, router=True),
        e.gateway_address(L3VNI, LLA),
        e.gateway_address(BLUE_L3VNI, LLA),
    ):
        key, data = ENC.of(message)
        assert held.get(key) == data, describe(to_entity(message), ENTRIES.p4info)
    # blue is held on tor1 only (b1's ToR); red's routes there are red's alone
    blue = described(fabric, vms, "tor2", alloc, TABLES)
    assert not [line for line in blue if "vrf=60000" in line or "vni=6000" in line]


def incremental_equals_full(desired: DesiredState) -> None:
    for tor, compiler in desired.tors.items():
        view = desired.view(tor).values()
        reference = compile_tor(desired.fabric, view, tor, desired.alloc, ENC, desired.learned)
        assert compiler.state == reference, tor


def ipv6_held(desired: DesiredState, tor: str) -> set[str]:
    """The ToR's IPv6 entries, described."""
    state, p4info = desired.tors[tor].state, ENTRIES.p4info
    out = set()
    for key in state.entities:
        entity = state.entity(key)
        table_id = entity.table_entry.table_id
        if table_id and p4info.alias_of(table_id) in IPV6_TABLES:
            out.add(describe(entity, p4info))
    return out


IPV6_TABLES = {"nd_suppression", "ipv6_host_route", "ipv6_prefix_route"}


def test_ipv6_entries_go_with_their_vm_change_by_change():
    """A dual-stack VM's ND entries and IPv6 host routes come and go with it
    on every ToR, the static routes through it with it; when the VRF leaves
    a ToR, its IPv6 gateway (link-local too) goes. Incremental equals the
    whole compile at every step."""
    desired = DesiredState(dual_stack_fabric(), ENC, Allocations())
    for tor in desired.tors.values():
        tor.state  # noqa: B018 -- built now: what follows are changes
    vms = {vm.name: vm for vm in dual_stack_vms()}
    desired.change(list(vms.values()), [])
    incremental_equals_full(desired)
    assert any("2001:db8:1::3" in line for line in ipv6_held(desired, "tor1"))
    assert any("ipv6_prefix_route{vrf=50000}" in line for line in ipv6_held(desired, "tor1"))
    desired.change([], ["fw"])  # ::/0's next hop: the route is inactive
    incremental_equals_full(desired)
    for tor in ("tor1", "tor2"):
        held = ipv6_held(desired, tor)
        assert not [line for line in held if "2001:db8:1::3" in line or FW_MAC in line]
        assert not [line for line in held if "ipv6_prefix_route{vrf=50000}" in line]
    # db-1 leaves: tor2 hosts no VM of red, which it gives up, IPv6 and all
    desired.change([], ["db-1"])
    incremental_equals_full(desired)
    assert ipv6_held(desired, "tor2") == set()
    # web-1 moves to tor2 without its IPv6 address: red (its gateway's IPv6
    # addresses with it) comes back to tor2 and leaves tor1
    desired.change([replace(vms["web-1"], ips=("192.168.1.1",), server="s22", vlan=31)], [])
    incremental_equals_full(desired)
    assert ipv6_held(desired, "tor1") == set()
    held = ipv6_held(desired, "tor2")
    assert f"ipv6_host_route{{vrf=50000, dst_ip={LLA}}} -> to_gateway()" in held
    assert not [line for line in held if "2001:db8:1::a" in line]


def test_without_its_ipv6_subnets_and_routes_a_vrf_holds_no_ipv6_entries():
    """The fabric is the controller's for its life: a subnet or route taken
    out is a new fabric, compiled without their entries."""
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    alloc = allocated(fabric, vms)
    fabric.vrfs["red"] = replace(
        fabric.vrfs["red"], routes=(StaticRoute("0.0.0.0/0", "192.168.1.3"),)
    )
    without_routes = described(fabric, vms, "tor1", alloc, {"ipv6_prefix_route"})
    assert without_routes == set()
    for vni in (5000, 5001):
        spec = fabric.vnis[vni]
        fabric.vnis[vni] = replace(spec, subnets=spec.subnets[:1])
    ipv4_vms = [replace(vm, ips=tuple(ip for ip in vm.ips if ":" not in ip)) for vm in vms]
    for tor in ("tor1", "tor2"):
        assert described(fabric, ipv4_vms, tor, alloc, IPV6_TABLES) == set()


# --- learned through EVPN ------------------------------------------------------------

FRR, FRR_RMAC = "192.0.2.10", "02:fe:00:00:00:10"
TO_FRR = RemoteVtepHop(FRR, FRR_RMAC, L3VNI)
FRR_V6 = f"route_to_remote_vtep_v6(vtep_ip={FRR}, router_mac={FRR_RMAC}, l3vni=50000)"
HOST_MAC = "52:54:00:f0:00:09"


def test_learned_ipv6_hosts_macs_and_prefixes_take_the_ipv6_tables():
    """A learned MAC's IPv6 address is answered by ND; an IPv6 host route
    and prefix go to the IPv6 tables towards the peer's router MAC. The
    gateway's addresses (link-local too) stay the gateway's, and our static
    ::/0 wins over a learned one."""
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    learned = Learned.of(
        [LearnedMac(5000, HOST_MAC, FRR, ("192.168.1.50", "2001:db8:1::50"))],
        hosts=[
            LearnedHost("red", ip, FRR, FRR_RMAC, L3VNI, 9000, HOST_MAC)
            for ip in ("2001:db8:9::10", "2001:db8:1::1", LLA)
        ],
        prefixes=[
            LearnedPrefix("red", prefix, FRR, FRR_RMAC, L3VNI)
            for prefix in ("2001:db8:f000::/36", "::/0")
        ],
    )
    alloc = allocated(fabric, vms)
    held = entities(fabric, vms, "tor1", alloc, learned)
    e = ENTRIES
    on_tor2 = RemoteVtepHop("10.0.0.2", TOR2_RMAC, L3VNI)
    for message in (
        e.nd_suppression(5000, "2001:db8:1::50", HOST_MAC),
        e.arp_suppression(5000, "192.168.1.50", HOST_MAC),
        e.host_route(L3VNI, "2001:db8:9::10", TO_FRR),
        e.prefix_route(L3VNI, "2001:db8:f000::", 36, TO_FRR),
        e.prefix_route(L3VNI, "::", 0, on_tor2),  # (ours: via fw)
        e.gateway_address(L3VNI, "2001:db8:1::1"),
        e.gateway_address(L3VNI, LLA),
    ):
        key, data = ENC.of(message)
        assert held.get(key) == data, describe(to_entity(message), ENTRIES.p4info)
    via_frr = described(fabric, vms, "tor1", alloc, TABLES, learned)
    assert sorted(line for line in via_frr if FRR_RMAC in line) == [
        f"ipv6_host_route{{vrf=50000, dst_ip=2001:db8:9::10}} -> {FRR_V6}",
        f"ipv6_prefix_route{{vrf=50000, dst_prefix=2001:db8:f000::/36}} -> {FRR_V6}",
    ]  # (nothing for the gateway's addresses, nor ::/0)
    # and the same change by change
    desired = DesiredState(fabric, ENC, Allocations())
    desired.change(vms, [])
    for tor in desired.tors.values():
        tor.state  # noqa: B018
    desired.set_learned(learned)
    incremental_equals_full(desired)
    desired.set_learned(Learned())
    incremental_equals_full(desired)
