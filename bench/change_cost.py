#!/usr/bin/env python3
"""Benchmark: the controller's CPU per change as the number of tenants grows.

A change must cost what depends on it, not what the ToRs hold. Here the
fabric's 10,000 VMs are spread over ``--tenants`` tenants, each a VRF with
one routed VNI (a /16 and its anycast gateway), each tenant on two
neighbouring ToRs of ``--tors`` (two servers each; with 2 ToRs, every
tenant on both). No switch: the controller alone, in this process, its CPU
time (``time.process_time``) for

- **a VM change**: attaches and detaches in random tenants, one by one
  through ``Controller.attach`` / ``detach`` (validated, applied to each ToR's
  compiler, stored), each ToR's changes taken after every 8 of them (a
  switch pass);
- **a learned route**: one host route learned over EVPN into a tenant's VRF
  and withdrawn again, as the EVPN source takes them from its speaker (into
  its learned table, committed; 1,000 other host routes learned already),
  each ToR's changes taken after each.

Each figure is the median of ``--rounds`` rounds per tenant count. With
``--code REV`` the runs are marked as another commit's: run it with that
commit's tree on ``PYTHONPATH`` (``git worktree add``), this script from
this tree. Results: ``bench/results/change_cost.json``, runs kept across
sessions (``--label`` names them); ``bench/report.py`` tables and plots them.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import random
import statistics
import tempfile
import time
from pathlib import Path

from common import RESULTS, machine
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.model.fabric import Fabric, Server, Tor, Uplink, Vm
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store
from tenants import L3VNI_BASE, add_tenants, spread_vms, tenant_vm

TORS = 2  # --tors: each with two servers; a tenant is on two neighbouring ToRs
VMS = 10_000
CHURN_VLANS = range(3000, 4094)  # (the background VMs stay below: 2,500 a server)
PASS_EVERY = 8  # changes between two takes of each ToR's changes
LEARNED = 1000  # host routes learned already when one more comes and goes
ASN, PEER = 65000, "192.0.2.2"  # the peer (nothing listens: the speaker never starts)
EXTERNAL_VTEP, EXTERNAL_RMAC, EXTERNAL_VNI = "10.9.9.9", "02:fe:00:00:00:09", 9000


def servers_of(tenant: int, tors: int) -> tuple[str, ...]:
    """The four servers a tenant's VMs go to: both of its two ToRs'."""
    first, second = tenant % tors + 1, (tenant + 1) % tors + 1
    return tuple(f"s{t}-{port}" for t in (first, second) for port in (1, 2))


def fabric_of(tenants: int, tors: int = TORS) -> Fabric:
    fabric = Fabric()
    for t in range(1, tors + 1):
        uplinks = (Uplink(3, "00:5e:00:00:01:01"), Uplink(4, "00:5e:00:00:01:02"))
        fabric.tors[f"tor{t}"] = Tor(f"tor{t}", f"127.0.0.1:{t}", t, f"10.0.0.{t}",
                                     f"00:aa:00:00:00:{t:02x}", uplinks)  # fmt: skip
        for port in (1, 2):
            fabric.servers[f"s{t}-{port}"] = Server(f"s{t}-{port}", f"tor{t}", port)
    add_tenants(fabric, tenants)
    rts = [(f"{ASN}:{vni}",) for vni in fabric.vnis]
    fabric.evpn = EvpnConfig(
        asn=ASN,
        router_id="192.0.2.1",
        peers=(EvpnPeer(PEER, ASN),),
        vnis=tuple(VniRouting(vni, None, rt, rt) for vni, rt in zip(fabric.vnis, rts, strict=True)),
    ).for_fabric(fabric)
    return fabric


def background(tenants: int, count: int = VMS, tors: int = TORS) -> list[Vm]:
    """``count`` VMs, tenant by tenant, each tenant's over its four servers."""
    return spread_vms(tenants, count, lambda tenant: servers_of(tenant, tors))


def route(tenant: int, n: int) -> MacIpRoute:
    """A host behind the external VTEP, in a tenant's VRF (in no subnet of
    ours), as a two-label type 2 route."""
    ip = f"172.{16 + (n >> 16)}.{n >> 8 & 255}.{n & 255}"
    mac = f"02:fe:01:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}"
    l3vni = L3VNI_BASE + tenant
    return MacIpRoute(f"{EXTERNAL_VTEP}:{EXTERNAL_VNI}", mac, EXTERNAL_VNI, EXTERNAL_VTEP, ip,
                      (f"{ASN}:{EXTERNAL_VNI}", f"{ASN}:{l3vni}"), l3vni=l3vni,
                      router_mac=EXTERNAL_RMAC)  # fmt: skip


def controller_of(tenants: int, directory: Path, vms: int = VMS, tors: int = TORS) -> Controller:
    """The fabric's controller with its VMs, each ToR's compile built."""
    fabric = fabric_of(tenants, tors)
    controller = Controller(fabric, bmv2_pipeline(), Store(directory / "state.db"))
    controller.replace_source("inventory", background(tenants, vms, tors))
    for tor in fabric.tors:
        controller.snapshot(tor)  # (built, as a switch's first pass builds it)
    return controller


