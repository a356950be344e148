"""Traffic both ways, counted frame by frame: one UDP datagram to the peer
every INTERVAL seconds, each with a sequence number, while every datagram
from the peer is noted. Run one in each VM (namespace); on SIGTERM each
writes what it sent (sequence number, CLOCK_MONOTONIC time: the same clock
in every namespace) and what it received to OUT as JSON, so the test counts
the frames lost in each direction over any stretch of time.

    python udp_probe.py BIND_IP PEER_IP PORT INTERVAL OUT
"""

from __future__ import annotations

import json
import selectors
import signal
import socket
import struct
import sys
import time

HEADER = struct.Struct("!Q")


def main(bind_ip: str, peer_ip: str, port: int, interval: float, out: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((bind_ip, port))
    sock.setblocking(False)
    sent: list[tuple[int, float]] = []
    received: list[tuple[int, float]] = []
    stop = False

    def finish(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, finish)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    seq = 0
    next_send = time.monotonic()
    while not stop:
        now = time.monotonic()
        if now >= next_send:
            try:
                sock.sendto(HEADER.pack(seq) + bytes(50), (peer_ip, port))
                sent.append((seq, now))
            except OSError:
                pass  # (not sent: not counted as lost either)
            seq += 1
            # On time, not drifting: a late send is not made up for with a burst.
            next_send = max(next_send + interval, now)
        for _key, _ in selector.select(max(0.0, next_send - time.monotonic())):
            while True:
                try:
                    data, (source, _port) = sock.recvfrom(2048)
                except BlockingIOError:
                    break
                if source == peer_ip and len(data) >= HEADER.size:
                    received.append((HEADER.unpack_from(data)[0], time.monotonic()))
    with open(out, "w") as f:
        json.dump({"sent": sent, "received": received}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
