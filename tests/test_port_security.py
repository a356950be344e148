"""Port security's model (docs/security.md): the VM's flags and allowed
pairs, every rule a pair must meet (each refusal and its message), between
VMs too (a whole state and a change, which leaves the index as it was when
refused), the static-route rule, and the store. The inputs, the API and
the CLI: test_port_security_inputs.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_fixture import dual_stack_fabric, dual_stack_vms
from p4vtep.controller import Controller
from p4vtep.dataplane import limits
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import AllowedPair, StaticRoute, Vm, Vrf
from p4vtep.model.port_security import PAIRS_MAX, pair, pair_prefix, parse_pair
from p4vtep.model.validation import ValidationError, VmIndex, validate, validate_change, vrf_of
from p4vtep.state.rows import vm_from_json, vm_to_json, vms_from_json
from p4vtep.state.sqlite_store import Store

WEB, DB, FW, B1 = dual_stack_vms()  # web-1, db-1, fw (VRF red), b1 (L2 VNI 6000)
VIP = AllowedPair("192.168.1.100/32", "00:00:5e:00:01:07")  # a VRRP address and MAC
BOTH_OK = "2001:db8:1::64/128"


def problems(vm_list, fabric=None) -> list[str]:
    with pytest.raises(ValidationError) as info:
        validate(fabric or dual_stack_fabric(), vm_list)
    return [str(p) for p in info.value.problems]


def with_pairs(vm: Vm, *pairs: str) -> Vm:
    return replace(vm, allowed_pairs=tuple(parse_pair(p) for p in pairs))


def others(vm: Vm) -> list[Vm]:
    return [v for v in dual_stack_vms() if v.name != vm.name]


# --- the model ---------------------------------------------------------------------


def test_a_vm_is_guarded_by_default():
    assert (WEB.port_security, WEB.dhcp_server, WEB.allowed_pairs) == (True, False, ())
    assert str(VIP) == "192.168.1.100/32,00:00:5e:00:01:07"
    assert str(AllowedPair("10.9.0.0/16")) == "10.9.0.0/16"


@pytest.mark.parametrize(
    "given,kept",
    [
        ("192.168.1.100", "192.168.1.100/32"),  # a bare address: its host prefix
        (" 10.9.0.0/16 ", "10.9.0.0/16"),
        ("2001:DB8:1:0::64", "2001:db8:1::64/128"),  # RFC 5952
        ("2001:0db8:00ff::/048", "2001:db8:ff::/48"),
        ("10.9.0.1/16", "10.9.0.1/16"),  # host bits: kept for the checks to name
        ("web", "web"),
    ],
)
def test_inputs_keep_a_pairs_prefix_in_canonical_form(given, kept):
    assert pair_prefix(given) == kept
    assert parse_pair(given) == AllowedPair(kept)


def test_a_pairs_mac_is_normalised():
    assert parse_pair("192.168.1.100,00-00-5E-00-01-07") == VIP
    assert pair("192.168.1.100", "00:00:5E:00:01:07 ") == VIP
    assert pair("192.168.1.100", "") == AllowedPair("192.168.1.100/32")


def test_pairs_of_both_families_a_vrrp_pair_and_a_shared_one_pass():
    """Two VMs may list the same pair (a VRRP address and MAC they share)."""
    web = replace(WEB, allowed_pairs=(VIP, AllowedPair(BOTH_OK), AllowedPair("10.9.0.0/16")))
    twin = Vm("web-2", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s12", 12)
    validate(dual_stack_fabric(), [web, DB, FW, B1, replace(twin, allowed_pairs=(VIP,))])


NOT_UNICAST = "a pair is a unicast range a VM may send from"


@pytest.mark.parametrize(
    "given,message",
    [
        ("10.9.0.1/16", "10.9.0.1/16 has host bits set (the network is 10.9.0.0/16)"),
        ("web/24", "'web/24' is not an IPv4 network (expected a.b.c.d/len)"),
        ("0.0.0.0/0", f"0.0.0.0/0 overlaps 0.0.0.0/8: this network, unspecified: {NOT_UNICAST}"),
        ("127.0.0.1", f"127.0.0.1/32 overlaps 127.0.0.0/8: loopback: {NOT_UNICAST}"),
        ("224.0.0.18", f"224.0.0.18/32 overlaps 224.0.0.0/4: multicast: {NOT_UNICAST}"),
        (
            "169.254.169.254",
            f"169.254.169.254/32 overlaps 169.254.0.0/16: link-local, never routed: {NOT_UNICAST}",
        ),
        (
            "fe80::/64",
            "fe80::/64 overlaps fe80::/10: link-local: "
            "every link-local source is allowed without a pair",
        ),
        ("ff02::12", f"ff02::12/128 overlaps ff00::/8: multicast: {NOT_UNICAST}"),
        ("::", f"::/128 overlaps ::/128: unspecified: {NOT_UNICAST}"),
        (
            "::ffff:10.9.0.1",
            f"::ffff:10.9.0.1/128 overlaps ::ffff:0:0/96: IPv4-mapped: {NOT_UNICAST}",
        ),
        (
            "100::/64",
            "100::/64 is outside the addresses VMs have (only global unicast 2000::/3 and "
            f"unique local fc00::/7 are): {NOT_UNICAST}",
        ),
        (
            "192.168.1.254",
            "192.168.1.254/32 contains 192.168.1.254, the gateway of 192.168.1.0/24 "
            "(vni tenant-a): a pair may not let a VM answer for the gateway",
        ),
        (  # the gateway of another VNI of the VRF
            "192.168.2.128/25",
            "192.168.2.128/25 contains 192.168.2.254, the gateway of 192.168.2.0/24 "
            "(vni tenant-a-db): a pair may not let a VM answer for the gateway",
        ),
        (
            "2001:db8:1::/127",
            "2001:db8:1::/127 contains 2001:db8:1::1, the gateway of 2001:db8:1::/64 "
            "(vni tenant-a): a pair may not let a VM answer for the gateway",
        ),
        ("10.9.0.0/16,01:00:5e:00:00:12", "01:00:5e:00:00:12 is a multicast MAC"),
        ("10.9.0.0/16,00:00:00:00:00:00", "00:00:00:00:00:00 is the zero MAC, which no host has"),
        ("10.9.0.0/16,00:00:5e:00:01:01", "00:00:5e:00:01:01 is the fabric's anycast_gateway_mac"),
        ("10.9.0.0/16,00:aa:00:00:00:02", "00:aa:00:00:00:02 is the router_mac of tor tor2"),
        ("10.9.0.0/16,web", "'web' is not a MAC address"),
    ],
)
def test_each_refused_pair_says_why(given, message):
    assert problems([with_pairs(WEB, given), *others(WEB)]) == [
        f"vm web-1: allowed_pairs: {message}"
    ]


def test_a_pair_written_in_code_must_be_canonical():
    """The inputs store the canonical form; code that does not is told."""
    vm = replace(WEB, allowed_pairs=(AllowedPair("2001:DB8:9::/64"),))
    assert problems([vm, *others(WEB)]) == [
        "vm web-1: allowed_pairs: 2001:DB8:9::/64 is not in canonical form: "
        "write it as 2001:db8:9::/64"
    ]


def test_at_most_eight_pairs_none_twice():
    many = [f"10.9.{i}.0/24" for i in range(PAIRS_MAX + 1)]
    assert problems([with_pairs(WEB, *many), *others(WEB)]) == [
        "vm web-1: allowed_pairs: 9 pairs: a VM has at most 8"
    ]
    validate(dual_stack_fabric(), [with_pairs(WEB, *many[:PAIRS_MAX]), *others(WEB)])
    assert problems([with_pairs(WEB, "10.9.0.0/16", "10.9.0.0/16"), *others(WEB)]) == [
        "vm web-1: allowed_pairs: 10.9.0.0/16 is listed twice"
    ]
    # (the same prefix with two MACs is two pairs)
    validate(
        dual_stack_fabric(),
        [with_pairs(WEB, "10.9.0.0/16", "10.9.0.0/16,00:00:5e:00:01:07"), *others(WEB)],
    )


def test_ipv6_pairs_need_the_ipv6_tables(monkeypatch):
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", False)
    fabric = dual_stack_fabric()
    fabric.vrfs["red"] = Vrf("red", fabric.vrfs["red"].l3vni, fabric.vrfs["red"].routes[:1])
    for vni in (5000, 5001):
        spec = fabric.vnis[vni]
        fabric.vnis[vni] = replace(spec, subnets=spec.subnets[:1])
    web = replace(WEB, ips=WEB.ips[:1], allowed_pairs=(AllowedPair(BOTH_OK),))
    fw = replace(FW, ips=FW.ips[:1])
    assert problems([web, fw], fabric) == [
        f"vm web-1: allowed_pairs: {BOTH_OK}: IPv6 allowed pairs need a pipeline with IPv6 "
        "tables (nd_suppression, ipv6_host_route, ipv6_prefix_route): this pipeline has "
        "none, it takes IPv4 only"
    ]


# --- between VMs ----------------------------------------------------------------------


def test_a_pair_may_not_hold_another_vms_address_in_its_vrf():
    """Neither a VM of the same VNI nor of another VNI of the VRF; the same
    addresses in another VRF or L2 VNI are someone else's business."""
    assert problems([with_pairs(WEB, "192.168.1.3"), *others(WEB)]) == [
        "vm web-1: allowed_pairs: 192.168.1.3/32 contains 192.168.1.3, the address of vm fw "
        "in VRF red: a pair may not let a VM pose as another VM"
    ]
    assert problems([with_pairs(WEB, "2001:db8:2::8/125"), *others(WEB)]) == [
        "vm web-1: allowed_pairs: 2001:db8:2::8/125 contains 2001:db8:2::a, the address of "
        "vm db-1 in VRF red: a pair may not let a VM pose as another VM"
    ]
    b1 = replace(B1, ips=("10.9.0.5",))
    validate(dual_stack_fabric(), [with_pairs(WEB, "10.9.0.0/24"), DB, FW, b1])


