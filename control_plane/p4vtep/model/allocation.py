"""Stable small integers for things the pipeline indexes: VNIs, VMs per ToR,
replica ids of remote VTEPs.

Indices are handed out when a change is committed (under the controller's
lock) and stored with it, never while compiling: compilation only looks them
up. Stable across restarts (the store persists them), so a restarted
controller compiles exactly the entries the switch already holds.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field

from ..dataplane.limits import TOR_INDEX_MAX, VM_INDEX_MAX, VNI_INDEX_MAX
from .fabric import Fabric, Vm, shared

# External VTEPs (learned through EVPN, or static) share the ToRs' index space:
# both are replica ids of flood copies (VTEP_REPLICA_BASE + index). Their keys
# carry this prefix, which no ToR name has (validation refuses it).
EXTERNAL_VTEP = "vtep:"


def external_vtep_key(vtep_ip: str) -> str:
    return EXTERNAL_VTEP + vtep_ip


class SpaceFull(RuntimeError):
    pass


class IndexSpace:
    """Indices in [low, high] handed out lowest-free-first after the last one
    given (so a freed index is not reused at once), one per key. Remembers
    what changed since the store last saved it."""

    def __init__(self, name: str, low: int, high: int) -> None:
        self.name = name
        self.low = low
        self.high = high
        self._by_key: dict[Hashable, int] = {}
        # Which indices are taken: a byte per index of [low, high] (a set of
        # ints cost about 40 bytes per index held).
        self._used = bytearray(high - low + 1)
        self._next = low
        self.changes: dict[Hashable, int | None] = {}  # key -> new index, None: released

    @property
    def dirty(self) -> bool:
        return bool(self.changes)

    def get(self, key: Hashable) -> int:
        """The key's index, allocating one if it has none."""
        index = self._by_key.get(key)
        if index is not None:
            return index
        index, low, used = self._next, self.low, self._used
        while index <= self.high and used[index - low]:
            index += 1
        if index > self.high:
            # Wrap once to reuse freed indices below the cursor.
            free = used.find(0)
            if free < 0:
                raise SpaceFull(f"{self.name}: all {self.high - self.low + 1} indices in use")
            index = low + free
        index = shared(index)  # (each ToR's space holds the same numbers: one object each)
        self._by_key[key] = index
        used[index - low] = 1
        self._next = index + 1
        self.changes[key] = index
        return index

    def peek(self, key: Hashable) -> int | None:
        return self._by_key.get(key)

    def __getitem__(self, key: Hashable) -> int:
        """The key's index; KeyError if it was never allocated."""
        index = self._by_key.get(key)
        if index is None:
            raise KeyError(f"{self.name}: no index allocated for {key!r}")
        return index

    def release(self, key: Hashable) -> None:
        index = self._by_key.pop(key, None)
        if index is not None:
            self._mark(index, 0)
            self.changes[key] = None

    def _mark(self, index: int, used: int) -> None:
        # (an index outside [low, high], restored from a store written with
        # other limits, is never handed out: nothing to mark)
        if self.low <= index <= self.high:
            self._used[index - self.low] = used

    def restore(self, key: Hashable, index: int) -> None:
        self._by_key[key] = index
        self._mark(index, 1)

    def restore_all(self, pairs: Iterable[tuple[Hashable, int]]) -> None:
        """``restore`` each (key, index): a whole stored space at once."""
        restored = {key: shared(index) for key, index in pairs}
        self._by_key.update(restored)
        for index in restored.values():
            self._mark(index, 1)

    def missing(self, keys: Iterable[Hashable]) -> int:
        """How many of ``keys`` (distinct) have no index yet. (Membership
        per key: ``set - dict.keys()`` would walk the whole space, on every
        change.)"""
        by_key = self._by_key
        return sum(1 for key in set(keys) if key not in by_key)

    def items(self) -> list[tuple[Hashable, int]]:
        return list(self._by_key.items())

    def keys(self) -> set[Hashable]:
        return set(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)


@dataclass
class Allocations:
    """Every index the controller hands out, per fabric."""

    vni: IndexSpace = field(default_factory=lambda: IndexSpace("vni", 1, VNI_INDEX_MAX))
    tor: IndexSpace = field(default_factory=lambda: IndexSpace("tor", 0, TOR_INDEX_MAX))
    vm: dict[str, IndexSpace] = field(default_factory=dict)  # per ToR

    def spaces(self) -> list[IndexSpace]:
        return [self.vni, self.tor, *self.vm.values()]

    @property
    def dirty(self) -> bool:
        return any(space.dirty for space in self.spaces())

    def vm_space(self, tor: str) -> IndexSpace:
        if tor not in self.vm:
            self.vm[tor] = IndexSpace(f"vm@{tor}", 1, VM_INDEX_MAX)
        return self.vm[tor]

    def rows(self) -> Iterator[tuple[str, str, int]]:
        """(space, key, index) of every allocation, as the store keeps them."""
        for key, index in self.vni.items():
            yield "vni", str(key), index
        for key, index in self.tor.items():
            yield "tor", str(key), index
        for tor, space in self.vm.items():
            for key, index in space.items():
                yield f"vm@{tor}", str(key), index

    def take_changes(self) -> list[tuple[str, str, int | None]]:
        """(space, key, index or None if released) changed since the last
        call; the store writes these."""
        out: list[tuple[str, str, int | None]] = []
        for label, space in (("vni", self.vni), ("tor", self.tor)):
            out += [(label, str(k), i) for k, i in space.changes.items()]
            space.changes = {}
        for tor, space in self.vm.items():
            out += [(f"vm@{tor}", str(k), i) for k, i in space.changes.items()]
            space.changes = {}
        return out


def allocate(fabric: Fabric, vms: Iterable[Vm], alloc: Allocations) -> None:
    """Give every ToR, every VNI in use and every VM (on its ToR) an index,
    and free the VM indices of VMs no longer on a ToR. Done when a whole
    desired state is committed; single changes allocate as they go."""
    for name in sorted(fabric.tors):
        alloc.tor.get(name)
    by_tor: dict[str, list[str]] = {name: [] for name in fabric.tors}
    vnis = set()
    for vm in vms:
        by_tor[fabric.servers[vm.server].tor].append(vm.name)
        vnis.add(vm.vni)
    for vni in sorted(vnis):
        alloc.vni.get(vni)
    for tor, names in by_tor.items():
        space = alloc.vm_space(tor)
        for gone in space.keys() - set(names):
            space.release(gone)
        for name in sorted(names):
            space.get(name)
