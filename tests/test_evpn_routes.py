"""EVPN route values, their GoBGP encoding, the intake's refusals and the advertiser."""

from __future__ import annotations

import logging

import pytest
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.advertiser import Advertiser
from p4vtep.evpn.config import EvpnConfig, VniRouting
from p4vtep.evpn.intake import RouteIntake
from p4vtep.evpn.routes import InclusiveMulticastRoute, MacIpRoute, RouteError
from p4vtep.evpn.view import LocalAdvertisement

CONFIG = EvpnConfig(
    asn=65000,
    router_id="10.0.0.254",
    peers=(),
    vnis=(
        VniRouting(5000, None, ("65000:5000",), ("65000:5000",)),
        VniRouting(6000, "65000:6000", ("*:6000",), ("65000:6000",)),
    ),
)
OURS = ("10.0.0.1", "10.0.0.2")
PEER = "192.0.2.1"


def mac_route(**overrides: object) -> MacIpRoute:
    fields: dict[str, object] = {
        "rd": "192.0.2.10:5000",
        "mac": "52:54:00:00:00:01",
        "vni": 5000,
        "next_hop": "192.0.2.10",
        "route_targets": ("65000:5000",),
    }
    fields.update(overrides)
    return MacIpRoute(**fields)  # type: ignore[arg-type]


# ---- values -------------------------------------------------------------------


def test_route_values_are_canonical() -> None:
    route = mac_route(
        mac="52-54-00-AA-BB-CC", ip="2001:DB8::1", route_targets=("65000:5000", "65000:5000")
    )
    assert (route.mac, route.ip, route.route_targets) == (
        "52:54:00:aa:bb:cc",
        "2001:db8::1",
        ("65000:5000",),
    )
    assert route.nlri_key() == (2, "192.0.2.10:5000", 0, "52:54:00:aa:bb:cc", "2001:db8::1")
    imet = InclusiveMulticastRoute(
        rd="65000:5000", vni=5000, originator="192.0.2.10", next_hop="192.0.2.10",
        tunnel_endpoint="192.0.2.10",
    )  # fmt: skip
    assert imet.tunnel_endpoint is None
    assert imet.vtep == "192.0.2.10"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"mac": "52:54:00:00:00"}, "is not a MAC address"),
        ({"vni": 0}, "VNI 0 is outside"),
        ({"vni": 1 << 24}, "is outside 1..16777215"),
        ({"next_hop": "2001:db8::1"}, "is not an IPv4 address"),
        ({"ip": "192.168.1"}, "is not an IP address"),
        ({"rd": "5000"}, "expected ASN:N or IPv4:N"),
        ({"rd": "4200000001:70000"}, "must fit 16 bits after a 4-byte ASN"),
        ({"route_targets": ("65000:x",)}, "expected ASN:N"),
        ({"mobility_seq": 1 << 32}, "outside 32 bits"),
        ({"esi": "00:01"}, "expected 10 colon-separated bytes"),
    ],
)
def test_bad_route_values_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(RouteError, match=message):
        mac_route(**overrides)


# ---- GoBGP encoding -----------------------------------------------------------

needs_api = pytest.mark.skipif(
    gobgp_api.MISSING is not None, reason=f"{gobgp_api.MISSING}: codec tests skipped"
)


@needs_api
@pytest.mark.parametrize(
    "route",
    [
        mac_route(),
        mac_route(ip="192.168.1.10", mobility_seq=7),
        mac_route(ip="fd00::10", sticky=True, rd="10.0.0.1:5000"),
        mac_route(
            rd="4200000001:7", route_targets=("4200000001:5000", "192.0.2.1:5000", "65000:5000")
        ),
        mac_route(esi="01:02:03:04:05:06:07:08:09:0a", ethernet_tag=0),
        InclusiveMulticastRoute("10.0.0.1:5000", 5000, "10.0.0.1", "10.0.0.1", ("65000:5000",)),
        InclusiveMulticastRoute(
            "65000:1", 16777215, "10.0.0.1", "10.0.0.9", ("65000:1",), tunnel_endpoint="10.0.0.7"
        ),
    ],
)
def test_routes_survive_the_gobgp_api_encoding(route: MacIpRoute | InclusiveMulticastRoute) -> None:
    from p4vtep.evpn import gobgp_codec

    path = gobgp_codec.encode(route)
    assert gobgp_codec.decode(path) == route
    assert gobgp_codec.decode_key(path) == route.nlri_key()


