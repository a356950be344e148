#!/usr/bin/env python3
"""Benchmark 4: packets/s of the p4vtep pipeline's three paths (local
switching, VXLAN encap, VXLAN decap) against the one-table L2 baseline
(bench/baseline/l2fwd.p4) on the same simple_switch_grpc process and veths,
at 64 and 1024 bytes, in rounds alternating baseline / p4vtep. The same three
routed between two subnets (routed_*), and all six with IPv6 tenant frames
(bridged6_*, routed6_*), run in the same rounds, each routed path compared
with the bridged path of the same kind and IP version. With ``--before REV``
an earlier committed p4vtep build's IPv4 paths (bridged, and routed if it
routes) run in the same rounds too, each against today's; ``--before`` may
be given up to dataplane_paths.MAX_BEFORE times (``make bench-dataplane``:
9be722a, the last build before the IPv6 data plane, for issue 37, and
14b7d2b, the last before port security, for issue 38). With ``--peer``
(a user-supplied build of stratum/fabric-tna's v1model pipeline, see
dataplane_peer.py) fabric-tna's bridging runs in the same rounds.

Port security (issue 38, ``--port-security on``, the default): a build that
has it gets its local VMs bound as the controller binds a VM by default,
guarded, with a source guard per address (/32, /128) and fe80::/64 and
::/128 (dataplane_paths.bind_vm), so the access paths (local, encap, routed
local and encap, IPv4 and IPv6) pay for the checks; a ``--before`` build
without port security is bound as before, so the two stand side by side.
What port security dropped of the sender's frames is counted per window
(there should be none). ``--port-security off`` binds every VM unguarded,
as runs before this option did. ``--port-security both``: as ``on``, and
today's build also runs with its VMs bound unguarded (program
``p4vtep-unguarded``, paths ``unguarded_local``, ``unguarded_encap``,
``unguarded_routed_local``, ``unguarded_routed_encap``; decap is not guarded,
so today's decap paths stand for both), so issue 37's cost (today unguarded
/ 9be722a) and issue 38's (today guarded / 14b7d2b) come from one run.

The result (bench/results/NAME.json), for readers of older results too:
``before`` is the first ``--before`` build ({revision, commit}, None without
one) and each path's ``vs_before`` its ratios to that build's path, as when
only one could be given; ``befores`` lists every earlier build in order
({revision, commit, program, prefix}: its paths are ``prefix`` + today's
path name) and each path's ``vs_befores`` maps each revision to {before_path,
topspeed, per_switch_core}; a guarded access path's ``vs_unguarded`` is
{unguarded_path, topspeed, per_switch_core}, guarded / unguarded. The
``unguarded_*`` paths carry ``vs_before``/``vs_befores`` too (against the
earlier builds' path of the same kind). ``port_security.guarded`` says, per
program, whether its VMs were bound guarded.

Load: tcpreplay replays a scapy-made pcap (64 flows) into the ingress veth.
Count: the egress veth's kernel rx_packets counter. Three figures per path:
  - topspeed: tcpreplay --topspeed; the switch's rate is the counter's growth
    over a window once the switch is saturated. The sender takes a core of
    its own doing it, on the same cores as the switch;
  - per switch core: the same window's packets divided by the CPU time the
    switch process used in it, i.e. the switch's cost per packet, which
    neither the sender nor other processes on the machine change much;
  - no-loss rate: the highest paced rate (tcpreplay --pps, cheap for the
    sender) at which at most --loss-tolerance of the frames are lost.
Ratios (p4vtep / baseline, routed / bridged, today / before) are taken per
round, so both sides of a ratio ran in the same round; the pairs the routing
targets compare run well under a minute apart (dataplane_paths.PATHS's
order). Latency is measured apart: a few timestamped probes with no other
load. The machine's load and the CPU time everything else took during the run
are recorded, and so is the per-packet work of each path from a BMv2 trace of
one frame (dataplane_trace.py). Every path's output is first checked byte for
byte (dataplane_paths.check_output)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import REPO, machine, percentile, pin, ratios, require_switch, summary, write_result
from dataplane_load import (
    MachineShare,
    Sampler,
    find_tcpreplay,
    latency_us,
    median,
    no_loss_rate,
    receive_marked,
    receiver,
    topspeed,
)
from dataplane_paths import (
    MAX_BEFORE,
    PATHS,
    ROUTED_VS_BRIDGED,
    UNGUARDED,
    UNGUARDED_PROGRAM,
    UPLINK,
    before_prefix,
    before_program,
    check_output,
    committed_build,
    compile_baseline,
    frame,
    guarded,
    install,
    paths_of,
    pipeline_at,
    program_guarded,
    resolve_commit,
    sender_guard_drops,
    switch_on,
    tenant_bytes,
    write_pcap,
)
from dataplane_peer import MEASURED_COMMIT, PEER_ENV, peer_pipeline
from dataplane_trace import trace_paths
from p4vtep.dataplane.artifacts import Pipeline, bmv2_pipeline
from p4vtep.runtime.client import SwitchConnection
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet


def bmv2_build() -> dict[str, Any]:
    """Which simple_switch_grpc, and what the toolchain's manifest records of it when
    it came from an archive (docs/toolchain.md): the versions the tools report
    (older manifests: the upstream revisions they were built from)."""
    info = machine()
    binary = shutil.which(os.environ.get("SIMPLE_SWITCH_GRPC", "simple_switch_grpc")) or ""
    record = Path(os.path.realpath(binary)).parent.parent / "p4vtep-toolchain.json"
    build = {"version": info["bmv2"], "binary": os.path.realpath(binary)}
    if record.exists():
        manifest = json.loads(record.read_text())
        build["toolchain_record"] = manifest.get("versions") or manifest.get("revisions", {})
    return build


class Bench:
    """One switch, both programs, the veths; runs one measurement at a time."""

    def __init__(
        self,
        switch: Bmv2Switch,
        conn: SwitchConnection,
        host: dict[int, str],
        port_security: bool = True,
    ) -> None:
        self.switch = switch
        self.conn = conn
        self.host = host
        self.port_security = port_security  # guard the VMs of builds that have it
        self.loaded: str | None = None
        self.programs: dict[str, Pipeline] = {}

    def load(self, program: str) -> None:
        if self.loaded == program:
            return
        pipeline = self.programs[program]
        self.conn.clear_multicast_groups()
        self.conn.set_pipeline(pipeline.p4info.message, pipeline.device_config, pipeline.cookie)
        install(self.conn, program, pipeline, self.port_security)
        self.loaded = program

    def guard_drops(self, path: str) -> int | None:
        """What port security has dropped of the path's sender's frames so far
        (the loaded program's counter), when the sender is a guarded VM; None
        for a path from the fabric or an unguarded sender."""
        p = PATHS[path]
        pipeline = self.programs[p.program]
        if p.ingress == UPLINK or not p.program.startswith("p4vtep"):
            return None
        if not program_guarded(p.program, pipeline, self.port_security):
            return None
        return sender_guard_drops(self.conn, pipeline)

    def ends(self, path: str) -> tuple[str, str]:
        p = PATHS[path]
        return self.host[p.ingress], self.host[p.egress]

    def sampler(self, path: str) -> Sampler:
        assert self.switch.process is not None
        return Sampler(self.ends(path)[1], self.switch.process.pid)

    def check(self, path: str, size: int) -> None:
        """One frame through the path must come out as the path makes it:
        a benchmark of frames that are dropped would measure nothing."""
        self.load(PATHS[path].program)
        send, recv = self.ends(path)
        data = bytes(frame(path, size, 999_999))
        with receiver(recv) as rx, socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
            tx.bind((send, 0))
            tx.send(data)
            got = receive_marked(rx, data[-8:], 2.0)
        if got is None:
            raise RuntimeError(f"{path} {size} B: the check frame did not come out")
        problem = check_output(path, data, got[0])
        if problem:
            raise RuntimeError(problem)


PROBE_SEQ = 1_000_000  # latency probes' markers never collide with the pcaps' (0..flows-1)


def measure(
    bench: Bench, args: argparse.Namespace, pcaps: dict[tuple[str, int], Path]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The rounds: every round runs the baseline, then p4vtep's paths (the
    first earlier build's IPv4 paths if any, today's unguarded ones if asked
    for, today's IPv4 bridged and routed, the other earlier builds', IPv6
    bridged and routed: dataplane_paths.PATHS), then the peer's if supplied,
    each at every size: a topspeed window and latency probes. Then the no-loss
    search, in rounds of its own, same order."""
    paths = paths_of(bench.programs)
    out: dict[tuple[str, int], dict[str, Any]] = {
        key: {"windows": [], "latency_us": [], "no_loss": []} for key in pcaps
    }
    for r in range(args.rounds):
        # Every other round in reverse, so that a drift of the machine within
        # a round weighs on both sides of each ratio alike (A B B A).
        for path in paths if r % 2 == 0 else paths[::-1]:
            bench.load(PATHS[path].program)
            send, recv = bench.ends(path)
            for size in args.sizes:
                dropped = bench.guard_drops(path)
                window, sent = topspeed(
                    send,
                    pcaps[path, size],
                    bench.sampler(path),
                    args.seconds,
                    cpus=args.sender_cpus,
                )
                record = {
                    "pps": window.pps,
                    "tcpreplay_sent": sent,
                    "switch_cores": window.switch_cpu_s / window.seconds,
                    "machine_cores": window.machine_cpu_s / window.seconds,
                    "pps_per_switch_core": window.packets / max(window.switch_cpu_s, 1e-9),
                }
                after = bench.guard_drops(path)
                if dropped is not None and after is not None:  # (warm-up included)
                    record["port_security_drops"] = after - dropped
                out[path, size]["windows"].append(record)
                probes = [
                    bytes(frame(path, size, PROBE_SEQ + args.probes * r + i))
                    for i in range(args.probes)
                ]
                out[path, size]["latency_us"] += latency_us(send, recv, probes, args.probes)
        print(
            f"topspeed round {r + 1}: "
            + ", ".join(
                f"{p} {s} B {out[p, s]['windows'][-1]['pps']:,.0f}"
                for p in paths
                for s in args.sizes
            ),
            flush=True,
        )
    for r in range(args.no_loss_rounds):
        for path in paths:
            bench.load(PATHS[path].program)
            for size in args.sizes:
                done = out[path, size]["no_loss"]
                start = (
                    done[-1]["pps"]
                    if done
                    else median([w["pps"] for w in out[path, size]["windows"]])
                )
                done.append(
                    no_loss_rate(
                        bench.ends(path)[0],
                        pcaps[path, size],
                        bench.sampler(path),
                        max(start, 100.0),
                        args.no_loss_seconds,
                        args.loss_tolerance,
                        args.no_loss_steps,
                        cpus=args.sender_cpus,
                    )
                )
        print(
            f"no-loss round {r + 1}: "
            + ", ".join(
                f"{p} {s} B {out[p, s]['no_loss'][-1]['pps']:,.0f}"
                for p in paths
                for s in args.sizes
            ),
            flush=True,
        )
    return out


def versus(windows: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-round ratios of one path's windows to another's (same rounds)."""
    return {
        "topspeed": ratios([w["pps"] for w in windows], [w["pps"] for w in other]),
        "per_switch_core": ratios(
            [w["pps_per_switch_core"] for w in windows],
            [w["pps_per_switch_core"] for w in other],
        ),
    }


def summarise(
    raw: dict[tuple[str, int], dict[str, Any]],
    sizes: list[int],
    paths: list[str],
    revisions: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """Per path and size: medians and spreads, and per-round ratios to the
    baseline measured in the same round; to each earlier build's path
    (``revisions[n]`` is the nth ``--before``'s) and, for a guarded path,
    to the same path unguarded, when those ran."""
    results: dict[str, dict[str, Any]] = {}
    for size in sizes:
        base = raw["baseline", size]
        for path in paths:
            r = raw[path, size]
            pps = [w["pps"] for w in r["windows"]]
            per_core = [w["pps_per_switch_core"] for w in r["windows"]]
            no_loss = [t["pps"] for t in r["no_loss"]]
            entry: dict[str, Any] = {
                "path": path,
                "frame_bytes": size,
                # (IPv6 at 64 B: the smallest frame, longer; decap: inside VXLAN)
                "tenant_frame_bytes": tenant_bytes(path, size),
                "topspeed_pps": summary(pps),
                "pps_per_switch_core": summary(per_core),
                "no_loss_pps": summary(no_loss) if no_loss else None,
                "latency_us": latency_summary(r["latency_us"]),
                "windows": r["windows"],
                "no_loss_searches": r["no_loss"],
            }
            guard_drops = [
                w["port_security_drops"] for w in r["windows"] if "port_security_drops" in w
            ]
            if guard_drops:  # (a guarded sender's frames port security dropped: none, if right)
                entry["port_security_drops"] = sum(guard_drops)
            today = UNGUARDED.get(path, path)  # (unguarded_X: against each build's X)
            for n, revision in enumerate(revisions or ["?"]):
                before_path = before_prefix(n) + today
                if (before_path, size) not in raw:
                    continue
                vs = versus(r["windows"], raw[before_path, size]["windows"])
                if n == 0:  # (as results had it when one --before was all)
                    entry["vs_before"] = vs
                if revisions:
                    entry.setdefault("vs_befores", {})[revision] = {
                        "before_path": before_path,
                        **vs,
                    }
            unguarded = f"unguarded_{path}"
            if (unguarded, size) in raw:  # guarded / unguarded, today's build
                entry["vs_unguarded"] = {
                    "unguarded_path": unguarded,
                    **versus(r["windows"], raw[unguarded, size]["windows"]),
                }
            bridged = ROUTED_VS_BRIDGED.get(path)
            if bridged is not None:  # routed / bridged of the same kind, per round
                same = raw[bridged, size]
                entry["vs_bridged"] = {
                    "bridged_path": bridged,
                    "topspeed": ratios(pps, [w["pps"] for w in same["windows"]]),
                    "per_switch_core": ratios(
                        per_core, [w["pps_per_switch_core"] for w in same["windows"]]
                    ),
                }
            if path != "baseline":
                entry["ratio"] = {
                    "topspeed": ratios(pps, [w["pps"] for w in base["windows"]]),
                    "per_switch_core": ratios(
                        per_core, [w["pps_per_switch_core"] for w in base["windows"]]
                    ),
                }
                if no_loss:
                    entry["ratio"]["no_loss"] = ratios(no_loss, [t["pps"] for t in base["no_loss"]])
            results[f"{path}_{size}"] = entry
    return results


def latency_summary(samples: list[float]) -> dict[str, Any] | None:
    if not samples:
        return None
    return {**summary(samples), "p99": percentile(samples, 99)}


def options(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, checked: every ``--before`` names a distinct commit
    with a committed BMv2 build, at most MAX_BEFORE of them (a bad one: an
    error before anything runs)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="topspeed rounds")
    parser.add_argument("--seconds", type=float, default=2.0, help="topspeed window per round")
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--flows", type=int, default=64, help="distinct frames in each pcap")
    parser.add_argument("--probes", type=int, default=25, help="latency probes per round")
    parser.add_argument("--no-loss-rounds", type=int, default=3, help="0 skips the search")
    parser.add_argument("--no-loss-steps", type=int, default=4, help="trials per search")
    parser.add_argument("--no-loss-seconds", type=float, default=1.0, help="per trial")
    parser.add_argument("--loss-tolerance", type=float, default=0.005)
    parser.add_argument(
        "--result",
        default="dataplane",
        help="name of the bench/results/NAME.json written; with P4VTEP_BMV2_JSON and "
        "P4VTEP_P4INFO pointing at an earlier build, 'dataplane_previous' gives the "
        "report its before/after comparison",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=-10,
        help="priority of the benchmark, its switch and its sender (inherited): the machine "
        "may be shared, and a compile job next door would otherwise set the figures",
    )
    pinning = ([1], [0]) if (os.cpu_count() or 1) >= 2 else (None, None)
    parser.add_argument(
        "--switch-cpus",
        type=int,
        nargs="+",
        default=pinning[0],
        help="pin the switch (every thread) to these CPUs (default: CPU 1 on a machine with "
        "two or more; --no-pin: none), so its rate is that of its own core",
    )
    parser.add_argument(
        "--sender-cpus",
        type=int,
        nargs="+",
        default=pinning[1],
        help="pin tcpreplay and this process to these CPUs (default: CPU 0)",
    )
    parser.add_argument(
        "--no-pin", action="store_true", help="pin nothing (results before 2026-11-28)"
    )
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        metavar="REV",
        help="a git revision whose committed p4vtep build runs beside today's in every "
        "round (its IPv4 paths: before_local/encap/decap and, if that build routes, "
        "before_routed_local/encap/decap), e.g. the commit before a change; up to "
        f"{MAX_BEFORE} times: the second build's paths are before2_*, the third's before3_*",
    )
    parser.add_argument(
        "--port-security",
        choices=("on", "off", "both"),
        default="on",
        help="on: the local VMs of a p4vtep build that has port security (issue 38) are "
        "bound guarded, with their source guards, as the controller binds a VM by default; "
        "a --before build without it runs as before. off: every VM unguarded (as results "
        "from before this option). both: as on, and today's build also bound unguarded "
        "(unguarded_local/encap, unguarded_routed_local/encap)",
    )
    parser.add_argument(
        "--peer",
        default=None,
        help="directory with bmv2.json and p4info.txt of stratum/fabric-tna's "
        f"fabric_v1model.p4 (default: ${PEER_ENV}); adds its bridging to every round",
    )
    parser.add_argument(
        "--peer-commit",
        default=None,
        help=f"the fabric-tna commit that build came from, for the record (the doc's figures: "
        f"{MEASURED_COMMIT[:12]})",
    )
    args = parser.parse_args(argv)
    if len(args.before) > MAX_BEFORE:
        parser.error(f"--before: at most {MAX_BEFORE} earlier builds, {len(args.before)} given")
    commits: list[str] = []
    for rev in args.before:
        try:
            commit = resolve_commit(rev)
        except subprocess.CalledProcessError:
            parser.error(f"--before {rev}: not a commit of this repository")
        if commit in commits:
            parser.error(f"--before {rev}: the same commit as an earlier --before")
        if not committed_build(commit):
            parser.error(f"--before {rev}: that commit has no committed BMv2 build")
        commits.append(commit)
    args.before_commits = commits
    if args.no_pin:
        args.switch_cpus = args.sender_cpus = None
    return args


def main() -> None:
    args = options()
    peer = peer_pipeline(args.peer)
    try:
        niceness = os.nice(args.nice - os.nice(0))
    except PermissionError:
        niceness = os.nice(0)
        print(f"cannot set niceness {args.nice} (not root); running at {niceness}")
    require_switch()
    for tool, found in (
        ("p4c", shutil.which(os.environ.get("P4C", "p4c"))),
        ("tcpreplay", find_tcpreplay()),
    ):
        if found is None:
            print(f"SKIP: {tool} not found (make deps installs tcpreplay; p4c: docs/toolchain.md)")
            return
    share = MachineShare()
    share.start()
    port_security = args.port_security != "off"
    if args.port_security == "both" and not guarded(bmv2_pipeline(), True):
        print("--port-security both: this build has no port security to leave off")
        raise SystemExit(2)
    trace = trace_paths(64, peer, port_security)
    with tempfile.TemporaryDirectory() as tmp, VethSet(f"pd{os.getpid() % 1000}", 3) as veths:
        programs = {"baseline": compile_baseline(Path(tmp)), "p4vtep": bmv2_pipeline()}
        if peer is not None:
            programs["fabric-tna"] = peer
        if args.port_security == "both":  # (the same build, bound unguarded)
            programs[UNGUARDED_PROGRAM] = programs["p4vtep"]
        for n, commit in enumerate(args.before_commits):
            (Path(tmp) / f"before{n}").mkdir()
            programs[before_program(n)] = pipeline_at(commit, Path(tmp) / f"before{n}")
        paths = paths_of(programs)
        guards = {
            name: program_guarded(name, pipeline, port_security)
            for name, pipeline in programs.items()
            if name.startswith("p4vtep")
        }
        print(
            f"port security {args.port_security}: "
            + ", ".join(f"{name} {'guarded' if g else 'unguarded'}" for name, g in guards.items()),
            flush=True,
        )
        pcaps = {
            (path, size): write_pcap(Path(tmp), path, size, args.flows)
            for path in paths
            for size in args.sizes
        }
        switch = switch_on(veths, "dp", Path(tmp))
        switch.start()
        assert switch.process is not None
        if args.switch_cpus:
            pin(switch.process.pid, args.switch_cpus)
        if args.sender_cpus:
            pin(os.getpid(), args.sender_cpus)
        conn = SwitchConnection(switch.grpc_address, 1, election_id=1)
        host = {port: h for port, (_, h) in enumerate(veths.pairs, start=1)}
        bench = Bench(switch, conn, host, port_security)
        bench.programs = programs
        try:
            if not conn.connect():
                raise RuntimeError("no P4Runtime connection to the benchmark switch")
            for path in paths:
                for size in args.sizes:
                    bench.check(path, size)
            raw = measure(bench, args, pcaps)
        finally:
            conn.close()
            switch.stop()
    machine_load = share.stop()
    results = summarise(raw, args.sizes, paths, args.before)
    for key, r in results.items():
        line = f"{key}: topspeed {r['topspeed_pps']['median']:,.0f} pps"
        if r["no_loss_pps"]:
            line += f", no-loss {r['no_loss_pps']['median']:,.0f} pps"
        if "ratio" in r:
            line += ", ratios " + ", ".join(f"{k} {v['median']:.2f}" for k, v in r["ratio"].items())
        versus_ = [("/ bridged", r.get("vs_bridged")), ("/ unguarded", r.get("vs_unguarded"))]
        versus_ += [(f"/ {rev}", vs) for rev, vs in r.get("vs_befores", {}).items()]
        for what, vs in versus_:
            if vs is not None:
                line += f"; {what} topspeed {vs['topspeed']['median']:.2f}"
                line += f", per switch core {vs['per_switch_core']['median']:.2f}"
        if "port_security_drops" in r:
            line += f"; port security dropped {r['port_security_drops']}"
        print(line)
    refused = sum(r.get("port_security_drops", 0) for r in results.values())
    if refused:
        print(f"WARNING: port security dropped {refused} of the guarded sender's frames")
    print(
        f"load average {machine_load['loadavg_before'][0]:.2f} before, "
        f"{machine_load['loadavg_after'][0]:.2f} after; everything else took "
        f"{machine_load['everything_else_cpu_s']:.0f} CPU-s in {machine_load['wall_s']:.0f} s"
    )
    program = bmv2_pipeline()
    write_result(
        args.result,
        {
            "p4vtep_build": {
                "bmv2_json": str(program.device_config_path.resolve()).replace(str(REPO) + "/", ""),
                "sha256": hashlib.sha256(program.device_config_path.read_bytes()).hexdigest(),
            },
            "method": {
                "load": "tcpreplay --topspeed --preload-pcap looping a scapy-made pcap of "
                f"{args.flows} flows into the ingress veth",
                "count": "egress veth rx_packets (/sys/class/net/IF/statistics), growth over "
                f"{args.seconds} s after 0.5 s of load",
                "no_loss": f"tcpreplay --pps (--timer=nano, 1 ms bursts), {args.no_loss_seconds} s "
                f"per trial, lost <= {args.loss_tolerance:.1%}, {args.no_loss_steps} trials per "
                "search: up by x1.25 from the last result until loss, then bisect",
                "latency": f"{args.probes} probes per round and path, one at a time, no other "
                "load; from send() to the receiving kernel's timestamp",
                "rounds": {"topspeed": args.rounds, "no_loss": args.no_loss_rounds},
                "order": f"each size, odd rounds: {', '.join(paths)}; even rounds reversed",
                "switch": "simple_switch_grpc started as p4vtep.switch.bmv2.Bmv2Switch does (no "
                "log: --log-level off), programs swapped by SetForwardingPipelineConfig",
                "pinning": {"switch": args.switch_cpus, "sender_and_bench": args.sender_cpus},
                "niceness": niceness,
            },
            "bmv2": bmv2_build(),
            "port_security": {
                "option": args.port_security,
                "guarded": guards,
                "what": "guarded: the local VMs (A, B, D) bound with bind_vm guarded=1, a "
                "source guard per address (IPv4 /32, IPv6 /128), fe80::/64 and ::/128, as the "
                "controller writes a guarded VM (dataplane_paths.bind_vm); unguarded: "
                "guarded=0 or a build without port security, no source guards; "
                f"{UNGUARDED_PROGRAM} (option both): today's build bound unguarded",
                "sender_drops": refused,
            },
            "before": (
                {"revision": args.before[0], "commit": args.before_commits[0]}
                if args.before
                else None
            ),
            "befores": [
                {
                    "revision": rev,
                    "commit": commit,
                    "program": before_program(n),
                    "prefix": before_prefix(n),
                }
                for n, (rev, commit) in enumerate(
                    zip(args.before, args.before_commits, strict=True)
                )
            ],
            "peer": (
                {
                    "program": "stratum/fabric-tna p4src/v1model/fabric_v1model.p4, profile "
                    "fabric (no defines), compiled by the user with this p4c (bmv2, v1model)",
                    "commit": args.peer_commit or "not stated",
                    "bmv2_json_sha256": hashlib.sha256(peer.device_config).hexdigest(),
                    "path": "bridging between two ports tagged with one VLAN (dataplane_peer.py)",
                }
                if peer is not None
                else None
            ),
            "machine_load": machine_load,
            "paths": results,
            "per_packet_work_64B": trace,
        },
    )


if __name__ == "__main__":
    main()
