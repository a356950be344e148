"""What routing asks of the VMs (docs/routing.md): IPs inside their routed
VNI's subnets, no gateway or subnet network/broadcast address, not the
anycast gateway MAC, and an owner for every static route's next hop; checked
alike for a whole state (validate), a change (validate_change), the
controller and the API, and a refused change changes nothing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from fabric_fixture import two_tor_fabric
from fabric_fixture import vms as fixture_vms
from helpers import api_client, controller_state
from p4vtep.api import overlay_pb2 as pb
from p4vtep.controller import Controller
from p4vtep.dataplane import limits
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import AllowedPair, Fabric, StaticRoute, Subnet, Vm, Vni, Vrf
from p4vtep.model.validation import (
    ValidationError,
    VmIndex,
    check_fabric,
    validate,
    validate_change,
    vrf_of,
)
from p4vtep.sources.fabric_file import load_fabric, load_inventory
from p4vtep.state.sqlite_store import Store

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
GATEWAY_MAC = "00:00:5e:00:01:01"


def routed_fabric(*routes: StaticRoute) -> Fabric:
    """two_tor_fabric with routing: VNI 5000 (192.168.1.0/24) and a new VNI
    5001 (192.168.2.0/24) in VRF tenant-a (L3 VNI 50000), VNI 6000 with the
    same 192.168.1.0/24 in VRF tenant-b (L3 VNI 60000); gateways at .254.
    ``routes`` are tenant-a's static routes. vms() is valid in it."""
    fabric = two_tor_fabric()
    fabric.anycast_gateway_mac = GATEWAY_MAC
    fabric.vrfs["tenant-a"] = Vrf("tenant-a", 50000, routes)
    fabric.vrfs["tenant-b"] = Vrf("tenant-b", 60000)
    web = (Subnet("192.168.1.0/24", "192.168.1.254"),)
    fabric.vnis[5000] = replace(fabric.vnis[5000], vrf="tenant-a", subnets=web)
    db = (Subnet("192.168.2.0/24", "192.168.2.254"),)
    fabric.vnis[5001] = Vni(5001, "tenant-a-db", vrf="tenant-a", subnets=db)
    fabric.vnis[6000] = replace(fabric.vnis[6000], vrf="tenant-b", subnets=web)
    return fabric


DEFAULT_VIA_A2 = StaticRoute("0.0.0.0/0", "192.168.1.2")  # a2: VNI 5000, VRF tenant-a


def vms() -> list[Vm]:
    """fabric_fixture's VMs, a2 a router: the next hop of DEFAULT_VIA_A2
    forwards what it did not originate, from any address, so its port
    security is off (docs/security.md; test_port_security.py has the rule)."""
    return [replace(vm, port_security=False) if vm.name == "a2" else vm for vm in fixture_vms()]


A1, A2, B1, B2 = vms()
D1 = Vm("d1", "00:00:0a:00:02:01", ("192.168.2.1",), 5001, "s22", 50)  # tenant-a's db VNI


def problems(vm_list, fabric=None) -> list[str]:
    with pytest.raises(ValidationError) as info:
        validate(fabric or routed_fabric(), vm_list)
    return [str(p) for p in info.value.problems]


def test_the_routed_fixture_and_its_vms_pass():
    fabric = routed_fabric(DEFAULT_VIA_A2)
    assert check_fabric(fabric) == []
    validate(fabric, vms() + [D1])


OUTSIDE_WEB = "is outside the subnets of vni tenant-a (192.168.1.0/24)"


@pytest.mark.parametrize(
    "vm,ip,message",
    [
        (A1, "10.1.1.5", OUTSIDE_WEB),
        (A1, "192.168.2.5", OUTSIDE_WEB),  # tenant-a's other subnet
        (A1, "169.254.0.9", OUTSIDE_WEB),
        (A1, "192.168.1.254", "is the gateway of 192.168.1.0/24"),
        (A1, "192.168.1.0", "is the network address of 192.168.1.0/24"),
        (A1, "192.168.1.255", "is the broadcast address of 192.168.1.0/24"),
        (B1, "192.168.1.254", "is the gateway of 192.168.1.0/24"),  # tenant-b's gateway
    ],
)
def test_a_routed_vms_ips_are_host_addresses_of_its_subnets(vm, ip, message):
    others = [v for v in vms() if v.name != vm.name]
    assert problems(others + [replace(vm, ips=(ip,))]) == [f"vm {vm.name}: ips: {ip} {message}"]


