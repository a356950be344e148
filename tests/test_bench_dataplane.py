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

import pytest
from dataplane_cost import VARIANTS, Variant, against_baselines, compile_variant, unit_cost
from dataplane_load import fixed_rate_loss, iface_counter, receive_marked, receiver
from dataplane_paths import VNI, check_output, frame, paths_of, write_pcap
from dataplane_peer import PEER_ENV, peer_pipeline
from dataplane_trace import count_work
from p4vtep.switch.bmv2 import VethSet, find_simple_switch_grpc
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN

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
    assert check_output("fabric", 64, sent) is None
    retagged = Ether(sent)
    retagged[Dot1Q].vlan = 20
    assert check_output("fabric", 64, bytes(retagged)) is not None
    assert check_output("fabric", 64, sent + b"\0") is not None  # not the size sent


def test_the_peer_runs_only_when_its_build_is_supplied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PEER_ENV, raising=False)
    assert peer_pipeline(None) is None
    from p4vtep.dataplane.artifacts import bmv2_pipeline

    both = {"baseline": None, "p4vtep": bmv2_pipeline()}
    bridged = ["baseline", "local", "encap", "decap"]
    routed = ["routed_local", "routed_encap", "routed_decap"]
    assert paths_of(both) == bridged + routed
    assert paths_of({**both, "fabric-tna": None})[-1] == "fabric"
    # a build that does not route (an older p4vtep): the bridged paths only
    assert paths_of({"baseline": None, "p4vtep": None}) == bridged
    (tmp_path / "p4info.txt").write_text("")
    monkeypatch.setenv(PEER_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"bmv2\.json"):
        peer_pipeline(None)  # named, but half there: an error, not a quiet skip
    (tmp_path / "bmv2.json").write_text("{}")
    pipeline = peer_pipeline(None)
    assert pipeline is not None
    assert pipeline.device_config_path == tmp_path / "bmv2.json"


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
        "local",
        "encap",
        "decap",
        "routed_local",
        "routed_encap",
        "routed_decap",
    }
    for routed in ("routed_local", "routed_encap", "routed_decap"):
        assert "host_route" in work[routed]["tables"]
    assert "host_route" not in work["local"]["tables"]
    assert work["baseline"]["tables"] == ["port_forward"]
    assert "underlay_route" in work["encap"]["tables"]
    assert "my_vtep" in work["decap"]["tables"]
    assert work["local"]["tables_applied"] > work["baseline"]["tables_applied"]
