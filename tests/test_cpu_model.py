"""The CPU path's inputs in the fabric file (docs/routing.md#the-cpu-path):
``copp:``, ``router_advertisements:`` and the IPv6 subnets' ``slaac`` and
``on_link``: what they load to, each refusal as file:line: key: what is
wrong, and what ``slaac: true`` asks of guarded VMs."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest
from fabric_fixture import dual_stack_fabric, dual_stack_vms
from p4vtep.model.fabric import DEFAULT_COPP, CoppRate, PuntClass, RouterAdvertisements, Subnet
from p4vtep.model.validation import check_fabric, check_vm
from p4vtep.sources.fabric_file import ConfigError, load_fabric

BASE = """\
tors:
  - {name: tor1, p4runtime: "127.0.0.1:9560", device_id: 1, vtep_ip: 10.0.0.1,
     router_mac: "00:aa:00:00:00:01", uplinks: []}
servers:
  - {name: s11, tor: tor1, port: 1}
anycast_gateway_mac: "00:00:5e:00:01:01"
vrfs:
  - {name: a, l3vni: 50000}
vnis:
  - vni: 5000
    name: a-web
    vrf: a
    subnets:
      - {prefix: 192.168.1.0/24, gateway: 192.168.1.1}
      - {prefix: "2001:db8:1::/64", gateway: "2001:db8:1::1"}
  - {vni: 7000, name: storage}
