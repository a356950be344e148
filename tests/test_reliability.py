"""Faults survived with 10,000 VMs installed (figures in docs/reliability.md):
a switch killed and restarted is restored; with the controller down the data
plane keeps forwarding, and the restarted controller writes nothing."""

from __future__ import annotations

import time

import pytest
from helpers import wait_until
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.sqlite_store import Store
from switch_fabric import PROBE_SENDER as A1
from switch_fabric import PROBE_TARGET as A2
from switch_fabric import (
    background_vms,
    bmv2_fabric,
    delivered,
    needs_switch,
    read_back_matches,
    start_controller,
)

pytestmark = needs_switch("scale")
VMS = 10000


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reliability")
    with bmv2_fabric(tmp / "logs") as sf:
        store_path = tmp / "state.db"
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600, election_id=10
        )
        controller.replace_source("inventory", background_vms(VMS) + [A1, A2])
        controller.start()
        assert controller.wait_converged(300)
        assert delivered(sf, A1, A2)
        controller.stop()  # each test starts its own from the stored state
        yield sf, store_path


def test_switch_killed_and_restarted_is_restored(loaded):
    sf, store_path = loaded
    controller = start_controller(sf, store_path, election_id=10, timeout=300)
    tor2 = controller.supervisors["tor2"]
    writes_before = tor2.status.writes
    killed = time.monotonic()
    sf.switches["tor2"].restart()
    assert wait_until(
        lambda: tor2.status.writes > writes_before and delivered(sf, A1, A2),
        timeout=120,
        interval=0.05,
    )
    restored = time.monotonic() - killed
    assert tor2.status.entries > 3 * VMS // 2
    controller.stop()
    print(
        f"\n{VMS} VMs: tor2 killed, restarted and restored; A1->A2 traffic back after "
        f"{restored:.2f} s ({tor2.status.entries} entries re-pushed)"
    )


def test_controller_outage_keeps_forwarding_and_restart_writes_nothing(loaded):
    sf, store_path = loaded
    start_controller(sf, store_path, election_id=10, timeout=300).stop()
    outage_ok = [delivered(sf, A1, A2, tag=i) and delivered(sf, A2, A1, tag=i) for i in range(5)]
    assert all(outage_ok), "traffic stopped while the controller was down"
    started = time.monotonic()
    again = Controller(
        sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600, election_id=10
    )
    again.start()
    try:
        assert again.wait_converged(300)
        took = time.monotonic() - started
        assert {n: s.status.writes for n, s in again.supervisors.items()} == {"tor1": 0, "tor2": 0}
        assert len(again.vms) == VMS + 2
        print(
            f"\ncontroller down: 10/10 probes delivered; restart with {VMS} VMs reconciled "
            f"with 0 writes in {took:.2f} s"
        )
    finally:
        again.stop()


def test_channel_dropped_mid_batch_converges_exactly(loaded, tmp_path):
    sf, store_path = loaded
    controller = start_controller(sf, store_path, election_id=10, timeout=300)
    try:
        extra = background_vms(VMS + 2000)[VMS:]  # 2,000 more VMs, one change
        everything = list(controller.vms.values()) + extra
        controller.replace_source("inventory", everything)
        sup = controller.supervisors["tor1"]
        assert wait_until(
            lambda: sup.status.version < controller.version, timeout=5, interval=0.001
        )
        time.sleep(0.05)
        sup.conn.channel.close()  # the session dies mid-write
        assert controller.wait_converged(120)
        assert len(controller.vms) == VMS + 2 + 2000
        assert len(Store(store_path).load_vms()) == VMS + 2 + 2000
        read_back_matches(sf, controller)
        assert delivered(sf, A1, A2)
    finally:
        controller.stop()


def test_backup_takes_over_at_scale(loaded, tmp_path):
    sf, store_path = loaded
    primary = start_controller(sf, store_path, election_id=10, timeout=300)
    try:
        # Primary and backup share the desired state (one SQLite file here):
        # same VMs, same indices, so the takeover needs no writes.
        backup = Controller(
            sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600, election_id=5
        )
        backup.start()
        assert wait_until(lambda: all(s.status.connected for s in backup.supervisors.values()))
        assert not any(s.status.primary for s in backup.supervisors.values())
        killed = time.monotonic()
        primary.stop()
        assert backup.wait_converged(120)
        assert all(s.status.primary for s in backup.supervisors.values())
        took = time.monotonic() - killed
        assert sum(s.status.writes for s in backup.supervisors.values()) == 0
        assert delivered(sf, A1, A2)
        print(
            f"\n{len(backup.vms)} VMs: backup primary and verified in {took:.2f} s after the "
            "primary stopped (0 writes needed)"
        )
    finally:
        primary.stop()
        if "backup" in locals():
            backup.stop()
