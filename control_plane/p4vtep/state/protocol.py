"""What the controller needs from a desired-state store, whatever holds it.

The desired state is the VMs (by name) and the index allocations (rows
``(space, key) -> index``, e.g. ``("vm@tor1", "vm7") -> 12``). A store hands
out a snapshot with the revision it was read at; a change is committed
against that revision and refused with :class:`Conflict` when anything was
committed since. Replicas follow each other through :meth:`StateStore.watch`.

Leadership (which replica may write to the switches) is a separate concern:
:class:`Leadership`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..model.fabric import Vm

AllocKey = tuple[str, str]  # (space, key): ("vni", "100"), ("tor", "tor1"), ("vm@tor1", "vm7")


class StateError(RuntimeError):
    """Base of the errors a state store raises."""


class Conflict(StateError):
    """Someone committed since the revision the change was based on: nothing
    was written; reload, reapply the change and commit again (or report)."""

    def __init__(self, message: str, base_revision: int, current_revision: int) -> None:
        super().__init__(message)
        self.base_revision = base_revision
        self.current_revision = current_revision


class NotLeader(StateError):
    """A commit fenced by a leadership term that has ended: nothing was written."""


class StoreUnavailable(StateError):
    """The store did not answer (e.g. etcd lost quorum); the message says
    what was reachable. The last known state stays readable (snapshot()).

    From commit() it means *not acknowledged*: the change may still land once
    the store recovers (a proposal already in etcd's raft log). ``commit_id``
    is set then: committing again with it applies the change exactly once."""

    def __init__(self, message: str, commit_id: str | None = None) -> None:
        super().__init__(message)
        self.commit_id = commit_id


@dataclass(frozen=True)
class Snapshot:
    """The desired state at one store revision (0: nothing committed yet)."""

    revision: int
    vms: Mapping[str, Vm]
    allocations: Mapping[AllocKey, int]


@dataclass(frozen=True)
class Change:
    """VMs to add or replace, VMs to remove, allocation rows to set or drop;
    committed all together or not at all."""

    upserts: tuple[Vm, ...] = ()
    removals: tuple[str, ...] = ()
    alloc_set: Mapping[AllocKey, int] = field(default_factory=dict)
    alloc_removed: tuple[AllocKey, ...] = ()

    def __post_init__(self) -> None:
        names = [vm.name for vm in self.upserts]
        problems = []
        if len(set(names)) != len(names):
            problems.append("a VM is upserted twice")
        if set(names) & set(self.removals):
            problems.append(
                f"VMs both upserted and removed: {sorted(set(names) & set(self.removals))}"
            )
        if set(self.alloc_set) & set(self.alloc_removed):
            problems.append("allocation rows both set and removed")
        for (space, key), index in self.alloc_set.items():
            if not space or not key or not isinstance(index, int) or index < 0:
                problems.append(f"bad allocation row {(space, key)!r} -> {index!r}")
        if problems:
            raise ValueError("invalid change: " + "; ".join(problems))

    @property
    def empty(self) -> bool:
        return not (self.upserts or self.removals or self.alloc_set or self.alloc_removed)


@dataclass(frozen=True)
class StateEvent:
    """One committed change seen by a watcher: what it changed and the
    revision the store is at after it. ``origin`` names the replica that
    committed it ("" when unknown, e.g. a resync after a watch gap)."""

    revision: int
    origin: str
    upserts: Mapping[str, Vm]
    removals: frozenset[str]
    alloc_set: Mapping[AllocKey, int]
    alloc_removed: frozenset[AllocKey]


class Subscription(Protocol):
    def cancel(self) -> None: ...


class StateStore(Protocol):
    replica_id: str

    def load(self) -> Snapshot:
        """Read the whole desired state at one revision (from the store)."""
        ...

    def snapshot(self) -> Snapshot:
        """The last state this replica knows (loaded, committed or watched),
        without asking the store: it works while the store is unreachable."""
        ...

    def commit(
        self,
        change: Change,
        base_revision: int,
        *,
        fence_term: int | None = None,
        commit_id: str | None = None,
    ) -> int:
        """Apply ``change`` atomically if the store is still at
        ``base_revision``; returns the new revision. Raises Conflict (changed
        since) or NotLeader (``fence_term`` given and that term is over):
        nothing was written; or StoreUnavailable: outcome unknown, commit
        again with its ``commit_id`` (same change, same base revision)."""
        ...

    def watch(
        self, callback: Callable[[StateEvent], None], *, include_own: bool = False
    ) -> Subscription:
        """Call ``callback`` for every change committed after the last
        load/snapshot, in revision order (by default only other replicas')."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class LeaderInfo:
    replica_id: str
    address: str  # where the leader's API listens, for forwarding writes
    term: int


class Leadership(Protocol):
    """Which replica may write to the switches, and under which term."""

    replica_id: str

    def campaign(self, timeout: float | None = None) -> int:
        """Block until this replica leads (returns its term) or the timeout
        passes (TimeoutError)."""
        ...

    @property
    def term(self) -> int | None:
        """The term this replica leads under, None when it does not lead."""
        ...

    def may_write(self) -> bool:
        """True while this replica leads and its lease is surely valid for
        at least the safety margin; check before each switch write."""
        ...

    def election_id(self) -> int:
        """P4Runtime election id for the current term (higher for newer terms)."""
        ...

    def leader(self) -> LeaderInfo | None:
        """The current leader (any replica), None when there is none."""
        ...

    def resign(self) -> None: ...

    def close(self) -> None: ...
