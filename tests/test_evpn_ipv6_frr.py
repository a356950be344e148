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

import ipaddress
from collections.abc import Iterator
from typing import Any

import pytest
from fabric_fixture import ANYCAST_MAC, dual_stack_fabric, dual_stack_vms
from frr_irb_lab import (
    FRR_RMAC,
    OBSERVER_ASN,
    SUBNET,
    SUBNET6,
    VM_IP,
    VM_IP6,
    VM_MAC,
    FrrIrbLab,
    observed_paths,
    observer_config,
)
from frr_lab import needs_frr
from p4vtep.compiler import DesiredState, Encoder, compile_tor
from p4vtep.compiler.learned import Learned, LearnedHost, LearnedPrefix
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, RemoteVtepHop
from p4vtep.evpn import gobgp_api, gobgp_codec, status
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.evpn.view import LocalMac, RemoteHost, RemotePrefix
from p4vtep.model.allocation import Allocations

pytestmark = [pytest.mark.evpn, needs_frr()]

L3VNI, FRR_VNI = 50000, 5007
TOR1, TOR2 = "10.0.0.1", "10.0.0.2"
TOR1_RMAC, TOR2_RMAC = "00:aa:00:00:00:01", "00:aa:00:00:00:02"
# FRR's spelling of our VTEPs as the next hop of IPv6 routes
MAPPED1, MAPPED2 = f"::ffff:{TOR1}", f"::ffff:{TOR2}"
# Our VMs, dual-stack (dual_stack_fabric): web-1 on tor1 (VNI 5000), db-1
# on tor2 (VNI 5001), fw on tor2 (VNI 5000, next hop of both default routes).
WEB = LocalMac(5000, "00:00:0a:00:00:01", TOR1, frozenset({"192.168.1.1", "2001:db8:1::a"}))
DB = LocalMac(5001, "00:00:0a:00:01:01", TOR2, frozenset({"192.168.2.1", "2001:db8:2::a"}))
FW = LocalMac(5000, "00:00:0a:00:00:03", TOR2, frozenset({"192.168.1.3", "2001:db8:1::3"}))
OURS = ([WEB, DB, FW], {TOR1: [5000], TOR2: [5000, 5001]})
ND_REFUSED = "unknown evpn subtype: 8"  # gobgpd's log, with "treated as withdraw"
ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)


def our_config(frr: FrrIrbLab) -> EvpnConfig:
    """dual_stack_fabric's VRF red and VNIs, automatic RDs and route targets."""
    return EvpnConfig(
        asn=65000,
        router_id=frr.ctl_ip,
        peers=(EvpnPeer(frr.frr_ip, 65000), EvpnPeer(frr.observer_ip, OBSERVER_ASN)),
        vnis=tuple(VniRouting(v, None, (f"65000:{v}",), (f"65000:{v}",)) for v in (5000, 5001)),
        hold_time=3,
    ).for_fabric(dual_stack_fabric())


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[FrrIrbLab, EvpnService]]:
    with FrrIrbLab(l3vni=L3VNI, l2vni=FRR_VNI, ipv6=True) as frr:
        service = EvpnService(
            our_config(frr),
            [TOR1, TOR2],
            EvpnOptions(
                command_prefix=("ip", "netns", "exec", frr.ctl_ns),
                listen_addresses=(frr.ctl_ip,),
            ),
        )
        service.start()
        try:
            assert wait_for(frr.session_established, 30), f"no session; logs in {frr.dir}"
            assert wait_for(frr.l3vni_up, 10), frr.vtysh("show evpn vni")
            frr.vm_speaks()
            yield frr, service
        finally:
            service.stop()


def canonical(ip: str) -> str:
    """FRR writes an IPv4-mapped next hop as ``::ffff:a00:1``; RFC 5952
    section 5 (and p4vtep) as ``::ffff:10.0.0.1``."""
    address = ipaddress.ip_address(ip)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    return str(address)


def frr_vrf6(frr: FrrIrbLab) -> dict[str, set[str]]:
    """FRR's VRF IPv6 table: prefix -> next hops."""
    return {
        prefix: {canonical(nh["ip"]) for path in paths for nh in path.get("nexthops", [])}
        for prefix, paths in frr.vrf_routes("ipv6").items()
    }


def kernel6(frr: FrrIrbLab) -> dict[str, set[tuple[str, str]]]:
    """The VRF's IPv6 kernel routes FRR's BGP installed: dst -> {(gateway, dev)}."""
    out = {}
    for r in frr.kernel_routes("-6"):
        if r.get("protocol") == "bgp":
            hops = r.get("nexthops", [r])
            out[r["dst"]] = {(h.get("gateway", ""), h.get("dev", "")) for h in hops}
    return out


def frr_paths(frr: FrrIrbLab, next_hop: str) -> dict[str, dict[str, Any]]:
    """FRR's EVPN paths with this next hop, by "RD prefix"."""
    return {
        f"{p['rd']} {p['prefix']}": p
        for p in frr.evpn_routes()
        if any(nh.get("ip") == next_hop for nh in p.get("nexthops", []))
    }


