"""The committed BMv2 JSON and P4Info are what p4c makes of p4src/ today,
and p4c has nothing to warn about."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "p4src" / "v1model" / "build"
P4C = os.environ.get("P4C", "p4c")

# p4c's BMv2 backend warns about every table with an action selector, because
# the frontend gives each table a NoAction default; nothing in the program
# can avoid it (backends/bmv2/common/control.h).
KNOWN_WARNINGS = (
    "Target does not support default_action for VtepIngress.underlay."
    "underlay_route (due to action profiles)",
    # The shared header parser takes the parser's out headers inout
    # (v1model/arch.p4: an out parameter costs BMv2 16 invalidations per
    # packet); every header is invalid when a packet starts, which p4c cannot
    # know.
    "hdr.packet_out may be uninitialized",
)

pytestmark = pytest.mark.skipif(
    shutil.which(P4C) is None, reason="p4c not found: P4 output freshness not checked"
)


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("p4build")
    result = subprocess.run(
        ["make", "--no-print-directory", "-s", "p4", f"P4_BUILD={out}", f"P4C={P4C}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out, result.stdout + result.stderr


@pytest.mark.parametrize("name", ["p4vtep.json", "p4vtep.p4info.txtpb"])
def test_committed_output_is_fresh(fresh_build, name):
    out, _ = fresh_build
    committed = (BUILD / name).read_bytes()
    # The JSON names the preprocessed file it came from, i.e. the build dir.
    fresh = (
        (out / name)
        .read_bytes()
        .replace(f"{out}/p4vtep.p4i".encode(), b"p4src/v1model/build/p4vtep.p4i")
    )
    assert fresh == committed, f"p4src/v1model/build/{name} is stale: run 'make p4' and commit it"


def test_compiles_without_warnings(fresh_build):
    _, messages = fresh_build
    warnings = [
        line
        for line in messages.splitlines()
        if "warning:" in line and not any(known in line for known in KNOWN_WARNINGS)
    ]
    assert not warnings, "\n".join(warnings)


def test_no_temporaries_for_extern_arguments():
    """BMv2 zeroes every metadata field of every frame, and p4c's BMv2
    backend gives each expression passed to an extern (a counter's index such
    as `vm ++ colour`, a slice, each field of a hash's list) a `tmp` field of
    its own, per call site: the program passes fields instead (CONTRIBUTING.md,
    step 3). Reads the committed JSON, which the test above proves fresh."""
    program = json.loads((BUILD / "p4vtep.json").read_text())
    types = {t["name"]: t for t in program["header_types"]}
    scalars = next(h for h in program["headers"] if h["name"] == "scalars")
    fields = [field[0] for field in types[scalars["header_type"]]["fields"]]
    temporaries = [name for name in fields if name.startswith("tmp")]
    assert not temporaries, f"p4c temporaries among BMv2's metadata fields: {temporaries}"