def test_an_l2_vnis_pairs_are_checked_in_the_vni():
    b2 = Vm("b2", "00:00:0b:00:00:02", ("192.168.1.2",), 6000, "s21", 31)
    assert problems([with_pairs(B1, "192.168.1.0/30"), b2]) == [
        "vm b1: allowed_pairs: 192.168.1.0/30 contains 192.168.1.2, the address of vm b2 "
        "in VNI 6000: a pair may not let a VM pose as another VM"
    ]
    # An L2 VNI has no gateway: any unicast range of it may be a pair.
    validate(dual_stack_fabric(), [with_pairs(B1, "192.168.1.128/25"), b2])


def test_a_pairs_mac_is_no_other_vms_in_the_vni():
    vm = with_pairs(WEB, "10.9.0.0/16,00:00:0a:00:00:03")  # fw's MAC
    assert problems([vm, *others(WEB)]) == [
        "vm web-1: allowed_pairs: 00:00:0a:00:00:03 is the MAC of vm fw in VNI 5000: "
        "a pair may not let a VM pose as another VM"
    ]
    # Its own MAC changes nothing; another VNI's VM's MAC is not in its VNI.
    validate(dual_stack_fabric(), [with_pairs(WEB, f"10.9.0.0/16,{WEB.mac}"), *others(WEB)])
    validate(dual_stack_fabric(), [with_pairs(WEB, f"10.9.0.0/16,{DB.mac}"), *others(WEB)])


