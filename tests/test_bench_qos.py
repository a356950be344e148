"""The QoS benchmark's figures (bench/qos_report.py): no switch, no network."""

from __future__ import annotations

import json

import pytest
import qos_report


def test_throughput_from_counter_samples() -> None:
    samples = [(0.0, 0), (0.1, 125_000), (0.2, 125_000), (0.3, 375_000)]
    got = qos_report.throughput_mbps(samples)
    assert [t for t, _ in got] == [0.1, 0.2, 0.3]
    assert [round(m, 6) for _, m in got] == [10.0, 0.0, 20.0]


def test_stats_against_the_guarantee() -> None:
    mbps = [float(v) for v in range(1, 101)]  # 1 .. 100
    s = qos_report.vm_stats(mbps, guarantee_mbps=50.0)
    assert s["n"] == 100
    assert s["min"] == 1.0
    assert s["max"] == 100.0
    assert s["p5"] == pytest.approx(5.95)
    assert s["p1"] == pytest.approx(1.99)
    assert s["median"] == pytest.approx(50.5)
    assert s["of_guarantee"]["p5"] == pytest.approx(5.95 / 50)
    assert "of_guarantee" not in qos_report.vm_stats(mbps, None)
    assert qos_report.vm_stats([], 5.0) == {"n": 0}


def test_greedy_share_of_link_and_of_delivered() -> None:
    series = {"g1": [2.0, 2.0], "g2": [2.0, 2.0], "x": [6.0, 4.0]}
    s = qos_report.greedy_share(series, "x", link_mbps=10.0)
    assert s["of_link_median"] == pytest.approx(0.5)
    assert s["of_total_median"] == pytest.approx((0.6 + 0.5) / 2)
    assert s["link_used_median"] == pytest.approx(0.9)


def run(arm: str, g_mbps: float, warm_bad: bool = True) -> dict:
    """A run whose guaranteed VMs get ``g_mbps`` after a bad first second."""
    times = [round(0.1 * i, 1) for i in range(1, 51)]

    def series(value: float) -> list:
        return [(t, 0.0 if (warm_bad and t <= 1.0) else value) for t in times]

    r = {
        "protocol": "udp",
        "arm": arm,
        "round": 1,
        "link_mbps": 10.0,
        "guarantee_mbps": 2.0,
        "guaranteed": ["g1", "g2"],
        "greedy": "x",
        "warmup_s": 1.0,
        "series": {"g1": series(g_mbps), "g2": series(g_mbps), "x": series(10 - 2 * g_mbps)},
    }
    r["stats"] = qos_report.summarise(r)
    return r


def test_warmup_left_out_and_target() -> None:
    b = run("B", 1.9)
    assert b["stats"]["vms"]["g1"]["min"] == pytest.approx(1.9)  # the zeros were warm-up
    assert qos_report.met(b["stats"], b["guaranteed"])  # 0.95 >= 0.9
    a = run("A", 1.5)
    assert not qos_report.met(a["stats"], a["guaranteed"])


def test_table_and_stored_entries(tmp_path) -> None:
    entry = {
        "label": "t",
        "commit": "abc",
        "machine": {"when": "now"},
        "config": {
            "link_mbps": 10.0,
            "guarantee_mbps": 2.0,
            "link_emulation": "x",
            "seconds": 5,
            "warmup_s": 1.0,
        },
        "runs": [run("A", 1.5), run("B", 1.9)],
    }
    rows = qos_report.table(entry)
    assert len(rows) == 2 + 4
    assert "| udp | B | 1 | g1 |" in rows[4]
    assert "**0.95**" in rows[4]
    (tmp_path / "qos-2026-01-01.json").write_text(json.dumps({"entries": [entry]}))
    assert [e["label"] for e in qos_report.latest(tmp_path)] == ["t"]


def test_plot_writes_a_png(tmp_path) -> None:
    entry = {"label": "t", "runs": [run("A", 1.5), run("B", 1.9)]}
    qos_report.plot(entry, tmp_path / "q.png")
    assert (tmp_path / "q.png").read_bytes()[:4] == b"\x89PNG"


def test_goodput_is_what_the_receiving_iperf3_read_per_interval() -> None:
    import qos

    server = {
        "intervals": [
            {"sum": {"start": 0.0, "end": 0.1, "bytes": 62_500}},
            {"sum": {"start": 0.1, "end": 0.2, "bytes": 0}},
            {"sum": {"start": 0.2, "end": 0.2, "bytes": 10}},  # (empty: left out)
        ]
    }
    # A warning line before the document, as iperf3 prints for UDP.
    text = "warning: UDP block size 1472 exceeds TCP MSS 1448\n" + json.dumps(
        {"end": {"sum": {"bits_per_second": 1e6}}, "server_output_json": server}
    )
    got = qos.goodput_series(text)
    assert [t for t, _ in got] == [0.1, 0.2]
    assert [round(m, 6) for _, m in got] == [5.0, 0.0]
    assert qos.iperf_summary(text, "udp")["bps"] == 1e6
    # No server output (a client without --get-server-output), or no JSON at all.
    assert qos.goodput_series(json.dumps({"end": {}})) == []
    assert qos.goodput_series("iperf3: error - unable to connect") == []
    assert "error" in qos.iperf_summary("iperf3: error - unable to connect", "tcp")


def test_the_target_is_judged_on_goodput_when_a_run_has_it() -> None:
    r = run("B", 1.9)  # the interfaces got 0.95 of the guarantee...
    r["goodput_series"] = {vm: [(t, m / 2) for t, m in s] for vm, s in r["series"].items()}
    r["stats"] = qos_report.summarise(r)
    assert r["stats"]["goodput"]["g1"]["mean"] == pytest.approx(0.95)
    # ...but the applications half of it (the rest retransmitted duplicates).
    assert not qos_report.met(r["stats"], r["guaranteed"])
    rows = qos_report.table({"runs": [r]})
    assert "**0.47**, 0.9" in rows[2]  # goodput's p5 / guarantee in bold, its mean
