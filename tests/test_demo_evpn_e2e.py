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


def test_the_frr_host_peers_with_the_controller(fabric):
    assert_check(fabric.check_evpn_session())


def test_the_frr_hosts_vm_and_the_tenant_reach_each_other_and_nothing_else(fabric):
    assert_check(fabric.check_evpn_reach())


def test_each_side_holds_the_others_routes(fabric):
    assert_check(fabric.check_evpn_routes())
