"""Where VM bindings come from: the inventory file, libvirt, the API."""

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