def test_every_ip_of_a_routed_vm_is_checked():
    vm = replace(A1, ips=("192.168.1.1", "10.0.0.9", "192.168.1.254"))
    assert problems([vm]) == [
        "vm a1: ips: 10.0.0.9 is outside the subnets of vni tenant-a (192.168.1.0/24)",
        "vm a1: ips: 192.168.1.254 is the gateway of 192.168.1.0/24",
    ]


def test_the_same_addresses_are_fine_on_an_l2_vni():
    """An L2-only VNI knows no subnet or gateway: as before routing."""
    fabric = routed_fabric()
    fabric.vnis[6000] = replace(fabric.vnis[6000], vrf=None, subnets=())
    validate(fabric, [replace(B1, ips=("192.168.1.254", "192.168.1.255", "10.9.9.9"))])


def test_the_anycast_gateway_mac_is_no_vms_in_any_vni():
    assert problems([replace(A1, mac=GATEWAY_MAC)]) == [
        f"vm a1: mac: {GATEWAY_MAC} is the fabric's anycast_gateway_mac"
    ]
    fabric = routed_fabric()
    fabric.vnis[6000] = replace(fabric.vnis[6000], vrf=None, subnets=())  # L2 only
    assert problems([replace(B1, mac=GATEWAY_MAC)], fabric) == [
        f"vm b1: mac: {GATEWAY_MAC} is the fabric's anycast_gateway_mac"
    ]


def test_ips_are_unique_in_a_vrf_and_may_repeat_across_vrfs():
    # a1 and b1 share 192.168.1.1: tenant-a and tenant-b are apart.
    validate(routed_fabric(), [A1, B1])
    # Within tenant-a an IP of VNI 5000's subnet cannot be taken in VNI 5001:
    # it lies outside 5001's subnets, which do not overlap 5000's.
    twin = replace(D1, ips=("192.168.1.1",))
    assert problems([A1, twin]) == [
        "vm d1: ips: 192.168.1.1 is outside the subnets of vni tenant-a-db (192.168.2.0/24)",
        "vm d1: ips: 192.168.1.1 is already used by vm a1 in VRF tenant-a",
    ]


def test_a_route_whose_next_hop_no_vm_owns_is_accepted_and_inactive():
    """Like a router's static route to an unresolved next hop: the state is
    valid, the route is not installed (compiler/routing.py) and `p4vtep route
    list` says so. A VM set is never refused for the route's sake: start-up
    order, a stopped libvirt domain or a detach would otherwise block every
    other change."""
    fabric = routed_fabric(DEFAULT_VIA_A2)
    validate(fabric, [A2])
    validate(fabric, [A1])
    # b2 has 192.168.1.2 too, but in tenant-b: it is not tenant-a's next hop.
    validate(fabric, [A1, B2])


def test_a_bad_next_hop_is_reported_once():
    fabric = routed_fabric(StaticRoute("0.0.0.0/0", "10.0.0.1"))
    assert problems([A1], fabric) == [
        "vrf tenant-a: routes[0].next_hop: 10.0.0.1 is in none of the subnets of VRF tenant-a "
        "(the next hop is a VM of the VRF)"
    ]


# --- changes: validate_change and its index ---------------------------------


class NoWalk(dict):
    """The current VMs, refusing to be walked: a change is checked by
    looking up the VMs it names, never by reading all of them."""

    def __iter__(self):
        raise AssertionError("walked the VMs")

    def values(self):
        raise AssertionError("walked the VMs")

    def items(self):
        raise AssertionError("walked the VMs")

    def keys(self):
        raise AssertionError("walked the VMs")


def index_state(index: VmIndex):
    return (index.macs, index.ips, index.vrf_ips, index.vlans)


@pytest.fixture
def state():
    """(fabric, current VMs, their index) of a valid routed state: a2 owns the
    next hop of tenant-a's default route."""
    fabric = routed_fabric(DEFAULT_VIA_A2)
    current = {vm.name: vm for vm in vms() + [D1]}
    validate(fabric, current.values())
    return fabric, current, VmIndex.of(current.values(), vrf_of(fabric))


