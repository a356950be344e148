"""Sustained churn: 10,000 VMs installed, then 60 s of attach / detach /
migrate offered at 500 events/s (tests/churn_driver.py: an open offer, the
controller taking them in batches); every event is acknowledged and
afterwards each switch holds exactly the desired state, compared entry by
entry. The rate reached and per-event latencies are printed; the speed
targets themselves are measured by bench/churn.py, not asserted here.
(Figure in docs/reliability.md.)"""

from __future__ import annotations

import os

from churn_driver import offer_churn
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.sqlite_store import Store
from switch_fabric import SERVERS, background_vms, bmv2_fabric, needs_switch, read_back_matches

pytestmark = needs_switch("scale")
VMS = 10000
SECONDS = float(os.environ.get("P4VTEP_CHURN_SECONDS", "60"))
RATE = 500.0


def test_churn_leaves_exactly_the_desired_state(tmp_path):
    with bmv2_fabric(tmp_path / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(tmp_path / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", background_vms(VMS))
        controller.start()
        try:
            assert controller.wait_converged(300)
            churn = offer_churn(controller, sf.fabric, SERVERS, seconds=SECONDS, rate=RATE)
            assert not churn.errors, churn.errors[:5]
            assert controller.wait_converged(300)
            read_back_matches(sf, controller)
            latencies = churn.all_latencies()
            p50, p99 = (latencies[int(q * (len(latencies) - 1))] * 1e3 for q in (0.5, 0.99))
            counts = {kind: len(values) for kind, values in churn.latencies.items()}
            print(
                f"\nchurn: {churn.done} events in {churn.seconds:.0f} s "
                f"({churn.done / churn.seconds:.1f}/s: {counts}); "
                f"latency to ack p50 {p50:.1f} ms p99 {p99:.1f} ms; "
                f"switches equal the desired state entry by entry"
            )
            assert all(counts.values()), counts
        finally:
            controller.stop()
