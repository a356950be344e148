"""The data-plane benchmark's measuring parts: tcpreplay's sent count against
the kernel's rx counter, frames received as they were on the wire (VLAN tag
included), the trace-log counting, each benchmarked path's output on a
real BMv2 switch, and how the fabric-tna peer is taken in (the peer itself is
a user-supplied build, so its forwarding is checked by the benchmark's own
check frame, not here). Figures themselves are the benchmark's business,
not tested."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from dataplane import options, summarise
from dataplane_cost import VARIANTS, Variant, against_baselines, compile_variant, unit_cost
from dataplane_load import fixed_rate_loss, iface_counter, receive_marked, receiver
from dataplane_paths import (
    ACCESS_1,
    ACCESS_2,
    ANYCAST_MAC,
    ENCAP_SPORT,
    IP6,
    L3VNI,
    REMOTE_ROUTER_MAC,
    ROUTER_MAC,
    VM_A,
    VM_B,
    VM_C,
    VM_D,
    VM_E,
    VNI,
    VNI_DB,
    check_output,
    expected_output,
    frame,
    guarded,
    install,
    install_p4vtep,
    paths_of,
    tenant_bytes,
    write_pcap,
)
from dataplane_peer import PEER_ENV, peer_pipeline
from dataplane_trace import count_work
from google.protobuf import text_format
from helpers import PORT_SECURITY_TABLES, p4info_without_port_security
from p4vtep.dataplane.artifacts import Pipeline, bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.switch.bmv2 import VethSet, find_simple_switch_grpc
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.utils import rdpcap

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="not root: cannot make veths")
needs_tcpreplay = pytest.mark.skipif(
    shutil.which("tcpreplay") is None, reason="tcpreplay not installed (make deps-system)"
)


class _Sampler:
    def __init__(self, iface: str) -> None:
        self.recv_iface = iface


def test_frames_have_the_size_and_marker_asked_for() -> None:
    for path in ("baseline", "local", "encap"):
        data = bytes(frame(path, 64, 7))
        assert len(data) == 64
        assert data.endswith(b"P4VT" + (7).to_bytes(4, "big"))
    decap = frame("decap", 1024, 3)
    assert decap[VXLAN].vni == VNI
    assert len(bytes(decap[VXLAN].payload)) == 1024
    assert bytes(decap).endswith(b"P4VT" + (3).to_bytes(4, "big"))


KINDS = ("local", "encap", "decap")
IPV6_PATHS = [f"{prefix}_{kind}" for prefix in ("bridged6", "routed6") for kind in KINDS]


def test_ipv6_frames_are_udp_over_ipv6_at_their_smallest_for_64_bytes() -> None:
    """An IPv6 frame cannot be 64 B with a VLAN tag, its UDP header and the
    marker: at 64 it is the smallest there is (74 B tagged, 70 B untagged
    inside VXLAN), at 1024 exactly 1024."""
    for path in IPV6_PATHS:
        decap = path.endswith("decap")
        for size, smallest in ((64, 70 if decap else 74), (1024, 1024)):
            sent = Ether(bytes(frame(path, size, 9)))
            tenant = sent[VXLAN].payload if decap else sent
            assert len(bytes(tenant)) == smallest == tenant_bytes(path, size)
            assert (Dot1Q in tenant) is not decap
            assert tenant[IPv6].nh == 17
            assert tenant[IPv6].hlim == 64
            assert tenant[IPv6].plen == len(bytes(tenant[IPv6].payload))
            assert tenant[UDP].len == len(bytes(tenant[UDP]))
            assert bytes(sent).endswith(b"P4VT" + (9).to_bytes(4, "big"))
    local = frame("bridged6_local", 64, 0)
    assert (local[IPv6].src, local[IPv6].dst) == ("2001:db8:1::1", "2001:db8:1::2")
    routed = frame("routed6_local", 64, 0)
    assert (routed[Ether].dst, routed[IPv6].dst) == (ANYCAST_MAC, "2001:db8:2::4")
    decap = frame("routed6_decap", 64, 0)
    assert decap[VXLAN].vni == L3VNI
    assert decap[VXLAN].payload[Ether].dst == ROUTER_MAC
    assert (decap[IPv6].src, decap[IPv6].dst) == (IP6[VM_E], IP6[VM_A])
    assert tenant_bytes("local", 64) == 64
    assert tenant_bytes("decap", 64) == 64


def test_pcaps_hold_the_flows_well_formed(tmp_path: Path) -> None:
    for path in ("routed6_encap", "bridged6_decap", "before_routed_local"):
        frames = rdpcap(str(write_pcap(tmp_path, path, 64, 4)))
        assert [bytes(f) for f in frames] == [bytes(frame(path, 64, seq)) for seq in range(4)]
        sports = {(f[VXLAN].payload if VXLAN in f else f)[UDP].sport for f in frames}
        assert len(sports) == 4  # four flows
        for f in frames:  # the tenant's checksums as scapy computes them
            ip = f[IPv6] if IPv6 in f else f[VXLAN].payload[IP] if VXLAN in f else f[IP]
            unsummed = ip.copy()
            if isinstance(unsummed, IP):
                unsummed.chksum = None
            unsummed[UDP].chksum = None
            assert bytes(unsummed) == bytes(ip)


def test_expected_outputs_are_the_paths_rewrites() -> None:
    """What each path must make of its frame, field by field: bridged
    unchanged but for the tag (or the VXLAN headers), routed from the gateway
    (or our router MAC) with the hop limit / TTL one less."""
    out = {p: Ether(expected_output(p, bytes(frame(p, 64, 1)))) for p in IPV6_PATHS}
    sent = {p: Ether(bytes(frame(p, 64, 1))) for p in IPV6_PATHS}
    assert bytes(out["bridged6_local"][Dot1Q].payload) == bytes(
        sent["bridged6_local"][Dot1Q].payload
    )
    assert out["bridged6_local"][Dot1Q].vlan == VM_B[2]
    assert out["bridged6_local"][Ether].dst == VM_B[0]
    enc = out["bridged6_encap"]
    assert (enc[IP].dst, enc[VXLAN].vni, enc[UDP].dport) == ("10.0.0.2", VNI, 4789)
    assert Dot1Q not in enc
    assert enc[VXLAN].payload[Ether].dst == VM_C[0]
    assert bytes(enc[VXLAN].payload[IPv6]) == bytes(sent["bridged6_encap"][IPv6])
    dec = out["bridged6_decap"]
    assert VXLAN not in dec
    assert dec[Dot1Q].vlan == VM_A[2]
    assert dec[IPv6].hlim == 64
    local = out["routed6_local"]
    assert (local[Ether].src, local[Ether].dst, local[Dot1Q].vlan) == (
        ANYCAST_MAC,
        VM_D[0],
        VM_D[2],
    )
    assert local[IPv6].hlim == 63
    assert local[UDP].chksum == sent["routed6_local"][UDP].chksum
    enc = out["routed6_encap"]
    inner = enc[VXLAN].payload
    assert enc[VXLAN].vni == L3VNI
    assert Dot1Q not in enc
    assert (inner[Ether].src, inner[Ether].dst) == (ROUTER_MAC, REMOTE_ROUTER_MAC)
    assert (inner[IPv6].dst, inner[IPv6].hlim) == (IP6[VM_E], 63)
    dec = out["routed6_decap"]
    assert (dec[Ether].src, dec[Ether].dst, dec[Dot1Q].vlan) == (ANYCAST_MAC, VM_A[0], VM_A[2])
    assert dec[IPv6].hlim == 63
    assert VXLAN not in dec
    routed4 = Ether(expected_output("routed_local", bytes(frame("routed_local", 64, 1))))
    assert routed4[IP].ttl == 63
    unsummed = routed4[IP].copy()
    unsummed.chksum = None  # (the TTL's checksum, recomputed from the header)
    assert IP(bytes(unsummed)).chksum == routed4[IP].chksum


def test_check_output_takes_only_the_exact_frame() -> None:
    for path in [*IPV6_PATHS, "local", "routed_encap", "routed_decap", "before_routed_local"]:
        for size in (64, 1024):
            sent = bytes(frame(path, size, 4))
            want = expected_output(path, sent)
            assert check_output(path, sent, want) is None, path
            for i in (0, 20, len(want) - 1):  # any byte off is refused
                wrong = bytearray(want)
                wrong[i] ^= 0x01
                assert check_output(path, sent, bytes(wrong)) is not None, (path, i)
            assert check_output(path, sent, want + b"\0") is not None
    # the encap output's outer UDP source port is the flow hash: any value passes
    sent = bytes(frame("routed6_encap", 64, 2))
    want = bytearray(expected_output("routed6_encap", sent))
    want[ENCAP_SPORT] = (51234).to_bytes(2, "big")
    assert check_output("routed6_encap", sent, bytes(want)) is None
    # a routed frame whose hop limit was not decremented is not routed right
    routed = Ether(expected_output("routed6_local", bytes(frame("routed6_local", 64, 2))))
    routed[IPv6].hlim = 64
    problem = check_output("routed6_local", bytes(frame("routed6_local", 64, 2)), bytes(routed))
    assert problem is not None
    assert "routed6_local" in problem


def test_cost_variants_are_taken_against_the_baselines_either_side() -> None:
    runs = [("baseline", 100.0), ("a", 50.0), ("baseline", 80.0), ("b", 45.0), ("baseline", 90.0)]
    ratios = against_baselines(runs)
    assert ratios == {"a": 50.0 / 90.0, "b": 45.0 / 85.0}
    ten = Variant("a", "an item", 10, "", "baseline")
    assert unit_cost(ratios, ten) == pytest.approx((90.0 / 50.0 - 1) / 10)
    on_b = Variant("c", "beyond b", 1, "", "b")
    assert unit_cost({**ratios, "c": 0.4}, on_b) == pytest.approx(1 / 0.4 - 85.0 / 45.0)


@pytest.mark.skipif(shutil.which("p4c") is None, reason="p4c not found")
def test_every_cost_variant_compiles_and_keeps_the_baselines_table(tmp_path: Path) -> None:
    for variant in VARIANTS:
        pipeline = compile_variant(variant, tmp_path)
        assert pipeline.p4info.table("port_forward").preamble.id
        assert variant.relative_to in {v.name for v in VARIANTS}


def test_the_peer_path_wants_its_frame_bridged_unchanged() -> None:
    sent = bytes(frame("fabric", 64, 5))
    assert len(sent) == 64
    assert check_output("fabric", sent, sent) is None
    retagged = Ether(sent)
    retagged[Dot1Q].vlan = 20
    assert check_output("fabric", sent, bytes(retagged)) is not None
    assert check_output("fabric", sent, sent + b"\0") is not None  # not the size sent


def test_the_peer_runs_only_when_its_build_is_supplied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PEER_ENV, raising=False)
    assert peer_pipeline(None) is None
    from p4vtep.dataplane.artifacts import bmv2_pipeline

    both = {"baseline": None, "p4vtep": bmv2_pipeline()}
    today = ["decap", "routed_decap", "local", "encap", "routed_local", "routed_encap"]
    bridged6 = ["bridged6_local", "bridged6_encap", "bridged6_decap"]
    routed6 = ["routed6_local", "routed6_encap", "routed6_decap"]
    assert paths_of(both) == ["baseline", *today, *bridged6, *routed6]
    assert paths_of({**both, "fabric-tna": None})[-1] == "fabric"
    # a build that does not route (an older p4vtep): the bridged paths only
    bridged = ["baseline", "decap", "local", "encap"]
    assert paths_of({"baseline": None, "p4vtep": None}) == bridged + bridged6
    # an earlier build (--before): its IPv4 paths, the routed ones if it routes,
    # run just before today's
    before = ["before_local", "before_encap", "before_decap"]
    assert paths_of({**both, "p4vtep-before": None}) == (
        ["baseline", *before, *today, *bridged6, *routed6]
    )
    before_all = ["local", "encap", "routed_local", "routed_encap", "decap", "routed_decap"]
    today_and_before = ["baseline", *(f"before_{p}" for p in before_all), *today]
    assert paths_of({**both, "p4vtep-before": bmv2_pipeline()}) == today_and_before + (
        bridged6 + routed6
    )
    (tmp_path / "p4info.txt").write_text("")
    monkeypatch.setenv(PEER_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"bmv2\.json"):
        peer_pipeline(None)  # named, but half there: an error, not a quiet skip
    (tmp_path / "bmv2.json").write_text("{}")
    pipeline = peer_pipeline(None)
    assert pipeline is not None
    assert pipeline.device_config_path == tmp_path / "bmv2.json"


class _Written:
    """Stands in for the switch connection: keeps what install_p4vtep writes."""

    def __init__(self) -> None:
        self.entities: list[Any] = []

    def insert(self, *messages: Any) -> None:
        self.entities += messages

    def modify(self, *messages: Any) -> None:
        self.entities += messages

    def tables(self, pipeline: Pipeline) -> list[str]:
        return [
            pipeline.p4info.alias_of(m.table_id)
            for m in self.entities
            if hasattr(m, "table_id") and m.table_id
        ]


GUARDS = PORT_SECURITY_TABLES
LOCAL_VMS = ((ACCESS_1, VM_A, VNI), (ACCESS_2, VM_B, VNI), (ACCESS_2, VM_D, VNI_DB))


def _without_port_security(tmp_path: Path) -> Pipeline:
    """Today's BMv2 P4Info as a build before port security (issue 38) had it."""
    message = p4info_without_port_security(bmv2_pipeline().p4info).message
    (tmp_path / "old.p4info.txtpb").write_text(text_format.MessageToString(message))
    return Pipeline(tmp_path / "old.p4info.txtpb", tmp_path / "old.json")


