"""The per-VM checks hold on every way a VM arrives: the inventory file, the
API and libvirt all reach check_vm through the controller's commit. A bad VM
is refused with the same message on each path, and nothing already desired
(VMs, version, what each ToR must hold) changes."""

from __future__ import annotations

import grpc
import pytest
import yaml
from fabric_fixture import two_tor_fabric
from helpers import api_client, controller_state
from p4vtep.api import overlay_pb2 as pb
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Server, Vm
from p4vtep.model.validation import ValidationError
from p4vtep.sources.inventory_file import InventoryWatcher
from p4vtep.state.sqlite_store import Store

KEEP = Vm("keep", "00:00:0a:00:00:09", ("192.168.1.9",), 5000, "s11", 19, source="api")
GOOD = {
    "name": "a1",
    "mac": "00:00:0a:00:00:01",
    "ips": ["192.168.1.1"],
    "vni": 5000,
    "server": "s21",
    "vlan": 10,
}
NOT_HOST = "is not a unicast host address"
CTRL = "control or invisible character"


def ip_refused(ip: str, why: str) -> tuple[dict, str]:
    return {"ips": [ip]}, f"vm a1: ips: {ip} {NOT_HOST} ({why})"


# (what differs from GOOD, the one problem it has)
BAD = [
    ip_refused("0.0.0.0", "0.0.0.0/8: this network, unspecified"),
    ip_refused("127.0.0.1", "127.0.0.0/8: loopback"),
    ip_refused("224.0.0.251", "224.0.0.0/4: multicast"),
    ip_refused("255.255.255.255", "the limited broadcast address"),
    ({"ips": ["192.168.1.1", "192.168.1.1"]}, "vm a1: ips: 192.168.1.1 is listed twice"),
    (
        {"mac": "00:00:00:00:00:00"},
        "vm a1: mac: 00:00:00:00:00:00 is the zero MAC, which no host has",
    ),
    ({"name": "a1\nvm a2"}, f"vm 'a1\\nvm a2': name: contains U+000A (Cc: {CTRL})"),
    ({"name": "a\tb"}, f"vm 'a\\tb': name: contains U+0009 (Cc: {CTRL})"),
    ({"name": "x" * 65}, f"vm {'x' * 65}: name: 65 characters, longer than 64"),
]


@pytest.fixture
def controller(tmp_path):
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    controller.attach(KEEP)
    return controller


@pytest.mark.parametrize("change,message", BAD)
def test_inventory_file_refuses_a_bad_vm(tmp_path, controller, change, message):
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"vms": [{**GOOD, **change}]}))
    before = controller_state(controller)
    watcher = InventoryWatcher(controller, path)
    with pytest.raises(ValidationError) as info:
        watcher.load_now()
    assert [str(p) for p in info.value.problems] == [message]
    assert controller_state(controller) == before

    path.write_text(yaml.safe_dump({"vms": [GOOD]}))  # the same file, fixed, is taken
    watcher.load_now()
    assert set(controller.vms) == {"keep", "a1"}


@pytest.mark.parametrize("change,message", BAD)
def test_api_refuses_a_bad_vm(controller, change, message):
    before = controller_state(controller)
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=pb.VM(**{**GOOD, **change})))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == message
    assert controller_state(controller) == before


def test_api_refuses_an_empty_name_before_the_controller_sees_it(controller):
    before = controller_state(controller)
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=pb.VM(**{**GOOD, "name": ""})))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == "vm: name: a name is required"
    assert controller_state(controller) == before


def test_an_empty_name_from_a_file_is_refused(tmp_path, controller):
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"vms": [{**GOOD, "name": ""}]}))
    with pytest.raises(ValidationError) as info:
        InventoryWatcher(controller, path).load_now()
    assert [str(p) for p in info.value.problems] == ["vm '': name: a name is required"]
    assert set(controller.vms) == {"keep"}


def test_migrate_and_qos_go_through_the_same_checks(controller):
    """A change the API builds from a stored VM is checked like a new one."""
    before = controller_state(controller)
    with pytest.raises(ValidationError, match="vm keep: vlan: 0 outside 1-4094"):
        controller.migrate("keep", "s21", 0)
    with pytest.raises(ValidationError, match="vm keep: qos: unknown QoS policy 'platinum'"):
        controller.set_qos("keep", "platinum")
    assert controller_state(controller) == before


def test_libvirt_refuses_a_bad_vm(tmp_path):
    pytest.importorskip("libvirt", reason="libvirt-python not installed")
    from libvirt_xml import NODE, domain
    from p4vtep.sources.libvirt_domains import LibvirtSource

    node = tmp_path / "s11.xml"
    node.write_text(NODE)
    fabric = two_tor_fabric()
    fabric.servers["s11"] = Server("s11", "tor1", 1, f"test://{node}")
    controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
    source = LibvirtSource(controller, {"s11": f"test://{node}"})
    source.start()
    try:
        conn = source.connections["s11"]
        conn.defineXML(domain("web-1", "52:54:00:aa:00:01", 10, ips=("127.0.0.2",))).create()
        before = controller_state(controller)
        assert source.resync()
        assert source.errors == [f"vm web-1: ips: 127.0.0.2 {NOT_HOST} (127.0.0.0/8: loopback)"]
        assert controller_state(controller) == before
    finally:
        source.stop()


def test_every_input_stores_ipv6_in_canonical_form(tmp_path):
    """The inventory file, the API and libvirt keep an IPv6 address as RFC
    5952 writes it, so two spellings are one address everywhere after them;
    IPv4 and what is no address pass as given, for check_vm to judge."""
    from libvirt_xml import domain
    from p4vtep.api.messages import vm_from_pb
    from p4vtep.sources.fabric_file import load_inventory
    from p4vtep.sources.libvirt_domains import parse_domain

    given = ("192.168.1.1", "2001:0DB8:0:0::0001", "2001:db8::zz")
    stored = ("192.168.1.1", "2001:db8::1", "2001:db8::zz")
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"vms": [{**GOOD, "ips": list(given)}]}))
    assert load_inventory(path)[0].ips == stored
    assert vm_from_pb(pb.VM(**{**GOOD, "ips": list(given)}), "api").ips == stored
    vm = parse_domain(domain("web-1", "52:54:00:aa:00:01", 10, ips=given), "s11")
    assert vm is not None
    assert vm.ips == stored
