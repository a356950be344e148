"""Port security through every input (docs/security.md): the inventory file,
libvirt's metadata, the API (AttachVM, SetPortSecurity on a running VM, the
counters) and the CLI take the VM's flags and allowed pairs; a bad one is
refused with the same message as the model's and changes nothing."""

from __future__ import annotations

from dataclasses import replace

import grpc
import pytest
import yaml
from fabric_fixture import dual_stack_fabric, dual_stack_vms, two_tor_fabric
from helpers import api_client, controller_state
from libvirt_xml import domain
from p4vtep import events
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api.messages import vm_from_pb, vm_to_pb
from p4vtep.cli.main import main as cli_main
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import AllowedPair, Vm
from p4vtep.model.validation import ValidationError
from p4vtep.sources.fabric_file import ConfigError, load_inventory
from p4vtep.sources.libvirt_domains import MetadataError, parse_domain
from p4vtep.state.sqlite_store import Store

WEB, DB, FW, B1 = dual_stack_vms()  # web-1, db-1, fw (VRF red), b1 (L2 VNI 6000)
VIP = AllowedPair("192.168.1.100/32", "00:00:5e:00:01:07")  # a VRRP address and MAC
BOTH_OK = "2001:db8:1::64/128"
NOT_UNICAST = "a pair is a unicast range a VM may send from"


@pytest.fixture
def controller(tmp_path):
    controller = Controller(dual_stack_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    for vm in dual_stack_vms():
        controller.attach(replace(vm, source="api"))
    return controller


def test_the_api_takes_and_returns_port_security(controller):
    message = vm_to_pb(replace(WEB, name="web-2", mac="00:00:0a:00:00:02", ips=("192.168.1.2",)))
    message.vlan, message.server = 12, "s12"
    message.port_security = False
    message.dhcp_server = True
    message.allowed_pairs.add(prefix="192.168.1.100", mac="00:00:5E:00:01:07")
    message.allowed_pairs.add(prefix="2001:DB8:1::64")
    with api_client(controller) as (client, _):
        reply = client.AttachVM(pb.AttachVMRequest(vm=message))
        got = client.GetVM(pb.GetVMRequest(name="web-2"))
    vm = controller.vms["web-2"]
    assert (vm.port_security, vm.dhcp_server) == (False, True)
    assert vm.allowed_pairs == (VIP, AllowedPair(BOTH_OK))
    for shown in (reply.vm, got):
        assert shown.HasField("port_security")
        assert not shown.port_security
        assert [(p.prefix, p.mac) for p in shown.allowed_pairs] == [
            ("192.168.1.100/32", "00:00:5e:00:01:07"),
            (BOTH_OK, ""),
        ]


def test_an_unset_port_security_is_on():
    message = vm_to_pb(WEB)
    message.ClearField("port_security")
    assert vm_from_pb(message, "api").port_security is True
    assert vm_from_pb(vm_to_pb(replace(WEB, port_security=False)), "api").port_security is False


def test_set_port_security_changes_a_running_vm(controller):
    seen = controller.bus.subscribe()
    with api_client(controller) as (client, _):
        reply = client.SetPortSecurity(
            pb.SetPortSecurityRequest(
                name="web-1",
                dhcp_server=True,
                add_pairs=[pb.AllowedPair(prefix="192.168.1.100", mac="00:00:5e:00:01:07")],
            )
        )
        assert reply.version == controller.version
        assert controller.vms["web-1"].allowed_pairs == (VIP,)
        assert controller.vms["web-1"].dhcp_server is True
        client.SetPortSecurity(
            pb.SetPortSecurityRequest(
                name="web-1",
                port_security=False,
                remove_pairs=[pb.AllowedPair(prefix="192.168.1.100/32", mac="00:00:5e:00:01:07")],
                add_pairs=[pb.AllowedPair(prefix="10.9.0.0/16")],
            )
        )
        vm = controller.vms["web-1"]
        assert (vm.port_security, vm.dhcp_server) == (False, True)
        assert vm.allowed_pairs == (AllowedPair("10.9.0.0/16"),)
        version = controller.version  # adding what it has changes nothing
        client.SetPortSecurity(
            pb.SetPortSecurityRequest(
                name="web-1", add_pairs=[pb.AllowedPair(prefix="10.9.0.0/16")]
            )
        )
        assert controller.version == version
        client.SetPortSecurity(
            pb.SetPortSecurityRequest(name="web-1", port_security=True, clear_pairs=True)
        )
        assert controller.vms["web-1"].allowed_pairs == ()
        assert controller.vms["web-1"].port_security is True
    changes = []
    while not seen.empty():
        event = seen.get()
        if isinstance(event, events.DesiredStateChanged):
            changes.append((event.vm, event.change))
    assert changes == [("web-1", events.PORT_SECURITY)] * 3


@pytest.mark.parametrize(
    "request_fields,code,message",
    [
        (
            {"name": "web-1", "remove_pairs": [pb.AllowedPair(prefix="10.9.0.0/16")]},
            grpc.StatusCode.INVALID_ARGUMENT,
            "vm web-1: allowed_pairs: 10.9.0.0/16 is not one of its pairs (it has none)",
        ),
        (
            {"name": "web-1", "add_pairs": [pb.AllowedPair(prefix="192.168.1.3")]},
            grpc.StatusCode.INVALID_ARGUMENT,
            "vm web-1: allowed_pairs: 192.168.1.3/32 contains 192.168.1.3, the address of vm fw "
            "in VRF red: a pair may not let a VM pose as another VM",
        ),
        (
            # fw is the default routes' next hop: it cannot turn port security on
            {"name": "fw", "port_security": True},
            grpc.StatusCode.INVALID_ARGUMENT,
            "vm fw: allowed_pairs: 192.168.1.3 is the next hop of vrf red's route 0.0.0.0/0",
        ),
        ({"name": "nope", "dhcp_server": True}, grpc.StatusCode.NOT_FOUND, "no VM named 'nope'"),
    ],
)
def test_a_refused_port_security_change_changes_nothing(controller, request_fields, code, message):
    before = controller_state(controller)
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.SetPortSecurity(pb.SetPortSecurityRequest(**request_fields))
    assert info.value.code() == code
    assert info.value.details().startswith(message)
    assert controller_state(controller) == before


def test_a_refused_attach_changes_nothing(controller):
    before = controller_state(controller)
    message = vm_to_pb(Vm("vip", "00:00:0a:00:00:99", ("192.168.1.99",), 5000, "s12", 99))
    message.allowed_pairs.add(prefix="192.168.1.1")
    with api_client(controller) as (client, _), pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=message))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        "vm vip: allowed_pairs: 192.168.1.1/32 contains 192.168.1.1, the address of vm web-1 "
        "in VRF red: a pair may not let a VM pose as another VM"
    )
    assert controller_state(controller) == before


