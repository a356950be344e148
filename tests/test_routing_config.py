"""The routing model in the fabric file (docs/routing.md): what it loads to,
and each refusal as file:line: key: what is wrong."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from p4vtep.dataplane import limits
from p4vtep.model.fabric import StaticRoute, Subnet, Vni, Vrf
from p4vtep.sources.fabric_file import ConfigError, load_fabric

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"

BASE = """\
tors:
  - name: tor1
    p4runtime: 127.0.0.1:9560
    device_id: 1
    vtep_ip: 10.0.0.1
    router_mac: "00:aa:00:00:00:01"
    uplinks: [{port: 3, next_hop_mac: "00:5e:00:01:01:01"}]
  - name: tor2
    p4runtime: 127.0.0.1:9561
    device_id: 2
    vtep_ip: 10.0.0.2
    router_mac: "00:aa:00:00:00:02"
    uplinks: [{port: 3, next_hop_mac: "00:5e:00:02:01:01"}]
servers:
  - {name: s11, tor: tor1, port: 1}
  - {name: s21, tor: tor2, port: 1}
anycast_gateway_mac: "00:00:5e:00:01:01"
vrfs:
  - name: tenant-a
    l3vni: 50000
    routes:
      - {prefix: 0.0.0.0/0, next_hop: 192.168.1.10}
  - {name: tenant-b, l3vni: 60000}
vnis:
  - vni: 5000
    name: a-web
    vrf: tenant-a
    subnets: [{prefix: 192.168.1.0/24, gateway: 192.168.1.1}]
  - vni: 5001
    name: a-db
    vrf: tenant-a
    subnets: [{prefix: 192.168.2.0/24, gateway: 192.168.2.1}]
  - vni: 6000
    name: b-web
    vrf: tenant-b
    subnets: [{prefix: 192.168.1.0/24, gateway: 192.168.1.1}]
  - {vni: 7000, name: storage}
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    return load_fabric(path)


def edited(old: str, new: str) -> str:
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


def refusal(tmp_path: Path, text: str) -> str:
    """The loader's message, with the file's path cut to its name."""
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    return str(info.value).replace(str(tmp_path) + "/", "")


