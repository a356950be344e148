"""A minimal BGP speaker that sends pre-encoded EVPN type 2 routes: the
benchmark's fast injector (issue 40: the peer must deliver routes faster
than the controller learns them).

A gobgpd peer sends one EVPN route per UPDATE and takes routes through its
API in quadratic time (each AddPath walks its RIB); real peers (FRR) pack
the routes that share their attributes into one UPDATE. This one opens an
iBGP session (L2VPN EVPN, 4-octet AS) from a network namespace, answers
keepalives, and writes UPDATEs of up to ``PER_UPDATE`` MAC+IP routes each
(MP_REACH_NLRI; withdrawals in MP_UNREACH_NLRI), encoded before the timing:
sending 10,000 routes is one ``sendall`` of about 500 kB.

Wire formats: RFC 4271 (messages), RFC 4760 (MP_REACH/MP_UNREACH), RFC 7432
7.2 (the MAC/IP advertisement NLRI; labels as 3 bytes holding the VNI, RFC
8365 5.1.3, as GoBGP writes them), RFC 4360 (route targets), RFC 9012
(encapsulation: VXLAN, tunnel type 8), RFC 9135 (Router's MAC).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from p4vtep.netns import in_netns

OPEN, UPDATE, NOTIFICATION, KEEPALIVE = 1, 2, 3, 4
AFI_L2VPN, SAFI_EVPN = 25, 70
# Routes per UPDATE. FRR packs up to the 4,096-byte limit (about 90 of
# these); GoBGP 3.10 takes such UPDATEs in time quadratic in their routes
# (each path it gives out carries the message's whole MP_REACH_NLRI): for
# 10,000 routes its CPU was 1.56 s at 80 per UPDATE, 0.49 s at 8, 0.61 s at
# 1 (one event each for the speaker). 8 is where it is fastest.
PER_UPDATE = 8
HOLD = 90  # offered; the speaker's own may be shorter (the lower one is the session's)
KEEPALIVE_EVERY = 1.0  # seconds: within a third of any hold time a speaker offers (3 s at least)


@dataclass(frozen=True)
class Host:
    """One MAC+IP route's NLRI fields (the rest is the injector's)."""

    mac: str
    ip: str


def _message(kind: int, body: bytes) -> bytes:
    return b"\xff" * 16 + struct.pack("!HB", 19 + len(body), kind) + body


def _attribute(flags: int, kind: int, value: bytes) -> bytes:
    if len(value) > 255:
        return struct.pack("!BBH", flags | 0x10, kind, len(value)) + value
    return struct.pack("!BBB", flags, kind, len(value)) + value


class Injector:
    """Peer ``local`` (in namespace ``ns``) of the speaker at ``remote``,
    announcing hosts behind ``vtep`` in ``vni``, routed in ``l3vni`` to
    ``router_mac``, with ``route_targets`` ("ASN:N")."""

    def __init__(
        self,
        ns: str,
        local: str,
        remote: str,
        asn: int,
        vtep: str,
        vni: int,
        l3vni: int,
        router_mac: str,
        route_targets: Iterable[str],
    ) -> None:
        self.ns, self.local, self.remote, self.asn = ns, local, remote, asn
        self.vtep, self.vni, self.l3vni = vtep, vni, l3vni
        self._rd = struct.pack("!H", 1) + socket.inet_aton(vtep) + struct.pack("!H", vni)
        communities = b""
        for rt in route_targets:
            admin, number = rt.split(":")
            communities += struct.pack("!BBHI", 0x00, 0x02, int(admin), int(number))
        communities += struct.pack("!BB4xH", 0x03, 0x0C, 8)  # encapsulation: VXLAN
        communities += struct.pack("!BB", 0x06, 0x03) + bytes.fromhex(router_mac.replace(":", ""))
        self._attributes = (
            _attribute(0x40, 1, b"\x00")  # ORIGIN IGP
            + _attribute(0x40, 2, b"")  # AS_PATH: empty (iBGP)
            + _attribute(0x40, 5, struct.pack("!I", 100))  # LOCAL_PREF
            + _attribute(0xC0, 16, communities)
        )
        self._sock: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._keeper: threading.Thread | None = None
        self._closed = threading.Event()
        self._sending = threading.Lock()  # one writer at a time: a message is never split
        self.established = threading.Event()

    # ---- encoding ------------------------------------------------------------

    def _nlri(self, host: Host) -> bytes:
        ip = ipaddress.ip_address(host.ip)
        body = (
            self._rd
            + bytes(10)  # ESI 0: single-homed
            + struct.pack("!I", 0)  # Ethernet tag
            + b"\x30"
            + bytes.fromhex(host.mac.replace(":", ""))
            + bytes([ip.max_prefixlen])
            + ip.packed
            + self.vni.to_bytes(3, "big")
            + self.l3vni.to_bytes(3, "big")
        )
        return bytes([2, len(body)]) + body

    def announcements(self, hosts: list[Host]) -> bytes:
        """UPDATEs announcing ``hosts``, ``PER_UPDATE`` to a message."""
        out = []
        nexthop = socket.inet_aton(self.vtep)
        for start in range(0, len(hosts), PER_UPDATE):
            nlri = b"".join(self._nlri(h) for h in hosts[start : start + PER_UPDATE])
            reach = struct.pack("!HBB", AFI_L2VPN, SAFI_EVPN, 4) + nexthop + b"\x00" + nlri
            attributes = self._attributes + _attribute(0x80, 14, reach)
            out.append(_message(UPDATE, struct.pack("!HH", 0, len(attributes)) + attributes))
        return b"".join(out)

    def withdrawals(self, hosts: list[Host]) -> bytes:
        out = []
        for start in range(0, len(hosts), PER_UPDATE):
            nlri = b"".join(self._nlri(h) for h in hosts[start : start + PER_UPDATE])
            unreach = _attribute(0x80, 15, struct.pack("!HB", AFI_L2VPN, SAFI_EVPN) + nlri)
            out.append(_message(UPDATE, struct.pack("!HH", 0, len(unreach)) + unreach))
        return b"".join(out)

    # ---- the session -------------------------------------------------------------

    def connect(self, timeout: float = 120.0) -> None:
        """Open the session; tried again until ``timeout`` while the speaker
        does not take it (not listening yet, or idle for a while after the
        session before ended)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._open_once()
                break
            except (OSError, TimeoutError):
                self.close(notify=False)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self._keeper = threading.Thread(target=self._keepalive, daemon=True, name="injector-ka")
        self._keeper.start()

    def _open_once(self) -> None:
        with in_netns(self.ns):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock = sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.local, 0))
        sock.settimeout(5)
        sock.connect((self.remote, 179))
        sock.settimeout(None)
        capabilities = (
            struct.pack("!BBHBB", 1, 4, AFI_L2VPN, 0, SAFI_EVPN)  # multiprotocol
            + struct.pack("!BBI", 65, 4, self.asn)  # 4-octet AS
        )
        params = struct.pack("!BB", 2, len(capabilities)) + capabilities
        asn2 = self.asn if self.asn <= 0xFFFF else 23456
        body = struct.pack("!BHH", 4, asn2, HOLD) + socket.inet_aton(self.local)
        self._closed.clear()
        self.established.clear()
        sock.sendall(_message(OPEN, body + bytes([len(params)]) + params))
        self._reader = threading.Thread(target=self._read, daemon=True, name="injector-read")
        self._reader.start()
        if not self.established.wait(5):
            raise TimeoutError("no BGP session")

    def _read(self) -> None:
        sock = self._sock
        assert sock is not None
        buffer = b""
        try:
            while not self._closed.is_set():
                data = sock.recv(1 << 16)
                if not data:
                    break
                buffer += data
                while len(buffer) >= 19:
                    length, kind = struct.unpack("!HB", buffer[16:19])
                    if len(buffer) < length:
                        break
                    buffer = buffer[length:]
                    if kind == OPEN:
                        with self._sending:
                            sock.sendall(_message(KEEPALIVE, b""))
                    elif kind == KEEPALIVE:
                        self.established.set()
                    elif kind == NOTIFICATION:
                        return
        except OSError:
            pass
        finally:
            self.established.clear()

    def _keepalive(self) -> None:
        while not self._closed.wait(KEEPALIVE_EVERY):
            try:
                assert self._sock is not None
                with self._sending:  # (not inside a long send: its bytes stay whole)
                    self._sock.sendall(_message(KEEPALIVE, b""))
            except OSError:
                return

    def send(self, data: bytes) -> None:
        assert self._sock is not None
        with self._sending:
            self._sock.sendall(data)

    def close(self, notify: bool = True) -> None:
        """The session ends (a NOTIFICATION, Cease, then the connection
        closes): the speaker drops every route it had from us."""
        self._closed.set()
        if self._sock is not None:
            try:
                if notify:
                    with self._sending:  # Cease, administrative shutdown
                        self._sock.sendall(_message(NOTIFICATION, bytes([6, 2])))
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        for thread in (self._reader, self._keeper):
            if thread is not None:
                thread.join(timeout=5)
