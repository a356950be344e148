"""The benchmarks' ``--tenants`` (bench/tenants.py; bench/churn.py,
bench/vm_move.py): the fabric they run over, and the VMs they attach and
move, must be what validation takes, or every event would be refused and
the benchmark would measure refusals."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import churn
import pytest
import tenants
import vm_move
from p4vtep.model.fabric import Fabric, Server, Tor, Uplink, Vni
from p4vtep.model.validation import validate
from switch_fabric import SwitchFabric


def two_tors() -> Fabric:
    """The servers and ToRs of ``bmv2_fabric``, without switches."""
    fabric = Fabric()
    for i in (1, 2):
        uplinks = (Uplink(3, "00:5e:00:00:01:01"),)
        mac = f"00:aa:00:00:00:0{i}"
        fabric.tors[f"tor{i}"] = Tor(f"tor{i}", f"127.0.0.1:{i}", i, f"10.0.0.{i}", mac, uplinks)
        for j in (1, 2):
            fabric.servers[f"s{i}{j}"] = Server(f"s{i}{j}", f"tor{i}", j)
    fabric.vnis[5000] = Vni(5000, "left over")  # (replaced by the tenants')
    return fabric


def test_the_tenants_background_and_every_churned_vm_are_valid_together() -> None:
    fabric = two_tors()
    args = argparse.Namespace(tenants=5, vms=200)
    background, new_vm = churn.with_tenants(SwitchFabric(fabric, {}, {}), args)
    assert sorted(fabric.vnis) == [tenants.VNI_BASE + k for k in range(5)]
    assert len(fabric.vrfs) == 5
    churned = [new_vm(n, churn.SERVERS[n % 4], 3000 + n) for n in range(1, 400)]
    vms = background + churned
    validate(fabric, vms)  # (raises on a duplicate MAC or IP, an IP outside its subnet)
    assert len({vm.mac for vm in vms}) == len({vm.ips for vm in vms}) == len(vms) == 599
    # Tenant after tenant.
    assert [vm.vni - tenants.VNI_BASE for vm in churned[:6]] == [1, 2, 3, 4, 0, 1]


def test_a_tenant_numbers_its_vms_within_its_subnet_only() -> None:
    tenants.tenant_vm("x", tenants.MAX_VM_NUMBER - 1, 3, "s11", 1)
    with pytest.raises(ValueError, match="outside"):
        tenants.tenant_vm("x", tenants.MAX_VM_NUMBER, 3, "s11", 1)


@pytest.mark.parametrize(
    "argv",
    [
        ["--tenants", "1"],
        ["--tenants", "2", "--rates", "2000", "--seconds", "60", "--vms", "40000"],
    ],
)
def test_a_run_that_would_number_past_a_subnet_is_refused_before_it_starts(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["churn.py", *argv])
    monkeypatch.setattr(churn, "require_switch", lambda: pytest.fail("went past the checks"))
    with pytest.raises(SystemExit):
        churn.main()
    assert "--tenants" in capsys.readouterr().err


def test_the_moves_population_prober_mover_and_fresh_vms_are_valid_together() -> None:
    fabric = two_tors()
    tenants.add_tenants(fabric, 250)
    args = argparse.Namespace(tenants=250, vms=10_000, routed=False)
    population, prober, mover = vm_move.tenant_population(args)
    fresh = [vm_move.fresh_vm(args, i) for i in range(100)]
    moved = [mover, *(replace(mover, server=s, vlan=v) for s, v in vm_move.PLACES)]
    for place in moved:  # (each place the mover takes, in turn)
        validate(fabric, [*population, prober, place, *fresh])
    assert prober.vni == mover.vni == tenants.VNI_BASE  # (bridged probes: one VNI)
    assert (prober.server, prober.vlan) == (vm_move.PROBER.server, vm_move.PROBER.vlan)
    # The mover's VNI: 20 VMs on each ToR's two servers, not 2,500.
    assert sum(vm.vni == mover.vni for vm in population) == 40


def test_moves_over_tenants_are_not_routed_probes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["vm_move.py", "--tenants", "250", "--routed"])
    monkeypatch.setattr(vm_move, "require_switch", lambda: pytest.fail("went past the checks"))
    with pytest.raises(SystemExit):
        vm_move.main()
    assert "--tenants" in capsys.readouterr().err
