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