def refused_change(state, upserts, removals) -> list[str]:
    fabric, current, index = state
    before = tuple(dict(d) for d in index_state(index))
    with pytest.raises(ValidationError) as info:
        validate_change(fabric, NoWalk(current), index, upserts, removals)
    assert index_state(index) == before  # a refused change leaves the index as it was
    return [str(p) for p in info.value.problems]


def test_the_next_hops_owner_may_go_and_its_ip_move(state):
    fabric, current, index = state
    moved = replace(A2, ips=("192.168.1.3",))
    validate_change(fabric, NoWalk(current), index, [moved], [])
    assert ("tenant-a", "192.168.1.2") not in index.vrf_ips
    current["a2"] = moved  # (the caller commits what was validated)
    validate_change(fabric, NoWalk(current), index, [], ["a2"])
    assert ("tenant-a", "192.168.1.3") not in index.vrf_ips


def test_a_next_hop_may_change_owner_in_one_change(state):
    fabric, current, index = state
    heir = Vm("a3", "00:00:0a:00:00:03", ("192.168.1.2",), 5000, "s22", 60, port_security=False)
    validate_change(fabric, NoWalk(current), index, [heir], ["a2"])
    assert index.vrf_ips[("tenant-a", "192.168.1.2")] == "a3"
    assert index.ips[(5000, "192.168.1.2")] == "a3"


def test_moving_the_next_hop_vm_and_other_changes_pass(state):
    fabric, current, index = state
    validate_change(fabric, NoWalk(current), index, [replace(A2, server="s12", vlan=70)], [])
    validate_change(fabric, NoWalk(current), index, [], ["b2"])  # tenant-b's 192.168.1.2
    assert ("tenant-b", "192.168.1.2") not in index.vrf_ips
    assert index.vrf_ips[("tenant-a", "192.168.1.2")] == "a2"


def test_a_change_is_refused_for_a_routed_vm_like_a_whole_state(state):
    assert refused_change(state, [replace(D1, ips=("192.168.2.255",))], []) == [
        "vm d1: ips: 192.168.2.255 is the broadcast address of 192.168.2.0/24"
    ]
    # Refused and undone: the VRF index keeps a1 as the owner of its IP.
    assert refused_change(state, [replace(D1, ips=("192.168.1.1",))], []) == [
        "vm d1: ips: 192.168.1.1 is outside the subnets of vni tenant-a-db (192.168.2.0/24)",
        "vm d1: ips: 192.168.1.1 is already used by vm a1 in VRF tenant-a",
    ]
    assert state[2].vrf_ips[("tenant-a", "192.168.1.1")] == "a1"


def test_vms_may_come_before_the_next_hops_owner(state):
    """A start with an empty store: the VMs arrive in any order."""
    fabric = routed_fabric(DEFAULT_VIA_A2)
    index = VmIndex(vrf_of(fabric))
    validate_change(fabric, NoWalk(), index, [A1], [])
    validate_change(fabric, NoWalk(), index, [A2], [])
    assert index.vrf_ips[("tenant-a", "192.168.1.2")] == "a2"


# --- the controller and the API -------------------------------------------------


@pytest.fixture
def controller(tmp_path):
    controller = Controller(
        routed_fabric(DEFAULT_VIA_A2), bmv2_pipeline(), Store(tmp_path / "s.db")
    )
    for vm in (A2, A1):  # (a2 first: it owns the next hop)
        controller.attach(replace(vm, source="api"))
    return controller


def test_the_controller_refuses_a_routing_fabric_with_problems():
    fabric = routed_fabric()
    fabric.anycast_gateway_mac = fabric.tors["tor1"].router_mac
    with pytest.raises(ValidationError) as info:
        Controller(fabric, bmv2_pipeline())
    assert str(info.value) == (
        "fabric: anycast_gateway_mac: 00:aa:00:00:00:01 is the router_mac of tor tor1 "
        "(the gateway MAC is not a ToR's)"
    )


