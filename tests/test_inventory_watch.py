"""Edits to the inventory file are picked up; a bad edit changes nothing."""

from pathlib import Path

from fabric_fixture import two_tor_fabric
from helpers import FixedLeadership, wait_until
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Vm
from p4vtep.sources.inventory_file import InventoryWatcher
from p4vtep.state.sqlite_store import Store

GOOD = """vms:
  - {name: a1, mac: "00:00:0a:00:00:01", ips: [192.168.1.1], vni: 5000, server: s11, vlan: 10}
"""
MORE = (
    GOOD
    + """  - {name: a2, mac: "00:00:0a:00:00:02", ips: [192.168.1.2], vni: 5000,
     server: s21, vlan: 20}
"""
)
DUPLICATE = (
    GOOD
    + """  - {name: a3, mac: "00:00:0a:00:00:01", ips: [192.168.1.3], vni: 5000,
     server: s21, vlan: 30}
"""
)


def write(path: Path, text: str) -> None:
    """Replace the file in one step, as editors and config tools do."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def test_edits_apply_and_bad_edits_change_nothing(tmp_path: Path):
    path = tmp_path / "inventory.yaml"
    path.write_text(GOOD)
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    controller.attach(Vm("api-vm", "00:00:0b:00:00:09", (), 6000, "s22", 99, source="api"))
    watcher = InventoryWatcher(controller, path, interval=0.05)
    watcher.load_now()
    watcher.start()
    try:
        assert set(controller.vms) == {"a1", "api-vm"}
        write(path, MORE)
        assert wait_until(lambda: "a2" in controller.vms)
        write(path, DUPLICATE)
        assert wait_until(lambda: "vm a3" in watcher.last_error)
        assert "vm a3: mac: 00:00:0a:00:00:01 is already used by vm a1" in watcher.last_error
        assert set(controller.vms) == {"a1", "a2", "api-vm"}
        write(path, "vms: [")
        assert wait_until(lambda: "not valid YAML" in watcher.last_error)
        write(path, GOOD)
        assert wait_until(lambda: set(controller.vms) == {"a1", "api-vm"})
        assert controller.vms["api-vm"].source == "api"  # other sources untouched
    finally:
        watcher.stop()


def test_a_file_the_store_did_not_take_is_read_again(tmp_path: Path):
    """Started without ``load_now`` (as a replica starts it when it begins
    to lead), the watcher reads the file at once; a commit refused by the
    store (here NotLeader: the lease lapsed) leaves the watcher running and
    the file is read again until it is stored."""
    path = tmp_path / "inventory.yaml"
    path.write_text(GOOD)
    leadership = FixedLeadership("r1")
    controller = Controller(
        two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"), leadership=leadership
    )
    watcher = InventoryWatcher(controller, path, interval=0.05)
    watcher.start()
    try:
        assert wait_until(lambda: "r1 is not the leader" in watcher.last_error)
        assert controller.vms == {}
        leadership.term = 1
        # (the watcher clears its error after the commit returns: wait for both)
        assert wait_until(lambda: "a1" in controller.vms and watcher.last_error == "")
    finally:
        watcher.stop()
