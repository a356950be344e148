#!/usr/bin/env python3
"""Benchmark 4: sustained churn over 10,000 VMs on two BMv2 ToRs.

Issue 40's target: 2,000 attach / detach / migrate events per second offered
for 60 s, every event acknowledged, both switches read back exact at the
end, acknowledgement p99 <= 50 ms; and the highest rate at which the
read-back stays exact.

Each rate (``--rates``) gets two fresh BMv2 ToRs and a controller with
10,000 VMs converged on them; then events are offered at that rate for
``--seconds`` (tests/churn_driver.py: an open offer, one event every
1/rate s, whatever became of the ones before, unless ``--outstanding`` are
unacknowledged; ``--callers`` threads call the controller), each timed from
its offer until every ToR acknowledged it; then both switches are read back
and compared entry by entry with a whole compile of what they must hold.

A rate *holds* when every event offered was acknowledged (none refused, none
later than the driver's timeout), the offer was never held back (the driver
waits while ``--outstanding`` events are unacknowledged), the rate was
offered and achieved (acknowledgements over the time to the last one), each
within 1 %, and the read-back is exact. ``--sweep`` then steps (``--sweep-step``) up from the
highest rate given while rates hold, or down from it (not below the next
rate given) until one holds; ``highest_exact_rate`` is the highest that held.
Per rate the result keeps the CPU of this process (controller and driver),
of the two switches and of the rest of the machine, the load average, the
collector's pauses, the batches the controller committed, each switch's
passes, and per second of the offer the events' p50 and p99.

``--tenants N`` spreads the VMs over N tenants instead of two L2 VNIs:
each tenant a VRF with one routed VNI on both ToRs (bench/tenants.py), the
churn's attaches in tenant after tenant; its results go to
``churn_tenants.json`` (the judged ``churn.json`` keeps the two VNIs).

``--label`` names the runs in the results' ``runs`` (kept across sessions);
``--code`` marks them as another commit's (a "before" run: the controller
from that commit's tree on ``PYTHONPATH``, this driver), so the report does
not judge the targets with them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import REPO, RESULTS, percentile, require_switch, summary, write_result
from dataplane_load import MachineShare, process_cpu_seconds

sys.path.insert(0, str(REPO / "tests"))

from churn_driver import ChurnResult, churn_vm, offer_churn
from p4vtep.cli.controller_run import settle_collector
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Vm
from p4vtep.runtime.client import SwitchConnection
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.reconciler import SwitchReader, diff
from switch_fabric import SERVERS, SwitchFabric, background_vms, bmv2_fabric
from tenants import MAX_VM_NUMBER, add_tenants, spread_vms, tenant_vm

PYTHON_THRESHOLDS = gc.get_threshold()  # (before any controller's settle_collector)

TARGET_RATE = 2000.0  # issue 40
TARGET_P99_S = 0.050
HOLDS_WITHIN = 0.01  # achieved within 1 % of offered


def read_back(sf: SwitchFabric, controller: Controller) -> dict:
    """Each switch against a whole compile of what it must hold: entries
    missing, different and extra (all zero: exact)."""
    reader = SwitchReader(bmv2_pipeline().p4info)
    out: dict = {"exact": True}
    for name, tor in sf.fabric.tors.items():
        _, desired = controller.compile_for(name)
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
            left = diff(desired, reader.read(conn))
        counts = {
            "missing": len(left.inserts),
            "different": len(left.modifies),
            "extra": len(left.deletes),
            "entities": len(desired.entities),
        }
        out[name] = counts
        out["exact"] = out["exact"] and not (
            counts["missing"] or counts["different"] or counts["extra"]
        )
    return out


class GcPauses:
    """The cyclic collector's pauses in this process meanwhile (each holds
    every thread of the controller): per generation, how many, their total
    and the longest, in seconds."""

    def __init__(self) -> None:
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses[info["generation"]].append(time.perf_counter() - self._started)

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def summary(self) -> dict:
        return {
            str(g): {"n": len(v), "total_s": sum(v), "longest_s": max(v, default=0.0)}
            for g, v in self.pauses.items()
        }


def per_second(timeline: list[tuple[float, float]]) -> list[dict]:
    """Per second of the offer: events offered then and acknowledged, their
    latency's p50 and p99 (where a stall or a backlog happened)."""
    seconds: dict[int, list[float]] = {}
    for offered, latency in timeline:
        seconds.setdefault(int(offered), []).append(latency)
    return [
        {"second": s, "acked": len(v), "p50": percentile(v, 50), "p99": percentile(v, 99)}
        for s, v in sorted(seconds.items())
    ]


