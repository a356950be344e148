import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "control_plane"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "tofino: compiles with p4c-tofino (minutes); skipped when it is missing"
    )
