"""p4vtep.netns.in_netns: a thread in a namespace and back; a namespace that
is not there is an error that leaves the thread where it was. (Entering a
real namespace needs root: the switch and EVPN tiers do, through their
packet sockets and the benchmark's BGP injector.)"""

from __future__ import annotations

import os

import pytest
from p4vtep.netns import in_netns


def here() -> str:
    return os.readlink("/proc/thread-self/ns/net")


def test_no_namespace_stays_where_it_is() -> None:
    before = here()
    with in_netns(None):
        assert here() == before
    assert here() == before


def test_a_missing_namespace_is_an_error_and_changes_nothing() -> None:
    before = here()
    with (
        pytest.raises(FileNotFoundError, match="p4vtep-no-such-namespace"),
        in_netns("p4vtep-no-such-namespace"),
    ):
        pass
    assert here() == before
