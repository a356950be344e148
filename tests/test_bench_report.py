"""docs/benchmarks.md is what bench/report.py renders from the committed
results and bench/NOTES.md: a result or a note changed without rerunning
``make bench-report`` leaves the doc stale, and this test says so."""

from __future__ import annotations

from pathlib import Path

import pytest
import report

REPO = Path(__file__).resolve().parents[1]


def test_benchmarks_doc_is_rendered_from_the_committed_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "PLOTS", tmp_path)  # (the plots are not compared)
    committed = (REPO / "docs" / "benchmarks.md").read_text()
    assert report.render() == committed, "docs/benchmarks.md is stale: run `make bench-report`"


def _targets_table(results: dict[str, dict], monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """section_targets over ``results`` (benchmark name -> result JSON):
    target text -> [before, now, verdict]."""
    monkeypatch.setattr(report, "load", results.get)
    out: list[str] = []
    report.section_targets(out)
    rows = [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in out
        if line.startswith("| ")
    ][1:]
    return {row[0]: row[1:] for row in rows}


def _move_run(p99_ms: float, code: str | None = None) -> dict:
    stats = {"p99": p99_ms / 1e3}
    result = dict.fromkeys(
        ("ack_seconds", "first_packet_seconds", "attach_ack_seconds", "detach_ack_seconds"), stats
    )
    return {"label": "x", "load": "-", "result": result, **({"code": code} if code else {})}


def test_targets_are_met_only_when_every_run_of_this_code_meets_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another commit's run (``code``) far off the target does not count.
    moves = {"runs": [_move_run(6.0), _move_run(9.5), _move_run(400.0, code="abc1234")]}
    table = _targets_table({"vm_move": moves}, monkeypatch)
    ack = table["VM move, every ToR acknowledged: p99 <= 25 ms"]
    assert ack == ["p99 511 ms", "6.0-9.5 ms (2 runs)", "met"]
    # One run of this code over 10 ms: attach is not met, moves still are.
    moves["runs"].append(_move_run(12.0))
    table = _targets_table({"vm_move": moves}, monkeypatch)
    assert table["attach acknowledged: p99 <= 10 ms"] == [
        "-",
        "6.0-12.0 ms (3 runs)",
        "**not met**",
    ]
    assert table["VM move, every ToR acknowledged: p99 <= 25 ms"][2] == "met"
    # A benchmark with no result says so instead of a verdict.
    assert table["100,000 VMs on 16 ToRs, desired state and compiled entities: <= 500 MiB RSS"] == [
        "1.3 GiB",
        "-",
        "not run",
    ]


def test_convergence_target_counts_shared_cores_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(ratio: float, switches: list[int] | None) -> dict:
        sizes = {"10000": {"controller_over_raw_throughput": {"median": ratio}}}
        pinning = {"switches": switches, "bench_process": [0] if switches else None}
        return {"label": "x", "load": "-", "result": {"sizes": sizes, "pinning": pinning}}

    results = {"convergence": {"runs": [run(0.75, None), run(0.81, None), run(0.84, [1])]}}
    table = _targets_table(results, monkeypatch)
    shared = next(v for k, v in table.items() if k.startswith("convergence"))
    pinned = next(v for k, v in table.items() if k.startswith("the same, switches on one core"))
    assert shared == ["0.36", "0.75-0.81 (2 runs)", "**not met**"]
    assert pinned == ["-", "0.84", "-"]


def _stats(median: float) -> dict:
    return {"median": median, "min": median, "max": median, "n": 1}


def _dataplane_row(
    path: str, size: int, tenant: int | None = None, befores: dict | None = None, **ratios: float
) -> dict:
    """One path of a data-plane result with the per-round comparisons given
    (``vs_bridged`` / ``vs_before`` / ``vs_unguarded``: the median topspeed
    ratio; ``befores``: revision -> the median topspeed ratio to that build;
    per switch core: the same less 0.5, to tell them apart)."""
    row: dict = {"path": path, "frame_bytes": size, "tenant_frame_bytes": tenant or size}
    for key, median in ratios.items():
        row[key] = {"topspeed": _stats(median), "per_switch_core": _stats(median - 0.5)}
        if key == "vs_bridged":
            row[key]["bridged_path"] = path.replace("routed6_", "bridged6_")
        if key == "vs_unguarded":
            row[key]["unguarded_path"] = f"unguarded_{path}"
    if befores is not None:
        row["vs_befores"] = {
            rev: {"topspeed": _stats(m), "per_switch_core": _stats(m - 0.5)}
            for rev, m in befores.items()
        }
    return row


def _rows(out: list[str]) -> dict[str, list[str]]:
    """A rendered section's table rows: first cell -> the others."""
    return {
        cells[0]: cells[1:]
        for cells in (
            [c.strip() for c in line.strip("|").split(" | ")] for line in out if line[:2] == "| "
        )
    }


def test_ipv6_targets_show_what_was_measured_and_leave_the_rest_to_be_measured() -> None:
    paths = {
        "routed6_local_64": _dataplane_row("routed6_local", 64, 74, vs_bridged=0.87),
        "bridged6_local_64": _dataplane_row("bridged6_local", 64, 74),
        "local_64": _dataplane_row("local", 64, vs_before=0.97),
        "routed_decap_1024": _dataplane_row("routed_decap", 1024, vs_before=1.01),
    }
    data = {"paths": paths, "before": {"revision": "9be722a", "commit": "9be722a4b0ad" + "0" * 28}}
    out: list[str] = []
    report.routed_section(out, data)  # (a result with one --before, no port_security)
    rows = _rows(out)
    assert rows["routed6_local / bridged6_local >= 0.85"] == ["0.87", "to be measured"]
    assert rows["routed6_decap / bridged6_decap >= 0.85"] == ["to be measured"] * 2
    # no port_security record: today's VMs were unguarded, so vs_before is the figure
    assert rows["bridged IPv4 local (VMs unguarded) / 9be722a within 5 %"] == [
        "0.97",
        "to be measured",
    ]
    assert rows["routed IPv4 decap / 9be722a within 5 %"] == ["to be measured", "1.01"]
    # the comparison tables: the IPv6 frame's own length beside the size asked for
    assert rows["routed6_local vs bridged6_local"][0] == "64 (74)"
    assert rows["local vs 9be722a"][0] == "64"
    assert any("the p4vtep build at 9be722a (9be722a4b0ad)" in line for line in out)
    # compared with another build (issue 28's): issue 37's IPv4 rows wait for a 9be722a run
    data["before"] = {"revision": "83c9917", "commit": "83c9917" + "0" * 33}
    out = []
    report.routed_section(out, data)
    assert (
        "| bridged IPv4 local (VMs unguarded) / 9be722a within 5 % | to be measured | "
        "to be measured |" in out
    )
    assert any("the p4vtep build at 83c9917" in line for line in out)


def _dual_stack_run(ratio: float, writes: list[int], others_cpu: float | None) -> dict:
    """A convergence_dual_stack run; ``others_cpu``: CPU-s everything else took
    in its 100 s (None: a run without the record)."""
    size = {
        "entities": 122126,
        "ipv6_entities": {"nd_suppression": 20400, "ipv6_host_route": 20300},
        "controller_over_raw_throughput": {"median": ratio, "min": ratio, "max": ratio, "n": 1},
        "restart_writes": writes,
    }
    for key in ("controller_seconds", "raw_seconds", "restart_seconds"):
        size[key] = {"median": 1.0, "min": 1.0, "max": 1.0, "n": 1}
    result: dict = {"sizes": {"10000": size}, "pinning": {"switches": [1], "bench_process": [0]}}
    if others_cpu is not None:
        result["machine_load"] = {
            "loadavg_before": [0.1],
            "loadavg_after": [0.2],
            "everything_else_cpu_s": others_cpu,
            "wall_s": 100.0,
            "shared_with_other_processes": others_cpu > 10.0,
        }
    return {"label": "x", "load": "-", "result": result}


def _memory(kib_v4: float, kib_ds: float) -> dict:
    def variant(kib: float) -> dict:
        return {"vms": 10000, "state_mib": kib * 10000 / 1024, "entries_on_switches": 1}

    return {
        "controller_10k_routed": variant(kib_v4),
        "controller_10k_routed_dual_stack": variant(kib_ds),
    }


def test_dual_stack_targets_leave_loaded_runs_out_of_the_ratio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = [_dual_stack_run(0.55, [0, 0], 150.0), _dual_stack_run(0.83, [0], 2.0)]
    results = {"convergence_dual_stack": {"runs": runs}, "memory": _memory(8.94, 11.01)}
    monkeypatch.setattr(report, "load", results.get)
    out: list[str] = []
    report.section_dual_stack(out)
    rows = {
        cells[0]: cells[1:]
        for cells in (
            [c.strip() for c in line.strip("|").split(" | ")] for line in out if line[:2] == "| "
        )
    }
    ratio = next(v for k, v in rows.items() if k.startswith("10,000 dual-stack routed VMs"))
    assert ratio == ["0.83", "met"]
    assert rows["a restart over the installed state writes nothing"] == [
        "0 writes in 3 restarts",
        "met",
    ]
    memory = next(v for k, v in rows.items() if k.startswith("memory per VM"))
    assert memory[0] == "11.01 KiB dual-stack, 8.94 KiB IPv4-only"
    # Both runs are listed, the loaded one with what else ran.
    assert sum("10,000, 122,126 (40,700)" in line for line in out) == 2
    assert any("others 150 CPU-s in 100 s" in line for line in out)
    # Only loaded runs: no verdict on the ratio; a restart that wrote is not met.
    runs[1] = _dual_stack_run(0.83, [0, 3], 50.0)
    out = []
    report.section_dual_stack(out)
    text = "\n".join(out)
    assert "not measured on a quiet machine (loaded: 2 runs below) | - |" in text
    restart = "| a restart over the installed state writes nothing | 3 writes in 4 restarts |"
    assert f"{restart} **not met** |" in text


NINE, FOURTEEN = (
    "9be722a4b0ad60910c2ef2166db29db5a50815d1",
    "14b7d2b234b8e8460e3d8e5aa01af3e71f2573e3",
)
BOTH_BEFORES = [
    {"revision": "9be722a", "commit": NINE, "program": "p4vtep-before", "prefix": "before_"},
    {"revision": "14b7d2b", "commit": FOURTEEN, "program": "p4vtep-before2", "prefix": "before2_"},
]


def _both_run() -> dict:
    """A --before 9be722a --before 14b7d2b --port-security both result (64 B
    only): today guarded / 9be722a 0.88, unguarded / 9be722a 0.97, today /
    14b7d2b 0.96 (decap: 0.99 / 1.00), unguarded / 14b7d2b 1.01."""
    paths = {}
    for prefix in ("", "routed_"):
        for kind in ("local", "encap"):
            path = prefix + kind
            paths[f"{path}_64"] = _dataplane_row(
                path, 64, befores={"9be722a": 0.88, "14b7d2b": 0.96}, vs_unguarded=0.93
            )
            paths[f"unguarded_{path}_64"] = _dataplane_row(
                f"unguarded_{path}", 64, befores={"9be722a": 0.97, "14b7d2b": 1.01}
            )
        decap = f"{prefix}decap"
        paths[f"{decap}_64"] = _dataplane_row(decap, 64, befores={"9be722a": 0.99, "14b7d2b": 1.00})
    for name in list(paths):  # (vs_before: the first build's, as results have it)
        befores = paths[name]["vs_befores"]
        paths[name]["vs_before"] = befores["9be722a"]
    return {
        "paths": paths,
        "before": {"revision": "9be722a", "commit": NINE},
        "befores": BOTH_BEFORES,
        "port_security": {
            "option": "both",
            "guarded": {
                "p4vtep": True,
                "p4vtep-unguarded": False,
                "p4vtep-before": False,
                "p4vtep-before2": False,
            },
            "sender_drops": 0,
        },
    }


def test_issue_37_judges_ipv4_unguarded_against_9be722a_the_guarded_figure_beside() -> None:
    out: list[str] = []
    report.ipv6_targets(out, _both_run())
    rows = _rows(out)
    for what in ("bridged", "routed"):
        for kind in ("local", "encap"):
            assert rows[f"{what} IPv4 {kind} (VMs unguarded) / 9be722a within 5 %"] == [
                "0.97 (guarded: 0.88)",
                "to be measured",
            ]
        assert rows[f"{what} IPv4 decap / 9be722a within 5 %"] == ["0.99", "to be measured"]
    text = "\n".join(out)
    assert "today's build with its local VMs bound unguarded (`unguarded_*`) / 9be722a" in text
    assert "in brackets, today's build with its VMs guarded" in text
    # the same run without the unguarded paths (--port-security on): guarded only
    run = _both_run()
    run["paths"] = {k: v for k, v in run["paths"].items() if not k.startswith("unguarded_")}
    out = []
    report.ipv6_targets(out, run)
    assert _rows(out)["bridged IPv4 local (VMs unguarded) / 9be722a within 5 %"][0] == (
        "to be measured (guarded: 0.88)"
    )


def test_issue_38_judges_todays_guarded_paths_against_14b7d2b() -> None:
    out: list[str] = []
    report.port_security_targets(out, _both_run())
    rows = _rows(out)
    for what in ("bridged", "routed"):
        for kind in ("local", "encap"):
            assert rows[f"{what} IPv4 {kind} (VMs guarded) / 14b7d2b >= 0.95"] == [
                "0.96 (unguarded: 1.01)",
                "to be measured",
            ]
        assert rows[f"{what} IPv4 decap (not guarded) / 14b7d2b >= 0.95"] == [
            "1.00",
            "to be measured",
        ]
    text = "\n".join(out)
    assert "today's build with its local VMs bound guarded" in text
    assert "/ 14b7d2b, the last build before port security" in text
    # a run whose VMs were not guarded (--port-security off), or without 14b7d2b,
    # judges nothing
    off = _both_run()
    off["port_security"]["guarded"]["p4vtep"] = False
    nine_only = _both_run()
    nine_only["befores"] = BOTH_BEFORES[:1]
    for run in (off, nine_only):
        out = []
        report.port_security_targets(out, run)
        assert set(_rows(out)["routed IPv4 local (VMs guarded) / 14b7d2b >= 0.95"]) == {
            "to be measured"
        }
    # an older result (one --before, no vs_befores): the first build only
    old = _both_run()
    old["befores"] = None
    old["before"] = {"revision": "14b7d2b", "commit": FOURTEEN}
    for row in old["paths"].values():
        row["vs_before"] = row.pop("vs_befores")["14b7d2b"]
    out = []
    report.port_security_targets(out, old)
    assert _rows(out)["bridged IPv4 encap (VMs guarded) / 14b7d2b >= 0.95"][0] == (
        "0.96 (unguarded: 1.01)"
    )


def test_each_earlier_build_and_the_unguarded_paths_get_their_comparison_table() -> None:
    out: list[str] = []
    report.routed_section(out, _both_run())
    rows = _rows(out)
    assert rows["local vs 9be722a"] == ["64", "**0.88 (0.88-0.88, n=1)**", "0.38 (0.38-0.38, n=1)"]
    assert rows["unguarded_local vs 9be722a"][1] == "**0.97 (0.97-0.97, n=1)**"
    assert rows["routed_decap vs 14b7d2b"][1] == "**1.00 (1.00-1.00, n=1)**"
    assert rows["encap vs unguarded_encap"][1] == "**0.93 (0.93-0.93, n=1)**"
    text = "\n".join(out)
    assert "the p4vtep build at 9be722a (9be722a4b0ad)" in text
    assert "the p4vtep build at 14b7d2b (14b7d2b234b8)" in text
    assert (
        report.path_label(_both_run(), "before2_routed_local") == "before2_routed_local (14b7d2b)"
    )
    assert report.path_label(_both_run(), "before_local") == "before_local (9be722a)"
    assert report.path_label(_both_run(), "unguarded_local") == "unguarded_local"
