"""Data-plane counters (per VM, per VNI, drops) read from the ToRs.

The one counter-collection path: the API's GetCounters and the Prometheus
collector both call ``CounterReader.collect``. Each ToR is read in one
P4Runtime Read through its supervisor's session; a ToR that cannot be read
(not connected, or the read fails) is named in ``Counters.unreachable`` and
the others are still answered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import grpc

from ..controller import Controller
from ..dataplane.drop_reasons import DropReason
from ..dataplane.entries import (
    COLOR_COUNTERS,
    EGRESS_DROP_COUNTER,
    INGRESS_DROP_COUNTER,
    PORT_SECURITY_DROP_COUNTER,
    PORT_SECURITY_REASONS,
    VM_RX_COUNTER,
    VM_TX_COUNTER,
    VNI_RX_COUNTER,
    VNI_TX_COUNTER,
    color_index,
    port_security_index,
)
from ..dataplane.targets import profile
from ..model.fabric import Fabric, Vm
from ..runtime.client import P4RuntimeError
from ..runtime.protos import p4runtime_pb2

# Up to this many indices of one counter are read one by one; more, and the
# whole array is read in one entity (BMv2 answers a wildcard with every cell).
MAX_SINGLE_READS = 16


class Traffic(NamedTuple):
    packets: int
    bytes: int


NO_TRAFFIC = Traffic(0, 0)
COLORS = ("green", "yellow", "red")


def add(a: Traffic, b: Traffic) -> Traffic:
    return Traffic(a.packets + b.packets, a.bytes + b.bytes)


@dataclass(frozen=True)
class VmCounters:
    name: str
    tor: str
    tx: Traffic  # sent by the VM
    rx: Traffic  # delivered to the VM
    # What the VM's meters coloured, per direction its policy meters ("tx",
    # "rx": unicast and flood copies together): colour -> traffic. RED is
    # what the meter dropped (METER_RED_TX/RX). Empty for a direction the
    # VM's policy does not meter (its frames pass no meter).
    colors: dict[str, dict[str, Traffic]] = field(default_factory=dict)
    # What port security dropped of what the VM sent, per reason (the drop
    # reasons' names in lower case, entries.PORT_SECURITY_REASONS); empty when
    # the ToR's pipeline does not count them.
    port_security: dict[str, Traffic] = field(default_factory=dict)


@dataclass(frozen=True)
class VniCounters:
    vni: int
    tor: str
    tx: Traffic  # sent by the VNI's VMs on this ToR
    rx: Traffic  # delivered to them


@dataclass
class Counters:
    vms: list[VmCounters] = field(default_factory=list)
    vnis: list[VniCounters] = field(default_factory=list)
    drops: dict[str, dict[str, int]] = field(default_factory=dict)  # ToR -> reason -> packets
    unreachable: dict[str, str] = field(default_factory=dict)  # ToR -> why it was not read


@dataclass
class _TorPlan:
    """Counter cells to read from one ToR (besides its drop counters)."""

    indices: dict[str, set[int]] = field(default_factory=dict)  # counter -> indices

    def want(self, counter: str, index: int) -> None:
        self.indices.setdefault(counter, set()).add(index)


class CounterReader:
    """Reads counters through the supervisors' sessions."""

    def __init__(self, controller: Controller) -> None:
        self.c = controller

    def collect(
        self, vms: Iterable[str] | None = None, vnis: Iterable[int] | None = None
    ) -> Counters:
        """Counters of ``vms`` and ``vnis`` (None: every one) and the drops of
        every ToR. Raises NotFound for a VM name the controller does not know."""
        vm_places, vni_places = self.c.placements(vms, vnis)  # NotFound for an unknown VM
        view = self.c.desired_view()
        # (name, ToR, index or None when the VM has no index yet)
        vm_rows = [(p.name, p.tor, p.index) for p in vm_places]
        # (vni, index, ToRs hosting it), for the VNIs that have an index
        vni_rows = [(p.vni, p.index, p.tors) for p in vni_places if p.index is not None]
        all_tors = sorted(self.c.supervisors)

        plans = {tor: _TorPlan() for tor in all_tors}
        # (name -> the directions its policy meters)
        metered = {name: _metered(view.fabric, view.vms.get(name)) for name, _, _ in vm_rows}
        colors = {
            tor: dict(zip(COLORS, _color_values(view.fabric, tor), strict=True)) for tor in all_tors
        }
        guarded = {tor: self._counts_port_security(tor) for tor in all_tors}
        for name, tor, index in vm_rows:
            if index is not None:
                plans[tor].want(VM_TX_COUNTER, index)
                plans[tor].want(VM_RX_COUNTER, index)
                if guarded[tor]:
                    for reason in PORT_SECURITY_REASONS:
                        plans[tor].want(
                            PORT_SECURITY_DROP_COUNTER, port_security_index(index, reason)
                        )
                for direction in metered[name]:
                    for counter in self._color_counters(tor, direction):
                        for value in colors[tor].values():
                            plans[tor].want(counter, color_index(index, value))
        for _, index, tors in vni_rows:
            for tor in tors:
                plans[tor].want(VNI_TX_COUNTER, index)
                plans[tor].want(VNI_RX_COUNTER, index)

        result = Counters()
        cells: dict[str, dict[tuple[str, int | None], Traffic]] = {}
        for tor, plan in plans.items():
            try:
                cells[tor] = self._read_tor(tor, plan)
            except (ConnectionError, P4RuntimeError, grpc.RpcError) as exc:
                result.unreachable[tor] = str(exc) or type(exc).__name__

        def cell(tor: str, counter: str, index: int | None) -> Traffic:
            return cells[tor].get((counter, index), NO_TRAFFIC)  # a VM with no index: zero

        def colored(tor: str, direction: str, index: int | None) -> dict[str, Traffic]:
            out = {}
            for color, value in colors[tor].items():
                total = NO_TRAFFIC
                for counter in self._color_counters(tor, direction):
                    if index is not None:
                        total = add(total, cell(tor, counter, color_index(index, value)))
                out[color] = total
            return out

        result.vms = [
            VmCounters(
                name,
                tor,
                cell(tor, VM_TX_COUNTER, i),
                cell(tor, VM_RX_COUNTER, i),
                {d: colored(tor, d, i) for d in metered[name] if self._color_counters(tor, d)},
                {
                    reason.name.lower(): cell(
                        tor,
                        PORT_SECURITY_DROP_COUNTER,
                        None if i is None else port_security_index(i, reason),
                    )
                    for reason in PORT_SECURITY_REASONS
                }
                if guarded[tor]
                else {},
            )
            for name, tor, i in vm_rows
            if tor in cells
        ]
        result.vnis = [
            VniCounters(vni, tor, cell(tor, VNI_TX_COUNTER, i), cell(tor, VNI_RX_COUNTER, i))
            for vni, i, tors in vni_rows
            for tor in tors
            if tor in cells
        ]
        for tor in sorted(cells):
            result.drops[tor] = {
                reason.name.lower(): cell(tor, INGRESS_DROP_COUNTER, reason).packets
                + cell(tor, EGRESS_DROP_COUNTER, reason).packets
                for reason in DropReason
            }
        return result

    def _color_counters(self, tor: str, direction: str) -> list[str]:
        """The colour counters of ``direction`` the ToR's pipeline has (Tofino
        1 has none: docs/tofino.md)."""
        entries = self.c.tor_entries.get(tor)
        if entries is None:
            return list(COLOR_COUNTERS[direction])
        return [name for name in COLOR_COUNTERS[direction] if entries.has_counter(name)]

    def _counts_port_security(self, tor: str) -> bool:
        """Whether the ToR's pipeline counts port security's drops per VM."""
        entries = self.c.tor_entries.get(tor)
        return entries is not None and entries.has_counter(PORT_SECURITY_DROP_COUNTER)

    def _read_tor(self, tor: str, plan: _TorPlan) -> dict[tuple[str, int | None], Traffic]:
        """One Read of every counter cell in ``plan``: (counter, index) -> traffic."""
        supervisor = self.c.supervisors[tor]
        conn = supervisor.conn
        if conn is None:
            why = supervisor.status.last_error
            raise ConnectionError(f"not connected ({why})" if why else "not connected")
        entries = self.c.tor_entries[tor]  # ids differ per target
        wanted: list[p4runtime_pb2.CounterEntry] = []
        for counter, indices in sorted(plan.indices.items()):
            if len(indices) > MAX_SINGLE_READS:
                wanted.append(entries.counter(counter))
            else:
                wanted.extend(entries.counter(counter, i) for i in sorted(indices))
        wanted += [entries.counter(INGRESS_DROP_COUNTER), entries.counter(EGRESS_DROP_COUNTER)]
        names = {
            entries.p4info.counter(name).preamble.id: name
            for name in {*plan.indices, INGRESS_DROP_COUNTER, EGRESS_DROP_COUNTER}
        }
        return {
            (names[e.counter_entry.counter_id], e.counter_entry.index.index): Traffic(
                e.counter_entry.data.packet_count, e.counter_entry.data.byte_count
            )
            for e in conn.read(*wanted)
        }


def _metered(fabric: Fabric, vm: Vm | None) -> tuple[str, ...]:
    """The directions ("tx", "rx") the VM's QoS policy meters."""
    policy = fabric.policies.get(vm.qos) if vm is not None and vm.qos else None
    if policy is None:
        return ()
    return tuple(d for d in ("tx", "rx") if getattr(policy, d) is not None)


def _color_values(fabric: Fabric, tor: str) -> tuple[int, int, int]:
    """GREEN, YELLOW, RED as the ToR's chip numbers them (RED: 2 on BMv2, 3 on Tofino)."""
    target = fabric.tors[tor].target if tor in fabric.tors else "bmv2"
    prof = profile(target)
    return 0, prof.meter_yellow, prof.meter_red
