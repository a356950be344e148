"""A table filling up: the VM whose entries do not fit is reported (API,
status, event, metric) and everything else keeps working."""

from __future__ import annotations

from helpers import wait_until
from p4vtep.api.server import vm_to_pb
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.events import WriteFailed
from p4vtep.model.fabric import Vm
from p4vtep.state.sqlite_store import Store
from switch_fabric import A1, A2, bmv2_fabric, delivered, needs_switch

pytestmark = needs_switch()

ARP_TABLE_SIZE = 65536


def test_full_arp_table_is_reported_per_vm(tmp_path):
    # "zz-big" sorts last, so the small VMs' entries are written first.
    ips = tuple(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}" for i in range(ARP_TABLE_SIZE + 100))
    big = Vm("zz-big", "00:00:0a:00:00:99", ips, 5000, "s12", 99)
    with bmv2_fabric(tmp_path / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(tmp_path / "s.db"), resync_seconds=3600
        )
        events = controller.bus.subscribe()
        controller.replace_source("inventory", [A1, A2, big])
        controller.start()
        try:
            tor1 = controller.supervisors["tor1"]
            failed = None
            while failed is None:
                event = events.get(timeout=120)
                if (
                    isinstance(event, WriteFailed)
                    and event.switch == "tor1"
                    and "zz-big" in event.vms
                ):
                    failed = event
            # zz-big overflows the table; a2's ARP entry on tor1 (written after
            # it) does not fit either, and is reported too. a1's entries fit.
            assert "zz-big" in failed.vms
            assert "a1" not in failed.vms
            assert set(tor1.status.vm_errors) == set(failed.vms)
            error = vm_to_pb(controller, controller.vms["zz-big"]).error
            assert error.startswith("tor1: table arp_suppression (size 65536): ")
            assert vm_to_pb(controller, controller.vms["a1"]).error == ""
            # The rest keeps working (tor2 may still be writing its share).
            assert wait_until(lambda: delivered(sf, A1, A2), timeout=30)
        finally:
            controller.stop()
