"""BMv2's queue settings through its Thrift runtime interface.

simple_switch's egress queues (``--priority-queues``) have a rate and a depth
per (port, priority) that P4Runtime does not reach: only the switch's own
Thrift service ``SimpleSwitch`` sets them (``set_egress_priority_queue_rate``
and ``set_egress_priority_queue_depth``). BMv2 serves it on ``--thrift-port``
when ``simple_switch_grpc`` was configured ``--with-thrift``
(docs/toolchain.md), every service multiplexed by name, as its own
``simple_switch_CLI`` calls it.

The client is Apache Thrift's Python library (``thrift``, requirements.txt):
its binary protocol, multiplexed, encodes the two calls p4vtep makes with the
field ids and types BMv2's IDL (``simple_switch.thrift``) gives them
(``_CALLS``), as the classes BMv2 generates from that IDL would. Those
classes (``sswitch_runtime``) are not needed, so nothing here depends on
where, or whether, BMv2 is installed, and the unit tests check the bytes on
the wire without it. BMv2 has no call that reads a queue's rate or depth
back: tests check them with packets.
"""

from __future__ import annotations

import threading
from typing import Any

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport import TSocket, TTransport

_SERVICE = "simple_switch"  # BMv2's name for SimpleSwitch in its multiplexer

# The calls p4vtep makes, as BMv2's simple_switch.thrift declares them (each
# returns an i32 status, 0 when done):
#   i32 set_egress_priority_queue_depth(1:i32 port_num, 2:i32 priority, 3:i32 depth_pkts)
#   i32 set_egress_priority_queue_rate(1:i32 port_num, 2:i32 priority, 3:i64 rate_pps)
# method -> its arguments' (name, type), field ids counting from 1.
_CALLS: dict[str, tuple[tuple[str, int], ...]] = {
    "set_egress_priority_queue_depth": (
        ("port_num", TType.I32),
        ("priority", TType.I32),
        ("depth_pkts", TType.I32),
    ),
    "set_egress_priority_queue_rate": (
        ("port_num", TType.I32),
        ("priority", TType.I32),
        ("rate_pps", TType.I64),
    ),
}


class ThriftError(RuntimeError):
    """No Thrift service where the switch should serve it, or it refused a call."""


class SimpleSwitchThrift:
    """One connection to a simple_switch's Thrift service; calls are serialised."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.address = (host, port)
        self.timeout = timeout
        self._protocol: Any = None  # (thrift's protocols carry no annotations)
        self._transport: TTransport.TTransportBase | None = None
        self._seqid = 0
        self._lock = threading.Lock()

    def __enter__(self) -> SimpleSwitchThrift:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._disconnect()

    def set_priority_queue_rate(self, port: int, priority: int, rate_pps: int) -> None:
        """Egress queue ``priority`` of ``port`` sends at most ``rate_pps``
        packets per second (0: no limit, BMv2's default)."""
        if rate_pps < 0:
            raise ValueError(f"queue rate {rate_pps} pps: must be >= 0")
        self._call("set_egress_priority_queue_rate", port, priority, rate_pps)

    def set_priority_queue_depth(self, port: int, priority: int, depth_pkts: int) -> None:
        """Egress queue ``priority`` of ``port`` holds at most ``depth_pkts``
        packets (BMv2's default 64); a packet that finds it full is dropped."""
        if depth_pkts < 0:
            raise ValueError(f"queue depth {depth_pkts}: must be >= 0")
        self._call("set_egress_priority_queue_depth", port, priority, depth_pkts)

    def _call(self, method: str, *args: int) -> None:
        with self._lock:
            try:
                self._call_locked(method, args)
            except (TTransport.TTransportException, OSError):
                # (one retry on a fresh connection: the switch may have restarted)
                self._disconnect()
                self._call_locked(method, args)

    def _call_locked(self, method: str, args: tuple[int, ...]) -> None:
        if self._protocol is None:
            self._connect()
        try:
            status = self._send_and_receive(method, args)
        except (TTransport.TTransportException, OSError):
            raise
        except TException as exc:
            raise ThriftError(f"{method}{args}: {exc}") from exc
        if status != 0:
            raise ThriftError(f"{method}{args}: the switch returned {status}")

    def _send_and_receive(self, method: str, args: tuple[int, ...]) -> int:
        """One call as a generated client makes it: the arguments as the
        struct ``<method>_args``, then the reply's field 0 (the status)."""
        protocol = self._protocol
        self._seqid += 1
        protocol.writeMessageBegin(method, TMessageType.CALL, self._seqid)
        protocol.writeStructBegin(f"{method}_args")
        fields = _CALLS[method]
        for field_id, ((name, kind), value) in enumerate(zip(fields, args, strict=True), start=1):
            protocol.writeFieldBegin(name, kind, field_id)
            if kind == TType.I64:
                protocol.writeI64(value)
            else:
                protocol.writeI32(value)
            protocol.writeFieldEnd()
        protocol.writeFieldStop()
        protocol.writeStructEnd()
        protocol.writeMessageEnd()
        assert self._transport is not None
        self._transport.flush()

        _, kind, _ = protocol.readMessageBegin()
        if kind == TMessageType.EXCEPTION:
            error = TApplicationException()
            error.read(protocol)
            protocol.readMessageEnd()
            raise error
        status: int | None = None
        protocol.readStructBegin()
        while True:
            _, field_type, field_id = protocol.readFieldBegin()
            if field_type == TType.STOP:
                break
            if field_id == 0 and field_type == TType.I32:
                status = protocol.readI32()
            else:
                protocol.skip(field_type)
            protocol.readFieldEnd()
        protocol.readStructEnd()
        protocol.readMessageEnd()
        if kind != TMessageType.REPLY:
            raise TApplicationException(
                TApplicationException.INVALID_MESSAGE_TYPE, f"message type {kind} in reply"
            )
        if status is None:
            raise TApplicationException(TApplicationException.MISSING_RESULT, "no status")
        return status

    def _connect(self) -> None:
        socket = TSocket.TSocket(*self.address)
        socket.setTimeout(self.timeout * 1000)
        transport = TTransport.TBufferedTransport(socket)
        protocol = TMultiplexedProtocol.TMultiplexedProtocol(
            TBinaryProtocol.TBinaryProtocol(transport), _SERVICE
        )
        try:
            transport.open()
        except TTransport.TTransportException as exc:
            raise ThriftError(
                f"no Thrift service on {self.address[0]}:{self.address[1]}: "
                "is simple_switch_grpc built --with-thrift? (docs/toolchain.md)"
            ) from exc
        self._transport = transport
        self._protocol = protocol

    def _disconnect(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = None
        self._protocol = None
