"""Builder: a VNI's parameters and head-end replication on one ToR.

Per VNI hosted here: its vni_config entry and two multicast groups (every
copy: local VFs and one per remote VTEP hosting the VNI, our other ToRs and
external VTEPs that asked for the VNI's BUM; local VFs only, for BUM that came
from the fabric). Per remote VTEP that shares a VNI with this ToR: the
flood_replica entry that encapsulates a copy toward it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from ..allocation import Allocations, external_vtep_key
from ..dataplane.limits import VTEP_REPLICA_BASE
from ..model import Fabric, Tor, Uplink
from .encode import Encoder
from .state import Encoded


def flood_groups(vni_index: int) -> tuple[int, int]:
    """(flood group, local flood group) of a VNI index."""
    return 2 * vni_index - 1, 2 * vni_index


def flood_uplink(tor: Tor, remote_vtep_ip: str) -> Uplink:
    """The uplink that carries flood copies toward one remote VTEP (stable)."""
    return tor.uplinks[zlib.crc32(remote_vtep_ip.encode()) % len(tor.uplinks)]


def vni(
    enc: Encoder,
    fabric: Fabric,
    tor_name: str,
    alloc: Allocations,
    vni_id: int,
    local_copies: Iterable[tuple[int, int]],
    remote_tors: Iterable[str],
    external: Iterable[str] = (),
) -> list[Encoded]:
    """``local_copies``: (port, VM index) of the VNI's VMs on this ToR;
    ``remote_tors``: the other ToRs hosting the VNI; ``external``: the
    external VTEPs (their IPs) that want the VNI's BUM."""
    spec = fabric.vnis[vni_id]
    index = alloc.vni[vni_id]
    if not spec.flood:
        return [enc.vni_config(vni_id, index, spec.traffic_class, 0, 0)]
    group, local_group = flood_groups(index)
    tor = fabric.tors[tor_name]
    local = list(local_copies)
    remote = [
        (flood_uplink(tor, fabric.tors[t].vtep_ip).port, VTEP_REPLICA_BASE + alloc.tor[t])
        for t in remote_tors
    ]
    remote += [
        (flood_uplink(tor, ip).port, VTEP_REPLICA_BASE + alloc.tor[external_vtep_key(ip)])
        for ip in external
    ]
    return [
        enc.vni_config(vni_id, index, spec.traffic_class, group, local_group),
        enc.flood_group(group, local + remote),
        enc.flood_group(local_group, local),
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
