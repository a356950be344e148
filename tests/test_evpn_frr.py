"""p4vtep's EVPN speaker against a real peer: FRR as a Linux VTEP (control plane).

One FRR lab for the module (starting FRR and bringing the session up takes
several seconds); each test leaves the lab as it found it, and the peer
failure test runs last because it freezes FRR's bgpd.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from frr_lab import OBSERVER_ASN, VM_MAC, FrrLab, needs_frr
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.evpn.view import LocalMac, RemoteMac

pytestmark = [pytest.mark.evpn, needs_frr()]

VNI = 5000
FOREIGN_VNI = 7000  # FRR serves it, p4vtep does not route it
TOR1, TOR2 = "10.0.0.1", "10.0.0.2"  # our ToRs' VTEPs
OUR_MAC, OUR_IP = "52:54:00:aa:00:01", "192.168.1.10"


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[FrrLab, EvpnService]]:
    with FrrLab(vni=VNI, asn=65000, hold_time=3, foreign_vni=FOREIGN_VNI) as frr:
        config = EvpnConfig(
            asn=65000,
            router_id=frr.ctl_ip,
            peers=(EvpnPeer(frr.frr_ip, 65000), EvpnPeer(frr.observer_ip, OBSERVER_ASN)),
            vnis=(VniRouting(VNI, None, ("65000:5000",), ("65000:5000",)),),
            hold_time=3,
        )
        service = EvpnService(
            config,
            [TOR1, TOR2],
            EvpnOptions(
                command_prefix=("ip", "netns", "exec", frr.ctl_ns), listen_addresses=(frr.ctl_ip,)
            ),
        )
        service.start()
        try:
            up = wait_for(
                lambda: any(p.state == "ESTABLISHED" for p in service.speaker.peers()), 30
            )
            assert up, f"EVPN session to FRR did not come up; logs in {frr.dir}"
            frr.add_vm_mac()
            yield frr, service
        finally:
            service.stop()


def _frr_has(frr: FrrLab, fragment: str, next_hop: str) -> bool:
    return any(
        fragment in path["prefix"]
        and any(nh.get("ip") == next_hop for nh in path.get("nexthops", []))
        for path in frr.evpn_routes()
    )


def _fdb_has(frr: FrrLab, mac: str, dst: str) -> bool:
    return any(e.get("mac") == mac and e.get("dst") == dst for e in frr.fdb())


def test_frr_routes_arrive_in_the_learned_table(lab: tuple[FrrLab, EvpnService]) -> None:
    frr, service = lab
    expected = RemoteMac(VNI, VM_MAC, frr.frr_ip, frozenset(), 0, frr.frr_ip)
    assert wait_for(lambda: expected in service.view.remote_macs(), 15), (
        service.view.remote_macs(),
        dict(service.intake.refused),
    )
    assert wait_for(lambda: service.view.flood_vteps(VNI) == {frr.frr_ip}, 10)
    # FRR also serves a VNI this fabric does not route: its type 3 is refused
    # (counted, logged) and nothing of it is installed.
    assert wait_for(lambda: service.intake.refused["unknown-vni"] >= 1, 10)
    assert set(service.intake.refused) == {"unknown-vni"}
    assert service.view.flood_vteps(FOREIGN_VNI) == frozenset()


def test_frr_withdrawal_removes_the_learned_mac(lab: tuple[FrrLab, EvpnService]) -> None:
    frr, service = lab
    assert wait_for(lambda: service.view.remote_macs(VNI), 15)
    frr.del_vm_mac()
    assert wait_for(lambda: not service.view.remote_macs(VNI), 10), service.view.remote_macs()
    assert service.view.flood_vteps(VNI) == {frr.frr_ip}  # the VNI itself is still there
    frr.add_vm_mac()
    assert wait_for(lambda: service.view.remote_macs(VNI), 10)


def test_our_routes_reach_frr_and_the_linux_fdb_and_withdraw(
    lab: tuple[FrrLab, EvpnService],
) -> None:
    frr, service = lab
    service.set_local([LocalMac(VNI, OUR_MAC, TOR1, frozenset({OUR_IP}))], {TOR1: [VNI]})
    try:
        assert wait_for(lambda: _frr_has(frr, f"[{OUR_MAC}]:[32]:[{OUR_IP}]", TOR1), 10), frr.vtysh(
            "show bgp l2vpn evpn"
        )
        assert _frr_has(frr, f"[2]:[0]:[48]:[{OUR_MAC}]", TOR1)
        assert _frr_has(frr, f"[3]:[0]:[32]:[{TOR1}]", TOR1)
        # zebra programmed the kernel: our MAC behind our VTEP, and our VTEP in
        # the VNI's flood list (the all-zero MAC entry).
        assert wait_for(lambda: _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()
        assert wait_for(lambda: _fdb_has(frr, "00:00:00:00:00:00", TOR1), 10), frr.fdb()
        # Our own routes are not learned back as remote ones.
        assert all(m.vtep != TOR1 for m in service.view.remote_macs())
    finally:
        service.set_local([], {})
    assert wait_for(lambda: not _frr_has(frr, OUR_MAC, TOR1), 10), frr.vtysh("show bgp l2vpn evpn")
    assert not _frr_has(frr, f"[3]:[0]:[32]:[{TOR1}]", TOR1)
    assert wait_for(lambda: not _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()
    assert not _fdb_has(frr, "00:00:00:00:00:00", TOR1)


def test_a_vm_moving_between_our_tors_is_renumbered_in_frr(
    lab: tuple[FrrLab, EvpnService],
) -> None:
    frr, service = lab
    service.set_local([LocalMac(VNI, OUR_MAC, TOR1)], {TOR1: [VNI]})
    try:
        assert wait_for(lambda: _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()
        service.set_local([LocalMac(VNI, OUR_MAC, TOR2)], {TOR1: [VNI], TOR2: [VNI]})
        assert wait_for(lambda: _fdb_has(frr, OUR_MAC, TOR2), 10), frr.fdb()
        mobility = [
            p.get("extendedCommunity", {}).get("string", "")
            for p in frr.evpn_routes()
            if OUR_MAC in p["prefix"] and any(n.get("ip") == TOR2 for n in p.get("nexthops", []))
        ]
        assert mobility
        assert all("MM:1" in s for s in mobility), mobility
        assert wait_for(lambda: not _frr_has(frr, OUR_MAC, TOR1), 10)
    finally:
        service.set_local([], {})
    assert wait_for(lambda: not _fdb_has(frr, OUR_MAC, TOR2), 10), frr.fdb()


def test_a_vm_migrating_from_frr_to_us_and_back_follows_the_sequence_numbers(
    lab: tuple[FrrLab, EvpnService],
) -> None:
    frr, service = lab
    # The VM runs on the Linux host, its MAC learned dynamically by the bridge.
    frr.del_vm_mac()
    frr.vm_speaks()
    assert wait_for(lambda: any(m.mac == VM_MAC for m in service.view.remote_macs()), 15)
    seq_there = next(m.seq for m in service.view.remote_macs() if m.mac == VM_MAC)
    try:
        # To us: the VM appears behind TOR1; we advertise one higher, FRR
        # gives the MAC up (withdraws its route) and points its FDB at TOR1.
        service.set_local([LocalMac(VNI, VM_MAC, TOR1)], {TOR1: [VNI]})
        assert [(a.vtep, a.seq) for a in service.view.advertisements()] == [(TOR1, seq_there + 1)]
        assert wait_for(lambda: _fdb_has(frr, VM_MAC, TOR1), 10), frr.fdb()
        assert wait_for(lambda: not service.view.remote_macs(VNI), 10), service.view.remote_macs()
        ours = [p for p in frr.evpn_routes() if VM_MAC in p["prefix"]]
        assert [p["rd"] for p in ours] == [f"{TOR1}:{VNI}"], ours
        assert f"MM:{seq_there + 1}" in ours[0]["extendedCommunity"]["string"]
        # And back: the VM speaks on the Linux host again. FRR advertises it
        # one higher still; we see the move, stop advertising, learn it.
        frr.vm_speaks()
        back = RemoteMac(VNI, VM_MAC, frr.frr_ip, frozenset(), seq_there + 2, frr.frr_ip)
        assert wait_for(lambda: back in service.view.remote_macs(), 10), (
            service.view.remote_macs(),
            frr.vtysh("show evpn mac vni all"),
        )
        assert service.view.advertisements() == frozenset()
        assert service.view.moved_away() == {(VNI, VM_MAC)}
        assert wait_for(
            lambda: all(
                p["rd"] != f"{TOR1}:{VNI}" for p in frr.evpn_routes() if VM_MAC in p["prefix"]
            ),
            10,
        ), frr.vtysh("show bgp l2vpn evpn")
    finally:
        service.set_local([], {})  # the inventory follows the VM away
        frr.add_vm_mac()
    assert wait_for(lambda: any(m.mac == VM_MAC for m in service.view.remote_macs()), 10)


def test_we_pass_on_only_our_own_routes_never_another_peers(
    lab: tuple[FrrLab, EvpnService],
) -> None:
    """A second peer (eBGP) hears our ToRs' routes, and not FRR's: the
    controller speaks for its ToRs, it is not a transit for other VTEPs."""
    frr, service = lab
    observer = frr.observer(OBSERVER_ASN)
    service.set_local([LocalMac(VNI, OUR_MAC, TOR1, frozenset({OUR_IP}))], {TOR1: [VNI]})
    observer.start()
    try:
        assert wait_for(lambda: service.view.remote_macs(VNI), 15)  # FRR's MAC is known to us
        mine = RemoteMac(VNI, OUR_MAC, TOR1, frozenset({OUR_IP}), 0, frr.ctl_ip)
        assert wait_for(lambda: mine in observer.view.remote_macs(), 30), (
            observer.speaker.peers(),
            observer.view.remote_macs(),
        )
        assert wait_for(lambda: observer.view.flood_vteps(VNI) == {TOR1}, 10)
        time.sleep(1)  # anything else gobgpd would pass on has had time to arrive
        assert observer.view.remote_macs() == {mine}
        assert observer.view.flood_vteps(VNI) == {TOR1}
        assert not observer.intake.refused
    finally:
        observer.stop()
        service.set_local([], {})


def test_a_dead_gobgpd_drops_what_it_learned_and_a_restart_relearns_and_readvertises(
    lab: tuple[FrrLab, EvpnService],
) -> None:
    frr, service = lab
    service.set_local([LocalMac(VNI, OUR_MAC, TOR1, frozenset({OUR_IP}))], {TOR1: [VNI]})
    try:
        assert wait_for(lambda: _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()
        assert wait_for(lambda: service.view.remote_macs(VNI), 15)
        pid = service.speaker.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the speaker process we started, by its pid
        assert wait_for(lambda: not service.view.remote_macs(VNI), 5), service.view.remote_macs()
        assert service.view.flood_vteps(VNI) == frozenset()
        assert not service.speaker.running
        # FRR sees the session drop and forgets our routes.
        assert wait_for(lambda: not _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()

        service.restart()
        assert wait_for(lambda: service.view.remote_macs(VNI), 30), "FRR's routes not re-learned"
        # (type 3 may come in a later UPDATE than type 2)
        assert wait_for(lambda: service.view.flood_vteps(VNI) == {frr.frr_ip}, 10)
        assert wait_for(lambda: _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()
        assert _frr_has(frr, f"[{OUR_MAC}]:[32]:[{OUR_IP}]", TOR1)
        assert _frr_has(frr, f"[3]:[0]:[32]:[{TOR1}]", TOR1)
    finally:
        service.set_local([], {})
    assert wait_for(lambda: not _fdb_has(frr, OUR_MAC, TOR1), 10), frr.fdb()


def test_frr_failure_withdraws_its_routes_after_the_hold_time(
    lab: tuple[FrrLab, EvpnService],
) -> None:
    """Last in the module: bgpd is frozen (its TCP session stays open, so only
    our hold timer can notice)."""
    frr, service = lab
    assert wait_for(lambda: service.view.remote_macs(VNI), 15)
    frr.freeze_bgpd()
    time.sleep(0.5)
    assert service.view.remote_macs(VNI), "withdrawn before the hold time could expire"
    assert wait_for(lambda: not service.view.remote_macs(VNI), 3 + 5), service.view.remote_macs()
    assert service.view.flood_vteps(VNI) == frozenset()
    assert all(p.state != "ESTABLISHED" for p in service.speaker.peers())