def test_frr_imports_our_ipv6_hosts_and_subnets_via_our_vteps_as_mapped_ipv6(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    service.set_local(*OURS)
    try:
        want = {
            "2001:db8:1::a/128": {MAPPED1},
            "2001:db8:2::a/128": {MAPPED2},
            "2001:db8:1::3/128": {MAPPED2},
            "2001:db8:1::/64": {MAPPED1, MAPPED2},  # (ECMP over both ToRs)
            "2001:db8:2::/64": {MAPPED2},
            "::/0": {MAPPED2},  # (from the ToR of its next hop, fw)
        }
        assert wait_for(lambda: {k: v for k, v in frr_vrf6(frr).items() if k != SUBNET6} == want,
                        15), frr_vrf6(frr)  # fmt: skip
        # Our MAC+IPv6 routes as FRR shows them: both labels, both route
        # targets, our router MAC; IPv6 type 5 for subnets and ::/0.
        detail = frr.evpn_detail()
        assert f"Route [2]:[0]:[48]:[{WEB.mac}]:[128]:[2001:db8:1::a] VNI 5000/{L3VNI}" in detail
        assert f"Route [5]:[0]:[64]:[2001:db8:1::] VNI {L3VNI}" in detail
        assert f"Route [5]:[0]:[0]:[::] VNI {L3VNI}" in detail
        tor1 = frr_paths(frr, TOR1)
        assert tor1[f"{TOR1}:5000 [2]:[0]:[48]:[{WEB.mac}]:[128]:[2001:db8:1::a]"][
            "extendedCommunity"
        ]["string"] == (f"RT:65000:5000 RT:65000:50000 ET:8 Rmac:{TOR1_RMAC}")
        assert tor1[f"{TOR1}:{L3VNI} [5]:[0]:[64]:[2001:db8:1::]"]["extendedCommunity"][
            "string"
        ] == (f"RT:65000:50000 ET:8 Rmac:{TOR1_RMAC}")
        # zebra installed them in the VRF's IPv6 table, via ::ffff:<VTEP> on
        # the L3 VNI's SVI, whose neighbour entry for it is our router MAC.
        svi = f"br{L3VNI}"
        assert wait_for(lambda: len(kernel6(frr)) == 6, 10), frr.kernel_routes("-6")
        assert kernel6(frr) == {
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
    finally:
        service.set_local([], {})
    assert wait_for(lambda: not {k for k in frr_vrf6(frr) if k != SUBNET6}, 10), frr_vrf6(frr)
    assert wait_for(lambda: not kernel6(frr), 10), frr.kernel_routes("-6")


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
    fabric, vms = dual_stack_fabric(), dual_stack_vms()
    desired = DesiredState(fabric, ENC, Allocations())
    desired.change(vms, [])
    desired.set_learned(service.view.learned())
    to_frr = RemoteVtepHop(frr.frr_ip, FRR_RMAC, L3VNI)
    for tor in ("tor1", "tor2"):
        state = desired.tors[tor].state
        for message in (
            ENTRIES.host_route(L3VNI, VM_IP6, to_frr),
            ENTRIES.prefix_route(L3VNI, "fd00:7::", 64, to_frr),
            ENTRIES.host_route(L3VNI, VM_IP, to_frr),
            ENTRIES.underlay_route(frr.frr_ip, 32, group_id=1),
        ):
            key, data = ENC.of(message)
            assert state.get(key) == data
        assert state == compile_tor(fabric, vms, tor, desired.alloc, ENC, desired.learned)


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
    default = RemotePrefix("red", "::/0", frr.frr_ip, FRR_RMAC, L3VNI, frr.frr_ip)
    frr.configure(f"router bgp {frr.asn} vrf {frr.vrf}", "address-family l2vpn evpn",
                  "default-originate ipv6")  # fmt: skip
    try:
        assert wait_for(lambda: default in service.view.prefix_routes(), 10), (
            service.view.prefix_routes()
        )
        assert service.view.learned().prefixes["red"]["::/0"] == LearnedPrefix(
            "red", "::/0", frr.frr_ip, FRR_RMAC, L3VNI
        )
    finally:
        frr.configure(f"router bgp {frr.asn} vrf {frr.vrf}", "address-family l2vpn evpn",
                      "no default-originate ipv6")  # fmt: skip
    assert wait_for(lambda: default not in service.view.prefix_routes(), 10)


def test_an_observer_reads_a_zero_gateway_off_our_ipv6_type_5(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    """Another GoBGP decodes what gobgpd put on the wire: our IPv6 type 5's
    gateway IP is 16 zero bytes ("::"; GoBGP's own encoding of "0.0.0.0"
    would read "0.0.0.0", i.e. ::ffff:0.0.0.0), our MAC+IPv6 route carries
    both labels and our router MAC; the observer's own intake takes both."""
    frr, service = lab
    observer = EvpnService(
        observer_config(frr, L3VNI),
        [],
        EvpnOptions(
            command_prefix=("ip", "netns", "exec", frr.frr_ns), local_address=frr.observer_ip
        ),
    )
    service.set_local([WEB], {TOR1: [5000]})
    observer.start()
    try:
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
    finally:
        observer.stop()
        service.set_local([], {})


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
