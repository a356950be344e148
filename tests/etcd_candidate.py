"""A controller replica's leadership alone, in its own process, so a test can
SIGKILL it like a crashed controller machine: it campaigns, prints
{"term": ..., "election_id": ...} on one line once it leads, keeps its lease
alive and waits to be killed."""

from __future__ import annotations

import argparse
import json
import sys
import threading

from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.state.leadership import EtcdLeadership


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", required=True, help="comma-separated host:port")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--id", required=True)
    parser.add_argument("--ttl", type=int, default=2)
    args = parser.parse_args()
    settings = EtcdSettings(tuple(args.endpoints.split(",")), prefix=args.prefix)
    leadership = EtcdLeadership(settings, args.id, f"{args.id}:50051", ttl=args.ttl, margin=0.5)
    term = leadership.campaign(timeout=30)
    print(json.dumps({"term": term, "election_id": leadership.election_id()}), flush=True)
    sys.stdout.close()
    threading.Event().wait()


if __name__ == "__main__":
    main()
