"""BGP EVPN joined to one controller.

Two directions, both through one worker thread so that neither the speaker's
event thread nor a committing API call waits on the other:

- our side: after every commit the controller calls ``local_changed()``; the
  worker hands the service every VM's MAC and IPs behind its ToR's VTEP, and
  the VNIs each ToR hosts (what we advertise: type 2 and type 3 routes).
- their side: every change of the service's view (a peer's route accepted or
  withdrawn, a session down, a MAC won or lost) marks the learned facts
  stale; the worker reads the view (the winners of the RFC 7432 mobility
  rules, see ``table``) and commits it to the controller as ``Learned``: the
  remote MACs and flood VTEPs every ToR hosting the VNI must hold.

A learned MAC that one of our VMs has in the same VNI only reaches the view
when the VM lost the mobility contest (a remote VTEP advertised it with a
higher sequence number: the VM moved away; an equal number is a conflict,
refused by the table). Its traffic then goes to that VTEP from every ToR (the
compiler gives the MAC entry to the learned fact); the VM's binding stays
until the inventory follows, and the link logs it once.

At start the link waits, before the switches are reconciled, until the peers'
sessions are up and their routes have stopped arriving (at most
``initial_wait`` seconds): a restarted controller then compiles exactly what
the switches already hold, and writes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from ..allocation import SpaceFull
from ..compiler.learned import Learned, LearnedMac
from .service import EvpnService
from .speaker import ESTABLISHED
from .table import LocalMac, ViewChange

if TYPE_CHECKING:
    from ..controller import Controller

log = logging.getLogger(__name__)

# Seconds without a route change, once every session is up, that end the
# initial wait. A peer sends its table shortly after the OPEN, not at once
# (FRR coalesces its first updates for about a second).
QUIET = 3.0


class EvpnLink:
    def __init__(self, controller: Controller, **speaker_options: Any) -> None:
        config = controller.fabric.evpn
        if config is None:
            raise ValueError("the fabric file has no evpn: section")
        self._controller = controller
        own_vteps = [tor.vtep_ip for tor in controller.fabric.tors.values()]
        self.service = EvpnService(config, own_vteps, **speaker_options)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._sync_lock = threading.Lock()  # one sync at a time (worker, start, settle)
        self._local_stale = True
        self._learned_stale = True
        self._last_change = time.monotonic()
        self._shadowed: set[tuple[int, str, str]] = set()  # (VNI, MAC, VTEP) logged
        self._worker: threading.Thread | None = None
        self.service.view.on_change(self._view_changed)

    # ---- lifecycle ------------------------------------------------------------

    def start(self, initial_wait: float | None = None) -> None:
        """Start gobgpd, advertise our VMs, and wait (at most ``initial_wait``
        seconds, default twice the hold time and QUIET) for the peers' routes."""
        self.service.start()
        self.sync()
        hold_time = max(self.service.config.hold_time, 3)
        wait = 2.0 * hold_time + QUIET if initial_wait is None else initial_wait
        self._await_peers(wait)
        self.sync()
        self._stopping.clear()
        self._worker = threading.Thread(target=self._run, name="evpn-link", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=10)
            self._worker = None
        self.service.stop()

    def _await_peers(self, timeout: float) -> None:
        """Until every peer's session is up and no route changed for QUIET
        seconds since (a peer sends its routes right after the OPEN)."""
        deadline = time.monotonic() + timeout
        expected = {p.address for p in self.service.config.peers}
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

    def local_changed(self) -> None:
        """The controller committed a change: re-advertise from its VMs."""
        self._local_stale = True
        self._wake.set()

    def _view_changed(self, change: ViewChange) -> None:
        self._last_change = time.monotonic()
        if (
            change.remote_added
            or change.remote_removed
            or change.flood_added
            or change.flood_removed
        ):
            self._learned_stale = True
            self._wake.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self.sync()
            except Exception:  # the link must outlive one bad round
                log.exception("EVPN: syncing with the controller failed")

    def sync(self) -> None:
        """Do now whatever is pending, in the caller's thread."""
        with self._sync_lock:
            while self._local_stale or self._learned_stale:
                if self._local_stale:
                    self._local_stale = False
                    self._advertise()
                if self._learned_stale:
                    self._learned_stale = False
                    self._commit_learned()

    # ---- the two directions ---------------------------------------------------

    def _advertise(self) -> None:
        controller = self._controller
        with controller._lock:
            tors = controller.fabric.tors
            macs = []
            vnis_by_vtep: dict[str, set[int]] = {tor.vtep_ip: set() for tor in tors.values()}
            for vm in controller.vms.values():
                vtep = tors[controller.tor_of(vm)].vtep_ip
                macs.append(LocalMac(vm.vni, vm.mac, vtep, frozenset(vm.ips)))
                vnis_by_vtep[vtep].add(vm.vni)
        self.service.set_local(
            macs, vnis_by_vtep
        )  # (the table's change comes back as a view change)

    def learned(self) -> Learned:
        """The service's view as the compiler takes it."""
        view = self.service.view
        macs = [LearnedMac(m.vni, m.mac, m.vtep, tuple(sorted(m.ips))) for m in view.remote_macs()]
        return Learned.of(macs, view.flood_map())

    def _commit_learned(self) -> None:
        learned = self.learned()
        controller = self._controller
        with controller._lock:
            ours = {(vm.vni, vm.mac): vm.name for vm in controller.vms.values()}
        for vni, macs in learned.macs.items():
            for m in macs.values():
                name = ours.get((vni, m.mac))
                if name is not None and (vni, m.mac, m.vtep) not in self._shadowed:
                    self._shadowed.add((vni, m.mac, m.vtep))
                    log.warning(
                        "EVPN: VTEP %s holds %s in VNI %d, VM %s's MAC, with a higher sequence "
                        "number (it moved away?): its traffic goes there; %s stays bound "
                        "until the inventory follows",
                        m.vtep,
                        m.mac,
                        vni,
                        name,
                        name,
                    )
        try:
            controller.commit_learned(learned)
        except SpaceFull as exc:
            log.error("EVPN: learned routes not installed, no index left: %s", exc)
