"""The whole-state compile: desired state -> everything one ToR must hold.

Pure: the same fabric, VMs and allocations always give the same state. It
walks the whole population, so the controller does not use it per change;
it is the reference that the incremental path (``incremental``) must equal,
and what tests and tools compare switches against.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..dataplane.entries import PipelineEntries
from ..model.allocation import Allocations
from ..model.fabric import Fabric, Vm
from . import cpu_path, flooding, local_vm, ports, remote_vm, routing, underlay
from .encode import Encoder
from .learned import NOTHING, Learned
from .switch_state import Encoded, SwitchState


def compile_tor(
    fabric: Fabric,
    vms: Iterable[Vm],
    tor_name: str,
    alloc: Allocations,
    encoder: Encoder | PipelineEntries,
    learned: Learned = NOTHING,
) -> SwitchState:
    """Every index must already be allocated (``allocation.allocate``; an
    external VTEP's, by ``DesiredState.set_learned``). ``learned``: MACs,
    flood lists and VRF routes of external VTEPs (EVPN, static)."""
    enc = encoder if isinstance(encoder, Encoder) else Encoder(encoder)
    out = SwitchState()

    def add(items: list[Encoded]) -> None:
        for item in items:
            out.add(item)

    vms = sorted(vms, key=lambda v: v.name)
    local = [vm for vm in vms if fabric.servers[vm.server].tor == tor_name]
    local_vnis = {vm.vni for vm in local}
    remote = [
        vm for vm in vms if vm.vni in local_vnis and fabric.servers[vm.server].tor != tor_name
    ]
    vm_space = alloc.vm.get(tor_name)
    if local and vm_space is None:
        raise KeyError(f"vm@{tor_name}: no index allocated for {local[0].name!r}")

    add(ports.build(enc, fabric, tor_name))
    add(cpu_path.build(enc, fabric))
    add(underlay.build(enc, fabric, tor_name, learned.vteps()))

    remote_tors_of_vni: dict[int, set[str]] = defaultdict(set)
    for vm in remote:
        remote_tors_of_vni[vm.vni].add(fabric.servers[vm.server].tor)
    for vni in sorted(local_vnis):
        assert vm_space is not None
        copies = [
            (fabric.servers[vm.server].port, vm_space[vm.name]) for vm in local if vm.vni == vni
        ]
        external = sorted(learned.flood.get(vni, ()))
        tors = sorted(remote_tors_of_vni[vni])
        ordered = flooding.OrderedCopies(enc, copies)
        add(flooding.vni(enc, fabric, tor_name, alloc, vni, ordered, tors, external))
    every_remote_tor = {t for tors in remote_tors_of_vni.values() for t in tors}
    every_external = {ip for vni in local_vnis for ip in learned.flood.get(vni, ())}
    add(flooding.replicas(enc, fabric, tor_name, alloc, every_remote_tor, every_external))

    for vm in local:
        assert vm_space is not None
        add(local_vm.build(enc, fabric, vm, vm_space[vm.name], learned.holds(vm.vni, vm.mac)))
    for vm in remote:
        add(remote_vm.build(enc, fabric, vm, learned.holds(vm.vni, vm.mac)))
    for vni in sorted(local_vnis):
        in_vni = [vm for vm in vms if vm.vni == vni]
        add(remote_vm.learned(enc, learned.macs.get(vni, {}).values(), in_vni))

    vrfs = routing.vrfs_of(fabric, local_vnis)
    for vni in sorted(local_vnis):
        add(routing.vni_items(enc, fabric, vni))
    by_vrf: dict[str, list[Vm]] = defaultdict(list)
    for vm in vms:
        vrf_name = fabric.vnis[vm.vni].vrf
        if vrf_name in vrfs:
            by_vrf[vrf_name].append(vm)
    for vrf in sorted(vrfs):
        in_vrf = by_vrf[vrf]
        owners = routing.ip_owners(in_vrf)
        add(routing.vrf_items(enc, fabric, tor_name, vrf, alloc, owners, learned))
        for vm in in_vrf:
            add(routing.host_routes(enc, fabric, tor_name, vm, alloc, learned))
    return out
