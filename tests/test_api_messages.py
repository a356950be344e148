"""The one VM <-> p4vtep.v1.VM conversion."""

import pytest
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api.messages import vm_from_pb, vm_to_pb
from p4vtep.model import Vm
from p4vtep.validation import ValidationError


def test_round_trip_keeps_every_field():
    for vm in (
        Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1", "10.0.0.9"), 5000, "s11", 10, "gold", "api"),
        Vm("b1", "00:00:0b:00:00:01", (), 6000, "s12", 30, None, "api"),
    ):
        assert vm_from_pb(vm_to_pb(vm), source="api") == vm


def test_read_only_fields_are_filled_by_the_service_only():
    message = vm_to_pb(Vm("a1", "00:00:0a:00:00:01", (), 5000, "s11", 10), tor="tor1", error="x")
    assert (message.tor, message.error, message.qos, message.source) == (
        "tor1",
        "x",
        "",
        "inventory",
    )
    assert vm_from_pb(message, source="api").source == "api"


def test_request_mac_is_normalised_and_a_name_required():
    vm = vm_from_pb(pb.VM(name="a1", mac="00-00-0A-00-00-01"), source="api")
    assert vm.mac == "00:00:0a:00:00:01"
    with pytest.raises(ValidationError, match="vm: name: a name is required"):
        vm_from_pb(pb.VM(mac="00:00:0a:00:00:01"), source="api")
