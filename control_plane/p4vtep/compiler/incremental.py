"""Desired-state changes turned directly into per-ToR entity deltas.

One ``TorCompiler`` per ToR (held by ``desired.DesiredState``). A change to a
VM (attach, detach, move, QoS) reaches every ToR, and each rebuilds only what
the VM touches there: its own entries (local or remote), its VNI's
parameters and flood groups, the replica entries toward the other ToRs, and,
when the VNI appears on or leaves the ToR, the remote entries of the VNI's
other VMs. Learned facts about external VTEPs (EVPN routes, static VTEPs:
``DesiredState.set_learned``) rebuild the units they touch: per VNI the
learned MACs, the flood groups and replicas, per VRF its prefixes and per
learned host route its own unit (with the host routes of our VMs whose IPs
they name), and the underlay; what differs is read from the new facts
(``Learned.since``: as the learned table recorded it, change by change).
Every entity that changed is recorded with what the switch held before, so a
supervisor writes just those.

The result always equals ``full.compile_tor`` over the ToR's view (the
property test checks this over random change sequences).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..model.fabric import Vm
from . import cpu_path, flooding, local_vm, ports, remote_vm, routing, underlay
from .learned import Learned
from .switch_state import METER, Encoded, Key, SwitchState

if TYPE_CHECKING:
    from .desired import DesiredState

METER_KIND = METER[0]  # (the first byte of a meter config's key, as an int)

# A group of entities rebuilt together: ("vm", name), ("vni", vni), ("evpn", vni), ...
Unit = Hashable
Change = tuple[Key, bytes | None, bytes | None]  # key, what the switch held, what it must hold
# VMs compiled per step of a step-wise first build (``snapshot_steps``): a
# few thousand entities, a few write batches.
STEP_VMS = 500


class TorCompiler:
    """The entities one ToR must hold, kept up to date change by change."""

    def __init__(self, desired: DesiredState, name: str) -> None:
        self.d = desired
        self.name = name
        self.enc = desired.encoders.get(name, desired.enc)  # this ToR's P4Info ids
        self._state = SwitchState()
        # Built lazily: after a (re)load, each ToR is compiled when its
        # supervisor first asks, so one ToR is written while the next compiles.
        self.built = False
        # VNIs whose flood groups must be rebuilt: done once when the state
        # is next read, so a burst of changes in a big VNI rebuilds them once.
        self._stale_vnis: set[int] = set()
        # The keys each unit holds: a VM's ("vm", name) unit by the VM's
        # name (most units are VMs' units: no tuple kept per VM and ToR for
        # its unit's name), every other unit by itself.
        self.units: dict[Unit, tuple[Key, ...]] = {}
        self.vm_units: dict[str, tuple[Key, ...]] = {}
        self.local: dict[int, dict[str, Vm]] = {}  # VNI -> its VMs on this ToR
        self.remote: dict[int, Counter[str]] = {}  # VNI here -> other ToR -> its VMs there
        self.vrfs: set[str] = set()  # VRFs held here: those of the routed VNIs hosted here
        # Per VNI here, its VMs' copies (port, VM index), kept sorted and
        # encoded as they come and go: a flood group is their concatenation
        # (sorting and looking up thousands of copies on every rebuild of a
        # big VNI's groups cost most of a churn pass).
        self.ordered: dict[int, flooding.OrderedCopies] = {}
        # Entities changed since a supervisor last took them: key -> what it held then.
        self.dirty: dict[Key, bytes | None] = {}
        # Counts changes to this ToR's view; a step-wise build in progress
        # (``snapshot_steps``) ignores them and rebuilds at its end if any came.
        self.epoch = 0
        self._building = False
        # Per VRF held here, every IP of its VMs as this ToR sees them: a
        # learned host route is checked against them without a walk of the
        # VRF's VMs at every commit. Dropped when the view changes (``apply``,
        # a rebuild).
        self._vrf_ips: dict[str, frozenset[str]] = {}

    # --- bookkeeping -----------------------------------------------------------
    @property
    def state(self) -> SwitchState:
        """Everything the ToR must hold (pending rebuilds done first)."""
        if not self.built:
            self.rebuild()
        if self._stale_vnis:
            stale, self._stale_vnis = sorted(self._stale_vnis), set()
            for vni in stale:
                if vni in self.local:
                    self._set_unit(("vni", vni), self._vni_items(vni))
        return self._state

    def _put(self, key: Key, data: bytes | None) -> None:
        bucket = self._state.bucket(key)
        have = bucket.get(key)
        if have == data:
            return
        if key not in self.dirty:
            self.dirty[key] = have
        if data is None:
            del bucket[key]
        else:
            bucket[key] = data

    def _set_unit(self, unit: Unit, items: list[Encoded]) -> None:
        self._set_units({unit: items})

    def _set_units(self, units: dict[Unit, list[Encoded]]) -> None:
        """Replace several units at once: every key a unit drops is removed
        before any is written, so a key passing from one unit to another (a
        VM's MAC entry and the learned entry it shadows) ends up written."""
        for unit, items in units.items():
            held, name = self._holder(unit)
            new_keys = {key for key, _ in items}
            for key in held.get(name, ()):
                if key not in new_keys:
                    self._put(key, None)
        for unit, items in units.items():
            for key, data in items:
                self._put(key, data)
            held, name = self._holder(unit)
            if items:
                held[name] = tuple([key for key, _ in items])
            else:
                held.pop(name, None)

    def _holder(self, unit: Unit) -> tuple[dict[Any, tuple[Key, ...]], Any]:
        """Where a unit's keys are kept, and under what."""
        if type(unit) is tuple and len(unit) == 2 and unit[0] == "vm":
            return self.vm_units, unit[1]
        return self.units, unit

    def _add_units(self, units: dict[Unit, list[Encoded]]) -> SwitchState:
        """``_set_units`` for units whose keys nobody holds yet (a build from
        nothing): the same state and units, recorded in bulk. Returns what
        they added, instead of recording it as changes (the caller writes it
        as one part of the build)."""
        added = [item for items in units.values() for item in items]
        meters = {key: data for key, data in added if key[0] == METER_KIND}
        # (a VM's units hold table entries and meter configs only)
        entities = (
            dict(added)
            if not meters
            else {key: data for key, data in added if key[0] != METER_KIND}
        )
        for unit, items in units.items():
            if items:
                held, name = self._holder(unit)
                held[name] = tuple([key for key, _ in items])
        self._state.entities.update(entities)
        self._state.meters.update(meters)
        return SwitchState(entities, meters)

    def snapshot(self) -> SwitchState:
        """A copy of everything the ToR must hold; changes recorded so far
        are dropped (a full pass against this copy covers them)."""
        state = self.state.copy()
        self.dirty = {}
        return state

    def take_changes(self) -> list[Change]:
        state = self.state
        changes = [(key, old, state.get(key)) for key, old in self.dirty.items()]
        self.dirty = {}
        return [c for c in changes if c[1] != c[2]]

    def owner(self, key: Key) -> str | None:
        """The VM an entity serves (to blame refused writes), if any."""
        self.state  # noqa: B018 -- (builds it if needed)
        for name, keys in self.vm_units.items():
            if key in keys:
                return name
        return None

    # --- builders, fed from the indexes --------------------------------------
    def _tor_of(self, vm: Vm) -> str:
        return self.d.fabric.servers[vm.server].tor

    def _vni_items(self, vni: int) -> list[Encoded]:
        copies = self.ordered[vni]
        return flooding.vni(
            self.enc,
            self.d.fabric,
            self.name,
            self.d.alloc,
            vni,
            copies,
            sorted(self.remote[vni]),
            sorted(self.d.learned.flood.get(vni, ())),
        ) + routing.vni_items(self.enc, self.d.fabric, vni)

    def _vrf_members(self, vrf: str) -> list[Vm]:
        """The VMs of a VRF as this ToR sees them (every VNI routed in it)."""
        return [
            vm
            for vni in routing.vnis_of(self.d.fabric, vrf)
            for vm in self.d.members(self.name, vni)
        ]

    def _ips_of(self, vrf: str) -> frozenset[str]:
        """Every IP of the VRF's VMs as this ToR sees them (kept until the view changes)."""
        ips = self._vrf_ips.get(vrf)
        if ips is None:
            ips = frozenset(ip for vm in self._vrf_members(vrf) for ip in vm.ips)
            self._vrf_ips[vrf] = ips
        return ips

    def _vrf_items(self, vrf: str) -> list[Encoded]:
        """The ("vrf", VRF) unit: all of the VRF but its learned host routes
        (``_host_units``, one unit per IP: a learned route changes its own)."""
        fabric, learned = self.d.fabric, self.d.learned
        # (the VMs by IP only where there are static routes: a walk of the VRF)
        owners = routing.ip_owners(self._vrf_members(vrf)) if fabric.vrfs[vrf].routes else {}
        return routing.vrf_items(
            self.enc, fabric, self.name, vrf, self.d.alloc, owners, learned, learned_hosts=False
        )

    def _host_units(self, vrf: str, ips: Iterable[str]) -> dict[Unit, list[Encoded]]:
        """("host", VRF, IP) units: the learned host route of each IP given,
        where this ToR holds the VRF and no VM of it (or gateway) keeps the IP."""
        fabric, learned = self.d.fabric, self.d.learned
        hosts = learned.hosts.get(vrf, {}) if vrf in self.vrfs else {}
        ips = list(ips)
        wanted = {ip for ip in ips if ip in hosts}
        owners: dict[str, Vm] = {}
        if wanted:  # (the VRF's VMs with those IPs: a walk of the VRF)
            for vm in self._vrf_members(vrf):
                for ip in vm.ips:
                    if ip in wanted:
                        owners[ip] = vm
        gateway_ips = routing.gateways(fabric, vrf) if wanted else set()
        l3vni = fabric.vrfs[vrf].l3vni
        units: dict[Unit, list[Encoded]] = {}
        for ip in ips:
            host = hosts.get(ip)
            item = (
                routing.learned_host_route(
                    self.enc, l3vni, host, owners.get(ip), learned, gateway_ips
                )
                if host is not None
                else None
            )
            units[("host", vrf, ip)] = [item] if item is not None else []
        return units

    def _set_hosts(self, vrf: str, ips: Iterable[str]) -> None:
        """``_set_units(self._host_units(vrf, ips))`` where no VM of the VRF
        has any of the IPs and no other unit changes in the same step (a
        peer's routes to hosts of its own: a burst of them is most commits).
        Each such unit holds at most its IP's learned host route, a key no
        other unit of the step holds, so each unit is replaced on its own;
        the entries are encoded in bulk (``Encoder.remote_host_routes``)."""
        hosts = self.d.learned.hosts.get(vrf, {}) if vrf in self.vrfs else {}
        ips = list(ips)
        wanted = [h for h in map(hosts.get, ips) if h is not None]  # (one lookup an IP)
        if wanted:  # (the VRF's gateway keeps its IPs: no learned route for them)
            gateway_ips = routing.gateways(self.d.fabric, vrf)
            wanted = [h for h in wanted if h.ip not in gateway_ips]
        routes = self.enc.remote_host_routes(
            self.d.fabric.vrfs[vrf].l3vni,
            [(h.ip, h.vtep, h.router_mac, h.vni) for h in wanted],
        )
        items = {h.ip: item for h, item in zip(wanted, routes, strict=True)}
        held_units, dirty, entities = self.units, self.dirty, self._state.entities
        for ip in ips:
            unit = ("host", vrf, ip)
            item = items.get(ip)
            held = held_units.get(unit)
            if held is not None:  # (what it drops, removed first)
                for key in held:
                    if item is None or key != item[0]:
                        have = entities.pop(key, None)
                        if have is not None and key not in dirty:
                            dirty[key] = have
            if item is None:
                if held is not None:
                    del held_units[unit]
                continue
            key, data = item
            have = entities.get(key)
            if have != data:
                if key not in dirty:
                    dirty[key] = have
                entities[key] = data
            held_units[unit] = (key,)

    def _vrf_units(self, vrf: str) -> dict[Unit, list[Encoded]]:
        """A VRF's units: itself and its learned host routes (empty when
        this ToR does not hold it)."""
        items = self._vrf_items(vrf) if vrf in self.vrfs else []
        return {("vrf", vrf): items, **self._host_units(vrf, self.d.learned.hosts.get(vrf, {}))}

    def _replica_items(self) -> list[Encoded]:
        tors = {t for counts in self.remote.values() for t in counts}
        flood = self.d.learned.flood
        external = {ip for vni in self.local for ip in flood.get(vni, ())}
        return flooding.replicas(self.enc, self.d.fabric, self.name, self.d.alloc, tors, external)

    def _underlay_items(self) -> list[Encoded]:
        return underlay.build(self.enc, self.d.fabric, self.name, self.d.learned.vteps())

    def _learned_items(self, vni: int) -> list[Encoded]:
        """The learned MACs of a VNI hosted here, less those our VMs have."""
        macs = self.d.learned.macs.get(vni)
        if vni not in self.local or not macs:
            return []
        return remote_vm.learned(self.enc, macs.values(), self.d.members(self.name, vni))

    def _learned_units(self, vnis: Iterable[int]) -> dict[Unit, list[Encoded]]:
        """("evpn", VNI) units to rebuild for these VNIs (those with learned
        MACs, or holding some)."""
        learned = self.d.learned.macs
        return {
            ("evpn", x): self._learned_items(x)
            for x in vnis
            if x in learned or ("evpn", x) in self.units
        }

    def learned_changed(self, old: Learned, new: Learned) -> None:
        """The learned facts changed from ``old`` to ``new``."""
        self.epoch += 1  # (a build in steps then finishes from the new facts)
        if not self.built or self._building:
            return
        delta = new.since(old)
        mac_vnis = delta.macs
        units = self._learned_units(sorted(mac_vnis))
        # Our VMs whose MAC a remote VTEP won or gave up: their MAC entry
        # passes to (or back from) the learned one, in the same step.
        for x in mac_vnis:
            if x not in self.local:
                continue
            was, now = old.macs.get(x, {}), new.macs.get(x, {})
            for vm in self.d.members(self.name, x):
                if (vm.mac in was) != (vm.mac in now):
                    units[("vm", vm.name)] = self._vm_items(vm)
        # The VRFs held here whose learned routes changed, or one of whose
        # VMs a remote VTEP won or gave back (its host routes leave or come
        # back with its MAC), and our VMs whose host route for an IP passes
        # to (or back from) a learned one.
        moved: dict[int, set[str]] = {}
        for vni, mac in delta.taken:
            moved.setdefault(vni, set()).add(mac)
        # VRFs whose change is their learned host routes alone, none of them
        # an IP of the VRF's VMs: their host units, set in bulk below.
        hosts_only: list[tuple[str, frozenset[str]]] = []
        # Only the VRFs the change names: a walk of every VRF held here, each
        # through every VNI of the fabric, made one learned route cost 10 ms
        # with 500 tenants (bench/NOTES.md, issue 40, session 17).
        moved_in: dict[str, list[int]] = {}
        for vni in sorted(moved):
            if (spec := routing.vrf_of(self.d.fabric, vni)) is not None:
                moved_in.setdefault(spec.name, []).append(vni)
        named = {*delta.hosts, *delta.prefixes, *moved_in}
        for vrf in sorted(self.vrfs & named):
            ips = delta.hosts.get(vrf, frozenset())
            vms = [
                vm
                for vni in moved_in.get(vrf, ())
                for vm in self.d.members(self.name, vni)
                if vm.mac in moved[vni]
            ]
            if not vms and not ips and vrf not in delta.prefixes:
                continue
            # The VRF's unit: its prefixes, and its static routes (those
            # towards a VM that moved away follow the learned host route).
            hops = {route.next_hop for route in self.d.fabric.vrfs[vrf].routes}
            whole = bool(vms) or vrf in delta.prefixes or not hops.isdisjoint(ips)
            owners = (
                [vm for vm in self._vrf_members(vrf) if not ips.isdisjoint(vm.ips)]
                if ips and not ips.isdisjoint(self._ips_of(vrf))
                else []
            )
            if not whole and not owners:
                hosts_only.append((vrf, ips))
                continue
            if whole:
                units[("vrf", vrf)] = self._vrf_items(vrf)
            units.update(self._host_units(vrf, {*ips, *(ip for vm in vms for ip in vm.ips)}))
            for vm in [*vms, *owners]:
                units[("vm", vm.name)] = self._vm_items(vm)
        if units:  # (a key may pass between units: replaced together)
            for vrf, ips in hosts_only:
                units.update(self._host_units(vrf, ips))
            self._set_units(units)
        else:
            for vrf, ips in hosts_only:
                self._set_hosts(vrf, ips)
        flood_vnis = delta.flood
        self._stale_vnis.update(x for x in flood_vnis if x in self.local)
        if flood_vnis & set(self.local):
            self._set_unit(("replicas",), self._replica_items())
        if old.vteps() != new.vteps():
            self._set_unit(("underlay",), self._underlay_items())

    def _vm_items(self, vm: Vm | None) -> list[Encoded]:
        if vm is None:
            return []
        fabric = self.d.fabric
        if self._tor_of(vm) == self.name:
            index = self.d.alloc.vm[self.name][vm.name]
            moved = self.d.learned.holds(vm.vni, vm.mac)
            items = local_vm.build(self.enc, fabric, vm, index, moved)
        elif vm.vni in self.local:
            moved = self.d.learned.holds(vm.vni, vm.mac)
            items = remote_vm.build(self.enc, fabric, vm, moved)
        else:
            items = []
        vrf = fabric.vnis[vm.vni].vrf
        if vrf is not None and vrf in self.vrfs:
            items += routing.host_routes(
                self.enc, fabric, self.name, vm, self.d.alloc, self.d.learned
            )
        return items

    # --- whole rebuild (start, bulk reload) ----------------------------------------
    def rebuild(self) -> None:
        """Recompute everything from this ToR's view (its indices were
        allocated when the view was committed); what differs from the current
        state is recorded as changes."""
        for _ in self._rebuild_steps():
            pass

    def _rebuild_steps(
        self, vms_per_step: int = STEP_VMS, fresh: bool = False
    ) -> Iterator[SwitchState]:
        """``rebuild`` in steps: the ToR-wide units first, then the VMs'
        entities ``vms_per_step`` VMs at a time. ``fresh``: the state was
        emptied just before (no units, nothing held); each step then yields
        the VMs' entities it added, not recorded as changes, and the VNIs'
        flooding and learned units come with the last step (otherwise each
        step yields nothing: everything is in the changes)."""
        self.built = True
        self._vrf_ips = {}
        fabric = self.d.fabric
        tor_of = {name: server.tor for name, server in fabric.servers.items()}
        self.local, self.remote = {}, {}
        for name, vm in self.d.view_items(self.name):
            if tor_of[vm.server] == self.name:
                self.local.setdefault(vm.vni, {})[name] = vm
        self.vrfs = routing.vrfs_of(fabric, self.local)
        # The VMs with entities here (in a VNI hosted here, or routed in a
        # VRF held here), in the view's order: a list, not a copy of the
        # whole view (with many ToRs, most VMs have nothing on this one, and
        # every ToR building at once held a copy of every VM).
        routed = {vni for vni, spec in fabric.vnis.items() if spec.vrf in self.vrfs}
        vms: list[Vm] = []
        for vni in self.local:
            self.remote[vni] = Counter()
        for _, vm in self.d.view_items(self.name):
            if vm.vni in self.local:
                vms.append(vm)
                tor = tor_of[vm.server]
                if tor != self.name:
                    self.remote[vm.vni][tor] += 1
            elif vm.vni in routed:
                vms.append(vm)
        vrf_units: dict[Unit, list[Encoded]] = {
            unit: items for vrf in sorted(self.vrfs) for unit, items in self._vrf_units(vrf).items()
        }
        units: dict[Unit, list[Encoded]] = {
            ("ports",): ports.build(self.enc, fabric, self.name),
            ("cpu",): cpu_path.build(self.enc, fabric),
            ("underlay",): self._underlay_items(),
            ("replicas",): self._replica_items(),
            **vrf_units,
        }
        self._stale_vnis = set()
        vm_items = self._vm_items
        if fresh:
            # From nothing no unit holds a key another one is given, so the
            # units can come in any order: the VNIs' flood groups (their
            # sorted copies are most of a ToR-wide step) after the VMs, so
            # that the switch gets its first part sooner. Each step's VM
            # units are added in bulk, without the per-key bookkeeping of
            # ``_set_units`` (the larger part of a first build's time after
            # encoding).
            self._set_units(units)
            yield SwitchState()
            step: dict[Unit, list[Encoded]] = {}
            for vm in vms:
                step[("vm", vm.name)] = vm_items(vm)
                if len(step) == vms_per_step:
                    yield self._add_units(step)
                    step = {}
            added = self._add_units(step)
            self._set_units(self._vni_units())
            self._set_units(self._learned_all())
            yield added  # (the VMs since the last step)
            return
        units.update(self._vni_units())
        learned = self._learned_all()
        units.update(learned)
        # (units no longer built are emptied)
        names = {vm.name for vm in vms}
        gone: list[Unit] = [unit for unit in self.units if unit not in units]
        gone += [("vm", name) for name in self.vm_units if name not in names]
        self._set_units({**{unit: [] for unit in gone}, **units})
        yield SwitchState()
        for vm in vms:
            self._set_unit(("vm", vm.name), vm_items(vm))
        # A key that passed from a VM's unit to a learned one (a MAC a peer
        # took, or the host route that goes with it) was removed again by that
        # VM's step: put the learned and VRF units back. (Keys passing the
        # other way are removed first, then put.)
        self._set_units({**learned, **vrf_units})
        yield SwitchState()

    def _learned_all(self) -> dict[Unit, list[Encoded]]:
        return {("evpn", vni): self._learned_items(vni) for vni in self.local}

    def _vni_units(self) -> dict[Unit, list[Encoded]]:
        """Each hosted VNI's flooding unit, from its local copies (sorted
        and encoded here, kept for the changes after)."""
        space = self.d.alloc.vm_space(self.name)
        servers = self.d.fabric.servers
        self.ordered = {
            vni: flooding.OrderedCopies(
                self.enc, ((servers[vm.server].port, space[n]) for n, vm in members.items())
            )
            for vni, members in self.local.items()
        }
        return {("vni", vni): self._vni_items(vni) for vni in self.local}

    def snapshot_steps(self, vms_per_step: int = STEP_VMS) -> Generator[SwitchState, None, None]:
        """``snapshot`` a part at a time, for a ToR not built yet (the first
        pass after a start or a bulk reload): each part holds what one build
        step produced, so a supervisor writes it while the next step
        compiles; together the parts are the whole state. Each step must run
        under the lock that guards the desired state (see ``steps_under``);
        between steps, changes to this ToR's view are only counted, and if
        any came, the parts stop there and the build is finished from the
        current view, what differs from the parts so far recorded as
        changes for the next change pass. A
        ToR already built yields its whole snapshot."""
        if self.built:
            yield self.snapshot()
            return
        # From nothing, so that every entity is in some part.
        self._state, self.units, self.vm_units, self.dirty = SwitchState(), {}, {}, {}
        epoch = self.epoch
        self._building = True
        finished = False
        try:
            state = self._state
            for part in self._rebuild_steps(vms_per_step, fresh=True):
                # What the step recorded as changes, as it is now
                for key in self.dirty:
                    held = state.bucket(key).get(key)
                    if held is not None:
                        part.bucket(key)[key] = held
                self.dirty = {}
                yield part
                if self.epoch != epoch:
                    break  # the view changed: the rest comes as changes
            finished = True
        finally:
            self._building = False
            if not finished:  # abandoned half-way: build again when next asked
                self.built = False
        if self.epoch != epoch:
            self.rebuild()

    # --- one VM changed in this ToR's view ------------------------------------------
    def apply(self, name: str, old: Vm | None, new: Vm | None) -> None:
        self.epoch += 1
        self._vrf_ips = {}
        if old == new or not self.built or self._building:
            return  # (an unbuilt ToR reads the whole view when built)
        fabric, enc = self.d.fabric, self.enc
        old_tor = self._tor_of(old) if old else None
        new_tor = self._tor_of(new) if new else None
        old_local, new_local = old_tor == self.name, new_tor == self.name
        vnis = sorted({vm.vni for vm in (old, new) if vm is not None})
        vm_vrfs = routing.vrfs_of(fabric, vnis)  # (the VRFs the VM is or was routed in)
        if (
            not old_local
            and not new_local
            and self.local.keys().isdisjoint(vnis)
            and self.vrfs.isdisjoint(vm_vrfs)
            and name not in self.vm_units
        ):
            # Nothing of the VM's is or was here (neither its VNI nor its
            # VRF): another ToR's change alone. (With 16 ToRs, building its
            # empty units on each one cost 40 % of a change.)
            return
        present_before = {x: x in self.local for x in vnis}

        # (allocated by DesiredState; a VM that leaves this ToR keeps its
        # index until this is done, so its copy is found by it)
        space = self.d.alloc.vm[self.name]
        if old is not None and old_local:
            members = self.local[old.vni]
            del members[name]
            self.ordered[old.vni].remove((fabric.servers[old.server].port, space[name]))
            if not members:
                del self.local[old.vni]
                del self.ordered[old.vni]
        if new is not None and new_local:
            self.local.setdefault(new.vni, {})[name] = new
            port = fabric.servers[new.server].port
            if new.vni not in self.ordered:
                self.ordered[new.vni] = flooding.OrderedCopies(enc)
            self.ordered[new.vni].add((port, space[name]))

        # The VRFs held here follow the routed VNIs hosted here; a VRF that
        # comes or goes brings or takes the host routes of all its VMs. Only
        # a VNI that came or went can change them: looked at again only then
        # (a walk of every VNI here, on every change, cost a sixth of the
        # controller's churn with 100 VNIs).
        vrfs_before = self.vrfs
        if any(present_before[x] != (x in self.local) for x in vnis):
            self.vrfs = routing.vrfs_of(fabric, self.local)
        remote_changed = False
        flood_changed: set[int] = set()
        for x in vnis:
            before, now = present_before[x], x in self.local
            if before and not now:  # the VNI left this ToR: so do its remote VMs
                del self.remote[x]
                self._set_unit(("vni", x), [])
                self._set_unit(("evpn", x), [])
                for vm in self.d.members(self.name, x):
                    if vm.name != name:  # (host routes stay while the VRF is held)
                        self._set_unit(("vm", vm.name), self._vm_items(vm))
                remote_changed = True
            elif now and not before:  # the VNI arrived: its remote VMs come too
                counts: Counter[str] = Counter()
                for vm in self.d.members(self.name, x):
                    tor = self._tor_of(vm)
                    if tor != self.name:
                        counts[tor] += 1
                        if vm.name != name:
                            self._set_unit(("vm", vm.name), self._vm_items(vm))
                self.remote[x] = counts
                remote_changed = True
                flood_changed.add(x)
            elif now:
                counts = self.remote[x]
                if old is not None and old.vni == x and old_tor is not None and not old_local:
                    counts[old_tor] -= 1
                    if counts[old_tor] == 0:
                        del counts[old_tor]
                        remote_changed = True
                        flood_changed.add(x)
                if new is not None and new.vni == x and new_tor is not None and not new_local:
                    if counts[new_tor] == 0:
                        remote_changed = True
                        flood_changed.add(x)
                    counts[new_tor] += 1

        def copy(vm: Vm | None, local: bool) -> tuple[int, int] | None:
            return (vm.vni, fabric.servers[vm.server].port) if vm and local else None

        if copy(old, old_local) != copy(new, new_local):
            flood_changed.update(vm.vni for vm in (old, new) if vm is not None)

        for vrf in sorted(vrfs_before ^ self.vrfs):
            self._set_units(self._vrf_units(vrf))
            for vm in self._vrf_members(vrf):
                if vm.name != name:
                    self._set_unit(("vm", vm.name), self._vm_items(vm))
        # A static route follows the VM that owns its next hop, and a learned
        # host route gives way to (or takes back) the IP of a VM of ours:
        # rebuilt only when the VM had or has a next hop's or a learned host's
        # IP (the rebuild walks the VRF's VMs).
        ips = {ip for vm in (old, new) if vm is not None for ip in vm.ips}
        vrf_units: dict[Unit, list[Encoded]] = {}
        for vrf in sorted(vm_vrfs & vrfs_before & self.vrfs):
            hosts = self.d.learned.hosts.get(vrf, {})
            if any(route.next_hop in ips for route in fabric.vrfs[vrf].routes):
                vrf_units[("vrf", vrf)] = self._vrf_items(vrf)
            shadowed = [ip for ip in ips if ip in hosts]
            if shadowed:
                vrf_units.update(self._host_units(vrf, shadowed))

        # The VM's entries, the learned MACs of its VNI(s) and the learned
        # routes of its VRF that it shadows (or stops shadowing) change together.
        self._set_units(
            {("vm", name): self._vm_items(new), **self._learned_units(vnis), **vrf_units}
        )
        self._stale_vnis.update(x for x in flood_changed if x in self.local)
        if remote_changed:  # (also when a VNI with external flood VTEPs came or went)
            self._set_unit(("replicas",), self._replica_items())
