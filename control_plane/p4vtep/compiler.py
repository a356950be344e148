"""Desired state -> the P4Runtime entities one ToR must hold.

Pure: the same fabric, VMs and allocations always give the same entities, in
canonical form, keyed by what identifies each on the switch. The reconciler
diffs them against what it reads back.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .allocation import IndexSpace
from .dataplane.entries import MeterRates, PipelineEntries, PortRole
from .dataplane.limits import TOR_INDEX_MAX, VM_INDEX_MAX, VNI_INDEX_MAX, VTEP_REPLICA_BASE
from .model import Fabric, Tor, Uplink, Vm
from .runtime.entities import entity_key, to_entity
from .runtime.protos import p4runtime_pb2

ECMP_GROUP_ID = 1


@dataclass
class Allocations:
    """Every index the controller hands out, per fabric."""

    vni: IndexSpace = field(default_factory=lambda: IndexSpace("vni", 1, VNI_INDEX_MAX))
    tor: IndexSpace = field(default_factory=lambda: IndexSpace("tor", 0, TOR_INDEX_MAX))
    vm: dict[str, IndexSpace] = field(default_factory=dict)  # per ToR

    def spaces(self) -> list[IndexSpace]:
        return [self.vni, self.tor, *self.vm.values()]

    @property
    def dirty(self) -> bool:
        return any(space.dirty for space in self.spaces())

    def vm_space(self, tor: str) -> IndexSpace:
        if tor not in self.vm:
            self.vm[tor] = IndexSpace(f"vm@{tor}", 1, VM_INDEX_MAX)
        return self.vm[tor]


def flood_groups(vni_index: int) -> tuple[int, int]:
    """(flood group, local flood group) of a VNI index."""
    return 2 * vni_index - 1, 2 * vni_index


def flood_uplink(tor: Tor, remote_vtep_ip: str) -> Uplink:
    """The uplink that carries flood copies toward one remote VTEP (stable)."""
    return tor.uplinks[zlib.crc32(remote_vtep_ip.encode()) % len(tor.uplinks)]


def rates(r) -> MeterRates:
    return MeterRates(r.cir, r.cburst, r.pir, r.pburst)


class CompileCache:
    """Entities already built for a VM in a given context, per ToR.

    A VM's entities depend only on the VM (a frozen value), its index and
    port, or its remote VTEP; when none of these changed, a recompile reuses
    them instead of encoding again. Entries not used by the last compile of
    a ToR are dropped."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[tuple, list]] = {}
        self._used: dict[str, dict[tuple, list]] = {}

    def begin(self, tor: str) -> None:
        self._used[tor] = {}

    def end(self, tor: str) -> None:
        self._kept[tor] = self._used.pop(tor)

    def get(self, tor: str, key: tuple, build) -> list:
        items = self._kept.get(tor, {}).get(key)
        if items is None:
            items = build()
        self._used[tor][key] = items
        return items


@dataclass
class CompiledTor:
    """Entities keyed by identity, plus the default entry and meter configs,
    which P4Runtime can only MODIFY."""

    entities: dict[tuple, p4runtime_pb2.Entity] = field(default_factory=dict)
    defaults: dict[tuple, p4runtime_pb2.Entity] = field(default_factory=dict)
    meters: dict[tuple, p4runtime_pb2.Entity] = field(default_factory=dict)
    vm_index: dict[str, int] = field(default_factory=dict)
    owner: dict[tuple, str] = field(default_factory=dict)  # entity key -> the VM it serves

    def add(self, message) -> None:
        entity = to_entity(message)
        self.entities[entity_key(entity)] = entity

    def add_keyed(
        self, items: list[tuple[tuple, p4runtime_pb2.Entity]], vm: str | None = None
    ) -> None:
        for key, entity in items:
            self.entities[key] = entity
            if vm is not None:
                self.owner[key] = vm


def _keyed(*messages) -> list[tuple[tuple, p4runtime_pb2.Entity]]:
    entities = [to_entity(m) for m in messages]
    return [(entity_key(x), x) for x in entities]


def compile_tor(
    fabric: Fabric,
    vms: Iterable[Vm],
    tor_name: str,
    alloc: Allocations,
    entries: PipelineEntries,
    cache: CompileCache | None = None,
) -> CompiledTor:
    cache = cache or CompileCache()
    cache.begin(tor_name)
    try:
        return _compile_tor(fabric, vms, tor_name, alloc, entries, cache)
    finally:
        cache.end(tor_name)


