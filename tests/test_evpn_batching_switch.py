"""Routes in batches on two BMv2 ToRs (issue 40), at a small scale: bursts
of routes handed to the EVPN source as gobgpd's events bring them (8 to an
event), with withdrawals of routes learned earlier in the burst, a MAC that
moves to another VTEP with a higher sequence number, and a peer's session
lost in the middle; the switches then hold exactly what the controller
compiles, and the controller exactly what the same routes one by one give."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.config import EvpnConfig, VniRouting
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.evpn.speaker import Received, wait_for
from p4vtep.evpn.table import Learn, LearnedTable, Unlearn
from p4vtep.sources.evpn import EvpnSource
from switch_fabric import A1, A2, bmv2_fabric, needs_switch, read_back_matches, start_controller

pytestmark = [
    *needs_switch(),
    pytest.mark.skipif(bool(gobgp_api.MISSING), reason=f"{gobgp_api.MISSING}"),
]

VNI = 5000
PEER_A, PEER_B = "192.0.2.10", "192.0.2.20"
VTEP_A, VTEP_B = "10.0.9.10", "10.0.9.20"


def route(vtep: str, i: int, seq: int = 0) -> MacIpRoute:
    return MacIpRoute(
        f"{vtep}:{VNI}",
        f"02:70:00:00:{(i >> 8) & 255:02x}:{i & 255:02x}",
        VNI,
        vtep,
        f"10.70.{i >> 8}.{i & 255}",
        (f"65000:{VNI}",),
        mobility_seq=seq,
    )


def test_bursts_with_withdrawals_moves_and_a_lost_session_end_exact(tmp_path: Path) -> None:
    with bmv2_fabric(tmp_path / "logs") as sf:
        sf.fabric.evpn = EvpnConfig(
            asn=65000,
            router_id="10.0.0.254",
            peers=(),
            vnis=(VniRouting(VNI, None, (f"65000:{VNI}",), (f"65000:{VNI}",)),),
            listen_port=-1,
        ).for_fabric(sf.fabric)
        controller = start_controller(sf, tmp_path / "state.db", [A1, A2])
        source = EvpnSource(controller)
        source.start(initial_wait=0)
        reference = LearnedTable()  # the same routes, one by one
        try:
            events: list[list[Received]] = []
            ops: list[Learn | Unlearn | str] = []
            for i in range(1, 301):  # peer A's burst, with withdrawals in it
                events.append([Received(PEER_A, route=route(VTEP_A, i))])
                if i % 10 == 0:  # (the route learned 5 before, withdrawn)
                    gone = route(VTEP_A, i - 5)
                    events.append([Received(PEER_A, withdrawn=gone.nlri_key())])
            for i in range(301, 401):  # peer B's
                events.append([Received(PEER_B, route=route(VTEP_B, i))])
            for i in range(1, 21):  # 20 of A's MACs move to B's VTEP
                events.append([Received(PEER_B, route=route(VTEP_B, i, seq=1))])
            batched = [r for event in events for r in event]
            # 8 to an event, as gobgpd gives a packed UPDATE's paths
            chunks = [batched[k : k + 8] for k in range(0, len(batched), 8)]
            half = len(chunks) // 2
            for chunk in chunks[:half]:
                source.service._paths(chunk)
            source.service._peer_state(PEER_A, False)  # A's session lost mid-burst
            for chunk in chunks[half:]:
                source.service._paths(chunk)
            for r in batched[: half * 8]:
                ops.append(
                    Learn(r.source, r.route)
                    if r.route is not None
                    else Unlearn(r.source, r.withdrawn)  # type: ignore[arg-type]
                )
            ops.append(PEER_A)
            for r in batched[half * 8 :]:
                ops.append(
                    Learn(r.source, r.route)
                    if r.route is not None
                    else Unlearn(r.source, r.withdrawn)  # type: ignore[arg-type]
                )
            for op in ops:
                if isinstance(op, str):
                    reference.drop_source(op)
                else:
                    reference.update([op])
            want = reference.view().learned()
            assert wait_for(lambda: controller.desired.learned == want, 30, 0.05)

            def applied() -> bool:
                # (learned is set inside the commit that then takes a new
                # version: wait_converged may still see the one before it)
                if not controller.wait_converged(60):
                    return False
                try:
                    read_back_matches(sf, controller)
                except AssertionError:
                    return False
                return True

            assert wait_for(applied, 30, 0.2)
            read_back_matches(sf, controller)
            macs = controller.desired.learned.macs[VNI]
            assert {m.vtep for m in macs.values()} <= {VTEP_A, VTEP_B}
            assert len(macs) == len(want.macs[VNI])
        finally:
            source.stop()
            controller.stop()