@pytest.fixture
def state():
    fabric = dual_stack_fabric()
    current = {vm.name: vm for vm in dual_stack_vms()}
    current["web-1"] = replace(WEB, allowed_pairs=(VIP,))
    validate(fabric, current.values())
    return fabric, current, VmIndex.of(current.values(), vrf_of(fabric))


def index_state(index: VmIndex):
    pairs = index.pairs
    return (
        dict(index.ips),
        dict(index.macs),
        {
            k: {n: {a: set(s) for a, s in t.items()} for n, t in v.items()}
            for k, v in pairs.nets.items()
        },
        {k: set(v) for k, v in pairs.macs.items()},
    )


def refused_change(state, upserts, removals=()) -> list[str]:
    fabric, current, index = state
    before = index_state(index)
    with pytest.raises(ValidationError) as info:
        validate_change(fabric, current, index, list(upserts), list(removals))
    assert index_state(index) == before  # a refused change leaves the index as it was
    return [str(p) for p in info.value.problems]


def test_a_change_is_checked_against_the_others_pairs_both_ways(state):
    """A VM that comes into another's pair (address or MAC) is refused as
    the pair is; the pair's own VM may take the address."""
    squatter = Vm("vip", "00:00:0a:00:00:99", ("192.168.1.100",), 5000, "s12", 99)
    assert refused_change(state, [squatter]) == [
        "vm vip: ips: 192.168.1.100 lies in 192.168.1.100/32, an allowed pair of vm web-1 "
        "in VRF red"
    ]
    mac = Vm("mac", "00:00:5e:00:01:07", ("192.168.1.99",), 5000, "s12", 99)
    assert refused_change(state, [mac]) == [
        "vm mac: mac: 00:00:5e:00:01:07 is an allowed pair MAC of vm web-1 in VNI 5000"
    ]
    assert refused_change(state, [with_pairs(DB, "192.168.1.0/26")]) == [
        "vm db-1: allowed_pairs: 192.168.1.0/26 contains 192.168.1.1, the address of vm web-1 "
        "in VRF red: a pair may not let a VM pose as another VM"
    ]
    fabric, current, index = state
    # The pair goes: the address is free; and a VM may hold its own pair's address.
    validate_change(fabric, current, index, [replace(current["web-1"], allowed_pairs=())], [])
    current["web-1"] = replace(current["web-1"], allowed_pairs=())
    validate_change(fabric, current, index, [squatter], [])
    current["vip"] = squatter
    validate_change(fabric, current, index, [with_pairs(squatter, "192.168.1.96/29")], [])