def take_changes(controller: Controller) -> None:
    for tor in controller.fabric.tors:
        controller.changes(tor)


def vm_changes(controller: Controller, tenants: int, changes: int, seed: int) -> float:
    """CPU seconds per attach or detach (``changes`` of them)."""
    rng = random.Random(seed)
    tors = len(controller.fabric.tors)
    free = {s: list(CHURN_VLANS) for s in controller.fabric.servers}
    attached: list[Vm] = []
    serial = 0
    began = time.process_time()
    for i in range(changes):
        if attached and rng.random() < 0.5:
            gone = attached.pop(rng.randrange(len(attached)))
            controller.detach(gone.name)
            free[gone.server].append(gone.vlan)
        else:
            serial += 1
            tenant = rng.randrange(tenants)
            server = rng.choice(servers_of(tenant, tors))
            vlan = free[server].pop(0)
            new = tenant_vm(f"c{seed}-{serial}", 60_000 + serial, tenant, server, vlan)
            controller.attach(new)
            attached.append(new)
        if i % PASS_EVERY == PASS_EVERY - 1:
            take_changes(controller)
    spent = time.process_time() - began
    for gone in attached:  # (as it was, for the next round)
        controller.detach(gone.name)
    take_changes(controller)
    return spent / changes


def learned_route(controller: Controller, tenants: int, changes: int) -> float:
    """CPU seconds per learned host route that comes or goes, as the EVPN
    source takes it from its speaker (into the learned table, committed)."""
    source = EvpnSource(controller)
    service = source.service
    source.sync()
    for i in range(LEARNED):  # (as a burst: one commit)
        service._route(PEER, route(i % tenants, i))
    source._sync_pending()
    take_changes(controller)
    extra = route(tenants // 2, LEARNED + 1)
    began = time.process_time()
    for i in range(changes):
        if i % 2 == 0:
            service._route(PEER, extra)
        else:
            service._withdraw(PEER, extra.nlri_key())
        source._sync_pending()
        take_changes(controller)
    spent = time.process_time() - began
    service._peer_state(PEER, False)  # (all of it gone, for the next round)
    source._sync_pending()
    take_changes(controller)
    return spent / changes


def measure(
    tenants: int, rounds: int, changes: int, routes: int, vms: int = VMS, tors: int = TORS
) -> dict:
    per_change, per_route = [], []
    with tempfile.TemporaryDirectory() as tmp:
        controller = controller_of(tenants, Path(tmp), vms, tors)
        gc.collect()
        gc.freeze()  # (as `p4vtep controller run` does once started)
        try:
            for r in range(rounds):
                per_change.append(vm_changes(controller, tenants, changes, seed=r))
                per_route.append(learned_route(controller, tenants, routes))
        finally:
            gc.unfreeze()
    return {
        "tenants": tenants,
        "tors": tors,
        "vm_change_us": [x * 1e6 for x in per_change],
        "learned_route_us": [x * 1e6 for x in per_route],
        "vm_change_us_median": statistics.median(per_change) * 1e6,
        "learned_route_us_median": statistics.median(per_route) * 1e6,
    }


def main() -> None:
    # The speaker never starts: announcing our VMs to it fails (and would be
    # retried), which is not what is measured.
    logging.getLogger("p4vtep.evpn").setLevel(logging.CRITICAL)
    logging.getLogger("p4vtep.sources").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, nargs="+", default=[2, 50, 250, 500])
    parser.add_argument("--tors", type=int, default=TORS, help="ToRs, two servers each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changes", type=int, default=2000, help="VM changes a round")
    parser.add_argument("--routes", type=int, default=200, help="learned route changes a round")
    parser.add_argument("--code", default="", help="another commit's tree on PYTHONPATH")
    parser.add_argument("--label", default="")
    parser.add_argument("--name", default="change_cost")
    args = parser.parse_args()
    points = []
    for tenants in args.tenants:
        point = measure(tenants, args.rounds, args.changes, args.routes, tors=args.tors)
        points.append(point)
        print(
            f"{args.code or 'this code'}: {tenants} tenants, {args.tors} ToRs: a VM change "
            f"{point['vm_change_us_median']:.0f} µs, a learned route "
            f"{point['learned_route_us_median']:.0f} µs of CPU",
            flush=True,
        )
    path = RESULTS / f"{args.name}.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data["machine"] = machine()
    data.setdefault("runs", []).append(
        {
            "label": args.label or time.strftime("%Y-%m-%d %H:%M"),
            "code": args.code,
            "tors": args.tors,
            "rounds": args.rounds,
            "changes": args.changes,
            "routes": args.routes,
            "points": points,
        }
    )
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {path} (docs/benchmarks.md: `make bench-report`)")


if __name__ == "__main__":
    main()
