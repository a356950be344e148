"""Make-before-break with overlapping migrations, without switches: the
supervisors are not started and acknowledgements are given by hand, so the
test decides the order in which ToRs confirm."""

from __future__ import annotations

import threading
import time

from fabric_fixture import two_tor_fabric, vms
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.sqlite_store import Store


def ack(controller: Controller, tor: str, version: int) -> None:
    """Pretend ``tor``'s supervisor applied ``version``."""
    sup = controller.supervisors[tor]
    with sup._applied:
        sup.status.version = version
        sup._applied.notify_all()


def bound_macs(controller: Controller, tor: str) -> set[str]:
    """MACs of the VMs with an access binding in what ``tor`` must hold now."""
    p4info = controller.pipeline.p4info
    table_id = p4info.table("access_binding").preamble.id
    mac_param = next(
        p.id for p in p4info.params(p4info.action("bind_vm").preamble.id) if p.name == "vm_mac"
    )
    _, held = controller.compile_for(tor)
    macs = set()
    for key in held.entities:
        entity = held.entity(key)
        te = entity.table_entry
        if entity.WhichOneof("entity") == "table_entry" and te.table_id == table_id:
            value = next(p.value for p in te.action.action.params if p.param_id == mac_param)
            macs.add(":".join(f"{b:02x}" for b in value.rjust(6, b"\0")))
    return macs


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_overlapping_migrations_away_from_one_tor_keep_their_own_pins():
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store())
    controller.replace_source("inventory", vms())  # b1, b2 on s12 (tor1)
    b1, b2 = controller.get("b1"), controller.get("b2")
    for tor in ("tor1", "tor2"):
        ack(controller, tor, controller.version)
    start = controller.version

    first = threading.Thread(target=controller.migrate, args=("b1", "s21", 31, 20))
    first.start()
    wait_for(lambda: controller.version == start + 1)
    first_version = controller.version
    second = threading.Thread(target=controller.migrate, args=("b2", "s22", 41, 20))
    second.start()
    wait_for(lambda: controller.version == start + 2)
    # Neither move is confirmed: tor1 still holds both VMs where they were.
    assert {b1.mac, b2.mac} <= bound_macs(controller, "tor1")
    assert {b1.mac, b2.mac} <= bound_macs(controller, "tor2")

    ack(controller, "tor2", first_version)  # tor2 confirms the first move only
    first.join(5)
    assert not first.is_alive()
    held = bound_macs(controller, "tor1")
    assert b1.mac not in held  # released by its own migration
    assert b2.mac in held  # still pinned: its move is not confirmed yet

    ack(controller, "tor2", controller.version)
    second.join(5)
    assert not second.is_alive()
    assert not {b1.mac, b2.mac} & bound_macs(controller, "tor1")


def test_a_pinned_place_is_not_given_away_until_released():
    from p4vtep.model.fabric import Vm
    from p4vtep.model.validation import ValidationError

    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store())
    controller.replace_source("inventory", vms())
    ack(controller, "tor1", controller.version)
    moving = threading.Thread(target=controller.migrate, args=("b1", "s21", 31, 20))
    moving.start()
    wait_for(lambda: controller.get("b1").server == "s21")
    squatter = Vm("c1", "00:00:0c:00:00:01", ("192.168.3.1",), 6000, "s12", 30)  # b1's old slot
    try:
        controller.attach(squatter)
    except ValidationError as exc:
        assert "VLAN 30 on server s12" in str(exc)
    else:
        raise AssertionError("took a slot the old ToR still uses")
    ack(controller, "tor2", controller.version)
    moving.join(5)
    controller.attach(squatter)  # free now
    assert squatter.mac in bound_macs(controller, "tor1")