def _install(pipeline: Pipeline, port_security: bool) -> _Written:
    written = _Written()
    install_p4vtep(written, pipeline, port_security)  # type: ignore[arg-type]
    return written


def test_todays_vms_are_guarded_as_the_controller_guards_them_an_older_builds_not(
    tmp_path: Path,
) -> None:
    """--port-security on (the default): today's build binds the local VMs
    guarded, with a source guard per address (/32, /128) and nothing for
    fe80::/64 and :: (the pipeline's rule: compiler/local_vm.port_security);
    off, or a build without port security (the --before build of issue 38's
    comparison), unguarded and no guard entry, as before."""
    today = bmv2_pipeline()
    e = PipelineEntries(today.p4info)
    assert guarded(today, True)
    assert not guarded(today, False)
    on = _install(today, True)
    for port, vm, vni in LOCAL_VMS:
        mac, ip, vlan, index = vm
        binding = e.access_binding(port, vlan, vni, index, mac, L3VNI, guarded=True, ipv4=ip)
        assert binding in on.entities
        for prefix, length in ((ip, 32), (IP6[vm], 128)):
            assert e.source_guard(port, vlan, prefix, length) in on.entities
    guards = [t for t in on.tables(today) if t in GUARDS]
    assert sorted(guards) == ["ipv4_source_guard"] * 3 + ["ipv6_source_guard"] * 3
    off = _install(today, False)
    for port, (mac, _, vlan, index), vni in LOCAL_VMS:
        assert e.access_binding(port, vlan, vni, index, mac, L3VNI) in off.entities
    assert not GUARDS & set(off.tables(today))
    # the rest is the same entries either way
    assert len(off.entities) == len(on.entities) - len(guards)

    old = _without_port_security(tmp_path)
    old_e = PipelineEntries(old.p4info)
    assert not old_e.port_security
    assert not guarded(old, True)
    before = _install(old, True)
    for port, (mac, _, vlan, index), vni in LOCAL_VMS:
        assert old_e.access_binding(port, vlan, vni, index, mac, L3VNI) in before.entities
    assert not GUARDS & set(before.tables(old))
    assert len(before.entities) == len(off.entities)


