"""EVPN for one controller: the speaker, the intake, the learned table and
the advertiser, wired together. It is given our VMs' MACs and the VNIs on
each ToR (``set_local``); ``view`` has the remote facts to compile. Knows
nothing of the controller: ``sources/evpn.py`` joins the two."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .advertiser import Advertiser
from .config import EvpnConfig
from .intake import RouteIntake
from .options import DEFAULTS, EvpnOptions
from .routes import EvpnRoute
from .speaker import GoBgpSpeaker, Received
from .table import Learn, LearnedTable, Unlearn
from .view import EvpnView, LocalMac, ViewChange

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionChange:
    """A BGP session came up or went down; on down, ``withdrawn`` routes of
    that peer left the learned table."""

    peer: str
    asn: int
    up: bool
    withdrawn: int = 0


class EvpnService:
    def __init__(
        self, config: EvpnConfig, own_vteps: Iterable[str], options: EvpnOptions = DEFAULTS
    ) -> None:
        if options.router_id is not None:
            config = dataclasses.replace(config, router_id=options.router_id)
        self.config = config
        self.table = LearnedTable()
        self.intake = RouteIntake.build(config, own_vteps)
        self.speaker = GoBgpSpeaker(
            config,
            on_route=self._route,
            on_withdraw=self._withdraw,
            on_peer_state=self._peer_state,
            on_malformed=self._malformed,
            options=options,
            on_paths=self._paths,
        )
        self.advertiser = Advertiser(config, self.speaker)
        self._vnis_by_vtep: dict[str, frozenset[int]] = {}
        self._sync_lock = threading.Lock()
        self._session_listeners: list[Callable[[SessionChange], None]] = []
        self._peer_asn = {p.address: p.asn for p in config.peers}
        self.table.on_change(self._changed)
        self.table.set_static(
            [(vni, s.vtep_ip) for s in config.static_vteps for vni in s.vnis],
            [(m.vni, m.mac, s.vtep_ip, m.ips) for s in config.static_vteps for m in s.macs],
        )

    @property
    def view(self) -> EvpnView:
        return self.table.view()

    def start(self) -> None:
        self.speaker.start()

    def stop(self) -> None:
        self.speaker.stop()

    def restart(self) -> None:
        """A new gobgpd (after the old one died, or was stopped): sessions are
        re-established, peers re-teach us, and everything we originate is
        announced again (the new gobgpd holds nothing)."""
        self.speaker.stop()
        self.speaker.start()
        with self._sync_lock:
            self.advertiser.announced.clear()
        self._readvertise()

    def set_local(
        self, macs: Iterable[LocalMac], vnis_by_vtep: Mapping[str, Iterable[int]]
    ) -> None:
        """Our VMs' MACs and the VNIs each ToR hosts (its VTEP IP -> VNIs)."""
        self._vnis_by_vtep = {vtep: frozenset(vnis) for vtep, vnis in vnis_by_vtep.items()}
        self.table.set_local(macs)
        self._readvertise()

    def _readvertise(self) -> None:
        with self._sync_lock:
            self.advertiser.sync(self.view.advertisements(), self._vnis_by_vtep)

    def _changed(self, change: ViewChange) -> None:
        if change.local_changed:
            self._readvertise()

    # ---- speaker callbacks ----------------------------------------------------

    def _route(self, source: str, route: EvpnRoute) -> None:
        admitted = self.intake.admit(source, route)
        if admitted is not None:
            self.table.learn(source, route, admitted.vrf, admitted.bridged, admitted.neighbour)
        else:
            # A refused re-advertisement replaces an accepted one: drop the old.
            self.table.unlearn(source, route.nlri_key())

    def _paths(self, received: list[Received]) -> None:
        """One gobgpd event's paths: admitted (or refused) one by one, into
        the table as one update (``LearnedTable.update``: one change, one
        notification, so one commit can take a whole burst)."""
        ops: list[Learn | Unlearn] = []
        for r in received:
            if r.route is not None:
                admitted = self.intake.admit(r.source, r.route)
                if admitted is not None:
                    ops.append(
                        Learn(r.source, r.route, admitted.vrf, admitted.bridged, admitted.neighbour)
                    )
                else:
                    # A refused re-advertisement replaces an accepted one: drop the old.
                    ops.append(Unlearn(r.source, r.route.nlri_key()))
            elif r.withdrawn is not None:
                self.intake.forget(r.source, r.withdrawn)
                ops.append(Unlearn(r.source, r.withdrawn))
            elif r.malformed is not None:
                self._malformed(r.source, r.malformed)
        self.table.update(ops)

    def _withdraw(self, source: str, key: tuple[object, ...]) -> None:
        self.intake.forget(source, key)
        self.table.unlearn(source, key)

    def _peer_state(self, source: str, up: bool) -> None:
        withdrawn = 0
        if not up:
            withdrawn = self.view.learned_counts()[source]
            self.intake.forget_source(source)
            self.table.drop_source(source)
        change = SessionChange(source, self._peer_asn.get(source, 0), up, withdrawn)
        for listener in list(self._session_listeners):
            try:
                listener(change)
            except Exception:  # a listener's bug must not stop the speaker's loop
                log.exception("EVPN: session listener failed")

    def on_session(self, listener: Callable[[SessionChange], None]) -> None:
        """``listener`` is called (on the speaker's thread) after each session
        goes up or down, once the table has dropped a lost peer's routes."""
        self._session_listeners.append(listener)

    def _malformed(self, source: str, detail: str) -> None:
        self.intake.refuse(source, "malformed", detail)
