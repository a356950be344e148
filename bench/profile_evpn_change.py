#!/usr/bin/env python3
"""Profile: one EVPN route change with many routes already installed, in the
controller alone (no switch, no gobgpd).

The fabric, VMs and routes of ``bench/evpn_irb.py`` (VRF red, ``--vms``
routed VMs of our own, ``--routes`` two-label type 2 routes from the peer,
host routes only). The routes are handed to the EVPN service as its speaker
would (``on_route``) and committed at once (the source's commit of the
learned facts); then ``--samples`` single-route changes (a
new route, its withdrawal) are timed from the hand-over to the end of
``Controller.commit_learned``, and one more pass runs under cProfile: where
the time of a single-route change goes. ``--top`` functions are printed by
cumulative time.

Not a figure of the data plane: nothing is written to a switch (no
supervisor runs). Prints; writes nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from common import percentile
from evpn_irb import (
    OTHER,
    PEER_VTEP,
    PROBER,
    background,
    make_fabric,
    peer_ip,
    peer_route,
    probe_ip,
)
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store

# Where a change's time goes: (label, (file, function)), cumulative.
SPLIT = [
    ("the route into the learned table (EvpnService._route)", ("service.py", "_route")),
    ("EvpnView.learned()", ("table.py", "learned")),
    ("Controller.commit_learned (the incremental compile)", ("controller.py", "commit_learned")),
    ("EvpnSource._commit_learned, all of it", ("evpn.py", "_commit_learned")),
]
PEER = "192.0.2.2"  # the peer's address (nothing listens: the speaker is never started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routes", type=int, default=10000)
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fabric = make_fabric(["127.0.0.1:1", "127.0.0.1:2"], "192.0.2.1", PEER)
        controller = Controller(fabric, bmv2_pipeline(), Store(Path(tmp) / "state.db"))
        controller.replace_source("inventory", [*background(args.vms), PROBER, OTHER])
        source = EvpnSource(controller)
        service = source.service
        source.sync()
        # The ToRs' compiles built, as their supervisors would at start; what
        # each change gives them to write is taken after it (not timed).
        tors = controller.desired.tors.values()
        for compiler in tors:
            compiler.rebuild()
            compiler.take_changes()

        def change(route: object, withdraw: bool = False) -> None:
            if withdraw:
                service._withdraw(PEER, route.nlri_key())  # type: ignore[attr-defined]
            else:
                service._route(PEER, route)  # type: ignore[arg-type]
            source._sync_pending()

        def written() -> int:
            return sum(len(compiler.take_changes()) for compiler in tors)

        t0 = time.perf_counter()
        for i in range(args.routes):  # (as a burst: one commit for all of them)
            service._route(PEER, peer_route(peer_ip(i), i))
        source._sync_pending()
        fill = time.perf_counter() - t0
        written()
        learned = controller.desired.learned
        hosts = sum(len(h) for h in learned.hosts.values())
        print(f"{args.routes} routes committed in {fill:.1f} s ({hosts} host routes)")
        assert hosts == args.routes
        assert PEER_VTEP in learned.vteps()
        times = []
        for i in range(args.samples):
            route = peer_route(probe_ip(i), 1 << 20 | i)
            t = time.perf_counter()
            change(route)
            times.append(time.perf_counter() - t)
            assert written() == 2  # (a host route on each ToR)
            change(route, withdraw=True)
            written()
        print(
            f"single new route, {args.routes} installed: p50 {percentile(times, 50) * 1e3:.2f} ms,"
            f" p99 {percentile(times, 99) * 1e3:.2f} ms over {args.samples}"
        )
        profile = cProfile.Profile()
        route = peer_route(probe_ip(args.samples), 1 << 20 | args.samples)
        profile.enable()
        change(route)
        profile.disable()
        change(route, withdraw=True)
        stats = pstats.Stats(profile)
        total = stats.total_tt  # type: ignore[attr-defined]
        print(f"one new route under cProfile: {total * 1e3:.2f} ms")
        cumulative: dict[tuple[str, str], float] = {}
        for (path, _, name), entry in stats.stats.items():  # type: ignore[attr-defined]
            key = (Path(path).name, name)  # (of two of one name, the outer one)
            cumulative[key] = max(cumulative.get(key, 0.0), entry[3])
        whole = cumulative[Path(__file__).name, "change"]
        print(f"  the change, all of it: {whole * 1e3:.2f} ms (cumulative: the shares below)")
        for label, key in SPLIT:
            seconds = cumulative.get(key, 0.0)
            print(f"  {label}: {seconds * 1e3:.2f} ms ({100 * seconds / whole:.0f} %)")
        stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
