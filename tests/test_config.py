from pathlib import Path

import pytest

from p4vtep.config import ConfigError, load_fabric, load_inventory
from p4vtep.validation import validate

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def test_examples_load_and_validate():
    fabric = load_fabric(EXAMPLES / "fabric.yaml")
    vms = load_inventory(EXAMPLES / "inventory.yaml")
    validate(fabric, vms)
    assert set(fabric.tors) == {"tor1", "tor2"}
    assert fabric.tors["tor1"].uplinks[1].port == 4
    assert fabric.policies["gold"].rx.pir == 2_000_000
    assert [vm.name for vm in vms] == ["a1", "a2", "b1", "b2"]
    assert vms[0].ips == ("192.168.1.1",)


def write(tmp_path, text):
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    return path


def test_error_names_file_line_and_field(tmp_path):
    path = write(tmp_path, "vms:\n  - {name: a1, mac: '00:00:0a:00:00:01', vni: 5000,\n"
                           "     server: s11, vlan: ten}\n")
    with pytest.raises(ConfigError) as info:
        load_inventory(path)
    assert str(info.value) == f"{path}:3: vms[0].vlan: expected an integer, got 'ten'"


def test_missing_field(tmp_path):
    path = write(tmp_path, "vms:\n  - name: a1\n    mac: '00:00:0a:00:00:01'\n    vni: 5000\n"
                           "    vlan: 10\n")
    with pytest.raises(ConfigError, match=r":2: vms\[0\].server: missing"):
        load_inventory(path)


def test_not_yaml(tmp_path):
    path = write(tmp_path, "vms: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_inventory(path)


def test_duplicate_key(tmp_path):
    path = write(tmp_path, "vms:\n  - name: a1\n    name: a2\n")
    with pytest.raises(ConfigError, match=r":3: vms\[0\].name: given twice"):
        load_inventory(path)
