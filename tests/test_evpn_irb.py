"""EVPN for routed tenants (symmetric IRB, RFC 9135 / RFC 9136) without a
peer: route values and their GoBGP encoding (type 2 with two labels and the
Router's MAC, type 5; IPv4 and IPv6), what the intake admits and refuses (by
reason; IPv6 routes in a dual-stack tenant too), the learned table's host
and prefix routes (MAC mobility keeps a host route with its MAC), the value
the compiler is given, and what the advertiser sends."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_fixture import (
    ANYCAST_MAC,
    L3VNI,
    TOR1,
    TOR1_RMAC,
    TOR2,
    TOR2_RMAC,
    dual_stack_fabric,
    evpn_for,
    routed_fabric,
    symmetric_type2,
    vrf_type5,
)
from helpers import assert_intake_refuses, needs_gobgp_api
from p4vtep.compiler.learned import Learned, LearnedHost, LearnedMac, LearnedPrefix
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.advertiser import Advertiser, desired_routes
from p4vtep.evpn.config import EvpnConfig, VrfRouting
from p4vtep.evpn.intake import Admitted, RouteIntake
from p4vtep.evpn.routes import InclusiveMulticastRoute, IpPrefixRoute, MacIpRoute, RouteError
from p4vtep.evpn.table import LearnedTable
from p4vtep.evpn.view import LocalAdvertisement, LocalMac, RemoteHost, RemotePrefix
from p4vtep.model.addressing import link_local
from p4vtep.model.fabric import Fabric

FRR, BORDER = "192.0.2.10", "192.0.2.20"
FRR_RMAC, BORDER_RMAC = "02:fe:00:00:00:10", "02:fe:00:00:00:20"
PEER = "192.0.2.1"
HOST_MAC = "52:54:00:f0:00:09"
HOST6, SUBNET6 = "2001:db8:9::10", "2001:db8:9::/64"  # FRR's host and a prefix, over IPv6
GATEWAY_LLA = link_local(ANYCAST_MAC)  # the anycast gateway's link-local address
RTS_5000 = ("65000:5000", "65000:50000")  # a two-label type 2's in VNI 5000
RED = VrfRouting("red", L3VNI, None, ("65000:50000",), ("65000:50000",))


def config(fabric: Fabric | None = None, **vrf: object) -> EvpnConfig:
    """routed_fabric's (or ``fabric``'s): VNI 5000 (192.168.1.0/24) and 5001
    (192.168.2.0/24) routed in red (L3 VNI 50000, a default route through
    192.168.1.3), VNI 6000 L2 only; automatic RDs and route targets (red's
    made by ``for_fabric``, or given: RED with ``vrf``'s fields)."""
    vrfs = (replace(RED, **vrf),) if vrf else ()  # type: ignore[arg-type]
    return evpn_for(
        fabric or routed_fabric(), (5000, 5001, 6000), router_id="10.0.0.254", peers=(), vrfs=vrfs
    )


CONFIG = config()


def symmetric(**overrides: object) -> MacIpRoute:
    """FRR's two-label type 2 for a host in VNI 9000 (not ours), VRF red."""
    return symmetric_type2(FRR, FRR_RMAC, HOST_MAC, "192.168.9.10", **overrides)


def single_label(vni: int, ip: str) -> MacIpRoute:
    """FRR's one-label type 2 for its host at ``ip`` in ``vni`` (MAC-VRF route target only)."""
    return MacIpRoute(f"{FRR}:1", HOST_MAC, vni, FRR, ip, (f"65000:{vni}",))


def prefix(**overrides: object) -> IpPrefixRoute:
    """The border's default route into VRF red."""
    return vrf_type5(BORDER, BORDER_RMAC, "0.0.0.0/0", **overrides)


# ---- config -------------------------------------------------------------------


def test_the_fabric_routing_model_is_copied_into_the_evpn_config() -> None:
    assert CONFIG.vrfs == (
        VrfRouting(
            "red",
            L3VNI,
            None,
            ("65000:50000",),
            ("65000:50000",),
            True,
            (("0.0.0.0/0", "192.168.1.3"),),
        ),
    )
    routing = CONFIG.routing(5001)
    assert routing is not None
    assert (routing.vrf, routing.subnets) == ("red", ("192.168.2.0/24",))
    l2 = CONFIG.routing(6000)
    assert l2 is not None
    assert (l2.vrf, l2.subnets) == (None, ())
    assert CONFIG.router_mac(TOR2) == TOR2_RMAC
    assert CONFIG.own_macs() == {TOR1_RMAC, TOR2_RMAC, ANYCAST_MAC}
    assert CONFIG.vrf_by_l3vni(L3VNI) is CONFIG.vrfs[0]
    assert CONFIG.vrfs[0].rd_for(TOR1) == f"{TOR1}:{L3VNI & 0xFFFF}"


# ---- values and the GoBGP encoding --------------------------------------------


def test_route_values_are_canonical() -> None:
    route = symmetric(router_mac="02-FE-00-00-00-10")
    assert route.router_mac == FRR_RMAC
    p = prefix(prefix="10.1.2.3/16", gateway_ip="0.0.0.0")
    assert (p.prefix, p.gateway_ip) == ("10.1.0.0/16", None)
    assert p.nlri_key() == (5, f"{BORDER}:2", 0, "10.1.0.0/16")
    with pytest.raises(RouteError, match="is not an IP prefix"):
        prefix(prefix="10.1.2/33")
    with pytest.raises(RouteError, match="VNI 0 is outside"):
        prefix(l3vni=0)
    with pytest.raises(RouteError, match="is not a MAC address"):
        symmetric(router_mac="02:fe")


@needs_gobgp_api
@pytest.mark.parametrize(
    "route",
    [
        symmetric(),
        symmetric(mobility_seq=4),
        prefix(),
        prefix(prefix="10.20.0.0/16", rd="65000:7"),
        prefix(gateway_ip="192.168.9.1"),
        prefix(esi="01:02:03:04:05:06:07:08:09:0a"),
        prefix(prefix="fd00::/64"),
        # over IPv6: MAC+IPv6 with two labels, one, a mobility number; IPv6
        # type 5, ::/0, an overlay index in the prefix's family
        symmetric(ip=HOST6),
        symmetric(vni=5000, ip="2001:db8:1::50", route_targets=RTS_5000, mobility_seq=3),
        single_label(5000, "2001:db8:1::50"),
        prefix(prefix=SUBNET6),
        prefix(prefix="::/0"),
        prefix(prefix="2001:db8:9::/48", gateway_ip="2001:db8:9::1"),
        prefix(prefix=SUBNET6, gateway_ip="::ffff:192.0.2.10"),
    ],
)
def test_irb_routes_survive_the_gobgp_api_encoding(route: MacIpRoute | IpPrefixRoute) -> None:
    from p4vtep.evpn import gobgp_codec

    path = gobgp_codec.encode(route)
    assert gobgp_codec.decode(path) == route
    assert gobgp_codec.decode_key(path) == route.nlri_key()


@needs_gobgp_api
def test_the_encoding_carries_two_labels_and_the_router_mac() -> None:
    from p4vtep.evpn import gobgp_codec

    attr = gobgp_api.attribute_pb2
    path = gobgp_codec.encode(symmetric())
    nlri = attr.EVPNMACIPAdvertisementRoute()
    path.nlri.Unpack(nlri)
    assert list(nlri.labels) == [9000, L3VNI]
    by_type = {p.type_url.rpartition(".")[2]: p for p in path.pattrs}
    communities = attr.ExtendedCommunitiesAttribute()
    by_type["ExtendedCommunitiesAttribute"].Unpack(communities)
    kinds = sorted(c.type_url.rpartition(".")[2] for c in communities.communities)
    assert kinds == [
        "EncapExtended",
        "RouterMacExtended",
        "TwoOctetAsSpecificExtended",
        "TwoOctetAsSpecificExtended",
    ]
    rmac = attr.RouterMacExtended()
    next(c for c in communities.communities if c.type_url.endswith("RouterMacExtended")).Unpack(
        rmac
    )
    assert rmac.mac == FRR_RMAC
    # Type 5: ESI 0, gateway IP 0, label = the L3 VNI.
    path = gobgp_codec.encode(prefix(prefix="10.20.0.0/16"))
    p5 = attr.EVPNIPPrefixRoute()
    path.nlri.Unpack(p5)
    assert (p5.ip_prefix, p5.ip_prefix_len, p5.gw_address, p5.label) == (
        "10.20.0.0",
        16,
        "0.0.0.0",
        L3VNI,
    )
    assert (p5.esi.type, bytes(p5.esi.value).strip(b"\0")) == (0, b"")


@needs_gobgp_api
def test_a_type_2_with_three_labels_is_malformed() -> None:
    from p4vtep.evpn import gobgp_codec

    attr = gobgp_api.attribute_pb2
    path = gobgp_codec.encode(symmetric())
    nlri = attr.EVPNMACIPAdvertisementRoute()
    path.nlri.Unpack(nlri)
    nlri.labels.append(7)
    path.nlri.Pack(nlri)
    with pytest.raises(RouteError, match="3 labels"):
        gobgp_codec.decode(path)


# ---- intake -------------------------------------------------------------------


# The tenant of IPv6 routes: dual_stack_fabric's (routed_fabric with an IPv6
# subnet beside each IPv4 one, gateways ::1).
DUAL_STACK = config(dual_stack_fabric())


@pytest.mark.parametrize(
    ("tenant", "route", "admitted"),
    [
        # symmetric, L2 VNI not hosted here: its host route only
        (CONFIG, symmetric(), Admitted("red", bridged=False)),
        (DUAL_STACK, symmetric(ip=HOST6), Admitted("red", bridged=False)),
        # symmetric in a VNI we host: its MAC (and ARP or ND entry) and its host route
        (CONFIG, symmetric(vni=5000, ip="192.168.1.50", route_targets=RTS_5000),
         Admitted("red", bridged=True)),
        (DUAL_STACK, symmetric(vni=5000, ip="2001:db8:1::50", route_targets=RTS_5000),
         Admitted("red", bridged=True)),
        # symmetric in a VNI we host, for a VRF we do not have: its MAC alone
        (
            CONFIG,
            symmetric(vni=5000, l3vni=70000, route_targets=("65000:5000", "65000:70000")),
            Admitted(None, bridged=True),
        ),
        # symmetric, an IPv6 host in a VNI we host (of an IPv4-only tenant):
        # its MAC and its host route
        (CONFIG, symmetric(vni=5000, ip="fd00::9", route_targets=RTS_5000),
         Admitted("red", bridged=True)),
        # ... a link-local one: its MAC alone, the address neither routed nor proxied
        (CONFIG, symmetric(vni=5000, ip="fe80::9", route_targets=RTS_5000),
         Admitted(None, bridged=True, neighbour=False)),
        (DUAL_STACK, symmetric(vni=5000, ip="fe80::5054:ff:fef0:9", route_targets=RTS_5000),
         Admitted(None, bridged=True, neighbour=False)),
        # single label, MAC+IP in a routed VNI we host: asymmetric on receive
        (CONFIG, single_label(5000, "192.168.1.50"), Admitted("red", bridged=True)),
        (DUAL_STACK, single_label(5000, "2001:db8:1::50"), Admitted("red")),
        # ... link-local or multicast: the MAC alone, neither routed nor proxied
        (DUAL_STACK, single_label(5000, "fe80::5054:ff:fef0:9"), Admitted(neighbour=False)),
        # single label in an L2-only VNI: bridged only, as before (an IPv6
        # address for ND suppression)
        (CONFIG, single_label(6000, "192.168.1.50"), Admitted(None, bridged=True)),
        (DUAL_STACK, single_label(6000, "2001:db8:1::50"), Admitted()),
        (DUAL_STACK, single_label(6000, "ff02::1"), Admitted(neighbour=False)),
        # type 5: prefixes, the default route, a zero gateway in either spelling
        (CONFIG, prefix(), Admitted("red")),
        (DUAL_STACK, prefix(prefix=SUBNET6), Admitted("red")),
        (DUAL_STACK, prefix(prefix="::/0"), Admitted("red")),
        (DUAL_STACK, prefix(prefix=SUBNET6, gateway_ip="::ffff:0.0.0.0"),
         Admitted("red")),
        (DUAL_STACK, prefix(prefix=SUBNET6, gateway_ip="::"), Admitted("red")),
    ],
)  # fmt: skip
def test_the_intake_says_what_a_routed_route_is_for(
    tenant: EvpnConfig, route: MacIpRoute | IpPrefixRoute, admitted: Admitted
) -> None:
    intake = RouteIntake.build(tenant, (TOR1, TOR2))
    assert intake.admit(PEER, route) == admitted
    assert not intake.refused


@pytest.mark.parametrize(
    ("tenant", "route", "reason", "detail"),
    [
        (CONFIG, prefix(gateway_ip="192.168.9.1"), "overlay-index", "gateway IP 192.168.9.1"),
        (DUAL_STACK, prefix(prefix=SUBNET6, gateway_ip="2001:db8:9::1"), "overlay-index",
         "gateway IP 2001:db8:9::1"),
        (DUAL_STACK, prefix(prefix=SUBNET6, gateway_ip="192.0.2.10"), "overlay-index",
         "gateway IP ::ffff:192.0.2.10"),  # (in the prefix's family)
        (CONFIG, InclusiveMulticastRoute(f"{FRR}:9", L3VNI, FRR, FRR, ("65000:50000",)),
         "l3vni-type3", "the L3 VNI of VRF red"),
        # our VTEPs, in IPv6's spelling too
        (CONFIG, symmetric(next_hop=TOR1), "own-vtep", "next hop 10.0.0.1"),
        (DUAL_STACK, symmetric(ip=HOST6, next_hop=TOR2), "own-vtep", "next hop 10.0.0.2"),
        (DUAL_STACK, prefix(prefix=SUBNET6, next_hop="::ffff:10.0.0.1"), "own-vtep",
         "next hop 10.0.0.1"),
        (CONFIG, symmetric(vni=5000, mac=ANYCAST_MAC, route_targets=RTS_5000), "bad-mac",
         "anycast gateway MAC"),
        (CONFIG, MacIpRoute(f"{FRR}:1", ANYCAST_MAC, 5000, FRR, "192.168.1.254", ("65000:5000",)),
         "bad-mac", "anycast gateway MAC"),
        (CONFIG, symmetric(ip=None), "unknown-vni", "it has no IP to route in VRF red"),
        # A host elsewhere claiming our anycast gateway IP: routed into the
        # VRF (any of its VNIs' gateways) or bridged into the VNI; an IPv6
        # gateway's link-local address too (in a VNI with an IPv6 subnet):
        # the ToRs answer them.
        (CONFIG, symmetric(ip="192.168.2.254"), "gateway-ip", "anycast gateway IP of VNI 5001"),
        (CONFIG, single_label(5000, "192.168.1.254"), "gateway-ip",
         "anycast gateway IP of VNI 5000"),
        (DUAL_STACK, symmetric(ip="2001:db8:2::1"), "gateway-ip",
         "2001:db8:2::1 is the anycast gateway IP of VNI 5001"),
        (DUAL_STACK, symmetric(vni=5000, ip="2001:db8:1::1", route_targets=RTS_5000),
         "gateway-ip", "anycast gateway IP of VNI 5000"),
        (DUAL_STACK, symmetric(vni=5000, ip=GATEWAY_LLA, route_targets=RTS_5000), "gateway-ip",
         f"{GATEWAY_LLA} is the anycast gateway IP"),
        # never routed: link-local, multicast, unspecified..., with nothing
        # else to use the route for (its VNI is not ours)
        (CONFIG, symmetric(ip="fe80::9"), "ipv6-scope", "fe80::9 is link-local (fe80::/10)"),
        (CONFIG, prefix(prefix="fe80::/64"), "ipv6-scope", "link-local (fe80::/10): never routed"),
        (DUAL_STACK, symmetric(ip="fe80::1"), "ipv6-scope",
         "fe80::1 is link-local (fe80::/10): never routed"),
        (DUAL_STACK, symmetric(ip="ff02::1:ff00:1"), "ipv6-scope", "is multicast (ff00::/8)"),
        (DUAL_STACK, symmetric(ip="::ffff:192.0.2.1"), "ipv6-scope", "IPv4-mapped"),
        (DUAL_STACK, prefix(prefix="fe80::/64"), "ipv6-scope",
         "fe80::/64 lies in link-local (fe80::/10)"),
        (DUAL_STACK, prefix(prefix="ff00::/8"), "ipv6-scope", "multicast"),
        # (the rest of ::/8 too, which the data plane drops as ipv6_scope)
        (DUAL_STACK, symmetric(ip="::10.0.0.1"), "ipv6-scope", "::a00:1 is reserved (::/8)"),
    ],
)  # fmt: skip
def test_the_intake_refuses_routed_routes_by_reason(
    tenant: EvpnConfig,
    route: MacIpRoute | IpPrefixRoute | InclusiveMulticastRoute,
    reason: str,
    detail: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    intake = RouteIntake.build(tenant, (TOR1, TOR2))
    assert_intake_refuses(intake, PEER, route, reason, detail, caplog)


# Each family's routes: FRR's host in VNI 9000 (symmetric) and the border's
# prefix (prefix), and the tenant they come to.
FAMILIES = {
    "ipv4": (CONFIG, "192.168.9.10", "0.0.0.0/0"),
    "ipv6": (DUAL_STACK, HOST6, SUBNET6),
}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    ("kind", "fields", "reason", "detail"),
    [
        ("host", {"router_mac": None}, "no-router-mac", "no Router's MAC extended community"),
        ("prefix", {"router_mac": None}, "no-router-mac", "no Router's MAC"),
        ("host", {"router_mac": TOR1_RMAC}, "own-router-mac", "router MAC of one of our ToRs"),
        ("host", {"router_mac": TOR2_RMAC}, "own-router-mac", "router MAC of one of our ToRs"),
        ("prefix", {"router_mac": ANYCAST_MAC}, "own-router-mac", "anycast gateway MAC"),
        ("prefix", {"esi": "00:11:22:33:44:55:66:77:88:99"}, "overlay-index", "is not supported"),
        ("host", {"l3vni": 70000}, "unknown-vrf", "L3 VNI 70000"),
        ("prefix", {"l3vni": 70000}, "unknown-vrf", "L3 VNI 70000"),
        ("prefix", {"route_targets": ("65001:50000",)}, "no-route-target", "into VRF red"),
    ],
)
def test_the_intake_refuses_a_route_of_either_family_by_reason(
    family: str,
    kind: str,
    fields: dict[str, object],
    reason: str,
    detail: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tenant, host_ip, subnet = FAMILIES[family]
    route = symmetric(ip=host_ip, **fields) if kind == "host" else prefix(prefix=subnet, **fields)
    intake = RouteIntake.build(tenant, (TOR1, TOR2))
    assert_intake_refuses(intake, PEER, route, reason, detail, caplog)


# ---- the learned table ----------------------------------------------------------


def test_a_symmetric_host_route_of_a_vni_we_do_not_host_is_a_host_route_only() -> None:
    table = LearnedTable()
    route = symmetric()
    change = table.learn(PEER, route, "red", bridged=False)
    view = table.view()
    assert view.remote_macs() == frozenset()  # nothing for a MAC table
    host = RemoteHost("red", "192.168.9.10", FRR, FRR_RMAC, L3VNI, 9000, HOST_MAC, 0, PEER)
    assert view.host_routes() == {host}
    assert change.learned_changed
    assert view.learned() == Learned.of(
        [], {}, [LearnedHost("red", "192.168.9.10", FRR, FRR_RMAC, L3VNI, 9000, HOST_MAC)]
    )
    assert table.unlearn(PEER, route.nlri_key()).learned_changed
    assert view.host_routes() == frozenset()
    assert view.learned() == Learned()


def test_an_asymmetric_host_route_goes_to_the_host_in_its_own_vni() -> None:
    table = LearnedTable()
    table.learn(PEER, MacIpRoute(f"{FRR}:1", HOST_MAC, 5000, FRR, None, ("65000:5000",)))
    table.learn(
        PEER, MacIpRoute(f"{FRR}:1", HOST_MAC, 5000, FRR, "192.168.1.50", ("65000:5000",)), "red"
    )
    assert table.view().learned() == Learned.of(
        [LearnedMac(5000, HOST_MAC, FRR, ("192.168.1.50",))],
        {},
        [LearnedHost("red", "192.168.1.50", FRR, HOST_MAC, 5000, 5000, HOST_MAC)],
    )


def test_mac_mobility_keeps_the_host_route_with_its_mac() -> None:
    """Our VM web (VNI 5000) moves to FRR: FRR's MAC and MAC+IP routes with a
    higher number win, and the MAC entry and the host route are given out in
    the same ``Learned``; a same-number claim is a conflict: neither. Back
    to us (FRR withdraws): both go together."""
    web_mac, web_ip = "00:00:0a:00:00:01", "192.168.1.1"
    table = LearnedTable()
    table.set_local([LocalMac(5000, web_mac, TOR1, frozenset({web_ip}))])
    rts = ("65000:5000", "65000:50000")
    mac_only = MacIpRoute(f"{FRR}:1", web_mac, 5000, FRR, None, ("65000:5000",), 0)
    with_ip = symmetric(vni=5000, mac=web_mac, ip=web_ip, route_targets=rts, mobility_seq=0)
    table.learn(PEER, mac_only)
    table.learn(PEER, with_ip, "red")
    assert table.refused["conflict"] == 2
    assert table.view().learned() == Learned()
    assert [a.vtep for a in table.view().advertisements()] == [TOR1]

    changes = []
    table.on_change(changes.append)
    table.learn(
        PEER, symmetric(vni=5000, mac=web_mac, ip=web_ip, route_targets=rts, mobility_seq=1), "red"
    )
    assert table.view().learned() == Learned.of(
        [LearnedMac(5000, web_mac, FRR, (web_ip,))],
        {},
        [LearnedHost("red", web_ip, FRR, FRR_RMAC, L3VNI, 5000, web_mac)],
    )
    assert len(changes) == 1  # one change: the MAC and its host route together
    assert changes[0].local_changed == {(5000, web_mac)}  # (we stop advertising it)
    assert table.view().advertisements() == frozenset()

    table.unlearn(PEER, with_ip.nlri_key())
    table.unlearn(PEER, mac_only.nlri_key())
    assert table.view().learned() == Learned()
    assert [a.vtep for a in table.view().advertisements()] == [TOR1]


def test_type_5_one_route_per_prefix_the_lowest_vtep_then_withdrawn_or_lost() -> None:
    table = LearnedTable()
    high = prefix(rd=f"{FRR}:2", next_hop="192.0.2.30", router_mac="02:fe:00:00:00:30")
    low = prefix()
    first = table.learn(PEER, high, "red")
    assert first.prefixes_added == {
        RemotePrefix("red", "0.0.0.0/0", "192.0.2.30", "02:fe:00:00:00:30", L3VNI, PEER)
    }
    second = table.learn("192.0.2.2", low, "red")
    chosen = RemotePrefix("red", "0.0.0.0/0", BORDER, BORDER_RMAC, L3VNI, "192.0.2.2")
    assert second.prefixes_added == {chosen}
    assert second.prefixes_removed == first.prefixes_added
    assert table.view().prefix_routes() == {chosen}
    assert table.view().learned().prefixes == {
        "red": {"0.0.0.0/0": LearnedPrefix("red", "0.0.0.0/0", BORDER, BORDER_RMAC, L3VNI)}
    }
    fates = {(h.vtep, h.type, h.lost, h.vrf) for h in table.view().held_routes()}
    assert fates == {("192.0.2.30", 5, "superseded", "red"), (BORDER, 5, "", "red")}
    assert table.view().learned_counts() == {PEER: 1, "192.0.2.2": 1}
    # The session to the lower one goes down: the other is given out again.
    change = table.drop_source("192.0.2.2")
    assert change.prefixes_removed == {chosen}
    assert {p.vtep for p in change.prefixes_added} == {"192.0.2.30"}
    assert table.unlearn(PEER, high.nlri_key()).prefixes_removed
    assert table.view().prefix_routes() == frozenset()


def test_a_type_5_needs_its_vrf() -> None:
    with pytest.raises(ValueError, match="without its VRF"):
        LearnedTable().learn(PEER, prefix())


# ---- advertiser ---------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []

    def announce(self, route: object) -> None:
        self.sent.append(("announce", route))

    def withdraw(self, route: object) -> None:
        self.sent.append(("withdraw", route))


WEB = LocalAdvertisement(5000, "00:00:0a:00:00:01", TOR1, frozenset({"192.168.1.1"}), 2)
FW = LocalAdvertisement(5000, "00:00:0a:00:00:03", TOR2, frozenset({"192.168.1.3"}), 0)
DB = LocalAdvertisement(5001, "00:00:0a:00:01:01", TOR2, frozenset({"192.168.2.1"}), 0)
B1 = LocalAdvertisement(6000, "00:00:0b:00:00:01", TOR1, frozenset({"192.168.1.1"}), 0)
ON_TORS = {TOR1: [5000, 6000], TOR2: [5000, 5001]}


def test_we_advertise_routed_vms_with_both_labels_rts_and_our_router_mac() -> None:
    routes = desired_routes(CONFIG, [WEB, B1], {TOR1: [5000, 6000]})
    web_ip = MacIpRoute(
        f"{TOR1}:5000",
        WEB.mac,
        5000,
        TOR1,
        "192.168.1.1",
        ("65000:5000", "65000:50000"),
        2,
        l3vni=L3VNI,
        router_mac=TOR1_RMAC,
    )
    web_mac = MacIpRoute(f"{TOR1}:5000", WEB.mac, 5000, TOR1, None, ("65000:5000",), 2)
    b1 = MacIpRoute(f"{TOR1}:6000", B1.mac, 6000, TOR1, "192.168.1.1", ("65000:6000",))
    type2 = {k: r for k, r in routes.items() if isinstance(r, MacIpRoute)}
    assert set(type2.values()) == {
        web_ip,
        web_mac,
        b1,
        MacIpRoute(f"{TOR1}:6000", B1.mac, 6000, TOR1, None, ("65000:6000",)),
    }
    type3 = [r for r in routes.values() if isinstance(r, InclusiveMulticastRoute)]
    assert sorted(r.vni for r in type3) == [5000, 6000]  # never the L3 VNI
    type5 = [r for r in routes.values() if isinstance(r, IpPrefixRoute)]
    assert type5 == [
        IpPrefixRoute(
            f"{TOR1}:{L3VNI & 0xFFFF}",
            "192.168.1.0/24",
            L3VNI,
            TOR1,
            ("65000:50000",),
            router_mac=TOR1_RMAC,
        )
    ]


def test_type_5_per_subnet_from_each_tor_serving_it_and_per_static_route_from_its_owner() -> None:
    routes = desired_routes(CONFIG, [WEB, FW, DB, B1], ON_TORS)
    type5 = {
        (r.next_hop, r.prefix, r.rd, r.router_mac)
        for r in routes.values()
        if isinstance(r, IpPrefixRoute)
    }
    assert type5 == {
        (TOR1, "192.168.1.0/24", f"{TOR1}:{L3VNI & 0xFFFF}", TOR1_RMAC),
        (TOR2, "192.168.1.0/24", f"{TOR2}:{L3VNI & 0xFFFF}", TOR2_RMAC),
        (TOR2, "192.168.2.0/24", f"{TOR2}:{L3VNI & 0xFFFF}", TOR2_RMAC),
        # the default route's next hop 192.168.1.3 is fw, on tor2
        (TOR2, "0.0.0.0/0", f"{TOR2}:{L3VNI & 0xFFFF}", TOR2_RMAC),
    }
    # fw moved away (a remote VTEP won its MAC: no longer advertised):
    # nobody here owns the next hop, so nobody advertises the static route.
    routes = desired_routes(CONFIG, [WEB, DB, B1], ON_TORS)
    assert "0.0.0.0/0" not in {r.prefix for r in routes.values() if isinstance(r, IpPrefixRoute)}


def test_type_5_can_be_switched_off_per_vrf_and_an_explicit_rd_gives_one_route() -> None:
    off = desired_routes(config(advertise_prefixes=False), [WEB, FW, DB], ON_TORS)
    assert not [r for r in off.values() if isinstance(r, IpPrefixRoute)]
    # (type 2 routes still carry the L3 VNI)
    assert {r.l3vni for r in off.values() if isinstance(r, MacIpRoute) and r.ip} == {L3VNI}
    shared = desired_routes(config(rd="65000:50000"), [WEB, FW, DB], ON_TORS)
    type5 = sorted(
        (r.prefix, r.next_hop, r.rd) for r in shared.values() if isinstance(r, IpPrefixRoute)
    )
    assert type5 == [
        ("0.0.0.0/0", TOR2, "65000:50000"),
        ("192.168.1.0/24", TOR1, "65000:50000"),  # (tor1 and tor2 serve it: the lower)
        ("192.168.2.0/24", TOR2, "65000:50000"),
    ]


def test_never_the_anycast_mac_as_a_host() -> None:
    ghost = LocalAdvertisement(5000, ANYCAST_MAC, TOR1, frozenset({"192.168.1.9"}), 0)
    routes = desired_routes(CONFIG, [ghost], {TOR1: [5000]})
    assert not [r for r in routes.values() if isinstance(r, MacIpRoute)]
    assert all(r.router_mac != ANYCAST_MAC for r in routes.values() if isinstance(r, IpPrefixRoute))


def test_the_advertiser_sends_and_withdraws_type_5_by_difference() -> None:
    recorder = Recorder()
    advertiser = Advertiser(CONFIG, recorder)
    advertiser.sync([WEB, FW, DB], ON_TORS)
    first = {type(r).__name__ for _, r in recorder.sent}
    assert first == {"MacIpRoute", "InclusiveMulticastRoute", "IpPrefixRoute"}
    recorder.sent.clear()
    assert advertiser.sync([WEB, FW, DB], ON_TORS) == (0, 0)
    # DB leaves tor2: tor2 serves 5001's subnet no more.
    assert advertiser.sync([WEB, FW], {TOR1: [5000, 6000], TOR2: [5000]}) == (0, 4)
    withdrawn = sorted(
        (type(r).__name__, getattr(r, "prefix", getattr(r, "ip", None)) or "")
        for k, r in recorder.sent
    )
    assert withdrawn == [
        ("InclusiveMulticastRoute", ""),
        ("IpPrefixRoute", "192.168.2.0/24"),
        ("MacIpRoute", ""),
        ("MacIpRoute", "192.168.2.1"),
    ]
    assert all(k == "withdraw" for k, _ in recorder.sent)
