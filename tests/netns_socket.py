"""Raw packet sockets on interfaces inside network namespaces, from the test
process itself: the socket is opened while the calling thread is switched into
the namespace (``p4vtep.netns.in_netns``: ``setns``, per thread) and keeps that
namespace after the thread switches back. Frames can then be sent and captured
exactly, with scapy, where a namespace's own stack (a VM's, FRR's) sees them.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from p4vtep.netns import in_netns
from scapy.layers.l2 import Ether

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40


def packet_socket(ns: str | None, iface: str, protocol: int = ETH_P_ALL) -> socket.socket:
    """An AF_PACKET socket bound to ``iface`` in namespace ``ns``, with the
    kernel's VLAN ancillary data on (``receive`` puts a stripped tag back)."""
    with in_netns(ns):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            sock.bind((iface, protocol))
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        except BaseException:
            sock.close()
            raise
    return sock


def receive(sock: socket.socket) -> tuple[bytes, bool]:
    """One frame as it was on the wire (a VLAN tag the kernel stripped put
    back) and whether this host sent it (outgoing) rather than received it."""
    data, ancillary, _, addr = sock.recvmsg(65535, socket.CMSG_SPACE(64))
    for level, kind, aux in ancillary:
        if level == SOL_PACKET and kind == PACKET_AUXDATA:
            status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", aux[:20])
            if status & TP_STATUS_VLAN_VALID:
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data, addr[2] == PACKET_OUTGOING


@dataclass
class Capture:
    """Frames seen on one interface (in a namespace) while it runs, each with
    its direction: ``(frame, outgoing)``."""

    ns: str | None
    iface: str
    frames: list[tuple[Ether, bool]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Capture:
        sock = packet_socket(self.ns, self.iface)
        sock.settimeout(0.05)

        def run() -> None:
            with sock:
                while not self._stop.is_set():
                    try:
                        data, outgoing = receive(sock)
                    except TimeoutError:
                        continue
                    self.frames.append((Ether(data), outgoing))

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def matching(
        self, predicate: Callable[[Ether], bool], outgoing: bool | None = None
    ) -> list[Ether]:
        return [
            f
            for f, out in list(self.frames)
            if (outgoing is None or out == outgoing) and predicate(f)
        ]

    def wait_for(
        self,
        predicate: Callable[[Ether], bool],
        timeout: float = 3.0,
        outgoing: bool | None = None,
    ) -> list[Ether]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.matching(predicate, outgoing)
            if found:
                return found
            time.sleep(0.02)
        return self.matching(predicate, outgoing)


def send_frame(ns: str | None, iface: str, frame: bytes) -> None:
    """One frame out of ``iface`` in namespace ``ns``."""
    with in_netns(ns), socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        sock.send(frame)
