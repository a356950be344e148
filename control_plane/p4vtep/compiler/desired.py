"""The desired state: every VM, its indexes, and one ``TorCompiler`` per ToR.

A change to a VM (attach, detach, move, QoS) reaches every ToR's compiler
(``incremental.TorCompiler``), which rebuilds only what the VM touches there.
A ToR can be *pinned* to an older version of one VM (make-before-break
during a migration): until the pin is released, that ToR keeps seeing the VM
where it was. Pins are per migration, so overlapping migrations away from the
same ToR each keep their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..model.allocation import Allocations, SpaceFull, external_vtep_key
from ..model.fabric import Fabric, Vm
from .encode import Encoder
from .incremental import TorCompiler
from .learned import NOTHING, Learned
from .switch_state import SwitchState


@dataclass(frozen=True)
class Pin:
    tor: str
    name: str
    vm: Vm | None  # what the ToR keeps seeing


class DesiredState:
    """The VMs, their indexes and every ToR's compiled entities."""

    def __init__(
        self,
        fabric: Fabric,
        encoder: Encoder,
        alloc: Allocations,
        encoders: dict[str, Encoder] | None = None,
    ) -> None:
        self.fabric = fabric
        self.enc = encoder
        self.encoders = encoders or {}  # per ToR, where its target's P4Info differs
        self.alloc = alloc
        self.learned: Learned = NOTHING  # external VTEPs: set_learned
        self.vms: dict[str, Vm] = {}
        self.by_vni: dict[int, dict[str, Vm]] = {}
        self.tors = {name: TorCompiler(self, name) for name in sorted(fabric.tors)}
        self._pins: dict[int, Pin] = {}
        self._pinned: dict[str, dict[str, list[int]]] = {t: {} for t in fabric.tors}
        self._next_pin = 1
        for name in sorted(fabric.tors):
            alloc.tor.get(name)

    # --- views ----------------------------------------------------------------------
    def seen_by(self, tor: str, name: str) -> Vm | None:
        tokens = self._pinned[tor].get(name)
        return self._pins[tokens[0]].vm if tokens else self.vms.get(name)

    def view(self, tor: str) -> dict[str, Vm]:
        """The VMs as this ToR must see them (pins applied)."""
        out = dict(self.vms)
        for name in self._pinned[tor]:
            vm = self.seen_by(tor, name)
            if vm is None:
                out.pop(name, None)
            else:
                out[name] = vm
        return out

    def view_items(self, tor: str) -> Iterator[tuple[str, Vm]]:
        """``view(tor).items()`` without copying every VM (pinned VMs last):
        to be used up before the desired state changes."""
        pinned = self._pinned[tor]
        if not pinned:
            yield from self.vms.items()
            return
        for name, vm in self.vms.items():
            if name not in pinned:
                yield name, vm
        for name in pinned:
            seen = self.seen_by(tor, name)
            if seen is not None:
                yield name, seen

    def members(self, tor: str, vni: int) -> list[Vm]:
        """The VMs of a VNI as this ToR must see them."""
        out = dict(self.by_vni.get(vni, {}))
        for name in self._pinned[tor]:
            out.pop(name, None)
            vm = self.seen_by(tor, name)
            if vm is not None and vm.vni == vni:
                out[name] = vm
        return list(out.values())

    def pinned_vms(self, names: Iterable[str] | None = None) -> list[Vm]:
        """What the pins keep ToRs seeing: of every VM, or of VMs ``names``
        only (a look-up per name, however many pins there are)."""
        if names is None:
            return [pin.vm for pin in self._pins.values() if pin.vm is not None]
        out = []
        for name in names:
            for pinned in self._pinned.values():
                for token in pinned.get(name, ()):
                    vm = self._pins[token].vm
                    if vm is not None:
                        out.append(vm)
        return out

    # --- changes ----------------------------------------------------------------------
    def _set_global(self, name: str, vm: Vm | None) -> Vm | None:
        old = self.vms.get(name)
        if old is not None:
            members = self.by_vni[old.vni]
            del members[name]
            if not members:
                del self.by_vni[old.vni]
            del self.vms[name]
        if vm is not None:
            self.vms[name] = vm
            self.by_vni.setdefault(vm.vni, {})[name] = vm
        return old

    def check_room(self, upserts: Iterable[Vm]) -> None:
        """Raise SpaceFull, changing nothing, if the indices would run out."""
        vni_space = self.alloc.vni
        new_vnis = vni_space.missing({vm.vni for vm in upserts})
        if len(vni_space) + new_vnis > vni_space.high - vni_space.low + 1:
            raise SpaceFull(f"vni: all {vni_space.high - vni_space.low + 1} indices in use")
        servers = self.fabric.servers
        names_by_tor: dict[str, list[str]] = {}
        for vm in upserts:
            names_by_tor.setdefault(servers[vm.server].tor, []).append(vm.name)
        for tor, names in names_by_tor.items():
            space = self.alloc.vm_space(tor)
            if len(space) + space.missing(names) > space.high - space.low + 1:
                raise SpaceFull(f"{space.name}: all {space.high - space.low + 1} indices in use")

    def change(self, upserts: Iterable[Vm], removals: Iterable[str]) -> None:
        """Apply VM upserts and removals (already validated)."""
        upserts = list(upserts)
        self.check_room(upserts)
        for upsert in upserts:
            self.alloc.vni.get(upsert.vni)
        steps: list[tuple[str, Vm | None]] = [(vm.name, vm) for vm in upserts]
        steps += [(name, None) for name in removals]
        for name, vm in steps:
            old = self._set_global(name, vm)
            for tor in self.tors:
                tokens = self._pinned[tor].get(name)
                if not tokens:
                    self._view_changed(tor, name, old, vm)
                elif vm is None:  # a VM that is gone keeps no pin
                    seen = self._pins[tokens[0]].vm
                    for token in tokens:
                        del self._pins[token]
                    del self._pinned[tor][name]
                    self._view_changed(tor, name, seen, None)

    def check_learned_room(self, learned: Learned) -> None:
        """Raise SpaceFull, changing nothing, if the external VTEPs' replica
        ids would not fit (they share the ToRs' index space)."""
        space = self.alloc.tor
        arriving = [ip for ip in learned.flood_vteps() if space.peek(external_vtep_key(ip)) is None]
        if len(space) + len(arriving) > space.high - space.low + 1:
            raise SpaceFull(f"{space.name}: all {space.high - space.low + 1} indices in use")

    def set_learned(self, learned: Learned) -> None:
        """Replace what is known of external VTEPs: allocate the replica ids
        of new flood VTEPs and free those of VTEPs gone (now, at commit), then
        update every ToR."""
        self.check_learned_room(learned)
        old, self.learned = self.learned, learned
        space = self.alloc.tor
        for ip in sorted(learned.flood_vteps()):
            space.get(external_vtep_key(ip))
        for ip in sorted(old.flood_vteps() - learned.flood_vteps()):
            space.release(external_vtep_key(ip))
        for compiler in self.tors.values():
            compiler.learned_changed(old, learned)

    def load(self, vms: Iterable[Vm]) -> None:
        """Replace the whole population (start, bulk reload): every ToR is
        rebuilt; what differs is recorded as changes."""
        new = {vm.name: vm for vm in vms}
        self.check_room(new.values())
        for name in set(self.vms) - set(new):
            for tor in self.tors:
                for token in self._pinned[tor].pop(name, []):
                    del self._pins[token]
        for vni in sorted({vm.vni for vm in new.values()}):
            self.alloc.vni.get(vni)
        # (what _set_global does for each, in bulk: nothing held before)
        self.vms = {name: new[name] for name in sorted(new)}
        self.by_vni = {}
        for name, vm in self.vms.items():
            self.by_vni.setdefault(vm.vni, {})[name] = vm
        for tor, compiler in self.tors.items():
            self._allocate_view(tor)
            compiler.built = False
            compiler.epoch += 1

    def _allocate_view(self, tor: str) -> None:
        """VM indices for exactly the VMs this ToR sees on itself."""
        space = self.alloc.vm_space(tor)
        servers = self.fabric.servers
        local = {n for n, vm in self.view(tor).items() if servers[vm.server].tor == tor}
        held = space.keys()
        for gone in held - local:
            space.release(gone)
        for name in sorted(local - held):  # (the others have theirs)
            space.get(name)

    def pin(self, tor: str, name: str) -> int:
        """Keep ``tor`` seeing VM ``name`` as it does now, until ``unpin``."""
        token = self._next_pin
        self._next_pin += 1
        self._pins[token] = Pin(tor, name, self.seen_by(tor, name))
        self._pinned[tor].setdefault(name, []).append(token)
        return token

    def unpin(self, token: int) -> None:
        pin = self._pins.pop(token, None)
        if pin is None:
            return  # the VM went away meanwhile
        tokens = self._pinned[pin.tor][pin.name]
        first = tokens[0] == token
        tokens.remove(token)
        if not tokens:
            del self._pinned[pin.tor][pin.name]
        if first:
            self._view_changed(pin.tor, pin.name, pin.vm, self.seen_by(pin.tor, pin.name))

    def _view_changed(self, tor: str, name: str, old: Vm | None, new: Vm | None) -> None:
        """What ``tor`` sees of VM ``name`` changed: allocate or free its index
        there (now, when the change is committed) and update the entities (a
        VM that arrives gets its index first, one that leaves loses it after:
        the compiler finds its flood copy by it)."""
        servers = self.fabric.servers
        was_here = old is not None and servers[old.server].tor == tor
        is_here = new is not None and servers[new.server].tor == tor
        if is_here:
            self.alloc.vm_space(tor).get(name)
        self.tors[tor].apply(name, old, new)
        if was_here and not is_here:
            self.alloc.vm_space(tor).release(name)


def steps_under(
    lock: threading.RLock | threading.Lock, compiler: TorCompiler, version: Callable[[], int]
) -> Iterator[tuple[int, SwitchState]]:
    """``compiler.snapshot_steps()`` with each step under ``lock`` and the
    lock free between steps (so changes and other ToRs' builds go on), each
    part with the desired-state version the whole build stands for (taken
    when it started)."""
    with lock:
        started = version()
        steps = compiler.snapshot_steps()
    try:
        while True:
            with lock:
                part = next(steps, None)
            if part is None:
                return
            yield started, part
    finally:
        with lock:
            steps.close()