@pytest.mark.parametrize(
    "mac,ip,message",
    [
        ("00:00:0a:00:00:09", "10.0.0.9", f"vm a9: ips: 10.0.0.9 {OUTSIDE_WEB}"),
        (
            "00:00:0a:00:00:09",
            "192.168.1.254",
            "vm a9: ips: 192.168.1.254 is the gateway of 192.168.1.0/24",
        ),
        (
            GATEWAY_MAC,
            "192.168.1.9",
            f"vm a9: mac: {GATEWAY_MAC} is the fabric's anycast_gateway_mac",
        ),
    ],
)
def test_the_api_refuses_a_routed_vm_and_changes_nothing(controller, mac, ip, message):
    vm = pb.VM(name="a9", mac=mac, ips=[ip], vni=5000, server="s12", vlan=90)
    before = controller_state(controller)
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=vm))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == message
    assert controller_state(controller) == before


def test_the_api_detaches_the_next_hops_owner_and_the_route_goes_inactive(controller):
    with api_client(controller) as (client, _):
        client.DetachVM(pb.DetachVMRequest(name="a2"))
        [static] = [
            r
            for r in client.ListRoutes(pb.ListRoutesRequest(vrf="tenant-a")).routes
            if r.kind == "static"
        ]
    assert (static.prefix, static.next_hop, static.vm) == ("0.0.0.0/0", "192.168.1.2", "")
    assert set(controller.vms) == {"a1"}


def test_an_inventory_without_the_next_hop_is_taken(tmp_path):
    fabric = load_fabric(EXAMPLES / "fabric-routed.yaml")
    inventory = load_inventory(EXAMPLES / "inventory-routed.yaml")
    validate(fabric, inventory)
    controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
    without_fw = [vm for vm in inventory if vm.name != "a-fw"]
    controller.replace_source("inventory", without_fw)
    assert set(controller.vms) == {vm.name for vm in without_fw}
    controller.replace_source("inventory", inventory)
    assert set(controller.vms) == {vm.name for vm in inventory}


# --- dual stack (issue 37) ---------------------------------------------------------

PIPELINE_WITHOUT = (
    "need a pipeline with IPv6 tables (nd_suppression, ipv6_host_route, ipv6_prefix_route): "
    "this pipeline has none, it takes IPv4 only"
)


@pytest.fixture
def ipv6_pipeline(monkeypatch):
    """A pipeline with the IPv6 tables (the committed one; set here whatever
    P4VTEP_P4INFO names): the model's IPv6 rules apply."""
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", True)


@pytest.fixture
def pipeline_without_ipv6(monkeypatch):
    """A pipeline without the IPv6 tables (an older build): limits says so."""
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", False)


WEB6 = Subnet("2001:db8:1::/64", "2001:db8:1::1")
DB6 = Subnet("fd00:a:2::/64", "fd00:a:2::1")  # unique local


def dual_stack_fabric(*routes: StaticRoute) -> Fabric:
    """routed_fabric with an IPv6 subnet beside each IPv4 one: tenant-a's web
    VNI 2001:db8:1::/64, its db VNI fd00:a:2::/64; tenant-b's web VNI the same
    2001:db8:1::/64 (another VRF). Gateways at ::1."""
    fabric = routed_fabric(*routes)
    for vni, subnet in ((5000, WEB6), (5001, DB6), (6000, WEB6)):
        old = fabric.vnis[vni]
        fabric.vnis[vni] = replace(old, subnets=(*old.subnets, subnet))
    return fabric


DEFAULT6_VIA_A2 = StaticRoute("::/0", "2001:db8:1::2")
A1_6 = replace(A1, ips=("192.168.1.1", "2001:db8:1::11"))
A2_6 = replace(A2, ips=("192.168.1.2", "2001:db8:1::2"))
B1_6 = replace(B1, ips=("2001:db8:1::11",))  # a1's IPv6 address, in tenant-b
D1_6 = replace(D1, ips=("fd00:a:2::11", "192.168.2.1"))


def fabric_problems(fabric: Fabric) -> list[str]:
    return [str(p) for p in check_fabric(fabric)]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_a_dual_stack_fabric_and_its_vms_pass():
    fabric = dual_stack_fabric(DEFAULT_VIA_A2, DEFAULT6_VIA_A2)
    assert fabric_problems(fabric) == []
    validate(fabric, [A1_6, A2_6, B1_6, D1_6])
    index = VmIndex.of([A1_6, A2_6, B1_6, D1_6], vrf_of(fabric))
    assert index.vrf_ips[("tenant-a", "2001:db8:1::2")] == "a2"
    assert index.vrf_ips[("tenant-b", "2001:db8:1::11")] == "b1"


