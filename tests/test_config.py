from pathlib import Path

import pytest
from p4vtep.model.validation import validate
from p4vtep.sources.fabric_file import ConfigError, load_fabric, load_inventory

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
    path = write(
        tmp_path,
        "vms:\n  - {name: a1, mac: '00:00:0a:00:00:01', vni: 5000,\n     server: s11, vlan: ten}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_inventory(path)
    assert str(info.value) == f"{path}:3: vms[0].vlan: expected an integer, got 'ten'"


def test_missing_field(tmp_path):
    path = write(
        tmp_path, "vms:\n  - name: a1\n    mac: '00:00:0a:00:00:01'\n    vni: 5000\n    vlan: 10\n"
    )
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


def test_tls_section(tmp_path):
    for name in ("ca.pem", "c.pem", "c.key"):
        (tmp_path / name).write_text("x")
    text = (EXAMPLES / "fabric.yaml").read_text() + (
        f"tls:\n"
        f"  p4runtime: {{ca: {tmp_path}/ca.pem, cert: {tmp_path}/c.pem, key: {tmp_path}/c.key}}\n"
        f"  api: {{ca: {tmp_path}/ca.pem, cert: {tmp_path}/c.pem, key: {tmp_path}/nope.key}}\n"
    )
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"tls.api.key: no such file: .*nope.key"):
        load_fabric(path)
    path.write_text(text.replace("nope.key", "c.key"))
    fabric = load_fabric(path)
    assert fabric.p4runtime_tls.ca == f"{tmp_path}/ca.pem"
    assert fabric.api_tls.key == f"{tmp_path}/c.key"


def fabric_with(tmp_path, store: str):
    text = (EXAMPLES / "fabric.yaml").read_text() + store
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    return path


def test_store_section_selects_etcd(tmp_path):
    from p4vtep.sources.fabric_file import load_store

    assert load_store(EXAMPLES / "fabric.yaml") is None  # no section: SQLite
    path = fabric_with(
        tmp_path, "store:\n  etcd:\n    endpoints: [10.0.0.11:2379, 10.0.0.12:2379]\n"
    )
    settings = load_store(path)
    assert settings is not None
    assert settings.endpoints == ("10.0.0.11:2379", "10.0.0.12:2379")
    assert settings.prefix == "/p4vtep"
    assert settings.tls is None
    assert load_fabric(path).tors  # the rest of the file still loads


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("store:\n  zookeeper: {}\n", r"fabric.yaml:\d+: store: expected exactly one store kind"),
        ("store:\n  etcd:\n    prefix: /x\n", r"store.etcd.endpoints: missing"),
        (
            "store:\n  etcd:\n    endpoints: [nohost]\n",
            r"store.etcd: etcd endpoint must be host:port",
        ),
        (
            "store:\n  etcd:\n    endpoints: [a:1]\n    prefix: x/\n",
            r"store.etcd: etcd prefix must start and not end with '/'",
        ),
        ("store:\n  etcd:\n    endpoints: [a:1]\n    ttl: 3\n", r"store.etcd.ttl: unknown field"),
        (
            "store:\n  etcd:\n    endpoints: [a:1]\n"
            "    tls: {ca: /nope, cert: /nope, key: /nope}\n",
            r"store.etcd.tls.ca: no such file: /nope",
        ),
    ],
)
def test_store_section_errors_name_file_and_field(tmp_path, store, message):
    from p4vtep.sources.fabric_file import load_store

    with pytest.raises(ConfigError, match=message):
        load_store(fabric_with(tmp_path, store))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--etcd", "127.0.0.1:1"], "etcd replicas need --replica-id"),
        (["--etcd", "nohost", "--replica-id", "r1"], "--etcd nohost: etcd endpoint must be"),
        (
            ["--etcd", "127.0.0.1:1", "--replica-id", "r1", "--inventory", "missing.yaml"],
            "missing.yaml: cannot read",
        ),
    ],
)
def test_controller_run_refuses_bad_replica_flags(capsys, flags, message):
    """Refused before anything starts (nothing listens, no etcd is asked;
    at 127.0.0.1:1 none would answer): a replica checks its inventory file
    at start as a single controller does, though only the leader applies it."""
    from p4vtep import cli

    args = ["controller", "run", "--fabric", str(EXAMPLES / "fabric.yaml"), *flags]
    assert cli.main(args) == 2
    assert message in capsys.readouterr().err


def test_inventory_ipv6_is_kept_in_canonical_form(tmp_path):
    """RFC 5952 whatever the spelling (upper case, leading zeros, zero groups
    written out: decimal groups too, which YAML 1.1 reads as a base-60
    number); IPv4 and what is no address as written, for validation to judge."""
    path = write(
        tmp_path,
        "vms:\n"
        "  - name: a1\n"
        "    mac: '00:00:0a:00:00:01'\n"
        "    ips: [192.168.1.1, '2001:0DB8:0000:0000::0001', 2001:0:0:0:0:0:0:1,\n"
        "          FD00:A::B, '2001:db8::1.2.3.4', '2001:db8:::1']\n"
        "    vni: 5000\n"
        "    server: s11\n"
        "    vlan: 10\n"
        "  - {name: a2, mac: '00:00:0a:00:00:02', ips: 2001:db8:0:0::2, vni: 5000, server: s21,\n"
        "     vlan: 20}\n",
    )
    a1, a2 = load_inventory(path)
    assert a1.ips == (
        "192.168.1.1",
        "2001:db8::1",
        "2001::1",
        "fd00:a::b",
        "2001:db8::102:304",
        "2001:db8:::1",
    )
    assert a2.ips == ("2001:db8::2",)