def test_a_pair_wider_than_a_host_is_checked_against_every_address_in_order(state):
    """A pair of a wide prefix finds the addresses of its scope, kept in
    order after the first look, as VMs come and go."""
    fabric, current, index = state
    db = with_pairs(DB, "10.9.0.0/16")
    validate_change(fabric, current, index, [db], [])
    current["db-1"] = db
    inside = Vm("in", "00:00:0a:00:00:98", ("192.168.1.98",), 5000, "s12", 98)
    validate_change(fabric, current, index, [inside], [])
    current["in"] = inside
    assert refused_change(state, [with_pairs(WEB, "192.168.1.96/30")]) == [
        "vm web-1: allowed_pairs: 192.168.1.96/30 contains 192.168.1.98, the address of vm in "
        "in VRF red: a pair may not let a VM pose as another VM"
    ]
    validate_change(fabric, current, index, [], ["in"])
    del current["in"]
    validate_change(fabric, current, index, [with_pairs(WEB, "192.168.1.96/30")], [])


# --- the static-route rule --------------------------------------------------------------


def routed(*routes: StaticRoute):
    fabric = dual_stack_fabric()
    fabric.vrfs["red"] = Vrf("red", fabric.vrfs["red"].l3vni, routes)
    return fabric


FW_ON = replace(FW, port_security=True)
FORWARDS = "with port security on, the ToR drops what vm fw forwards from"


def test_a_guarded_next_hop_needs_a_pair_covering_the_route():
    fabric = routed(StaticRoute("10.9.0.0/16", "192.168.1.3"))
    assert problems([FW_ON], fabric) == [
        "vm fw: allowed_pairs: 192.168.1.3 is the next hop of vrf red's route 10.9.0.0/16 "
        f"(routes[0]): {FORWARDS} 10.9.0.0/16 (spoofed_ip): add the allowed pair 10.9.0.0/16 "
        "or set port_security: false"
    ]
    validate(fabric, [with_pairs(FW_ON, "10.9.0.0/16")])
    validate(fabric, [with_pairs(FW_ON, "10.0.0.0/8")])  # a wider pair covers it
    validate(fabric, [FW])  # port security off
    assert problems([with_pairs(FW_ON, "10.9.0.0/17")], fabric)  # a narrower one does not


