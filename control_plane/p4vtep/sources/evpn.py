"""BGP EVPN as an input beside the controller, like the inventory file and
libvirt: built and started by whoever wires the controller (the CLI), never
by the controller itself.

Two directions, both through one worker thread so that neither the speaker's
event thread nor a committing API call waits on the other:

- our side: the worker follows the controller's commits on its event bus
  (``DesiredStateChanged``); it reads the desired state
  (``Controller.desired_view``) and hands the service every VM's MAC and IPs
  behind its ToR's VTEP, and the VNIs each ToR hosts (what we advertise:
  type 2 and type 3 routes).
- their side: every change of the service's view (a peer's route accepted or
  withdrawn, a session down, a MAC won or lost) marks the learned facts
  stale; the worker reads the view (the winners of the RFC 7432 mobility
  rules, see ``evpn.table``) and commits it through
  ``Controller.commit_learned`` as ``Learned``: the remote MACs and flood
  VTEPs every ToR hosting the VNI must hold, and the host and prefix routes
  every ToR holding their VRF must hold (symmetric IRB).

A learned MAC that one of our VMs has in the same VNI only reaches the view
when the VM lost the mobility contest (a remote VTEP advertised it with a
higher sequence number: the VM moved away; an equal number is a conflict,
refused by the table). Its traffic then goes to that VTEP from every ToR (the
compiler gives the MAC entry to the learned fact); the VM's binding stays
until the inventory follows, and the source logs it once.

Routes come in bursts (a peer's table after its session comes up, a
withdrawal of many): the speaker hands each of gobgpd's events to the table
as one update, and the worker commits their changes at most once per
``commit_window`` (``EvpnOptions``): what arrives within a window of the
worker's last commit waits for the window's end and goes in one commit, so
a burst of thousands of routes is a few dozen commits (each a store commit,
a compile of what changed and a write per ToR), not one per route. A change
that finds no such commit in the window (a lone route, the first of a
burst) is committed at once.

Started before the controller's supervisors, it waits until the peers'
sessions are up and their routes have stopped arriving (at most
``initial_wait`` seconds): a restarted controller then compiles exactly what
the switches already hold, and writes nothing.

With controller replicas (the controller has a leadership) every replica runs
its own source: its own sessions, our routes advertised from the desired
state it follows (the same on every replica, next hops the ToRs' VTEPs), the
peers' routes learned into its own table. Only the leader commits them; a
follower holds them in the service's view, and commits them when its replica
leads (``lead``, called before the new leader's supervisors may write), so a
takeover compiles the learned entries the switches already hold.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Iterable

from ..compiler.learned import Learned
from ..controller import Controller
from ..events import DesiredStateChanged, Event, refused
from ..evpn.config import EvpnConfig
from ..evpn.options import DEFAULTS, EvpnOptions
from ..evpn.service import EvpnService
from ..evpn.speaker import ESTABLISHED
from ..evpn.status import publish_sessions
from ..evpn.view import LocalMac, ViewChange
from ..model.allocation import SpaceFull
from ..state.protocol import StateError

log = logging.getLogger(__name__)

# Seconds without a route change, once every session is up, that end the
# initial wait. A peer sends its table shortly after the OPEN, not at once
# (FRR coalesces its first updates for about a second).
QUIET = 3.0

# Put on the worker's bus subscription (it is ours): the view changed, or stop.
_VIEW_CHANGED = Event()
_STOP = Event()

# Seconds before a commit the store refused (etcd without quorum, the lease
# ran out meanwhile) is tried again, while this replica leads.
RETRY = 1.0


class EvpnSource:
    """The EVPN service joined to one controller through its public surface.
    ``service`` is what the API and the metrics read (``serve(...,
    evpn=source.service)``)."""

    def __init__(
        self,
        controller: Controller,
        options: EvpnOptions = DEFAULTS,
        config: EvpnConfig | None = None,
    ) -> None:
        """``config``: the fabric's ``evpn:`` section unless given."""
        config = config if config is not None else controller.fabric.evpn
        if config is None:
            raise ValueError("the fabric file has no evpn: section")
        self._controller = controller
        own_vteps = [tor.vtep_ip for tor in controller.fabric.tors.values()]
        self.service = EvpnService(config, own_vteps, options)
        publish_sessions(self.service, controller.bus)  # EvpnSessionUp/Down events
        self._subscription: queue.Queue[Event] | None = None
        self._sync_lock = threading.Lock()  # one sync at a time (worker, start, tests)
        self._local_stale = True
        self._learned_stale = True
        self._last_change = time.monotonic()
        self._shadowed: set[tuple[int, str, str]] = set()  # (VNI, MAC, VTEP) logged
        # Our VMs by VNI and MAC (from the desired state, at each _advertise),
        # and the learned value committed last: a commit looks up only the
        # VNIs whose learned MACs changed since (all after our VMs changed).
        self._ours: dict[int, dict[str, str]] = {}
        self._committed: Learned | None = None
        self._window = options.commit_window
        self._last_commit = float("-inf")  # the worker's last commit of learned facts
        self._worker: threading.Thread | None = None
        # Whether learned facts are committed: always for a single
        # controller; for a replica, while it leads (lead() .. follow()).
        self._leading = threading.Event()
        if controller.leadership is None:
            self._leading.set()
        self.service.view.on_change(self._view_changed)

    # ---- lifecycle ------------------------------------------------------------

    def start(self, initial_wait: float | None = None) -> None:
        """Start gobgpd, advertise our VMs, and wait (at most ``initial_wait``
        seconds, default twice the hold time and QUIET) for the peers'
        routes, committing them; then follow both sides."""
        self.service.start()
        # Subscribed before the first read: a commit after it is on the
        # subscription, one before it is in what sync() reads.
        subscription = self._controller.bus.subscribe()
        self._subscription = subscription
        self.sync()
        hold_time = max(self.service.config.hold_time, 3)
        wait = 2.0 * hold_time + QUIET if initial_wait is None else initial_wait
        self._await_peers(wait)
        self.sync()
        self._worker = threading.Thread(
            target=self._run, args=(subscription,), name="evpn-source", daemon=True
        )
        self._worker.start()

    def lead(self) -> None:
        """This source's replica leads: commit the learned facts it holds
        now, in the caller's thread (the replica calls this before its
        supervisors may write, so they compile what the old leader left on
        the switches). StateError if the store refused the commit (the
        replica calls again)."""
        self._leading.set()
        self._learned_stale = True
        self._sync_pending()

    def follow(self) -> None:
        """This source's replica no longer leads: commit nothing, and drop
        the learned facts from the controller's memory (a follower holds
        them in the service's view only; ``Controller.forget_learned``)."""
        self._leading.clear()
        with self._sync_lock:  # (after a commit in flight)
            self._controller.forget_learned()

    def stop(self) -> None:
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            self._controller.bus.unsubscribe(subscription)
            subscription.put(_STOP)  # after every event the bus gave it
        if self._worker is not None:
            self._worker.join(timeout=10)
            self._worker = None
        self.service.stop()

    def _await_peers(self, timeout: float) -> None:
        """Until every peer's session is up and no route changed for QUIET
        seconds since (a peer sends its routes right after the OPEN)."""
        deadline = time.monotonic() + timeout
        expected = {p.address for p in self.service.config.peers}
        if not expected:
            return  # (static VTEPs only: nothing to wait for)
        all_up_at: float | None = None
        while time.monotonic() < deadline:
            if all_up_at is None and expected <= self._established():
                all_up_at = time.monotonic()
            quiet_since = max(all_up_at or 0.0, self._last_change)
            if all_up_at is not None and time.monotonic() - quiet_since >= QUIET:
                return
            time.sleep(0.1)
        down = sorted(expected - self._established())
        if down:
            log.warning("EVPN: starting without routes from %s (no session yet)", ", ".join(down))

    def _established(self) -> set[str]:
        return {p.address for p in self.service.speaker.peers() if p.state == ESTABLISHED}

    # ---- triggers ---------------------------------------------------------------

    def _view_changed(self, change: ViewChange) -> None:
        self._last_change = time.monotonic()
        if change.learned_changed:
            self._learned_stale = True
            subscription = self._subscription
            if subscription is not None:
                # A full queue holds events still to be handled: the worker
                # wakes anyway and sees the flag.
                with contextlib.suppress(queue.Full):
                    subscription.put_nowait(_VIEW_CHANGED)

    def _run(self, subscription: queue.Queue[Event]) -> None:
        retry_at: float | None = None
        while True:
            events: list[Event] = []
            wait = None if retry_at is None else max(0.0, retry_at - time.monotonic())
            with contextlib.suppress(queue.Empty):
                events.append(subscription.get(timeout=wait))
                while True:  # everything already queued: one sync for all of it
                    events.append(subscription.get_nowait())
            if any(e is _STOP for e in events):
                return
            if any(_vms_changed(e) for e in events):
                self._local_stale = True
            elif self._learned_stale and retry_at is None:
                self._linger()
            retry_at = None
            try:
                if self._learned_stale:
                    self._last_commit = time.monotonic()
                self._sync_pending(drain=False)
            except StateError as exc:
                if self._leading.is_set():
                    log.warning("EVPN: learned routes not committed, trying again: %s", exc)
                    self._learned_stale = True
                    retry_at = time.monotonic() + RETRY
            except Exception:  # the source must outlive one bad round
                log.exception("EVPN: syncing with the controller failed")

    def _linger(self) -> None:
        """Routes keep coming (the worker committed less than a window ago):
        wait for the window's end, so one commit takes all that came in it."""
        remaining = self._last_commit + self._window - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)

    def sync(self) -> None:
        """Both directions brought up to date now, in the caller's thread:
        our routes from the desired state as it is, learned facts committed."""
        self._local_stale = True
        self._learned_stale = True
        self._sync_pending()

    def _sync_pending(self, drain: bool = True) -> None:
        """``drain``: until nothing is stale (sync()). The worker passes
        False: what arrives during its commit waits for its window (its next
        round lingers), instead of a commit each as routes keep coming."""
        with self._sync_lock:
            once = True
            while (drain or once) and (self._local_stale or self._learned_stale):
                once = False
                if self._local_stale:
                    self._local_stale = False
                    self._advertise()
                if self._learned_stale:
                    self._learned_stale = False
                    try:
                        self._commit_learned()
                    except StateError:
                        self._learned_stale = True  # (lead() or the worker tries again)
                        raise

    # ---- the two directions ---------------------------------------------------

    def _advertise(self) -> None:
        view = self._controller.desired_view()
        tors = view.fabric.tors
        macs = []
        vnis_by_vtep: dict[str, set[int]] = {tor.vtep_ip: set() for tor in tors.values()}
        ours: dict[int, dict[str, str]] = {}
        for vm in view.vms.values():
            vtep = tors[view.tor_of(vm)].vtep_ip
            macs.append(LocalMac(vm.vni, vm.mac, vtep, frozenset(vm.ips)))
            vnis_by_vtep[vtep].add(vm.vni)
            ours.setdefault(vm.vni, {})[vm.mac] = vm.name
        self._ours = ours
        self._committed = None  # (our VMs changed: look them all up at the next commit)
        # (The table's change comes back as a view change.)
        self.service.set_local(macs, vnis_by_vtep)

    def learned(self) -> Learned:
        """The service's view as the compiler takes it (MACs, flood VTEPs,
        and the VRFs' host and prefix routes)."""
        return self.service.view.learned()

    def _commit_learned(self) -> None:
        if not self._leading.is_set():
            return  # a follower: held in the view until its replica leads
        learned = self.learned()
        # Our VMs whose MAC a learned fact holds (they moved away): looked
        # up in the VNIs whose learned MACs changed since the last commit.
        if self._committed is None:
            vnis: Iterable[int] = self._ours.keys()
        elif learned is self._committed:
            vnis = ()  # (nothing changed since: the same value)
        else:
            vnis = learned.since(self._committed).macs & self._ours.keys()
        for vni in vnis:
            held = learned.macs.get(vni)
            if not held:
                continue
            for mac, name in self._ours[vni].items():
                m = held.get(mac)
                if m is not None and (vni, mac, m.vtep) not in self._shadowed:
                    self._shadowed.add((vni, mac, m.vtep))
                    log.warning(
                        "EVPN: VTEP %s holds %s in VNI %d, VM %s's MAC, with a higher sequence "
                        "number (it moved away?): its traffic goes there; %s stays bound "
                        "until the inventory follows",
                        m.vtep,
                        mac,
                        vni,
                        name,
                        name,
                    )
        self._committed = learned
        try:
            self._controller.commit_learned(learned)
        except SpaceFull as exc:
            log.error("EVPN: learned routes not installed, no index left: %s", exc)


def _vms_changed(event: Event) -> bool:
    """A commit that may have changed the VMs (a refused change did not)."""
    return isinstance(event, DesiredStateChanged) and not event.change.startswith(refused(""))