def test_the_cli_attaches_shows_and_changes_port_security(controller, capsys):
    with api_client(controller) as (_, address):
        command = ["--api", address, "vm", "attach", "web-2", "--mac", "00:00:0a:00:00:02"]
        command += ["--ip", "192.168.1.2", "--vni", "5000", "--server", "s12", "--vlan", "12"]
        command += ["--allowed-pair", "192.168.1.100,00:00:5e:00:01:07"]
        command += ["--allowed-pair", "10.9.0.0/16", "--dhcp-server", "--no-wait"]
        assert cli_main(command) == 0
        vm = controller.vms["web-2"]
        assert vm.allowed_pairs == (VIP, AllowedPair("10.9.0.0/16"))
        assert (vm.port_security, vm.dhcp_server) == (True, True)
        capsys.readouterr()
        assert cli_main(["--api", address, "vm", "list", "--vni", "5000"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split()[-2:] == ["SECURITY", "PAIRS"]
        row = next(line.split() for line in lines if line.startswith("web-2"))
        assert row[-2:] == ["on,dhcp-server", "192.168.1.100/32,00:00:5e:00:01:07;10.9.0.0/16"]
        assert cli_main(["--api", address, "vm", "show", "web-2"]) == 0
        shown = capsys.readouterr().out.splitlines()
        assert "security on,dhcp-server" in shown
        assert "pairs    192.168.1.100/32 mac 00:00:5e:00:01:07" in shown
        assert "         10.9.0.0/16" in shown
        command = ["--api", address, "vm", "port-security", "web-2", "off", "--no-dhcp-server"]
        command += ["--remove-pair", "10.9.0.0/16", "--add-pair", BOTH_OK, "--no-wait"]
        assert cli_main(command) == 0
        vm = controller.vms["web-2"]
        assert (vm.port_security, vm.dhcp_server) == (False, False)
        assert vm.allowed_pairs == (VIP, AllowedPair(BOTH_OK))
        assert "off" in capsys.readouterr().out.splitlines()[2].split()
        command = ["--api", address, "vm", "port-security", "web-2", "--add-pair", "192.168.1.1"]
        assert cli_main(command) == 1
        assert "INVALID_ARGUMENT: vm web-2: allowed_pairs: 192.168.1.1/32 contains" in (
            capsys.readouterr().err
        )
        assert cli_main(["--api", address, "vm", "port-security", "web-2", "--clear-pairs"]) == 0
        assert controller.vms["web-2"].allowed_pairs == ()


# --- the inventory file and libvirt --------------------------------------------------------


def write(tmp_path, vms: list[dict]):
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"vms": vms}, sort_keys=False))
    return path


GOOD = {"name": "a1", "mac": "00:00:0a:00:00:01", "ips": ["192.168.1.1"], "vni": 5000}
GOOD |= {"server": "s11", "vlan": 10}


