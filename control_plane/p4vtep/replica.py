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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from .controller import Controller
from .dataplane.artifacts import Pipeline
from .model import Fabric
from .sources import Source, SourceError
from .state.etcd_connection import EtcdSettings
from .state.etcd_store import EtcdStateStore
from .state.leadership import EtcdLeadership
from .state.protocol import StateError, Subscription

log = logging.getLogger(__name__)

# Makes one source for this replica's controller, once per term it leads.
SourceFactory = Callable[[Controller], Source]


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
    ) -> None:
        """``sources``: the inputs run while this replica leads."""
        self.replica_id = replica_id
        self.source_factories = tuple(sources)
        self.sources: list[Source] = []  # running now (this replica leads)
        self.store = EtcdStateStore(settings, replica_id)
        self._lost = threading.Event()
        self._stop = threading.Event()
        self.leadership = EtcdLeadership(
            settings, replica_id, api_address, ttl=ttl, margin=margin, on_lost=self._on_lost
        )
        self.controller = Controller(
            fabric,
            pipeline,
            self.store,
            resync_seconds=resync_seconds,
            leadership=self.leadership,
        )
        self.terms: list[int] = []  # every term this replica led
        self._subscription: Subscription | None = None
        self._thread = threading.Thread(
            target=self._campaign_loop, daemon=True, name=f"campaign-{replica_id}"
        )

    @property
    def leading(self) -> bool:
        return self.leadership.term is not None

    def start(self) -> None:
        # Own commits come back too: one reported unavailable may land later.
        self._subscription = self.store.watch(self.controller.apply_committed, include_own=True)
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
            try:
                self.controller.sync_allocations()
            except StateError as exc:  # the next change commits them, or the next leader
                log.warning("%s: index rows not committed: %s", self.replica_id, exc)
            self._wake_supervisors()  # they connect with this term's election id
            self._start_sources()
            self._lost.wait()
            self._stop_sources()

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
