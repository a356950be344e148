#!/usr/bin/env python3
"""Benchmark (issue 30): is a VM's guaranteed rate kept when a greedy
neighbour fills the server link? Hypervisor shaping against the guarantee at
the ToR, the 10GbE consolidation study scaled down for BMv2.

The study: two VMs promised 2 Gb/s each on a shared 10GbE port while a third
VM took all it could, most traffic received by the VMs. With the hypervisor's
traffic shaping their throughput swung between 0.5 and 2.2 Gb/s; with QoS in
the NIC/switch it stayed close to 2 Gb/s (1.4 Gb/s at worst).

Here (root: network namespaces, veths, tc):

    peer VM [ns p4vqNpeer] -- relay (VLAN 20) -- port 2 [BMv2 ToR] port 1 == server link
    server [ns p4vqNsrv]: relays (VLANs 11, 12, 13) -> VMs g1, g2, x [one ns each]

One BMv2 ToR (simple_switch_grpc with the project's flags, the p4vtep
controller in this process); the "server" is a namespace whose trunk is the
ToR's port 1 (the server link), its three VMs VFs on that port, each its own
VLAN (tests/vlan_relay.py tags and untags: the kernel here has no 8021q) and
its own namespace. The senders sit behind port 2 (one peer VM). g1 and g2 are
guaranteed ``--guarantee`` (20 %) of the link each; x is greedy.

Traffic (iperf3, no Python packet loop), per protocol, for ``--seconds``:
  - towards the VMs (receive, about 90 % of the bytes): TCP: one stream to g1,
    one to g2, ``--greedy-streams`` (4) to x, all unlimited; UDP: g1 and g2 are
    offered ``--want`` (1.25) x their guarantee, x is offered
    ``--greedy-offer`` (1.5) x the link (a sender whose own port is faster than
    the server link; BMv2 has to take the whole offered load in, so it is
    bounded, not --topspeed);
  - from the VMs (send): each VM sends ``--send-share`` (3.5 %) of the link
    to the peer, same protocol.
Samples: every 100 ms, each VM's received bytes from the kernel (its
interface's counter, read from /proc/<pid>/net/dev of a process in its
namespace), and the bytes the ToR sent on the server link (its veth's
counter). The first ``--warmup`` seconds of each run are left out of the
statistics (TCP's start, the buckets' initial fill), not of the plots.

The link, ``--link`` (25 Mbit/s: what BMv2 takes in whole on 2 cores with the
UDP load below; ``switch_took_in`` in the results says whether it did):
  - ``fabric``: BMv2's egress queues of port 1 at the server's ``link_rate``
    (fabric file, ``servers[].link_rate``), programmed by the controller's
    QueueRateSync through the switch's Thrift service, as in production;
  - ``queues``: every queue of port 1 at the link, set by this benchmark
    through Thrift (a build whose controller does not program queues);
  - ``tbf``: a tc tbf FIFO on the ToR's side of the server link veth; the
    switch's own queues then never fill, so the link drops frames whatever
    their colour, as BMv2's single receive queue did before per-colour
    queues;
  - ``auto`` (default): ``fabric`` when simple_switch_grpc serves Thrift,
    else ``tbf``, the reason recorded. A simple_switch_grpc configured
    without ``--with-thrift`` (upstream's default; docs/toolchain.md)
    ignores --thrift-port: nothing listens, so BMv2's queue rates cannot be
    set at all.
Either way the bottleneck is the ToR's egress to the server.

The arms, alternating A B C in each round, in one run:
  - **A, hypervisor shaping**: the VMs have no QoS policy (the ToR does not
    police); the server shapes. Receive: a tbf on the server's interface
    towards each VM (what libvirt's ``<bandwidth><inbound>`` does with htb on
    the tap); send: a tbf on the VM's own interface. The kernel here has no
    tc police action, no classifier and no mirred (so no IFB redirect): the
    hypervisor's ingress policing of what a VM sends is replaced by shaping
    the VM's transmit queue, which queues instead of dropping, i.e. is as
    kind to the VM's TCP as a policer can be; it carries 10 % of the bytes
    and is not where the link congests. The rates: a per-VM shaper knows
    nothing of the other VMs, so the most a hypervisor can do for the
    guarantees is cap the greedy VM at the link minus the guarantees (60 %)
    and the guaranteed VMs at the link (their PIR in arm B); buckets as
    p4vtep's defaults (qos_bursts.default_burst), queue 50 ms.
  - **B, p4vtep**: the VMs get QoS policies through the controller
    (``set_qos``): g1, g2 ``guaranteed`` (CIR = the guarantee, PIR = the
    link, both directions), x ``greedy`` (CIR 1 % of the link, PIR = the
    link); buckets left to the project's defaults; no tc on the server.
    What keeps the guarantee here is the switch's scheduling of GREEN
    before YELLOW at the link's rate (docs/qos.md).
  - **C, p4vtep policing with the hypervisor's rates**: as B, but x's PIR
    is arm A's cap (the link minus the guarantees), so the ToR drops x's
    excess before the link: the same numbers as arm A, enforced before the
    bottleneck instead of after it. It needs no queue rates, so it says
    what the ToR's policing alone does on a switch that cannot schedule
    colours (``--arms A,B`` leaves it out).

Reported per run, for g1 and g2: p1, p5, median, minimum and mean of the
100 ms throughput (Mbit/s of frames the VM received) and p5 / guarantee;
for x: its median share of the link and of what the VMs received. Target:
arm B p5 >= 0.9 of the guarantee. The ToR's server-link bytes against what
the VMs received say whether the relays kept up (``relay_kept``), and the
switch process's CPU share whether BMv2 did.

Result: bench/results/qos-<date>.json (runs of a day appended under
``entries``) and a PNG of the time series next to it; a table is printed.
It reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qos_report
from common import REPO, RESULTS, machine, require_switch
from dataplane_load import machine_busy_seconds, process_cpu_seconds, process_table
from p4vtep.api.counters import CounterReader
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import Pipeline, bmv2_pipeline
from p4vtep.model.fabric import Vm
from p4vtep.model.qos_bursts import default_burst
from p4vtep.sources.fabric_file import load_fabric
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port

sys.path.insert(0, str(REPO / "tests"))
from vm_netns import RELAY, vm_behind_port

VNI = 5000
PEER = Vm("peer", "02:71:00:00:00:20", ("10.71.0.20",), VNI, "peer", 20)
GUARANTEED = ("g1", "g2")
GREEDY = "x"
SERVER_VMS = {
    "g1": Vm("g1", "02:71:00:00:00:11", ("10.71.0.11",), VNI, "srv", 11),
    "g2": Vm("g2", "02:71:00:00:00:12", ("10.71.0.12",), VNI, "srv", 12),
    "x": Vm("x", "02:71:00:00:00:13", ("10.71.0.13",), VNI, "srv", 13),
}
RX_PORT, TX_PORT_BASE = 5201, 5301
SAMPLE_S = 0.1
UDP_PAYLOAD = 1472  # a 1514-byte frame, as TCP's 1448-byte segments make


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def ns_dev_bytes(pid: int, iface: str) -> tuple[int, int]:
    """(rx, tx) bytes of ``iface`` in the network namespace of process ``pid``."""
    for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]:
        name, data = line.split(":", 1)
        if name.strip() == iface:
            f = data.split()
            return int(f[0]), int(f[8])
    raise KeyError(iface)


# What the peer's TCP stack saw of the receive flows (it sends them): loss
# recovery, reordering, and what it undid once a retransmission proved spurious.
TCP_COUNTERS = {
    "Tcp": ("OutSegs", "RetransSegs"),
    "TcpExt": (
        "TCPFastRetrans",
        "TCPTimeouts",
        "TCPLossProbes",
        "TCPSACKReorder",
        "TCPTSReorder",
        "TCPDSACKRecv",
        "TCPDSACKUndo",
        "TCPLossUndo",
        "TCPSpuriousRTOs",
        "TCPLostRetransmit",
    ),
}


def ns_tcp_counters(pid: int) -> dict[str, int]:
    """TCP_COUNTERS of the network namespace of process ``pid`` (the kernel's
    /proc/net/snmp and /proc/net/netstat, as nstat reads them)."""
    out = {}
    for name in ("snmp", "netstat"):
        lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()
        for head, values in itertools.pairwise(lines):
            proto, _, keys = head.partition(": ")
            if proto in TCP_COUNTERS and values.startswith(proto + ": "):
                row = dict(zip(keys.split(), values.split()[1:], strict=True))
                out.update({k: int(row[k]) for k in TCP_COUNTERS[proto] if k in row})
    return out


def root_dev_bytes(iface: str, which: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/{which}_bytes").read_text())


@dataclass
class Config:
    link_bps: int
    guarantee: float
    greedy_cir: float
    want: float
    greedy_offer: float
    greedy_streams: int
    send_share: float
    seconds: float
    warmup: float
    link_emulation: str
    tbf_latency_ms: int = 50

    @property
    def link_mbps(self) -> float:
        return self.link_bps / 1e6

    @property
    def guarantee_bps(self) -> int:
        return round(self.link_bps * self.guarantee)

    def policy_rates(self, share: float) -> dict[str, int]:
        """cir/pir in bytes/s (buckets left to the project's defaults)."""
        return {"cir": round(self.link_bps * share / 8), "pir": self.link_bps // 8}

    def shaper_bps(self, vm: str) -> int:
        """Arm A: what the hypervisor lets each VM have (see the docstring)."""
        if vm == GREEDY:
            return self.link_bps - 2 * self.guarantee_bps
        return self.link_bps


FRAME_BYTES = 1518  # what BMv2's queue rates (packets/s) count a link in: full-size frames


def fabric_yaml(cfg: Config, grpc: str, thrift: int) -> str:
    link = f", link_rate: {cfg.link_bps}" if cfg.link_emulation == "fabric" else ""
    thrift_port = f"\n    thrift_port: {thrift}" if cfg.link_emulation == "fabric" else ""
    g, x = cfg.policy_rates(cfg.guarantee), cfg.policy_rates(cfg.greedy_cir)
    capped = cfg.shaper_bps(GREEDY) // 8  # arm C: the hypervisor's cap, at the ToR
    return f"""# written by bench/qos.py
tors:
  - name: tor1
    p4runtime: {grpc}
    device_id: 1
    vtep_ip: 10.0.0.1
    router_mac: "00:aa:00:00:00:01"{thrift_port}
    uplinks: [{{port: 3, next_hop_mac: "00:5e:00:01:01:01"}}]  # (no cable: one ToR)
servers:
  - {{name: srv, tor: tor1, port: 1{link}}}
  - {{name: peer, tor: tor1, port: 2}}
vnis:
  - {{vni: {VNI}, name: tenant, traffic_class: 0}}
qos_policies:
  - name: guaranteed
    tx: {{cir: {g["cir"]}, pir: {g["pir"]}}}
    rx: {{cir: {g["cir"]}, pir: {g["pir"]}}}
  - name: greedy
    tx: {{cir: {x["cir"]}, pir: {x["pir"]}}}
    rx: {{cir: {x["cir"]}, pir: {x["pir"]}}}
  - name: greedy-capped
    tx: {{cir: {x["cir"]}, pir: {capped}}}
    rx: {{cir: {x["cir"]}, pir: {capped}}}
"""


@dataclass
class Lab:
    """Everything one run made: to be torn down in reverse by ExitStack."""

    tag: str
    switch: Bmv2Switch
    controller: Controller
    link_iface: str  # ToR side of the server link (root namespace)
    peer_iface: str  # ToR side of the peer's port
    vm_ns: dict[str, str]
    srv_ns: str
    peer_ns: str
    anchors: dict[str, int] = field(default_factory=dict)  # VM -> pid in its namespace
    peer_anchor: int = 0  # a pid in the peer's namespace (the receive flows' sender)
    procs: list[subprocess.Popen[Any]] = field(default_factory=list)


def spawn(lab_procs: list, *cmd: str, **kw: Any) -> subprocess.Popen[Any]:
    proc = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, **kw)
    lab_procs.append(proc)
    return proc


def stop_all(procs: list[subprocess.Popen[Any]]) -> None:
    for proc in reversed(procs):
        stop(proc)


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def server_with_vms(tag: str, trunk: str, procs: list) -> Any:
    """The server: namespace ``p4vq<tag>srv`` holding the server link's far
    end, and per VM a namespace with its interface ``vm``, joined to the
    server by a veth whose server end (``a-<vm>``) a VLAN relay ties to the
    trunk. Yields (server ns, {VM: its ns})."""
    srv = f"p4vq{tag}srv"
    made = []
    try:
        sh("ip", "netns", "add", srv)
        made.append(srv)
        sh("ip", "netns", "exec", srv, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        sh("ip", "link", "set", trunk, "netns", srv)
        sh("ip", "-n", srv, "link", "set", trunk, "up")
        vm_ns = {}
        for name, vm in SERVER_VMS.items():
            ns = f"p4vq{tag}{name}"
            sh("ip", "netns", "add", ns)
            made.append(ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
            acc = f"a-{name}"
            sh(
                "ip",
                "-n",
                srv,
                "link",
                "add",
                acc,
                "type",
                "veth",
                "peer",
                "name",
                "vm",
                "netns",
                ns,
            )
            sh("ip", "-n", ns, "link", "set", "vm", "address", vm.mac)
            for n, dev in ((srv, acc), (ns, "vm")):
                # Checksums filled in by the sender: the relay copies frames as they are.
                sh("ip", "netns", "exec", n, "ethtool", "-K", dev, "tx", "off", check=False)
                sh("ip", "-n", n, "link", "set", dev, "up")
            sh("ip", "-n", ns, "addr", "add", f"{vm.ips[0]}/24", "dev", "vm")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            vm_ns[name] = ns
            spawn(
                procs,
                "ip",
                "netns",
                "exec",
                srv,
                sys.executable,
                str(RELAY),
                trunk,
                acc,
                str(vm.vlan),
            )
        yield srv, vm_ns
    finally:
        for ns in reversed(made):
            sh("ip", "netns", "del", ns, check=False)


def static_neighbours(lab: Lab) -> None:
    """Every VM knows the peer's MAC and the peer every VM's (no ARP needed
    while the link is full)."""
    for name, ns in lab.vm_ns.items():
        sh("ip", "-n", ns, "neigh", "replace", PEER.ips[0], "lladdr", PEER.mac, "dev", "vm")
        vm = SERVER_VMS[name]
        sh("ip", "-n", lab.peer_ns, "neigh", "replace", vm.ips[0], "lladdr", vm.mac, "dev", "vm")


def set_port_queues(thrift_port: int, port: int, bps: int) -> None:
    """Every priority queue of ``port`` at ``bps`` (as full-size frames/s),
    through the switch's Thrift service: the link for a build whose
    controller does not program queue rates (``--link-emulation queues``)."""
    from p4vtep.switch.bmv2_thrift import SimpleSwitchThrift

    with SimpleSwitchThrift("127.0.0.1", thrift_port) as thrift:
        for priority in range(8):
            thrift.set_priority_queue_rate(port, priority, max(1, bps // 8 // FRAME_BYTES))


def switch_has_thrift(log_dir: Path) -> bool:
    """Whether simple_switch_grpc serves Thrift, the only way to set BMv2's
    queue rates (a build without it ignores --thrift-port: nothing listens)."""
    probe = Bmv2Switch("qos-probe", 9, free_port(), free_port(), {}, log_dir=log_dir)
    probe.start()
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", probe.thrift_port), 0.5).close()
                return True
            except OSError:
                time.sleep(0.2)
        return False
    finally:
        probe.stop()


@contextmanager
def lab(cfg: Config, pipeline: Pipeline, log_dir: Path) -> Any:
    tag = str(os.getpid() % 1000)
    with ExitStack() as stack:
        procs: list[subprocess.Popen[Any]] = []
        stack.callback(lambda: stop_all(procs))
        veths = stack.enter_context(VethSet(f"p4vq{tag}", 2))
        (link_sw, link_host), (peer_sw, peer_host) = veths.pairs
        if cfg.link_emulation == "tbf":
            rate = cfg.link_bps
            sh(
                "tc",
                "qdisc",
                "add",
                "dev",
                link_sw,
                "root",
                "tbf",
                "rate",
                f"{rate}bit",
                "burst",
                str(max(3028, rate // 8 // 250)),
                "latency",
                "20ms",
            )
        srv, vm_ns = stack.enter_context(server_with_vms(tag, link_host, procs))
        # (again: the processes stop before their namespaces go)
        stack.callback(lambda: stop_all(procs))
        peer_ns = f"p4vq{tag}peer"
        stack.callback(lambda: sh("ip", "netns", "del", peer_ns, check=False))
        procs.append(vm_behind_port(peer_ns, peer_host, PEER))
        stack.callback(lambda: stop_all(procs))
        switch = Bmv2Switch(
            "qos-tor1", 1, free_port(), free_port(), {1: link_sw, 2: peer_sw}, log_dir=log_dir
        )
        stack.callback(switch.stop)
        switch.start()
        fabric_file = log_dir / "qos-fabric.yaml"
        fabric_file.write_text(fabric_yaml(cfg, switch.grpc_address, switch.thrift_port))
        fabric = load_fabric(fabric_file)
        controller = Controller(
            fabric,
            pipeline,
            Store(log_dir / "qos-store.json"),
            election_id=1,
            resync_seconds=3600,
        )
        controller.start()
        stack.callback(controller.stop)
        for vm in (*SERVER_VMS.values(), PEER):
            controller.attach(vm)
        if not controller.wait_converged(60):
            raise RuntimeError("controller did not converge")
        if cfg.link_emulation == "fabric":
            # What `p4vtep controller run` starts beside the controller.
            from p4vtep.switch.queue_rates import QueueRateSync

            sync = QueueRateSync(controller)
            sync.start()
            stack.callback(sync.stop)
        elif cfg.link_emulation == "queues":
            set_port_queues(switch.thrift_port, 1, cfg.link_bps)
        the_lab = Lab(tag, switch, controller, link_sw, peer_sw, vm_ns, srv, peer_ns, procs=procs)
        static_neighbours(the_lab)
        for name, ns in vm_ns.items():
            server = spawn(
                procs,
                "ip",
                "netns",
                "exec",
                ns,
                "iperf3",
                "-s",
                "-p",
                str(RX_PORT),
                # What the VM's application read, per 100 ms, handed to the
                # client (--get-server-output): its goodput series.
                "-i",
                str(SAMPLE_S),
                "-J",
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            the_lab.anchors[name] = server.pid
        for i, _ in enumerate(SERVER_VMS):
            peer_server = spawn(
                procs,
                "ip",
                "netns",
                "exec",
                peer_ns,
                "iperf3",
                "-s",
                "-p",
                str(TX_PORT_BASE + i),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            the_lab.peer_anchor = peer_server.pid
        time.sleep(1.0)
        yield the_lab


# --- the arms --------------------------------------------------------------------


def tbf(ns: str, dev: str, bps: int, latency_ms: int) -> None:
    burst = default_burst(bps // 8)
    sh(
        "ip",
        "netns",
        "exec",
        ns,
        "tc",
        "qdisc",
        "replace",
        "dev",
        dev,
        "root",
        "tbf",
        "rate",
        f"{bps}bit",
        "burst",
        str(burst),
        "latency",
        f"{latency_ms}ms",
    )


def untbf(ns: str, dev: str) -> None:
    sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root", check=False)


def set_arm(lab: Lab, cfg: Config, arm: str) -> dict[str, Any]:
    """Arm A: no policies at the ToR, shapers on the server; arm B: the
    reverse. Returns what was set."""
    set_: dict[str, dict[str, Any]] = {}
    if arm == "A":
        version = 0
        for name in SERVER_VMS:
            version = lab.controller.set_qos(name, None)
        for name, ns in lab.vm_ns.items():
            bps = cfg.shaper_bps(name)
            tbf(lab.srv_ns, f"a-{name}", bps, cfg.tbf_latency_ms)  # receive
            tbf(ns, "vm", bps, cfg.tbf_latency_ms)  # send
            set_[name] = {"rx_shaper_bps": bps, "tx_shaper_bps": bps}
    else:
        for name, ns in lab.vm_ns.items():
            untbf(lab.srv_ns, f"a-{name}")
            untbf(ns, "vm")
        greedy = "greedy" if arm == "B" else "greedy-capped"
        for name in SERVER_VMS:
            policy = greedy if name == GREEDY else "guaranteed"
            version = lab.controller.set_qos(name, policy)
            set_[name] = {"policy": policy}
    if not lab.controller.wait_version(version, 30):
        raise RuntimeError(f"arm {arm}: the ToR did not acknowledge the QoS change")
    time.sleep(0.5)
    return set_


# --- traffic and samples ---------------------------------------------------------


# TCP's block size: the receiving iperf3 reads whole blocks, so its 100 ms
# goodput samples move in steps of one block (4 KiB: 7 % of a 5 Mbit/s sample).
TCP_BLOCK = 4096


def iperf(
    ns: str,
    dst: str,
    port: int,
    seconds: float,
    proto: str,
    bps: int | None,
    streams: int = 1,
    server_output: bool = False,
) -> list[str]:
    cmd = [
        "ip",
        "netns",
        "exec",
        ns,
        "iperf3",
        "-c",
        dst,
        "-p",
        str(port),
        "-t",
        f"{seconds:g}",
        "-J",
        "-P",
        str(streams),
    ]
    if proto == "udp":
        cmd += ["-u", "-l", str(UDP_PAYLOAD), "-b", str(bps or 0)]
    else:
        cmd += ["-l", str(TCP_BLOCK)]
        if bps:
            cmd += ["-b", str(bps // streams)]
    if server_output:
        cmd.append("--get-server-output")
    return cmd


def flows(lab: Lab, cfg: Config, proto: str) -> dict[str, list[str]]:
    """iperf3 client command per flow name (rx-<vm>: towards it, tx-<vm>: from it)."""
    seconds = cfg.seconds + 0.5
    out = {}
    for i, (name, vm) in enumerate(SERVER_VMS.items()):
        if proto == "udp":
            rate = (
                round(cfg.greedy_offer * cfg.link_bps)
                if name == GREEDY
                else round(cfg.want * cfg.guarantee_bps)
            )
            out[f"rx-{name}"] = iperf(
                lab.peer_ns, vm.ips[0], RX_PORT, seconds, "udp", rate, server_output=True
            )
        else:
            streams = cfg.greedy_streams if name == GREEDY else 1
            out[f"rx-{name}"] = iperf(
                lab.peer_ns, vm.ips[0], RX_PORT, seconds, "tcp", None, streams, True
            )
        send = round(cfg.send_share * cfg.link_bps)
        out[f"tx-{name}"] = iperf(
            lab.vm_ns[name], PEER.ips[0], TX_PORT_BASE + i, seconds, proto, send
        )
    return out


def iperf_json(text: str) -> dict[str, Any]:
    """An iperf3 client's -J document; warnings it printed first (UDP: "block
    size exceeds TCP MSS") are skipped. ValueError if there is none."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in iperf3's output")
    doc, _ = json.JSONDecoder().raw_decode(text, start)
    if not isinstance(doc, dict):
        raise ValueError("iperf3's JSON is not an object")
    return doc


def iperf_summary(text: str, proto: str) -> dict[str, Any]:
    try:
        end = iperf_json(text)["end"]
    except (ValueError, KeyError):
        return {"error": text[-300:]}
    if proto == "udp":
        s = end.get("sum", {})
        return {"bps": s.get("bits_per_second"), "lost_percent": s.get("lost_percent")}
    return {
        "sent_bps": end.get("sum_sent", {}).get("bits_per_second"),
        "received_bps": end.get("sum_received", {}).get("bits_per_second"),
        "retransmits": end.get("sum_sent", {}).get("retransmits"),
    }


def goodput_series(text: str) -> list[tuple[float, float]]:
    """(interval end s, Mbit/s) of what the receiving iperf3 read, from the
    server output a client fetched (--get-server-output); [] without it."""
    try:
        server = iperf_json(text)["server_output_json"]
    except (ValueError, KeyError):
        return []
    out = []
    for interval in server.get("intervals", []):
        total = interval["sum"]
        seconds = total["end"] - total["start"]
        if seconds > 0:
            out.append((total["end"], total["bytes"] * 8 / seconds / 1e6))
    return out


def sample(lab: Lab, seconds: float, stop_event: threading.Event) -> dict[str, list]:
    """Every 100 ms: each VM's received bytes, the server link's bytes."""
    out: dict[str, list] = {name: [] for name in SERVER_VMS}
    out["link"] = []
    t0 = time.monotonic()
    tick = 0
    while not stop_event.is_set():
        now = time.monotonic() - t0
        for name, pid in lab.anchors.items():
            out[name].append((now, ns_dev_bytes(pid, "vm")[0]))
        out["link"].append((now, root_dev_bytes(lab.link_iface, "tx")))
        if now >= seconds:
            break
        tick += 1
        time.sleep(max(0.0, t0 + tick * SAMPLE_S - time.monotonic()))
    return out


def switch_counters(lab: Lab) -> dict[str, Any]:
    """What the ToR counted: bytes it took in from the peer (its VM TX
    counter), against what the peer's port carried to it (the veth's
    kernel counter); drops per reason."""
    got = CounterReader(lab.controller).collect(vms=[PEER.name])
    return {
        "peer_taken_bytes": got.vms[0].tx.bytes,
        "peer_port_bytes": root_dev_bytes(lab.peer_iface, "rx"),
        "drops": got.drops.get("tor1", {}),
    }


def counters_delta(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    port = b["peer_port_bytes"] - a["peer_port_bytes"]
    return {
        # ~1.0: the switch took in all that was offered (its input kept up)
        "switch_took_in": (b["peer_taken_bytes"] - a["peer_taken_bytes"]) / port if port else None,
        "offered_mbps": port * 8 / 1e6,  # (divided by the run's seconds below)
        "drops": {
            k: v - a["drops"].get(k, 0) for k, v in b["drops"].items() if v - a["drops"].get(k, 0)
        },
    }


def ours(pid: int, me: int) -> bool:
    """Whether ``pid`` is this process or one it started (at any depth)."""
    while pid > 1:
        if pid == me:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def other_work(before: dict[int, tuple[str, float]], busy: float, wall: float) -> dict[str, Any]:
    """CPU the rest of the machine took meanwhile (processes this benchmark
    did not start), in cores, and the busiest of them: the figures are only
    as good as the machine was quiet."""
    after, me = process_table(), os.getpid()
    others = sorted(
        (
            (after[p][1] - cpu, name)
            for p, (name, cpu) in before.items()
            if p in after and not ours(p, me)
        ),
        reverse=True,
    )
    return {
        "machine_busy_cores": round((machine_busy_seconds() - busy) / wall, 2),
        "others_cores": round(sum(c for c, _ in others) / wall, 2),
        "busiest_others": [f"{n} {c / wall:.2f}" for c, n in others[:3] if c / wall >= 0.05],
    }


def one_run(lab: Lab, cfg: Config, proto: str, arm: str, round_: int) -> dict[str, Any]:
    shaping = set_arm(lab, cfg, arm)
    counters0 = switch_counters(lab)
    tcp0 = ns_tcp_counters(lab.peer_anchor)
    commands = flows(lab, cfg, proto)
    load_before = os.getloadavg()[0]
    assert lab.switch.process is not None
    cpu0, wall0 = process_cpu_seconds(lab.switch.process.pid), time.monotonic()
    table0, busy0 = process_table(), machine_busy_seconds()
    clients = {
        name: subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, cmd in commands.items()
    }
    try:
        raw = sample(lab, cfg.seconds, threading.Event())
        outputs = {name: p.communicate(timeout=cfg.seconds + 30)[0] for name, p in clients.items()}
    finally:
        for p in clients.values():
            stop(p)
    cpu1, wall1 = process_cpu_seconds(lab.switch.process.pid), time.monotonic()
    machine_share = other_work(table0, busy0, wall1 - wall0)
    switch = counters_delta(counters0, switch_counters(lab))
    tcp1 = ns_tcp_counters(lab.peer_anchor)
    switch["offered_mbps"] /= wall1 - wall0
    series = {name: qos_report.throughput_mbps(raw[name]) for name in SERVER_VMS}
    link = qos_report.throughput_mbps(raw["link"])
    warm = [m for t, m in link if t > cfg.warmup]
    vm_bytes = sum(raw[n][-1][1] - raw[n][0][1] for n in SERVER_VMS)
    link_bytes = raw["link"][-1][1] - raw["link"][0][1]
    run = {
        "protocol": proto,
        "arm": arm,
        "round": round_,
        "link_mbps": cfg.link_mbps,
        "guarantee_mbps": cfg.guarantee_bps / 1e6,
        "guaranteed": list(GUARANTEED),
        "greedy": GREEDY,
        "warmup_s": cfg.warmup,
        "set": shaping,
        "series": {n: [(round(t, 3), round(m, 3)) for t, m in s] for n, s in series.items()},
        # What each VM's application received (retransmitted duplicates are
        # in the interface's bytes, not here).
        # (The clients run half a second longer than the samples: their last,
        # partial interval is left out, as the counters' samples end.)
        "goodput_series": {
            n: [
                (round(t, 3), round(m, 3))
                for t, m in goodput_series(outputs[f"rx-{n}"])
                if t <= cfg.seconds
            ]
            for n in SERVER_VMS
        },
        "link_series": [(round(t, 3), round(m, 3)) for t, m in link],
        "link_used_median": sorted(warm)[len(warm) // 2] / cfg.link_mbps if warm else 0.0,
        # VMs' frames (14-byte header) against the ToR's (+ 4-byte tag): in arm B
        # (no shaper on the server) ~0.997 means the relays delivered everything.
        "relay_kept": vm_bytes / link_bytes if link_bytes else None,
        "switch_cpu_share": (cpu1 - cpu0) / (wall1 - wall0),
        "switch": switch,
        "machine": machine_share,
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "iperf": {name: iperf_summary(out, proto) for name, out in outputs.items()},
        # The peer's TCP (sender of every receive flow) over the run.
        "peer_tcp": {k: tcp1[k] - tcp0.get(k, 0) for k in tcp1},
    }
    run["stats"] = qos_report.summarise(run)
    return run


def print_run(run: dict) -> None:
    s = run["stats"]
    parts = []
    for vm in run["guaranteed"]:
        v = s["vms"][vm]
        g = s.get("goodput", {}).get(vm)
        parts.append(
            f"{vm} p1/p5/med/min {v['p1']:.1f}/{v['p5']:.1f}/{v['median']:.1f}/{v['min']:.1f} "
            f"(p5 {v['of_guarantee']['p5']:.2f} of guarantee"
            + (f"; goodput p5 {g['of_guarantee']['p5']:.2f}, mean {g['mean']:.1f})" if g else ")")
        )
    x = s["greedy"]
    print(
        f"  {run['protocol']} arm {run['arm']} round {run['round']}: "
        + "; ".join(parts)
        + f"; {run['greedy']} {x.get('of_link_median', 0):.2f} of link"
        + f"; link used {run['link_used_median']:.2f}, relays kept {run['relay_kept']:.3f}, "
        f"switch CPU {run['switch_cpu_share']:.2f}, took in "
        f"{run['switch']['switch_took_in']:.3f} of {run['switch']['offered_mbps']:.1f} Mbit/s, "
        f"drops {run['switch']['drops']}, load {run['load']}, others "
        f"{run['machine']['others_cores']:.2f} cores {run['machine']['busiest_others']}",
        flush=True,
    )
    if run["protocol"] == "tcp":
        tcp = run["peer_tcp"]
        rx = {n[3:]: f for n, f in run["iperf"].items() if n.startswith("rx-")}
        retrans = {vm: f.get("retransmits") for vm, f in rx.items()}
        goodput = {vm: round((f.get("received_bps") or 0) / 1e6, 2) for vm, f in rx.items()}
        print(
            f"    goodput (iperf3, Mbit/s) {goodput}; "
            f"peer TCP: retransmits per flow {retrans}, reordering seen "
            f"{tcp.get('TCPSACKReorder', 0) + tcp.get('TCPTSReorder', 0)}, DSACKs "
            f"{tcp.get('TCPDSACKRecv', 0)}, undone {tcp.get('TCPDSACKUndo', 0)}+"
            f"{tcp.get('TCPLossUndo', 0)}, timeouts {tcp.get('TCPTimeouts', 0)}",
            flush=True,
        )


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout


def pipeline_at(rev: str, out: Path) -> Pipeline:
    """The committed BMv2 build of p4vtep at ``rev`` (as dataplane_paths.pipeline_at)."""
    files = {}
    for name in ("p4vtep.json", "p4vtep.p4info.txtpb"):
        data = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{rev}:p4src/v1model/build/{name}"],
            check=True,
            capture_output=True,
        ).stdout
        files[name] = out / f"{rev}-{name}"
        files[name].write_bytes(data)
    return Pipeline(files["p4vtep.p4info.txtpb"], files["p4vtep.json"])


def store_result(entry: dict, png_name: str, results: Path) -> Path:
    day = time.strftime("%Y-%m-%d")
    path = results / f"qos-{day}.json"
    data = json.loads(path.read_text()) if path.exists() else {"entries": []}
    entry["png"] = png_name
    data["entries"] = [e for e in data["entries"] if e.get("label") != entry["label"]]
    data["entries"].append(entry)
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")  # (series: compact)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--link", type=float, default=25.0, help="server link, Mbit/s")
    p.add_argument("--guarantee", type=float, default=0.2, help="g1's and g2's CIR, of the link")
    p.add_argument("--greedy-cir", type=float, default=0.01, help="x's CIR, of the link")
    p.add_argument(
        "--want",
        type=float,
        default=1.25,
        help="UDP: what g1 and g2 are offered, x their guarantee",
    )
    p.add_argument(
        "--greedy-offer", type=float, default=1.5, help="UDP: what x is offered, x the link"
    )
    p.add_argument("--greedy-streams", type=int, default=4, help="TCP streams towards x")
    p.add_argument(
        "--send-share", type=float, default=0.035, help="what each VM sends, of the link"
    )
    p.add_argument("--seconds", type=float, default=60.0, help="per arm and protocol")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds left out of the figures")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--protocols", default="tcp,udp")
    p.add_argument("--arms", default="A,B,C")
    p.add_argument(
        "--link-emulation",
        choices=("auto", "fabric", "queues", "tbf"),
        default="auto",
        help="fabric: the controller programs BMv2's queues from link_rate; queues: this "
        "benchmark sets them (a build before that); tbf: a tc FIFO on the ToR's side; "
        "auto: fabric if simple_switch_grpc serves Thrift, else tbf",
    )
    p.add_argument(
        "--pipeline-rev",
        help="the committed BMv2 build of this revision (default: the working tree's)",
    )
    p.add_argument("--commit", help="the code's commit, for a tree that is not a git work tree")
    p.add_argument("--label", help="the run's name in the results (default: the commit)")
    p.add_argument("--no-store", action="store_true", help="print only")
    p.add_argument("--results", type=Path, default=RESULTS, help="where the JSON and PNG go")
    args = p.parse_args()
    require_switch()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, tc)")
        return
    emulation, why = args.link_emulation, ""
    if emulation in ("auto", "fabric", "queues"):
        with tempfile.TemporaryDirectory(prefix="p4vq-") as tmp:
            thrift = switch_has_thrift(Path(tmp))
        if not thrift:
            why = "simple_switch_grpc was built without Thrift: BMv2's queue rates cannot be set"
            if emulation != "auto":
                sys.exit(f"--link-emulation {emulation}: {why}")
            emulation = "tbf"
            print(f"link emulation: tbf ({why})", flush=True)
        elif emulation == "auto":
            emulation = "fabric"
    cfg = Config(
        link_bps=round(args.link * 1e6),
        guarantee=args.guarantee,
        greedy_cir=args.greedy_cir,
        want=args.want,
        greedy_offer=args.greedy_offer,
        greedy_streams=args.greedy_streams,
        send_share=args.send_share,
        seconds=args.seconds,
        warmup=args.warmup,
        link_emulation=emulation,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    commit = args.commit or git("rev-parse", "--short", "HEAD").strip()
    dirty = not args.commit and bool(git("status", "--porcelain", "--untracked-files=no").strip())
    label = args.label or f"{commit}{'+dirty' if dirty else ''}"
    runs = []
    with tempfile.TemporaryDirectory(prefix="p4vq-") as tmp:
        pipeline = (
            pipeline_at(args.pipeline_rev, Path(tmp)) if args.pipeline_rev else bmv2_pipeline()
        )
        with lab(cfg, pipeline, Path(tmp)) as the_lab:
            print(
                f"QoS benchmark: link {cfg.link_mbps:g} Mbit/s ({cfg.link_emulation}), "
                f"guarantee {cfg.guarantee_bps / 1e6:g} Mbit/s, {cfg.seconds:g} s per arm",
                flush=True,
            )
            for round_ in range(1, args.rounds + 1):
                for proto in args.protocols.split(","):
                    for arm in args.arms.split(","):
                        run = one_run(the_lab, cfg, proto, arm, round_)
                        print_run(run)
                        runs.append(run)
    entry = {
        "label": label,
        "commit": commit,
        "dirty": dirty,
        "pipeline": args.pipeline_rev or "working tree",
        "machine": machine(),
        "load": f"{runs[0]['load'][0]}-{runs[-1]['load'][1]}" if runs else "?",
        "config": {
            "link_mbps": cfg.link_mbps,
            "guarantee_mbps": cfg.guarantee_bps / 1e6,
            "greedy_cir": cfg.greedy_cir,
            "want": cfg.want,
            "greedy_offer": cfg.greedy_offer,
            "greedy_streams": cfg.greedy_streams,
            "send_share": cfg.send_share,
            "seconds": cfg.seconds,
            "warmup_s": cfg.warmup,
            "link_emulation": {
                "fabric": "BMv2's queue rates, programmed by the controller from link_rate",
                "queues": "BMv2's queue rates (all queues of the port), set by the benchmark",
                "tbf": "a tc tbf FIFO on the ToR's side of the server link",
            }[cfg.link_emulation],
            "link_emulation_why": why,
            "shaper_latency_ms": cfg.tbf_latency_ms,
        },
        "runs": runs,
    }
    print("\n".join(qos_report.table(entry)))
    for run in runs:
        if run["arm"] == "B":
            ok = qos_report.met(run["stats"], run["guaranteed"])
            print(
                f"arm B {run['protocol']} round {run['round']}: target p5 >= "
                f"{qos_report.TARGET_P5} of the guarantee {'met' if ok else 'NOT met'}"
            )
    if args.no_store:
        return
    png = f"qos-{time.strftime('%Y-%m-%d')}-{label.replace('+', '-')}.png"
    args.results.mkdir(exist_ok=True)
    qos_report.plot(entry, args.results / png)
    path = store_result(entry, png, args.results)
    print(f"wrote {path} and {args.results / png}")


if __name__ == "__main__":
    main()
