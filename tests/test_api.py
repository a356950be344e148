"""The Overlay service: calls, status codes and messages (no switch needed:
supervisors are not started, so nothing is written anywhere)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from fabric_fixture import two_tor_fabric
from helpers import FixedLeadership, api_client, collector_off, wait_until
from p4vtep import events
from p4vtep.api import overlay_pb2 as pb
from p4vtep.cli import main as cli_main
from p4vtep.cli.main import parser
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.state.protocol import LeaderInfo
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import free_port


@pytest.fixture
def api(tmp_path):
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    with api_client(controller) as (client, address):
        yield controller, client, address


def vm(**kw) -> pb.VM:
    base = {
        "name": "a1",
        "mac": "00:00:0A:00:00:01",
        "ips": ["192.168.1.1"],
        "vni": 5000,
        "server": "s11",
        "vlan": 10,
    }
    base.update(kw)
    return pb.VM(**base)


def test_attach_get_list_detach(api):
    controller, client, _ = api
    reply = client.AttachVM(pb.AttachVMRequest(vm=vm()))
    assert reply.vm.mac == "00:00:0a:00:00:01"
    assert reply.vm.tor == "tor1"
    assert reply.version == controller.version
    client.AttachVM(pb.AttachVMRequest(vm=vm(name="b1", vni=6000, vlan=30, server="s12")))
    assert [v.name for v in client.ListVMs(pb.ListVMsRequest()).vms] == ["a1", "b1"]
    assert [v.name for v in client.ListVMs(pb.ListVMsRequest(vni=6000)).vms] == ["b1"]
    assert client.GetVM(pb.GetVMRequest(name="b1")).vlan == 30
    client.DetachVM(pb.DetachVMRequest(name="a1"))
    assert set(controller.vms) == {"b1"}
    assert set(controller.store.load_vms()) == {"b1"}


def test_invalid_attach_is_refused_whole(api):
    controller, client, _ = api
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    before = dict(controller.vms)
    with pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=vm(name="a9", vlan=99, ips=["192.168.1.9"])))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        info.value.details() == "vm a9: mac: 00:00:0a:00:00:01 is already used by vm a1 in VNI 5000"
    )
    assert controller.vms == before
    for bad, message in (
        (vm(name="x", vlan=5000), "vm x: vlan: 5000 outside 1-4094"),
        (vm(name="x", vni=0), "vm x: vni: 0 outside 1-16777215"),
        (vm(name="x", mac="zz"), "vm x: mac: 'zz' is not a MAC address"),
    ):
        with pytest.raises(grpc.RpcError) as info:
            client.AttachVM(pb.AttachVMRequest(vm=bad))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in info.value.details()
    assert controller.vms == before


def test_unknown_vm_is_not_found(api):
    _, client, _ = api
    for call, request in (
        (client.GetVM, pb.GetVMRequest(name="ghost")),
        (client.DetachVM, pb.DetachVMRequest(name="ghost")),
        (client.MigrateVM, pb.MigrateVMRequest(name="ghost", server="s21")),
    ):
        with pytest.raises(grpc.RpcError) as info:
            call(request)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert info.value.details() == "no VM named 'ghost'"


def test_oversize_request_is_refused(api):
    _, client, _ = api
    with pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=vm(ips=["192.168.1.1"] * 200_000)))
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_set_qos(api):
    controller, client, _ = api
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    assert client.SetQoS(pb.SetQoSRequest(name="a1", qos="gold")).vm.qos == "gold"
    with pytest.raises(grpc.RpcError) as info:
        client.SetQoS(pb.SetQoSRequest(name="a1", qos="platinum"))
    assert info.value.details() == "vm a1: qos: unknown QoS policy 'platinum'"
    assert controller.vms["a1"].qos == "gold"


def confirm(controller: Controller, tor: str, version: int) -> None:
    """Pretend ``tor``'s supervisor (never started here) applied ``version``."""
    sup = controller.supervisors[tor]
    with sup._applied:
        sup.status.version = version
        sup._applied.notify_all()


