"""The programs and paths the data-plane benchmark compares: the one-table L2
baseline, p4vtep's local switching, VXLAN encap and VXLAN decap, the same three
routed between two subnets of a VRF (docs/routing.md), the six again with IPv6
tenant frames (bridged6_*, routed6_*), and, when the user supplies a build of
it, fabric-tna's bridging (``dataplane_peer``). Beside today's build: up to
MAX_BEFORE earlier committed builds' IPv4 paths (``before_*`` for the first
``--before``, ``before2_*``, ``before3_*``, ... for the next ones: programs
``p4vtep-before``, ``p4vtep-before2``, ...) and today's build bound
unguarded (program ``p4vtep-unguarded``, the same pipeline: its
``unguarded_*`` access paths; decap is never guarded, so it has none).
What each program is given (entries through P4Runtime: on a build with port
security, the local VMs bound guarded with their source guards, as the
controller binds a VM by default), what each path is sent (frames made with
scapy) and exactly what must come out of it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import BENCH
from dataplane_peer import install_fabric_bridging
from p4vtep.dataplane.artifacts import Pipeline
from p4vtep.dataplane.entries import (
    PORT_SECURITY_DROP_COUNTER,
    PORT_SECURITY_REASONS,
    LocalVmHop,
    PipelineEntries,
    PortRole,
    RemoteVtepHop,
    RouteHop,
    port_security_index,
    port_security_supported,
)
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection
from p4vtep.runtime.protos import p4runtime_pb2
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
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
# The same VMs' IPv6 addresses: 2001:db8:1::/64 in VNI 5000, 2001:db8:2::/64
# in VNI 5001 (the bridged6_* and routed6_* paths' tenant frames).
IP6: dict[tuple[Any, ...], str] = {
    VM_A: "2001:db8:1::1",
    VM_B: "2001:db8:1::2",
    VM_C: "2001:db8:1::3",
    VM_D: "2001:db8:2::4",
    VM_E: "2001:db8:2::5",
}
KINDS = ("local", "encap", "decap")
# Each routed path and the bridged path of the same kind (and IP version) it is
# compared with.
ROUTED_VS_BRIDGED = {
    **{f"routed_{kind}": kind for kind in KINDS},
    **{f"routed6_{kind}": f"bridged6_{kind}" for kind in KINDS},
}
IPV4_PATHS = (*KINDS, *(f"routed_{kind}" for kind in KINDS))
# Earlier p4vtep builds (`--before REV`, several allowed): the Nth one's
# program and the prefix of its paths; the first keeps the names results had
# when only one could be given.
MAX_BEFORE = 4


def before_program(n: int) -> str:
    """The program name of the ``n``th (0-based) earlier build."""
    return "p4vtep-before" if n == 0 else f"p4vtep-before{n + 1}"


def before_prefix(n: int) -> str:
    """The path prefix of the ``n``th (0-based) earlier build."""
    return "before_" if n == 0 else f"before{n + 1}_"


# Each earlier build's IPv4 paths, bridged and, when that build routes,
# routed -> today's path it is compared with in the same round.
BEFORE = {before_prefix(n) + path: path for n in range(MAX_BEFORE) for path in IPV4_PATHS}
# Today's build with its VMs bound unguarded (`--port-security both`): the
# access paths only (a frame from the fabric is never checked).
UNGUARDED_PROGRAM = "p4vtep-unguarded"
UNGUARDED = {f"unguarded_{path}": path for path in IPV4_PATHS if not path.endswith("decap")}
# Any measured path that stands for one of today's (sent the same frames,
# must make the same output).
STANDS_FOR = {**BEFORE, **UNGUARDED}
MARKER = b"P4VT"  # + 4-byte sequence number: the last 8 bytes of every frame
ENCAP_SPORT = slice(34, 36)  # the outer UDP source port (a flow hash) of an encap output


@dataclass(frozen=True)
class MeasuredPath:
    """One measured path: which program, in and out of which switch port."""

    name: str
    program: str  # "baseline", "p4vtep", "p4vtep-unguarded", "p4vtep-before[N]", "fabric-tna"
    ingress: int
    egress: int


PORTS = {"local": (ACCESS_1, ACCESS_2), "encap": (ACCESS_1, UPLINK), "decap": (UPLINK, ACCESS_1)}


def _p4vtep(name: str, program: str = "p4vtep") -> MeasuredPath:
    return MeasuredPath(name, program, *PORTS[name.rsplit("_", 1)[-1]])


# In the order a round runs them, one program after the other, so that each
# pair a target compares is at most 6 paths (12 windows, about 45 s) apart:
# the first earlier build's IPv4 paths (issue 37's 9be722a in `make
# bench-dataplane`) access paths first, today's unguarded access paths
# (against those), today's IPv4 paths decap first (against the first build's
# decap, and against the unguarded ones), the other earlier builds' in
# today's order (issue 38's 14b7d2b against today's), then IPv6 (bridged,
# routed).
ACCESS_FIRST = ("local", "encap", "routed_local", "routed_encap", "decap", "routed_decap")
DECAP_FIRST = ("decap", "routed_decap", "local", "encap", "routed_local", "routed_encap")
PATHS = {
    "baseline": MeasuredPath("baseline", "baseline", ACCESS_1, ACCESS_2),
    **{
        before_prefix(0) + p: _p4vtep(before_prefix(0) + p, before_program(0)) for p in ACCESS_FIRST
    },
    **{f"unguarded_{p}": _p4vtep(f"unguarded_{p}", UNGUARDED_PROGRAM) for p in ACCESS_FIRST[:4]},
    **{name: _p4vtep(name) for name in DECAP_FIRST},
    **{
        before_prefix(n) + p: _p4vtep(before_prefix(n) + p, before_program(n))
        for n in range(1, MAX_BEFORE)
        for p in DECAP_FIRST
    },
    **{
        name: _p4vtep(name)
        for prefix in ("bridged6_", "routed6_")
        for name in (prefix + kind for kind in KINDS)
    },
    # The peer (only with a user-supplied build): bridging, VM A to VM B.
    "fabric": MeasuredPath("fabric", "fabric-tna", ACCESS_1, ACCESS_2),
}


def families_routed(pipeline: Pipeline | None) -> set[int]:
    """The IP versions a p4vtep build routes (4 with the routing tables, 6
    with their IPv6 twins too); none for an older build (or None)."""
    if pipeline is None or not PipelineEntries(pipeline.p4info).routing:
        return set()
    try:
        pipeline.p4info.table("ipv6_host_route")
    except KeyError:
        return {4}
    return {4, 6}


def routed_family(path: str) -> int | None:
    """The IP version a path routes (an earlier build's or an unguarded path:
    the path it stands for); None for a bridged path."""
    path = STANDS_FOR.get(path, path)
    if path.startswith("routed6_"):
        return 6
    return 4 if path.startswith("routed_") else None


def paths_of(programs: Mapping[str, Pipeline | None]) -> list[str]:
    """The paths whose program is loaded (the peer's only when supplied; the
    routed ones only for the IP versions the p4vtep build routes)."""
    routes = {name: families_routed(p) for name, p in programs.items() if name.startswith("p4vtep")}
    return [
        name
        for name, path in PATHS.items()
        if path.program in programs
        and (routed_family(name) is None or routed_family(name) in routes.get(path.program, set()))
    ]


def compile_v1model(source: Path, out: Path, defines: Sequence[str] = ()) -> Pipeline:
    """A v1model program compiled for BMv2 into ``out`` (JSON and P4Info
    named after the source), with ``defines`` (-D) if given."""
    p4c = os.environ.get("P4C", "p4c")
    p4info = out / f"{source.stem}.p4info.txtpb"
    subprocess.run(
        [p4c, "--target", "bmv2", "--arch", "v1model", "-o", str(out)]
        + [f"-D{d}" for d in defines]
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


def _kind(path: str) -> tuple[str, bool, bool]:
    """(local, encap or decap; routed; IPv6) of a p4vtep path."""
    path = STANDS_FOR.get(path, path)
    kind = path.rsplit("_", 1)[-1]
    if kind not in KINDS:
        raise ValueError(f"unknown path {path!r}")
    return kind, path.startswith("routed"), path.startswith(("bridged6_", "routed6_"))


def frame(path: str, size: int, seq: int) -> Packet:
    """A ``size``-byte tenant frame for ``path`` (decap: inside its VXLAN
    headers, 50 bytes more); flow ``seq`` and a marker at the very end. An
    IPv6 frame is never shorter than its headers and the marker: at 64 B it
    is the smallest there is, 74 B tagged (14 + 4 + 40 + 8 + 8), 70 B
    untagged (inside decap's VXLAN)."""
    path = STANDS_FOR.get(path, path)  # (an earlier or unguarded build: the same frames)

    def tenant(
        src_mac: str, src_ip: str, dst_mac: str, dst_ip: str, vlan: int | None = None
    ) -> Packet:
        head = Ether(src=src_mac, dst=dst_mac)
        if vlan is not None:
            head = head / Dot1Q(vlan=vlan)
        l3 = IPv6(src=src_ip, dst=dst_ip) if ":" in src_ip else IP(src=src_ip, dst=dst_ip)
        pkt = head / l3 / UDP(sport=1000 + seq % 1000, dport=5000)
        tail = MARKER + seq.to_bytes(4, "big")
        return pkt / Raw(b"\0" * max(0, size - len(pkt) - len(tail)) + tail)

    if path == "baseline":  # a plain frame of the same size
        return tenant("00:00:00:00:00:01", "1.1.1.1", "00:00:00:00:00:02", "2.2.2.2")
    if path == "fabric":  # the local frame; VM B is on VM A's VLAN there
        return tenant(VM_A[0], VM_A[1], VM_B[0], VM_B[1], VM_A[2])
    kind, routed, v6 = _kind(path)

    def ip(vm: tuple[Any, ...]) -> str:
        return IP6[vm] if v6 else str(vm[1])

    if kind == "decap":  # bridged: VM C's frame in VM A's VNI; routed: in the L3 VNI
        inner = (
            tenant(REMOTE_ROUTER_MAC, ip(VM_E), ROUTER_MAC, ip(VM_A))
            if routed
            else tenant(VM_C[0], ip(VM_C), VM_A[0], ip(VM_A))
        )
        return (
            Ether(src=SPINE_MAC, dst=ROUTER_MAC)
            / IP(src=REMOTE_VTEP, dst=VTEP)
            / UDP(sport=50000 + seq % 1000, dport=4789, chksum=0)
            / VXLAN(vni=L3VNI if routed else VNI)
            / inner
        )
    # From VM A: bridged to VM B (local) or VM C (encap); routed through the
    # anycast gateway to VM D (local) or VM E (encap), in the other subnet.
    if routed:
        return tenant(
            VM_A[0], ip(VM_A), ANYCAST_MAC, ip(VM_D if kind == "local" else VM_E), VM_A[2]
        )
    dst = VM_B if kind == "local" else VM_C
    return tenant(VM_A[0], ip(VM_A), dst[0], ip(dst), VM_A[2])


def tenant_bytes(path: str, size: int) -> int:
    """How long ``path``'s tenant frame of nominal ``size`` is (decap: the
    frame inside VXLAN): ``size``, but for IPv6 at sizes below its smallest."""
    pkt = frame(path, size, 0)
    return len(pkt[VXLAN].payload if VXLAN in pkt else pkt)


def write_pcap(directory: Path, path: str, size: int, flows: int) -> Path:
    """``flows`` distinct frames (different UDP ports), replayed in a loop."""
    out = directory / f"{path}_{size}.pcap"
    wrpcap(str(out), [frame(path, size, seq) for seq in range(flows)])
    return out


def _retagged(pkt: Packet, vlan: int, src: str | None = None, dst: str | None = None) -> Packet:
    """The frame ``pkt`` (tagged or not) as delivered to a VF with ``vlan``,
    with other MACs if given."""
    payload = (pkt[Dot1Q] if Dot1Q in pkt else pkt[Ether]).payload.copy()
    eth = pkt[Ether]
    return Ether(src=src or eth.src, dst=dst or eth.dst) / Dot1Q(vlan=vlan) / payload


def _hop_decremented(pkt: Packet) -> Packet:
    """The IP packet of ``pkt`` routed: TTL (its checksum recomputed) or hop
    limit - 1, nothing else changed."""
    if IPv6 in pkt:
        ip6 = pkt[IPv6].copy()
        ip6.hlim -= 1
        return ip6
    ip4 = pkt[IP].copy()
    ip4.ttl -= 1
    ip4.chksum = None
    return ip4


def expected_output(path: str, sent: bytes) -> bytes:
    """The frame ``path`` must make of ``sent`` (one of frame(path, ...)),
    byte for byte; an encap output's outer UDP source port (the flow hash)
    is zero here and not compared (ENCAP_SPORT)."""
    pkt = Ether(sent)
    if path in ("baseline", "fabric"):  # forwarded unchanged, tag included
        return sent
    kind, routed, _ = _kind(path)
    out: Packet
    if kind == "local":
        out = (
            Ether(src=ANYCAST_MAC, dst=VM_D[0]) / Dot1Q(vlan=VM_D[2]) / _hop_decremented(pkt)
            if routed
            else _retagged(pkt, VM_B[2])
        )
    elif kind == "decap":  # the inner frame, to VM A's VF
        inner = pkt[VXLAN].payload
        out = (
            Ether(src=ANYCAST_MAC, dst=VM_A[0]) / Dot1Q(vlan=VM_A[2]) / _hop_decremented(inner)
            if routed
            else _retagged(inner, VM_A[2])
        )
    else:  # encap: to the remote VTEP through the spine; routed: in the L3 VNI
        inner = (
            Ether(src=ROUTER_MAC, dst=REMOTE_ROUTER_MAC) / _hop_decremented(pkt)
            if routed
            else Ether(src=pkt[Ether].src, dst=pkt[Ether].dst) / pkt[Dot1Q].payload.copy()
        )
        out = (
            Ether(src=ROUTER_MAC, dst=SPINE_MAC)
            / IP(src=VTEP, dst=REMOTE_VTEP, ttl=64, id=0, flags=0, tos=0)
            / UDP(sport=0, dport=4789, chksum=0)
            / VXLAN(vni=L3VNI if routed else VNI, flags=0x08)
            / inner
        )
    return bytes(out)


def check_output(path: str, sent: bytes, out: bytes) -> str | None:
    """Why ``out`` is not exactly what ``path`` must make of ``sent``, or None."""
    want = expected_output(path, sent)
    got = out
    if PATHS[path].egress == UPLINK and len(out) >= ENCAP_SPORT.stop:
        got = out[: ENCAP_SPORT.start] + b"\0\0" + out[ENCAP_SPORT.stop :]
    if got == want:
        return None
    at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    where = f"byte {at}" if at is not None else f"length {len(out)} (expected {len(want)})"
    return (
        f"{path}: unexpected output, first difference at {where}:\n"
        f"  got      {Ether(out)!r}\n  expected {Ether(want)!r}"
    )


def guarded(pipeline: Pipeline | None, port_security: bool) -> bool:
    """Whether a p4vtep build's VMs are bound with port security on (issue
    38): when it is asked for (``--port-security on``) and the build has it;
    an older build's are bound as that build's controller bound them."""
    return port_security and pipeline is not None and port_security_supported(pipeline.p4info)


def program_guarded(program: str, pipeline: Pipeline | None, port_security: bool) -> bool:
    """Whether ``program``'s VMs are bound guarded: as ``guarded``, but never
    for today's build loaded as ``p4vtep-unguarded``."""
    return program != UNGUARDED_PROGRAM and guarded(pipeline, port_security)


def bind_vm(
    e: PipelineEntries, port: int, vm: tuple[Any, ...], vni: int, vrf: int, guard: bool
) -> list[p4runtime_pb2.TableEntry]:
    """A local VM's access binding and, ``guard``, what the controller writes
    for a guarded VM (compiler/local_vm.port_security): ``guarded`` in the
    binding, a source guard per address (its IPv4 /32, its IPv6 /128) and
    the IPv6 ones every guarded VM has (fe80::/64, ::/128)."""
    mac, ip, vlan, index = vm
    # (its IPv4 address in the binding too, where the build takes it: local_vm.bound_ipv4)
    out = [
        e.access_binding(port, vlan, vni, index, mac, vrf, guarded=guard, ipv4=ip if guard else 0)
    ]
    if guard:
        out += [e.source_guard(port, vlan, ip, 32), e.source_guard(port, vlan, IP6[vm], 128)]
    return out


def install_p4vtep(conn: SwitchConnection, pipeline: Pipeline, port_security: bool = True) -> None:
    """Two local VMs on two access ports, one remote VM behind the uplink; with a
    routing pipeline, their VNI routed in a VRF with a second subnet (a VM on
    port 2, one behind the uplink), as the controller would write it, the VMs'
    IPv6 host routes beside the IPv4 ones when the build routes IPv6. (Bridged
    IPv6 needs nothing more: the MAC entries carry it.) ``port_security``: the
    local VMs are guarded (``bind_vm``) if the build has port security."""
    e = PipelineEntries(pipeline.p4info)
    vrf = L3VNI if e.routing else 0  # (an older build, without routing, bridges only)
    guard = guarded(pipeline, port_security)
    conn.insert(
        e.port_role(ACCESS_1, PortRole.ACCESS),
        e.port_role(ACCESS_2, PortRole.ACCESS),
        e.port_role(UPLINK, PortRole.FABRIC),
        e.my_vtep(VTEP),
        e.vni_config(VNI, 1, 0, 1),
        *bind_vm(e, ACCESS_1, VM_A, VNI, vrf, guard),
        *bind_vm(e, ACCESS_2, VM_B, VNI, vrf, guard),
        e.mac_to_local_vm(VNI, VM_A[0], ACCESS_1, VM_A[2], VM_A[3]),
        e.mac_to_local_vm(VNI, VM_B[0], ACCESS_2, VM_B[2], VM_B[3]),
        e.mac_to_remote_vtep(VNI, VM_C[0], REMOTE_VTEP),
        e.next_hop_member(1, UPLINK, SPINE_MAC),
    )
    conn.insert(e.ecmp_group(1, [1]))
    conn.insert(e.underlay_route(REMOTE_VTEP, 32, group_id=1))
    conn.modify(e.local_vtep(VTEP, ROUTER_MAC))
    if e.routing:
        install_routing(conn, e, 6 in families_routed(pipeline), guard)


def install_routing(conn: SwitchConnection, e: PipelineEntries, ipv6: bool, guard: bool) -> None:
    """The VRF: its L3 VNI, the gateway MACs, VM D (guarded as A and B are),
    and the host routes of VMs A, D and E (their IPv6 addresses too when the
    build routes IPv6)."""
    hops: dict[tuple[Any, ...], RouteHop] = {
        VM_A: LocalVmHop(ACCESS_1, VM_A[2], VM_A[3], 1, VM_A[0]),
        VM_D: LocalVmHop(ACCESS_2, VM_D[2], VM_D[3], 3, VM_D[0]),
        VM_E: RemoteVtepHop(REMOTE_VTEP, REMOTE_ROUTER_MAC, L3VNI),
    }
    conn.insert(
        e.vni_config(VNI_DB, 3, 0, 0),
        e.l3vni_config(L3VNI, 0, 0),
        e.mac_to_router(VNI, ANYCAST_MAC, ANYCAST_MAC),
        e.mac_to_router(L3VNI, ROUTER_MAC, ANYCAST_MAC),
        *bind_vm(e, ACCESS_2, VM_D, VNI_DB, L3VNI, guard),
        *(e.host_route(L3VNI, vm[1], hop) for vm, hop in hops.items()),
        *(e.host_route(L3VNI, IP6[vm], hop) for vm, hop in hops.items() if ipv6),
    )


def sender_guard_drops(conn: SwitchConnection, pipeline: Pipeline) -> int:
    """What port security has dropped so far of the frames VM A (every access
    path's sender) sent: its cells of port_security_drop_counter, all five
    reasons. A build without port security: 0."""
    e = PipelineEntries(pipeline.p4info)
    if not e.port_security:
        return 0
    cells = [
        e.counter(PORT_SECURITY_DROP_COUNTER, port_security_index(VM_A[3], reason))
        for reason in PORT_SECURITY_REASONS
    ]
    return sum(entity.counter_entry.data.packet_count for entity in conn.read(*cells))


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
    "fabric-tna": install_fabric,
}


