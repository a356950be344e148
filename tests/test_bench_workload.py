"""The benchmarks' synthetic workloads (bench/workload.py): the dual-stack
populations of issue 37 are valid for their fabrics, put every IPv6 address
in an IPv6 subnet of the VM's routed VNI, and leave the IPv4-only
populations as they were (same VMs, same addresses), and what the
convergence benchmark counts as IPv6 entries is what the compiler emits."""

from __future__ import annotations

import dataclasses
from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address

import pytest
import workload
from convergence import ipv6_entities
from p4vtep.compiler import Allocations, allocate, compile_tor
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.model.validation import validate

ADDRESSES = ["127.0.0.1:1", "127.0.0.1:2"]


def test_ipv4_only_populations_are_unchanged() -> None:
    # Figures of record (bench/results) were taken with these populations.
    routed = workload.vms(10000, 2, 100, routed=True)
    assert routed[0].ips == ("10.100.0.1",)
    assert routed[9999].ips == ("10.100.99.100",)
    bridged = workload.vms(20000, 16, 1000, tors_per_vni=2)
    assert bridged[19999].ips == ("10.0.78.31",)
    fabric = workload.routed_fabric(ADDRESSES, 100)
    assert [s.prefix for s in fabric.vnis[workload.VNI_BASE].subnets] == ["10.100.0.0/24"]


@pytest.mark.parametrize("routed", [True, False])
def test_dual_stack_adds_one_ipv6_address_and_nothing_else(routed: bool) -> None:
    ipv4 = workload.vms(2000, 2, 100, routed=routed)
    dual = workload.vms(2000, 2, 100, routed=routed, dual_stack=True)
    for v4, ds in zip(ipv4, dual, strict=True):
        assert ds.ips[:1] == v4.ips
        assert len(ds.ips) == 2
        assert isinstance(ip_address(ds.ips[1]), IPv6Address)
        assert str(IPv6Address(ds.ips[1])) == ds.ips[1]  # canonical, as the model wants
        assert ds == dataclasses.replace(v4, ips=ds.ips)
    assert len({vm.ips[1] for vm in dual}) == len(dual)


def test_dual_stack_routed_vms_lie_in_their_vnis_ipv6_subnet() -> None:
    fabric = workload.routed_fabric(ADDRESSES, 100, dual_stack=True)
    vms = workload.vms(2000, 2, 100, routed=True, dual_stack=True)
    validate(fabric, vms)  # raises on anything the controller would refuse
    for vni in fabric.vnis.values():
        v4, v6 = vni.subnets
        assert isinstance(ip_address(v4.gateway), IPv4Address)
        assert IPv6Address(v6.gateway) in IPv6Network(v6.prefix)
    for vm in vms:
        (_, v6) = fabric.vnis[vm.vni].subnets
        assert IPv6Address(vm.ips[1]) in IPv6Network(v6.prefix)
        assert vm.ips[1] != v6.gateway


def test_dual_stack_bridged_population_is_valid() -> None:
    fabric = workload.fabric([f"127.0.0.1:{1 + i}" for i in range(16)], 200)
    validate(fabric, workload.vms(2000, 16, 200, tors_per_vni=2, dual_stack=True))


def test_convergence_counts_the_compiled_ipv6_entries() -> None:
    # 200 VMs, 2 per VNI, 50 VRFs of two VNIs, both ToRs holding every VNI.
    fabric = workload.routed_fabric(ADDRESSES, 100, dual_stack=True)
    vms = workload.vms(200, 2, 100, routed=True, dual_stack=True)
    alloc = Allocations()
    allocate(fabric, vms, alloc)
    entries = PipelineEntries(bmv2_pipeline().p4info)
    compiled = {name: compile_tor(fabric, vms, name, alloc, entries) for name in fabric.tors}
    # Per ToR: ND for every VM and, per VNI, its gateway's global and
    # link-local addresses; a host route for every VM and, per VRF, its two
    # gateways and the link-local one.
    assert ipv6_entities(compiled) == {
        "nd_suppression": 2 * (200 + 2 * 100),
        "ipv6_host_route": 2 * (200 + 3 * 50),
    }
    ipv4_only = workload.vms(200, 2, 100, routed=True)
    v4_fabric = workload.routed_fabric(ADDRESSES, 100)
    alloc = Allocations()
    allocate(v4_fabric, ipv4_only, alloc)
    compiled = {
        name: compile_tor(v4_fabric, ipv4_only, name, alloc, entries) for name in v4_fabric.tors
    }
    assert ipv6_entities(compiled) == {"nd_suppression": 0, "ipv6_host_route": 0}