@pytest.fixture
def switches_confirm(api):
    """Every ToR confirms every version as soon as it is committed."""
    controller = api[0]
    done = threading.Event()

    def run() -> None:
        while not done.is_set():
            for tor in controller.supervisors:
                confirm(controller, tor, controller.version)
            time.sleep(0.005)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield
    done.set()
    thread.join(5)


def test_migrate_without_wait_answers_before_the_switches(api):
    """wait=False: the reply comes once the move is committed (before any ToR
    confirmed it); the make-before-break goes on in the controller, the old
    ToR keeping the VM's old place until the new one confirms."""
    controller, client, _ = api
    client.AttachVM(pb.AttachVMRequest(vm=vm()))  # a1: s11 (tor1), VLAN 10
    reply = client.MigrateVM(
        pb.MigrateVMRequest(name="a1", server="s21", vlan=21, wait=False), timeout=10
    )
    assert (reply.vm.server, reply.vm.tor, reply.vm.vlan, reply.applied) == (
        "s21",
        "tor2",
        21,
        False,
    )
    assert reply.version == controller.version  # the move; tor1 lets go later
    squatter = vm(name="c1", mac="00:00:0c:00:00:01", ips=["192.168.1.3"])  # a1's old place
    with pytest.raises(grpc.RpcError) as info:
        client.AttachVM(pb.AttachVMRequest(vm=squatter))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "VLAN 10 on server s11" in info.value.details()

    confirm(controller, "tor2", reply.version)  # the new ToR holds it: tor1 lets go
    assert wait_until(lambda: controller.version == reply.version + 1, timeout=10)
    client.AttachVM(pb.AttachVMRequest(vm=squatter))  # free now
    assert controller.vms["c1"].server == "s11"


@pytest.mark.usefixtures("switches_confirm")
def test_migrate_waits_for_every_tor_by_default(api):
    """wait unset (as before the field existed) or true: the reply comes when
    every ToR holds the move and the old ToR has let go."""
    controller, client, _ = api
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    for request in (
        pb.MigrateVMRequest(name="a1", server="s21", vlan=21),
        pb.MigrateVMRequest(name="a1", server="s11", vlan=11, wait=True),
    ):
        before = controller.version
        reply = client.MigrateVM(request, timeout=20)
        assert reply.applied
        assert reply.version == before + 2  # the move, then the old ToR's let-go
        assert reply.vm.server == request.server


def test_cli_migrate_no_wait(api, capsys):
    controller, client, address = api
    command = ["vm", "migrate", "a1", "--server", "s21", "--vlan", "21"]
    assert parser().parse_args(command).no_wait is False
    assert parser().parse_args([*command, "--no-wait"]).no_wait is True
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    capsys.readouterr()
    assert cli_main(["--api", address, *command, "--no-wait"]) == 0
    out = capsys.readouterr().out.splitlines()
    row = out[2].split()
    assert row[:7] == ["a1", "00:00:0a:00:00:01", "192.168.1.1", "5000", "s21", "tor2", "21"]
    moved = controller.version
    assert out[-1] == f"version {moved}"  # no ToR confirmed it yet
    confirm(controller, "tor2", moved)  # (let the controller's migration end)
    assert wait_until(lambda: controller.version == moved + 1, timeout=10)