@needs_root
@needs_tcpreplay
def test_tcpreplay_count_matches_the_peers_rx_counter(tmp_path: Path) -> None:
    pcap = write_pcap(tmp_path, "baseline", 64, 16)
    with VethSet(f"tb{os.getpid() % 1000}", 1) as veths:
        ((a, b),) = veths.pairs
        loss, sent, received = fixed_rate_loss(a, pcap, _Sampler(b), 2000, 0.25)
    assert sent == 500
    assert received == 500
    assert loss == 0.0


@needs_root
def test_received_frames_keep_their_vlan_tag() -> None:
    data = bytes(frame("local", 64, 42))
    with VethSet(f"tv{os.getpid() % 1000}", 1) as veths:
        ((a, b),) = veths.pairs
        before = iface_counter(b, "rx_packets")
        with receiver(b) as rx, socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
            tx.bind((a, 0))
            tx.send(data)
            got = receive_marked(rx, data[-8:], 2.0)
        assert iface_counter(b, "rx_packets") == before + 1
    assert got is not None
    assert got[0] == data
    assert Ether(got[0])[Dot1Q].vlan == 10
    assert got[1] > 0  # kernel timestamp


def test_trace_lines_are_counted_by_kind() -> None:
    log = [
        "[t] [bmv2] [D] [thread 1] [0.0] [cxt 0] Parser 'parser' entering state 'start'",
        "[t] [bmv2] [D] [thread 1] [0.0] [cxt 0] Extracting header 'ethernet'",
        "[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] Applying table 'tbl_p4vtep56'",
        "[t] [bmv2] [D] [thread 1] [0.0] [cxt 0] Action entry is p4vtep56 - ",
        "[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] Action p4vtep56",
        "[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] p4vtep.p4(56) Primitive mark_to_drop(std)",
        '[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] p4vtep.p4(57) Condition "x" (node_3) is false',
        "[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] "
        "Applying table 'VtepIngress.port_config.port_role'",
        "[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] Updated counter 'VtepIngress.c' at index 1",
        "[t] [bmv2] [T] [thread 1] [0.0] [cxt 0] Updated meter 'VtepIngress.m' at index 1, ...",
        "[t] [bmv2] [D] [thread 1] [0.0] [cxt 0] Verified checksum 'cksum_0': passed",
        "[t] [bmv2] [D] [thread 2] [0.0] [cxt 0] Deparsing header 'ethernet'",
        "Match key:",  # continuation lines of a multi-line message are not counted
        "* port                : EXACT     0001",
    ]
    work = count_work(log)
    assert work == {
        "parser_states": 1,
        "headers_extracted": 1,
        "conditions": 1,
        "tables_applied": 2,
        "actions": 1,
        "primitives": 1,
        "counter_updates": 1,
        "meter_executions": 1,
        "checksums": 1,
        "headers_deparsed": 1,
        "match_tables": 1,
        "tables": ["tbl_p4vtep56", "port_role"],
    }


