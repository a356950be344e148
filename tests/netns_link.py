"""A network namespace joined to the host by one veth pair, to cut off
whatever runs inside it (a real partition, not a killed process).

    host namespace  ADDR_HOST ── veth ── ADDR_NS  namespace <name>

Both ends, the namespace and the route are created under names unique to this
process and removed on exit.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class NetnsLink:
    name: str
    host_address: str  # host end: processes in the host namespace listen here
    ns_address: str  # namespace end
    _ns_end: str

    @property
    def wrap(self) -> tuple[str, ...]:
        """Command prefix that runs a program inside the namespace."""
        return ("ip", "netns", "exec", self.name)

    def cut(self) -> None:
        _ip("-n", self.name, "link", "set", self._ns_end, "down")

    def heal(self) -> None:
        _ip("-n", self.name, "link", "set", self._ns_end, "up")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def netns_link(tag: str) -> Iterator[NetnsLink]:
    pid = os.getpid()
    name = f"p4vtep-{tag}-{pid}"
    host_end, ns_end = f"pv{pid % 100000}{tag[:3]}h", f"pv{pid % 100000}{tag[:3]}n"
    net = f"10.254.{pid % 250}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        try:
            _ip("link", "set", ns_end, "netns", name)
            _ip("addr", "add", f"{net}.1/30", "dev", host_end)
            _ip("link", "set", host_end, "up")
            _ip("-n", name, "addr", "add", f"{net}.2/30", "dev", ns_end)
            _ip("-n", name, "link", "set", ns_end, "up")
            _ip("-n", name, "link", "set", "lo", "up")
            yield NetnsLink(name, f"{net}.1", f"{net}.2", ns_end)
        finally:
            _ip("link", "del", host_end)
    finally:
        _ip("netns", "del", name)
