#!/usr/bin/env python3
"""Per-packet work of each benchmarked path, read from BMv2's own trace log:
one frame per path through a switch started with ``--log-file -L trace``,
then the log lines of that packet are counted (parser states, headers
extracted, conditions, tables applied, actions, primitives, checksums,
headers deparsed). This is what the interpreter executes for one packet, so
it explains the throughput ratios; it is not a timing.

Run alone: ``flock /tmp/p4vtep-heavy.lock .venv/bin/python bench/dataplane_trace.py``."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import require_switch
from dataplane_load import receive_marked, receiver
from dataplane_paths import (
    PATHS,
    check_output,
    compile_baseline,
    frame,
    install,
    paths_of,
    switch_on,
)
from dataplane_peer import peer_pipeline
from p4vtep.dataplane.artifacts import Pipeline, bmv2_pipeline
from p4vtep.runtime.client import SwitchConnection
from p4vtep.switch.bmv2 import VethSet

# What each kind of trace line means (BMv2 1.15 simple_switch wording).
PATTERNS = {
    "parser_states": re.compile(r"Parser '[^']+' entering state '"),
    "headers_extracted": re.compile(r"Extracting header '"),
    "conditions": re.compile(r"Condition \".*\" \(node_\d+\) is (true|false)"),
    "tables_applied": re.compile(r"Applying table '"),
    "actions": re.compile(r"\] Action (?!entry)"),
    "primitives": re.compile(r" Primitive "),
    "counter_updates": re.compile(r"Updated counter '"),
    "meter_executions": re.compile(r"Updated meter '"),
    "checksums": re.compile(r"Verified checksum '|Updating checksum '"),
    "headers_deparsed": re.compile(r"Deparsing header '"),
}
TABLE = re.compile(r"Applying table '([^']+)'")
PACKET_ID = re.compile(r"\[(\d+\.\d+)\] \[cxt \d+\]")


def count_work(log_lines: list[str]) -> dict[str, Any]:
    """Counts per kind, and the tables in the order they were applied, for
    the packet(s) in ``log_lines`` (replicas included: the log numbers a
    packet and its copies id.copy)."""
    counts: Counter[str] = Counter()
    tables: list[str] = []
    for line in log_lines:
        if not PACKET_ID.search(line):
            continue
        for kind, pattern in PATTERNS.items():
            if pattern.search(line):
                counts[kind] += 1
        match = TABLE.search(line)
        if match:
            tables.append(match.group(1).split(".")[-1])
    # p4c turns every action-only block of the program into a keyless table
    # ("tbl_..."): BMv2 still runs a table apply for each.
    return {
        **{kind: counts[kind] for kind in PATTERNS},
        "match_tables": sum(not t.startswith("tbl_") for t in tables),
        "tables": tables,
    }


def send_one(send_iface: str, data: bytes) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        tx.bind((send_iface, 0))
        tx.send(data)


def trace_paths(
    size: int = 64, peer: Pipeline | None = None, port_security: bool = True
) -> dict[str, dict[str, Any]]:
    """Trace one ``size``-byte frame through each path (the peer's when
    given; p4vtep's VMs guarded when ``port_security``, as the benchmark
    binds them); returns the counts."""
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, VethSet(f"pt{os.getpid() % 1000}", 3) as veths:
        programs: dict[str, Pipeline] = {
            "baseline": compile_baseline(Path(tmp)),
            "p4vtep": bmv2_pipeline(),
        }
        if peer is not None:
            programs["fabric-tna"] = peer
        host = {port: h for port, (_, h) in enumerate(veths.pairs, start=1)}
        switch = switch_on(
            veths,
            "trace",
            Path(tmp),
            debug_log=True,
            extra_args=["--log-level", "trace"],
        )
        switch.start()
        log = Path(tmp) / "trace.txt"
        conn = SwitchConnection(switch.grpc_address, 1, election_id=1)
        try:
            if not conn.connect():
                raise RuntimeError("no P4Runtime connection to the trace switch")
            for seq, name in enumerate(paths_of(programs)):
                path = PATHS[name]
                pipeline = programs[path.program]
                conn.clear_multicast_groups()
                conn.set_pipeline(pipeline.p4info.message, pipeline.device_config, pipeline.cookie)
                install(conn, path.program, pipeline, port_security)
                data = bytes(frame(name, size, seq))
                with receiver(host[path.egress]) as rx:
                    start = log.stat().st_size
                    send_one(host[path.ingress], data)
                    out = receive_marked(rx, data[-8:], 2.0)
                if out is None:
                    raise RuntimeError(f"{name}: the traced frame did not come out")
                problem = check_output(name, data, out[0])
                if problem:
                    raise RuntimeError(problem)
                time.sleep(0.2)  # the log is flushed per line; let the last lines land
                with log.open() as f:
                    f.seek(start)
                    results[name] = count_work(f.read().splitlines())
        finally:
            conn.close()
            switch.stop()
    return results


def main() -> None:
    require_switch()
    json.dump(trace_paths(64, peer_pipeline(None)), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