@needs_root
@pytest.mark.skipif(find_simple_switch_grpc() is None, reason="simple_switch_grpc not found")
@pytest.mark.skipif(shutil.which("p4c") is None, reason="p4c not found (baseline is compiled)")
def test_every_benchmarked_path_forwards_its_frame_as_expected() -> None:
    from dataplane_trace import trace_paths

    work = trace_paths(64, None)  # raises unless each path's frame comes out as check_output wants
    assert set(work) == {
        "baseline",
        *(
            f"{prefix}{kind}"
            for prefix in ("", "routed_", "bridged6_", "routed6_")
            for kind in KINDS
        ),
    }
    for kind in KINDS:
        assert "host_route" in work[f"routed_{kind}"]["tables"]
        assert "ipv6_host_route" in work[f"routed6_{kind}"]["tables"]
        for bridged in (kind, f"bridged6_{kind}"):
            assert not {"host_route", "ipv6_host_route"} & set(work[bridged]["tables"])
    assert work["baseline"]["tables"] == ["port_forward"]
    assert "underlay_route" in work["encap"]["tables"]
    assert "my_vtep" in work["decap"]["tables"]
    assert work["local"]["tables_applied"] > work["baseline"]["tables_applied"]
    # VM A, the sender of every access path, is guarded (port security on,
    # the default): its IPv6 frames are looked up in the IPv6 source guard;
    # its IPv4 frames claim the address its binding holds, which needs no
    # lookup (v1model/arch.p4, PORT_SECURITY_BOUND_IPV4); frames from the
    # fabric meet no guard
    guards = {4: set(), 6: {"ipv6_source_guard"}}
    for kind in KINDS:
        for prefix, family in (("", 4), ("routed_", 4), ("bridged6_", 6), ("routed6_", 6)):
            path = prefix + kind
            applied = {"ipv4_source_guard", "ipv6_source_guard"} & set(work[path]["tables"])
            assert applied == (set() if kind == "decap" else guards[family]), path


