"""Stable small integers for things the pipeline indexes: VNIs, VMs per ToR,
replica ids. Stable across restarts (the store persists them), so a restarted
controller compiles exactly the entries the switch already holds."""

from __future__ import annotations

from collections.abc import Hashable


class SpaceFull(RuntimeError):
    pass


class IndexSpace:
    """Indices in [low, high] handed out lowest-free-first, one per key."""

    def __init__(self, name: str, low: int, high: int) -> None:
        self.name = name
        self.low = low
        self.high = high
        self._by_key: dict[Hashable, int] = {}
        self._used: set[int] = set()
        self._next = low
        self.dirty = False  # changed since the store last saved it

    def get(self, key: Hashable) -> int:
        index = self._by_key.get(key)
        if index is not None:
            return index
        index = self._next
        while index in self._used:
            index += 1
        if index > self.high:
            # Wrap once to reuse freed indices below the cursor.
            index = next((i for i in range(self.low, self.high + 1) if i not in self._used), None)
            if index is None:
                raise SpaceFull(f"{self.name}: all {self.high - self.low + 1} indices in use")
        self._by_key[key] = index
        self._used.add(index)
        self._next = index + 1
        self.dirty = True
        return index

    def peek(self, key: Hashable) -> int | None:
        return self._by_key.get(key)

    def release(self, key: Hashable) -> None:
        index = self._by_key.pop(key, None)
        if index is not None:
            self._used.discard(index)
            self.dirty = True

    def restore(self, key: Hashable, index: int) -> None:
        self._by_key[key] = index
        self._used.add(index)

    def items(self) -> list[tuple[Hashable, int]]:
        return list(self._by_key.items())

    def keys(self) -> set[Hashable]:
        return set(self._by_key)
