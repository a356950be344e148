"""The inputs beside the controller: the inventory file, libvirt, BGP EVPN."""

from __future__ import annotations

from typing import Protocol


class SourceError(RuntimeError):
    """A source could not start (e.g. a libvirt URI that does not open);
    the message names what."""


class Source(Protocol):
    """A running input that keeps one source's VMs in the controller
    (``Controller.replace_source``): ``start`` reads it whole and follows
    it, ``stop`` ends that. A replica runs its sources only while it leads
    (``replica.Replica``), so each instance is started at most once."""

    def start(self) -> None:
        """Read the input whole and begin to follow it; SourceError if it
        cannot be read at all."""
        ...

    def stop(self) -> None: ...


class SharedSource(Protocol):
    """An input every replica runs, leading or not, because what it holds
    takes time to gather and must be at hand the moment its replica leads
    (BGP EVPN: the sessions and the peers' routes). Only the leader
    commits it: a follower keeps what it gathers in memory. ``start`` may
    block for a bounded time until it holds what its input has to say (a
    replica campaigns only after it); ``lead`` commits what it holds now,
    before the new leader's supervisors write anything (StateError if the
    store refused it: the replica tries again); ``follow`` stops committing
    (the replica lost the lead)."""

    def start(self) -> None: ...

    def lead(self) -> None: ...

    def follow(self) -> None: ...

    def stop(self) -> None: ...
