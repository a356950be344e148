"""Symmetric IRB against FRR 8.4 (control plane): p4vtep's EVPN speaker and an
FRR VTEP with a VRF (L3 VNI 50000) exchange two-label type 2 and type 5
routes; a second GoBGP, an eBGP observer, checks the exact attributes of what
we send. FRR's VRF is a network namespace (``zebra -n``: the kernel here has
no VRF devices, see frr_irb_lab.py).

One lab for the module; each test leaves it as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fabric_fixture import ANYCAST_MAC, TOR1, TOR1_RMAC, TOR2, TOR2_RMAC, routed_fabric, routed_vms
from frr_irb_lab import (
    FRR_RMAC,
    FRR_VNI,
    L3VNI,
    SUBNET,
    VM_IP,
    VM_MAC,
    FrrIrbLab,
    advertising,
    assert_routed_to_frr,
    default_route_from_frr,
    observed_paths,
    observing,
    our_speaker,
)
from frr_lab import needs_frr
from p4vtep.compiler.learned import Learned, LearnedHost, LearnedPrefix
from p4vtep.evpn import status
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.evpn.view import LocalMac, RemoteHost, RemotePrefix

pytestmark = [pytest.mark.evpn, needs_frr()]

# Our VMs (routed_vms): web-1 on tor1 (VNI 5000), db-1 on tor2 (VNI 5001),
# fw on tor2 (VNI 5000, the next hop of red's default route).
WEB = LocalMac(5000, "00:00:0a:00:00:01", TOR1, frozenset({"192.168.1.1"}))
DB = LocalMac(5001, "00:00:0a:00:01:01", TOR2, frozenset({"192.168.2.1"}))
FW = LocalMac(5000, "00:00:0a:00:00:03", TOR2, frozenset({"192.168.1.3"}))
OURS = ([WEB, DB, FW], {TOR1: [5000], TOR2: [5000, 5001]})


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[FrrIrbLab, EvpnService]]:
    with (
        FrrIrbLab() as frr,
        our_speaker(frr, routed_fabric(), [TOR1, TOR2]) as service,
    ):
        yield frr, service


def test_frr_takes_our_type_2_as_vni_l2_l3_with_our_router_mac_and_imports_our_type_5(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    with advertising(service, *OURS):
        mac_ip = f"{TOR1}:5000 [2]:[0]:[48]:[{WEB.mac}]:[32]:[192.168.1.1]"
        # 3 VMs x (MAC, MAC+IP), type 3 for 3 (ToR, VNI), type 5 for 3 subnets
        # (192.168.1.0/24 from both ToRs) and the default route
        assert wait_for(
            lambda: len(frr.evpn_routes_via(TOR1)) + len(frr.evpn_routes_via(TOR2)) == 6 + 3 + 4, 10
        ), frr.vtysh("show bgp l2vpn evpn")
        tor1 = frr.evpn_routes_via(TOR1)
        assert tor1[mac_ip]["extendedCommunity"]["string"] == (
            f"RT:65000:5000 RT:65000:50000 ET:8 Rmac:{TOR1_RMAC}"
        )
        # The MAC-only route keeps one label, the MAC-VRF's route target.
        assert tor1[f"{TOR1}:5000 [2]:[0]:[48]:[{WEB.mac}]"]["extendedCommunity"]["string"] == (
            "RT:65000:5000 ET:8"
        )
        detail = frr.evpn_detail()
        assert f"Route [2]:[0]:[48]:[{WEB.mac}]:[32]:[192.168.1.1] VNI 5000/50000" in detail
        assert f"Route [2]:[0]:[48]:[{WEB.mac}] VNI 5000\n" in detail
        assert f"Route [5]:[0]:[24]:[192.168.1.0] VNI {L3VNI}" in detail
        assert tor1[f"{TOR1}:{L3VNI} [5]:[0]:[24]:[192.168.1.0]"]["extendedCommunity"][
            "string"
        ] == (f"RT:65000:50000 ET:8 Rmac:{TOR1_RMAC}")
        # Type 3 for the L2 VNIs only, never the L3 VNI.
        type3 = [
            p
            for hop in (TOR1, TOR2)
            for p in frr.evpn_routes_via(hop).values()
            if p["routeType"] == 3
        ]
        assert sorted(p["extendedCommunity"]["string"] for p in type3) == [
            "RT:65000:5000 ET:8",
            "RT:65000:5000 ET:8",
            "RT:65000:5001 ET:8",
        ]

        # FRR imported them into its VRF: host routes, subnets from every ToR
        # serving them, the default route from the ToR of its next hop (fw).
        want = {
            "192.168.1.1/32": {TOR1},
            "192.168.2.1/32": {TOR2},
            "192.168.1.3/32": {TOR2},
            "192.168.1.0/24": {TOR1, TOR2},
            "192.168.2.0/24": {TOR2},
            "0.0.0.0/0": {TOR2},
        }
        assert wait_for(
            lambda: {k: v for k, v in frr.vrf_next_hops().items() if k in want} == want, 10
        ), frr.vrf_next_hops()
        assert {k: v for k, v in frr.rmacs().items() if k != "numRmacs"} == {
            TOR1_RMAC: {"routerMac": TOR1_RMAC, "vtepIp": TOR1},
            TOR2_RMAC: {"routerMac": TOR2_RMAC, "vtepIp": TOR2},
        }
        # ... and zebra installed them in the VRF's kernel table, towards our
        # VTEPs over the L3 VNI's SVI.
        svi = f"br{L3VNI}"
        assert wait_for(lambda: len(frr.bgp_kernel_routes()) == 6, 10), frr.kernel_routes()
        assert frr.bgp_kernel_routes() == {
            "192.168.1.1": {(TOR1, svi)},
            "192.168.2.1": {(TOR2, svi)},
            "192.168.1.3": {(TOR2, svi)},
            "192.168.1.0/24": {(TOR1, svi), (TOR2, svi)},  # (ECMP over both ToRs)
            "192.168.2.0/24": {(TOR2, svi)},
            "default": {(TOR2, svi)},
        }
        # Nothing of ours carries the anycast gateway MAC.
        assert ANYCAST_MAC not in frr.vtysh("show bgp l2vpn evpn")
    assert wait_for(lambda: not frr.evpn_routes_via(TOR1) and not frr.evpn_routes_via(TOR2), 10)
    assert wait_for(lambda: not frr.bgp_kernel_routes(), 10), frr.kernel_routes()


def test_we_decode_frrs_two_label_type_2_and_type_5_into_the_vrf(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    host = RemoteHost("red", VM_IP, frr.frr_ip, FRR_RMAC, L3VNI, FRR_VNI, VM_MAC, 0, frr.frr_ip)
    subnet = RemotePrefix("red", SUBNET, frr.frr_ip, FRR_RMAC, L3VNI, frr.frr_ip)
    assert wait_for(lambda: service.view.host_routes() == {host}, 15), (
        service.view.host_routes(),
        dict(service.intake.refused),
    )
    assert wait_for(lambda: service.view.prefix_routes() == {subnet}, 10)
    # VNI 5007 is FRR's alone: no MAC entry for it here (a host route only),
    # and its MAC-only route and type 3 are refused, counted and held.
    assert service.view.remote_macs() == frozenset()
    assert service.view.learned() == Learned.of(
        [],
        {},
        [LearnedHost("red", VM_IP, frr.frr_ip, FRR_RMAC, L3VNI, FRR_VNI, VM_MAC)],
        [LearnedPrefix("red", SUBNET, frr.frr_ip, FRR_RMAC, L3VNI)],
    )
    held = {key[1][0]: reason for key, (_, reason) in service.intake.held_refused.items()}
    assert held == {2: "unknown-vni", 3: "unknown-vni"}
    reports = {
        (r.type, r.ips, r.installed, r.vrf, r.l3vni, r.router_mac)
        for r in status.route_reports(service)
        if r.source == frr.frr_ip and r.installed
    }
    assert reports == {
        (2, (VM_IP,), True, "red", L3VNI, FRR_RMAC),
        (5, (SUBNET,), True, "red", L3VNI, FRR_RMAC),
    }

    # Compiled: on every ToR holding red, towards FRR's VTEP and router MAC.
    learned = service.view.learned()
    assert_routed_to_frr(frr, routed_fabric(), routed_vms(), learned, [VM_IP, SUBNET])


def test_a_default_route_from_frr_is_a_prefix_route_to_it(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    fabric = routed_fabric()
    fabric.vrfs["red"] = replace(fabric.vrfs["red"], routes=())  # (no static default)
    with default_route_from_frr(frr, service, "0.0.0.0/0") as learned:
        assert_routed_to_frr(frr, fabric, routed_vms(), learned, ["0.0.0.0/0"])


def test_an_observer_sees_the_exact_attributes_of_what_we_send(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    frr, service = lab
    with advertising(service, [WEB], {TOR1: [5000]}), observing(frr) as observer:
        assert wait_for(lambda: len(observed_paths(observer, frr.ctl_ip)) == 4, 30), observed_paths(
            observer, frr.ctl_ip
        )
        esi0 = bytes(10)
        by_kind: dict[tuple[str, str], dict[str, Any]] = {}
        for seen in observed_paths(observer, frr.ctl_ip):
            ident = seen.get("ip") or seen.get("prefix") or seen.get("originator") or ""
            by_kind[seen["kind"], ident if ident != "<nil>" else ""] = seen
        assert set(by_kind) == {
            ("EVPNMACIPAdvertisementRoute", ""),
            ("EVPNMACIPAdvertisementRoute", "192.168.1.1"),
            ("EVPNIPPrefixRoute", "192.168.1.0/24"),
            ("EVPNInclusiveMulticastEthernetTagRoute", TOR1),
        }  # (and none of FRR's: we pass on only our own)
        mac_ip = by_kind["EVPNMACIPAdvertisementRoute", "192.168.1.1"]
        assert {
            k: mac_ip[k] for k in ("mac", "labels", "rts", "encap", "rmac", "next_hop", "esi")
        } == {
            "mac": WEB.mac,
            "labels": [5000, L3VNI],
            "rts": {"65000:5000", "65000:50000"},
            "encap": 8,
            "rmac": TOR1_RMAC,
            "next_hop": TOR1,
            "esi": esi0,
        }
        mac = by_kind["EVPNMACIPAdvertisementRoute", ""]
        assert (mac["labels"], mac["rts"], mac["encap"], mac["rmac"]) == (
            [5000],
            {"65000:5000"},
            8,
            None,
        )
        p5 = by_kind["EVPNIPPrefixRoute", "192.168.1.0/24"]
        assert {k: p5[k] for k in ("labels", "gw", "esi", "rts", "encap", "rmac", "next_hop")} == {
            "labels": [L3VNI],
            "gw": "0.0.0.0",
            "esi": esi0,
            "rts": {"65000:50000"},
            "encap": 8,
            "rmac": TOR1_RMAC,
            "next_hop": TOR1,
        }
        imet = by_kind["EVPNInclusiveMulticastEthernetTagRoute", TOR1]
        assert (imet["pmsi_label"], imet["rts"]) == (5000, {"65000:5000"})
        # The observer's own table took them: a host route and a prefix of red.
        assert wait_for(
            lambda: (
                {(h.ip, h.vtep, h.router_mac) for h in observer.view.host_routes()}
                == {("192.168.1.1", TOR1, TOR1_RMAC)}
            ),
            10,
        )
        assert {(p.prefix, p.vtep) for p in observer.view.prefix_routes()} == {
            ("192.168.1.0/24", TOR1)
        }
        assert not observer.intake.refused


def test_frr_with_one_of_our_macs_as_router_mac_is_refused_and_its_routes_dropped(
    lab: tuple[FrrIrbLab, EvpnService],
) -> None:
    """FRR's router MAC becomes the anycast gateway MAC (its L3 SVI's MAC):
    its re-advertised type 2 and type 5 are refused (own-router-mac, counted,
    held with the reason) and the accepted versions leave the table."""
    frr, service = lab
    assert wait_for(lambda: service.view.host_routes() and service.view.prefix_routes(), 15)
    before = service.intake.refused["own-router-mac"]
    frr.set_router_mac(ANYCAST_MAC)
    try:
        assert wait_for(
            lambda: not service.view.host_routes() and not service.view.prefix_routes(), 10
        ), service.view.learned()
        assert service.intake.refused["own-router-mac"] - before == 2
        assert service.view.learned() == Learned()
        refused = {
            (r.type, r.ips): r.refused
            for r in status.route_reports(service)
            if r.source == frr.frr_ip and not r.installed
        }
        assert refused[2, (VM_IP,)] == "own-router-mac"
        assert refused[5, (SUBNET,)] == "own-router-mac"
        assert (
            status.refusals(service)["own-router-mac"] == service.intake.refused["own-router-mac"]
        )
    finally:
        frr.set_router_mac(FRR_RMAC)
    assert wait_for(lambda: service.view.host_routes() and service.view.prefix_routes(), 10)
    assert {h.router_mac for h in service.view.host_routes()} == {FRR_RMAC}