def test_the_committed_pipeline_takes_ipv6_subnets_routes_and_vms():
    assert limits.IPV6_SUPPORTED is True  # (its P4Info has the IPv6 tables: test_limits.py)
    fabric = dual_stack_fabric(DEFAULT6_VIA_A2)
    assert fabric_problems(fabric) == []
    Controller(fabric, bmv2_pipeline())
    validate(fabric, [A1_6])


@pytest.mark.usefixtures("pipeline_without_ipv6")
def test_a_pipeline_without_the_ipv6_tables_refuses_ipv6_subnets_routes_and_vms_saying_why():
    fabric = dual_stack_fabric(DEFAULT6_VIA_A2)
    assert fabric_problems(fabric) == [
        f"vni tenant-a: subnets[1].prefix: 2001:db8:1::/64: IPv6 subnets {PIPELINE_WITHOUT}",
        f"vni tenant-b: subnets[1].prefix: 2001:db8:1::/64: IPv6 subnets {PIPELINE_WITHOUT}",
        f"vni tenant-a-db: subnets[1].prefix: fd00:a:2::/64: IPv6 subnets {PIPELINE_WITHOUT}",
        f"vrf tenant-a: routes[0].prefix: ::/0: IPv6 routes {PIPELINE_WITHOUT}",
    ]
    with pytest.raises(ValidationError, match="IPv6 subnets need a pipeline with IPv6 tables"):
        Controller(fabric, bmv2_pipeline())
    assert problems([A1_6]) == [
        f"vm a1: ips: 2001:db8:1::11: IPv6 tenant addresses {PIPELINE_WITHOUT}"
    ]


OUTSIDE_WEB6 = "is outside the subnets of vni tenant-a (192.168.1.0/24, 2001:db8:1::/64)"


@pytest.mark.usefixtures("ipv6_pipeline")
@pytest.mark.parametrize(
    "vm,ip,message",
    [
        (A1, "2001:db8:9::5", OUTSIDE_WEB6),
        (A1, "fd00:a:2::5", OUTSIDE_WEB6),  # tenant-a's other subnet
        (A1, "2001:db8:1::1", "is the gateway of 2001:db8:1::/64"),
        (A1, "2001:db8:1::", "is the subnet-router anycast address of 2001:db8:1::/64"),
        (B1, "2001:db8:1::1", "is the gateway of 2001:db8:1::/64"),  # tenant-b's gateway
    ],
)
def test_a_routed_vms_ipv6_addresses_are_host_addresses_of_its_subnets(vm, ip, message):
    others = [v for v in vms() if v.name != vm.name]
    bad = replace(vm, ips=(*vm.ips, ip))
    assert problems(others + [bad], dual_stack_fabric()) == [f"vm {vm.name}: ips: {ip} {message}"]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_an_ipv6_address_needs_an_ipv6_subnet_in_a_routed_vni():
    assert problems([replace(A1, ips=("192.168.1.1", "2001:db8:1::11"))]) == [
        f"vm a1: ips: 2001:db8:1::11 {OUTSIDE_WEB}"
    ]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_ipv6_addresses_are_unique_in_a_vrf_and_may_repeat_across_vrfs():
    fabric = dual_stack_fabric()
    validate(fabric, [A1_6, B1_6])  # 2001:db8:1::11 in tenant-a and in tenant-b
    twin = replace(D1, ips=("2001:db8:1::11",))
    assert problems([A1_6, twin], fabric) == [
        "vm d1: ips: 2001:db8:1::11 is outside the subnets of vni tenant-a-db "
        "(192.168.2.0/24, fd00:a:2::/64)",
        "vm d1: ips: 2001:db8:1::11 is already used by vm a1 in VRF tenant-a",
    ]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_a_change_compares_ipv6_addresses_in_canonical_form(state):
    fabric, current, index = state
    fabric = dual_stack_fabric(DEFAULT_VIA_A2)
    index = VmIndex.of(current.values(), vrf_of(fabric))
    validate_change(fabric, NoWalk(current), index, [A1_6], [])
    current["a1"] = A1_6
    squatter = Vm("a3", "00:00:0a:00:00:03", ("2001:0DB8:1:0::0011",), 5000, "s22", 60)
    assert refused_change((fabric, current, index), [squatter], []) == [
        "vm a3: ips: 2001:0DB8:1:0::0011 is not in canonical form (RFC 5952): "
        "write it as 2001:db8:1::11",
        "vm a3: ips: 2001:db8:1::11 is already used by vm a1 in VNI 5000",
    ]
    assert index.vrf_ips[("tenant-a", "2001:db8:1::11")] == "a1"


