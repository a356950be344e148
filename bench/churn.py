#!/usr/bin/env python3
"""Benchmark 4: sustained churn over 10,000 VMs on two BMv2 ToRs.

Attach / detach / migrate events at a target rate (default 500/s for 60 s),
from 64 concurrent callers, so at most 64 events are outstanding (when the
controller cannot keep up, the achieved rate says so). Each caller waits for
its event's acknowledgement, so the rate is bounded by callers / mean
latency: with 16 callers (the default until 2026-11) that bound, not the
controller, held the benchmark near 430/s. Per event, the latency
is from the call until every ToR acknowledged it. Afterwards every switch is
read back and compared entry by entry with the desired state.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import REPO, percentile, require_switch, summary, write_result

sys.path.insert(0, str(REPO / "tests"))

from churn_driver import offer_churn
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.sqlite_store import Store
from switch_fabric import background_vms, read_back_matches, two_tor_fabric

SERVERS = ("s11", "s12", "s21", "s22")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--callers", type=int, default=64, help="concurrent callers (at most 64 outstanding)"
    )
    parser.add_argument("--name", default="churn")
    args = parser.parse_args()
    require_switch()
    with tempfile.TemporaryDirectory() as tmp, two_tor_fabric(Path(tmp) / "logs") as sf:
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        controller.replace_source("inventory", background_vms(args.vms))
        controller.start()
        assert controller.wait_converged(600)
        churn = offer_churn(
            controller,
            sf.fabric,
            SERVERS,
            seconds=args.seconds,
            rate=args.rate,
            callers=args.callers,
        )
        assert not churn.errors, churn.errors[:5]
        assert controller.wait_converged(600)
        read_back_matches(sf, controller)
        controller.stop()
    latencies = churn.latencies
    elapsed = churn.seconds
    every = churn.all_latencies()
    done = len(every)

    def pcts(values: list[float]) -> dict:
        if not values:
            return {"n": 0}
        return {
            **summary(values),
            "p50": percentile(values, 50),
            "p90": percentile(values, 90),
            "p99": percentile(values, 99),
        }

    result = {
        "vms": args.vms,
        "target_rate": args.rate,
        "callers": args.callers,
        "seconds": elapsed,
        "events": done,
        "events_per_s": done / elapsed,
        "read_back_exact": True,
        "latency_seconds": {"all": pcts(every), **{k: pcts(v) for k, v in latencies.items()}},
    }
    print(
        f"churn: {done} events in {elapsed:.1f} s = {done / elapsed:.0f}/s (target "
        f"{args.rate:.0f}/s); latency to ack p50 {percentile(every, 50) * 1e3:.1f} ms "
        f"p99 {percentile(every, 99) * 1e3:.1f} ms; read-back exact"
    )
    write_result(args.name, result)


if __name__ == "__main__":
    main()
