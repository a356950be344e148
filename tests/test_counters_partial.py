"""Counters, metrics and status answer for every reachable switch and name the
unreachable ones, instead of failing as a whole (issue 10).

The fabric has two ToRs; tor2's P4Runtime address has nothing behind it."""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from dataclasses import replace

import grpc
import pytest
from fabric_fixture import two_tor_fabric
from helpers import scrape, wait_until
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.api.counters import MAX_SINGLE_READS, CounterReader, Traffic
from p4vtep.api.server import serve
from p4vtep.cli import main as cli_main
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.drop_reasons import DropReason
from p4vtep.dataplane.entries import EGRESS_DROP_COUNTER, INGRESS_DROP_COUNTER
from p4vtep.model.fabric import Server, Vm
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from switch_fabric import switch_test

A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
A2 = Vm("a2", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s21", 20)


@contextmanager
def overlay_api(controller: Controller):
    """The controller's API on a free port: (stub, address)."""
    address = f"127.0.0.1:{free_port()}"
    server = serve(controller, address)
    try:
        with grpc.insecure_channel(address) as channel:
            yield pb_grpc.OverlayStub(channel), address
    finally:
        server.stop(0)


@pytest.fixture
def api(tmp_path):
    """A controller whose supervisors never ran (no switch is connected), with a1 and a2."""
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    controller.attach(A1)
    controller.attach(A2)
    with overlay_api(controller) as (client, address):
        yield controller, client, address


def test_counters_name_every_switch_not_read(api, capsys):
    controller, client, address = api
    reply = client.GetCounters(pb.GetCountersRequest(vms=["a1"]))
    assert [(s.switch, s.error) for s in reply.unreachable] == [
        ("tor1", "not connected"),
        ("tor2", "not connected"),
    ]
    assert list(reply.vms) == []
    assert list(reply.drops) == []

    assert cli_main(["--api", address, "counters", "--vm", "a1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "tor1: unreachable, its counters are missing: not connected",
        "tor2: unreachable, its counters are missing: not connected",
    ]

    body = scrape(controller)
    assert 'p4vtep_switch_up{switch="tor1"} 0.0' in body
    assert 'p4vtep_switch_up{switch="tor2"} 0.0' in body

    # Status answers too: both switches, neither connected.
    assert [
        (s.name, s.connected) for s in client.ListSwitches(pb.ListSwitchesRequest()).switches
    ] == [
        ("tor1", False),
        ("tor2", False),
    ]


def test_unknown_vm_is_still_not_found(api):
    _, client, _ = api
    with pytest.raises(grpc.RpcError) as info:
        client.GetCounters(pb.GetCountersRequest(vms=["ghost"]))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert info.value.details() == "no VM named 'ghost'"


def test_drop_reasons_are_named_in_lower_case(api, monkeypatch, capsys):
    """A drop reason as users see it (`p4vtep counters`, GetCounters, the
    p4vtep_drops label, and docs/pipeline.md's table): the P4 constant's name
    in lower case without DROP_ (DROP_NO_ROUTE is no_route)."""
    controller, client, address = api
    cells = {
        (INGRESS_DROP_COUNTER, int(DropReason.NO_ROUTE)): Traffic(3, 300),
        (INGRESS_DROP_COUNTER, int(DropReason.METER_RED_RX)): Traffic(1, 100),
        (EGRESS_DROP_COUNTER, int(DropReason.METER_RED_RX)): Traffic(2, 200),
    }
    monkeypatch.setattr(CounterReader, "_read_tor", lambda self, tor, plan: cells)

    reply = client.GetCounters(pb.GetCountersRequest())
    assert [(d.tor, d.reason, d.packets) for d in reply.drops] == [
        ("tor1", "meter_red_rx", 3),
        ("tor1", "no_route", 3),
        ("tor2", "meter_red_rx", 3),
        ("tor2", "no_route", 3),
    ]

    assert cli_main(["--api", address, "counters"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(next(line for line in out if line.startswith("TOR ")))
    assert out[at].split() == ["TOR", "DROP", "REASON", "PACKETS"]
    assert [line.split() for line in out[at + 2 :]] == [
        ["tor1", "meter_red_rx", "3"],
        ["tor1", "no_route", "3"],
        ["tor2", "meter_red_rx", "3"],
        ["tor2", "no_route", "3"],
    ]

    body = scrape(controller)
    assert 'p4vtep_drops_total{reason="no_route",tor="tor1"} 3.0' in body
    assert 'p4vtep_drops_total{reason="meter_red_rx",tor="tor2"} 3.0' in body

    # Every reason, not only these two.
    cells.clear()
    cells.update({(INGRESS_DROP_COUNTER, int(r)): Traffic(1, 1) for r in DropReason})
    reply = client.GetCounters(pb.GetCountersRequest())
    assert {d.reason for d in reply.drops} == {
        "unknown_port", "untagged_access", "unknown_vlan", "spoofed_source", "unknown_vni",
        "not_for_vtep", "bad_vxlan", "wrong_udp_port", "meter_red_tx", "meter_red_rx",
        "no_route", "split_horizon", "malformed", "ttl_expired", "double_tagged",
        "bad_checksum", "no_flood_group", "nested_vxlan", "no_local_vtep", "not_ipv4_fabric",
        "oversize", "tenant_ttl_expired", "no_tenant_route", "not_ip_routed",
        "wrong_router_mac", "routed_transit", "to_gateway", "excess_congested",
        "tenant_hop_limit", "ipv6_scope", "spoofed_ip", "spoofed_arp", "spoofed_nd",
        "ra_from_vm", "dhcp_server_from_vm", "router_solicitation",
        "packet_too_big",
    }  # fmt: skip


@switch_test()
def test_reachable_switch_answers_while_another_is_down(tmp_path, capsys):
    """tor1 is a real BMv2 switch that a1 sends three frames through; tor2
    is down. a1's counters, tor1's drops and metrics still come back."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.sendrecv import sendp

    fabric = two_tor_fabric()
    with VethSet(f"pc{os.getpid() % 10000}", 1) as veths, ExitStack() as cleanup:
        [(switch_end, host_end)] = veths.pairs
        switch = Bmv2Switch("tor1", 1, free_port(), free_port(), {1: switch_end}, log_dir=tmp_path)
        dead = f"127.0.0.1:{free_port()}"  # nothing listens here
        fabric.tors["tor1"] = replace(fabric.tors["tor1"], address=switch.grpc_address)
        fabric.tors["tor2"] = replace(fabric.tors["tor2"], address=dead)
        fabric.servers["s11"] = Server("s11", "tor1", 1)
        switch.start()
        cleanup.callback(switch.stop)
        controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
        controller.start()
        cleanup.callback(controller.stop)
        controller.attach(A1)
        controller.attach(A2)
        # Enough VMs on tor1 that a full read takes whole counter arrays
        # (more than MAX_SINGLE_READS cells), not one cell at a time.
        for i in range(MAX_SINGLE_READS + 1):
            extra = replace(A1, name=f"x{i}", mac=f"00:00:0c:00:00:{i:02x}", ips=(), vlan=100 + i)
            version = controller.attach(extra)
        assert controller.supervisors["tor1"].wait_applied(version, 30)
        frame = (
            Ether(src=A1.mac, dst=A2.mac)
            / Dot1Q(vlan=A1.vlan)
            / IP(src=A1.ips[0], dst=A2.ips[0])
            / UDP(sport=1000, dport=80)
        )
        sendp([frame] * 3, iface=host_end, verbose=False)
        client, address = cleanup.enter_context(overlay_api(controller))

        def a1_sent_three() -> bool:
            reply = client.GetCounters(pb.GetCountersRequest(vms=["a1"]))
            return [(c.name, c.tor, c.tx.packets) for c in reply.vms] == [("a1", "tor1", 3)]

        assert wait_until(a1_sent_three, timeout=10)
        reply = client.GetCounters(pb.GetCountersRequest())
        vms = {c.name: (c.tor, c.tx.packets) for c in reply.vms}
        assert "a2" not in vms  # a2 lives on tor2
        assert len(vms) == MAX_SINGLE_READS + 2
        assert vms["a1"] == ("tor1", 3)
        assert {v for n, v in vms.items() if n != "a1"} == {("tor1", 0)}
        assert [s.switch for s in reply.unreachable] == ["tor2"]
        assert dead in reply.unreachable[0].error or "not connected" in reply.unreachable[0].error
        assert [(v.vni, v.tor, v.tx.packets) for v in reply.vnis] == [(5000, "tor1", 3)]

        assert cli_main(["--api", address, "counters", "--vm", "a1"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[2].split()[:3] == ["a1", "tor1", "3"]
        assert out[-1].startswith("tor2: unreachable, its counters are missing: ")

        body = scrape(controller)
        assert 'p4vtep_switch_up{switch="tor1"} 1.0' in body
        assert 'p4vtep_switch_up{switch="tor2"} 0.0' in body
        assert 'p4vtep_vm_packets_total{direction="tx",tor="tor1",vm="a1"} 3.0' in body
