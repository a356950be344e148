"""``p4vtep controller run`` with one EVPN-with-replicas mechanism taken out
or swapped, for the mutation checks and the measured comparison of
tests/test_evpn_replicas.py (run as a replica process in place of
``python -m p4vtep.cli``):

    python replica_mutant.py MODE controller run ...

MODE:

- ``no-hold``: a new leader lets its supervisors write before its EVPN
  source commits what it holds (they reconcile without the learned facts,
  then the source commits them): the takeover rewrites learned entries.
- ``leader-only``: only the leader speaks BGP (its source is started when it
  wins, with the hold, and stopped when it loses; followers have no
  sessions): the peers lose our routes for the failover.
- ``leader-only-gr``: the same, with BGP graceful restart (RFC 4724)
  announced on every session (restart time GR_RESTART_TIME): peers that
  help keep the dead leader's routes as stale while the next one comes up,
  the alternative design.
"""

from __future__ import annotations

import sys
from typing import Any

from p4vtep import cli
from p4vtep.evpn.speaker import GoBgpSpeaker
from p4vtep.ha.replica import Replica
from p4vtep.sources.evpn import EvpnSource

GR_RESTART_TIME = 120  # seconds a helper keeps our routes after the session drops


def no_hold() -> None:
    def take_over(self: Replica, term: int) -> bool:
        self.controller.sync_allocations()
        self.gate.open(term)
        self._wake_supervisors()
        self.controller.wait_converged(30)  # without the learned facts
        return self._lead_shared()

    Replica._take_over = take_over  # type: ignore[method-assign]


def leader_only() -> None:
    start, lead, follow, stop = (
        EvpnSource.start,
        EvpnSource.lead,
        EvpnSource.follow,
        EvpnSource.stop,
    )

    def following_start(self: EvpnSource, initial_wait: float | None = None) -> None:
        pass  # no speaker while following

    def leading_lead(self: EvpnSource) -> None:
        if self._worker is None:
            self.service.advertiser.announced.clear()  # (a new gobgpd holds nothing)
            start(self)  # gobgpd, sessions, the peers' routes (bounded wait): the hold
        lead(self)

    def following_follow(self: EvpnSource) -> None:
        follow(self)
        if self._worker is not None:
            stop(self)

    def stopping(self: EvpnSource) -> None:
        if self._worker is not None:
            stop(self)

    EvpnSource.start = following_start  # type: ignore[method-assign]
    EvpnSource.lead = leading_lead  # type: ignore[method-assign]
    EvpnSource.follow = following_follow  # type: ignore[method-assign]
    EvpnSource.stop = stopping  # type: ignore[method-assign]


def graceful_restart() -> None:
    add_peer = GoBgpSpeaker._add_peer

    def with_graceful_restart(self: GoBgpSpeaker, *args: Any) -> None:
        stub = self._stub

        class Stub:
            def __getattr__(self, name: str) -> Any:
                return getattr(stub, name)

            def AddPeer(self, request: Any) -> Any:  # (GoBGP's name)
                request.peer.graceful_restart.enabled = True
                request.peer.graceful_restart.restart_time = GR_RESTART_TIME
                for afi_safi in request.peer.afi_safis:
                    afi_safi.mp_graceful_restart.config.enabled = True
                return stub.AddPeer(request)

        self._stub = Stub()
        try:
            add_peer(self, *args)
        finally:
            self._stub = stub

    GoBgpSpeaker._add_peer = with_graceful_restart  # type: ignore[method-assign,assignment]


MODES = {
    "no-hold": [no_hold],
    "leader-only": [leader_only],
    "leader-only-gr": [leader_only, graceful_restart],
}

if __name__ == "__main__":
    for mutate in MODES[sys.argv[1]]:
        mutate()
    sys.exit(cli.main(sys.argv[2:]))