@pytest.mark.usefixtures("ipv6_pipeline")
def test_ipv6_static_routes():
    """::/0 and other IPv6 prefixes go to a VM of the VRF; a route of each
    family may share a next hop VM, never a next hop of the other family."""
    fabric = dual_stack_fabric(
        DEFAULT_VIA_A2, DEFAULT6_VIA_A2, StaticRoute("2001:db8:ff::/48", "fd00:a:2::11")
    )
    assert fabric_problems(fabric) == []
    # (d1 forwards for 2001:db8:ff::/48: its allowed pair, docs/security.md)
    validate(fabric, [A2_6, replace(D1_6, allowed_pairs=(AllowedPair("2001:db8:ff::/48"),))])


@pytest.mark.usefixtures("ipv6_pipeline")
@pytest.mark.parametrize(
    "route,key,message",
    [
        (StaticRoute("::/0", "192.168.1.2"), "next_hop",
         "192.168.1.2 is an IPv4 address, ::/0 an IPv6 prefix "
         "(the next hop is of the prefix's family)"),
        (StaticRoute("0.0.0.0/0", "2001:db8:1::2"), "next_hop",
         "2001:db8:1::2 is an IPv6 address, 0.0.0.0/0 an IPv4 prefix "
         "(the next hop is of the prefix's family)"),
        (StaticRoute("::/0", "2001:db8:9::2"), "next_hop",
         "2001:db8:9::2 is in none of the subnets of VRF tenant-a "
         "(the next hop is a VM of the VRF)"),
        (StaticRoute("::/0", "2001:db8:1::1"), "next_hop",
         "2001:db8:1::1 is the gateway of 2001:db8:1::/64, not a VM's address"),
        (StaticRoute("::/0", "2001:db8:1::"), "next_hop",
         "2001:db8:1:: is the subnet-router anycast address of 2001:db8:1::/64, "
         "not a VM's address"),
        (StaticRoute("::/0", "2001:DB8:1::2"), "next_hop",
         "2001:DB8:1::2 is not in canonical form (RFC 5952): write it as 2001:db8:1::2"),
        (StaticRoute("::/0", "2001:db8:1:::2"), "next_hop",
         "'2001:db8:1:::2' is not an IPv6 address"),
        (StaticRoute("2001:db8:1:0:8000::/65", "2001:db8:1::2"), "prefix",
         "2001:db8:1:0:8000::/65 lies inside subnet 2001:db8:1::/64 of vni tenant-a"),
        (StaticRoute("fe80::/64", "2001:db8:1::2"), "prefix",
         "fe80::/64 lies in fe80::/10: link-local"),
        (StaticRoute("ff00::/8", "2001:db8:1::2"), "prefix",
         "ff00::/8 lies in ff00::/8: multicast"),
        (StaticRoute("2001:db8::1/32", "2001:db8:1::2"), "prefix",
         "2001:db8::1/32 has host bits set (the network is 2001:db8::/32)"),
        (StaticRoute("2001:DB8::/32", "2001:db8:1::2"), "prefix",
         "2001:DB8::/32 is not in canonical form (RFC 5952): write it as 2001:db8::/32"),
        (StaticRoute("2001:db8::", "2001:db8:1::2"), "prefix",
         "'2001:db8::' is not an IPv6 network (expected address/len, e.g. 2001:db8:1::/64)"),
    ],
)  # fmt: skip
def test_a_bad_ipv6_route_is_named(route, key, message):
    fabric = dual_stack_fabric(route)
    assert fabric_problems(fabric) == [f"vrf tenant-a: routes[0].{key}: {message}"]