def _compile_tor(
    fabric: Fabric,
    vms: Iterable[Vm],
    tor_name: str,
    alloc: Allocations,
    entries: PipelineEntries,
    cache: CompileCache,
) -> CompiledTor:
    tor = fabric.tors[tor_name]
    out = CompiledTor()
    e = entries
    vms = sorted(vms, key=lambda v: v.name)
    local = [vm for vm in vms if fabric.servers[vm.server].tor == tor_name]
    local_names = {vm.name for vm in local}
    local_vnis = {vm.vni for vm in local}
    remote = [vm for vm in vms if vm.vni in local_vnis and vm.name not in local_names]

    # Ports, VTEP identity.
    for server in sorted(fabric.servers.values(), key=lambda s: s.port):
        if server.tor == tor_name:
            out.add(e.port_role(server.port, PortRole.ACCESS))
    for uplink in tor.uplinks:
        out.add(e.port_role(uplink.port, PortRole.FABRIC))
    out.add(e.my_vtep(tor.vtep_ip))
    default = to_entity(e.local_vtep(tor.vtep_ip, tor.router_mac))
    out.defaults[entity_key(default)] = default

    # Underlay: one ECMP group over every uplink, a /32 per remote VTEP.
    for uplink in tor.uplinks:
        out.add(e.next_hop_member(uplink.port + 1, uplink.port, uplink.next_hop_mac))
    out.add(
        e.ecmp_group(
            ECMP_GROUP_ID, [u.port + 1 for u in tor.uplinks], max_size=max(16, len(tor.uplinks))
        )
    )
    for other in sorted(fabric.tors.values(), key=lambda t: t.name):
        if other.name != tor_name:
            out.add(e.underlay_route(other.vtep_ip, 32, group_id=ECMP_GROUP_ID))

    # VNIs present here, and who else hosts them.
    vm_space = alloc.vm_space(tor_name)
    for gone in vm_space.keys() - {vm.name for vm in local}:
        vm_space.release(gone)  # a VM that left this ToR frees its index
    remote_tors_of_vni: dict[int, set[str]] = defaultdict(set)
    for vm in remote:
        remote_tors_of_vni[vm.vni].add(fabric.servers[vm.server].tor)
    for vni in sorted(local_vnis):
        spec = fabric.vnis[vni]
        index = alloc.vni.get(vni)
        group, local_group = flood_groups(index) if spec.flood else (0, 0)
        out.add(e.vni_config(vni, index, spec.traffic_class, group, local_group))
        if spec.flood:
            local_copies = []
            for vm in local:
                if vm.vni == vni:
                    port = fabric.servers[vm.server].port
                    local_copies.append((port, vm_space.get(vm.name)))
            remote_copies = []
            for other_name in sorted(remote_tors_of_vni[vni]):
                other = fabric.tors[other_name]
                remote_copies.append(
                    (
                        flood_uplink(tor, other.vtep_ip).port,
                        VTEP_REPLICA_BASE + alloc.tor.get(other_name),
                    )
                )
            out.add(e.flood_group(group, local_copies + remote_copies))
            out.add(e.flood_group(local_group, local_copies))

    for other_name in sorted({t for tors in remote_tors_of_vni.values() for t in tors}):
        other = fabric.tors[other_name]
        out.add(
            e.replica_to_vtep(
                VTEP_REPLICA_BASE + alloc.tor.get(other_name),
                other.vtep_ip,
                flood_uplink(tor, other.vtep_ip).next_hop_mac,
            )
        )

    for vm in local:
        port = fabric.servers[vm.server].port
        index = vm_space.get(vm.name)
        out.vm_index[vm.name] = index
        out.add_keyed(
            cache.get(
                tor_name,
                ("local", vm, index, port),
                lambda: _keyed(
                    e.access_binding(port, vm.vlan, vm.vni, index, vm.mac),
                    e.mac_to_local_vm(vm.vni, vm.mac, port, vm.vlan, index),
                    e.replica_to_vm(index, vm.vlan, index),
                    *(e.arp_suppression(vm.vni, ip, vm.mac) for ip in vm.ips),
                ),
            ),
            vm.name,
        )
        policy = fabric.policies.get(vm.qos) if vm.qos else None
        for direction in ("tx", "rx"):
            r = getattr(policy, direction) if policy else None
            if r is not None:
                meter = to_entity(e.vm_meter(direction, index, rates(r)))
                out.meters[entity_key(meter)] = meter
    for vm in remote:
        vtep_ip = fabric.tors[fabric.servers[vm.server].tor].vtep_ip
        out.add_keyed(
            cache.get(
                tor_name,
                ("remote", vm, vtep_ip),
                lambda: _keyed(
                    e.mac_to_remote_vtep(vm.vni, vm.mac, vtep_ip),
                    *(e.arp_suppression(vm.vni, ip, vm.mac) for ip in vm.ips),
                ),
            ),
            vm.name,
        )
    return out
