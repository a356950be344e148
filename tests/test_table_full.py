"""A table filling up: the VM whose entries do not fit is reported (API,
status, event, metric) and everything else keeps working."""

from __future__ import annotations

from helpers import wait_until
from p4vtep.api.server import vm_to_pb
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.events import WriteFailed
from p4vtep.model.addressing import IPS_PER_FAMILY_MAX
from p4vtep.model.fabric import Vm
from p4vtep.state.sqlite_store import Store
from switch_fabric import A1, A2, bmv2_fabric, delivered, needs_switch

pytestmark = needs_switch()

ARP_TABLE_SIZE = 65536


def fill_vms() -> list[Vm]:
    """VMs of tenant A, 8 IPv4 addresses each (a VM's most), that with A1 and
    A2 need more ARP entries on every ToR hosting the VNI than the table has:
    each VM's addresses are ARP entries on both ToRs. They sort after a1 and
    a2, so those are written first. Their port security is off: guarded, their
    addresses would fill the (smaller) IPv4 source guard first."""
    per_vm = IPS_PER_FAMILY_MAX
    count = ARP_TABLE_SIZE // per_vm + 1
    # (server, VLANs) with room: a VLAN is one VF of its server.
    places = [("s12", range(1, 4095)), ("s22", range(1, 4095)), ("s11", range(100, 4095))]
    slots = [(server, vlan) for server, vlans in places for vlan in vlans][:count]
    vms = []
    for n, (server, vlan) in enumerate(slots):
        ips = tuple(
            f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}"
            for i in range(n * per_vm + 1, (n + 1) * per_vm + 1)
        )
        mac = f"02:00:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}:01"
        vms.append(Vm(f"zz-fill-{n:05}", mac, ips, 5000, server, vlan, port_security=False))
    return vms


def test_full_arp_table_is_reported_per_vm(tmp_path):
    fill = fill_vms()
    with bmv2_fabric(tmp_path / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(tmp_path / "s.db"), resync_seconds=3600
        )
        events = controller.bus.subscribe()
        controller.replace_source("inventory", [A1, A2, *fill])
        controller.start()
        try:
            tor1 = controller.supervisors["tor1"]
            failed = None
            while failed is None:
                event = events.get(timeout=120)
                if (
                    isinstance(event, WriteFailed)
                    and event.switch == "tor1"
                    and any(name.startswith("zz-fill-") for name in event.vms)
                ):
                    failed = event
            # The last fill VMs overflow the table (a2's ARP entry on tor1,
            # written after them, may not fit either, and is then reported
            # too); a1's entries fit.
            overflowing = sorted(n for n in failed.vms if n.startswith("zz-fill-"))
            assert overflowing
            assert "a1" not in failed.vms
            assert set(tor1.status.vm_errors) == set(failed.vms)
            error = vm_to_pb(controller, controller.vms[overflowing[-1]]).error
            assert error.startswith("tor1: table arp_suppression (size 65536): ")
            assert vm_to_pb(controller, controller.vms["a1"]).error == ""
            # The rest keeps working (tor2 may still be writing its share).
            assert wait_until(lambda: delivered(sf, A1, A2), timeout=30)
        finally:
            controller.stop()
