"""The evpn: section of a routed fabric file: ``vrfs:`` (RD, route targets,
type 5 switch per VRF, with the rules of ``vnis:``), the defaults for VRFs
not listed, and the routing facts copied in from the fabric."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4vtep.evpn.config import VrfRouting
from p4vtep.sources.fabric_file import ConfigError, load_fabric

ROUTED = Path(__file__).resolve().parent.parent / "docs" / "examples" / "fabric-routed.yaml"


def load(tmp_path: Path, evpn: str) -> object:
    path = tmp_path / "fabric.yaml"
    path.write_text(ROUTED.read_text() + evpn)
    return load_fabric(path)


def error(tmp_path: Path, evpn: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, evpn)
    return str(caught.value)


def line_of(tmp_path: Path, needle: str) -> int:
    lines = (tmp_path / "fabric.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_vrfs_take_part_with_the_defaults_and_the_fabric_facts(tmp_path: Path) -> None:
    fabric = load(tmp_path, "evpn: {asn: 65000, router_id: 10.0.0.254}\n")
    evpn = fabric.evpn  # type: ignore[attr-defined]
    assert evpn.vrfs == (
        VrfRouting(
            "tenant-a",
            50000,
            None,
            ("65000:50000",),
            ("65000:50000",),
            True,
            (("0.0.0.0/0", "192.168.1.10"),),
        ),
        VrfRouting("tenant-b", 60000, None, ("65000:60000",), ("65000:60000",), True, ()),
    )
    assert [(r.vni, r.vrf, r.subnets) for r in evpn.vnis] == [
        (5000, "tenant-a", ("192.168.1.0/24",)),
        (5001, "tenant-a", ("192.168.2.0/24",)),
        (6000, "tenant-b", ("192.168.1.0/24",)),
        (6001, "tenant-b", ("192.168.2.0/24",)),
        (7000, None, ()),
    ]
    assert evpn.router_macs == (
        ("10.0.0.1", "00:aa:00:00:00:01"),
        ("10.0.0.2", "00:aa:00:00:00:02"),
    )
    assert evpn.anycast_mac == "00:00:5e:00:01:01"
    assert evpn.vrfs[0].rd_for("10.0.0.1") == "10.0.0.1:50000"
    assert evpn.vrfs[1].rd_for("10.0.0.2") == f"10.0.0.2:{60000 & 0xFFFF}"


def test_explicit_vrf_keys(tmp_path: Path) -> None:
    fabric = load(
        tmp_path,
        """evpn:
  asn: 4200000001
  router_id: 10.0.0.254
  vrfs:
    - name: tenant-b
      rd: 10.0.0.254:60
      route_targets: {import: ["*:60000", "65001:60000"], export: [auto]}
      advertise_prefixes: false
    - {name: tenant-a, route_targets: [65000:50000]}
""",
    )
    a, b = fabric.evpn.vrfs  # type: ignore[attr-defined]
    assert (a.rd, a.import_rts, a.export_rts, a.advertise_prefixes) == (
        None,
        ("65000:50000",),
        ("65000:50000",),
        True,
    )
    # auto: the low 16 bits of the ASN (4200000001 & 0xFFFF = 59905), as FRR
    assert (b.rd, b.import_rts, b.export_rts, b.advertise_prefixes) == (
        "10.0.0.254:60",
        ("*:60000", "65001:60000"),
        ("59905:60000",),
        False,
    )
    assert b.rd_for("10.0.0.1") == "10.0.0.254:60"
    assert b.imports(["65099:60000"])
    assert not b.imports(["65099:6000"])


@pytest.mark.parametrize(
    ("vrfs", "needle", "message"),
    [
        (
            "- {name: tenant-c}",
            "tenant-c",
            "vrfs[0].name: VRF 'tenant-c' is not one of the fabric's vrfs",
        ),
        (
            "- {name: tenant-a}\n    - {name: tenant-a, rd: auto}",
            "rd: auto",
            "vrfs[1].name: VRF 'tenant-a' listed twice",
        ),
        ("- {name: tenant-a, l3vni: 5}", "tenant-a, l3vni: 5", "vrfs[0].l3vni: unknown field"),
        ("- {name: tenant-a, rd: 70000:1:2}", "rd:", "vrfs[0].rd: route distinguisher"),
        (
            "- {name: tenant-a, rd: 4200000001:70000}",
            "rd:",
            "must fit 16 bits after a 4-byte ASN",
        ),
        (
            "- {name: tenant-a, route_targets: [65000:x]}",
            "route_targets",
            "vrfs[0].route_targets: route target '65000:x'",
        ),
        (
            "- {name: tenant-a, route_targets: {export: ['*:50000']}}",
            "route_targets",
            "route_targets.export: route target '*:50000'",
        ),
        (
            "- {name: tenant-a, advertise_prefixes: maybe}",
            "advertise_prefixes",
            "vrfs[0].advertise_prefixes: expected",
        ),
        ("- tenant-a", "- tenant-a", "vrfs[0]: expected a mapping with name, rd"),
    ],
)
def test_vrf_keys_are_checked_like_the_vni_keys(
    tmp_path: Path, vrfs: str, needle: str, message: str
) -> None:
    text = f"evpn:\n  asn: 65000\n  router_id: 10.0.0.254\n  vrfs:\n    {vrfs}\n"
    got = error(tmp_path, text)
    assert message in got
    assert f"fabric.yaml:{line_of(tmp_path, needle)}:" in got


def test_an_l3vni_sharing_the_automatic_rd_of_a_vni_needs_an_explicit_rd(
    tmp_path: Path,
) -> None:
    # L3 VNI 70536 has the low 16 bits of VNI 5000: on every ToR both would
    # get the RD <VTEP IP>:5000.
    text = ROUTED.read_text().replace("l3vni: 50000 ", "l3vni: 70536 ")
    path = tmp_path / "fabric.yaml"
    path.write_text(text + "evpn: {asn: 65000, router_id: 10.0.0.254}\n")
    with pytest.raises(ConfigError, match="VNI 5000 and VRF tenant-a's L3 VNI 70536"):
        load_fabric(path)
    path.write_text(
        text
        + "evpn:\n  asn: 65000\n  router_id: 10.0.0.254\n"
        + "  vrfs: [{name: tenant-a, rd: 65000:70536}]\n"
    )
    assert load_fabric(path).evpn.vrfs[0].rd == "65000:70536"  # type: ignore[union-attr]
