"""IPv6 tenants against FRR 8.4 (control plane): p4vtep's speaker and a
dual-stack FRR VTEP (its VRF with L3 VNI 50000, ``advertise ipv6 unicast``,
a subnet fd00:7::/64 with a VM) exchange MAC+IPv6 type 2 and IPv6 type 5
routes. FRR imports ours into its VRF's IPv6 table with ``::ffff:<our
VTEP>`` as next hop; we decode FRR's into the learned host and prefix
routes of VRF red, which compile to IPv6 host and prefix routes on the
ToRs; a GoBGP observer reads the gateway IP of our IPv6 type
5 off the wire (``::``). And GoBGP's limit, pinned: FRR puts the ND
extended community (RFC 9047, EVPN sub-type 0x08) on the MAC+IPv6 routes of
router-flagged neighbours (its IPv6 gateway with ``advertise-default-gw``,
a host that answers NS as a router), and gobgpd treats such an UPDATE as a
withdrawal ("unknown evpn subtype: 8"): those routes never reach us, and an
accepted one is withdrawn.

One lab for the module (tests/frr_irb_lab.py with ``ipv6=True``; FRR's VRF
is a network namespace, see there); each test leaves it as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from fabric_fixture import (
    ANYCAST_MAC,
    TOR1,
    TOR1_RMAC,
    TOR2,
    TOR2_RMAC,
    dual_stack_fabric,
    dual_stack_vms,
)
from frr_irb_lab import (
    FRR_RMAC,
    FRR_VNI,
    L3VNI,
    SUBNET,
    SUBNET6,
    VM_IP,
    VM_IP6,
    VM_MAC,
    FrrIrbLab,
    advertising,
    assert_routed_to_frr,
    default_route_from_frr,
    observed_paths,
    observing,
    our_speaker,
)
from frr_lab import needs_frr
from p4vtep.compiler.learned import Learned, LearnedHost, LearnedPrefix
from p4vtep.evpn import gobgp_api, gobgp_codec, status
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.evpn.view import LocalMac, RemoteHost, RemotePrefix

pytestmark = [pytest.mark.evpn, needs_frr()]

# FRR's spelling of our VTEPs as the next hop of IPv6 routes
MAPPED1, MAPPED2 = f"::ffff:{TOR1}", f"::ffff:{TOR2}"
# Our VMs, dual-stack (dual_stack_fabric): web-1 on tor1 (VNI 5000), db-1
# on tor2 (VNI 5001), fw on tor2 (VNI 5000, next hop of both default routes).
WEB = LocalMac(5000, "00:00:0a:00:00:01", TOR1, frozenset({"192.168.1.1", "2001:db8:1::a"}))
DB = LocalMac(5001, "00:00:0a:00:01:01", TOR2, frozenset({"192.168.2.1", "2001:db8:2::a"}))
FW = LocalMac(5000, "00:00:0a:00:00:03", TOR2, frozenset({"192.168.1.3", "2001:db8:1::3"}))
OURS = ([WEB, DB, FW], {TOR1: [5000], TOR2: [5000, 5001]})
ND_REFUSED = "unknown evpn subtype: 8"  # gobgpd's log, with "treated as withdraw"


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[FrrIrbLab, EvpnService]]:
    with (
        FrrIrbLab(ipv6=True) as frr,
        our_speaker(frr, dual_stack_fabric(), [TOR1, TOR2]) as service,
    ):
        yield frr, service


def imported6(frr: FrrIrbLab) -> dict[str, set[str]]:
    """FRR's VRF IPv6 table but its own subnet: prefix -> next hops."""
    return {k: v for k, v in frr.vrf_next_hops("ipv6").items() if k != SUBNET6}


