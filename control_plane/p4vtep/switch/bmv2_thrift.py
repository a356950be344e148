"""BMv2's queue settings through its Thrift runtime interface.

simple_switch's egress queues (``--priority-queues``) have a rate and a depth
per (port, priority) that P4Runtime does not reach: only the switch's own
Thrift service ``SimpleSwitch`` sets them (``set_egress_priority_queue_rate``
and ``set_egress_priority_queue_depth``). BMv2 serves it on ``--thrift-port``
when ``simple_switch_grpc`` was configured ``--with-thrift``
(docs/toolchain.md), every service multiplexed by name, as its own
``simple_switch_CLI`` calls it.

The client is Apache Thrift's Python library (``thrift``, requirements.txt)
with the ``sswitch_runtime`` classes BMv2 generates and installs beside its
programs (``<prefix>/lib/python3.X/site-packages``): found next to the
``simple_switch_grpc`` the project runs, never copied into the project.
BMv2 has no call that reads a queue's rate or depth back: tests check them
with packets.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from .bmv2 import find_simple_switch_grpc

_SERVICE = "simple_switch"  # BMv2's name for SimpleSwitch in its multiplexer


class ThriftError(RuntimeError):
    """No Thrift service where the switch should serve it, or it refused a call."""


def _runtime_module() -> ModuleType:
    """BMv2's generated ``sswitch_runtime.SimpleSwitch``: importable already,
    or from the Python directory of the prefix ``simple_switch_grpc`` lives in."""
    try:
        return importlib.import_module("sswitch_runtime.SimpleSwitch")
    except ImportError:
        pass
    binary = find_simple_switch_grpc()
    if binary is None:
        raise ThriftError("simple_switch_grpc not found: BMv2's sswitch_runtime cannot be located")
    prefix = Path(os.path.realpath(binary)).parent.parent
    candidates = sorted(prefix.glob("lib/python3*/*-packages/sswitch_runtime"))
    if not candidates:
        raise ThriftError(
            f"no sswitch_runtime under {prefix}/lib/python3*/: BMv2 installs it with "
            "its Thrift support (docs/toolchain.md)"
        )
    # Appended, then taken out again: only sswitch_runtime is wanted from
    # there, never the prefix's own copies of packages the virtualenv has.
    directory = str(candidates[-1].parent)
    sys.path.append(directory)
    try:
        return importlib.import_module("sswitch_runtime.SimpleSwitch")
    finally:
        sys.path.remove(directory)


class SimpleSwitchThrift:
    """One connection to a simple_switch's Thrift service; calls are serialised."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.address = (host, port)
        self.timeout = timeout
        self._client: Any = None
        self._transport: TTransport.TTransportBase | None = None
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
        if self._client is None:
            self._connect()
        try:
            status = getattr(self._client, method)(*args)
        except (TTransport.TTransportException, OSError):
            raise
        except TException as exc:
            raise ThriftError(f"{method}{args}: {exc}") from exc
        if status not in (0, None):
            raise ThriftError(f"{method}{args}: the switch returned {status}")

    def _connect(self) -> None:
        runtime = _runtime_module()
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
        self._client = runtime.Client(protocol)

    def _disconnect(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = None
        self._client = None
