"""The well-known peer of the data-plane benchmark: stratum/fabric-tna's
v1model pipeline (its profile "fabric", no extra defines) doing plain
bridging, so that the doc shows p4vtep against a program people know, on
the same BMv2, in the same run.

The project ships no copy of fabric-tna, no binary built from it and nothing
that builds it. A user who has compiled it (``fabric_v1model.p4`` with the
same p4c, bmv2 backend, v1model) names the directory holding its
``bmv2.json`` and ``p4info.txt`` with ``--peer`` or ``P4VTEP_PEER_FABRIC_TNA``;
without it the benchmark measures the baseline and p4vtep only and says so.

Bridging, as fabric-tna's own PTF bridging test sets it up: both access
ports tagged with the same VLAN (``filtering.ingress_port_vlan`` permits the
tagged frame, ``egress_next.egress_vlan`` pushes the tag back on the way
out), one ``forwarding.bridging`` entry per destination MAC leading to a
next id, and ``next.hashed`` sending that next id to a port through one
action-profile member. The frame is p4vtep's local-switching frame (VM A's
VLAN-tagged frame to VM B) with VM B on the same VLAN, since fabric bridges
within a VLAN where p4vtep maps each VF's VLAN to a VNI."""

from __future__ import annotations

import os
from pathlib import Path

from p4vtep.dataplane.artifacts import Pipeline
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection
from p4vtep.runtime.entities import Ternary

PEER_ENV = "P4VTEP_PEER_FABRIC_TNA"
# The fabric-tna commit the recorded figures were measured with (the
# newest snapshot available to the team; May 2022).
MEASURED_COMMIT = "fd3c3f0989ae6c2bb2384bdd1b5b7755168ba886"

PORT_TYPE_EDGE = 1  # fabric-tna's define.p4: an access port, not infrastructure
BRIDGING_PRIORITY = 10
VLAN_MASK = 0xFFF
MAC_MASK = (1 << 48) - 1


def peer_pipeline(directory: str | None) -> Pipeline | None:
    """The peer build in ``directory`` (or ``$P4VTEP_PEER_FABRIC_TNA``), or
    None when neither names one. A named directory without both files is
    an error, not a silent skip."""
    directory = directory or os.environ.get(PEER_ENV)
    if not directory:
        return None
    base = Path(directory)
    pipeline = Pipeline(base / "p4info.txt", base / "bmv2.json")
    missing = [p for p in (pipeline.p4info_path, pipeline.device_config_path) if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"fabric-tna peer: {', '.join(map(str, missing))} missing (compile "
            "fabric_v1model.p4 for the bmv2 backend into that directory)"
        )
    return pipeline


def install_fabric_bridging(
    conn: SwitchConnection,
    pipeline: Pipeline,
    vlan: int,
    hosts: list[tuple[int, str]],
) -> None:
    """Bridge ``hosts`` ((port, MAC) pairs) on ``vlan``, every port tagged."""
    p4info = pipeline.p4info
    for next_id, (port, mac) in enumerate(hosts, start=1):
        conn.insert(
            entities.table_entry(
                p4info,
                "FabricIngress.filtering.ingress_port_vlan",
                {"ig_port": port, "vlan_is_valid": 1, "vlan_id": Ternary(vlan, VLAN_MASK)},
                "FabricIngress.filtering.permit",
                {"port_type": PORT_TYPE_EDGE},
                priority=BRIDGING_PRIORITY,
            ),
            entities.table_entry(
                p4info,
                "FabricEgress.egress_next.egress_vlan",
                {"vlan_id": vlan, "eg_port": port},
                "FabricEgress.egress_next.push_vlan",
            ),
            entities.action_profile_member(
                p4info,
                "FabricIngress.next.hashed_profile",
                next_id,
                "FabricIngress.next.output_hashed",
                {"port_num": port},
            ),
        )
        conn.insert(
            entities.table_entry(
                p4info,
                "FabricIngress.forwarding.bridging",
                {"vlan_id": vlan, "eth_dst": Ternary(mac, MAC_MASK)},
                "FabricIngress.forwarding.set_next_id_bridging",
                {"next_id": next_id},
                priority=BRIDGING_PRIORITY,
            ),
            entities.table_entry(
                p4info, "FabricIngress.next.hashed", {"next_id": next_id}, member_id=next_id
            ),
        )
