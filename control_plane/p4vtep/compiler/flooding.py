"""Builder: a VNI's parameters and head-end replication on one ToR.

Per VNI hosted here: its vni_config entry and its flood group, a multicast
group with every copy: local VFs and one per remote VTEP hosting the VNI (our
other ToRs and external VTEPs that asked for the VNI's BUM). BUM that came
from the fabric takes the same group; egress drops its copies toward remote
VTEPs (replication.p4). Per remote VTEP that shares a VNI with this ToR: the
flood_replica entry that encapsulates a copy toward it.
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Iterable

from ..dataplane.limits import VTEP_REPLICA_BASE
from ..model.allocation import Allocations, external_vtep_key
from ..model.fabric import Fabric, Tor, Uplink
from .encode import Encoder
from .switch_state import Encoded


class OrderedCopies:
    """A VNI's local copies on one ToR, (port, VM index) kept in order, each
    with its encoded replica beside it: the VNI's group is rewritten whole
    on every change of its members (a group entry carries all its
    copies), and joining stored encodings costs a fraction of sorting the
    copies and looking each one up again."""

    __slots__ = ("enc", "keys", "wire")

    def __init__(self, enc: Encoder, copies: Iterable[tuple[int, int]] = ()) -> None:
        self.enc = enc
        self.keys = sorted(copies)
        self.wire = [enc.replica(copy) for copy in self.keys]

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, copy: tuple[int, int]) -> None:
        at = bisect.bisect_left(self.keys, copy)
        self.keys.insert(at, copy)
        self.wire.insert(at, self.enc.replica(copy))

    def remove(self, copy: tuple[int, int]) -> None:
        at = bisect.bisect_left(self.keys, copy)
        if at == len(self.keys) or self.keys[at] != copy:
            raise KeyError(copy)
        del self.keys[at], self.wire[at]

    def with_extra(self, extra: Iterable[tuple[int, int]]) -> list[bytes]:
        """The encoded copies with ``extra`` ones (a few) merged in order."""
        out: list[bytes] = []
        done = 0
        for copy in sorted(extra):
            at = bisect.bisect_left(self.keys, copy)
            out += self.wire[done:at]
            out.append(self.enc.replica(copy))
            done = at
        out += self.wire[done:]
        return out


def flood_group(vni_index: int) -> int:
    """The multicast group of a VNI index: the index itself (VNI indexes
    start at 1; group 0 is "no group")."""
    return vni_index


def flood_uplink(tor: Tor, remote_vtep_ip: str) -> Uplink:
    """The uplink that carries flood copies toward one remote VTEP (stable)."""
    return tor.uplinks[zlib.crc32(remote_vtep_ip.encode()) % len(tor.uplinks)]


def vni(
    enc: Encoder,
    fabric: Fabric,
    tor_name: str,
    alloc: Allocations,
    vni_id: int,
    local_copies: OrderedCopies,
    remote_tors: Iterable[str],
    external: Iterable[str] = (),
) -> list[Encoded]:
    """``local_copies``: (port, VM index) of the VNI's VMs on this ToR;
    ``remote_tors``: the other ToRs hosting the VNI; ``external``: the
    external VTEPs (their IPs) that want the VNI's BUM."""
    spec = fabric.vnis[vni_id]
    index = alloc.vni[vni_id]
    if not spec.flood:
        return [enc.vni_config(vni_id, index, spec.traffic_class, 0)]
    group = flood_group(index)
    tor = fabric.tors[tor_name]
    remote = [
        (flood_uplink(tor, fabric.tors[t].vtep_ip).port, VTEP_REPLICA_BASE + alloc.tor[t])
        for t in remote_tors
    ]
    remote += [
        (flood_uplink(tor, ip).port, VTEP_REPLICA_BASE + alloc.tor[external_vtep_key(ip)])
        for ip in external
    ]
    return [
        enc.vni_config(vni_id, index, spec.traffic_class, group),
        enc.flood_group_of(group, local_copies.with_extra(remote)),
    ]


def replicas(
    enc: Encoder,
    fabric: Fabric,
    tor_name: str,
    alloc: Allocations,
    remote_tors: Iterable[str],
    external: Iterable[str] = (),
) -> list[Encoded]:
    """One flood_replica entry per remote VTEP that shares a VNI with this
    ToR: ``remote_tors`` (ours) and ``external`` (external VTEPs' IPs)."""
    tor = fabric.tors[tor_name]
    out = []
    for other_name in sorted(remote_tors):
        other = fabric.tors[other_name]
        out.append(
            enc.replica_to_vtep(
                VTEP_REPLICA_BASE + alloc.tor[other_name],
                other.vtep_ip,
                flood_uplink(tor, other.vtep_ip).next_hop_mac,
            )
        )
    for ip in sorted(external):
        out.append(
            enc.replica_to_vtep(
                VTEP_REPLICA_BASE + alloc.tor[external_vtep_key(ip)],
                ip,
                flood_uplink(tor, ip).next_hop_mac,
            )
        )
    return out
