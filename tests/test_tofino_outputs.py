"""The Tofino builds: the committed P4Info, bf-rt.json and resource summary
are what p4c-tofino makes of p4src/ today, both chips fit the stage budget
the Makefile claims (the compile asserts it with --num-stages-override), and
p4c-tofino has nothing to warn about beyond the two known warnings.

Without p4c-tofino the compiling tests skip; the checks on committed files
and on the per-target constants still run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from p4vtep.dataplane.targets import PROFILES, Target
from p4vtep.dataplane.tofino_resources import decided

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "p4src" / "tna" / "build"
P4C_TOFINO = os.environ.get("P4C_TOFINO", "p4c-tofino")
CHIPS = ("tofino", "tofino2")
CHIP_STAGES = {"tofino": 12, "tofino2": 20}  # match-action stages per pipe
COMMITTED = ("p4vtep.p4info.txtpb", "bf-rt.json", "resources.json")

# Warnings p4c-tofino gives for this program that the program cannot avoid.
KNOWN_WARNINGS = (
    # The TNA frontend does not register @controller_header, yet its P4Runtime
    # generator uses it: the P4Info has packet_in/packet_out (parity test).
    "Unknown annotation: controller_header",
    # With --p4runtime-force-std-externs the Hash externs (flow hash, ECMP)
    # have no standard P4Info object; the flow hash needs no control plane.
    "No known conversion to standard P4Info for 'DynHash' extern type",
)

needs_compiler = pytest.mark.skipif(
    shutil.which(P4C_TOFINO) is None,
    reason="p4c-tofino not found: Tofino outputs and fit not checked",
)


def _makefile_budget(chip: str) -> int:
    text = (REPO / "Makefile").read_text()
    var = {"tofino": "TOFINO_STAGES_T1", "tofino2": "TOFINO_STAGES_T2"}[chip]
    match = re.search(rf"^{var} \?= (\d+)$", text, re.MULTILINE)
    assert match, f"{var} not in the Makefile"
    return int(match.group(1))


@pytest.fixture(scope="module", params=CHIPS)
def fresh_build(request, tmp_path_factory) -> tuple[str, Path, str]:
    chip = request.param
    out = tmp_path_factory.mktemp(f"tna-{chip}")
    result = subprocess.run(
        ["make", "--no-print-directory", "-s", "p4-tofino", f"TNA_BUILD={out}",
         f"TOFINO_CHIPS={chip}", f"P4C_TOFINO={P4C_TOFINO}"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return chip, out / chip, result.stdout + result.stderr


@needs_compiler
@pytest.mark.tofino
def test_committed_outputs_are_fresh(fresh_build) -> None:
    chip, out, _ = fresh_build
    for name in COMMITTED:
        same = _same_output(name, out / name, BUILD / chip / name)
        assert same, f"p4src/tna/build/{chip}/{name} is stale: run 'make p4-tofino' and commit it"


def _same_output(name: str, fresh: Path, committed: Path) -> bool:
    """What the program decides is the same in both files; not which build of
    the compiler made them (resources.json records its version string)."""
    if name == "bf-rt.json":
        return _without_snapshot(fresh) == _without_snapshot(committed)
    if name == "resources.json":
        return decided(json.loads(fresh.read_text())) == decided(json.loads(committed.read_text()))
    return fresh.read_bytes() == committed.read_bytes()


def _without_snapshot(path: Path) -> object:
    """bf-rt.json without the compiler's snapshot (debug) tables: on Tofino 2
    p4c-tofino orders them, and numbers their ids, differently from run to
    run. Everything the program defines must match exactly."""
    schema = json.loads(path.read_text())
    schema["tables"] = [t for t in schema["tables"] if not t["name"].startswith("pipe.snapshot")]
    return schema


@needs_compiler
@pytest.mark.tofino
def test_fits_the_claimed_stages(fresh_build) -> None:
    """make p4-tofino compiled within the budget (--num-stages-override below
    the chip's own count; a program that needs more fails); the summary agrees."""
    chip, out, _ = fresh_build
    budget = _makefile_budget(chip)
    manifest = json.loads((out / "out" / "manifest.json").read_text())
    if budget < CHIP_STAGES[chip]:
        assert f"--num-stages-override {budget}" in manifest["compile_command"]
    assert manifest["compilation_succeeded"] is True
    assert (out / "out" / "pipe" / f"{chip}.bin").is_file()
    stages = json.loads((out / "resources.json").read_text())["stages"]
    assert max(stages.values()) <= budget


@needs_compiler
@pytest.mark.tofino
def test_compiles_without_warnings(fresh_build) -> None:
    _, _, log = fresh_build
    warnings = [
        line
        for line in log.splitlines()
        if "warning" in line.lower()
        and not any(known in line for known in KNOWN_WARNINGS)
        # absl's start-up notice on stderr, not a compiler diagnostic
        and "All log messages before absl::InitializeLog()" not in line
        # the closing count ("0 errors, 2 warnings generated.")
        and not re.fullmatch(r"\d+ errors?, \d+ warnings? generated\.", line.strip())
    ]
    assert not warnings, "\n".join(warnings)


@needs_compiler
@pytest.mark.tofino
def test_one_stage_less_does_not_fit(tmp_path) -> None:
    """The fit check can fail: Tofino 2 one stage under its budget. (Tofino 1
    cannot show it: its budget is the chip's full 12 stages, and below that
    its assembler fails on any --num-stages-override, fitting or not.)"""
    budget = _makefile_budget("tofino2")
    result = subprocess.run(
        ["make", "--no-print-directory", "-s", "p4-tofino", f"TNA_BUILD={tmp_path}",
         "TOFINO_CHIPS=tofino2", f"TOFINO_STAGES_T2={budget - 1}", f"P4C_TOFINO={P4C_TOFINO}"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    # Either the assembler counts the stages placed, or (since IPv6 and port
    # security filled Tofino 2's PHV) the compiler finds no PHV allocation
    # that places in the smaller budget; either way no binary. (It takes
    # p4c-tofino 20-25 minutes here to give up: its longest test.)
    log = result.stdout + result.stderr
    assert (
        f"supports up to {budget - 1} stages" in log or "PHV allocation was not successful" in log
    ), log[-2000:]


@pytest.mark.parametrize("chip", CHIPS)
def test_committed_summary_is_within_budget(chip: str) -> None:
    summary = json.loads((BUILD / chip / "resources.json").read_text())
    assert summary["target"] == chip
    assert max(summary["stages"].values()) <= _makefile_budget(chip)
    for table in ("VtepIngress.l2_forwarding.mac_table", "VtepIngress.vni_lookup.vni_config"):
        assert summary["tables"][table]["stages"], table


@pytest.mark.parametrize("chip", CHIPS)
def test_another_build_of_the_compiler_is_not_stale(chip: str, tmp_path: Path) -> None:
    """Issue 41: a p4c-tofino built from a release tarball records "9.13.4 ()" where
    the committed summary has "9.13.4 (34b86e9bac)", all else equal: fresh. A
    figure the program decides that differs is still stale."""
    committed = BUILD / chip / "resources.json"
    summary = json.loads(committed.read_text())
    assert summary["compiler_version"]  # the record is kept in the file
    assert set(decided(summary)) == set(summary) - {"compiler_version"}

    def fresh(changed: dict[str, object]) -> Path:
        path = tmp_path / f"resources-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(changed, indent=1, sort_keys=True) + "\n")
        return path

    other_build = {**summary, "compiler_version": "9.13.4 ()"}
    assert _same_output("resources.json", fresh(other_build), committed)
    more_stages = json.loads(committed.read_text())
    more_stages["stages"]["ingress"] += 1
    assert not _same_output("resources.json", fresh(more_stages), committed)
    table = next(iter(summary["tables"]))
    other_stage = json.loads(committed.read_text())
    other_stage["compiler_version"] = "9.13.4 ()"
    other_stage["tables"][table]["stages"] = [s + 1 for s in summary["tables"][table]["stages"]]
    assert not _same_output("resources.json", fresh(other_stage), committed)
    fewer_srams = json.loads(committed.read_text())
    fewer_srams["memories_used"]["srams"] -= 1
    assert not _same_output("resources.json", fresh(fewer_srams), committed)


@pytest.mark.parametrize("chip", CHIPS)
def test_committed_summary_is_as_the_summariser_prints_it(chip: str) -> None:
    """The freshness test compares summaries as JSON; the committed file is also
    exactly what `python -m p4vtep.dataplane.tofino_resources` prints."""
    text = (BUILD / chip / "resources.json").read_text()
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"


def _arch_value(path: Path, name: str, chip: str | None = None) -> int:
    text = path.read_text()
    if chip is not None:
        # tna/arch.p4 picks the CPU port with __TARGET_TOFINO__.
        block = text.split("#if __TARGET_TOFINO__ == 2")[1].split("#endif")[0]
        first, second = block.split("#else")
        text = first if chip == "tofino2" else second
    match = re.search(rf"#define {name}\s+(\d+)", text)
    assert match, f"{name} not in {path}"
    return int(match.group(1))


@pytest.mark.parametrize("target", list(Target))
def test_per_target_constants_match_the_p4_source(target: Target) -> None:
    profile = PROFILES[target]
    arch = REPO / "p4src" / ("v1model" if target is Target.BMV2 else "tna") / "arch.p4"
    chip = None if target is Target.BMV2 else target.value
    assert _arch_value(arch, "CPU_PORT_VALUE", chip) == profile.cpu_port
    assert _arch_value(arch, "METER_COLOR_YELLOW") == profile.meter_yellow
    assert _arch_value(arch, "METER_COLOR_RED") == profile.meter_red