@needs_api
def test_the_encoding_carries_vxlan_encapsulation_and_ingress_replication() -> None:
    from p4vtep.evpn import gobgp_codec

    attr = gobgp_api.attribute_pb2
    path = gobgp_codec.encode(
        InclusiveMulticastRoute("10.0.0.1:5000", 5000, "10.0.0.1", "10.0.0.1", ("65000:5000",))
    )
    by_type = {p.type_url.rpartition(".")[2]: p for p in path.pattrs}
    pmsi = attr.PmsiTunnelAttribute()
    by_type["PmsiTunnelAttribute"].Unpack(pmsi)
    assert (pmsi.type, pmsi.label, bytes(pmsi.id)) == (6, 5000, bytes([10, 0, 0, 1]))
    communities = attr.ExtendedCommunitiesAttribute()
    by_type["ExtendedCommunitiesAttribute"].Unpack(communities)
    encap = [c for c in communities.communities if c.type_url.endswith("EncapExtended")]
    value = attr.EncapExtended()
    encap[0].Unpack(value)
    assert value.tunnel_type == 8  # VXLAN


@needs_api
def test_malformed_received_paths_raise_route_error_and_other_types_are_ignored() -> None:
    from p4vtep.evpn import gobgp_codec

    api, attr = gobgp_api.gobgp_pb2, gobgp_api.attribute_pb2
    imet = gobgp_codec.encode(
        InclusiveMulticastRoute("10.0.0.1:5000", 5000, "10.0.0.1", "10.0.0.1", ("65000:5000",))
    )
    no_pmsi = api.Path(nlri=imet.nlri, pattrs=[p for p in imet.pattrs if "Pmsi" not in p.type_url])
    with pytest.raises(RouteError, match="without a PMSI tunnel attribute"):
        gobgp_codec.decode(no_pmsi)
    mac = gobgp_codec.encode(mac_route())
    nlri = attr.EVPNMACIPAdvertisementRoute()
    mac.nlri.Unpack(nlri)
    del nlri.labels[:]
    mac.nlri.Pack(nlri)
    with pytest.raises(RouteError, match="without a label"):
        gobgp_codec.decode(mac)
    no_next_hop = api.Path(
        nlri=mac.nlri, pattrs=[p for p in mac.pattrs if "MpReach" not in p.type_url]
    )
    with pytest.raises(RouteError, match="no next hop"):
        gobgp_codec.decode(no_next_hop)
    auto_discovery = api.Path(pattrs=mac.pattrs)
    auto_discovery.nlri.Pack(attr.EVPNEthernetAutoDiscoveryRoute(ethernet_tag=1, label=5000))
    assert gobgp_codec.decode(auto_discovery) is None  # type 1: not used, not refused
    assert gobgp_codec.decode_key(auto_discovery) is None