def install(
    conn: SwitchConnection, program: str, pipeline: Pipeline, port_security: bool = True
) -> None:
    """A program's entries; a p4vtep build's VMs guarded when ``port_security``
    and the build has it (``program_guarded``: never ``p4vtep-unguarded``)."""
    if program.startswith("p4vtep"):
        install_p4vtep(conn, pipeline, program_guarded(program, pipeline, port_security))
    else:
        INSTALL[program](conn, pipeline)


def resolve_commit(rev: str) -> str:
    """The commit a git revision names."""
    return subprocess.run(
        ["git", "-C", str(BENCH.parent), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


BUILD = "p4src/v1model/build"


def committed_build(rev: str) -> bool:
    """Whether git revision ``rev`` holds a BMv2 build of p4vtep (its JSON and
    P4Info, as ``pipeline_at`` takes them)."""
    return all(
        subprocess.run(
            ["git", "-C", str(BENCH.parent), "cat-file", "-e", f"{rev}:{BUILD}/{name}"],
            capture_output=True,
        ).returncode
        == 0
        for name in ("p4vtep.json", "p4vtep.p4info.txtpb")
    )


def pipeline_at(rev: str, out: Path) -> Pipeline:
    """The committed BMv2 build of p4vtep at git revision ``rev`` (its JSON and
    P4Info, as that commit's `make p4` left them)."""
    files = {}
    for name in ("p4vtep.json", "p4vtep.p4info.txtpb"):
        data = subprocess.run(
            ["git", "-C", str(BENCH.parent), "show", f"{rev}:{BUILD}/{name}"],
            check=True,
            capture_output=True,
        ).stdout
        files[name] = out / f"before-{name}"
        files[name].write_bytes(data)
    return Pipeline(files["p4vtep.p4info.txtpb"], files["p4vtep.json"])
