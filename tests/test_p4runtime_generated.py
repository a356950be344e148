"""The generated P4Runtime modules are what tools/gen_p4runtime_protos.py
makes of the installed p4runtime package (they go stale when it changes)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATED = REPO / "control_plane" / "p4vtep" / "runtime" / "generated"


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.py*"))
        if "__pycache__" not in p.parts
    }


def test_generated_modules_match_installed_package(tmp_path):
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_p4runtime_protos.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    fresh, installed = _files(tmp_path), _files(GENERATED)
    assert sorted(fresh) == sorted(installed), "run 'make proto'"
    stale = [name for name in fresh if fresh[name] != installed[name]]
    assert not stale, f"stale generated modules {stale}: run 'make proto'"


def test_generated_modules_use_the_fast_runtime():
    from google.protobuf.internal import api_implementation
    from p4vtep.runtime.protos import p4runtime_pb2

    assert api_implementation.Type() == "upb"
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = 7
    assert p4runtime_pb2.Entity.FromString(entity.SerializeToString()).table_entry.table_id == 7
