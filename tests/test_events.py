"""The `change` values of DesiredStateChanged are the ones events.py
documents, for every change the controller accepts."""

import queue

from fabric_fixture import two_tor_fabric, vms
from p4vtep import events
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline


def published(controller: Controller, subscription: queue.Queue) -> list[tuple[str, str]]:
    got = []
    while True:
        try:
            event = subscription.get_nowait()
        except queue.Empty:
            return got
        if isinstance(event, events.DesiredStateChanged):
            got.append((event.vm, event.change))


def test_change_values_are_the_documented_ones():
    controller = Controller(two_tor_fabric(), bmv2_pipeline())  # supervisors never started
    subscription = controller.bus.subscribe()
    a1, a2, *_ = vms()
    controller.replace_source("inventory", [a2])
    controller.attach(a1)
    controller.set_qos("a1", "gold")
    controller.migrate("a1", "s21", timeout=0)
    controller.detach("a1")
    assert published(controller, subscription) == [
        ("*", events.reloaded("inventory")),
        ("a1", events.ATTACHED),
        ("a1", events.QOS),
        ("a1", events.MIGRATED),
        ("a1", events.DETACHED),
    ]
    assert events.reloaded("inventory") == "inventory reloaded"
    assert events.refused("bad") == "refused: bad"
