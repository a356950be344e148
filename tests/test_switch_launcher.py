"""`p4vtep switch run` and the one simple_switch_grpc command-line builder
(issue 10: a ToR started without --priority-queues silently dropped every
frame of a VNI with a traffic class above 0)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import wait_until
from p4vtep.cli import main as cli_main
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PORT_TX_COUNTER, VNI_TX_COUNTER, PipelineEntries
from p4vtep.dataplane.limits import CPU_PORT
from p4vtep.model.fabric import TlsFiles, Vm
from p4vtep.processes import stop_process
from p4vtep.runtime.client import SwitchConnection
from p4vtep.sources.fabric_file import load_fabric
from p4vtep.state.sqlite_store import Store
from p4vtep.switch import bmv2
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port, switch_command
from switch_fabric import switch_test

A = Vm("a", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
B = Vm("b", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s12", 20)
TRAFFIC_CLASS = 2


def option(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_builder_sets_every_option_the_pipeline_needs():
    tls = TlsFiles("/pki/ca.pem", "/pki/tor1.pem", "/pki/tor1.key")
    cmd = switch_command(
        "/bin/ssg", 7, "10.1.1.1:9559", 9096, {2: "veth2", 1: "veth1"}, tls=tls, log_file="l"
    )
    assert cmd[0] == "/bin/ssg"
    assert option(cmd, "--device-id") == "7"
    assert option(cmd, "--thrift-port") == "9096"
    assert "--no-p4" in cmd
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-i"] == ["1@veth1", "2@veth2"]
    assert option(cmd, "--log-file") == "l"
    assert "--log-flush" in cmd
    target = cmd[cmd.index("--") + 1 :]  # the gRPC target's own options
    assert option(target, "--grpc-server-addr") == "10.1.1.1:9559"
    assert option(target, "--cpu-port") == str(CPU_PORT) == "255"
    assert option(target, "--priority-queues") == "8"
    assert option(target, "--max-mc-groups") == "32768"
    assert option(target, "--max-l1-entries") == "65536"
    assert option(target, "--max-l2-entries") == "65536"
    assert "--grpc-server-ssl" in target
    assert "--grpc-server-with-client-auth" in target
    assert option(target, "--grpc-server-cacert") == "/pki/ca.pem"
    assert option(target, "--grpc-server-cert") == "/pki/tor1.pem"
    assert option(target, "--grpc-server-key") == "/pki/tor1.key"
    assert "--log-level" not in cmd  # (a log file: BMv2's own level, trace)
    plain = switch_command("/bin/ssg", 1, "127.0.0.1:1", 1, {})
    assert "--grpc-server-ssl" not in plain
    assert "--log-file" not in plain
    # no log asked for: none made (BMv2 would format every message for nothing)
    assert option(plain, "--log-level") == "off"
    assert plain.index("--log-level") < plain.index("--")
    console = switch_command("/bin/ssg", 1, "127.0.0.1:1", 1, {}, extra_args=["--log-console"])
    assert "--log-level" not in console


@pytest.mark.parametrize("port", [CPU_PORT, 511, 512])
def test_builder_refuses_reserved_ports(port):
    with pytest.raises(ValueError, match=f"-i {port}@eth9: port {port} "):
        switch_command("/bin/ssg", 1, "127.0.0.1:1", 1, {port: "eth9"})


def test_switch_environment_preloads_jemalloc_unless_told_otherwise(monkeypatch):
    """Where jemalloc is installed the switch gets it (ahead of anything the
    user preloads); "system" keeps glibc's; a bad choice, or jemalloc
    required and absent, is refused with the variable named."""
    monkeypatch.setattr(bmv2, "find_jemalloc", lambda: "libjemalloc.so.2")
    base = {"PATH": "/bin", "LD_PRELOAD": "libmine.so"}
    env = bmv2.switch_environment(base)
    assert env == {"PATH": "/bin", "LD_PRELOAD": "libjemalloc.so.2 libmine.so"}
    assert base["LD_PRELOAD"] == "libmine.so"  # (a copy)
    assert bmv2.switch_environment(env) == env  # (not preloaded twice)
    assert bmv2.switch_environment({"PATH": "/bin"}) == {
        "PATH": "/bin",
        "LD_PRELOAD": "libjemalloc.so.2",
    }
    system = {"PATH": "/bin", bmv2.ALLOCATOR_ENV: "system"}
    assert bmv2.switch_environment(system) == system
    with pytest.raises(ValueError, match="P4VTEP_BMV2_ALLOCATOR=tcmalloc: expected one of auto"):
        bmv2.switch_environment({bmv2.ALLOCATOR_ENV: "tcmalloc"})

    monkeypatch.setattr(bmv2, "find_jemalloc", lambda: None)
    assert bmv2.switch_environment({"PATH": "/bin"}) == {"PATH": "/bin"}
    with pytest.raises(ValueError, match="jemalloc is not installed"):
        bmv2.switch_environment({bmv2.ALLOCATOR_ENV: "jemalloc"})


def test_harness_switch_uses_the_builder(tmp_path):
    sw = Bmv2Switch("t", 3, 9559, 9090, {1: "v1"}, log_dir=tmp_path, binary="/bin/ssg")
    assert sw.command() == switch_command("/bin/ssg", 3, "127.0.0.1:9559", 9090, {1: "v1"})
    sw.netns = "ns1"
    assert sw.command()[:4] == ["ip", "netns", "exec", "ns1"]


def write_fabric(path: Path, grpc_address: str, tls: dict | None = None) -> Path:
    tor = {
        "name": "tor1",
        "p4runtime": grpc_address,
        "device_id": 1,
        "vtep_ip": "10.0.0.1",
        "router_mac": "00:aa:00:00:00:01",
        "uplinks": [{"port": 3, "next_hop_mac": "00:5e:00:00:01:01"}],
    }
    if tls:
        tor["tls"] = tls
    doc = {
        "tors": [tor],
        "servers": [
            {"name": "s11", "tor": "tor1", "port": 1},
            {"name": "s12", "tor": "tor1", "port": 2},
        ],
        "vnis": [{"vni": 5000, "name": "tenant-a", "traffic_class": TRAFFIC_CLASS}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_cli_builds_the_command_from_the_fabric(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(bmv2.ALLOCATOR_ENV, "system")
    for name in ("ca.pem", "tor1.pem", "tor1.key"):
        (tmp_path / name).write_text("pem")
    tls = {
        k: str(tmp_path / f)
        for k, f in (("ca", "ca.pem"), ("cert", "tor1.pem"), ("key", "tor1.key"))
    }
    fabric = write_fabric(tmp_path / "fabric.yaml", "127.0.0.1:9700", tls)
    argv = ["switch", "run", "tor1", "--fabric", str(fabric), "--binary", "/bin/ssg"]
    assert cli_main([*argv, "-i", "1@v1", "-i", "2@v2", "--print-command"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == switch_command(
        "/bin/ssg", 1, "127.0.0.1:9700", 9090, {1: "v1", 2: "v2"}, tls=TlsFiles(**tls)
    )
    assert captured.err == "p4vtep: warning: tor1 port 3 (uplink) has no -i\n"

    for bad, message in (
        (["-i", "255@v1"], "p4vtep: -i 255@v1: port 255 is the CPU port (packet-in/out) on bmv2\n"),
        (["-i", "1v1"], "p4vtep: -i 1v1: expected PORT@INTERFACE, e.g. 1@veth1\n"),
        (["-i", "1@a", "-i", "1@b"], "p4vtep: -i 1@b: port 1 is already a\n"),
    ):
        assert cli_main([*argv, *bad, "--print-command"]) == 2
        assert capsys.readouterr().err == message
    assert cli_main(["switch", "run", "tor9", "--fabric", str(fabric), "--print-command"]) == 2
    assert "no ToR named 'tor9' (has: tor1)" in capsys.readouterr().err

    # The allocator the switch would run with comes first, as a shell takes it.
    monkeypatch.setenv(bmv2.ALLOCATOR_ENV, "auto")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setattr(bmv2, "find_jemalloc", lambda: "libjemalloc.so.2")
    assert cli_main([*argv, "-i", "1@v1", "--print-command"]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "LD_PRELOAD=libjemalloc.so.2"
    assert out[1:] == switch_command(
        "/bin/ssg", 1, "127.0.0.1:9700", 9090, {1: "v1"}, tls=TlsFiles(**tls)
    )
    monkeypatch.setenv(bmv2.ALLOCATOR_ENV, "tcmalloc")
    assert cli_main([*argv, "-i", "1@v1", "--print-command"]) == 2
    assert "P4VTEP_BMV2_ALLOCATOR=tcmalloc: expected one of" in capsys.readouterr().err


# --- on a real switch --------------------------------------------------------------
def wait_for_port(address: str, process: subprocess.Popen, timeout: float = 20.0) -> None:
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"switch exited with {process.returncode}"
        try:
            socket.create_connection((host, int(port)), 0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{address} did not open")


def forwarded(fabric_file: Path, cmd: list[str], veths: VethSet, tmp_path: Path):
    """Start the switch with ``cmd``, let the controller program it, send one
    frame of VNI 5000 (traffic class 2) from A to B; return (frames B got,
    the switch's counters)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.sendrecv import AsyncSniffer, sendp

    fabric = load_fabric(fabric_file)
    tor = fabric.tors["tor1"]
    with open(tmp_path / "switch.out", "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    controller = None
    try:
        wait_for_port(tor.address, process)
        controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
        controller.start()
        controller.attach(A)
        controller.attach(B)
        assert controller.wait_converged(30)
        (_, host_a), (_, host_b) = veths.pairs
        frame = (
            Ether(src=A.mac, dst=B.mac)
            / Dot1Q(vlan=A.vlan)
            / IP(src=A.ips[0], dst=B.ips[0])
            / UDP(sport=1234, dport=80)
        )
        sniffer = AsyncSniffer(iface=host_b, lfilter=lambda p: p.haslayer(UDP))
        sniffer.start()
        time.sleep(0.5)
        sendp(frame, iface=host_a, verbose=False)
        entries = PipelineEntries(bmv2_pipeline().p4info)
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:

            def count(counter: str, index: int) -> int:
                [cell] = conn.read(entries.counter(counter, index))
                return cell.counter_entry.data.packet_count

            wait_until(lambda: count(VNI_TX_COUNTER, 1) == 1, timeout=5)
            time.sleep(1)
            got = sniffer.stop()
            counts = {"vni_tx": count(VNI_TX_COUNTER, 1), "port2_tx": count(PORT_TX_COUNTER, 2)}
        want = bytes(Ether(src=A.mac, dst=B.mac) / Dot1Q(vlan=B.vlan) / frame[Dot1Q].payload)
        return [bytes(p) for p in got if bytes(p) == want], counts
    finally:
        if controller is not None:
            controller.stop()
        stop_process(process, timeout=10)


@switch_test()
def test_switch_run_forwards_a_traffic_class_vni(tmp_path):
    """`p4vtep switch run` starts a switch the controller programs and that
    delivers a frame of a VNI with traffic class 2."""
    with VethSet(f"sl{os.getpid() % 10000}", 2) as veths:
        fabric_file = write_fabric(tmp_path / "fabric.yaml", f"127.0.0.1:{free_port()}")
        ports = [f"{i}@{sw}" for i, (sw, _) in enumerate(veths.pairs, start=1)]
        cmd = [sys.executable, "-m", "p4vtep.cli", "switch", "run", "tor1"]
        cmd += ["--fabric", str(fabric_file), "--thrift-port", str(free_port())]
        cmd += [a for p in ports for a in ("-i", p)]
        delivered, counts = forwarded(fabric_file, cmd, veths, tmp_path)
        assert len(delivered) == 1
        assert counts == {"vni_tx": 1, "port2_tx": 1}


def mapped_libraries(pid: int) -> set[str]:
    """The file names of the shared objects a process has mapped."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {Path(line.split()[-1]).name for line in maps if "/" in line}


@switch_test()
def test_switches_run_with_jemalloc_where_installed(tmp_path, monkeypatch):
    """The switch the tests, the benchmarks, the PTF runner and the demo
    start (``Bmv2Switch``) and the one `p4vtep switch run` becomes both run
    with jemalloc; with P4VTEP_BMV2_ALLOCATOR=system, with glibc's malloc."""
    library = bmv2.find_jemalloc()
    if library is None:
        pytest.skip("jemalloc is not installed (Debian: libjemalloc2, in make deps)")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    for choice, want in (("auto", True), ("system", False)):
        monkeypatch.setenv(bmv2.ALLOCATOR_ENV, choice)
        sw = Bmv2Switch(f"alloc-{choice}", 1, free_port(), free_port(), log_dir=tmp_path)
        sw.start()
        try:
            assert sw.process is not None
            assert (library in mapped_libraries(sw.process.pid)) is want, choice
        finally:
            sw.stop()
    monkeypatch.setenv(bmv2.ALLOCATOR_ENV, "auto")
    fabric_file = write_fabric(tmp_path / "fabric.yaml", f"127.0.0.1:{free_port()}")
    cmd = [sys.executable, "-m", "p4vtep.cli", "switch", "run", "tor1"]
    cmd += ["--fabric", str(fabric_file), "--thrift-port", str(free_port())]
    with open(tmp_path / "switch.out", "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(load_fabric(fabric_file).tors["tor1"].address, process)
        assert library in mapped_libraries(process.pid)  # (the CLI became the switch)
    finally:
        stop_process(process, timeout=10)


@switch_test()
def test_without_priority_queues_the_frame_is_lost_and_counters_show_it(tmp_path):
    """What the launcher prevents, and how to see it on a switch started by
    hand without --priority-queues: the VNI counted the frame in, no port
    counted it out, and BMv2's log says why."""
    with VethSet(f"sq{os.getpid() % 10000}", 2) as veths:
        fabric_file = write_fabric(tmp_path / "fabric.yaml", f"127.0.0.1:{free_port()}")
        fabric = load_fabric(fabric_file)
        ports = {i: sw for i, (sw, _) in enumerate(veths.pairs, start=1)}
        cmd = switch_command(
            bmv2.find_simple_switch_grpc() or "simple_switch_grpc",
            1,
            fabric.tors["tor1"].address,
            free_port(),
            ports,
            log_file=tmp_path / "bmv2",
        )
        at = cmd.index("--priority-queues")
        del cmd[at : at + 2]
        delivered, counts = forwarded(fabric_file, cmd, veths, tmp_path)
        assert delivered == []
        assert counts == {"vni_tx": 1, "port2_tx": 0}
        logs = "".join(p.read_text() for p in tmp_path.glob("bmv2*"))
        assert "Priority out of range, dropping packet" in logs
