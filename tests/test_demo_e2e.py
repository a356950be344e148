"""End to end: the Mininet demo fabric with the controller, the same checks
as `make demo`, asserted one by one."""

from __future__ import annotations

import demo  # topologies/ is on the test path (pytest.ini)
import pytest

missing = demo.missing_requirements()
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        bool(missing), reason=f"missing {', '.join(missing)}: demo fabric tests skipped"
    ),
]


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    with demo.Demo(tmp_path_factory.mktemp("demo")) as d:
        yield d


def assert_check(check: demo.Check) -> None:
    assert check.ok, f"{check.name}: {check.detail}"


def test_tenants_reach_each_other_and_never_the_other_tenant(fabric):
    before = fabric.arp_replies()
    assert_check(fabric.check_ping_matrix())
    assert_check(fabric.check_arp_suppression(before))


def test_tenant_subnets_route_on_the_tors(fabric):
    assert_check(fabric.check_routing())


def test_dual_stack_tenant_gets_nd_from_the_tors_and_routes_ipv6(fabric):
    assert_check(fabric.check_ipv6())


def test_slaac_vms_configure_ipv6_from_the_tors_router_advertisements(fabric):
    assert_check(fabric.check_slaac())


def test_traceroute_lists_the_gateway_once_per_routing_tor_then_the_target(fabric):
    assert_check(fabric.check_traceroute())


def test_a_prefix_without_route_is_answered_unreachable(fabric):
    assert_check(fabric.check_unreachable())


def test_both_uplinks_carry_traffic(fabric):
    assert_check(fabric.check_ecmp())


def test_policed_vm_is_held_to_its_rate(fabric):
    assert_check(fabric.check_qos())


def test_live_migration_keeps_the_vm_reachable(fabric):
    assert_check(fabric.check_migration())
