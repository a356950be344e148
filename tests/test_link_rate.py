"""A server's link rate (servers[].link_rate): its VMs' guaranteed rates may
not add up to more, in either direction; refused from the fabric file and the
API alike, with nothing changed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fabric_fixture import two_tor_fabric
from helpers import controller_state
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.bit_rates import format_bit_rate, parse_bit_rate
from p4vtep.model.fabric import Vm
from p4vtep.model.validation import Problem, ValidationError, validate
from p4vtep.sources.fabric_file import ConfigError, load_fabric
from p4vtep.state.sqlite_store import Store

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        (10_000_000_000, 10_000_000_000),
        ("10G", 10_000_000_000),
        ("2.5G", 2_500_000_000),
        ("100M", 100_000_000),
        ("100 Mbit/s", 100_000_000),
        ("25Gbps", 25_000_000_000),
        ("1k", 1000),
    ],
)
def test_link_rates_parse_as_written(text, bps):
    assert parse_bit_rate(text) == bps


@pytest.mark.parametrize("text", ["fast", "10 GB", "-1G", 0, -5, True, "1e9", ""])
def test_a_link_rate_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match="rate"):
        parse_bit_rate(text)


def test_rates_print_with_their_prefix():
    assert [format_bit_rate(r) for r in (10e9, 2.5e9, 100e6, 16e6, 1200, 800)] == [
        "10 Gbit/s",
        "2.5 Gbit/s",
        "100 Mbit/s",
        "16 Mbit/s",
        "1.2 kbit/s",
        "800 bit/s",
    ]


def test_the_fabric_file_takes_link_rate_and_names_the_line_of_a_bad_one(tmp_path):
    text = (EXAMPLES / "fabric.yaml").read_text()
    assert "{name: s11, tor: tor1, port: 1}" in text
    good = tmp_path / "good.yaml"
    good.write_text(
        text.replace(
            "{name: s11, tor: tor1, port: 1}", "{name: s11, tor: tor1, port: 1, link_rate: 25G}"
        )
    )
    fabric = load_fabric(good)
    assert fabric.servers["s11"].link_rate == 25_000_000_000
    assert fabric.servers["s12"].link_rate is None
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        text.replace(
            "{name: s11, tor: tor1, port: 1}", "{name: s11, tor: tor1, port: 1, link_rate: fast}"
        )
    )
    with pytest.raises(ConfigError) as info:
        load_fabric(bad)
    line = next(i for i, row in enumerate(bad.read_text().splitlines(), 1) if "link_rate" in row)
    assert str(info.value) == (
        f"{bad}:{line}: servers[0].link_rate: expected a rate such as 10G or 100M (bit/s), "
        "got 'fast'"
    )


def fabric_with_link(rate: int):
    """s11 at ``rate``: gold guarantees 1 MB/s (8 Mbit/s) each way."""
    fabric = two_tor_fabric()
    fabric.servers["s11"] = replace(fabric.servers["s11"], link_rate=rate)
    return fabric


def gold(i: int, server: str = "s11") -> Vm:
    return Vm(
        f"g{i}", f"00:00:0a:00:10:{i:02x}", (f"192.168.1.{100 + i}",), 5000, server, 100 + i, "gold"
    )


def test_guarantees_above_the_link_are_refused_in_a_whole_state():
    fabric = fabric_with_link(20_000_000)
    validate(fabric, [gold(1), gold(2)])  # 16 Mbit/s each way: fits
    with pytest.raises(ValidationError) as info:
        validate(fabric, [gold(1), gold(2), gold(3)])
    why = "on server s11 would add up to 24 Mbit/s, above its link_rate of 20 Mbit/s"
    assert info.value.problems == [
        Problem(
            "server s11",
            "link_rate",
            f"the rates guaranteed (cir) to traffic sent by the VMs {why}",
        ),
        Problem(
            "server s11",
            "link_rate",
            f"the rates guaranteed (cir) to traffic delivered to the VMs {why}",
        ),
    ]
    # Without a link rate, or on another server, nothing is checked.
    validate(two_tor_fabric(), [gold(1), gold(2), gold(3)])
    validate(fabric, [gold(1), gold(2), gold(3, "s12")])


def test_the_api_path_refuses_what_would_overfill_a_link_and_changes_nothing(tmp_path):
    controller = Controller(fabric_with_link(20_000_000), bmv2_pipeline(), Store(tmp_path / "s.db"))
    controller.attach(gold(1))
    controller.attach(gold(2))
    plain = Vm("p1", "00:00:0a:00:20:01", ("192.168.1.201",), 5000, "s11", 201)
    elsewhere = gold(3, "s12")
    controller.attach(plain)
    controller.attach(elsewhere)
    before = controller_state(controller)
    for change in (
        lambda: controller.attach(gold(4)),  # a third gold VM
        lambda: controller.set_qos("p1", "gold"),  # a policy that makes it three
        lambda: controller.migrate("g3", "s11", vlan=103, timeout=0),  # one moved in
    ):
        with pytest.raises(ValidationError) as info:
            change()
        [problem] = [p for p in info.value.problems if "delivered to" in p.message]
        assert problem.field == "qos"
        assert "would add up to 24 Mbit/s, above its link_rate of 20 Mbit/s" in problem.message
        assert controller_state(controller) == before
    # Room made, the same change passes.
    controller.detach("g1")
    controller.set_qos("p1", "gold")
    assert controller.vms["p1"].qos == "gold"
    with pytest.raises(ValidationError):
        controller.attach(gold(4))


# --- buckets TCP can use (qos_bursts.py) ---------------------------------------------------


def with_policies(tmp_path: Path, policies: str) -> tuple[Path, int]:
    """The example fabric file with ``policies`` (YAML lines) as its
    qos_policies; the path, and the line of the first policy."""
    path = tmp_path / "fabric.yaml"
    text = (EXAMPLES / "fabric.yaml").read_text()
    start = text.index("qos_policies:")
    path.write_text(text[:start] + "qos_policies:\n" + policies)
    return path, text[:start].count("\n") + 2


def test_a_policy_without_buckets_gets_ones_tcp_can_use(tmp_path, caplog):
    from p4vtep.model.qos_bursts import default_burst

    path, _ = with_policies(
        tmp_path,
        "  - name: bronze\n"
        "    tx: {cir: 625000, pir: 625000}\n"
        "    rx: {cir: 625000, cburst: 300000, pir: 250000000}\n",
    )
    with caplog.at_level("WARNING", logger="p4vtep.sources.fabric_file"):
        fabric = load_fabric(path)
    bronze = fabric.policies["bronze"]
    assert (bronze.tx.cburst, bronze.tx.pburst) == (262144, 262144)  # the 256 KiB floor
    assert (bronze.rx.cburst, bronze.rx.pburst) == (300000, 2500000)  # given; 10 ms at 2 Gbit/s
    assert default_burst(250_000_000) == 2_500_000
    assert caplog.records == []


def test_a_bucket_too_small_for_tcp_is_warned_about_with_its_line(tmp_path, caplog):
    path, line = with_policies(
        tmp_path,
        "  - name: bronze\n"
        "    tx: {cir: 625000, cburst: 62500, pir: 625000}\n"
        "  - name: fast\n"
        "    rx: {cir: 1250000000, cburst: 1000000, pir: 1250000000}\n",
    )
    with caplog.at_level("WARNING", logger="p4vtep.sources.fabric_file"):
        load_fabric(path)
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}:{line}: qos_policies[0]: qos bronze: tx.cburst 62500 B is below 131072 B: "
        "TCP through this policer may stay well below 625000 B/s; leave it out for the "
        "default (262144 B)",
        f"{path}:{line + 2}: qos_policies[1]: qos fast: rx.cburst 1000000 B is below 1250000 B: "
        "TCP through this policer may stay well below 1250000000 B/s; leave it out for the "
        "default (12500000 B)",
    ]
