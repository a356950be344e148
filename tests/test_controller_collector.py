"""The cyclic collector of a running controller (``p4vtep controller run``,
issue 40): what the controller holds once started is frozen out of the
collector's sight, and the youngest generation is collected less often
(controller_run.settle_collector; the controller makes no cycles of its
own: tests/test_reference_cycles.py)."""

from __future__ import annotations

import gc

from p4vtep.cli.controller_run import COLLECTOR_THRESHOLDS, settle_collector


def test_settle_collector_freezes_what_is_held_and_sets_the_thresholds() -> None:
    thresholds = gc.get_threshold()
    held = [[i] for i in range(1000)]  # (containers: tracked by the collector)
    try:
        settle_collector()
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS != thresholds
        assert gc.get_freeze_count() >= len(held)
        assert not any(x is held for x in gc.get_objects())  # (frozen: not listed)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert any(x is held for x in gc.get_objects())