@pytest.mark.usefixtures("ipv6_pipeline")
def test_an_ipv6_route_prefix_is_listed_once_per_vrf():
    fabric = dual_stack_fabric(DEFAULT6_VIA_A2, StaticRoute("::/0", "fd00:a:2::11"))
    assert fabric_problems(fabric) == [
        "vrf tenant-a: routes[1].prefix: ::/0 is already routes[0] (one next hop per prefix)"
    ]
    # 0.0.0.0/0 and ::/0 are two prefixes
    assert fabric_problems(dual_stack_fabric(DEFAULT_VIA_A2, DEFAULT6_VIA_A2)) == []


@pytest.mark.usefixtures("ipv6_pipeline")
def test_the_api_refuses_a_bad_ipv6_address_and_changes_nothing(controller):
    """The API stores IPv6 in canonical form (FE80::9 is fe80::9), and the
    controller refuses it as any other input would."""
    vm = pb.VM(name="a9", mac="00:00:0a:00:00:09", ips=["FE80::9"], vni=5000, server="s12", vlan=90)
    before = controller_state(controller)
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=vm))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        "vm a9: ips: fe80::9 is not a VM's IPv6 address (fe80::/10: link-local); "
        f"vm a9: ips: fe80::9 {OUTSIDE_WEB}"
    )
    assert controller_state(controller) == before


def dual_stack_a9() -> pb.VM:
    """An API request's VM with an IPv4 and an IPv6 address (the latter not
    in canonical form)."""
    return pb.VM(
        name="a9",
        mac="00:00:0a:00:00:09",
        ips=["192.168.1.9", "2001:0db8:1::9"],
        vni=5000,
        server="s12",
        vlan=90,
    )


@pytest.mark.usefixtures("pipeline_without_ipv6")
def test_the_api_refuses_ipv6_without_the_ipv6_tables_and_changes_nothing(controller):
    vm = dual_stack_a9()
    before = controller_state(controller)
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=vm))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        f"vm a9: ips: 2001:db8:1::9: IPv6 tenant addresses {PIPELINE_WITHOUT}"
    )
    assert controller_state(controller) == before


def test_the_api_takes_a_dual_stack_vm_with_the_committed_pipeline(tmp_path):
    """The same request, in a VNI with an IPv6 subnet: attached, its IPv6
    address stored in canonical form."""
    fabric = dual_stack_fabric(DEFAULT_VIA_A2, DEFAULT6_VIA_A2)
    controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
    for vm in (A2_6, A1_6):  # (a2 first: it owns the next hops)
        controller.attach(replace(vm, source="api"))
    vm = dual_stack_a9()
    with api_client(controller) as (client, _):
        client.AttachVM(pb.AttachVMRequest(vm=vm))
    assert controller.vms["a9"].ips == ("192.168.1.9", "2001:db8:1::9")


def test_a_tofino_tor_whose_committed_pipeline_lacks_ipv6_refuses_ipv6_tenants(monkeypatch):
    """A ToR's target names the pipeline it runs: with the committed Tofino
    build lacking the IPv6 tables, a dual-stack fabric with that ToR is
    refused on the ToR's target, an IPv4-only one is not."""
    from dataclasses import replace as with_field

    from fabric_fixture import dual_stack_fabric, routed_fabric
    from p4vtep.dataplane import limits
    from p4vtep.dataplane.targets import Target
    from p4vtep.model.validation import check_fabric

    monkeypatch.setattr(limits, "target_takes_ipv6", lambda target: target is not Target.TOFINO)
    for make, refused in ((dual_stack_fabric, True), (routed_fabric, False)):
        fabric = make()
        fabric.tors["tor2"] = with_field(fabric.tors["tor2"], target="tofino")
        found = [p for p in check_fabric(fabric) if p.subject == "tor tor2" and p.field == "target"]
        assert bool(found) == refused, found
        if refused:
            assert "no IPv6 tables" in found[0].message
    fabric = dual_stack_fabric()
    fabric.tors["tor2"] = with_field(fabric.tors["tor2"], target="tofino2")
    assert not [p for p in check_fabric(fabric) if p.field == "target"]
