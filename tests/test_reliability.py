"""Faults survived with 10,000 VMs installed (figures in docs/reliability.md):
a switch killed and restarted is restored; with the controller down the data
plane keeps forwarding, and the restarted controller writes nothing."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.store import Store
from switch_fabric import needs_switch, two_tor_fabric, wait_until
from test_controller_switch import delivered

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from vm_move import MOVER as A2, PROBER as A1, population  # noqa: E402

pytestmark = needs_switch()
VMS = 10000


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reliability")
    with two_tor_fabric(tmp / "logs") as sf:
        store_path = tmp / "state.db"
        controller = Controller(sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600)
        controller.replace_source("inventory", population(VMS) + [A1, A2])
        controller.start()
        assert controller.wait_converged(300)
        assert delivered(sf, A1, A2)
        yield sf, controller, store_path
        controller.stop()


def test_switch_killed_and_restarted_is_restored(loaded):
    sf, controller, _ = loaded
    tor2 = controller.supervisors["tor2"]
    writes_before = tor2.status.writes
    killed = time.monotonic()
    sf.switches["tor2"].restart()
    assert wait_until(lambda: tor2.status.writes > writes_before and delivered(sf, A1, A2),
                      timeout=120, interval=0.05)
    restored = time.monotonic() - killed
    assert tor2.status.entries > 3 * VMS // 2
    print(f"\n{VMS} VMs: tor2 killed, restarted and restored; A1->A2 traffic back after "
          f"{restored:.2f} s ({tor2.status.entries} entries re-pushed)")


def test_controller_outage_keeps_forwarding_and_restart_writes_nothing(loaded):
    sf, controller, store_path = loaded
    controller.stop()
    outage_ok = [delivered(sf, A1, A2, tag=i) and delivered(sf, A2, A1, tag=i) for i in range(5)]
    assert all(outage_ok), "traffic stopped while the controller was down"
    started = time.monotonic()
    again = Controller(sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600)
    again.start()
    try:
        assert again.wait_converged(300)
        took = time.monotonic() - started
        assert {n: s.status.writes for n, s in again.supervisors.items()} == {"tor1": 0, "tor2": 0}
        assert len(again.vms) == VMS + 2
        print(f"\ncontroller down: 10/10 probes delivered; restart with {VMS} VMs reconciled "
              f"with 0 writes in {took:.2f} s")
    finally:
        again.stop()
