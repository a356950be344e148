"""One controller replica among several that share their desired state in etcd.

Every replica loads the state, follows every commit through the store's watch
(Controller.apply_committed) and campaigns for leadership. The leader commits
the API's changes (fenced by its term) and its supervisors write to the
switches with election id ELECTION_ID_BASE + term; a follower refuses writes
with the leader's address and keeps no P4Runtime session. When the leader
dies, a follower wins, its supervisors connect with a higher election id,
read every switch back and write only what differs (pending changes), so
nothing already on a switch is written again.

The inputs that declare VMs (the inventory file, libvirt) run on the leader
alone, started each time this replica wins and stopped when it loses: a
follower's commits would be refused, and the new leader reads each input
whole when it starts, so whatever changed in it during the failover is
applied then (an input that did not change commits nothing).

Shared inputs (BGP EVPN) run on every replica: each keeps its own BGP
sessions, advertises our VMs from the desired state it follows and learns
the peers' routes, and only the leader commits what it learned. A replica
campaigns once its shared inputs have started (EVPN: every peer's routes in,
or its bounded wait over), and a new leader commits what they hold before its
supervisors may write (its gate opens only then): the switches' learned
entries are compiled exactly as the old leader left them when nothing
changed, so a takeover writes nothing for them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from ..controller import Controller
from ..dataplane.artifacts import Pipeline
from ..model.fabric import Fabric
from ..sources import SharedSource, Source, SourceError
from ..state.etcd_connection import EtcdSettings
from ..state.etcd_store import EtcdStateStore
from ..state.leadership import EtcdLeadership
from ..state.protocol import Leadership, StateError, Subscription

log = logging.getLogger(__name__)

# Makes one source for this replica's controller, once per term it leads.
SourceFactory = Callable[[Controller], Source]
# Makes this replica's shared source (run whether it leads or not), once.
SharedSourceFactory = Callable[[Controller], SharedSource]


class HeldGate:
    """The supervisors' write gate: the leadership's, but for a term only
    once the replica has opened it (after its shared inputs committed what
    they hold). Closed again when the term ends."""

    def __init__(self, leadership: Leadership) -> None:
        self._leadership = leadership
        self._term: int | None = None

    def open(self, term: int) -> None:
        self._term = term

    def close(self) -> None:
        self._term = None

    def may_write(self) -> bool:
        term = self._term
        return term is not None and self._leadership.term == term and self._leadership.may_write()

    def election_id(self) -> int:
        return self._leadership.election_id()


class Replica:
    def __init__(
        self,
        fabric: Fabric,
        pipeline: Pipeline,
        settings: EtcdSettings,
        replica_id: str,
        api_address: str,
        *,
        ttl: int = 5,
        margin: float = 1.0,
        resync_seconds: float = 30.0,
        sources: Sequence[SourceFactory] = (),
        shared: Sequence[SharedSourceFactory] = (),
    ) -> None:
        """``sources``: the inputs run while this replica leads; ``shared``:
        those it runs all along (``shared_sources``, built here)."""
        self.replica_id = replica_id
        self.source_factories = tuple(sources)
        self.sources: list[Source] = []  # running now (this replica leads)
        self.store = EtcdStateStore(settings, replica_id)
        self._lost = threading.Event()
        self._stop = threading.Event()
        self.leadership = EtcdLeadership(
            settings, replica_id, api_address, ttl=ttl, margin=margin, on_lost=self._on_lost
        )
        self.gate = HeldGate(self.leadership)
        self.controller = Controller(
            fabric,
            pipeline,
            self.store,
            resync_seconds=resync_seconds,
            leadership=self.leadership,
            gate=self.gate,
        )
        self.shared_sources = [make(self.controller) for make in shared]
        self.terms: list[int] = []  # every term this replica led
        self._subscription: Subscription | None = None
        self._thread = threading.Thread(
            target=self._campaign_loop, daemon=True, name=f"campaign-{replica_id}"
        )

    @property
    def leading(self) -> bool:
        return self.leadership.term is not None

    def start(self) -> None:
        """Follow the store, start the shared sources (blocks until each
        holds what its input has to say, a bounded wait), then campaign."""
        # Own commits come back too: one reported unavailable may land later.
        self._subscription = self.store.watch(self.controller.apply_committed, include_own=True)
        for source in self.shared_sources:
            source.start()
        self.controller.start()
        self._thread.start()

    def stop(self) -> None:
        """Stop the sources and writing first, then resign so a follower
        leads at once."""
        self._stop.set()
        self._lost.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)  # (it stops the sources)
        self.controller.stop()
        for source in self.shared_sources:
            source.stop()
        if self._subscription is not None:
            self._subscription.cancel()
        self.leadership.close()
        self.store.close()

    def _on_lost(self, reason: str) -> None:
        log.warning("%s: no longer leader (%s); switch writes stopped", self.replica_id, reason)
        self._lost.set()
        self._wake_supervisors()

    def _wake_supervisors(self) -> None:
        for supervisor in self.controller.supervisors.values():
            supervisor.notify()

    def _campaign_loop(self) -> None:
        while not self._stop.is_set():
            self._lost.clear()
            try:
                term = self.leadership.campaign(timeout=1.0)
            except TimeoutError:
                continue
            except StateError as exc:
                if self._stop.is_set():
                    return
                log.warning("%s: campaign failed: %s", self.replica_id, exc)
                self._stop.wait(0.5)
                continue
            if not self.terms or self.terms[-1] != term:
                self.terms.append(term)
                log.info(
                    "%s leads (term %d, election id %d)",
                    self.replica_id,
                    term,
                    self.leadership.election_id(),
                )
            if self._take_over(term):
                self._start_sources()
            self._lost.wait()
            self._stop_sources()
            self.gate.close()
            for source in self.shared_sources:
                source.follow()

    def _take_over(self, term: int) -> bool:
        """Commit what this replica holds that the store lacks, then let the
        supervisors write (False: the term ended first)."""
        try:
            self.controller.sync_allocations()
        except StateError as exc:  # the next change commits them, or the next leader
            log.warning("%s: index rows not committed: %s", self.replica_id, exc)
        if not self._lead_shared():
            return False
        self.gate.open(term)
        self._wake_supervisors()  # they connect with this term's election id
        return True

    def _lead_shared(self) -> bool:
        """Each shared source commits what it holds (the hold: before any
        switch write), tried again until it lands or the term ends."""
        pending = list(self.shared_sources)
        while pending and not self._lost.is_set():
            try:
                pending[0].lead()
            except StateError as exc:
                log.warning("%s: a shared source could not commit: %s", self.replica_id, exc)
                self._lost.wait(0.5)
                continue
            except Exception:  # a bug must not keep the leader from writing at all
                log.exception("%s: a shared source failed to lead; going on", self.replica_id)
            pending.pop(0)
        return not pending

    def _start_sources(self) -> None:
        for make in self.source_factories:
            source = make(self.controller)
            try:
                source.start()
            except SourceError as exc:  # (its VMs stay as stored; the next term tries again)
                log.error("%s: a source did not start: %s", self.replica_id, exc)
                continue
            self.sources.append(source)

    def _stop_sources(self) -> None:
        while self.sources:
            self.sources.pop().stop()
