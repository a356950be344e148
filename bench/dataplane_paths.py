"""The programs and paths the data-plane benchmark compares: the one-table L2
baseline, p4vtep's local switching, VXLAN encap and VXLAN decap, the same three
routed between two subnets of a VRF (docs/routing.md), and, when the user
supplies a build of it, fabric-tna's bridging (``dataplane_peer``).
What each program is given (entries through P4Runtime), what each path is
sent (frames made with scapy) and what must come out of it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import BENCH
from dataplane_peer import install_fabric_bridging
from p4vtep.dataplane.artifacts import Pipeline
from p4vtep.dataplane.entries import LocalVmHop, PipelineEntries, PortRole, RemoteVtepHop
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw
from scapy.utils import wrpcap

ACCESS_1, ACCESS_2, UPLINK = 1, 2, 3
VTEP, REMOTE_VTEP = "10.0.0.1", "10.0.0.2"
ROUTER_MAC, SPINE_MAC = "00:aa:00:00:00:01", "00:5e:00:00:01:01"
VM_A = ("00:00:0a:00:00:01", "192.168.1.1", 10, 1)  # mac, ip, vlan, index; on port 1
VM_B = ("00:00:0a:00:00:02", "192.168.1.2", 20, 2)  # on port 2
VM_C = ("00:00:0a:00:00:03", "192.168.1.3")  # behind REMOTE_VTEP
VNI = 5000
# Routing: VNI 5000 (VM A's, 192.168.1.0/24) and 5001 (192.168.2.0/24) in one
# VRF. VM D is VM B's port in the other subnet; VM E is behind REMOTE_VTEP,
# whose router MAC routed frames are sent to in the L3 VNI.
ANYCAST_MAC, REMOTE_ROUTER_MAC = "00:00:5e:00:01:01", "00:aa:00:00:00:02"
VNI_DB, L3VNI = 5001, 50000
VM_D = ("00:00:0a:00:01:04", "192.168.2.4", 30, 4)  # on port 2
VM_E = ("00:00:0a:00:01:05", "192.168.2.5")  # behind REMOTE_VTEP
# Each routed path and the bridged path of the same kind it is compared with.
ROUTED_VS_BRIDGED = {"routed_local": "local", "routed_encap": "encap", "routed_decap": "decap"}
# The bridged paths of an earlier p4vtep build ("p4vtep-before", `--before REV`),
# each compared with today's in the same round.
BEFORE = {"before_local": "local", "before_encap": "encap", "before_decap": "decap"}
MARKER = b"P4VT"  # + 4-byte sequence number: the last 8 bytes of every frame


@dataclass(frozen=True)
class MeasuredPath:
    """One measured path: which program, in and out of which switch port."""

    name: str
    program: str  # "baseline" or "p4vtep"
    ingress: int
    egress: int


PATHS_NOW = {
    "local": MeasuredPath("local", "p4vtep", ACCESS_1, ACCESS_2),
    "encap": MeasuredPath("encap", "p4vtep", ACCESS_1, UPLINK),
    "decap": MeasuredPath("decap", "p4vtep", UPLINK, ACCESS_1),
}
PATHS = {
    "baseline": MeasuredPath("baseline", "baseline", ACCESS_1, ACCESS_2),
    **PATHS_NOW,
    "routed_local": MeasuredPath("routed_local", "p4vtep", ACCESS_1, ACCESS_2),
    "routed_encap": MeasuredPath("routed_encap", "p4vtep", ACCESS_1, UPLINK),
    "routed_decap": MeasuredPath("routed_decap", "p4vtep", UPLINK, ACCESS_1),
    # An earlier p4vtep build's bridged paths (only with --before).
    **{
        name: MeasuredPath(
            name, "p4vtep-before", PATHS_NOW[bridged].ingress, PATHS_NOW[bridged].egress
        )
        for name, bridged in BEFORE.items()
    },
    # The peer (only with a user-supplied build): bridging, VM A to VM B.
    "fabric": MeasuredPath("fabric", "fabric-tna", ACCESS_1, ACCESS_2),
}


def paths_of(programs: Mapping[str, Pipeline]) -> list[str]:
    """The paths whose program is loaded (the peer's only when supplied; the
    routed ones only when the p4vtep build routes)."""
    p4vtep = programs.get("p4vtep")
    routes = p4vtep is not None and PipelineEntries(p4vtep.p4info).routing
    return [
        name
        for name, path in PATHS.items()
        if path.program in programs and (routes or name not in ROUTED_VS_BRIDGED)
    ]


def compile_v1model(source: Path, out: Path) -> Pipeline:
    """A v1model program compiled for BMv2 into ``out`` (JSON and P4Info
    named after the source)."""
    p4c = os.environ.get("P4C", "p4c")
    p4info = out / f"{source.stem}.p4info.txtpb"
    subprocess.run(
        [p4c, "--target", "bmv2", "--arch", "v1model", "-o", str(out)]
        + ["--p4runtime-files", str(p4info), str(source)],
        check=True,
        capture_output=True,
    )
    return Pipeline(p4info, out / f"{source.stem}.json")


def compile_baseline(out: Path) -> Pipeline:
    return compile_v1model(BENCH / "baseline" / "l2fwd.p4", out)


def switch_on(veths: VethSet, name: str, log_dir: Path, **options: Any) -> Bmv2Switch:
    """A BMv2 switch (not started) whose port N is the switch side of the
    Nth veth pair, on free Thrift and gRPC ports."""
    ports = {port: s for port, (s, _) in enumerate(veths.pairs, start=1)}
    return Bmv2Switch(name, 1, free_port(), free_port(), ports, log_dir=log_dir, **options)


def frame(path: str, size: int, seq: int) -> Packet:
    """A ``size``-byte tenant frame for ``path`` (decap: inside its VXLAN
    headers, 50 bytes more); flow ``seq`` and a marker at the very end."""
    path = BEFORE.get(path, path)  # (an earlier build is sent the same frames)

    def tenant(
        src_mac: str, src_ip: str, dst_mac: str, dst_ip: str, vlan: int | None = None
    ) -> Packet:
        head = Ether(src=src_mac, dst=dst_mac)
        if vlan is not None:
            head = head / Dot1Q(vlan=vlan)
        pkt = head / IP(src=src_ip, dst=dst_ip) / UDP(sport=1000 + seq % 1000, dport=5000)
        tail = MARKER + seq.to_bytes(4, "big")
        return pkt / Raw(b"\0" * max(0, size - len(pkt) - len(tail)) + tail)

    if path == "local":
        return tenant(VM_A[0], VM_A[1], VM_B[0], VM_B[1], VM_A[2])
    if path == "fabric":  # the same frame; VM B is on VM A's VLAN there
        return tenant(VM_A[0], VM_A[1], VM_B[0], VM_B[1], VM_A[2])
    if path == "encap":
        return tenant(VM_A[0], VM_A[1], VM_C[0], VM_C[1], VM_A[2])
    if path == "decap":
        return (
            Ether(src=SPINE_MAC, dst=ROUTER_MAC)
            / IP(src=REMOTE_VTEP, dst=VTEP)
            / UDP(sport=50000 + seq % 1000, dport=4789, chksum=0)
            / VXLAN(vni=VNI)
            / tenant(VM_C[0], VM_C[1], VM_A[0], VM_A[1])
        )
    if path == "routed_local":  # to the other subnet, through the anycast gateway
        return tenant(VM_A[0], VM_A[1], ANYCAST_MAC, VM_D[1], VM_A[2])
    if path == "routed_encap":
        return tenant(VM_A[0], VM_A[1], ANYCAST_MAC, VM_E[1], VM_A[2])
    if path == "routed_decap":  # in the L3 VNI, to our router MAC
        return (
            Ether(src=SPINE_MAC, dst=ROUTER_MAC)
            / IP(src=REMOTE_VTEP, dst=VTEP)
            / UDP(sport=50000 + seq % 1000, dport=4789, chksum=0)
            / VXLAN(vni=L3VNI)
            / tenant(REMOTE_ROUTER_MAC, VM_E[1], ROUTER_MAC, VM_A[1])
        )
    if path == "baseline":  # a plain frame of the same size
        return tenant("00:00:00:00:00:01", "1.1.1.1", "00:00:00:00:00:02", "2.2.2.2")
    raise ValueError(f"unknown path {path!r}")


def write_pcap(directory: Path, path: str, size: int, flows: int) -> Path:
    """``flows`` distinct frames (different UDP ports), replayed in a loop."""
    out = directory / f"{path}_{size}.pcap"
    wrpcap(str(out), [frame(path, size, seq) for seq in range(flows)])
    return out


def check_output(path: str, size: int, out: bytes) -> str | None:
    """Why ``out`` is not what ``path`` must make of frame(path, size, seq), or None."""
    path = BEFORE.get(path, path)
    pkt = Ether(out)
    if path == "baseline":
        ok = len(out) == size and pkt[Ether].dst == "00:00:00:00:00:02"
    elif path == "local":
        ok = Dot1Q in pkt and pkt[Dot1Q].vlan == VM_B[2] and pkt[Ether].dst == VM_B[0]
    elif path == "fabric":  # bridged unchanged, tag included
        ok = (
            len(out) == size
            and Dot1Q in pkt
            and pkt[Dot1Q].vlan == VM_A[2]
            and pkt[Ether].dst == VM_B[0]
        )
    elif path == "encap":
        ok = (
            VXLAN in pkt
            and pkt[VXLAN].vni == VNI
            and pkt[IP].dst == REMOTE_VTEP
            and pkt[Ether].dst == SPINE_MAC
            and pkt[VXLAN].payload[Ether].dst == VM_C[0]
        )
    elif path == "decap":
        ok = (
            VXLAN not in pkt
            and Dot1Q in pkt
            and pkt[Dot1Q].vlan == VM_A[2]
            and pkt[Ether].dst == VM_A[0]
        )
    elif path == "routed_local":
        ok = (
            Dot1Q in pkt
            and pkt[Dot1Q].vlan == VM_D[2]
            and (pkt[Ether].src, pkt[Ether].dst) == (ANYCAST_MAC, VM_D[0])
            and pkt[IP].ttl == 63
        )
    elif path == "routed_encap":
        inner = pkt[VXLAN].payload if VXLAN in pkt else None
        ok = (
            inner is not None
            and pkt[VXLAN].vni == L3VNI
            and pkt[IP].dst == REMOTE_VTEP
            and (inner[Ether].src, inner[Ether].dst) == (ROUTER_MAC, REMOTE_ROUTER_MAC)
            and inner[IP].ttl == 63
        )
    else:  # routed_decap
        ok = (
            VXLAN not in pkt
            and Dot1Q in pkt
            and pkt[Dot1Q].vlan == VM_A[2]
            and (pkt[Ether].src, pkt[Ether].dst) == (ANYCAST_MAC, VM_A[0])
            and pkt[IP].ttl == 63
        )
    return None if ok else f"{path}: unexpected output {pkt.summary()}"


def install_p4vtep(conn: SwitchConnection, pipeline: Pipeline) -> None:
    """Two local VMs on two access ports, one remote VM behind the uplink; with a
    routing pipeline, their VNI routed in a VRF with a second subnet (a VM on
    port 2, one behind the uplink), as the controller would write it."""
    e = PipelineEntries(pipeline.p4info)
    vrf = L3VNI if e.routing else 0  # (an older build, without routing, bridges only)
    conn.insert(
        e.port_role(ACCESS_1, PortRole.ACCESS),
        e.port_role(ACCESS_2, PortRole.ACCESS),
        e.port_role(UPLINK, PortRole.FABRIC),
        e.my_vtep(VTEP),
        e.vni_config(VNI, 1, 0, 1, 2),
        e.access_binding(ACCESS_1, VM_A[2], VNI, VM_A[3], VM_A[0], vrf),
        e.access_binding(ACCESS_2, VM_B[2], VNI, VM_B[3], VM_B[0], vrf),
        e.mac_to_local_vm(VNI, VM_A[0], ACCESS_1, VM_A[2], VM_A[3]),
        e.mac_to_local_vm(VNI, VM_B[0], ACCESS_2, VM_B[2], VM_B[3]),
        e.mac_to_remote_vtep(VNI, VM_C[0], REMOTE_VTEP),
        e.next_hop_member(1, UPLINK, SPINE_MAC),
    )
    conn.insert(e.ecmp_group(1, [1]))
    conn.insert(e.underlay_route(REMOTE_VTEP, 32, group_id=1))
    conn.modify(e.local_vtep(VTEP, ROUTER_MAC))
    if e.routing:
        install_routing(conn, e)


def install_routing(conn: SwitchConnection, e: PipelineEntries) -> None:
    remote = RemoteVtepHop(REMOTE_VTEP, REMOTE_ROUTER_MAC, L3VNI)
    conn.insert(
        e.vni_config(VNI_DB, 3, 0, 0, 0),
        e.l3vni_config(L3VNI, 0, 0),
        e.mac_to_router(VNI, ANYCAST_MAC, ANYCAST_MAC),
        e.mac_to_router(L3VNI, ROUTER_MAC, ANYCAST_MAC),
        e.access_binding(ACCESS_2, VM_D[2], VNI_DB, VM_D[3], VM_D[0], L3VNI),
        e.host_route(L3VNI, VM_A[1], LocalVmHop(ACCESS_1, VM_A[2], VM_A[3], 1, VM_A[0])),
        e.host_route(L3VNI, VM_D[1], LocalVmHop(ACCESS_2, VM_D[2], VM_D[3], 3, VM_D[0])),
        e.host_route(L3VNI, VM_E[1], remote),
    )


def install_baseline(conn: SwitchConnection, pipeline: Pipeline) -> None:
    for ingress, egress in ((ACCESS_1, ACCESS_2), (UPLINK, ACCESS_1)):
        conn.insert(
            entities.table_entry(
                pipeline.p4info, "port_forward", {"port": ingress}, "forward", {"port": egress}
            )
        )


def install_fabric(conn: SwitchConnection, pipeline: Pipeline) -> None:
    install_fabric_bridging(conn, pipeline, VM_A[2], [(ACCESS_1, VM_A[0]), (ACCESS_2, VM_B[0])])


INSTALL: dict[str, Callable[[SwitchConnection, Pipeline], None]] = {
    "baseline": install_baseline,
    "p4vtep": install_p4vtep,
    "p4vtep-before": install_p4vtep,
    "fabric-tna": install_fabric,
}


def pipeline_at(rev: str, out: Path) -> Pipeline:
    """The committed BMv2 build of p4vtep at git revision ``rev`` (its JSON and
    P4Info, as that commit's `make p4` left them)."""
    build = "p4src/v1model/build"
    files = {}
    for name in ("p4vtep.json", "p4vtep.p4info.txtpb"):
        data = subprocess.run(
            ["git", "-C", str(BENCH.parent), "show", f"{rev}:{build}/{name}"],
            check=True,
            capture_output=True,
        ).stdout
        files[name] = out / f"before-{name}"
        files[name].write_bytes(data)
    return Pipeline(files["p4vtep.p4info.txtpb"], files["p4vtep.json"])