def test_the_inventory_file_takes_port_security(tmp_path):
    pairs = ["192.168.1.100,00:00:5E:00:01:07", {"prefix": "2001:DB8:1::64"}]
    pairs.append({"prefix": "10.9.0.0/16", "mac": "00:00:5e:00:01:08"})
    a1, a2 = load_inventory(
        write(
            tmp_path,
            [
                {**GOOD, "allowed_pairs": pairs, "dhcp_server": True},
                {**GOOD, "name": "a2", "port_security": False},
            ],
        )
    )
    assert a1.allowed_pairs == (
        VIP,
        AllowedPair(BOTH_OK),
        AllowedPair("10.9.0.0/16", "00:00:5e:00:01:08"),
    )
    assert (a1.port_security, a1.dhcp_server) == (True, True)
    assert (a2.port_security, a2.dhcp_server, a2.allowed_pairs) == (False, False, ())


@pytest.mark.parametrize(
    "change,message",
    [
        ({"port_security": "no"}, "vms[0].port_security: expected true or false, got 'no'"),
        ({"dhcp_server": 1}, "vms[0].dhcp_server: expected true or false, got 1"),
        ({"allowed_pairs": "10.9.0.0/16"}, "vms[0].allowed_pairs: expected a list"),
        (
            {"allowed_pairs": [{"prefix": "10.9.0.0/16", "vmac": "x"}]},
            "vms[0].allowed_pairs[0].vmac: unknown field (expected prefix, mac)",
        ),
        (
            {"allowed_pairs": [["10.9.0.0/16"]]},
            "vms[0].allowed_pairs[0]: expected PREFIX, PREFIX,MAC or {prefix, mac}, "
            "got ['10.9.0.0/16']",
        ),
    ],
)
def test_the_inventory_file_names_the_line_of_a_bad_field(tmp_path, change, message):
    path = write(tmp_path, [{**GOOD, **change}])
    with pytest.raises(ConfigError) as info:
        load_inventory(path)
    assert str(info.value).endswith(message)
    assert str(info.value).startswith(f"{path}:")


def test_the_inventory_watcher_refuses_a_bad_pair_and_changes_nothing(tmp_path):
    from p4vtep.sources.inventory_file import InventoryWatcher

    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    path = write(tmp_path, [GOOD])
    watcher = InventoryWatcher(controller, path)
    watcher.load_now()
    before = controller_state(controller)
    write(tmp_path, [{**GOOD, "allowed_pairs": ["127.0.0.1"]}])
    with pytest.raises(ValidationError) as info:
        watcher.load_now()
    assert str(info.value) == (
        f"vm a1: allowed_pairs: 127.0.0.1/32 overlaps 127.0.0.0/8: loopback: {NOT_UNICAST}"
    )
    assert controller_state(controller) == before


def test_libvirt_metadata_takes_port_security():
    meta = "<p4vtep:vni>5000</p4vtep:vni><p4vtep:ip>192.168.1.10</p4vtep:ip>"
    meta += '<p4vtep:allowed_pair mac="00:00:5E:00:01:07">192.168.1.100</p4vtep:allowed_pair>'
    meta += "<p4vtep:allowed_pair>2001:DB8:1::64</p4vtep:allowed_pair>"
    meta += "<p4vtep:port_security>false</p4vtep:port_security>"
    meta += "<p4vtep:dhcp_server> True </p4vtep:dhcp_server>"
    vm = parse_domain(domain("web-1", "52:54:00:aa:00:01", 10, meta=meta), "s11")
    assert vm is not None
    assert vm.allowed_pairs == (VIP, AllowedPair(BOTH_OK))
    assert (vm.port_security, vm.dhcp_server) == (False, True)
    plain = parse_domain(domain("web-1", "52:54:00:aa:00:01", 10), "s11")
    assert plain is not None
    assert (plain.port_security, plain.dhcp_server, plain.allowed_pairs) == (True, False, ())
    bad = "<p4vtep:vni>5000</p4vtep:vni><p4vtep:port_security>off</p4vtep:port_security>"
    with pytest.raises(MetadataError) as info:
        parse_domain(domain("web-1", "52:54:00:aa:00:01", 10, meta=bad), "s11")
    assert str(info.value) == (
        "domain web-1 on s11: port_security: expected true or false, got 'off'"
    )


def test_the_counters_response_and_metrics_carry_the_drops_by_reason():
    from p4vtep.api.counters import Counters, Traffic, VmCounters
    from p4vtep.api.messages import counters_response
    from p4vtep.dataplane.entries import PORT_SECURITY_REASONS

    reasons = [r.name.lower() for r in PORT_SECURITY_REASONS]
    assert reasons == [
        "spoofed_ip",
        "spoofed_arp",
        "spoofed_nd",
        "ra_from_vm",
        "dhcp_server_from_vm",
    ]
    drops = {reason: Traffic(n, 100 * n) for n, reason in enumerate(reasons)}
    counters = Counters(
        vms=[VmCounters("web-1", "tor1", Traffic(9, 900), Traffic(0, 0), {}, drops)]
    )
    [row] = counters_response(counters).vms
    assert [(d.reason, d.dropped.packets, d.dropped.bytes) for d in row.port_security_drops] == [
        (reason, n, 100 * n) for n, reason in enumerate(reasons)
    ]
