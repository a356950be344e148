"""The cyclic collector of a running controller (``p4vtep controller run``,
issue 40): what the controller holds once started is frozen out of the
collector's sight; the thresholds are left as they are (raising them broke
a replica's recovery from etcd quorum loss: controller_run.settle_collector)."""

from __future__ import annotations

import gc

from p4vtep.cli.controller_run import settle_collector


def test_settle_collector_freezes_what_is_held_and_keeps_the_thresholds() -> None:
    thresholds = gc.get_threshold()
    held = [[i] for i in range(1000)]  # (containers: tracked by the collector)
    try:
        settle_collector()
        assert gc.get_threshold() == thresholds
        assert gc.get_freeze_count() >= len(held)
        assert not any(x is held for x in gc.get_objects())  # (frozen: not listed)
    finally:
        gc.unfreeze()
    assert any(x is held for x in gc.get_objects())
