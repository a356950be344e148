"""The controller: desired state in, every ToR reconciled to it.

Changes (from the inventory file, libvirt or the API) are validated against
the whole resulting state and refused whole if anything is wrong; accepted
ones are stored, then every supervisor is told to reconcile.

The store is any StateStore: SQLite for a single controller (the default), or
etcd shared by replicas. With a Leadership (replicas), only the leader commits
(fenced by its term) and its supervisors write; every replica follows the
commits of the others through apply_committed().

Inputs run beside it (``sources/``: the inventory file, libvirt, BGP EVPN)
and use only its public surface: they commit through ``replace_source``,
``attach``... and ``commit_learned``, follow its commits on ``bus`` and read
a consistent copy of the desired state from ``desired_view``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from . import events, tls
from .compiler import Change, DesiredState, Encoder, Key, Learned, SwitchState, compile_tor
from .compiler.desired import steps_under
from .cpu.frames import Emit
from .cpu.responder import Responder
from .cpu.stream import packet_out, punted
from .dataplane.artifacts import Pipeline, pipeline_for
from .dataplane.entries import PipelineEntries
from .model.allocation import EXTERNAL_VTEP, Allocations, SpaceFull, external_vtep_key
from .model.fabric import AllowedPair, Fabric, Vm
from .model.problems import subject
from .model.tenant_routes import RouteDelta, route_deltas
from .model.validation import (
    Problem,
    ValidationError,
    VmIndex,
    check_fabric,
    validate,
    validate_change,
    vrf_of,
)
from .runtime.protos import p4runtime_pb2
from .state.batching import Batcher, Request
from .state.protocol import Change as StateChange
from .state.protocol import Leadership, NotLeader, StateEvent, StateStore
from .state.rows import allocation_rows, allocations_from_rows, set_row
from .state.sqlite_store import Store
from .switch.supervisor import SwitchSupervisor, WriteGate

log = logging.getLogger(__name__)

# A bulk change (e.g. an inventory reload) this large rebuilds every ToR
# instead of applying VM by VM.
BULK_CHANGE = 512
# The periodic router adverts go out in rounds this far apart at the least:
# thousands of VFs' first adverts fall due within 16 s of a start, and waking
# for each one (a GIL hand-over each) slowed everything else in the process.
RA_TICK_SECONDS = 0.1


def _same_learned(old: Learned, new: Learned) -> bool:
    """Whether ``new`` holds the same facts as ``old``. A value the learned
    table made from ``old`` says what it changed (``Learned.since``): one
    that names a change is taken as different without comparing the two
    (a walk of every learned route; the change named may be a superset)."""
    if new is old:
        return True
    delta = new.since(old)
    if delta.macs or delta.hosts or delta.prefixes or delta.flood or delta.taken:
        return False
    return new == old


class NotFound(KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class DesiredView:
    """The desired state at one version, read in one go (``desired_view``):
    what an input that reads rather than writes needs (EVPN advertises from
    it). ``vms`` is a read-only copy: later commits do not change it."""

    version: int
    fabric: Fabric
    vms: Mapping[str, Vm]

    def tor_of(self, vm: Vm) -> str:
        return self.fabric.servers[vm.server].tor if vm.server in self.fabric.servers else ""


@dataclass(frozen=True)
class VmPlacement:
    """A VM's ToR and its index there (counters, meters); ``index`` is None
    until the VM has one."""

    name: str
    tor: str
    index: int | None


@dataclass(frozen=True)
class VniPlacement:
    """A VNI's fabric-wide index (None: not allocated) and the ToRs hosting
    a VM of it."""

    vni: int
    index: int | None
    tors: tuple[str, ...]


@dataclass
class _Applied:
    """A change applied in memory and not stored yet: what it was, each VM
    it touched as it was before, the routes it changed, the pin it took."""

    event: events.DesiredStateChanged
    before: dict[str, Vm | None]
    routes: list[RouteDelta]
    pin: int | None = None  # a migration's pin on the old ToR (released if not stored)


@dataclass(frozen=True)
class _Work:
    """A change handed in to be run in a batch: ``apply`` (under the lock)
    validates and applies it, raising if refused; it returns what to store,
    or True (changed, nothing to store: a migration letting go) or False
    (nothing to do). ``stores``: it needs the store (the leadership)."""

    apply: Callable[[], _Applied | bool]
    stores: bool = True


@dataclass
class _Move:
    """What a migration's first step found, for its second."""

    old: Vm | None = None
    old_tor: str = ""
    pin: int | None = None


