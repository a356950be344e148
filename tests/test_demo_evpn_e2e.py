"""End to end with a BGP EVPN peer: the Mininet demo fabric plus an FRR host
(`make demo EVPN=1`), the EVPN checks asserted one by one. The FRR host and
the p4vtep ToRs know each other through EVPN routes only."""

from __future__ import annotations

import demo  # topologies/ is on the test path (pytest.ini)
import pytest

missing = demo.missing_requirements(evpn=True)
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        bool(missing), reason=f"missing {', '.join(missing)}: EVPN demo fabric tests skipped"
    ),
]


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    with demo.Demo(tmp_path_factory.mktemp("demo-evpn"), evpn=True) as d:
        yield d


def assert_check(check: demo.Check) -> None:
    assert check.ok, f"{check.name}: {check.detail}"


def assert_c2_route_installed(fabric, ip: str) -> None:
    """The controller holds c2's type 2 for ``ip`` (one of c2's addresses)
    in frr1's routed VNI: frr1's VTEP and router MAC, tenant A's VRF by its
    L3 VNI 50000 (the route's second label), installed."""
    plan = fabric.frr_plan
    routes = fabric.api.EvpnRoutes(demo.pb.EvpnRoutesRequest(vni=plan.routed_vni), timeout=5)
    [c2] = [r for r in routes.routes if r.type == 2 and list(r.ips) == [ip]]
    assert (c2.mac, c2.vtep, c2.vrf, c2.l3vni, c2.router_mac, c2.installed) == (
        plan.routed_vm_mac,
        plan.vtep_ip,
        "tenant-a",
        50000,
        plan.router_mac,
        True,
    )


def test_the_frr_host_peers_with_the_controller(fabric):
    assert_check(fabric.check_evpn_session())


def test_the_frr_hosts_vm_and_the_tenant_reach_each_other_and_nothing_else(fabric):
    assert_check(fabric.check_evpn_reach())


def test_each_side_holds_the_others_routes(fabric):
    assert_check(fabric.check_evpn_routes())


def test_a_vm_and_the_frr_hosts_vm_in_the_other_subnet_route_to_each_other(fabric):
    """Symmetric IRB across the EVPN boundary: tenant A's VMs in
    192.168.1.0/24 (both ToRs) and c2 (192.168.2.21 in frr1's VRF) ping
    each other through their gateways, TTL 62 both ways."""
    assert_check(fabric.check_evpn_routing())
    # c2's route as the controller took it: a two-label type 2 (its L2 VNI
    # and the L3 VNI) with frr1's router MAC, in the VRF, installed.
    assert_c2_route_installed(fabric, fabric.frr_plan.routed_vm_ip)


def test_the_tenants_ipv6_vms_and_the_frr_hosts_vm_route_to_each_other(fabric):
    """Symmetric IRB over IPv6 across the EVPN boundary: tenant A's
    dual-stack VMs (2001:db8:1::/64 and 2001:db8:2::/64, both ToRs) and c2
    (2001:db8:3::21, FRR's own subnet) ping each other, hop limit 62 both
    ways; c2's ipv6_host_route on both ToRs and the VMs' routes in frr1's
    VRF via ::ffff:<their ToR's VTEP>."""
    check = fabric.check_evpn_ipv6_routing()
    assert_check(check)
    assert check.detail.startswith("a1/a2/a3/a4/a5/a6 -> c2 (2001:db8:3::21"), check.detail
    # c2's IPv6 route as the controller took it: two labels, frr1's router
    # MAC, in the VRF, installed (FRR sent it without the ND extended
    # community, which GoBGP would have taken as a withdrawal).
    plan = fabric.frr_plan
    assert_c2_route_installed(fabric, plan.routed_vm_ip6)
    # FRR's subnet of its own as a type 5 into the VRF.
    prefixes = fabric.api.EvpnRoutes(demo.pb.EvpnRoutesRequest(vni=50000), timeout=5).routes
    assert any(
        r.type == 5 and list(r.ips) == [plan.routed_subnet6] and r.installed for r in prefixes
    ), prefixes
