"""QoS without a switch (docs/qos.md): the queue rates a server's link rate
gives its port, how they reach BMv2 (the Thrift calls on the wire, to a
server that decodes them by the Thrift binary protocol), when the sync writes
them, the checks on policies and traffic classes, and the colour counters'
index."""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest
from fabric_fixture import two_tor_fabric
from p4vtep import events
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import COLOR_COUNTERS, PipelineEntries, color_index
from p4vtep.model.fabric import Rates, Vm
from p4vtep.model.validation import check_fabric
from p4vtep.switch.bmv2_thrift import SimpleSwitchThrift, ThriftError, _runtime_module
from p4vtep.switch.queue_rates import FRAME_BYTES, QueueRateSync, port_rates, thrift_address

MBIT = 1_000_000


def fabric_with(link_rate: int | None, rx_cir: int = 1_000_000):
    """s11 (tor1 port 1) at ``link_rate``; gold guarantees ``rx_cir`` B/s on receive."""
    fabric = two_tor_fabric()
    fabric.servers["s11"] = replace(fabric.servers["s11"], link_rate=link_rate)
    gold = fabric.policies["gold"]
    fabric.policies["gold"] = replace(gold, rx=replace(gold.rx, cir=rx_cir, pir=2 * rx_cir))
    return fabric


def gold_vm(i: int, server: str = "s11") -> Vm:
    return Vm(f"g{i}", f"00:00:0a:00:10:{i:02x}", (), 5000, server, 100 + i, "gold")