def test_frr_imports_our_ipv6_hosts_and_subnets_via_our_vteps_as_mapped_ipv6(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    with advertising(service, *OURS):
        want = {
            "2001:db8:1::a/128": {MAPPED1},
            "2001:db8:2::a/128": {MAPPED2},
            "2001:db8:1::3/128": {MAPPED2},
            "2001:db8:1::/64": {MAPPED1, MAPPED2},  # (ECMP over both ToRs)
            "2001:db8:2::/64": {MAPPED2},
            "::/0": {MAPPED2},  # (from the ToR of its next hop, fw)
        }
        assert wait_for(lambda: imported6(frr) == want, 15), frr.vrf_next_hops("ipv6")
        # Our MAC+IPv6 routes as FRR shows them: both labels, both route
        # targets, our router MAC; IPv6 type 5 for subnets and ::/0.
        detail = frr.evpn_detail()
        assert f"Route [2]:[0]:[48]:[{WEB.mac}]:[128]:[2001:db8:1::a] VNI 5000/{L3VNI}" in detail
        assert f"Route [5]:[0]:[64]:[2001:db8:1::] VNI {L3VNI}" in detail
        assert f"Route [5]:[0]:[0]:[::] VNI {L3VNI}" in detail
        tor1 = frr.evpn_routes_via(TOR1)
        assert tor1[f"{TOR1}:5000 [2]:[0]:[48]:[{WEB.mac}]:[128]:[2001:db8:1::a]"][
            "extendedCommunity"
        ]["string"] == (f"RT:65000:5000 RT:65000:50000 ET:8 Rmac:{TOR1_RMAC}")
        assert tor1[f"{TOR1}:{L3VNI} [5]:[0]:[64]:[2001:db8:1::]"]["extendedCommunity"][
            "string"
        ] == (f"RT:65000:50000 ET:8 Rmac:{TOR1_RMAC}")
        # zebra installed them in the VRF's IPv6 table, via ::ffff:<VTEP> on
        # the L3 VNI's SVI, whose neighbour entry for it is our router MAC.
        svi = f"br{L3VNI}"
        assert wait_for(lambda: len(frr.bgp_kernel_routes("-6")) == 6, 10), frr.kernel_routes("-6")
        assert frr.bgp_kernel_routes("-6") == {
            "2001:db8:1::a": {(MAPPED1, svi)},
            "2001:db8:2::a": {(MAPPED2, svi)},
            "2001:db8:1::3": {(MAPPED2, svi)},
            "2001:db8:1::/64": {(MAPPED1, svi), (MAPPED2, svi)},
            "2001:db8:2::/64": {(MAPPED2, svi)},
            "default": {(MAPPED2, svi)},
        }
        neighbours = frr.kernel_neighbours()
        assert (neighbours[MAPPED1], neighbours[MAPPED2]) == (TOR1_RMAC, TOR2_RMAC)
        assert ANYCAST_MAC not in frr.vtysh("show bgp l2vpn evpn")
    assert wait_for(lambda: not imported6(frr), 10), frr.vrf_next_hops("ipv6")
    assert wait_for(lambda: not frr.bgp_kernel_routes("-6"), 10), frr.kernel_routes("-6")


def test_we_decode_frrs_ipv6_host_and_prefix_into_the_vrf(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    ips = (VM_IP, VM_IP6)
    hosts = {
        RemoteHost("red", ip, frr.frr_ip, FRR_RMAC, L3VNI, FRR_VNI, VM_MAC, 0, frr.frr_ip)
        for ip in ips
    }
    prefixes = {
        RemotePrefix("red", prefix, frr.frr_ip, FRR_RMAC, L3VNI, frr.frr_ip)
        for prefix in (SUBNET, SUBNET6)
    }
    assert wait_for(lambda: service.view.host_routes() == hosts, 15), (
        service.view.host_routes(),
        dict(service.intake.refused),
    )
    assert wait_for(lambda: service.view.prefix_routes() == prefixes, 10)
    assert service.view.learned() == Learned.of(
        [],
        {},
        [LearnedHost("red", ip, frr.frr_ip, FRR_RMAC, L3VNI, FRR_VNI, VM_MAC) for ip in ips],
        [LearnedPrefix("red", p, frr.frr_ip, FRR_RMAC, L3VNI) for p in (SUBNET, SUBNET6)],
    )
    # FRR's MAC-only route and type 3 for VNI 5007 (not ours) are refused, as
    # for IPv4; nothing else. FRR 8.4 does not advertise the VM's link-local
    # address (its SVI holds a neighbour entry for it): no fe80:: route at all.
    held = {key[1][0]: reason for key, (_, reason) in service.intake.held_refused.items()}
    assert held == {2: "unknown-vni", 3: "unknown-vni"}
    reports = [r for r in status.route_reports(service) if r.source == frr.frr_ip]
    assert not [r for r in reports if any(ip.startswith("fe80") for ip in r.ips)]
    assert {(r.type, r.ips) for r in reports if r.installed} == {
        (2, (VM_IP,)),
        (2, (VM_IP6,)),
        (5, (SUBNET,)),
        (5, (SUBNET6,)),
    }
    # The gateway IP of FRR's IPv6 type 5, as gobgpd hands it over: 16 zero
    # bytes, Go's "::" (not ::ffff:0.0.0.0, which it would show as "0.0.0.0").
    assert adj_in_gateways(service, frr.frr_ip) == {SUBNET: "0.0.0.0", SUBNET6: "::"}

    # Compiled: on every ToR holding red, towards FRR's VTEP and router MAC.
    fabric, vms, learned = dual_stack_fabric(), dual_stack_vms(), service.view.learned()
    assert_routed_to_frr(frr, fabric, vms, learned, [VM_IP, VM_IP6, SUBNET, SUBNET6])


def adj_in_gateways(service: EvpnService, peer: str) -> dict[str, str]:
    """The gateway IP text of each type 5 gobgpd holds from ``peer``, by prefix."""
    api, attr = gobgp_api.gobgp_pb2, gobgp_api.attribute_pb2
    request = api.ListPathRequest(
        table_type=api.ADJ_IN, name=peer, family=gobgp_codec.evpn_family()
    )
    out = {}
    for reply in service.speaker._stub.ListPath(request):
        for path in reply.destination.paths:
            if path.nlri.type_url.endswith("EVPNIPPrefixRoute"):
                n = attr.EVPNIPPrefixRoute()
                path.nlri.Unpack(n)
                out[f"{n.ip_prefix}/{n.ip_prefix_len}"] = n.gw_address
    return out


def test_an_ipv6_default_route_from_frr_is_a_prefix_route_to_it(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    with default_route_from_frr(frr, service, "::/0") as learned:
        # compiled, with no static default of ours: ::/0 towards FRR on each ToR
        fabric = dual_stack_fabric()
        fabric.vrfs["red"] = replace(fabric.vrfs["red"], routes=())
        assert_routed_to_frr(frr, fabric, dual_stack_vms(), learned, ["::/0"])


def test_an_observer_reads_a_zero_gateway_off_our_ipv6_type_5(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    """Another GoBGP decodes what gobgpd put on the wire: our IPv6 type 5's
    gateway IP is 16 zero bytes ("::"; GoBGP's own encoding of "0.0.0.0"
    would read "0.0.0.0", i.e. ::ffff:0.0.0.0), our MAC+IPv6 route carries
    both labels and our router MAC; the observer's own intake takes both."""
    frr, service = lab
    with advertising(service, [WEB], {TOR1: [5000]}), observing(frr) as observer:
        # web-1: MAC, MAC+IPv4, MAC+IPv6, type 3, type 5 for both subnets of 5000
        assert wait_for(lambda: len(observed_paths(observer, frr.ctl_ip)) == 6, 30), observed_paths(
            observer, frr.ctl_ip
        )
        by_kind = {
            (seen["kind"], seen.get("ip") or seen.get("prefix") or ""): seen
            for seen in observed_paths(observer, frr.ctl_ip)
        }
        mac_ip6 = by_kind["EVPNMACIPAdvertisementRoute", "2001:db8:1::a"]
        assert {k: mac_ip6[k] for k in ("labels", "rts", "encap", "rmac", "next_hop", "esi")} == {
            "labels": [5000, L3VNI],
            "rts": {"65000:5000", "65000:50000"},
            "encap": 8,
            "rmac": TOR1_RMAC,
            "next_hop": TOR1,
            "esi": bytes(10),
        }
        gateways = {
            prefix: by_kind["EVPNIPPrefixRoute", prefix]["gw"]
            for prefix in ("192.168.1.0/24", "2001:db8:1::/64")
        }
        assert gateways == {"192.168.1.0/24": "0.0.0.0", "2001:db8:1::/64": "::"}
        assert by_kind["EVPNIPPrefixRoute", "2001:db8:1::/64"]["labels"] == [L3VNI]
        assert wait_for(
            lambda: {h.ip for h in observer.view.host_routes()} == {"192.168.1.1", "2001:db8:1::a"},
            10,
        ), observer.view.host_routes()
        assert {p.prefix for p in observer.view.prefix_routes()} == {
            "192.168.1.0/24",
            "2001:db8:1::/64",
        }
        assert not observer.intake.refused


def gobgpd_log(service: EvpnService) -> str:
    return (service.speaker._dir / "gobgpd.log").read_text()


def test_gobgp_treats_frrs_ipv6_gateway_routes_with_the_nd_community_as_withdrawn(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    """``advertise-default-gw``: FRR advertises its SVI's MAC with each of its
    addresses. The IPv4 one (Default Gateway extended community) reaches us;
    the IPv6 one and the SVI's link-local one carry the ND extended
    community with the router flag too (FRR shows "ND:Router Flag"), and
    gobgpd drops them ("treated as withdraw"): FRR advertises them to us,
    gobgpd's adj-RIB-in never holds them."""
    frr, service = lab
    svi_mac = frr.svi_mac(FRR_VNI)
    gateway6 = f"[2]:[0]:[48]:[{svi_mac}]:[128]:[fd00:7::1]"
    dropped_before = gobgpd_log(service).count(ND_REFUSED)
    frr.configure(f"router bgp {frr.asn}", "address-family l2vpn evpn", "advertise-default-gw")
    try:
        assert wait_for(lambda: any(r.mac == svi_mac for r in status.route_reports(service)), 10), (
            frr.evpn_detail()
        )
        assert wait_for(lambda: gobgpd_log(service).count(ND_REFUSED) >= dropped_before + 2, 10)
        detail = frr.evpn_detail()
        block = detail[detail.index(f"Route {gateway6}") :]
        assert "Default Gateway ND:Router Flag" in block.split("Last update")[0]
        advertised = frr.vtysh(f"show bgp l2vpn evpn neighbors {frr.ctl_ip} advertised-routes")
        assert gateway6 in advertised
        assert f"[2]:[0]:[48]:[{svi_mac}]:[128]:[fe80::" in advertised
        ours = {r.ips for r in status.route_reports(service) if r.mac == svi_mac}
        assert ours == {("192.168.7.1",)}  # the IPv4 gateway only
        assert "treated as withdraw" in gobgpd_log(service)
    finally:
        frr.configure(f"router bgp {frr.asn}", "address-family l2vpn evpn",
                      "no advertise-default-gw")  # fmt: skip
    assert wait_for(lambda: not any(r.mac == svi_mac for r in status.route_reports(service)), 10)


def test_a_host_turning_router_loses_its_ipv6_host_route_in_gobgp(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    """FRR's VM starts forwarding IPv6 (a VM that routes: a container host,
    a virtual router): its NA now carry the router flag, zebra marks its
    neighbour entry a router, and FRR re-advertises its MAC+IPv6 route with
    the ND extended community. gobgpd treats that UPDATE as a withdrawal:
    the host route leaves our table while FRR still advertises it. Its
    IPv4 host route stays. Back to a host: the route is back."""
    frr, service = lab
    host6 = RemoteHost("red", VM_IP6, frr.frr_ip, FRR_RMAC, L3VNI, FRR_VNI, VM_MAC, 0, frr.frr_ip)
    assert wait_for(lambda: host6 in service.view.host_routes(), 15)
    route = f"[2]:[0]:[48]:[{VM_MAC}]:[128]:[{VM_IP6}]"

    def router(on: bool) -> None:
        frr.in_ns(frr.vm_ns, "sysctl", "-qw", f"net.ipv6.conf.all.forwarding={int(on)}")
        frr.in_ns(frr.tenant_ns, "ip", "-6", "neigh", "flush", "dev", f"br{FRR_VNI}")
        frr.in_ns(frr.tenant_ns, "ping", "-6", "-c", "1", "-W", "2", VM_IP6)

    router(True)
    try:
        assert wait_for(lambda: host6 not in service.view.host_routes(), 10)
        block = frr.evpn_detail().split(f"Route {route}")[1].split("Last update")[0]
        assert "ND:Router Flag" in block  # (FRR still advertises it, with the community)
        assert {h.ip for h in service.view.host_routes()} == {VM_IP}
        assert ND_REFUSED in gobgpd_log(service)
    finally:
        router(False)
    assert wait_for(lambda: host6 in service.view.host_routes(), 15), frr.evpn_detail()
