"""A change costs what depends on it, not what the ToR holds.

The incremental compiler's results are checked against the whole compile
elsewhere (tests/test_incremental_property.py); these tests check how much
it looks at. A VM's change on a ToR hosting hundreds of VNIs must not walk
them all; a VNI's unit, rebuilt on every change of its members, must not
encode its unchanged entries again; and a learned route in one tenant's VRF
must not walk every VRF the ToR holds; and a ToR with nothing of a VM's
(neither its VNI nor its VRF) must not work on its change at all. Each once
made the controller's cost per change grow with the number of tenants or
ToRs (bench/NOTES.md, issue 40, session 17).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from fabric_fixture import add_tor3, two_tor_fabric
from p4vtep.compiler import DesiredState, Encoder, Learned, compile_tor, routing
from p4vtep.compiler.learned import LearnedHost
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.model.allocation import Allocations
from p4vtep.model.fabric import Subnet, Vm, Vni, Vrf

VNIS = range(7000, 7200)  # 200 L2 VNIs, each with a VM on both ToRs


def vm(i: int, vni: int, server: str) -> Vm:
    return Vm(f"v{i}", f"00:00:0c:00:{i >> 8:02x}:{i & 255:02x}", (), vni, server, 100 + i)


@pytest.fixture
def desired() -> DesiredState:
    fabric = two_tor_fabric()
    for vni in VNIS:
        fabric.vnis[vni] = Vni(vni, f"t{vni}")
    state = DesiredState(fabric, Encoder(PipelineEntries(bmv2_pipeline().p4info)), Allocations())
    servers = ("s11", "s21")  # (one on each ToR)
    state.change([vm(2 * k + j, vni, servers[j]) for k, vni in enumerate(VNIS) for j in (0, 1)], [])
    for compiler in state.tors.values():
        compiler.take_changes()  # (built: from here on, changes are incremental)
    return state


def test_a_vm_change_looks_only_at_its_own_vnis(desired, monkeypatch):
    asked: Counter[int] = Counter()
    vrf_of = routing.vrf_of

    def counting(fabric, vni):
        asked[vni] += 1
        return vrf_of(fabric, vni)

    monkeypatch.setattr(routing, "vrf_of", counting)
    desired.change([vm(1000, 7100, "s12")], [])  # a VNI both ToRs host already
    desired.change([], ["v1000"])
    assert set(asked) <= {7100}, sorted(asked)
    # (a VNI that comes to a ToR or leaves it does change the VRFs held there)
    desired.change([vm(1001, 5000, "s11")], [])
    assert 7000 in asked
    for name, compiler in desired.tors.items():
        compiler.take_changes()
        assert compiler.state == compile_tor(
            desired.fabric, desired.vms.values(), name, desired.alloc, desired.enc
        )


def test_a_vni_rebuilt_encodes_its_unchanged_entry_once(desired, monkeypatch):
    built: Counter[int] = Counter()
    vni_config = desired.enc.entries.vni_config

    def counting(vni, *args):
        built[vni] += 1
        return vni_config(vni, *args)

    monkeypatch.setattr(desired.enc.entries, "vni_config", counting)
    for i in range(1000, 1010):  # each change followed by a pass (the unit rebuilt)
        desired.change([vm(i, 7100, "s12")], [])
        for compiler in desired.tors.values():
            compiler.take_changes()
    # Once at most, for ten passes: the first may encode it (the builder
    # counted here is a new one to the encoder), the others keep it.
    assert set(built) <= {7100}, built
    assert built[7100] <= 1


def test_a_learned_route_looks_only_at_its_own_vrf():
    """200 tenants, each a VRF with one routed VNI and a VM on each ToR; a
    host route learned into one VRF, then another VRF's, then withdrawn."""
    fabric = two_tor_fabric()
    fabric.anycast_gateway_mac = "00:00:5e:00:01:01"
    servers = ("s11", "s21")
    vms = []
    for k, vni in enumerate(VNIS):
        fabric.vrfs[f"t{k}"] = Vrf(f"t{k}", 60000 + k)
        subnet = Subnet("172.16.0.0/24", "172.16.0.254")
        fabric.vnis[vni] = Vni(vni, f"t{k}", vrf=f"t{k}", subnets=(subnet,))
        for j in (0, 1):
            mac = f"00:00:0d:{j:02x}:{k >> 8:02x}:{k & 255:02x}"
            vms.append(Vm(f"t{k}-{j}", mac, (f"172.16.0.{j + 1}",), vni, servers[j], 100 + k))
    desired = DesiredState(fabric, Encoder(PipelineEntries(bmv2_pipeline().p4info)), Allocations())
    desired.change(vms, [])
    for compiler in desired.tors.values():
        compiler.take_changes()

    def host(k: int) -> LearnedHost:
        return LearnedHost(f"t{k}", "172.16.0.99", "10.9.9.9", "02:fe:00:00:00:09", 60000 + k,
                           7000 + k, "02:fe:00:00:01:01")  # fmt: skip

    asked: Counter[str] = Counter()
    vnis_of = routing.vnis_of

    def counting(fabric, vrf):
        asked[vrf] += 1
        return vnis_of(fabric, vrf)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(routing, "vnis_of", counting)
        desired.set_learned(Learned.of([], hosts=[host(7)]))
        desired.set_learned(Learned.of([], hosts=[host(7), host(42)]))
        desired.set_learned(Learned.of([], hosts=[host(42)]))
    assert set(asked) <= {"t7", "t42"}, sorted(asked)
    for name, compiler in desired.tors.items():
        compiler.take_changes()
        assert compiler.state == compile_tor(
            fabric, desired.vms.values(), name, desired.alloc, desired.enc, desired.learned
        )


def test_a_tor_with_nothing_of_a_vm_does_no_work_on_its_change(monkeypatch):
    """tor3 hosts VNI 6000 only; VMs of VNI 5000 come, move and go on tor1
    and tor2. Once one lands on tor3, tor3 works on it."""
    fabric = add_tor3(two_tor_fabric())
    desired = DesiredState(fabric, Encoder(PipelineEntries(bmv2_pipeline().p4info)), Allocations())
    desired.change([Vm("b3", "00:00:0b:00:00:03", (), 6000, "s31", 30)], [])
    for compiler in desired.tors.values():
        compiler.take_changes()
    tor3 = desired.tors["tor3"]
    built: list[str] = []
    vm_items = tor3._vm_items

    def counting(vm):
        built.append(vm.name if vm else "")
        return vm_items(vm)

    monkeypatch.setattr(tor3, "_vm_items", counting)
    a1 = vm(1, 5000, "s11")
    desired.change([a1], [])
    desired.change([replace(a1, server="s21")], [])
    desired.change([], [a1.name])
    assert built == []
    desired.change([vm(2, 5000, "s31")], [])
    assert "v2" in built
    for name, compiler in desired.tors.items():
        compiler.take_changes()
        assert compiler.state == compile_tor(
            fabric, desired.vms.values(), name, desired.alloc, desired.enc
        )
