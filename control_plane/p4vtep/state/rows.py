"""The stored form of the desired state, shared by every store.

VMs are JSON objects (the fields of :class:`~p4vtep.model.fabric.Vm`); allocations
are rows ``(space, key) -> index`` with the space names SQLite uses too:
``vni`` (key: the VNI), ``tor`` (key: ToR name), ``vm@<tor>`` (key: VM name).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import fields
from typing import Any

from ..model.allocation import Allocations, IndexSpace
from ..model.fabric import SHARED_FIELDS, AllowedPair, Vm, shared
from .protocol import AllocKey, Change, Snapshot

_VM_FIELDS = tuple(sorted(f.name for f in fields(Vm)))


def vm_to_json(vm: Vm) -> str:
    # (dataclasses.asdict deep-copies every field: slow for 100,000 VMs.)
    data = {name: getattr(vm, name) for name in _VM_FIELDS}
    data["allowed_pairs"] = [[p.prefix, p.mac] for p in vm.allowed_pairs]
    return json.dumps(data, separators=(",", ":"))


def _from_stored(data: dict[str, Any]) -> None:
    """The JSON values of a stored VM as the model's types, in place. A row
    written before port security (issue 38) has none of its fields: the
    VM gets the defaults (port security on, no pairs)."""
    data["ips"] = tuple(data["ips"])
    pairs = data.get("allowed_pairs")
    if pairs is not None:
        data["allowed_pairs"] = tuple(AllowedPair(prefix, mac) for prefix, mac in pairs)


def vm_from_json(text: str | bytes) -> Vm:
    data: dict[str, Any] = json.loads(text)
    _from_stored(data)
    return Vm(**data)


def vms_from_json(texts: list[str]) -> list[Vm]:
    """``vm_from_json`` of each, parsed ``JSON_CHUNK`` rows at a time as one
    JSON array (one parser call per chunk instead of one per VM: a
    controller loads every VM at start; parsing all of them at once held
    every row's dict together, about 60 MiB more resident with 100,000 VMs).
    A row with exactly the fields ``vm_to_json`` writes gets its values as
    they are, without ``Vm.__init__`` but as it does: each field set in its
    order, the shared values shared (updating the new object's ``__dict__``
    instead gave each VM a dictionary of its own, about 180 bytes more a
    VM); any other row goes through ``Vm(...)``, which refuses unknown or
    missing fields as ``vm_from_json`` does."""
    out = []
    fields_ = set(_VM_FIELDS)
    new = object.__new__
    put = object.__setattr__
    for start in range(0, len(texts), JSON_CHUNK):
        for data in json.loads("[" + ",".join(texts[start : start + JSON_CHUNK]) + "]"):
            _from_stored(data)
            if data.keys() == fields_:
                vm = new(Vm)
                for name, is_shared in _SET_IN_ORDER:
                    value = data[name]
                    put(vm, name, shared(value) if is_shared else value)
            else:
                vm = Vm(**data)
            out.append(vm)
    return out


JSON_CHUNK = 1000
# Vm's fields in the order its __init__ sets them, and whether each is shared.
_SET_IN_ORDER = tuple((f.name, f.name in SHARED_FIELDS) for f in fields(Vm))


def allocation_rows(alloc: Allocations) -> dict[AllocKey, int]:
    return {(space, key): index for space, key, index in alloc.rows()}


def allocations_from_rows(rows: Mapping[AllocKey, int]) -> Allocations:
    alloc = Allocations()
    by_space: dict[str, dict[str, int]] = {}
    for (space, key), index in rows.items():
        by_space.setdefault(space, {})[key] = index
    for space, indices in by_space.items():
        if space == "vni":
            alloc.vni.restore_all((int(key), index) for key, index in indices.items())
        elif space == "tor":
            alloc.tor.restore_all(indices.items())
        elif space.startswith("vm@"):
            alloc.vm_space(space[3:]).restore_all(indices.items())
        else:
            raise ValueError(f"unknown allocation space {space!r} (key {next(iter(indices))!r})")
    return alloc


def change_between(
    before: Snapshot, vms: Mapping[str, Vm], allocations: Mapping[AllocKey, int]
) -> Change:
    """The change that turns ``before`` into the given VMs and allocations."""
    return Change(
        upserts=tuple(vm for name, vm in vms.items() if before.vms.get(name) != vm),
        removals=tuple(name for name in before.vms if name not in vms),
        alloc_set={k: i for k, i in allocations.items() if before.allocations.get(k) != i},
        alloc_removed=tuple(k for k in before.allocations if k not in allocations),
    )


def set_row(alloc: Allocations, row: AllocKey, index: int | None) -> None:
    """Make one allocation row ``index`` (None: released), e.g. as another
    replica committed it. The change it records is the caller's to discard."""
    space_name, key = row
    space: IndexSpace
    k: Hashable
    if space_name == "vni":
        space, k = alloc.vni, int(key)
    elif space_name == "tor":
        space, k = alloc.tor, key
    elif space_name.startswith("vm@"):
        space, k = alloc.vm_space(space_name[3:]), key
    else:
        raise ValueError(f"unknown allocation space {space_name!r} (key {key!r})")
    if space.peek(k) == index:
        return
    space.release(k)
    if index is not None:
        space.restore(k, index)