def pcts(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {
        **summary(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
    }


def holds(result: dict) -> bool:
    """Every event offered acknowledged, the offer never held back (the
    driver waits while ``outstanding`` events are unacknowledged: a backlog
    that grew that far was not kept up with), the rate asked for offered and
    achieved, each within 1 %, and the read-back exact."""
    return (
        result["read_back_exact"]
        and not result["errors"]
        and result["acks"] == result["offered"]
        and result["most_outstanding"] < result["outstanding"]
        and result["offered_per_s"] >= (1 - HOLDS_WITHIN) * result["target_rate"]
        and result["events_per_s"] >= (1 - HOLDS_WITHIN) * result["offered_per_s"]
    )


def first_churn_number(args: argparse.Namespace) -> int:
    """With ``--tenants``: the churn's VMs are numbered within their tenant
    from here up, past the background's (``spread_vms``)."""
    return args.vms // args.tenants + 8


def with_tenants(sf: SwitchFabric, args: argparse.Namespace) -> tuple[list[Vm], Callable]:
    """``--tenants``: the fabric's VNIs replaced by the tenants'; the
    background VMs over them, and the churn's new VMs, tenant after tenant."""
    tenants, first = args.tenants, first_churn_number(args)
    sf.fabric.vnis.clear()
    add_tenants(sf.fabric, tenants)

    def new_vm(serial: int, server: str, vlan: int) -> Vm:
        tenant, n = serial % tenants, first + serial // tenants
        return tenant_vm(f"churn{serial}", n, tenant, server, vlan)

    return spread_vms(tenants, args.vms, lambda _tenant: SERVERS), new_vm


def run_rate(args: argparse.Namespace, rate: float) -> dict:
    """One rate on a fresh fabric and controller."""
    with tempfile.TemporaryDirectory() as tmp, bmv2_fabric(Path(tmp) / "logs") as sf:
        background, new_vm = (
            with_tenants(sf, args) if args.tenants else (background_vms(args.vms), churn_vm)
        )
        controller = Controller(
            sf.fabric, bmv2_pipeline(), Store(Path(tmp) / "s.db"), resync_seconds=3600
        )
        try:
            controller.replace_source("inventory", background)
            controller.start()
            assert controller.wait_converged(600)
            settle_collector()  # as `p4vtep controller run` does once started
            switch_pids = [sw.process.pid for sw in sf.switches.values() if sw.process]
            batcher = getattr(controller, "_batcher", None)  # (a "before" controller has none)
            commits = (batcher.batches, batcher.requests) if batcher else (0, 0)
            passes = {n: s.status.reconciles for n, s in controller.supervisors.items()}
            own, switches = (
                process_cpu_seconds(os.getpid()),
                sum(map(process_cpu_seconds, switch_pids)),
            )
            share = MachineShare()
            share.start()
            with GcPauses() as pauses:
                churn = offer_churn(
                    controller,
                    sf.fabric,
                    SERVERS,
                    seconds=args.seconds,
                    rate=rate,
                    callers=args.callers,
                    outstanding=args.outstanding,
                    new_vm=new_vm,
                )
            machine_share = share.stop()
            machine_share["gc_pauses"] = pauses.summary()
            own = process_cpu_seconds(os.getpid()) - own
            switches = sum(map(process_cpu_seconds, switch_pids)) - switches
            passes = {n: s.status.reconciles - passes[n] for n, s in controller.supervisors.items()}
            if batcher:
                commits = (batcher.batches - commits[0], batcher.requests - commits[1])
            converged = controller.wait_converged(600)
            checked = read_back(sf, controller)
        finally:
            controller.stop()
            # (the next rate's controller starts from a plain collector)
            gc.unfreeze()
            gc.set_threshold(*PYTHON_THRESHOLDS)
    return result_of(
        args, rate, churn, converged, checked, own, switches, machine_share, passes, commits
    )


def result_of(
    args: argparse.Namespace,
    rate: float,
    churn: ChurnResult,
    converged: bool,
    checked: dict,
    own: float,
    switches: float,
    share: dict,
    passes: dict,
    commits: tuple[int, int],
) -> dict:
    every = churn.all_latencies()
    result = {
        "vms": args.vms,
        "tenants": args.tenants or None,  # None: the two L2 VNIs
        "target_rate": rate,
        "callers": args.callers,
        "outstanding": args.outstanding,
        "seconds": churn.seconds,  # first offer to last acknowledgement
        "offer_seconds": churn.offer_seconds,
        "offered": churn.offered,
        "offered_per_s": churn.offered_per_s,
        "skipped": churn.skipped,
        "acks": churn.done,
        "events": churn.done,
        "events_per_s": churn.achieved_per_s,
        "most_outstanding": churn.most_outstanding,
        "errors": len(churn.errors),
        "first_errors": churn.errors[:5],
        "converged_after": converged,
        "read_back_exact": checked["exact"] and converged,
        "read_back": checked,
        "latency_seconds": {
            "all": pcts(every),
            **{k: pcts(sorted(v)) for k, v in churn.latencies.items()},
        },
        "per_second": per_second(churn.timeline),
        "commits": commits[0],  # controller batches (0: a controller without batches)
        "events_per_commit": commits[1] / commits[0] if commits[0] else None,
        "passes": passes,
        "cpu": {
            "this_process_s": own,  # controller and driver
            "switches_s": switches,
            "per_event_ms": (own + switches) / churn.done * 1e3 if churn.done else None,
            "machine": share,
        },
    }
    result["holds"] = holds(result)
    return result


def line(r: dict) -> str:
    lat = r["latency_seconds"]["all"]
    p = (f"p50 {lat['p50'] * 1e3:.1f} ms, p99 {lat['p99'] * 1e3:.1f} ms") if lat["n"] else "-"
    load = r["cpu"]["machine"]
    return (
        f"{r['target_rate']:.0f}/s: offered {r['offered']} ({r['offered_per_s']:.0f}/s), "
        f"acked {r['acks']} ({r['events_per_s']:.0f}/s), {r['errors']} errors; ack {p}; "
        f"read-back {'exact' if r['read_back_exact'] else 'NOT exact'}; "
        f"{'holds' if r['holds'] else 'does not hold'}; CPU this process "
        f"{r['cpu']['this_process_s']:.1f} s, switches {r['cpu']['switches_s']:.1f} s; load "
        f"{load['loadavg_before'][0]:.2f}-{load['loadavg_after'][0]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument(
        "--rates", type=float, nargs="+", default=[500.0, 1000.0, 2000.0], help="events/s"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="per rate")
    parser.add_argument("--sweep", action="store_true", help="go on up until a rate fails")
    parser.add_argument("--sweep-step", type=float, default=250.0)
    parser.add_argument("--sweep-max", type=float, default=4000.0)
    parser.add_argument("--callers", type=int, default=64, help="threads calling the controller")
    parser.add_argument(
        "--outstanding", type=int, default=1024, help="most events offered and not acknowledged"
    )
    parser.add_argument("--label", default="", help="the runs' name in the results' runs")
    parser.add_argument("--code", default="", help="another commit's code (a 'before' run)")
    parser.add_argument(
        "--tenants", type=int, default=0, help="VMs over this many routed tenants (at least 2)"
    )
    parser.add_argument("--name", help="bench/results/NAME.json (churn, or churn_tenants)")
    args = parser.parse_args()
    args.name = args.name or ("churn_tenants" if args.tenants else "churn")
    if args.tenants:
        if args.tenants < 2:
            parser.error("--tenants: at least 2")
        # (at most every event an attach)
        last = first_churn_number(args) + int(max(args.rates) * args.seconds) // args.tenants
        if last >= MAX_VM_NUMBER:
            parser.error(
                f"--tenants {args.tenants}: the churn would number a tenant's VMs up to "
                f"{last}, past {MAX_VM_NUMBER - 1}: more tenants, or fewer events"
            )
    require_switch()
    # Killed: leave through the context managers (switches stopped, veths gone).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rates = sorted(set(args.rates))
    results = []
    for rate in rates:
        results.append(run_rate(args, rate))
        print(line(results[-1]), flush=True)
    if args.sweep:
        # Up from the highest rate given while rates hold; down from it
        # (not below the next one given) until one holds.
        top = results[-1]
        step = args.sweep_step if top["holds"] else -args.sweep_step
        floor = rates[-2] if len(rates) > 1 else 0.0
        rate = rates[-1] + step
        while floor < rate <= args.sweep_max:
            results.append(run_rate(args, rate))
            print(line(results[-1]), flush=True)
            if results[-1]["holds"] != (step > 0):
                break
            rate += step
    write(args, results)


def load_text(r: dict) -> str:
    machine = r["cpu"]["machine"]
    return f"{machine['loadavg_before'][0]:.2f}-{machine['loadavg_after'][0]:.2f}"


def write(args: argparse.Namespace, results: list[dict]) -> None:
    """The judged run (2,000/s, else the highest rate run) at the top, every
    rate in ``rates``, the highest that held; earlier runs kept in ``runs``."""
    path = RESULTS / f"{args.name}.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    runs = previous.get("runs", [])
    label = args.label or time.strftime("%Y-%m-%d %H:%M")
    for r in results:
        run = {
            "label": f"{label}, {r['target_rate']:.0f}/s offered, {r['seconds']:.0f} s",
            "load": load_text(r),
            "result": r,
        }
        if args.code:
            run["code"] = args.code
        runs.append(run)
    if args.code and previous:  # a "before" run: the judged figures stay as they were
        path.write_text(json.dumps({**previous, "runs": runs}, indent=2))
        print(f"wrote {path.relative_to(REPO)} (runs only)")
        return
    results = sorted(results, key=lambda r: r["target_rate"])
    if previous.get("label") == label and previous.get("rates"):
        # The same runs' label: this invocation adds rates to those (a sweep
        # taken up again); a rate run again replaces its earlier result.
        by_rate = {r["target_rate"]: r for r in previous["rates"]}
        by_rate.update({r["target_rate"]: r for r in results})
        results = sorted(by_rate.values(), key=lambda r: r["target_rate"])
    for r in results:
        r["holds"] = holds(r)
    judged = next((r for r in results if r["target_rate"] == TARGET_RATE), results[-1])
    held = [r["target_rate"] for r in results if r["holds"]]
    within = [
        r["target_rate"]
        for r in results
        if r["holds"] and r["latency_seconds"]["all"]["p99"] <= TARGET_P99_S
    ]
    write_result(
        args.name,
        {
            **judged,
            "target": {"rate": TARGET_RATE, "ack_p99_s": TARGET_P99_S, "seconds": 60.0},
            "rates": results,
            "highest_exact_rate": max(held) if held else None,
            "highest_rate_p99_within_target": max(within) if within else None,
            "label": label,
            "swept": args.sweep or bool(previous.get("swept") and previous.get("label") == label),
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
