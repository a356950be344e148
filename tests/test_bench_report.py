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
