"""BMv2's queue settings through its Thrift runtime interface.

simple_switch's egress queues (``--priority-queues``) have a rate and a depth
per (port, priority) that P4Runtime does not reach: only the switch's own
Thrift service ``SimpleSwitch`` sets them (``set_egress_priority_queue_rate``
and ``set_egress_priority_queue_depth`` in BMv2's
``targets/simple_switch/thrift/simple_switch.thrift``). BMv2 serves it on
``--thrift-port`` with Thrift's binary protocol over a plain (buffered,
unframed) socket, every service multiplexed by name ("simple_switch:METHOD").

Those two calls are all p4vtep needs, so they are spoken here directly (a
call is a dozen bytes each way) rather than through generated Thrift code.
BMv2 has no call that reads a queue's rate or depth back: tests check them
with packets.
"""

from __future__ import annotations

import socket
import struct
import threading

# Thrift binary protocol (strict): message types and field types.
_VERSION_1 = 0x80010000
_CALL, _REPLY, _EXCEPTION = 1, 2, 3
_T_STOP, _T_BOOL, _T_BYTE, _T_DOUBLE = 0, 2, 3, 4
_T_I16, _T_I32, _T_I64, _T_STRING = 6, 8, 10, 11
_T_STRUCT, _T_MAP, _T_SET, _T_LIST = 12, 13, 14, 15
_SERVICE = "simple_switch"


class ThriftError(RuntimeError):
    """The switch refused a call, or answered something that is not a reply."""


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def take(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("BMv2 Thrift server closed the connection")
            out += chunk
        return out

    def i32(self) -> int:
        value: int = struct.unpack("!i", self.take(4))[0]
        return value

    def string(self) -> bytes:
        return self.take(self.i32())

    def skip(self, kind: int) -> None:
        fixed = {_T_BOOL: 1, _T_BYTE: 1, _T_DOUBLE: 8, _T_I16: 2, _T_I32: 4, _T_I64: 8}
        if kind in fixed:
            self.take(fixed[kind])
        elif kind == _T_STRING:
            self.string()
        elif kind == _T_STRUCT:
            self.fields()
        elif kind == _T_MAP:
            key, value = self.take(1)[0], self.take(1)[0]
            for _ in range(self.i32()):
                self.skip(key)
                self.skip(value)
        elif kind in (_T_SET, _T_LIST):
            element = self.take(1)[0]
            for _ in range(self.i32()):
                self.skip(element)
        else:
            raise ThriftError(f"unknown Thrift field type {kind}")

    def fields(self) -> dict[int, object]:
        """A struct's fields: id -> value for i32 and string fields (the
        only ones a reply to these calls has), the rest skipped."""
        out: dict[int, object] = {}
        while True:
            kind = self.take(1)[0]
            if kind == _T_STOP:
                return out
            field_id = struct.unpack("!h", self.take(2))[0]
            if kind == _T_I32:
                out[field_id] = self.i32()
            elif kind == _T_STRING:
                out[field_id] = self.string().decode(errors="replace")
            else:
                self.skip(kind)


def _field(kind: int, field_id: int, value: int) -> bytes:
    fmt = {_T_I32: "!i", _T_I64: "!q"}[kind]
    return struct.pack("!bh", kind, field_id) + struct.pack(fmt, value)


class SimpleSwitchThrift:
    """One connection to a simple_switch's Thrift service; calls are serialised."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.address = (host, port)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._seq = 0
        self._lock = threading.Lock()

    def __enter__(self) -> SimpleSwitchThrift:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def set_priority_queue_rate(self, port: int, priority: int, rate_pps: int) -> None:
        """Egress queue ``priority`` of ``port`` sends at most ``rate_pps``
        packets per second (0: no limit, BMv2's default)."""
        if rate_pps < 0:
            raise ValueError(f"queue rate {rate_pps} pps: must be >= 0")
        self._call(
            "set_egress_priority_queue_rate",
            _field(_T_I32, 1, port) + _field(_T_I32, 2, priority) + _field(_T_I64, 3, rate_pps),
        )

    def set_priority_queue_depth(self, port: int, priority: int, depth_pkts: int) -> None:
        """Egress queue ``priority`` of ``port`` holds at most ``depth_pkts``
        packets (BMv2's default 64); a packet that finds it full is dropped."""
        if depth_pkts < 0:
            raise ValueError(f"queue depth {depth_pkts}: must be >= 0")
        self._call(
            "set_egress_priority_queue_depth",
            _field(_T_I32, 1, port) + _field(_T_I32, 2, priority) + _field(_T_I32, 3, depth_pkts),
        )

    def _call(self, method: str, args: bytes) -> None:
        with self._lock:
            try:
                self._call_locked(method, args)
            except OSError:
                # (one retry on a fresh connection: the switch may have restarted)
                if self._sock is not None:
                    self._sock.close()
                    self._sock = None
                self._call_locked(method, args)

    def _call_locked(self, method: str, args: bytes) -> None:
        if self._sock is None:
            self._sock = socket.create_connection(self.address, timeout=self.timeout)
        self._seq += 1
        name = f"{_SERVICE}:{method}".encode()
        message = (
            struct.pack("!I", _VERSION_1 | _CALL)
            + struct.pack("!i", len(name))
            + name
            + struct.pack("!i", self._seq)
            + args
            + bytes([_T_STOP])
        )
        self._sock.sendall(message)
        reader = _Reader(self._sock)
        header = struct.unpack("!I", reader.take(4))[0]
        if header & 0xFFFF0000 != _VERSION_1:
            raise ThriftError(f"{method}: not a Thrift binary reply (0x{header:08x})")
        kind = header & 0xFF
        reader.string()  # the method name
        reader.i32()  # sequence id
        fields = reader.fields()
        if kind == _EXCEPTION:
            raise ThriftError(f"{method}: {fields.get(1, 'refused')} (type {fields.get(2)})")
        if kind != _REPLY:
            raise ThriftError(f"{method}: unexpected message type {kind}")
        status = fields.get(0)
        if status not in (0, None):
            raise ThriftError(f"{method}: the switch returned {status}")
