"""The fabric file's evpn: section: values, defaults, and errors naming line and field."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, StaticMac, StaticVtep, parse_evpn
from p4vtep.sources.fabric_file import ConfigError, _Doc

FABRIC_VNIS = [5000, 6000]
OUR_VTEPS = ["10.0.0.1", "10.0.0.2"]


def parse(text: str) -> EvpnConfig | None:
    doc = _Doc(Path("fabric.yaml"), dedent(text))
    return parse_evpn(doc, FABRIC_VNIS, OUR_VTEPS)


def error(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(text)
    return str(caught.value)


FULL = """
    tors: []
    evpn:
      asn: 65000
      router_id: 10.0.0.254
      hold_time: 3
      peers:
        - {address: 192.0.2.1, asn: 65000, password: s3cret}
        - {address: "2001:db8::1", asn: 4200000001}
      vnis:
        - vni: 5000
          rd: 10.0.0.254:5000
          route_targets: {import: ["*:5000", 65001:5000], export: [auto]}
        - {vni: 6000, route_targets: [65000:60]}
      static_vteps:
        - vtep_ip: 192.0.2.50
          vnis: [5000, 6000]
          macs:
            - {vni: 5000, mac: "52-54-00-00-00-50", ips: [192.168.1.50]}
"""


def test_a_full_section_parses_into_values() -> None:
    config = parse(FULL)
    assert config is not None
    assert (config.asn, config.router_id, config.hold_time, config.listen_port) == (
        65000,
        "10.0.0.254",
        3,
        179,
    )
    assert config.peers == (
        EvpnPeer("192.0.2.1", 65000, "s3cret"),
        EvpnPeer("2001:db8::1", 4200000001, None),
    )
    a, b = config.vnis
    assert (a.vni, a.rd, a.import_rts, a.export_rts) == (
        5000,
        "10.0.0.254:5000",
        ("*:5000", "65001:5000"),
        ("65000:5000",),
    )
    assert (b.vni, b.rd, b.import_rts, b.export_rts) == (6000, None, ("65000:60",), ("65000:60",))
    assert b.rd_for("10.0.0.1") == "10.0.0.1:6000"
    assert a.rd_for("10.0.0.1") == "10.0.0.254:5000"
    assert config.static_vteps == (
        StaticVtep(
            "192.0.2.50", (5000, 6000), (StaticMac(5000, "52:54:00:00:00:50", ("192.168.1.50",)),)
        ),
    )


def test_route_target_import_matching_with_the_wildcard() -> None:
    config = parse(FULL)
    assert config is not None
    routing = config.routing(5000)
    assert routing is not None
    assert routing.imports(["65099:5000"])  # *:5000
    assert routing.imports(["65001:5000"])
    assert not routing.imports(["65000:6000"])
    assert not routing.imports([])


def test_defaults_every_fabric_vni_with_auto_rd_and_rt() -> None:
    config = parse(
        """
        evpn: {asn: 4200000001, router_id: 10.0.0.254}
        """
    )
    assert config is not None
    assert config.peers == ()
    assert config.static_vteps == ()
    assert config.hold_time == 9
    # The auto RT takes the low 16 bits of a 4-byte ASN, as FRR does.
    assert [(r.vni, r.rd, r.import_rts, r.export_rts) for r in config.vnis] == [
        (5000, None, (f"{4200000001 & 0xFFFF}:5000",), (f"{4200000001 & 0xFFFF}:5000",)),
        (6000, None, (f"{4200000001 & 0xFFFF}:6000",), (f"{4200000001 & 0xFFFF}:6000",)),
    ]
    assert config.routing(7000) is None


def test_no_section_means_no_evpn() -> None:
    assert parse("tors: []\n") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("evpn: {router_id: 10.0.0.254}", "fabric.yaml:1: evpn.asn: missing"),
        ("evpn: {asn: 0, router_id: 10.0.0.254}", "evpn.asn: ASN 0 is outside"),
        ("evpn: {asn: 65000, router_id: ten}", "evpn.router_id: 'ten' is not an IPv4 address"),
        ("evpn: {asn: 65000, router_id: 10.0.0.254, hold_time: 2}", "evpn.hold_time: expected 0"),
        (
            "evpn: {asn: 65000, router_id: 10.0.0.254, peers: [{address: x, asn: 1}]}",
            "evpn.peers[0].address: expected an IP address",
        ),
        (
            (
                "evpn:\n  asn: 65000\n  router_id: 10.0.0.254\n  peers:\n"
                "    - {address: 192.0.2.1, asn: 1}\n    - {address: 192.0.2.1, asn: 2}\n"
            ),
            "fabric.yaml:6: evpn.peers[1].address: peer 192.0.2.1 listed twice",
        ),
        (
            "evpn: {asn: 65000, router_id: 10.0.0.254, vnis: [{vni: 7000}]}",
            "evpn.vnis[0].vni: VNI 7000 is not one of the fabric's vnis",
        ),
        (
            "evpn: {asn: 65000, router_id: 10.0.0.254, vnis: [{vni: 5000, rd: 'x:1'}]}",
            "evpn.vnis[0].rd: route distinguisher 'x:1': 'x' is neither an ASN nor an IPv4",
        ),
        (
            "evpn: {asn: 65000, router_id: 10.0.0.254, vnis: [{vni: 5000, rd: '10.0.0.1:70000'}]}",
            "the number must fit 16 bits after an IPv4 address",
        ),
        (
            "evpn: {asn: 65000, router_id: 10.0.0.254, "
            "vnis: [{vni: 5000, route_targets: [65000]}]}",
            "evpn.vnis[0].route_targets: route target '65000': expected ASN:N or IPv4:N",
        ),
        (
            (
                "evpn: {asn: 65000, router_id: 10.0.0.254, vnis: [{vni: 5000, "
                "route_targets: {export: ['*:5000']}}]}"
            ),
            "evpn.vnis[0].route_targets.export: route target '*:5000'",
        ),
        (
            (
                "evpn: {asn: 65000, router_id: 10.0.0.254, vnis: [{vni: 5000, "
                "route_targets: {both: [auto]}}]}"
            ),
            "evpn.vnis[0].route_targets.both: expected import or export",
        ),
        (
            (
                "evpn: {asn: 65000, router_id: 10.0.0.254, "
                "static_vteps: [{vtep_ip: 10.0.0.2, vnis: [5000]}]}"
            ),
            "evpn.static_vteps[0].vtep_ip: 10.0.0.2 is one of this fabric's own ToR VTEPs",
        ),
        (
            (
                "evpn: {asn: 65000, router_id: 10.0.0.254, "
                "static_vteps: [{vtep_ip: 192.0.2.9, vnis: [5000], macs: [{vni: 6000, mac: "
                "'52:54:00:00:00:01'}]}]}"
            ),
            "evpn.static_vteps[0].macs[0].vni: VNI 6000 is not in this static VTEP's vnis",
        ),
        (
            (
                "evpn: {asn: 65000, router_id: 10.0.0.254, "
                "static_vteps: [{vtep_ip: 192.0.2.9, vnis: [5000], macs: [{vni: 5000, mac: "
                "'ff:ff:ff:ff:ff:ff'}]}]}"
            ),
            "evpn.static_vteps[0].macs[0].mac: ff:ff:ff:ff:ff:ff is a multicast or broadcast MAC",
        ),
        (
            (
                "evpn: {asn: 65000, router_id: 10.0.0.254, static_vteps: ["
                "{vtep_ip: 192.0.2.9, vnis: [5000], "
                "macs: [{vni: 5000, mac: '52:54:00:00:00:01'}]},"
                "{vtep_ip: 192.0.2.8, vnis: [5000], "
                "macs: [{vni: 5000, mac: '52:54:00:00:00:01'}]}]}"
            ),
            (
                "evpn.static_vteps[1].macs[0].mac: 52:54:00:00:00:01 in VNI 5000 is already behind "
                "192.0.2.9"
            ),
        ),
    ],
)
def test_bad_sections_are_refused_with_file_line_and_field(text: str, expected: str) -> None:
    assert expected in error(text)


def test_two_vnis_sharing_an_automatic_rd_need_an_explicit_one() -> None:
    doc = _Doc(Path("fabric.yaml"), "evpn: {asn: 65000, router_id: 10.0.0.254}\n")
    with pytest.raises(ConfigError, match="VNIs 5000 and 70536 would get the same automatic RD"):
        parse_evpn(doc, [5000, 5000 + 65536], OUR_VTEPS)
    doc = _Doc(
        Path("fabric.yaml"),
        "evpn: {asn: 65000, router_id: 10.0.0.254, vnis: [{vni: 70536, rd: '65000:70536'}]}\n",
    )
    config = parse_evpn(doc, [5000, 70536], OUR_VTEPS)
    assert config is not None
    assert config.routing(70536) is not None


def test_the_example_fabric_file_parses_with_the_loader_it_will_hook_into() -> None:
    from p4vtep.sources.fabric_file import _read, load_fabric

    path = Path(__file__).resolve().parents[1] / "docs" / "examples" / "fabric-evpn.yaml"
    fabric = load_fabric(path)
    config = parse_evpn(_read(path), fabric.vnis, (t.vtep_ip for t in fabric.tors.values()))
    assert config is not None
    assert [p.address for p in config.peers] == ["10.0.0.250", "192.0.2.10"]
    assert [r.vni for r in config.vnis] == sorted(fabric.vnis)
    assert config.static_vteps[0].macs[0].mac == "52:54:00:00:00:50"


def test_a_fabric_vni_out_of_range_is_left_to_the_fabric_validation() -> None:
    doc = _Doc(Path("fabric.yaml"), "evpn: {asn: 65000, router_id: 10.0.0.254}\n")
    config = parse_evpn(doc, [0, 5000], OUR_VTEPS)
    assert config is not None
    assert [r.vni for r in config.vnis] == [5000]


# ---- the section inside a whole fabric file (config.load_fabric) ----------------

EXAMPLE_FABRIC = Path(__file__).resolve().parents[1] / "docs" / "examples" / "fabric.yaml"


def fabric_with(tmp_path: Path, section: str) -> Path:
    path = tmp_path / "fabric.yaml"
    path.write_text(EXAMPLE_FABRIC.read_text() + dedent(section))
    return path


def test_a_fabric_file_without_the_section_has_no_evpn() -> None:
    from p4vtep.sources.fabric_file import load_fabric

    assert load_fabric(EXAMPLE_FABRIC).evpn is None


def test_the_fabric_loader_parses_the_section_against_its_vnis_and_tors(tmp_path: Path) -> None:
    from p4vtep.sources.fabric_file import load_fabric

    fabric = load_fabric(
        fabric_with(
            tmp_path,
            """
            evpn:
              asn: 65000
              router_id: 10.0.0.254
              peers: [{address: 192.0.2.10, asn: 65000}]
              static_vteps:
                - {vtep_ip: 192.0.2.50, vnis: [5000], macs: [{vni: 5000, mac: "52:54:00:00:00:50"}]}
            """,
        )
    )
    assert fabric.evpn is not None
    assert fabric.evpn.peers == (EvpnPeer("192.0.2.10", 65000),)
    assert [r.vni for r in fabric.evpn.vnis] == sorted(fabric.vnis)
    assert fabric.evpn.static_vteps == (
        StaticVtep("192.0.2.50", (5000,), (StaticMac(5000, "52:54:00:00:00:50"),)),
    )


def test_the_fabric_loader_refuses_a_static_vtep_that_is_one_of_its_tors(tmp_path: Path) -> None:
    from p4vtep.sources.fabric_file import load_fabric

    text = EXAMPLE_FABRIC.read_text()
    tor_vtep = load_fabric(EXAMPLE_FABRIC).tors["tor1"].vtep_ip
    path = fabric_with(
        tmp_path,
        f"""
        evpn:
          asn: 65000
          router_id: 10.0.0.254
          static_vteps: [{{vtep_ip: {tor_vtep}, vnis: [5000]}}]
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load_fabric(path)
    line = len(text.splitlines()) + 5
    assert str(caught.value) == (
        f"{path}:{line}: evpn.static_vteps[0].vtep_ip: "
        f"{tor_vtep} is one of this fabric's own ToR VTEPs"
    )


def test_the_fabric_loader_refuses_an_evpn_vni_the_fabric_does_not_have(tmp_path: Path) -> None:
    from p4vtep.sources.fabric_file import load_fabric

    path = fabric_with(
        tmp_path,
        """
        evpn:
          asn: 65000
          router_id: 10.0.0.254
          vnis: [{vni: 7777}]
        """,
    )
    with pytest.raises(ConfigError, match=r"evpn\.vnis\[0\]\.vni: VNI 7777 is not one of"):
        load_fabric(path)