def test_cli_prints_aligned_tables(api, capsys):
    _, _, address = api
    assert (
        cli_main(
            [
                "--api",
                address,
                "vm",
                "attach",
                "a1",
                "--mac",
                "00:00:0a:00:00:01",
                "--ip",
                "192.168.1.1",
                "--vni",
                "5000",
                "--server",
                "s11",
                "--vlan",
                "10",
                "--no-wait",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert cli_main(["--api", address, "vm", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "MAC",
        "IPS",
        "VNI",
        "SERVER",
        "TOR",
        "VLAN",
        "QOS",
        "SOURCE",
        "SECURITY",
        "PAIRS",
    ]
    assert lines[2].split() == [
        "a1",
        "00:00:0a:00:00:01",
        "192.168.1.1",
        "5000",
        "s11",
        "tor1",
        "10",
        "-",
        "api",
        "on",
        "-",
    ]
    assert lines[0].index("MAC") == lines[2].index("00:00")
    assert cli_main(["--api", address, "vm", "detach", "nope"]) == 1
    assert "NOT_FOUND: no VM named 'nope'" in capsys.readouterr().err
    assert cli_main(["--api", address, "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[2:]] == ["tor1", "tor2"]


def test_watch_events_streams_changes(api):
    _, client, _ = api
    stream = client.WatchEvents(pb.WatchEventsRequest())
    attach = threading.Timer(0.3, lambda: client.AttachVM(pb.AttachVMRequest(vm=vm())))
    attach.start()
    event = next(iter(stream))
    # The event can arrive before the attach's reply: let the call finish
    # before the fixture closes the channel under it.
    attach.join(timeout=10)
    assert event.kind == "DesiredStateChanged"
    assert "vm=a1" in event.detail
    assert "change=attached" in event.detail
    stream.cancel()


def test_metrics_endpoint(api):
    import urllib.request

    from p4vtep.api.metrics import start_metrics

    controller, client, _ = api
    port = free_port()
    stop = start_metrics(controller, port)
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    import time

    time.sleep(0.3)
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    finally:
        stop()
    assert "p4vtep_vms 1.0" in body.decode()
    assert "# TYPE p4vtep_entries_written_total counter" in body.decode()


def test_evpn_calls_without_an_evpn_section_fail_precondition(api, capsys):
    _, client, address = api
    for call, request in (
        (client.EvpnPeers, pb.EvpnPeersRequest()),
        (client.EvpnRoutes, pb.EvpnRoutesRequest(vni=5000)),
    ):
        with pytest.raises(grpc.RpcError) as info:
            call(request)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "EVPN is not configured" in info.value.details()
    assert cli_main(["--api", address, "evpn", "peers"]) == 1
    assert capsys.readouterr().err == (
        "p4vtep: FAILED_PRECONDITION: EVPN is not configured: the fabric file has no evpn: "
        "section (docs/evpn.md)\n"
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "-"), (0.4, "0m00s"), (61, "1m01s"), (3 * 3600 + 4, "3h00m04s"), (90061, "1d01h01m")],
)
def test_evpn_peers_shows_uptime_as_a_duration(seconds, shown):
    from p4vtep.cli.commands import duration

    assert duration(seconds) == shown


def test_cli_sets_and_clears_qos(api, capsys):
    controller, client, address = api
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    capsys.readouterr()
    assert cli_main(["--api", address, "vm", "qos", "a1", "gold"]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert (row[0], row[7]) == ("a1", "gold")
    assert controller.vms["a1"].qos == "gold"
    # A policy the fabric file lacks: refused, the VM keeps its policy.
    assert cli_main(["--api", address, "vm", "qos", "a1", "platinum"]) == 1
    assert "INVALID_ARGUMENT: vm a1: qos: unknown QoS policy 'platinum'" in capsys.readouterr().err
    assert controller.vms["a1"].qos == "gold"
    # Neither a policy nor --clear (or both): refused before anything is sent.
    for bad, why in (
        ([], "one of the arguments policy --clear is required"),
        (["bronze", "--clear"], "argument --clear: not allowed with argument policy"),
    ):
        with pytest.raises(SystemExit) as info:
            cli_main(["--api", address, "vm", "qos", "a1", *bad])
        assert info.value.code == 2
        assert why in capsys.readouterr().err
    assert controller.vms["a1"].qos == "gold"
    assert cli_main(["--api", address, "vm", "qos", "a1", "--clear"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[7] == "-"
    assert controller.vms["a1"].qos is None


def test_cli_prints_events_as_they_happen(api, capsys):
    controller, client, address = api
    results: list[int] = []
    watcher = threading.Thread(
        target=lambda: results.append(
            cli_main(["--api", address, "events", "--kind", "DesiredStateChanged", "--count", "2"])
        )
    )
    watcher.start()
    # Changes made before the server subscribed would not be streamed.
    deadline = time.monotonic() + 10
    while not controller.bus._subscribers and time.monotonic() < deadline:
        time.sleep(0.01)
    controller.bus.publish(events.SwitchConnected("tor1", primary=True))  # (not asked for)
    client.AttachVM(pb.AttachVMRequest(vm=vm()))
    client.SetQoS(pb.SetQoSRequest(name="a1", qos="gold"))
    client.DetachVM(pb.DetachVMRequest(name="a1"))  # (after --count: not shown)
    watcher.join(timeout=10)
    assert results == [0]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    # "YYYY-MM-DD HH:MM:SS.mmm  -  DesiredStateChanged  vm=a1 change=attached"
    assert [line.split("  ")[1:] for line in lines] == [
        ["-", "DesiredStateChanged", "vm=a1 change=attached"],
        ["-", "DesiredStateChanged", "vm=a1 change=qos"],
    ]


def test_cli_events_stops_after_seconds_and_checks_its_options(api, capsys):
    _, _, address = api
    started = time.monotonic()
    assert cli_main(["--api", address, "events", "--seconds", "0.3"]) == 0
    assert time.monotonic() - started < 5
    assert capsys.readouterr().out == ""
    for bad in (["--kind", "Nonsense"], ["--count", "0"], ["--seconds", "-1"]):
        with pytest.raises(SystemExit) as info:
            cli_main(["--api", address, "events", *bad])
        assert info.value.code == 2


def test_cli_events_ends_quietly_when_its_reader_goes(api):
    """``p4vtep events | head -1``: once the reader closed the pipe, the
    next event ends the command with status 0 and no traceback."""
    controller, client, address = api
    command = [sys.executable, "-m", "p4vtep.cli", "--api", address, "events"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "control_plane")}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as watcher:
        assert watcher.stdout is not None
        assert watcher.stderr is not None
        # Until it watches (a CLI that exited, e.g. on an import error,
        # never will: that ends the wait at once, not after 20 s).
        deadline = time.monotonic() + 20
        while not controller.bus._subscribers and time.monotonic() < deadline:
            assert watcher.poll() is None, watcher.stderr.read().decode()
            time.sleep(0.01)
        client.AttachVM(pb.AttachVMRequest(vm=vm()))
        assert b"DesiredStateChanged" in watcher.stdout.readline()
        watcher.stdout.close()  # (head -1 exits)
        for policy in ("gold", "", "gold"):  # (each write now meets a closed pipe)
            client.SetQoS(pb.SetQoSRequest(name="a1", qos=policy))
        assert watcher.wait(timeout=20) == 0
        assert watcher.stderr.read() == b""


@pytest.mark.parametrize("refusal", ["not the leader", "invalid"])
def test_refused_calls_do_not_use_up_the_connections_streams(tmp_path, refusal):
    """A replica that refuses writes (a follower: FAILED_PRECONDITION
    naming the leader; or a VM that is invalid) answers each of many calls
    on one connection, with the collector off. A refusal used to leave a
    reference cycle holding its gRPC call, whose HTTP/2 stream then counted
    against the server's 64 per connection until a collection: from the
    65th refused call on, every call was refused with RST_STREAM (seen as
    a replica that never took writes again after etcd's quorum came back,
    under fewer collections)."""
    leadership = None
    if refusal == "not the leader":
        leadership = FixedLeadership("q1", current=LeaderInfo("q0", "127.0.0.1:1", 3))
    controller = Controller(
        two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"), leadership=leadership
    )
    with api_client(controller) as (client, _):
        if refusal == "invalid":
            client.AttachVM(pb.AttachVMRequest(vm=vm()))
        expected = (
            grpc.StatusCode.FAILED_PRECONDITION
            if refusal == "not the leader"
            else grpc.StatusCode.INVALID_ARGUMENT
        )
        codes = []
        with collector_off():
            for i in range(100):  # (the server allows 64 streams at once per connection)
                request = pb.AttachVMRequest(vm=vm(name=f"x{i}", vlan=20 + i, ips=[]))
                with pytest.raises(grpc.RpcError) as info:
                    client.AttachVM(request, timeout=5)
                codes.append(info.value.code())
        assert codes == [expected] * 100