# --- the rates ---------------------------------------------------------------------
def test_every_queue_of_a_server_port_is_the_link():
    # Committed and excess frames share their VNI's queue (drop precedence
    # decides what a congested one admits), so each queue is the link,
    # whatever the VMs are guaranteed.
    fabric = fabric_with(100 * MBIT)  # 12.5 MB/s
    rates = port_rates(fabric, "tor1")
    assert rates[1] == dict.fromkeys(range(8), 12_500_000 // FRAME_BYTES)  # 8234 each
    # s12 has no link rate: nothing is limited.
    assert rates[2] == dict.fromkeys(range(8), 0)
    assert set(rates) == {1, 2}  # (tor1's servers only)


def test_a_link_slower_than_one_frame_per_second_is_one_not_unlimited():
    rates = port_rates(fabric_with(8000), "tor1")  # 1000 B/s: less than a full-size frame
    assert rates[1] == dict.fromkeys(range(8), 1)


def test_the_thrift_address_is_the_p4runtime_host_and_the_thrift_port():
    tor = two_tor_fabric().tors["tor1"]  # 127.0.0.1:9560, device 1
    assert thrift_address(tor) == ("127.0.0.1", 9090)  # 9089 + device id
    assert thrift_address(replace(tor, thrift_port=7777)) == ("127.0.0.1", 7777)
    assert thrift_address(replace(tor, address="[::1]:9559")) == ("::1", 9090)


# --- the Thrift calls on the wire ------------------------------------------------------
class FakeThriftServer:
    """Decodes Thrift binary calls (strict messages, buffered transport) and
    answers them: i32 0 by default, or an exception / a non-zero status."""

    def __init__(self, answer: str = "ok") -> None:
        self.answer = answer
        self.calls: list[tuple[str, dict[int, tuple[int, int]]]] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            f = conn.makefile("rb")
            while True:
                head = f.read(4)
                if len(head) < 4:
                    return
                version = struct.unpack("!I", head)[0]
                assert version == 0x80010001  # VERSION_1 | CALL
                name = f.read(struct.unpack("!i", f.read(4))[0]).decode()
                seq = struct.unpack("!i", f.read(4))[0]
                fields = {}
                while (kind := f.read(1)[0]) != 0:
                    field_id = struct.unpack("!h", f.read(2))[0]
                    size = {8: 4, 10: 8}[kind]
                    value = struct.unpack("!i" if size == 4 else "!q", f.read(size))[0]
                    fields[field_id] = (kind, value)
                self.calls.append((name, fields))
                method = name.encode()
                if self.answer == "exception":
                    text = b"no such method"
                    body = b"\x0b\x00\x01" + struct.pack("!i", len(text)) + text
                    body += b"\x08\x00\x02" + struct.pack("!i", 1) + b"\x00"
                    kind_out = 3
                else:
                    status = 0 if self.answer == "ok" else 5
                    body = b"\x08\x00\x00" + struct.pack("!i", status) + b"\x00"
                    kind_out = 2
                reply = struct.pack("!I", 0x80010000 | kind_out)
                reply += struct.pack("!i", len(method)) + method + struct.pack("!i", seq) + body
                conn.sendall(reply)

    def close(self) -> None:
        self.sock.close()


def _bmv2_runtime_missing() -> str | None:
    """Why BMv2's generated sswitch_runtime classes, which the client calls
    through, cannot be had here (they come with a simple_switch_grpc built
    --with-thrift), or None."""
    try:
        _runtime_module()
    except ThriftError as exc:
        return str(exc)
    return None


# The client's calls are BMv2's generated classes at work: a switch-tier
# test, skipped (saying why) without BMv2.
_MISSING = _bmv2_runtime_missing()
needs_bmv2_runtime = pytest.mark.skipif(
    _MISSING is not None, reason=f"{_MISSING}: the Thrift client's call tests skipped"
)


@pytest.mark.switch
@needs_bmv2_runtime
def test_queue_rate_and_depth_calls_are_simple_switch_thrift_calls():
    server = FakeThriftServer()
    with SimpleSwitchThrift("127.0.0.1", server.port) as sw:
        sw.set_priority_queue_rate(3, 7, 8234)
        sw.set_priority_queue_depth(3, 0, 0)
    server.thread.join(timeout=5)
    server.close()
    i32, i64 = 8, 10
    assert server.calls == [
        (
            "simple_switch:set_egress_priority_queue_rate",
            {1: (i32, 3), 2: (i32, 7), 3: (i64, 8234)},
        ),
        ("simple_switch:set_egress_priority_queue_depth", {1: (i32, 3), 2: (i32, 0), 3: (i32, 0)}),
    ]


@pytest.mark.switch
@needs_bmv2_runtime
@pytest.mark.parametrize(
    "answer,error",
    [
        ("exception", r"set_egress_priority_queue_rate\(1, 0, 10\): no such method"),
        ("status", r"set_egress_priority_queue_rate\(1, 0, 10\): the switch returned 5"),
    ],
)
def test_a_refused_thrift_call_is_an_error(answer, error):
    server = FakeThriftServer(answer)
    with (
        SimpleSwitchThrift("127.0.0.1", server.port) as sw,
        pytest.raises(ThriftError, match=error),
    ):
        sw.set_priority_queue_rate(1, 0, 10)
    server.close()
    assert [name for name, _ in server.calls] == ["simple_switch:set_egress_priority_queue_rate"]


def test_a_negative_rate_is_refused_before_anything_is_sent():
    sw = SimpleSwitchThrift("127.0.0.1", 9)  # (nothing listens: nothing may be sent)
    with pytest.raises(ValueError, match="must be >= 0"):
        sw.set_priority_queue_rate(1, 0, -1)


# --- the sync ------------------------------------------------------------------------
class FakeController:
    def __init__(self, fabric, vm_list) -> None:
        self.bus = events.EventBus()
        self.fabric = fabric
        self.vms = {vm.name: vm for vm in vm_list}

    def desired_view(self):
        return SimpleNamespace(fabric=self.fabric, vms=dict(self.vms))


class RecordingSetter:
    def __init__(self, log: list, fail: bool = False) -> None:
        self.log = log
        self.fail = fail

    def set_priority_queue_rate(self, port: int, priority: int, rate_pps: int) -> None:
        if self.fail:
            raise ConnectionRefusedError("refused")
        self.log.append((port, priority, rate_pps))

    def close(self) -> None:
        pass


def test_the_sync_writes_what_changed_and_everything_again_for_a_reconnected_switch():
    fabric = fabric_with(100 * MBIT)
    controller = FakeController(fabric, [gold_vm(1)])
    log: list = []
    connected: list = []

    def connect(host, port):
        connected.append((host, port))
        return RecordingSetter(log)

    sync = QueueRateSync(controller, connect=connect)
    sync.sync()
    # tor1: both ports, every priority; tor2 has no link rate and nothing set: not asked.
    assert connected == [("127.0.0.1", 9090)]
    assert len(log) == 16
    assert sorted(log)[:8] == [(1, p, 12_500_000 // FRAME_BYTES) for p in range(8)]
    log.clear()
    sync.sync()
    assert log == []  # nothing changed
    controller.vms["g2"] = gold_vm(2)  # a second guarantee on s11: the link stays the link
    sync.sync()
    assert log == []
    fabric.servers["s11"] = replace(fabric.servers["s11"], link_rate=50 * MBIT)
    sync.sync()
    assert sorted(log) == [(1, p, 6_250_000 // FRAME_BYTES) for p in range(8)]
    log.clear()
    sync.sync(forget=["tor1"])
    assert len(log) == 16
    log.clear()
    # The link rate goes away: every queue of the port back to no limit.
    fabric.servers["s11"] = replace(fabric.servers["s11"], link_rate=None)
    sync.sync()
    assert sorted(log) == [(1, p, 0) for p in (0, 1, 2, 3, 4, 5, 6, 7)]


def test_a_switch_without_thrift_is_reported_and_tried_again():
    controller = FakeController(fabric_with(100 * MBIT), [gold_vm(1)])
    log: list = []
    setters = [RecordingSetter(log, fail=True), RecordingSetter(log)]
    sync = QueueRateSync(controller, connect=lambda host, port: setters.pop(0))
    sync.sync()
    assert "cannot set queue rates through BMv2 Thrift at 127.0.0.1:9090" in sync.errors()["tor1"]
    sync.sync()
    assert sync.errors() == {}
    assert len(log) == 16


def test_the_sync_follows_commits_and_reconnections():
    controller = FakeController(fabric_with(100 * MBIT), [gold_vm(1)])
    log: list = []
    sync = QueueRateSync(controller, connect=lambda host, port: RecordingSetter(log), interval=60)
    sync.start()
    try:
        assert len(log) == 16
        # A committed change of the link rate (the desired state's fabric).
        fabric = controller.fabric
        fabric.servers["s11"] = replace(fabric.servers["s11"], link_rate=50 * MBIT)
        controller.bus.publish(events.DesiredStateChanged(vm="g1", change="attached"))
        deadline = threading.Event()
        for _ in range(50):
            if len(log) == 16 + 8:
                break
            deadline.wait(0.1)
        assert len(log) == 16 + 8
        controller.bus.publish(events.SwitchConnected("tor1", primary=True))
        for _ in range(50):
            if len(log) == 16 + 8 + 16:
                break
            deadline.wait(0.1)
        assert len(log) == 16 + 8 + 16
    finally:
        sync.stop()


# --- checks on policies and classes ---------------------------------------------------
def test_every_traffic_class_is_a_vni_s_to_choose():
    # (Colours do not take a queue of their own: 7 is not reserved.)
    fabric = two_tor_fabric()
    fabric.vnis[5000] = replace(fabric.vnis[5000], traffic_class=7)
    assert check_fabric(fabric) == []
    fabric.vnis[5000] = replace(fabric.vnis[5000], traffic_class=8)
    assert [str(p) for p in check_fabric(fabric)] == ["vni tenant-a: traffic_class: 8 outside 0-7"]


@pytest.mark.parametrize(
    "rates,problems",
    [
        (Rates(0, 10_000, 2_000_000, 20_000), ["rx: rates and bursts must be positive"]),
        (Rates(1_000_000, -1, 2_000_000, 20_000), ["rx: rates and bursts must be positive"]),
        (Rates(2_000_000, 10_000, 1_000_000, 20_000), ["rx: peak rate below committed rate"]),
        (
            Rates(1_000_000, 1000, 2_000_000, 1517),
            [
                "rx.cburst: 1000 B is smaller than a full-size frame (1518 B):"
                " such a frame could never conform",
                "rx.pburst: 1517 B is smaller than a full-size frame (1518 B):"
                " such a frame could never conform",
            ],
        ),
    ],
)
def test_bad_rates_and_buckets_are_refused_naming_the_key(rates, problems):
    fabric = two_tor_fabric()
    fabric.policies["gold"] = replace(fabric.policies["gold"], rx=rates)
    assert [str(p) for p in check_fabric(fabric)] == [f"qos gold: {p}" for p in problems]


# --- colour counters ---------------------------------------------------------------
def test_colour_counters_hold_four_cells_per_vm():
    p4info = bmv2_pipeline().p4info
    vm_count = p4info.counter("vm_tx_counter").size
    for names in COLOR_COUNTERS.values():
        for name in names:
            assert p4info.counter(name).size == 4 * vm_count
    assert color_index(1, 0) == 4
    assert color_index(8191, 3) == 4 * 8192 - 1
    entries = PipelineEntries(p4info)
    assert entries.knows_policed
    # A policy's rx rates configure both receive meters, its tx rates the one.
    rx = entries.policy_meters("rx", 5, Rates(1, 2, 3, 4))
    names = [p4info.name_of(m.meter_id).rsplit(".", 1)[-1] for m in rx]
    assert names == ["vm_rx_meter", "vm_rx_flood_meter"]
    assert len(entries.policy_meters("tx", 5, Rates(1, 2, 3, 4))) == 1