def _raw(pps: list[float], size: int) -> dict:
    windows = [{"pps": v, "pps_per_switch_core": v / 2} for v in pps]
    return {"windows": windows, "latency_us": [], "no_loss": []}


def test_summary_compares_each_routed_path_with_its_bridged_one_and_the_earlier_build() -> None:
    """The ratios the targets are judged on, per round: routed6 / bridged6 of
    the same kind, today's IPv4 path (bridged or routed) / the earlier
    build's, everything / the baseline."""
    paths = [
        "baseline",
        "local",
        "routed_local",
        "bridged6_local",
        "routed6_local",
        "before_local",
        "before_routed_local",
    ]
    pps = {
        "baseline": [1000.0, 800.0],
        "local": [300.0, 200.0],
        "routed_local": [270.0, 150.0],
        "bridged6_local": [290.0, 250.0],
        "routed6_local": [261.0, 200.0],
        "before_local": [300.0, 250.0],
        "before_routed_local": [300.0, 100.0],
    }
    raw = {(p, size): _raw(pps[p], size) for p in paths for size in (64, 1024)}
    out = summarise(raw, [64, 1024], paths)
    r6 = out["routed6_local_64"]
    assert r6["vs_bridged"]["bridged_path"] == "bridged6_local"
    assert r6["vs_bridged"]["topspeed"]["min"] == pytest.approx(0.8)  # 200 / 250
    assert r6["vs_bridged"]["topspeed"]["max"] == pytest.approx(0.9)  # 261 / 290
    assert r6["vs_bridged"]["per_switch_core"]["median"] == pytest.approx(0.85)
    assert r6["ratio"]["topspeed"]["median"] == pytest.approx((0.261 + 0.25) / 2)
    assert r6["tenant_frame_bytes"] == 74
    assert out["routed6_local_1024"]["tenant_frame_bytes"] == 1024
    assert out["routed_local_64"]["vs_bridged"]["bridged_path"] == "local"
    assert out["routed_local_64"]["vs_before"]["topspeed"]["median"] == pytest.approx(
        1.2
    )  # 0.9, 1.5
    assert out["local_64"]["vs_before"]["topspeed"]["min"] == pytest.approx(0.8)
    assert "vs_before" not in r6
    assert "vs_bridged" not in out["bridged6_local_64"]
    assert out["local_64"]["tenant_frame_bytes"] == 64
    assert "ratio" not in out["baseline_64"]