class Controller:
    def __init__(
        self,
        fabric: Fabric,
        pipeline: Pipeline,
        store: StateStore | None = None,
        election_id: int = 1,
        resync_seconds: float = 30.0,
        leadership: Leadership | None = None,
        gate: WriteGate | None = None,
    ) -> None:
        """``gate``: when the supervisors may write (default: the
        ``leadership``; a replica opens its own only once it holds what the
        switches must get, ``replica.Replica``)."""
        problems = check_fabric(fabric)
        if problems:
            raise ValidationError(problems)
        self.fabric = fabric
        self.pipeline = pipeline
        self.entries = PipelineEntries(pipeline.p4info)
        # Per ToR: its target's pipeline, and entries built with that P4Info's ids.
        self.pipelines = {n: pipeline_for(t.target, pipeline) for n, t in fabric.tors.items()}
        self.tor_entries = {
            n: self.entries if p is pipeline else PipelineEntries(p.p4info)
            for n, p in self.pipelines.items()
        }
        for name, entries in self.tor_entries.items():
            if not entries.port_security:
                level = logging.WARNING
                held = "has no port security (an older build): its VMs are held to their MAC"
            elif not entries.ipv6_guard:
                level = logging.INFO
                held = "guards IPv4 only (Tofino 1's profile): it drops a guarded VM's IPv6"
            else:
                continue
            target = fabric.tors[name].target
            log.log(level, "tor %s: its %s pipeline %s (docs/security.md)", name, target, held)
        # One encoder per P4Info (ids differ per target).
        self.encoder = Encoder(self.entries)
        by_p4info = {id(self.entries): self.encoder}
        self.encoders: dict[str, Encoder] = {}
        for name, entries in self.tor_entries.items():
            if id(entries) not in by_p4info:
                by_p4info[id(entries)] = Encoder(entries)
            self.encoders[name] = by_p4info[id(entries)]
        self.store: StateStore = store or Store()
        self.leadership = leadership
        self.bus = events.EventBus()
        self._lock = threading.RLock()
        loaded = self.store.load()
        self.revision = loaded.revision  # the store revision this state is at
        self.alloc: Allocations = allocations_from_rows(loaded.allocations)
        # The VMs, every index and every ToR's entities, kept up to date per
        # change; indices are allocated here, when a change is committed.
        self.desired = DesiredState(fabric, self.encoder, self.alloc, self.encoders)
        self.desired.load(loaded.vms.values())
        if leadership is None:
            self.revision = self.store.commit(self._pending_change([], []), self.revision)
        # (A replica commits new index rows when it leads: sync_allocations.)
        self.version = 1
        self._checked: dict[Vm, list[Problem]] = {}  # per-VM validation results
        # Built by the first change, not here: the switches need their
        # entries before anyone needs the validation index.
        self._vrf_of = vrf_of(fabric)  # (the index's VRF of each routed VNI)
        self._index = VmIndex(self._vrf_of)
        self._index_stale = True
        # attach, detach and migrate: handed in from any thread, run in batches.
        self._batcher: Batcher[_Work, int] = Batcher(self._run_batch)
        credentials = (
            None if fabric.p4runtime_tls is None else tls.client_credentials(fabric.p4runtime_tls)
        )
        self.supervisors = {
            name: SwitchSupervisor(
                tor,
                self.pipelines[name],
                election_id,
                self,
                self.bus,
                resync_seconds=resync_seconds,
                credentials=credentials,
                gate=gate if gate is not None else leadership,
            )
            for name, tor in fabric.tors.items()
        }
        # The CPU path (cpu/, issue 39): what a switch punts is answered
        # here, through the supervisor of that ToR and only while it is
        # primary with its write gate open (a backup or a follower replica
        # never answers); the router advertisements are sent on a timer.
        self.responder = Responder(
            self.desired_view, self._send_emit, self._may_send, ready=self._holds_entries
        )
        for sup in self.supervisors.values():
            sup.packet_in_handler = self._punted
        self._cpu_stop = threading.Event()
        self._cpu_timer = threading.Thread(target=self._advertise, daemon=True, name="cpu-path")

    @property
    def vms(self) -> dict[str, Vm]:
        """The desired VMs (read-only: change them through the methods)."""
        return self.desired.vms

    def desired_view(self) -> DesiredView:
        """The desired state as of now, consistent (read under the lock), as
        a copy the caller may keep and read at leisure."""
        with self._lock:
            return DesiredView(self.version, self.fabric, MappingProxyType(dict(self.vms)))

    def placements(
        self, vms: Iterable[str] | None = None, vnis: Iterable[int] | None = None
    ) -> tuple[list[VmPlacement], list[VniPlacement]]:
        """Where ``vms`` (None: every VM, by name) and ``vnis`` (None: every
        VNI with a VM, in order) are on the switches, read under the lock.
        NotFound for a VM name the controller does not know."""
        with self._lock:
            names = sorted(self.vms) if vms is None else list(vms)
            for name in names:
                if name not in self.vms:
                    raise NotFound(f"no VM named {name!r}")
            vm_rows = []
            for name in names:
                tor = self.fabric.servers[self.vms[name].server].tor
                vm_rows.append(VmPlacement(name, tor, self.alloc.vm_space(tor).peek(name)))
            hosts: dict[int, set[str]] = {}  # VNI -> ToRs with a VM in it
            for vm in self.vms.values():
                hosts.setdefault(vm.vni, set()).add(self.fabric.servers[vm.server].tor)
            vni_rows = [
                VniPlacement(vni, self.alloc.vni.peek(vni), tuple(sorted(hosts.get(vni, ()))))
                for vni in (sorted(hosts) if vnis is None else vnis)
            ]
        return vm_rows, vni_rows

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        """Start the supervisors. Inputs with facts the switches should get
        at once (EVPN's learned routes) are started before this."""
        for sup in self.supervisors.values():
            sup.start()
        self._cpu_timer.start()

    def stop(self) -> None:
        self._cpu_stop.set()
        if self._cpu_timer.is_alive():
            self._cpu_timer.join(timeout=5)
        for sup in self.supervisors.values():
            sup.stop()

    # --- the CPU path (cpu/responder.py) ------------------------------------------
    def _punted(self, tor: str, packet: p4runtime_pb2.PacketIn) -> None:
        """A supervisor's packet-in (its own thread)."""
        try:
            frame = punted(self.pipelines[tor].p4info, tor, packet)
        except ValueError as exc:
            log.warning("%s: a packet-in without its metadata: %s", tor, exc)
            return
        self.responder.handle(frame)

    def _send_emit(self, emit: Emit) -> None:
        payload, metadata = packet_out(self.pipelines[emit.tor].p4info, emit)
        self.supervisors[emit.tor].send_packet_out(payload, metadata)

    def _holds_entries(self, tor: str) -> bool:
        """The ToR's supervisor wrote the desired state once since this
        controller started (its VFs' router adverts start then)."""
        return self.supervisors[tor].status.reconciles > 0

    def _may_send(self, tor: str) -> bool:
        sup = self.supervisors[tor]
        return sup.status.primary and (sup.gate is None or sup.gate.may_write())

    def _advertise(self) -> None:
        """The periodic router advertisements: those due, every
        ``RA_TICK_SECONDS`` at most and at least once a second (a new VF's
        first one, after a change)."""
        while not self._cpu_stop.is_set():
            try:
                self.responder.tick()
            except Exception:  # (a bad advert must not end the timer)
                log.exception("router advertisements failed")
            due = self.responder.next_due()
            wait = 1.0 if due is None else due - self.responder.clock()
            self._cpu_stop.wait(min(1.0, max(RA_TICK_SECONDS, wait)))

    def wait_converged(self, timeout: float = 60.0) -> bool:
        version = self.version
        return all(sup.wait_applied(version, timeout) for sup in self.supervisors.values())

    # --- what the switches must hold (called by supervisors) --------------------
    def snapshot(self, tor: str) -> tuple[int, SwitchState]:
        with self._lock:
            return self.version, self.desired.tors[tor].snapshot()

    def snapshot_steps(self, tor: str) -> Iterator[tuple[int, SwitchState]]:
        return steps_under(self._lock, self.desired.tors[tor], lambda: self.version)

    def changes(self, tor: str) -> tuple[int, list[Change], int]:
        with self._lock:
            compiler = self.desired.tors[tor]
            return self.version, compiler.take_changes(), len(compiler.state.entities)

    def owner(self, tor: str, key: Key) -> str | None:
        with self._lock:
            return self.desired.tors[tor].owner(key)

    def compile_for(self, tor: str) -> tuple[int, SwitchState]:
        """(version, a whole-state compile of what ``tor`` must hold): the
        reference, for read-back checks; independent of the incremental path."""
        with self._lock:
            view = self.desired.view(tor)
            return self.version, compile_tor(
                self.fabric,
                view.values(),
                tor,
                self.alloc,
                self.encoders[tor],
                self.desired.learned,
            )

    # --- changes ------------------------------------------------------------------
    def _reserve_pinned(self, index: VmIndex, names: Iterable[str] | None = None) -> None:
        """A ToR pinned to a VM's old place still uses its (server, VLAN),
        MAC and IPs: nobody else may take them until the pin is released.
        ``names``: only the pins of these VMs (those whose entries in the
        index a change just removed: the index files a key under the VM's
        name, and refuses another VM a key that a name holds)."""
        pinned = self.desired.pinned_vms(names)
        for vm in pinned:
            index.add(vm)
        for vm in pinned:
            current = self.vms.get(vm.name)
            if current is not None:
                index.add(current)

    def _rebuild_index(self) -> None:
        """The validation index of the current state, from scratch (after a
        change failed past validation, which updates the index in place)."""
        self._index = VmIndex.of(self.vms.values(), self._vrf_of)
        self._reserve_pinned(self._index)

    def _pending_change(self, upserts: list[Vm], removals: list[str]) -> StateChange:
        """The VMs given and the index rows allocated or freed since the last call."""
        alloc_set, alloc_removed = {}, []
        for space, key, index in self.alloc.take_changes():
            if index is None:
                alloc_removed.append((space, key))
            else:
                alloc_set[(space, key)] = index
        return StateChange(tuple(upserts), tuple(removals), alloc_set, tuple(alloc_removed))

    def _fence(self) -> int | None:
        """The leadership term to fence commits with; NotLeader, naming the
        leader, on a replica that does not lead."""
        if self.leadership is None:
            return None
        term = self.leadership.term
        if term is not None:
            return term
        me = self.leadership.replica_id
        leader = self.leadership.leader()
        if leader is None or leader.replica_id == me:  # none, or our own lapsed term
            raise NotLeader(
                f"{me} is not the leader and no leader is elected right now "
                "(election in progress or etcd unreachable); retry shortly"
            )
        raise NotLeader(
            f"{me} is not the leader: send writes to the leader {leader.replica_id} "
            f"at {leader.address}"
        )

    def sync_allocations(self) -> None:
        """Commit the index rows this replica holds and the store lacks (e.g.
        the ToR indices a replica gives itself on an empty store)."""
        with self._lock:
            term = self._fence()
            self.alloc.take_changes()
            stored = self.store.snapshot().allocations
            mine = allocation_rows(self.alloc)
            change = StateChange(
                alloc_set={k: i for k, i in mine.items() if stored.get(k) != i},
                alloc_removed=tuple(k for k in stored if k not in mine),
            )
            if not change.empty:
                self.revision = self.store.commit(change, self.revision, fence_term=term)

    def apply_committed(self, event: StateEvent) -> None:
        """Follow a change another replica committed (or one of ours that
        landed after its commit was reported unavailable): take its index
        rows as they are, then update the VMs and every ToR's entities."""
        with self._lock:
            if event.revision <= self.revision:
                return  # ours, or already loaded
            for row, index in event.alloc_set.items():
                set_row(self.alloc, row, index)  # before the VMs: they get these indices
            upserts, removals = list(event.upserts.values()), list(event.removals)
            before = {name: self.vms.get(name) for name in [v.name for v in upserts] + removals}
            if len(upserts) + len(removals) > BULK_CHANGE:
                whole = {n: vm for n, vm in self.vms.items() if n not in event.removals}
                whole.update(event.upserts)
                self.desired.load(whole.values())
            else:
                self.desired.change(upserts, removals)
            for row in event.alloc_removed:
                set_row(self.alloc, row, None)
            self.alloc.take_changes()  # committed already, by the other replica
            self.revision = event.revision
            self._index_stale = True  # rebuilt at the next local change
            self.version += 1
            after = {name: self.vms.get(name) for name in before}
            route_changes = route_deltas(self.fabric, before, after)
        self.bus.publish(events.DesiredStateChanged(vm="*", change=f"replicated {event.origin}"))
        self._publish_routes(route_changes)
        self.responder.changed()
        for sup in self.supervisors.values():
            sup.notify()

    def _prepare(self) -> None:
        """Before validating changes: the index current, the cache bounded."""
        if self._index_stale:
            self._rebuild_index()
            self._index_stale = False
        if len(self._checked) > 2 * len(self.vms) + 1000:
            self._checked.clear()

    def _apply(
        self,
        change: events.DesiredStateChanged,
        upserts: list[Vm],
        removals: list[str],
        whole: dict[str, Vm] | None = None,
    ) -> _Applied:
        """Validate the change (only the changed VMs, or the ``whole`` new
        state), allocate its indices and apply it in memory, not stored yet
        (``_store``). Refused: raises, changing nothing. Under the lock."""
        touched = [v.name for v in upserts] + removals
        pinned = self.desired.pinned_vms(None if whole is not None else touched)
        if whole is not None:
            validate(self.fabric, whole.values(), self._checked)
            if pinned:
                reserved = VmIndex.of(pinned, self._vrf_of)
                problems = [p for vm in whole.values() for p in reserved.conflicts(vm)]
                if problems:
                    raise ValidationError(problems)
            index = VmIndex.of(whole.values(), self._vrf_of)
        else:
            index = validate_change(
                self.fabric, self.vms, self._index, upserts, removals, self._checked
            )
        try:
            self.desired.check_room(upserts)
        except SpaceFull as exc:
            self._rebuild_index()
            raise ValidationError([Problem("change", "indices", str(exc))]) from None
        before = {name: self.vms.get(name) for name in touched}
        if whole is not None and len(upserts) + len(removals) > BULK_CHANGE:
            self.desired.load(whole.values())
        else:
            self.desired.change(upserts, removals)
        if pinned:
            gone = set(removals)
            for vm in pinned:
                if vm.name in gone:
                    index.remove(vm)  # a detached VM keeps no pin, nor its old place
            # (a new index holds no pin yet; one kept holds those not touched)
            self._reserve_pinned(index, None if whole is not None else touched)
        self._index = index
        after = {name: self.vms.get(name) for name in before}
        return _Applied(change, before, route_deltas(self.fabric, before, after))

    def _store(self, applied: list[_Applied], term: int | None) -> None:
        """Store what ``applied`` (in order) changed, in one commit: each VM
        they touched as it is now, and the index rows. Not stored: every one
        is undone in memory too (pins they took released) and the error
        raised. Under the lock."""
        first: dict[str, Vm | None] = {}  # each VM touched, as it was before them all
        for one in applied:
            for name, vm in one.before.items():
                first.setdefault(name, vm)
        vms = self.vms
        upserts = [vms[name] for name in first if name in vms]
        removals = [name for name, vm in first.items() if vm is not None and name not in vms]
        commit = self._pending_change(upserts, removals)
        try:
            self.revision = self.store.commit(commit, self.revision, fence_term=term)
        except BaseException:
            # Not stored: undo in memory too. Freed indices go back to
            # their stored values first, so the VMs put back get them.
            stored = self.store.snapshot().allocations
            for row in commit.alloc_removed:
                if row in stored:
                    set_row(self.alloc, row, stored[row])
            self.desired.change(
                [vm for vm in first.values() if vm is not None],
                [name for name, vm in first.items() if vm is None and name in vms],
            )
            for one in reversed(applied):
                if one.pin is not None:
                    self.desired.unpin(one.pin)
            self.alloc.take_changes()
            self._rebuild_index()
            raise

    def _published(self, applied: list[_Applied]) -> None:
        """Tell what ``applied`` changed (in order) and wake the supervisors."""
        for one in applied:
            self.bus.publish(one.event)
            self._publish_routes(one.routes)
        self.responder.changed()
        for sup in self.supervisors.values():
            sup.notify()

    def _commit(
        self,
        change: events.DesiredStateChanged,
        upserts: list[Vm],
        removals: list[str],
        whole: dict[str, Vm] | None = None,
    ) -> int:
        """Validate the change (only the changed VMs, or the ``whole`` new
        state), allocate its indices, store it and wake the supervisors: on
        its own, in the calling thread (attach, detach and migrate go in
        batches: ``_run_batch``)."""
        with self._lock:
            term = self._fence()
            self._prepare()
            applied = self._apply(change, upserts, removals, whole)
            self._store([applied], term)
            self.version += 1
            version = self.version
        self._published([applied])
        return version

    def _run_batch(self, batch: list[Request[_Work, int]]) -> None:
        """Run the changes that callers handed in together (``batching``),
        in the order they came: each is validated and applied against the
        state the ones before it left, and refused or failed alone (its
        caller gets its error; the others go on). Those applied are stored
        in one commit and given one new version; a store that fails fails
        every one it held, undone. Then one wake-up of the supervisors."""
        applied: list[_Applied] = []
        owners: list[tuple[Request[_Work, int], _Applied | None]] = []
        changed = False
        with self._lock:
            try:
                term, fenced = self._fence(), None
            except Exception as exc:  # noqa: BLE001 -- NotLeader...: each change that stores gets it
                term, fenced = None, exc
            self._prepare()
            for request in batch:
                work = request.work
                if work.stores and fenced is not None:
                    request.fail(fenced)
                    continue
                try:
                    done = work.apply()
                except Exception as exc:  # noqa: BLE001 -- refused: its caller gets it, alone
                    request.fail(exc)
                    continue
                if isinstance(done, _Applied):
                    applied.append(done)
                    owners.append((request, done))
                else:
                    owners.append((request, None))
                changed = changed or done is not False
            # Forget the refusal: its traceback holds this frame, and this
            # frame holding it back is a cycle that keeps the refused
            # callers' frames, and their gRPC calls, until the collector runs.
            fenced = None
            if applied:
                try:
                    self._store(applied, term)
                except Exception as exc:  # noqa: BLE001 -- each change it held gets it
                    for request, one in owners:
                        if one is not None:
                            request.fail(exc)
                    owners = [(r, one) for r, one in owners if one is None]
                    applied = []
            if changed:
                self.version += 1
            for request, _ in owners:
                request.done(self.version)
        if changed:
            self._published(applied)

    def _publish_routes(self, deltas: list[RouteDelta]) -> None:
        for delta in deltas:
            self.bus.publish(
                events.RoutesChanged(
                    vrf=delta.vrf, added=delta.added, removed=delta.removed, moved=delta.moved
                )
            )

    def commit_learned(self, learned: Learned) -> int:
        """Replace what is known of external VTEPs (EVPN routes, static VTEPs):
        their replica ids allocated and stored, every ToR recompiled and told.
        SpaceFull (no index left) changes nothing.

        Replica ids of external VTEPs that neither the old nor the new facts
        name are freed with it: they were left by VTEPs that went while no
        one committed (a restart, a failover: a new leader starts from no
        facts, ``forget_learned``)."""
        with self._lock:
            old = self.desired.learned
            if _same_learned(old, learned):
                return self.version
            term = self._fence()
            named = old.flood_vteps() | learned.flood_vteps()
            space = self.alloc.tor
            orphans = {
                key: index
                for key, index in space.items()
                if isinstance(key, str)
                and key.startswith(EXTERNAL_VTEP)
                and key[len(EXTERNAL_VTEP) :] not in named
            }
            for key in orphans:
                space.release(key)
            try:
                self.desired.set_learned(learned)
            except BaseException:
                for key, index in orphans.items():
                    space.restore(key, index)
                self.alloc.take_changes()
                raise
            try:
                self.revision = self.store.commit(
                    self._pending_change([], []), self.revision, fence_term=term
                )
            except BaseException:
                self.desired.set_learned(old)  # not stored: undone in memory too (as _commit)
                for key, index in orphans.items():
                    space.restore(key, index)
                self.alloc.take_changes()
                raise
            self.version += 1
            version = self.version
        self.responder.changed()
        for sup in self.supervisors.values():
            sup.notify()
        return version

    def forget_learned(self) -> None:
        """Drop the learned facts from memory, storing nothing: a replica
        that stops leading (it no longer commits them; when it leads again
        it commits what it holds then, from no facts, so its ToR entities
        are compiled with the replica ids the store has by then). The
        replica ids stay as stored: only a leader's commit frees them."""
        with self._lock:
            old = self.desired.learned
            if old == Learned():
                return
            space = self.alloc.tor
            kept = {}
            for ip in old.flood_vteps():
                index = space.peek(external_vtep_key(ip))
                if index is not None:
                    kept[external_vtep_key(ip)] = index
            self.desired.set_learned(Learned())
            for key, index in kept.items():
                space.restore(key, index)
                space.changes.pop(key, None)  # (nothing to store: as it was)
            self.version += 1
        self.responder.changed()
        for sup in self.supervisors.values():
            sup.notify()

    def attach(self, vm: Vm) -> int:
        def apply() -> _Applied | bool:
            if vm.name in self.vms and self.vms[vm.name] == vm:
                return False
            return self._apply(events.DesiredStateChanged(vm=vm.name, change="attached"), [vm], [])

        return self._batcher.submit(_Work(apply))

    def detach(self, name: str) -> int:
        def apply() -> _Applied | bool:
            if name not in self.vms:
                raise NotFound(f"no VM named {name!r}")
            return self._apply(events.DesiredStateChanged(vm=name, change="detached"), [], [name])

        return self._batcher.submit(_Work(apply))

    def replace_source(self, source: str, vms: list[Vm]) -> int:
        """Make the VMs from one source (e.g. the inventory file) exactly ``vms``."""
        with self._lock:
            new = {k: v for k, v in self.vms.items() if v.source != source}
            for vm in vms:
                if vm.name in new:
                    raise ValidationError(
                        [
                            Problem(
                                f"vm {vm.name}",
                                "name",
                                f"already declared by {new[vm.name].source}",
                            )
                        ]
                    )
                new[vm.name] = replace(vm, source=source)
            if new == self.vms:
                return self.version
            upserts = [vm for name, vm in new.items() if self.vms.get(name) != vm]
            removals = [name for name in self.vms if name not in new]
            return self._commit(
                events.DesiredStateChanged(vm="*", change=f"{source} reloaded"),
                upserts,
                removals,
                whole=new,
            )

    def get(self, name: str) -> Vm:
        with self._lock:
            if name not in self.vms:
                raise NotFound(f"no VM named {name!r}")
            return self.vms[name]

    def tor_of(self, vm: Vm) -> str:
        return self.fabric.servers[vm.server].tor if vm.server in self.fabric.servers else ""

    def set_qos(self, name: str, qos: str | None) -> int:
        with self._lock:
            vm = self.get(name)
            changed = replace(vm, qos=qos or None)
            return self._commit(
                events.DesiredStateChanged(vm=name, change=events.QOS), [changed], []
            )

    def set_port_security(
        self,
        name: str,
        port_security: bool | None = None,
        dhcp_server: bool | None = None,
        clear_pairs: bool = False,
        remove_pairs: Iterable[AllowedPair] = (),
        add_pairs: Iterable[AllowedPair] = (),
    ) -> int:
        """Change a VM's port security (docs/security.md): the flags given
        (None: as they are), then its pairs: all dropped with
        ``clear_pairs``, then ``remove_pairs`` (each must be one of them),
        then ``add_pairs`` (one it has already stays once). Validated like
        an attach; only the VM's own entries change on its ToR."""
        with self._lock:
            vm = self.get(name)
            pairs = [] if clear_pairs else list(vm.allowed_pairs)
            missing = [p for p in dict.fromkeys(remove_pairs) if p not in pairs]
            if missing:
                raise ValidationError(
                    [
                        Problem(
                            subject("vm", name),
                            "allowed_pairs",
                            f"{p} is not one of its pairs "
                            f"({', '.join(map(str, pairs)) or 'it has none'})",
                        )
                        for p in missing
                    ]
                )
            removed = set(remove_pairs)
            pairs = [p for p in pairs if p not in removed]
            pairs += [p for p in dict.fromkeys(add_pairs) if p not in pairs]
            changed = replace(
                vm,
                port_security=vm.port_security if port_security is None else port_security,
                dhcp_server=vm.dhcp_server if dhcp_server is None else dhcp_server,
                allowed_pairs=tuple(pairs),
            )
            if changed == vm:
                return self.version
            return self._commit(
                events.DesiredStateChanged(vm=name, change=events.PORT_SECURITY), [changed], []
            )

    def wait_version(self, version: int, timeout: float) -> bool:
        return all(sup.wait_applied(version, timeout) for sup in self.supervisors.values())

    def migrate(
        self,
        name: str,
        server: str,
        vlan: int | None = None,
        timeout: float = 30.0,
        wait: bool = True,
    ) -> int:
        """Make-before-break: every ToR but the old one gets the new location
        first; only when they hold it does the old ToR let go. The old ToR is
        pinned to this VM's old place by this migration alone, so others
        running at the same time keep their own pins.

        With ``wait`` (the default) this returns the version in which the old
        ToR lets go, once the others confirmed (or ``timeout`` passed).
        Without, it returns the version of the move itself at once, and a
        thread of its own waits for the confirmations and lets the old ToR
        go (the pin, and the old place's reservation, hold until then).
        Both steps go in batches with other changes (``_run_batch``)."""
        move = _Move()

        def apply() -> _Applied:
            if name not in self.vms:
                raise NotFound(f"no VM named {name!r}")
            old = self.vms[name]
            moved = replace(old, server=server, vlan=old.vlan if vlan is None else vlan)
            if moved.server not in self.fabric.servers:
                raise ValidationError(
                    [Problem(f"vm {name}", "server", f"unknown server {server!r}")]
                )
            old_tor = self.fabric.servers[old.server].tor
            new_tor = self.fabric.servers[moved.server].tor
            pin = self.desired.pin(old_tor, name) if old_tor != new_tor else None
            try:
                applied = self._apply(
                    events.DesiredStateChanged(vm=name, change="migrated"), [moved], []
                )
            except Exception:
                if pin is not None:
                    self.desired.unpin(pin)
                    self._free_place(name, old)  # (an index rebuilt meanwhile held it)
                raise
            applied.pin = pin
            move.old, move.old_tor, move.pin = old, old_tor, pin
            return applied

        version = self._batcher.submit(_Work(apply))
        old, old_tor, pin = move.old, move.old_tor, move.pin
        if pin is None or old is None:
            return version
        if not wait:
            threading.Thread(
                target=self._let_go,
                args=(name, old, old_tor, pin, version, timeout),
                name=f"migrate-{name}",
                daemon=True,
            ).start()
            return version
        return self._let_go(name, old, old_tor, pin, version, timeout)

    def _let_go(
        self, name: str, old: Vm, old_tor: str, pin: int, version: int, timeout: float
    ) -> int:
        """The break of a migration's make-before-break: once every ToR but
        ``old_tor`` holds ``version`` (or after ``timeout``), release the pin
        on the VM's old place (in a batch with other changes; nothing to
        store). Returns the version that releases it."""
        others = [s for n, s in self.supervisors.items() if n != old_tor]
        ok = all(s.wait_applied(version, timeout) for s in others)
        if not ok:
            log.warning("migration of %s: not every ToR confirmed within %ss", name, timeout)

        def apply() -> bool:
            self.desired.unpin(pin)
            self._free_place(name, old)
            return True  # the old ToR lets go; others confirm

        return self._batcher.submit(_Work(apply, stores=False))

    def _free_place(self, name: str, old: Vm) -> None:
        """A pin on VM ``name`` at ``old`` is gone: its place is free in the
        index (unless another pin holds it). Under the lock."""
        index = self._index
        index.remove(old)
        current = self.vms.get(name)
        if current is not None:
            index.add(current)
        self._reserve_pinned(index, [name])  # its other pins (overlapping moves)
