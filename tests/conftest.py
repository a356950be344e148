import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "control_plane"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "etcd: runs against a real etcd cluster the test starts (Debian etcd-server)"
    )
