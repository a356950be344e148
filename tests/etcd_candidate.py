"""A controller replica's leadership alone, in its own process, so a test can
SIGKILL it like a crashed controller machine or cut it off in a network
namespace. It campaigns and prints one JSON line once it leads:
{"event": "leader", "term", "election_id", "t"}; with --report it then prints
{"event": "stopped", "t"} when may_write() turns false and {"event": "lost",
"reason", "t"} when it is told it lost. "t" is time.monotonic(), which is the
same clock in every process on the machine. It waits to be killed."""

from __future__ import annotations

import argparse
import json
import threading
import time

from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.state.leadership import EtcdLeadership

_print_lock = threading.Lock()


def emit(**fields: object) -> None:
    with _print_lock:
        print(json.dumps({**fields, "t": time.monotonic()}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", required=True, help="comma-separated host:port")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--id", required=True)
    parser.add_argument("--ttl", type=int, default=2)
    parser.add_argument("--margin", type=float, default=0.5)
    parser.add_argument("--report", action="store_true", help="report may_write and losses")
    args = parser.parse_args()
    settings = EtcdSettings(tuple(args.endpoints.split(",")), prefix=args.prefix)
    leadership = EtcdLeadership(
        settings,
        args.id,
        f"{args.id}:50051",
        ttl=args.ttl,
        margin=args.margin,
        on_lost=lambda reason: emit(event="lost", reason=reason),
    )
    term = leadership.campaign(timeout=30)
    emit(event="leader", term=term, election_id=leadership.election_id())
    if args.report:
        while leadership.may_write():
            time.sleep(0.002)
        emit(event="stopped")
    threading.Event().wait()


if __name__ == "__main__":
    main()
