"""p4vtep's EVPN speaker against a real peer: FRR as a Linux VTEP (control plane).

One FRR lab for the module (starting FRR and bringing the session up takes
several seconds); each test leaves the lab as it found it, and the peer
failure test runs last because it freezes FRR's bgpd.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from frr_lab import VM_MAC, FrrLab, needs_frr
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.evpn.table import LocalMac, RemoteMac

pytestmark = needs_frr()

VNI = 5000
TOR1, TOR2 = "10.0.0.1", "10.0.0.2"  # our ToRs' VTEPs
OUR_MAC, OUR_IP = "52:54:00:aa:00:01", "192.168.1.10"


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[FrrLab, EvpnService]]:
    with FrrLab(vni=VNI, asn=65000, hold_time=3) as frr:
        config = EvpnConfig(
            asn=65000,
            router_id=frr.ctl_ip,
            peers=(EvpnPeer(frr.frr_ip, 65000),),
            vnis=(VniRouting(VNI, None, ("65000:5000",), ("65000:5000",)),),
            hold_time=3,
        )
        service = EvpnService(
            config,
            [TOR1, TOR2],
            command_prefix=["ip", "netns", "exec", frr.ctl_ns],
            listen_addresses=[frr.ctl_ip],
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
    assert service.view.flood_vteps(6000) == frozenset()
    assert not service.intake.refused


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
        assert mobility and all("MM:1" in s for s in mobility), mobility
        assert wait_for(lambda: not _frr_has(frr, OUR_MAC, TOR1), 10)
    finally:
        service.set_local([], {})
    assert wait_for(lambda: not _fdb_has(frr, OUR_MAC, TOR2), 10), frr.fdb()


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
