"""A thread inside a network namespace for a while.

``setns`` moves only the calling thread, and a socket keeps the namespace it
was opened in: open it inside ``in_netns`` and it sends and receives there
after the thread has switched back (a raw packet socket on a namespace's
interface, a BGP session from a peer's namespace). Namespaces are the ones
``ip netns add`` names, under /run/netns. Linux only.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/run/netns"

_libc: ctypes.CDLL | None = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextmanager
def in_netns(ns: str | None) -> Iterator[None]:
    """The calling thread in network namespace ``ns`` (by name; None: stay
    where it is), and back where it was on leaving, whatever happened."""
    if ns is None:
        yield
        return
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"{NETNS_DIR}/{ns}", os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(home)
        finally:
            os.close(target)
    finally:
        os.close(home)
