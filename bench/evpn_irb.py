#!/usr/bin/env python3
"""Benchmark: routes of a routed tenant learned through EVPN from a peer
(symmetric IRB), into the switches.

A second gobgpd stands in for another VTEP (a peer, iBGP, in a network
namespace of its own; the controller's speaker in another) and injects
two-label type 2 routes (MAC+IP, labels [7000, 50000], the VRF's route
targets, its router MAC) for hosts of a subnet that no p4vtep ToR hosts, so
each becomes a host route of VRF red on both BMv2 ToRs (towards the peer's
VTEP and router MAC over L3 VNI 50000), nothing else.

1. **Learning rate.** ``--routes`` (10,000) routes sent in one AddPathStream
   (1,000 paths per request, encoded beforehand); timed from just before the
   first is sent until the controller's desired state holds them all
   (committed), until both ToRs acknowledged the writes (acked), and until
   both switches read back exactly what the controller compiles, host_route
   table included (verified, with the count of host routes towards the
   peer); with the commits it took and the CPU seconds of this process and
   of the switches. Then every route withdrawn at once (one DeletePath for
   all), timed the same way until none is left. ``--rounds`` times, and one
   learning more whose routes stay for part 2.
2. **From one new route to the first routed frame.** A VM on tor1 sends a
   frame every millisecond through the anycast gateway to an IP nobody
   announces yet (dropped: no route); the peer then announces that IP (one
   AddPath); timed from just before the AddPath until the first frame routed
   to it leaves tor1's uplink (VXLAN, VNI 50000, to the peer's router MAC,
   that IP), on the wire. ``--samples`` times, a new IP each, first with
   none of the peer's routes installed, then with the ``--routes`` installed.

The controller, its EVPN source, the peer's API client and the probes run in
this one process, as the other benchmarks do.

Result: bench/results/evpn_irb.json. It reports; it asserts nothing on speed.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import percentile, require_switch, summary, switches, write_result
from dataplane_load import process_cpu_seconds
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn import gobgp_api, gobgp_codec
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.evpn.speaker import GoBgpSpeaker, wait_for
from p4vtep.model.fabric import Fabric, Server, Subnet, Tor, Uplink, Vm, Vni, Vrf
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import VethSet
from p4vtep.switch.reconciler import SwitchReader, diff
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

ASN = 65000
L3VNI, PEER_VNI = 50000, 7000  # the peer's hosts: a subnet (L2 VNI) no ToR hosts
PEER_VTEP, PEER_RMAC = "10.0.9.10", "02:fe:00:00:00:09"
PEER_RTS = (f"{ASN}:{PEER_VNI}", f"{ASN}:{L3VNI}")
ANYCAST = "00:00:5e:00:01:01"
UPLINK_MAC = "00:5e:00:00:01:01"
SUBNETS = {5000: "10.50", 5001: "10.51"}  # VRF red's two subnets (/16)
PROBER = Vm("prober", "02:aa:00:00:00:01", ("10.50.200.1",), 5000, "s1", 4000)
OTHER = Vm("other", "02:aa:00:00:00:02", ("10.51.200.2",), 5001, "s2", 4000)
BATCH = 1000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def peer_ip(i: int) -> str:
    """The i-th host behind the peer (10.70.0.1 ...)."""
    n = i + 1
    return f"10.70.{n >> 8}.{n & 255}"


def probe_ip(i: int) -> str:
    """The i-th host the peer announces while a probe waits for it."""
    n = i + 1
    return f"10.71.{n >> 8}.{n & 255}"


def peer_route(ip: str, i: int) -> MacIpRoute:
    mac = f"02:70:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}"
    return MacIpRoute(
        f"{PEER_VTEP}:{PEER_VNI}", mac, PEER_VNI, PEER_VTEP, ip, PEER_RTS,
        l3vni=L3VNI, router_mac=PEER_RMAC,
    )  # fmt: skip


def background(count: int) -> list[Vm]:
    """``count`` routed VMs over both ToRs and both subnets."""
    vms = []
    for i in range(count):
        vni = 5000 + (i // 2) % 2
        n = i + 1
        vms.append(
            Vm(
                f"bg{i}",
                f"02:bb:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}",
                (f"{SUBNETS[vni]}.{n >> 8}.{n & 255}",),
                vni,
                f"s{1 + i % 2}",
                1 + i // 2,
            )
        )
    return vms


@contextmanager
def speaker_namespaces() -> Iterator[tuple[str, str, str, str]]:
    """Two namespaces joined by a veth, for the controller's speaker and the
    peer's: (controller's ns, its IP, peer's ns, its IP). Removed on exit."""
    tag = os.getpid() % 100000
    ctl_ns, peer_ns = f"p4vq-c{tag}", f"p4vq-p{tag}"
    net = f"10.97.{tag % 250}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        ip("netns", "add", ctl_ns)
        ip("netns", "add", peer_ns)
        ip("-n", ctl_ns, "link", "add", "bgp0", "type", "veth", "peer", "name", "bgp0",
           "netns", peer_ns)  # fmt: skip
        for ns, host in ((ctl_ns, 1), (peer_ns, 2)):
            ip("-n", ns, "addr", "add", f"{net}.{host}/24", "dev", "bgp0")
            ip("-n", ns, "link", "set", "bgp0", "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield ctl_ns, f"{net}.1", peer_ns, f"{net}.2"
    finally:
        for ns in (ctl_ns, peer_ns):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def make_fabric(addresses: list[str], ctl_ip: str, peer_address: str) -> Fabric:
    fabric = Fabric()
    for t, address in enumerate(addresses, start=1):
        name = f"tor{t}"
        fabric.tors[name] = Tor(
            name, address, t, f"10.0.0.{t}", f"00:aa:00:00:00:0{t}", (Uplink(3, UPLINK_MAC),)
        )
        fabric.servers[f"s{t}"] = Server(f"s{t}", name, 1)
    fabric.anycast_gateway_mac = ANYCAST
    fabric.vrfs["red"] = Vrf("red", L3VNI)
    for vni, net in SUBNETS.items():
        fabric.vnis[vni] = Vni(
            vni, f"red-{vni}", vrf="red", subnets=(Subnet(f"{net}.0.0/16", f"{net}.255.254"),)
        )
    fabric.evpn = EvpnConfig(
        asn=ASN,
        router_id=ctl_ip,
        peers=(EvpnPeer(peer_address, ASN),),
        vnis=tuple(VniRouting(v, None, (f"{ASN}:{v}",), (f"{ASN}:{v}",)) for v in SUBNETS),
    ).for_fabric(fabric)
    return fabric


def _ignore(*_: object) -> None:
    pass


class Peer:
    """The other VTEP's speaker: a gobgpd fed routes through its API; what
    it hears from the controller is ignored."""

    def __init__(self, ns: str, address: str, ctl_ip: str) -> None:
        self.speaker = GoBgpSpeaker(
            EvpnConfig(
                asn=ASN, router_id=address, peers=(EvpnPeer(ctl_ip, ASN),), vnis=(), listen_port=-1
            ),
            _ignore,
            _ignore,
            _ignore,
            _ignore,
            EvpnOptions(command_prefix=("ip", "netns", "exec", ns), local_address=address),
        )
        self.api = gobgp_api.gobgp_pb2

    @property
    def stub(self) -> Any:
        return self.speaker._stub

    def requests(self, routes: list[MacIpRoute]) -> list[Any]:
        """AddPathStream requests for ``routes``, encoded ahead of the timing."""
        api = self.api
        return [
            api.AddPathStreamRequest(
                table_type=api.GLOBAL,
                paths=[gobgp_codec.encode(r) for r in routes[start : start + BATCH]],
            )
            for start in range(0, len(routes), BATCH)
        ]

    def announce_all(self, requests: list[Any]) -> None:
        self.stub.AddPathStream(iter(requests))

    def announce(self, path: Any) -> None:
        self.stub.AddPath(self.api.AddPathRequest(table_type=self.api.GLOBAL, path=path))

    def withdraw_all(self) -> None:
        api = self.api
        self.stub.DeletePath(
            api.DeletePathRequest(table_type=api.GLOBAL, family=gobgp_codec.evpn_family())
        )


def hosts_committed(controller: Controller) -> int:
    return len(controller.desired.learned.hosts.get("red", {}))


def read_back(controller: Controller, fabric: Fabric) -> tuple[bool, dict[str, int]]:
    """Whether every ToR holds exactly what the controller compiles, and how
    many host routes towards the peer each holds."""
    p4info = bmv2_pipeline().p4info
    reader = SwitchReader(p4info)
    query = entities.table_entry(p4info, "host_route")
    exact, to_peer = True, {}
    peer_vtep = socket.inet_aton(PEER_VTEP)
    for name, tor in fabric.tors.items():
        _, desired = controller.compile_for(name)
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
            exact &= len(diff(desired, reader.read(conn))) == 0
            to_peer[name] = sum(
                1
                for e in conn.read(query)
                if e.table_entry.action.action.params
                and any(p.value == peer_vtep for p in e.table_entry.action.action.params)
            )
    return exact, to_peer


def until(predicate: Any, timeout: float, interval: float = 0.005) -> float:
    """Poll until ``predicate()``; the time it first held (perf_counter)."""
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not within {timeout} s")
        time.sleep(interval)
    return time.perf_counter()


def timed_round(
    controller: Controller, fabric: Fabric, switch_pids: list[int], send: Any, want: int
) -> dict[str, Any]:
    """``send()`` routes (or withdrawals) and time until the controller holds
    ``want`` host routes of the peer (committed), both ToRs acknowledged
    them, and both switches read back exactly the compile; with the commits
    it took and the CPU seconds of this process (controller, source,
    speaker client) and of the switches until acknowledged."""
    version = controller.version
    cpu, switches_cpu = time.process_time(), sum(map(process_cpu_seconds, switch_pids))
    t0 = time.perf_counter()
    send()
    sent = time.perf_counter()
    committed = until(lambda: hosts_committed(controller) == want, 600)
    commits = controller.version - version
    assert controller.wait_version(controller.version, 600)
    acked = time.perf_counter()
    own_cpu = time.process_time() - cpu
    switch_cpu = sum(map(process_cpu_seconds, switch_pids)) - switches_cpu
    exact, to_peer = read_back(controller, fabric)
    verified = time.perf_counter()
    return {
        "sent_s": sent - t0,
        "committed_s": committed - t0,
        "acked_s": acked - t0,
        "verified_s": verified - t0,
        "commits": commits,
        "own_cpu_s": own_cpu,
        "switches_cpu_s": switch_cpu,
        "read_back_exact": exact,
        "host_routes_to_peer": to_peer,
    }


class WireWatch:
    """Arrival times of routed frames to the peer on tor1's uplink, by the
    inner destination IP: VXLAN with the L3 VNI, inner destination MAC the
    peer's router MAC."""

    def __init__(self, iface: str) -> None:
        self.first: dict[bytes, float] = {}
        self._stop = threading.Event()
        self._iface = iface
        self._thread = threading.Thread(target=self._listen, daemon=True)

    def _listen(self) -> None:
        vni = L3VNI.to_bytes(3, "big")
        rmac = bytes.fromhex(PEER_RMAC.replace(":", ""))
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as sock:
            sock.bind((self._iface, ETH_P_ALL))
            sock.settimeout(0.1)
            while not self._stop.is_set():
                try:
                    data, addr = sock.recvfrom(2048)
                except TimeoutError:
                    continue
                now = time.perf_counter()
                # outer Ethernet 14, IPv4 20, UDP 8 (port 36), VXLAN 8 (VNI 46),
                # inner Ethernet 14 (dst MAC 50), inner IPv4 (dst 80)
                if (
                    addr[2] != PACKET_OUTGOING
                    and len(data) >= 84
                    and data[36:38] == b"\x12\xb5"
                    and data[46:49] == vni
                    and data[50:56] == rmac
                ):
                    self.first.setdefault(data[80:84], now)

    def __enter__(self) -> WireWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def first_frames(
    peer: Peer, iface: str, wire: str, samples: int, first: int, installed: int
) -> dict[str, Any]:
    """Per sample: a probe every ms to a new IP (the ``first``-th on), then
    the peer announces it; seconds from just before the AddPath to the first
    routed frame on the wire. ``installed``: the peer's routes already held."""
    target = [b""]
    stop = threading.Event()

    def send() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
            sock.bind((iface, 0))
            while not stop.is_set():
                frame = target[0]
                if frame:
                    sock.send(frame)
                time.sleep(0.001)

    delays: list[float] = []
    early = 0
    sender = threading.Thread(target=send, daemon=True)
    with WireWatch(wire) as watch:
        sender.start()
        for i in range(first, first + samples):
            ip = probe_ip(i)
            key = socket.inet_aton(ip)
            target[0] = bytes(
                Ether(src=PROBER.mac, dst=ANYCAST)
                / Dot1Q(vlan=PROBER.vlan)
                / IP(src=PROBER.ips[0], dst=ip)
                / UDP(sport=7, dport=7)
            )
            time.sleep(0.05)  # probes to an IP with no route yet: dropped
            early += key in watch.first
            path = gobgp_codec.encode(peer_route(ip, 1 << 20 | i))
            t0 = time.perf_counter()
            peer.announce(path)
            deadline = t0 + 10
            while key not in watch.first and time.perf_counter() < deadline:
                time.sleep(0.0005)
            seen = watch.first.get(key)
            delays.append(seen - t0 if seen is not None else float("nan"))
        stop.set()
        sender.join()
    ok = [d for d in delays if d == d]
    return {
        "routes_installed": installed,
        **summary(ok),
        "p50": percentile(ok, 50),
        "p99": percentile(ok, 99),
        "missing": len(delays) - len(ok),
        "before_route": early,
        "samples": delays,
    }


def rates(rounds: list[dict[str, Any]], n: int, key: str) -> dict[str, Any]:
    return summary([n / r[key] for r in rounds])


def rounds_summary(rounds: list[dict[str, Any]], n: int) -> dict[str, Any]:
    keys = ("sent_s", "committed_s", "acked_s", "verified_s", "commits", "own_cpu_s")
    return {
        "routes_per_s_acked": rates(rounds, n, "acked_s"),
        "routes_per_s_verified": rates(rounds, n, "verified_s"),
        **{key: summary([r[key] for r in rounds]) for key in (*keys, "switches_cpu_s")},
        "read_back_exact": [r["read_back_exact"] for r in rounds],
        "host_routes_to_peer": [r["host_routes_to_peer"] for r in rounds],
        "runs": rounds,
    }


def say_frames(frames: dict[str, Any]) -> None:
    print(
        f"first routed frame after a new route, {frames['routes_installed']} installed: p50 "
        f"{frames['p50'] * 1e3:.1f} ms, p99 {frames['p99'] * 1e3:.1f} ms, max "
        f"{frames['max'] * 1e3:.1f} ms ({frames['missing']} missing, "
        f"{frames['before_route']} before the route)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routes", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--vms", type=int, default=1000, help="routed VMs of our own")
    args = parser.parse_args()
    require_switch()
    if gobgp_api.MISSING:
        print(f"SKIP: {gobgp_api.MISSING}")
        return
    n = args.routes
    tag = os.getpid() % 10000
    with (
        tempfile.TemporaryDirectory() as tmp,
        speaker_namespaces() as (ctl_ns, ctl_ip, peer_ns, peer_address),
        VethSet(f"pq{tag}", 4) as veths,
    ):
        (p1s, p1h), (u1s, u1h), (p2s, _), (u2s, _) = veths.pairs
        ports = {1: {1: p1s, 3: u1s}, 2: {1: p2s, 3: u2s}}
        with switches(2, Path(tmp) / "logs", ports) as sws:
            fabric = make_fabric([sw.grpc_address for sw in sws], ctl_ip, peer_address)
            controller = Controller(
                fabric, bmv2_pipeline(), Store(Path(tmp) / "state.db"), resync_seconds=3600
            )
            source = EvpnSource(
                controller,
                EvpnOptions(
                    command_prefix=("ip", "netns", "exec", ctl_ns), listen_addresses=(ctl_ip,)
                ),
            )
            peer = Peer(peer_ns, peer_address, ctl_ip)
            source.start(initial_wait=0)
            peer.speaker.start()
            try:
                controller.replace_source("inventory", [*background(args.vms), PROBER, OTHER])
                controller.start()
                assert controller.wait_converged(600)
                assert wait_for(
                    lambda: any(p.state == "ESTABLISHED" for p in peer.speaker.peers()),
                    60,
                ), "no BGP session between the peer and the controller's speaker"
                pids = [sw.process.pid for sw in sws if sw.process is not None]
                frames = [first_frames(peer, p1h, u1h, args.samples, 0, 0)]
                say_frames(frames[0])
                timed_round(controller, fabric, pids, peer.withdraw_all, 0)
                learned, withdrawn = [], []
                routes = peer.requests([peer_route(peer_ip(i), i) for i in range(n)])

                def learn() -> dict[str, Any]:
                    done = timed_round(
                        controller, fabric, pids, lambda: peer.announce_all(routes), n
                    )
                    learned.append(done)
                    print(
                        f"{n} routes learned: committed {done['committed_s']:.2f} s "
                        f"({done['commits']} commits), acked {done['acked_s']:.2f} s "
                        f"({n / done['acked_s']:.0f} routes/s; CPU: this process "
                        f"{done['own_cpu_s']:.1f} s, switches {done['switches_cpu_s']:.1f} s), "
                        f"read back exact {done['read_back_exact']} {done['host_routes_to_peer']}",
                        flush=True,
                    )
                    return done

                for _ in range(args.rounds):
                    learn()
                    withdrawn.append(timed_round(controller, fabric, pids, peer.withdraw_all, 0))
                    print(f"  withdrawn: acked {withdrawn[-1]['acked_s']:.2f} s", flush=True)
                learn()  # (installed again, for the probes; another round of learning)
                frames.append(first_frames(peer, p1h, u1h, args.samples, args.samples, n))
                say_frames(frames[1])
                timed_round(controller, fabric, pids, peer.withdraw_all, 0)
            finally:
                controller.stop()
                peer.speaker.stop()
                source.stop()
    result = {
        "routes": n,
        "vms": args.vms + 2,
        "rounds": args.rounds,
        # rounds + 1 learnings (the last one stays for the second probes), rounds withdrawals
        "learn": rounds_summary(learned, n),
        "withdraw": rounds_summary(withdrawn, n),
        "first_frame_seconds": frames,
        "method": {
            "peer": "gobgpd (iBGP) in a namespace, AddPathStream of 1,000 paths per request",
            "probe_interval_ms": 1,
            "tors": 2,
            "niceness": os.nice(0),
            "loadavg_after": os.getloadavg(),
        },
    }
    write_result("evpn_irb", result)


if __name__ == "__main__":
    main()