def test_paths_of_two_earlier_builds_and_both_bindings_keep_each_pair_close() -> None:
    """--before 9be722a --before 14b7d2b --port-security both: the first
    earlier build's IPv4 paths (access paths first), today's unguarded access
    paths, today's IPv4 paths (decap first), the second earlier build's, then
    IPv6; 29 paths, each pair a target compares 6 paths apart."""
    today = bmv2_pipeline()
    programs = {
        "baseline": None,
        "p4vtep": today,
        "p4vtep-unguarded": today,
        "p4vtep-before": today,
        "p4vtep-before2": today,
    }
    access = ["local", "encap", "routed_local", "routed_encap"]
    decap = ["decap", "routed_decap"]
    want = ["baseline", *(f"before_{p}" for p in access + decap)]
    want += [f"unguarded_{p}" for p in access] + decap + access
    want += [f"before2_{p}" for p in decap + access] + IPV6_PATHS
    got = paths_of(programs)
    assert got == want
    assert len(got) == 29
    for path in access + decap:  # issue 37: unguarded / before_; issue 38: today / before2_
        unguarded_or_today = f"unguarded_{path}" if path in access else path
        assert got.index(unguarded_or_today) - got.index(f"before_{path}") == 6
        assert got.index(f"before2_{path}") - got.index(path) == 6
        if path in access:  # (port security's own cost: guarded / unguarded)
            assert got.index(path) - got.index(f"unguarded_{path}") == 6
    # an earlier build that does not route: its bridged paths only
    only_bridged = paths_of({**programs, "p4vtep-before2": None})
    assert [p for p in only_bridged if p.startswith("before2_")] == [
        "before2_decap",
        "before2_local",
        "before2_encap",
    ]


def test_unguarded_and_earlier_builds_paths_are_todays_frames_and_outputs() -> None:
    for stand_in, today in (
        ("unguarded_routed_encap", "routed_encap"),
        ("before2_routed_local", "routed_local"),
        ("before4_decap", "decap"),
    ):
        sent = bytes(frame(stand_in, 64, 3))
        assert sent == bytes(frame(today, 64, 3))
        assert expected_output(stand_in, sent) == expected_output(today, sent)
        assert check_output(stand_in, sent, expected_output(today, sent)) is None