# ---- intake -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "reason"),
    [
        (mac_route(vni=7000, route_targets=("65000:7000",)), "unknown-vni"),
        (mac_route(route_targets=("65000:6000",)), "vni-mismatch"),
        (mac_route(route_targets=("65001:5000",)), "no-route-target"),
        (mac_route(route_targets=()), "no-route-target"),
        (mac_route(next_hop="10.0.0.2"), "own-vtep"),
        (mac_route(mac="01:00:5e:00:00:01"), "bad-mac"),
        (mac_route(mac="00:00:00:00:00:00"), "bad-mac"),
        (
            InclusiveMulticastRoute("10.0.0.1:5000", 5000, "10.0.0.1", "10.0.0.1", ("65000:5000",)),
            "own-vtep",
        ),
        (
            InclusiveMulticastRoute(
                "192.0.2.10:1",
                5000,
                "192.0.2.10",
                "192.0.2.10",
                ("65000:5000",),
                tunnel_endpoint="10.0.0.1",
            ),
            "own-vtep",
        ),
    ],
)
def test_the_intake_refuses_with_a_log_line_and_a_counter(
    route: MacIpRoute | InclusiveMulticastRoute, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    intake = RouteIntake.build(CONFIG, OURS)
    with caplog.at_level(logging.WARNING, logger="p4vtep.evpn.intake"):
        assert not intake.admit(PEER, route)
    assert dict(intake.refused) == {reason: 1}
    assert not intake.accepted
    assert len(caplog.records) == 1
    assert f"({reason})" in caplog.records[0].getMessage()


def test_the_intake_admits_good_routes_and_counts_them_by_peer() -> None:
    intake = RouteIntake.build(CONFIG, OURS)
    assert intake.admit(PEER, mac_route())
    # VNI 6000 imports any ASN's 6000 (wildcard): an eBGP peer's auto RT.
    assert intake.admit(PEER, mac_route(vni=6000, route_targets=("65099:6000",)))
    assert intake.admit(
        PEER,
        InclusiveMulticastRoute(
            "192.0.2.10:5000", 5000, "192.0.2.10", "192.0.2.10", ("65000:5000",)
        ),
    )
    assert dict(intake.accepted) == {PEER: 3}
    assert not intake.refused


# ---- advertiser ---------------------------------------------------------------


class Recorder:
    """Stands in for the speaker: records what the advertiser sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, MacIpRoute | InclusiveMulticastRoute]] = []
        self.fail = False

    def announce(self, route: MacIpRoute | InclusiveMulticastRoute) -> None:
        if self.fail:
            raise ConnectionError("gobgpd is gone")
        self.sent.append(("announce", route))

    def withdraw(self, route: MacIpRoute | InclusiveMulticastRoute) -> None:
        if self.fail:
            raise ConnectionError("gobgpd is gone")
        self.sent.append(("withdraw", route))


def test_the_advertiser_sends_type_2_per_mac_and_ip_and_type_3_per_tor_vni() -> None:
    recorder = Recorder()
    advertiser = Advertiser(CONFIG, recorder)
    adv = LocalAdvertisement(5000, "52:54:00:00:00:01", "10.0.0.1", frozenset({"192.168.1.10"}), 0)
    assert advertiser.sync([adv], {"10.0.0.1": [5000], "10.0.0.2": [6000]}) == (4, 0)
    sent = {
        (kind, type(r).__name__, getattr(r, "ip", None), r.rd, r.next_hop)
        for kind, r in recorder.sent
    }
    assert sent == {
        ("announce", "MacIpRoute", None, "10.0.0.1:5000", "10.0.0.1"),
        ("announce", "MacIpRoute", "192.168.1.10", "10.0.0.1:5000", "10.0.0.1"),
        ("announce", "InclusiveMulticastRoute", None, "10.0.0.1:5000", "10.0.0.1"),
        ("announce", "InclusiveMulticastRoute", None, "65000:6000", "10.0.0.2"),  # explicit RD
    }
    assert all(r.route_targets == (f"65000:{r.vni}",) for _, r in recorder.sent)

    recorder.sent.clear()
    assert advertiser.sync([adv], {"10.0.0.1": [5000], "10.0.0.2": [6000]}) == (0, 0)
    assert recorder.sent == []  # nothing twice

    moved = LocalAdvertisement(
        5000, "52:54:00:00:00:01", "10.0.0.1", frozenset({"192.168.1.10"}), 3
    )
    assert advertiser.sync([moved], {"10.0.0.1": [5000]}) == (2, 1)
    assert sorted(
        (k, type(r).__name__, getattr(r, "mobility_seq", None)) for k, r in recorder.sent
    ) == [
        ("announce", "MacIpRoute", 3),
        ("announce", "MacIpRoute", 3),
        ("withdraw", "InclusiveMulticastRoute", None),
    ]


def test_the_advertiser_retries_what_the_speaker_could_not_take() -> None:
    recorder = Recorder()
    advertiser = Advertiser(CONFIG, recorder)
    recorder.fail = True
    assert advertiser.sync([], {"10.0.0.1": [5000]}) == (0, 0)
    recorder.fail = False
    assert advertiser.sync([], {"10.0.0.1": [5000]}) == (1, 0)
    recorder.fail = True
    assert advertiser.sync([], {}) == (0, 0)
    recorder.fail = False
    assert advertiser.sync([], {}) == (0, 1)
    assert [k for k, _ in recorder.sent] == ["announce", "withdraw"]


def test_the_intake_holds_refused_routes_until_withdrawn_or_the_session_drops() -> None:
    intake = RouteIntake.build(CONFIG, OURS)
    bad = mac_route(vni=7000, route_targets=("65000:7000",))
    own = mac_route(next_hop="10.0.0.2", mac="52:54:00:00:00:02")
    assert not intake.admit(PEER, bad)
    assert not intake.admit(PEER, own)
    assert not intake.admit("192.0.2.2", bad)
    assert {k: reason for k, (_, reason) in intake.held_refused.items()} == {
        (PEER, bad.nlri_key()): "unknown-vni",
        (PEER, own.nlri_key()): "own-vtep",
        ("192.0.2.2", bad.nlri_key()): "unknown-vni",
    }
    intake.forget(PEER, bad.nlri_key())  # withdrawn by the peer
    assert set(intake.held_refused) == {(PEER, own.nlri_key()), ("192.0.2.2", bad.nlri_key())}
    # A corrected re-advertisement of the same NLRI is admitted, and no longer held.
    assert intake.admit(PEER, mac_route(mac="52:54:00:00:00:02"))
    assert set(intake.held_refused) == {("192.0.2.2", bad.nlri_key())}
    intake.forget_source("192.0.2.2")  # session down
    assert intake.held_refused == {}
    assert dict(intake.refused) == {"unknown-vni": 2, "own-vtep": 1}  # counters stay