"""


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    return load_fabric(path)


def refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    return str(info.value).replace(str(tmp_path) + "/", "")


def test_defaults(tmp_path: Path) -> None:
    fabric = load(tmp_path, BASE)
    assert fabric.copp == DEFAULT_COPP
    assert fabric.copp[PuntClass.TTL_EXPIRED] == CoppRate(100, 50)
    assert fabric.copp[PuntClass.ROUTER_SOLICITATION] == CoppRate(50, 25)
    vni = fabric.vnis[5000]
    assert vni.router_advertisements == RouterAdvertisements(True, 600, 1800, 9000, False, False)
    assert [(s.slaac, s.on_link) for s in vni.subnets] == [(False, True), (False, True)]


def test_everything_given(tmp_path: Path) -> None:
    text = BASE.replace(
        "vrfs:",
        "copp:\n  ttl_expired: {pps: 20, burst: 10}\n  router_solicitation: {pps: 8}\nvrfs:",
    ).replace(
        '      - {prefix: "2001:db8:1::/64", gateway: "2001:db8:1::1"}',
        '      - {prefix: "2001:db8:1::/64", gateway: "2001:db8:1::1", on_link: false}\n'
        "    router_advertisements: {interval: 30, router_lifetime: 0, mtu: 1500, managed: true,"
        " other: true}",
    )
    fabric = load(tmp_path, text)
    assert fabric.copp[PuntClass.TTL_EXPIRED] == CoppRate(20, 10)
    assert fabric.copp[PuntClass.ROUTER_SOLICITATION] == CoppRate(8, 4)  # (half the rate)
    assert fabric.copp[PuntClass.NO_ROUTE] == DEFAULT_COPP[PuntClass.NO_ROUTE]
    vni = fabric.vnis[5000]
    assert vni.router_advertisements == RouterAdvertisements(True, 30, 0, 1500, True, True)
    assert vni.subnets[1] == Subnet("2001:db8:1::/64", "2001:db8:1::1", False, False)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "vrfs:",
            "copp:\n  ttl_expired: {pps: 0, burst: 5}\nvrfs:",
            "fabric.yaml:8: copp.ttl_expired.pps: 0 outside 1-1000",
        ),
        (
            "vrfs:",
            "copp:\n  no_route: {pps: 10, burst: 5000}\nvrfs:",
            "fabric.yaml:8: copp.no_route.burst: 5000 outside 1-1000",
        ),
        (
            "vrfs:",
            "copp:\n  arp: {pps: 10}\nvrfs:",
            "fabric.yaml:8: copp.arp: unknown punt class (expected l2_trap, ttl_expired, "
            "no_route, to_gateway, router_solicitation, packet_too_big)",
        ),
        (
            "    vrf: a\n",
            "    vrf: a\n    router_advertisements: {interval: 3}\n",
            "fabric.yaml:13: vnis[0].router_advertisements.interval: 3 s outside 4-1800 "
            "(RFC 4861 6.2.1: MaxRtrAdvInterval)",
        ),
        (
            "    vrf: a\n",
            "    vrf: a\n    router_advertisements: {interval: 600, router_lifetime: 100}\n",
            "fabric.yaml:13: vnis[0].router_advertisements.router_lifetime: 100 s: 0 (not a "
            "default router) or 600-9000 (RFC 4861 6.2.1: no shorter than the interval)",
        ),
        (
            "    vrf: a\n",
            "    vrf: a\n    router_advertisements: {mtu: 1000}\n",
            "fabric.yaml:13: vnis[0].router_advertisements.mtu: 1000 outside 1280-9000 "
            "(IPv6's minimum; the VF's MTU: a VM frame is at most 9018 bytes)",
        ),
        (
            "    vrf: a\n",
            "    vrf: a\n    router_advertisements: {cadence: 3}\n",
            "fabric.yaml:13: vnis[0].router_advertisements.cadence: unknown field (expected "
            "enabled, interval, router_lifetime, mtu, managed, other)",
        ),
        (
            "{vni: 7000, name: storage}",
            "{vni: 7000, name: storage, router_advertisements: {interval: 60}}",
            "fabric.yaml:16: vnis[1].router_advertisements: an L2-only VNI has no gateway to "
            "advertise",
        ),
        (
            "gateway: 192.168.1.1}",
            "gateway: 192.168.1.1, slaac: true}",
            "fabric.yaml:14: vnis[0].subnets[0].slaac: only an IPv6 subnet is advertised",
        ),
        (
            '"2001:db8:1::/64", gateway: "2001:db8:1::1"}',
            '"2001:db8:1::/80", gateway: "2001:db8:1::1", slaac: true}',
            "fabric.yaml:15: vnis[0].subnets[1].slaac: 2001:db8:1::/80 is a /80: SLAAC forms "
            "addresses in a /64 only (64-bit interface identifiers, RFC 4862 5.5.3)",
        ),
    ],
)
def test_refusals(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert BASE.count(old) == 1
    assert refusal(tmp_path, BASE.replace(old, new)) == message


def test_slaac_is_loaded_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = BASE.replace('gateway: "2001:db8:1::1"}', 'gateway: "2001:db8:1::1", slaac: true}')
    with caplog.at_level(logging.WARNING):
        fabric = load(tmp_path, text)
    assert fabric.vnis[5000].subnets[1].slaac
    (warning,) = [r.getMessage().replace(str(tmp_path) + "/", "") for r in caplog.records]
    assert warning.startswith(
        "fabric.yaml:15: vnis[0].subnets[1].slaac: 2001:db8:1::/64 is advertised for SLAAC: "
        "with port security on, the ToR drops"
    )


def test_a_fabric_built_in_code_gets_the_same_problems() -> None:
    fabric = dual_stack_fabric()
    fabric.vnis[5000] = replace(
        fabric.vnis[5000], router_advertisements=RouterAdvertisements(interval=2000)
    )
    fabric.copp = {**fabric.copp, PuntClass.NO_ROUTE: CoppRate(10, 0)}
    problems = [str(p) for p in check_fabric(fabric)]
    assert "copp: no_route.burst: 0 outside 1-1000" in problems
    assert (
        "vni tenant-a: router_advertisements.interval: 2000 s outside 4-1800 "
        "(RFC 4861 6.2.1: MaxRtrAdvInterval)"
    ) in problems


def slaac_fabric():  # type: ignore[no-untyped-def]
    fabric = dual_stack_fabric()
    spec = fabric.vnis[5000]
    fabric.vnis[5000] = replace(
        spec, subnets=(spec.subnets[0], replace(spec.subnets[1], slaac=True))
    )
    return fabric


def test_a_slaac_subnet_refuses_a_guarded_vm_that_does_not_list_its_eui64_address() -> None:
    fabric = slaac_fabric()
    web = next(vm for vm in dual_stack_vms() if vm.name == "web-1")
    assert [str(p) for p in check_vm(fabric, web)] == [
        "vm web-1: ips: vni tenant-a advertises 2001:db8:1::/64 for SLAAC (slaac: true): with "
        "port security on, the ToR drops what vm web-1 sends from an address it forms itself "
        "(spoofed_ip): list its EUI-64 address 2001:db8:1:0:200:aff:fe00:1 in ips, cover "
        "2001:db8:1::/64 with an allowed pair, or set port_security: false"
    ]
    listed = replace(web, ips=(*web.ips, "2001:db8:1:0:200:aff:fe00:1"))
    assert check_vm(fabric, listed) == []
    assert check_vm(fabric, replace(web, port_security=False)) == []
    # (fw has port security off; db-1 is in the other VNI)
    others = [vm for vm in dual_stack_vms() if vm.name in ("fw", "db-1")]
    assert [p for vm in others for p in check_vm(fabric, vm)] == []
