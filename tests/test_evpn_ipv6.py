"""EVPN for IPv6 tenants without a peer (issue 37): IPv6 route values in
their canonical form, the GoBGP encoding of MAC+IPv6 (type 2) and IPv6
prefix (type 5) routes down to the bytes gobgpd puts on the wire (the
gateway IP of an interface-less IPv6 type 5 is ``::``, never GoBGP's
``::ffff:0.0.0.0``), the gateway's link-local address in the intake, what
the learned table gives the compiler, what the advertiser sends for
dual-stack VMs and subnets, what the ToRs get compiled from it, and how the
API and CLI show it. What the intake takes and refuses of IPv6 routes, and
their GoBGP API round trip, are tests/test_evpn_irb.py's (for both
families)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fabric_fixture import (
    ANYCAST_MAC,
    L3VNI,
    TOR1,
    TOR1_RMAC,
    TOR2,
    TOR2_RMAC,
    dual_stack_fabric,
    dual_stack_vms,
    evpn_for,
    routed_fabric,
    symmetric_type2,
    two_tor_fabric,
    vrf_type5,
)
from helpers import api_client, needs_gobgp_api
from p4vtep.api import overlay_pb2 as pb
from p4vtep.cli import main as cli_main
from p4vtep.compiler import DesiredState, Encoder, compile_tor
from p4vtep.compiler.learned import Learned, LearnedHost, LearnedMac, LearnedPrefix
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, RemoteVtepHop
from p4vtep.evpn import gobgp_api, status
from p4vtep.evpn.advertiser import Advertiser, Route, desired_routes
from p4vtep.evpn.config import EvpnConfig, VrfRouting
from p4vtep.evpn.intake import Admitted, RouteIntake
from p4vtep.evpn.routes import IpPrefixRoute, MacIpRoute, RouteError
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.table import LearnedTable
from p4vtep.evpn.view import LocalAdvertisement, LocalMac
from p4vtep.model.addressing import link_local
from p4vtep.model.allocation import Allocations
from p4vtep.state.sqlite_store import Store

FRR, FRR_RMAC = "192.0.2.10", "02:fe:00:00:00:10"
PEER = "192.0.2.1"
HOST_MAC = "52:54:00:f0:00:09"
SUBNET1, SUBNET2 = "2001:db8:1::/64", "2001:db8:2::/64"
GATEWAY1, GATEWAY2 = "2001:db8:1::1", "2001:db8:2::1"
GATEWAY_LLA = link_local(ANYCAST_MAC)
ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)
RED = VrfRouting("red", L3VNI, None, ("65000:50000",), ("65000:50000",))


# Our web-1's (00:00:0a:00:00:01, VNI 5000 on tor1) MAC+IPv6 route: both
# labels, both route targets, tor1's router MAC.
WEB_IP6 = MacIpRoute(f"{TOR1}:5000", "00:00:0a:00:00:01", 5000, TOR1, "2001:db8:1::a",
                     ("65000:5000", "65000:50000"), l3vni=L3VNI, router_mac=TOR1_RMAC)  # fmt: skip


def evpn_config(**vrf: object) -> EvpnConfig:
    """Automatic RDs and route targets, VNIs 5000/5001 routed in red (RED
    with ``vrf``'s fields), 6000 L2; not listening."""
    vrfs = (replace(RED, **vrf),)  # type: ignore[arg-type]
    fabric = dual_stack_fabric()
    return evpn_for(fabric, (5000, 5001, 6000), router_id="10.0.0.254", vrfs=vrfs, peers=(),
                    listen_port=-1)  # fmt: skip


CONFIG = evpn_config()


def host6(**overrides: object) -> MacIpRoute:
    """FRR's two-label MAC+IPv6 route for a host in VNI 9000 (not ours), VRF red."""
    return symmetric_type2(FRR, FRR_RMAC, HOST_MAC, "2001:db8:9::10", **overrides)


def in_5000(ip: str, **overrides: object) -> MacIpRoute:
    """The same host in VNI 5000, which we host (symmetric: two labels)."""
    return host6(vni=5000, ip=ip, route_targets=("65000:5000", "65000:50000"), **overrides)


def prefix6(**overrides: object) -> IpPrefixRoute:
    """FRR's IPv6 subnet into VRF red."""
    return vrf_type5(FRR, FRR_RMAC, "2001:db8:9::/64", **overrides)


# ---- values -------------------------------------------------------------------


def test_ipv6_in_routes_is_kept_in_its_canonical_form() -> None:
    route = host6(ip="2001:DB8:9:0:0:0:0:010", next_hop="::ffff:192.0.2.10")
    assert (route.ip, route.next_hop) == ("2001:db8:9::10", FRR)  # (FRR's spelling of a VTEP)
    # RFC 5952 section 5: IPv4-mapped in dotted quad (Python 3.11 writes ::ffff:c000:201)
    assert host6(ip="::ffff:c000:201").ip == "::ffff:192.0.2.1"
    p = prefix6(prefix="2001:DB8:9:0::5/64", next_hop="::ffff:192.0.2.10")
    assert (p.prefix, p.next_hop, p.nlri_key()) == (
        "2001:db8:9::/64",
        FRR,
        (5, f"{FRR}:2", 0, "2001:db8:9::/64"),
    )
    assert prefix6(prefix="::/0").prefix == "::/0"
    assert prefix6(prefix="::ffff:c000:200/120").prefix == "::ffff:192.0.2.0/120"
    with pytest.raises(RouteError, match="is not an IPv4 address"):
        host6(next_hop="2001:db8::10")  # (VTEPs are IPv4)


@pytest.mark.parametrize(
    ("gateway", "kept"),
    [
        # zero in either family: interface-less. ::ffff:0.0.0.0 is what GoBGP
        # sends for an IPv6 prefix given "0.0.0.0", and GoBGP's text for it
        # is "0.0.0.0" (Go prints an IPv4-mapped address as its To4()).
        ("::", None),
        ("0.0.0.0", None),
        ("::ffff:0.0.0.0", None),
        # an overlay index; in the prefix's family, as on the wire
        ("2001:DB8:9::1", "2001:db8:9::1"),
        ("192.0.2.10", "::ffff:192.0.2.10"),
        ("::ffff:192.0.2.10", "::ffff:192.0.2.10"),
    ],
)
def test_a_type_5_gateway_is_taken_in_its_prefixs_family(gateway: str, kept: str | None) -> None:
    assert prefix6(gateway_ip=gateway).gateway_ip == kept


def test_an_ipv4_type_5_gateway_stays_ipv4() -> None:
    ipv4 = prefix6(prefix="10.9.0.0/16")
    assert replace(ipv4, gateway_ip="::").gateway_ip is None
    assert replace(ipv4, gateway_ip="::ffff:0.0.0.0").gateway_ip is None
    assert replace(ipv4, gateway_ip="::ffff:10.9.0.1").gateway_ip == "10.9.0.1"
    with pytest.raises(RouteError, match="of an IPv4 prefix is not an IPv4 address"):
        replace(ipv4, gateway_ip="2001:db8::1")


# ---- the GoBGP encoding -------------------------------------------------------


def _nlri(path: Any, cls: Any) -> Any:
    message = cls()
    path.nlri.Unpack(message)
    return message


@needs_gobgp_api
def test_the_api_fields_of_ipv6_type_2_and_type_5() -> None:
    from p4vtep.evpn import gobgp_codec

    attr = gobgp_api.attribute_pb2
    n2 = _nlri(gobgp_codec.encode(in_5000("2001:db8:1::50")), attr.EVPNMACIPAdvertisementRoute)
    assert (n2.ip_address, list(n2.labels)) == ("2001:db8:1::50", [5000, L3VNI])
    # An interface-less IPv6 type 5: gateway "::", never "0.0.0.0" (GoBGP
    # would send ::ffff:0.0.0.0: a gateway IP, an overlay index).
    n5 = _nlri(gobgp_codec.encode(prefix6()), attr.EVPNIPPrefixRoute)
    assert (n5.ip_prefix, n5.ip_prefix_len, n5.gw_address, n5.label) == (
        "2001:db8:9::",
        64,
        "::",
        L3VNI,
    )
    n5 = _nlri(gobgp_codec.encode(prefix6(prefix="::/0")), attr.EVPNIPPrefixRoute)
    assert (n5.ip_prefix, n5.ip_prefix_len, n5.gw_address) == ("::", 0, "::")
    n4 = _nlri(gobgp_codec.encode(prefix6(prefix="10.9.0.0/16")), attr.EVPNIPPrefixRoute)
    assert n4.gw_address == "0.0.0.0"


@needs_gobgp_api
@pytest.mark.parametrize("text", ["::", "0.0.0.0", "<nil>", ""])
def test_a_received_ipv6_type_5_with_a_zero_gateway_is_interface_less(text: str) -> None:
    """GoBGP hands a received gateway as Go's text of it: "::" for 16 zero
    bytes, "0.0.0.0" for ::ffff:0.0.0.0 (GoBGP's own encoding of "0.0.0.0"
    beside an IPv6 prefix), "<nil>" for none. All are interface-less, and
    the intake takes the route."""
    from p4vtep.evpn import gobgp_codec

    path = gobgp_codec.encode(prefix6())
    n5 = _nlri(path, gobgp_api.attribute_pb2.EVPNIPPrefixRoute)
    n5.gw_address = text
    path.nlri.Pack(n5)
    route = gobgp_codec.decode(path)
    assert route == prefix6()
    intake = RouteIntake.build(CONFIG, (TOR1, TOR2))
    assert route is not None
    assert intake.admit(PEER, route) == Admitted("red")


MISSING_GOBGPD = gobgp_api.MISSING or (
    None if shutil.which("gobgpd") else "gobgpd missing (Debian package gobgpd)"
)


@pytest.fixture
def gobgpd() -> Iterator[EvpnService]:
    """Our speaker with a real gobgpd and no peer (its temp dir goes on stop)."""
    if MISSING_GOBGPD:
        pytest.skip(f"{MISSING_GOBGPD}: gobgpd tests skipped")
    service = EvpnService(CONFIG, [TOR1, TOR2])
    service.start()
    try:
        yield service
    finally:
        service.stop()


def _wire(service: EvpnService) -> dict[str, bytes]:
    """The NLRI of each path gobgpd holds as ours, as gobgpd serialises it
    for an UPDATE (route type, length, value: RFC 7432 7), by its prefix text."""
    api = gobgp_api.gobgp_pb2
    from p4vtep.evpn import gobgp_codec

    request = api.ListPathRequest(
        table_type=api.GLOBAL, family=gobgp_codec.evpn_family(), enable_nlri_binary=True
    )
    return {
        reply.destination.prefix: bytes(path.nlri_binary)
        for reply in service.speaker._stub.ListPath(request)
        for path in reply.destination.paths
    }


def test_gobgpd_puts_our_ipv6_routes_on_the_wire_with_a_zero_gateway(
    gobgpd: EvpnService,
) -> None:
    """The bytes gobgpd serialises: a 58-byte IPv6 type 5 (RFC 9136 3.1) whose
    16-byte gateway is zero, and a MAC+IPv6 type 2 with a 128-bit IP and
    both labels. Beside them, GoBGP's pitfall pinned: the same prefix given
    the gateway "0.0.0.0" goes out with ::ffff:0.0.0.0."""
    from p4vtep.evpn import gobgp_codec

    api, attr = gobgp_api.gobgp_pb2, gobgp_api.attribute_pb2
    ours = IpPrefixRoute(
        f"{TOR1}:{L3VNI & 0xFFFF}", SUBNET1, L3VNI, TOR1, ("65000:50000",), TOR1_RMAC
    )
    gobgpd.speaker.announce(ours)
    gobgpd.speaker.announce(WEB_IP6)
    # The pitfall: an IPv6 prefix with the gateway text "0.0.0.0".
    pitfall = gobgp_codec.encode(replace(ours, rd="65000:7"))
    n5 = _nlri(pitfall, attr.EVPNIPPrefixRoute)
    n5.gw_address = "0.0.0.0"
    pitfall.nlri.Pack(n5)
    for wrapped in pitfall.pattrs:
        if wrapped.type_url.endswith("MpReachNLRIAttribute"):
            reach = attr.MpReachNLRIAttribute()
            wrapped.Unpack(reach)
            reach.nlris[0].CopyFrom(pitfall.nlri)
            wrapped.Pack(reach)
    gobgpd.speaker._stub.AddPath(api.AddPathRequest(table_type=api.GLOBAL, path=pitfall))

    wire = _wire(gobgpd)
    assert len(wire) == 3, wire
    label = L3VNI.to_bytes(3, "big")
    subnet = bytes.fromhex("20010db8000100000000000000000000")
    for text, nlri in wire.items():
        if "[type:Prefix]" in text:
            # type 5, length 58: RD(8) ESI(10) Ethernet tag(4) length(1)
            # prefix(16) gateway(16) label(3)
            assert (nlri[:2], len(nlri)) == (bytes([5, 58]), 60), nlri.hex()
            assert nlri[10:24] == bytes(14)  # ESI 0, Ethernet tag 0
            assert (nlri[24], nlri[25:41], nlri[57:]) == (64, subnet, label)
            gateway = nlri[41:57]
            if "65000:7" in text:
                assert gateway == bytes(10) + b"\xff\xff" + bytes(4)  # ::ffff:0.0.0.0
            else:
                assert gateway == bytes(16)  # ours: ::
        else:
            # type 2: RD ESI tag, MAC length 48, MAC, IP length 128, IP, 2 labels
            assert (nlri[0], len(nlri)) == (2, 2 + 8 + 10 + 4 + 1 + 6 + 1 + 16 + 6), nlri.hex()
            body = nlri[2 + 8 + 10 + 4 :]
            assert (body[0], body[1:7], body[7]) == (48, bytes.fromhex("00000a000001"), 128)
            assert body[8:24] == bytes.fromhex("20010db80001000000000000000000" + "0a")
            assert body[24:] == (5000).to_bytes(3, "big") + label
    # Both type 5 decode as interface-less: GoBGP's text of ::ffff:0.0.0.0
    # is "0.0.0.0" (routes._gateway).
    decoded = {r.rd: r for r in gobgpd.speaker.originated() if isinstance(r, IpPrefixRoute)}
    assert decoded[ours.rd] == ours
    assert decoded["65000:7"].gateway_ip is None


# ---- intake -------------------------------------------------------------------


def test_the_gateway_link_local_address_is_ours_only_where_there_is_ipv6() -> None:
    """VNI 5000 has an IPv6 subnet (the ToRs answer the gateway's link-local
    address there); in routed_fabric it has none, and a host with that
    address is taken there like any other link-local one (its MAC)."""
    ipv4_only = CONFIG.for_fabric(routed_fabric())
    intake = RouteIntake.build(ipv4_only, (TOR1, TOR2))
    assert intake.admit(PEER, in_5000(GATEWAY_LLA)) == Admitted(None, bridged=True, neighbour=False)


# ---- the learned table: what the compiler is given ----------------------------


def _learn(table: LearnedTable, intake: RouteIntake, route: MacIpRoute | IpPrefixRoute) -> None:
    admitted = intake.admit(PEER, route)
    assert admitted is not None
    table.learn(PEER, route, admitted.vrf, admitted.bridged, admitted.neighbour)


def test_ipv6_hosts_and_prefixes_become_learned_host_routes_nd_entries_and_prefixes() -> None:
    table, intake = LearnedTable(), RouteIntake.build(CONFIG, (TOR1, TOR2))
    v4 = in_5000("192.168.1.50")
    v6 = in_5000("2001:db8:1::50")
    lla = in_5000("fe80::5054:ff:fef0:9")
    mac_only = MacIpRoute(f"{FRR}:3", HOST_MAC, 5000, FRR, None, ("65000:5000",))
    elsewhere = host6(mac="52:54:00:f0:00:0a")  # (VNI 9000: a host route only)
    for route in (mac_only, v4, v6, lla, elsewhere, prefix6(), prefix6(prefix="::/0")):
        _learn(table, intake, route)
    learned = table.view().learned()
    assert learned == Learned.of(
        # the MAC with both its addresses for ARP and ND suppression, not the LLA
        [LearnedMac(5000, HOST_MAC, FRR, ("192.168.1.50", "2001:db8:1::50"))],
        {},
        [
            LearnedHost("red", "192.168.1.50", FRR, FRR_RMAC, L3VNI, 5000, HOST_MAC),
            LearnedHost("red", "2001:db8:1::50", FRR, FRR_RMAC, L3VNI, 5000, HOST_MAC),
            LearnedHost("red", "2001:db8:9::10", FRR, FRR_RMAC, L3VNI, 9000, "52:54:00:f0:00:0a"),
        ],
        [
            LearnedPrefix("red", "2001:db8:9::/64", FRR, FRR_RMAC, L3VNI),
            LearnedPrefix("red", "::/0", FRR, FRR_RMAC, L3VNI),
        ],
    )
    assert learned == table._learned_from_scratch()
    # (the link-local route is held and shown, installed with its MAC)
    held = {(h.type, tuple(sorted(h.ips))): h.lost for h in table.view().held_routes()}
    assert held[2, ("fe80::5054:ff:fef0:9",)] == ""
    table.unlearn(PEER, v6.nlri_key())
    assert set(table.view().learned().hosts["red"]) == {"192.168.1.50", "2001:db8:9::10"}
    assert table.view().learned().macs[5000][HOST_MAC].ips == ("192.168.1.50",)


def test_what_the_table_gives_out_compiles_to_ipv6_entries_and_no_link_local_one() -> None:
    """The learned value from FRR-like routes (a host in VNI 5000 with IPv4,
    IPv6 and link-local addresses, an IPv6 prefix, ::/0) on every ToR holding
    red: nd_suppression for the IPv6 address with its MAC (none for the
    link-local one), ipv6_host_route and ipv6_prefix_route towards the
    VTEP's router MAC in the L3 VNI; incremental equal to the whole compile."""
    table, intake = LearnedTable(), RouteIntake.build(CONFIG, (TOR1, TOR2))
    lla = "fe80::5054:ff:fef0:9"
    for route in (
        MacIpRoute(f"{FRR}:3", HOST_MAC, 5000, FRR, None, ("65000:5000",)),
        in_5000("192.168.1.50"),
        in_5000("2001:db8:1::50"),
        in_5000(lla),
        prefix6(),
        prefix6(prefix="::/0"),
    ):
        _learn(table, intake, route)
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    fabric.vrfs["red"] = replace(fabric.vrfs["red"], routes=())  # (no static ::/0 of ours)
    desired = DesiredState(fabric, ENC, Allocations())
    desired.change(vms, [])
    desired.set_learned(table.view().learned())
    hop = RemoteVtepHop(FRR, FRR_RMAC, L3VNI)
    for tor in ("tor1", "tor2"):
        state = desired.tors[tor].state
        for message in (
            ENTRIES.nd_suppression(5000, "2001:db8:1::50", HOST_MAC),
            ENTRIES.arp_suppression(5000, "192.168.1.50", HOST_MAC),
            ENTRIES.host_route(L3VNI, "2001:db8:1::50", hop),
            ENTRIES.prefix_route(L3VNI, "2001:db8:9::", 64, hop),
            ENTRIES.prefix_route(L3VNI, "::", 0, hop),
        ):
            key, data = ENC.of(message)
            assert state.get(key) == data, (tor, message)
        for absent in (
            ENTRIES.nd_suppression(5000, lla, HOST_MAC),
            ENTRIES.host_route(L3VNI, lla, hop),
        ):
            assert state.get(ENC.of(absent)[0]) is None
        assert state == compile_tor(fabric, vms, tor, desired.alloc, ENC, desired.learned)


def test_all_routes_of_a_mac_share_its_mobility_number() -> None:
    """RFC 7432 15: the MAC-only, MAC+IPv4 and MAC+IPv6 routes of one MAC
    are one claim. Our VM web (dual-stack) moves to FRR, which sends its
    higher number on the MAC+IPv6 route only: both host routes follow."""
    web_mac = "00:00:0a:00:00:01"
    table, intake = LearnedTable(), RouteIntake.build(CONFIG, (TOR1, TOR2))
    table.set_local([LocalMac(5000, web_mac, TOR1, frozenset({"192.168.1.1", "2001:db8:1::a"}))])
    _learn(table, intake, in_5000("192.168.1.1", mac=web_mac))
    assert table.refused["conflict"] == 1
    assert table.view().learned() == Learned()
    _learn(table, intake, in_5000("2001:db8:1::a", mac=web_mac, mobility_seq=1))
    learned = table.view().learned()
    assert set(learned.hosts["red"]) == {"192.168.1.1", "2001:db8:1::a"}
    assert learned.macs[5000][web_mac].ips == ("192.168.1.1", "2001:db8:1::a")
    assert table.view().advertisements() == frozenset()  # (moved away)


# ---- advertiser ---------------------------------------------------------------

WEB = LocalAdvertisement(
    5000, "00:00:0a:00:00:01", TOR1, frozenset({"192.168.1.1", "2001:db8:1::a"}), 0
)
FW = LocalAdvertisement(
    5000, "00:00:0a:00:00:03", TOR2, frozenset({"192.168.1.3", "2001:db8:1::3"}), 0
)
DB = LocalAdvertisement(5001, "00:00:0a:00:01:01", TOR2, frozenset({"2001:db8:2::a"}), 0)
B1 = LocalAdvertisement(6000, "00:00:0b:00:00:01", TOR1, frozenset({"2001:db8:6::1"}), 0)
ON_TORS = {TOR1: [5000, 6000], TOR2: [5000, 5001]}


def test_we_advertise_each_ipv6_address_of_a_routed_vm_with_both_labels() -> None:
    routes = desired_routes(CONFIG, [WEB, B1], {TOR1: [5000, 6000]})
    mac_ips = {r.ip: r for r in routes.values() if isinstance(r, MacIpRoute) and r.ip is not None}
    assert mac_ips["2001:db8:1::a"] == WEB_IP6
    assert mac_ips["192.168.1.1"] == replace(mac_ips["2001:db8:1::a"], ip="192.168.1.1")
    # In an L2-only VNI: one label, no router MAC, as for IPv4.
    assert mac_ips["2001:db8:6::1"] == MacIpRoute(
        f"{TOR1}:6000", B1.mac, 6000, TOR1, "2001:db8:6::1", ("65000:6000",)
    )


def test_never_a_link_local_address() -> None:
    odd = replace(WEB, ips=frozenset({"fe80::200:aff:fe00:1", "2001:db8:1::a"}))
    routes = desired_routes(CONFIG, [odd], {TOR1: [5000]})
    assert {r.ip for r in routes.values() if isinstance(r, MacIpRoute)} == {None, "2001:db8:1::a"}


def test_type_5_for_ipv6_subnets_and_static_routes_as_for_ipv4() -> None:
    routes = desired_routes(CONFIG, [WEB, FW, DB, B1], ON_TORS)
    type5 = {
        (r.next_hop, r.prefix, r.rd, r.router_mac, r.gateway_ip)
        for r in routes.values()
        if isinstance(r, IpPrefixRoute)
    }
    rd1, rd2 = f"{TOR1}:{L3VNI & 0xFFFF}", f"{TOR2}:{L3VNI & 0xFFFF}"
    assert type5 == {
        (TOR1, "192.168.1.0/24", rd1, TOR1_RMAC, None),
        (TOR1, SUBNET1, rd1, TOR1_RMAC, None),
        (TOR2, "192.168.1.0/24", rd2, TOR2_RMAC, None),
        (TOR2, SUBNET1, rd2, TOR2_RMAC, None),
        (TOR2, "192.168.2.0/24", rd2, TOR2_RMAC, None),
        (TOR2, SUBNET2, rd2, TOR2_RMAC, None),
        # both default routes' next hops are fw's, on tor2
        (TOR2, "0.0.0.0/0", rd2, TOR2_RMAC, None),
        (TOR2, "::/0", rd2, TOR2_RMAC, None),
    }
    # fw moved away: nobody here owns either next hop.
    routes = desired_routes(CONFIG, [WEB, DB, B1], ON_TORS)
    prefixes = {r.prefix for r in routes.values() if isinstance(r, IpPrefixRoute)}
    assert not prefixes & {"::/0", "0.0.0.0/0"}
    off = desired_routes(evpn_config(advertise_prefixes=False), [WEB, FW, DB], ON_TORS)
    assert not [r for r in off.values() if isinstance(r, IpPrefixRoute)]


class Recorder:
    """Takes our routes where gobgpd would."""

    def __init__(self) -> None:
        self.sent: list[Route] = []
        self.withdrawn: list[Route] = []

    def announce(self, route: Route) -> None:
        self.sent.append(route)

    def withdraw(self, route: Route) -> None:
        self.sent.remove(route)
        self.withdrawn.append(route)


def test_the_advertiser_sends_and_withdraws_ipv6_by_difference() -> None:
    recorder = Recorder()
    advertiser = Advertiser(CONFIG, recorder)
    advertiser.sync([WEB, FW, DB], ON_TORS)
    assert advertiser.sync([WEB, FW, DB], ON_TORS) == (0, 0)
    # db-1 leaves tor2: its MAC and MAC+IPv6 routes, 5001's type 3 and both
    # of 5001's subnets go.
    assert advertiser.sync([WEB, FW], {TOR1: [5000, 6000], TOR2: [5000]}) == (0, 5)
    assert sorted(
        (type(r).__name__, getattr(r, "prefix", None) or getattr(r, "ip", None) or "")
        for r in recorder.withdrawn
    ) == [
        ("InclusiveMulticastRoute", ""),
        ("IpPrefixRoute", "192.168.2.0/24"),
        ("IpPrefixRoute", SUBNET2),
        ("MacIpRoute", ""),
        ("MacIpRoute", "2001:db8:2::a"),
    ]


# ---- what an operator sees: API, CLI ------------------------------------------


@pytest.fixture
def shown(tmp_path: Path) -> Iterator[tuple[Controller, EvpnService]]:
    """A controller (for the API) and a dual-stack EVPN service beside it,
    never started: routes are handed in as the speaker would."""
    if MISSING_GOBGPD:
        pytest.skip(f"{MISSING_GOBGPD}: EVPN status tests skipped")
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    service = EvpnService(CONFIG, [TOR1, TOR2])
    service.advertiser = Advertiser(CONFIG, Recorder())
    yield controller, service
    service.stop()  # (nothing runs; removes the speaker's private directory)


def test_ipv6_routes_are_shown_canonically_in_the_api_and_the_cli(
    shown: tuple[Controller, EvpnService], capsys: pytest.CaptureFixture[str]
) -> None:
    controller, service = shown
    service._route(PEER, in_5000("2001:DB8:1:0::50"))
    service._route(PEER, prefix6(prefix="2001:0DB8:9::/64"))
    service._route(PEER, prefix6(prefix="FE80::/64", rd=f"{FRR}:4"))  # refused
    service.set_local([LocalMac(5001, DB.mac, TOR2, DB.ips)], {TOR2: [5001]})
    reports = status.route_reports(service)
    shown_ips = {(r.type, r.source, r.ips, r.refused) for r in reports if r.ips}
    assert shown_ips == {
        (2, PEER, ("2001:db8:1::50",), ""),
        (5, PEER, ("2001:db8:9::/64",), ""),
        (5, PEER, ("fe80::/64",), "ipv6-scope"),
        (2, "local", ("2001:db8:2::a",), ""),
        (5, "local", ("192.168.2.0/24",), ""),
        (5, "local", (SUBNET2,), ""),
    }
    with api_client(controller, service) as (client, address):
        routes = client.EvpnRoutes(pb.EvpnRoutesRequest()).routes
        assert {tuple(r.ips) for r in routes if r.ips} == {ips for _, _, ips, _ in shown_ips}
        l3 = {(tuple(r.ips), r.vrf, r.l3vni) for r in routes if r.type == 2 and r.ips}
        assert l3 == {(("2001:db8:1::50",), "red", L3VNI), (("2001:db8:2::a",), "red", L3VNI)}
        assert cli_main(["--api", address, "evpn", "routes"]) == 0
        refused = client.EvpnPeers(pb.EvpnPeersRequest()).refused
    assert [(r.reason, r.routes) for r in refused] == [("ipv6-scope", 1)]
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    by_ips = {(row[0], row[3]): (row[1], row[-1]) for row in rows}
    assert by_ips[("2", "2001:db8:1::50")] == (f"5000/{L3VNI}", "installed")
    assert by_ips[("2", "2001:db8:2::a")] == (f"5001/{L3VNI}", "advertised")
    # (a type 5's VNI is its label, the L3 VNI: shown once)
    assert by_ips[("5", "2001:db8:9::/64")] == (str(L3VNI), "installed")
    assert by_ips[("5", "fe80::/64")] == (str(L3VNI), "ipv6-scope")
    assert by_ips[("5", SUBNET2)] == (str(L3VNI), "advertised")