def test_todays_build_loaded_unguarded_writes_no_guard(tmp_path: Path) -> None:
    """--port-security both: the same build, as program p4vtep-unguarded, binds
    its VMs unguarded and writes no source guard; as p4vtep, guarded."""
    today = bmv2_pipeline()
    e = PipelineEntries(today.p4info)
    unguarded, on = _Written(), _Written()
    install(unguarded, "p4vtep-unguarded", today, True)  # type: ignore[arg-type]
    install(on, "p4vtep", today, True)  # type: ignore[arg-type]
    assert not GUARDS & set(unguarded.tables(today))
    assert GUARDS & set(on.tables(today))
    for port, (mac, _, vlan, index), vni in LOCAL_VMS:
        assert e.access_binding(port, vlan, vni, index, mac, L3VNI) in unguarded.entities
    assert len(unguarded.entities) == len(_install(today, False).entities)


def test_options_take_several_earlier_builds_and_both_bindings() -> None:
    args = options(["--before", "9be722a", "--before", "14b7d2b", "--port-security", "both"])
    assert args.before == ["9be722a", "14b7d2b"]
    assert [c[:7] for c in args.before_commits] == ["9be722a", "14b7d2b"]
    assert all(len(c) == 40 for c in args.before_commits)
    assert args.port_security == "both"
    plain = options([])
    assert (plain.before, plain.before_commits, plain.port_security) == ([], [], "on")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--before", "no-such-revision"], "not a commit of this repository"),
        (["--before", "9be722a", "--before", "9be722a4b0ad"], "the same commit"),
        ([f"--before=HEAD~{n}" for n in range(5)], "at most 4"),
        (["--port-security", "sometimes"], "invalid choice"),
    ],
)
def test_options_refuse_bad_earlier_builds_before_anything_runs(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        options(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_summary_compares_with_each_earlier_build_and_the_unguarded_paths() -> None:
    """Two earlier builds and both bindings: today's guarded path / each
    build's (vs_befores by revision; vs_before: the first's, as results had
    it), guarded / unguarded (vs_unguarded), the unguarded path / each build's."""
    pps = {
        "baseline": [1000.0, 1000.0],
        "local": [270.0, 300.0],
        "unguarded_local": [300.0, 300.0],
        "before_local": [300.0, 250.0],
        "before2_local": [300.0, 300.0],
        "decap": [400.0, 400.0],
        "before_decap": [400.0, 500.0],
        "before2_decap": [500.0, 400.0],
    }
    raw = {(p, 64): _raw(v, 64) for p, v in pps.items()}
    out = summarise(raw, [64], list(pps), ["9be722a", "14b7d2b"])
    local = out["local_64"]
    assert local["vs_befores"]["14b7d2b"]["before_path"] == "before2_local"
    assert local["vs_befores"]["14b7d2b"]["topspeed"]["min"] == pytest.approx(0.9)
    assert local["vs_befores"]["14b7d2b"]["topspeed"]["max"] == pytest.approx(1.0)
    assert local["vs_befores"]["9be722a"]["topspeed"]["max"] == pytest.approx(1.2)
    assert local["vs_before"]["topspeed"] == local["vs_befores"]["9be722a"]["topspeed"]
    assert local["vs_unguarded"]["unguarded_path"] == "unguarded_local"
    assert local["vs_unguarded"]["topspeed"]["min"] == pytest.approx(0.9)
    assert local["vs_unguarded"]["per_switch_core"]["max"] == pytest.approx(1.0)
    unguarded = out["unguarded_local_64"]
    assert unguarded["vs_befores"]["9be722a"]["before_path"] == "before_local"
    assert unguarded["vs_befores"]["9be722a"]["topspeed"]["max"] == pytest.approx(1.2)
    assert "vs_unguarded" not in unguarded
    decap = out["decap_64"]
    assert "vs_unguarded" not in decap  # (decap is never guarded: no unguarded twin)
    assert decap["vs_befores"]["14b7d2b"]["topspeed"]["min"] == pytest.approx(0.8)
    assert "vs_befores" not in out["before2_local_64"]
    # without revisions (one --before, as before): vs_before only
    assert "vs_befores" not in summarise(raw, [64], list(pps))["local_64"]
