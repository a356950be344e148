"""The committed gRPC code is what grpcio-tools makes of overlay.proto."""

import shutil
import subprocess
import sys
from pathlib import Path

CONTROL_PLANE = Path(__file__).resolve().parents[1] / "control_plane"
GENERATED = ("overlay_pb2.py", "overlay_pb2_grpc.py", "overlay_pb2.pyi")


def test_generated_code_is_fresh(tmp_path):
    (tmp_path / "p4vtep" / "api").mkdir(parents=True)
    shutil.copy(CONTROL_PLANE / "p4vtep" / "api" / "overlay.proto", tmp_path / "p4vtep" / "api")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            str(tmp_path),
            f"--python_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            "p4vtep/api/overlay.proto",
        ],
        check=True,
    )
    for name in GENERATED:
        fresh = (tmp_path / "p4vtep" / "api" / name).read_text()
        assert fresh == (CONTROL_PLANE / "p4vtep" / "api" / name).read_text(), (
            f"{name} is stale: run 'make proto' and commit it"
        )
