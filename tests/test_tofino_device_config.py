"""The p4_device_config for bf_switchd's P4Runtime server (bf-drivers' PI
backend), byte for byte, and the controller pointed at a Tofino ToR."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4vtep.dataplane import artifacts
from p4vtep.dataplane.targets import Target, profile
from p4vtep.dataplane.tofino_config import DeviceConfigError, TofinoDeviceConfig
from p4vtep.sources.fabric_file import ConfigError, load_fabric


def test_pack_is_the_servers_length_prefixed_layout() -> None:
    config = TofinoDeviceConfig("p4vtep", b"\x01\x02\x03", b'{"c":1}', "pipe", b'{"b":2}')
    expected = (
        b"\x06\x00\x00\x00" + b"p4vtep"
        + b"\x03\x00\x00\x00" + b"\x01\x02\x03"
        + b"\x07\x00\x00\x00" + b'{"c":1}'
        + b"\x04\x00\x00\x00" + b"pipe"
        + b"\x07\x00\x00\x00" + b'{"b":2}'
    )  # fmt: skip
    assert config.pack() == expected
    assert TofinoDeviceConfig.unpack(expected) == config


def test_without_bfrt_the_pipeline_name_length_is_zero() -> None:
    # The server reads that length unconditionally: it must be there, as 0.
    packed = TofinoDeviceConfig("p", b"B", b"C", "", None).pack()
    assert packed == b"\x01\x00\x00\x00p\x01\x00\x00\x00B\x01\x00\x00\x00C\x00\x00\x00\x00"
    assert TofinoDeviceConfig.unpack(packed).bfrt_json is None


@pytest.mark.parametrize(
    "config, message",
    [
        (TofinoDeviceConfig("", b"B", b"C", "", None), "must not be empty"),
        (TofinoDeviceConfig("x" * 101, b"B", b"C", "", None), "at most 100"),
        (TofinoDeviceConfig("a/b", b"B", b"C", "", None), "NUL or '/'"),
        (TofinoDeviceConfig("p", b"", b"C", "", None), "must not be empty"),
        (TofinoDeviceConfig("p", b"B", b"C", "pipe", None), "go together"),
        (TofinoDeviceConfig("p", b"B", b"C", "", b"{}"), "go together"),
    ],
)
def test_bad_input_is_refused(config: TofinoDeviceConfig, message: str) -> None:
    with pytest.raises(DeviceConfigError, match=message):
        config.pack()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x01\x00", "no chunk length"),
        (b"\x09\x00\x00\x00abc", "truncated"),
        (TofinoDeviceConfig("p", b"B", b"C", "", None).pack() + b"x", "after the last chunk"),
    ],
)
def test_unpack_refuses_damaged_configs(data: bytes, message: str) -> None:
    with pytest.raises(DeviceConfigError, match=message):
        TofinoDeviceConfig.unpack(data)


def _fake_compiler_output(root: Path, chip: str) -> Path:
    pipe = root / "pipe"
    pipe.mkdir(parents=True)
    (pipe / f"{chip}.bin").write_bytes(b"\x00BIN" * 3)
    (pipe / "context.json").write_bytes(b'{"program_name": "p4vtep"}')
    (root / "bf-rt.json").write_bytes(b'{"schema_version": "1.0.0"}')
    return root


@pytest.mark.parametrize("target", [Target.TOFINO, Target.TOFINO2])
def test_tofino_pipeline_packs_the_compiler_output(tmp_path, monkeypatch, target) -> None:
    chip = profile(target).p4c_target
    out = _fake_compiler_output(tmp_path, chip)
    monkeypatch.setenv("P4VTEP_TOFINO_OUT", str(out))
    pipeline = artifacts.pipeline_for(target)
    unpacked = TofinoDeviceConfig.unpack(pipeline.device_config)
    assert unpacked.program_name == "p4vtep"
    assert unpacked.binary == (out / "pipe" / f"{chip}.bin").read_bytes()
    assert unpacked.context_json == (out / "pipe" / "context.json").read_bytes()
    assert unpacked.pipeline_name == "pipe"
    assert unpacked.bfrt_json == (out / "bf-rt.json").read_bytes()
    build = artifacts.tofino_build_dir(target)
    # Its own P4Info, with the same names as v1model's (test_p4info_parity).
    assert pipeline.p4info_path == build / "p4vtep.p4info.txtpb"
    assert pipeline.p4info.table("VtepIngress.l2_forwarding.mac_table").preamble.id


def test_missing_binary_says_how_to_build_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("P4VTEP_TOFINO_OUT", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make p4-tofino"):
        _ = artifacts.pipeline_for(Target.TOFINO).device_config


EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "fabric.yaml"


def _fabric(**targets: str) -> str:
    """The example fabric with a `target:` line added to the named ToRs."""
    text = EXAMPLE.read_text()
    for tor, line in targets.items():
        text = text.replace(f"  - name: {tor}\n", f"  - name: {tor}\n    {line}\n")
    return text


@pytest.mark.parametrize(
    "line, expected", [("", "bmv2"), ("target: tofino", "tofino"), ("target: tofino2", "tofino2")]
)
def test_fabric_file_names_the_target(tmp_path, line, expected) -> None:
    path = tmp_path / "fabric.yaml"
    path.write_text(_fabric(tor1=line))
    assert load_fabric(path).tors["tor1"].target == expected


def test_unknown_target_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "fabric.yaml"
    path.write_text(_fabric(tor1="target: tofino3"))
    with pytest.raises(ConfigError, match=r"tors\[0\]\.target.*unknown target 'tofino3'"):
        load_fabric(path)


def test_controller_gives_each_tor_its_targets_pipeline(tmp_path, monkeypatch) -> None:
    from p4vtep.controller import Controller

    out = _fake_compiler_output(tmp_path / "out", "tofino")
    monkeypatch.setenv("P4VTEP_TOFINO_OUT", str(out))
    text = _fabric(tor1="target: tofino")
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    bmv2 = artifacts.bmv2_pipeline()
    controller = Controller(load_fabric(path), bmv2)
    tofino_sup, bmv2_sup = controller.supervisors["tor1"], controller.supervisors["tor2"]
    assert bmv2_sup.pipeline is bmv2
    assert tofino_sup.pipeline.p4info_path == artifacts.tofino_build_dir(Target.TOFINO) / (
        "p4vtep.p4info.txtpb"
    )
    TofinoDeviceConfig.unpack(tofino_sup.pipeline.device_config)
    # Entries for the Tofino ToR carry the Tofino P4Info's ids.
    name = "VtepIngress.l2_forwarding.mac_table"
    assert controller.tor_entries["tor1"].p4info.table(name).preamble.id == (
        tofino_sup.pipeline.p4info.table(name).preamble.id
    )