def test_a_next_hop_for_a_prefix_no_pair_may_hold_must_opt_out():
    fabric = routed(
        StaticRoute("0.0.0.0/0", "192.168.1.3"), StaticRoute("2001:db8:f::/48", "2001:db8:1::3")
    )
    assert problems([FW_ON], fabric) == [
        "vm fw: allowed_pairs: 192.168.1.3 is the next hop of vrf red's route 0.0.0.0/0 "
        f"(routes[0]): {FORWARDS} 0.0.0.0/0 (spoofed_ip); 0.0.0.0/0 cannot be a pair "
        "(overlaps 0.0.0.0/8: this network, unspecified): set port_security: false",
        "vm fw: allowed_pairs: 2001:db8:1::3 is the next hop of vrf red's route "
        f"2001:db8:f::/48 (routes[1]): {FORWARDS} 2001:db8:f::/48 (spoofed_ip): add the "
        "allowed pair 2001:db8:f::/48 or set port_security: false",
    ]
    validate(fabric, [FW])


def test_the_rule_asks_nothing_of_other_vms_or_other_vrfs():
    fabric = routed(StaticRoute("10.9.0.0/16", "192.168.1.3"))
    validate(fabric, [WEB, DB, replace(B1, ips=("192.168.1.3",))])  # b1: VNI 6000, L2


def test_the_store_keeps_port_security(tmp_path):
    vm = replace(WEB, name="web-2", port_security=False, dhcp_server=True, allowed_pairs=(VIP,))
    assert vm_from_json(vm_to_json(vm)) == vm
    assert vms_from_json([vm_to_json(vm), vm_to_json(WEB)]) == [vm, WEB]
    # A row written before port security: the defaults.
    old = '{"ips":["192.168.1.1"],"mac":"00:00:0a:00:00:01","name":"web-1","qos":null,'
    old += '"server":"s11","source":"api","vlan":10,"vni":5000}'
    assert vms_from_json([old]) == [replace(WEB, ips=("192.168.1.1",), source="api")]
    assert vm_from_json(old) == replace(WEB, ips=("192.168.1.1",), source="api")
    store = Store(tmp_path / "s.db")
    controller = Controller(dual_stack_fabric(), bmv2_pipeline(), store)
    for one in dual_stack_vms():
        controller.attach(replace(one, source="api"))
    controller.attach(replace(WEB, source="api", dhcp_server=True, allowed_pairs=(VIP,)))
    again = Controller(dual_stack_fabric(), bmv2_pipeline(), store)
    assert again.vms == controller.vms
    assert again.vms["web-1"].allowed_pairs == (VIP,)


def test_a_guarded_vm_with_ipv6_on_a_tofino_1_tor_is_refused_and_unguarded_it_is_not():
    """Tofino 1's committed pipeline guards IPv4 only and drops every IPv6
    frame of a guarded VM: an IPv6 address or pair of a guarded VM on such a
    ToR is refused, each named; unguarded, or on Tofino 2 (which guards
    IPv6), the same VM is taken. IPv4-only on Tofino 1 is taken too."""
    from fabric_fixture import two_tor_fabric
    from p4vtep.model.validation import check_vm

    fabric = two_tor_fabric()
    vm = Vm(
        "v6",
        "00:00:0a:00:00:66",
        ("192.168.1.66", "2001:db8:1::66"),
        5000,
        "s11",
        66,
        allowed_pairs=(AllowedPair("10.9.9.0/24"), AllowedPair("2001:db8:9::/64")),
    )
    fabric.tors["tor1"] = replace(fabric.tors["tor1"], target="tofino")
    found = [(p.field, p.message) for p in check_vm(fabric, vm) if "guards IPv4" in p.message]
    assert [f for f, _ in found] == ["ips", "allowed_pairs"]
    assert found[0][1].startswith("2001:db8:1::66 is IPv6, and tor tor1 (tofino) guards IPv4")
    assert found[1][1].startswith("2001:db8:9::/64 is IPv6")
    unguarded = replace(vm, port_security=False)
    assert not [p for p in check_vm(fabric, unguarded) if "guards" in p.message]
    v4_only = replace(vm, ips=("192.168.1.66",), allowed_pairs=(AllowedPair("10.9.9.0/24"),))
    assert not [p for p in check_vm(fabric, v4_only) if "guards" in p.message]
    fabric.tors["tor1"] = replace(fabric.tors["tor1"], target="tofino2")
    assert not [p for p in check_vm(fabric, vm) if "guards" in p.message]