def line_of(text: str, needle: str) -> int:
    lines = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def test_the_routing_model_loads(tmp_path):
    fabric = load(tmp_path, BASE)
    assert fabric.anycast_gateway_mac == "00:00:5e:00:01:01"
    assert fabric.vrfs == {
        "tenant-a": Vrf("tenant-a", 50000, (StaticRoute("0.0.0.0/0", "192.168.1.10"),)),
        "tenant-b": Vrf("tenant-b", 60000, ()),
    }
    web = (Subnet("192.168.1.0/24", "192.168.1.1"),)
    assert fabric.vnis == {
        5000: Vni(5000, "a-web", vrf="tenant-a", subnets=web),
        5001: Vni(5001, "a-db", vrf="tenant-a", subnets=(Subnet("192.168.2.0/24", "192.168.2.1"),)),
        6000: Vni(6000, "b-web", vrf="tenant-b", subnets=web),  # the same subnet, another VRF
        7000: Vni(7000, "storage"),  # no vrf: L2 only
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        fabric.vrfs["tenant-a"].l3vni = 1  # type: ignore[misc]


@pytest.mark.parametrize("target", ["tofino", "tofino2"])
def test_a_routed_fabric_loads_on_tofino_tors(tmp_path, target):
    """Both Tofino programs route (p4src/tna/l3_forwarding.p4): a routed VNI is
    not refused on their ToRs."""
    text = edited(
        '    router_mac: "00:aa:00:00:00:02"\n',
        f'    router_mac: "00:aa:00:00:00:02"\n    target: {target}\n',
    )
    fabric = load(tmp_path, text)
    assert fabric.tors["tor2"].target == target
    assert fabric.vnis[5000].vrf == "tenant-a"


def test_prefixes_are_kept_canonical(tmp_path):
    fabric = load(
        tmp_path,
        edited("{prefix: 0.0.0.0/0,", "{prefix: 10.0.0.0/255.0.0.0,").replace(
            "192.168.2.0/24", "192.168.2.0/255.255.255.0"
        ),
    )
    assert fabric.vrfs["tenant-a"].routes[0].prefix == "10.0.0.0/8"
    assert fabric.vnis[5001].subnets[0].prefix == "192.168.2.0/24"


def test_an_l2_only_fabric_has_no_routing(tmp_path):
    fabric = load_fabric(EXAMPLES / "fabric.yaml")
    assert fabric.vrfs == {}
    assert fabric.anycast_gateway_mac is None
    assert all(v.vrf is None and v.subnets == () for v in fabric.vnis.values())


def test_a_vrf_no_vni_uses_needs_no_gateway_mac(tmp_path):
    """Declared, not yet used: nothing is routed, so nothing is asked."""
    text = BASE[: BASE.index("anycast_gateway_mac:")] + (
        "vrfs: [{name: tenant-a, l3vni: 50000}]\nvnis: [{vni: 7000, name: storage}]\n"
    )
    fabric = load(tmp_path, text)
    assert fabric.vrfs == {"tenant-a": Vrf("tenant-a", 50000)}
    assert fabric.anycast_gateway_mac is None
    assert fabric.vnis == {7000: Vni(7000, "storage")}


# (replace this, with that, then: the key and message, on the line holding `at`)
CASES = [
    # anycast_gateway_mac
    ('anycast_gateway_mac: "00:00:5e:00:01:01"\n', "", "anycast_gateway_mac",
     "required: vni a-web (5000) is routed in VRF tenant-a", "tors:"),
    ('"00:00:5e:00:01:01"', '"01:00:5e:00:00:01"', "anycast_gateway_mac",
     "01:00:5e:00:00:01 is a multicast MAC", "anycast_gateway_mac"),
    ('"00:00:5e:00:01:01"', '"00:00:00:00:00:00"', "anycast_gateway_mac",
     "00:00:00:00:00:00 is the zero MAC, which no host has", "anycast_gateway_mac"),
    ('"00:00:5e:00:01:01"', '"00:AA:00:00:00:02"', "anycast_gateway_mac",
     "00:aa:00:00:00:02 is the router_mac of tor tor2 (the gateway MAC is not a ToR's)",
     "anycast_gateway_mac"),
    ('"00:00:5e:00:01:01"', "gateway", "anycast_gateway_mac",
     "'gateway' is not a MAC address", "anycast_gateway_mac"),
    # each ToR's router_mac is its RMAC
    ('router_mac: "00:aa:00:00:00:02"', 'router_mac: "00:AA:00:00:00:01"', "tors[1].router_mac",
     "00:aa:00:00:00:01 is already the router_mac of tor tor1", "00:AA:00:00:00:01"),
    ('router_mac: "00:aa:00:00:00:02"', 'router_mac: "01:aa:00:00:00:02"', "tors[1].router_mac",
     "01:aa:00:00:00:02 is a multicast MAC (the ToR's RMAC)", "01:aa:00:00:00:02"),
    # vrfs
    ("l3vni: 50000", "l3vni: 5000", "vrfs[0].l3vni",
     "5000 is already the VNI of vni a-web", "l3vni: 5000"),
    ("l3vni: 50000", "l3vni: 60000", "vrfs[1].l3vni",
     "60000 is already the l3vni of vrf tenant-a", "{name: tenant-b"),
    ("l3vni: 50000", "l3vni: 0", "vrfs[0].l3vni", "0 outside 1-16777215", "l3vni: 0"),
    ("l3vni: 50000", "l3vni: 16777216", "vrfs[0].l3vni",
     "16777216 outside 1-16777215", "l3vni: 16777216"),
    ("l3vni: 50000", "l3vni: x", "vrfs[0].l3vni", "expected an integer, got 'x'", "l3vni: x"),
    ("{name: tenant-b,", "{name: tenant-a,", "vrfs[1].name",
     "VRF 'tenant-a' defined twice", "{name: tenant-a,"),
    ("    l3vni: 50000\n", "    l3vni: 50000\n    rd: auto\n", "vrfs[0].rd",
     "unknown field (expected name, l3vni, routes)", "rd: auto"),
    # vnis[].vrf and vnis[].subnets
    ("name: a-db\n    vrf: tenant-a", "name: a-db\n    vrf: tenant-c", "vnis[1].vrf",
     "unknown VRF 'tenant-c'", "tenant-c"),
    ("{vni: 7000, name: storage}",
     "{vni: 7000, name: storage, subnets: [{prefix: 10.7.0.0/16, gateway: 10.7.0.1}]}",
     "vnis[3].subnets",
     "a VNI without a vrf is L2 only: give it a vrf or remove its subnets", "vni: 7000"),
    ("    subnets: [{prefix: 192.168.2.0/24, gateway: 192.168.2.1}]\n", "", "vnis[1].subnets",
     "a routed VNI (vrf tenant-a) needs a subnet with its gateway", "vni: 5001"),
    ("192.168.2.0/24,", "192.168.2.1/24,", "vnis[1].subnets[0].prefix",
     "192.168.2.1/24 has host bits set (the network is 192.168.2.0/24)", "192.168.2.1/24"),
    ("192.168.2.0/24,", "192.168.2/24,", "vnis[1].subnets[0].prefix",
     "'192.168.2/24' is not an IPv4 network (expected a.b.c.d/len)", "192.168.2/24"),
    ("192.168.2.0/24,", "192.168.2.0,", "vnis[1].subnets[0].prefix",
     "'192.168.2.0' is not an IPv4 network (expected a.b.c.d/len)", "192.168.2.0,"),
    ("192.168.2.0/24,", "192.168.2.0/31,", "vnis[1].subnets[0].prefix",
     "192.168.2.0/31 is too small: a routed subnet is /30 or larger", "192.168.2.0/31"),
    ("{prefix: 192.168.2.0/24, gateway: 192.168.2.1}", "{prefix: 127.0.2.0/24, gateway: 127.0.2.1}",
     "vnis[1].subnets[0].prefix", "127.0.2.0/24 overlaps 127.0.0.0/8: loopback", "127.0.2.0"),
    ("{prefix: 192.168.2.0/24, gateway: 192.168.2.1}",
     "{prefix: 169.254.2.0/24, gateway: 169.254.2.1}", "vnis[1].subnets[0].prefix",
     "169.254.2.0/24 overlaps 169.254.0.0/16: link-local, never routed", "169.254.2.0"),
    ("gateway: 192.168.2.1}", "gateway: 192.168.3.1}", "vnis[1].subnets[0].gateway",
     "192.168.3.1 is outside 192.168.2.0/24", "192.168.3.1"),
    ("gateway: 192.168.2.1}", "gateway: 192.168.2.0}", "vnis[1].subnets[0].gateway",
     "192.168.2.0 is the network address of 192.168.2.0/24", "gateway: 192.168.2.0"),
    ("gateway: 192.168.2.1}", "gateway: 192.168.2.255}", "vnis[1].subnets[0].gateway",
     "192.168.2.255 is the broadcast address of 192.168.2.0/24", "192.168.2.255"),
    ("gateway: 192.168.2.1}", "gateway: gw}", "vnis[1].subnets[0].gateway",
     "'gw' is not an IPv4 address", "gateway: gw"),
    ("[{prefix: 192.168.2.0/24, gateway: 192.168.2.1}]", "[192.168.2.0/24]", "vnis[1].subnets[0]",
     "expected a mapping with prefix, gateway, slaac, on_link", "[192.168.2.0/24]"),
    ("gateway: 192.168.2.1}", "gateway: 192.168.2.1, vlan: 3}", "vnis[1].subnets[0].vlan",
     "unknown field (expected prefix, gateway, slaac, on_link)", "vlan: 3"),
    # overlapping subnets in one VRF (the one declared later is named)
    ("{prefix: 192.168.2.0/24, gateway: 192.168.2.1}",
     "{prefix: 192.168.1.128/25, gateway: 192.168.1.129}", "vnis[1].subnets[0].prefix",
     "192.168.1.128/25 overlaps 192.168.1.0/24 of vni a-web in VRF tenant-a", "192.168.1.128"),
    ("{prefix: 192.168.2.0/24, gateway: 192.168.2.1}",
     "{prefix: 192.168.0.0/16, gateway: 192.168.0.1}", "vnis[1].subnets[0].prefix",
     "192.168.0.0/16 overlaps 192.168.1.0/24 of vni a-web in VRF tenant-a", "192.168.0.0/16"),
    ("{prefix: 192.168.2.0/24, gateway: 192.168.2.1}]",
     "{prefix: 192.168.2.0/24, gateway: 192.168.2.1}, {prefix: 192.168.2.0/24, "
     "gateway: 192.168.2.254}]", "vnis[1].subnets[1].prefix",
     "192.168.2.0/24 overlaps 192.168.2.0/24 of vni a-db in VRF tenant-a", "192.168.2.254"),
    # static routes
    ("{prefix: 0.0.0.0/0,", "{prefix: 10.0.0.1/8,", "vrfs[0].routes[0].prefix",
     "10.0.0.1/8 has host bits set (the network is 10.0.0.0/8)", "10.0.0.1/8"),
    ("{prefix: 0.0.0.0/0,", "{prefix: ten,", "vrfs[0].routes[0].prefix",
     "'ten' is not an IPv4 network (expected a.b.c.d/len)", "prefix: ten"),
    ("      - {prefix: 0.0.0.0/0, next_hop: 192.168.1.10}\n",
     "      - {prefix: 0.0.0.0/0, next_hop: 192.168.1.10}\n"
     "      - {prefix: 0.0.0.0/0, next_hop: 192.168.2.10}\n", "vrfs[0].routes[1].prefix",
     "0.0.0.0/0 is already routes[0] (one next hop per prefix)", "192.168.2.10"),
    ("{prefix: 0.0.0.0/0,", "{prefix: 192.168.2.128/25,", "vrfs[0].routes[0].prefix",
     "192.168.2.128/25 lies inside subnet 192.168.2.0/24 of vni a-db", "192.168.2.128/25"),
    ("{prefix: 0.0.0.0/0,", "{prefix: 224.0.0.0/8,", "vrfs[0].routes[0].prefix",
     "224.0.0.0/8 lies in 224.0.0.0/4: multicast", "224.0.0.0/8"),
    ("next_hop: 192.168.1.10}", "next_hop: fw}", "vrfs[0].routes[0].next_hop",
     "'fw' is not an IPv4 address", "next_hop: fw"),
    ("next_hop: 192.168.1.10}", "next_hop: 10.1.1.1}", "vrfs[0].routes[0].next_hop",
     "10.1.1.1 is in none of the subnets of VRF tenant-a (the next hop is a VM of the VRF)",
     "10.1.1.1"),
    ("{name: tenant-b, l3vni: 60000}",
     "{name: tenant-b, l3vni: 60000, routes: [{prefix: 10.0.0.0/8, next_hop: 192.168.2.10}]}",
     "vrfs[1].routes[0].next_hop",
     "192.168.2.10 is in none of the subnets of VRF tenant-b (the next hop is a VM of the VRF)",
     "192.168.2.10"),
    ("next_hop: 192.168.1.10}", "next_hop: 192.168.1.1}", "vrfs[0].routes[0].next_hop",
     "192.168.1.1 is the gateway of 192.168.1.0/24, not a VM's address", "next_hop: 192.168.1.1}"),
    ("next_hop: 192.168.1.10}", "next_hop: 192.168.1.255}", "vrfs[0].routes[0].next_hop",
     "192.168.1.255 is the broadcast address of 192.168.1.0/24, not a VM's address",
     "192.168.1.255"),
    ("{prefix: 0.0.0.0/0, next_hop: 192.168.1.10}", "{prefix: 0.0.0.0/0}",
     "vrfs[0].routes[0].next_hop", "missing", "{prefix: 0.0.0.0/0}"),
]  # fmt: skip


@pytest.mark.parametrize("old,new,key,message,at", CASES)
def test_each_refusal_names_file_line_and_key(tmp_path, old, new, key, message, at):
    text = edited(old, new)
    assert refusal(tmp_path, text) == f"fabric.yaml:{line_of(text, at)}: {key}: {message}"


def test_every_routing_problem_is_reported_at_once(tmp_path):
    text = edited("l3vni: 50000", "l3vni: 5000").replace(
        "gateway: 192.168.2.1", "gateway: 10.0.0.1"
    )
    assert refusal(tmp_path, text) == (
        f"fabric.yaml:{line_of(text, 'l3vni: 5000')}: vrfs[0].l3vni: "
        "5000 is already the VNI of vni a-web; "
        f"fabric.yaml:{line_of(text, '10.0.0.1}')}: vnis[1].subnets[0].gateway: "
        "10.0.0.1 is outside 192.168.2.0/24"
    )


def test_the_routed_example_loads():
    fabric = load_fabric(EXAMPLES / "fabric-routed.yaml")
    assert fabric.anycast_gateway_mac == "00:00:5e:00:01:01"
    assert {n: v.l3vni for n, v in fabric.vrfs.items()} == {"tenant-a": 50000, "tenant-b": 60000}
    assert {v.vni: (v.name, v.vrf, v.subnets) for v in fabric.vnis.values()} == {
        5000: ("a-web", "tenant-a", (Subnet("192.168.1.0/24", "192.168.1.1"),)),
        5001: ("a-db", "tenant-a", (Subnet("192.168.2.0/24", "192.168.2.1"),)),
        6000: ("b-web", "tenant-b", (Subnet("192.168.1.0/24", "192.168.1.1"),)),
        6001: ("b-db", "tenant-b", (Subnet("192.168.2.0/24", "192.168.2.1"),)),
        7000: ("storage", None, ()),
    }
    assert fabric.vrfs["tenant-a"].routes == (StaticRoute("0.0.0.0/0", "192.168.1.10"),)


# --- dual stack (issue 37: the model; the data plane comes later) ---------------

DUAL = (
    BASE.replace(
        "{prefix: 192.168.1.0/24, gateway: 192.168.1.1}]\n  - vni: 5001",
        "{prefix: 192.168.1.0/24, gateway: 192.168.1.1},\n"
        "              {prefix: '2001:0DB8:0001:0000::/64', gateway: '2001:db8:1:0:0:0:0:1'}]\n"
        "  - vni: 5001",
    )
    .replace(
        "{prefix: 192.168.2.0/24, gateway: 192.168.2.1}]",
        "{prefix: 192.168.2.0/24, gateway: 192.168.2.1},\n"
        "              {prefix: 'FD00:A:2::/64', gateway: 'fd00:a:2::1'}]",
    )
    .replace(
        "      - {prefix: 0.0.0.0/0, next_hop: 192.168.1.10}\n",
        "      - {prefix: 0.0.0.0/0, next_hop: 192.168.1.10}\n"
        "      - {prefix: '::/0', next_hop: '2001:db8:1:0:0:0:0:10'}\n"
        "      - prefix: 2001:0:0:0:0:0:0:0/16\n"
        "        next_hop: 2001:0db8:0001::0010\n",
    )
    .replace(
        "    subnets: [{prefix: 192.168.1.0/24, gateway: 192.168.1.1}]\n  - {vni: 7000",
        "    subnets: [{prefix: 192.168.1.0/24, gateway: 192.168.1.1},\n"
        "              {prefix: 2001:db8:1::/64, gateway: 2001:db8:1::1}]\n  - {vni: 7000",
    )
)


@pytest.fixture
def ipv6_pipeline(monkeypatch):
    """A pipeline with the IPv6 tables (the committed one; set here whatever
    P4VTEP_P4INFO names): the model's IPv6 rules apply."""
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", True)


@pytest.fixture
def pipeline_without_ipv6(monkeypatch):
    """A pipeline without the IPv6 tables (an older build): limits says so."""
    monkeypatch.setattr(limits, "IPV6_SUPPORTED", False)


@pytest.mark.usefixtures("ipv6_pipeline")
def test_a_dual_stack_fabric_loads_in_canonical_form(tmp_path):
    """IPv4 and IPv6 subnets in one VNI, the same IPv6 subnet in two VRFs, a
    static route of each family; every IPv6 text as RFC 5952 writes it,
    however the file spells it (an address of decimal groups too, which YAML
    1.1 would read as a base-60 number)."""
    fabric = load(tmp_path, DUAL)
    web6 = Subnet("2001:db8:1::/64", "2001:db8:1::1")
    assert fabric.vnis[5000].subnets == (Subnet("192.168.1.0/24", "192.168.1.1"), web6)
    assert fabric.vnis[5001].subnets[1] == Subnet("fd00:a:2::/64", "fd00:a:2::1")
    assert fabric.vnis[6000].subnets[1] == web6  # tenant-b: the same subnet, another VRF
    assert fabric.vrfs["tenant-a"].routes == (
        StaticRoute("0.0.0.0/0", "192.168.1.10"),
        StaticRoute("::/0", "2001:db8:1::10"),
        StaticRoute("2001::/16", "2001:db8:1::10"),
    )


def test_the_committed_pipeline_loads_a_dual_stack_fabric(tmp_path):
    assert limits.IPV6_SUPPORTED is True  # (its P4Info has the IPv6 tables: test_limits.py)
    assert load(tmp_path, DUAL).vrfs["tenant-a"].routes[1] == StaticRoute("::/0", "2001:db8:1::10")


@pytest.mark.usefixtures("pipeline_without_ipv6")
def test_a_pipeline_without_the_ipv6_tables_refuses_an_ipv6_subnet_and_route_by_line(tmp_path):
    """Without the IPv6 tables the same file is refused, each IPv6 subnet
    and route on its line, saying what the pipeline lacks."""
    without = (
        "need a pipeline with IPv6 tables (nd_suppression, ipv6_host_route, "
        "ipv6_prefix_route): this pipeline has none, it takes IPv4 only"
    )
    assert refusal(tmp_path, DUAL).split("; ") == [
        f"fabric.yaml:{line_of(DUAL, '2001:0DB8:0001')}: vnis[0].subnets[1].prefix: "
        f"2001:db8:1::/64: IPv6 subnets {without}",
        f"fabric.yaml:{line_of(DUAL, 'FD00')}: vnis[1].subnets[1].prefix: "
        f"fd00:a:2::/64: IPv6 subnets {without}",
        f"fabric.yaml:{line_of(DUAL, '{prefix: 2001:db8:1::/64')}: vnis[2].subnets[1].prefix: "
        f"2001:db8:1::/64: IPv6 subnets {without}",
        f"fabric.yaml:{line_of(DUAL, '::/0')}: vrfs[0].routes[1].prefix: "
        f"::/0: IPv6 routes {without}",
        f"fabric.yaml:{line_of(DUAL, '2001:0:0:0')}: vrfs[0].routes[2].prefix: "
        f"2001::/16: IPv6 routes {without}",
    ]


def dual_edited(old: str, new: str) -> str:
    assert DUAL.count(old) == 1, old
    return DUAL.replace(old, new)


# (replace this in DUAL, with that, then: the key and message, on the line holding `at`)
IPV6_CASES = [
    ("'FD00:A:2::/64'", "'fd00:a:2::1/64'", "vnis[1].subnets[1].prefix",
     "fd00:a:2::1/64 has host bits set (the network is fd00:a:2::/64)", "fd00:a:2::1/64"),
    ("'FD00:A:2::/64'", "'fd00:a:2::'", "vnis[1].subnets[1].prefix",
     "'fd00:a:2::' is not an IPv6 network (expected address/len, e.g. 2001:db8:1::/64)",
     "fd00:a:2::'"),
    ("'FD00:A:2::/64'", "'fd00:a::/32'", "vnis[1].subnets[1].prefix",
     "fd00:a::/32 is too large: a routed IPv6 subnet is /48 to /126 (usually /64)", "fd00:a::/32"),
    ("'FD00:A:2::/64'", "'fd00:a:2::/127'", "vnis[1].subnets[1].prefix",
     "fd00:a:2::/127 is too small: a routed IPv6 subnet is /48 to /126 (usually /64)",
     "fd00:a:2::/127"),
    ("{prefix: 'FD00:A:2::/64', gateway: 'fd00:a:2::1'}",
     "{prefix: 'fe80::/64', gateway: 'fe80::1'}", "vnis[1].subnets[1].prefix",
     "fe80::/64 is not a subnet for VMs "
     "(only global unicast 2000::/3 and unique local fc00::/7 are)", "fe80::/64"),
    ("gateway: 'fd00:a:2::1'", "gateway: 'fd00:a:3::1'", "vnis[1].subnets[1].gateway",
     "fd00:a:3::1 is outside fd00:a:2::/64", "fd00:a:3::1"),
    ("gateway: 'fd00:a:2::1'", "gateway: 'FD00:A:2::'", "vnis[1].subnets[1].gateway",
     "fd00:a:2:: is the subnet-router anycast address of fd00:a:2::/64", "FD00:A:2::'"),
    ("gateway: 'fd00:a:2::1'", "gateway: '192.168.2.9'", "vnis[1].subnets[1].gateway",
     "192.168.2.9 is outside fd00:a:2::/64", "'192.168.2.9'"),
    # overlapping IPv6 subnets in one VRF (across VRFs: DUAL itself)
    ("{prefix: 'FD00:A:2::/64', gateway: 'fd00:a:2::1'}",
     "{prefix: '2001:db8:1:0:8000::/65', gateway: '2001:db8:1:0:8000::1'}",
     "vnis[1].subnets[1].prefix",
     "2001:db8:1:0:8000::/65 overlaps 2001:db8:1::/64 of vni a-web in VRF tenant-a",
     "2001:db8:1:0:8000::/65"),
    # static routes
    ("next_hop: '2001:db8:1:0:0:0:0:10'", "next_hop: 192.168.1.10", "vrfs[0].routes[1].next_hop",
     "192.168.1.10 is an IPv4 address, ::/0 an IPv6 prefix "
     "(the next hop is of the prefix's family)",
     "'::/0'"),
    ("next_hop: '2001:db8:1:0:0:0:0:10'", "next_hop: '2001:db8:9::10'",
     "vrfs[0].routes[1].next_hop",
     "2001:db8:9::10 is in none of the subnets of VRF tenant-a (the next hop is a VM of the VRF)",
     "'::/0'"),
    ("prefix: 2001:0:0:0:0:0:0:0/16", "prefix: fd00:a:2:0:8000::/65", "vrfs[0].routes[2].prefix",
     "fd00:a:2:0:8000::/65 lies inside subnet fd00:a:2::/64 of vni a-db", "fd00:a:2:0:8000::/65"),
    ("prefix: 2001:0:0:0:0:0:0:0/16", "prefix: ff02::/16", "vrfs[0].routes[2].prefix",
     "ff02::/16 lies in ff00::/8: multicast", "ff02::/16"),
]  # fmt: skip


@pytest.mark.usefixtures("ipv6_pipeline")
@pytest.mark.parametrize("old,new,key,message,at", IPV6_CASES)
def test_each_ipv6_refusal_names_file_line_and_key(tmp_path, old, new, key, message, at):
    text = dual_edited(old, new)
    assert refusal(tmp_path, text) == f"fabric.yaml:{line_of(text, at)}: {key}: {message}"
