#!/usr/bin/env python3
"""Benchmark: routes of a routed tenant learned through EVPN from a peer
(symmetric IRB), into the switches, against a raw P4Runtime writer.

A second gobgpd stands in for another VTEP (peer A, iBGP, in a network
namespace of its own; the controller's speaker in another) and sends
two-label type 2 routes (MAC+IP, labels [7000, 50000], the VRF's route
targets, its router MAC) for hosts of a subnet that no p4vtep ToR hosts, so
each becomes a host route of VRF red on both BMv2 ToRs (towards the peer's
VTEP and router MAC over L3 VNI 50000), nothing else. A third gobgpd (peer
B, another VTEP) holds ``--other`` routes throughout: what happens to peer
A's routes must leave them alone.

Peer A is ``bgp_injector.Injector``: a BGP session of its own that writes
UPDATEs encoded beforehand, several routes each, as FRR packs them (a gobgpd
peer sends one route per UPDATE and takes routes through its API in
quadratic time; ``bgp_injector.PER_UPDATE`` says how many and why). Its
delivery rate is ``--routes`` over the time its one ``sendall`` took (the
controller's gobgpd reading them off the session); the
controller's speaker also notes when each of gobgpd's events reached it
(``GoBgpSpeaker.received``).

Each round, in turn:

1. **Raw writer.** The same entries the learning installs (host routes of
   peer A's hosts on both ToRs, encoded beforehand from the controller's
   compile) written by a raw P4Runtime client (primary for the time, 1,000
   updates per request, one thread per ToR), read back from both switches
   and compared with what they must hold (verified); then deleted the same
   way (the reference for withdrawal and session loss).
2. **Learning.** Timed from the injector's first byte until the
   controller's desired state holds them all (committed), both ToRs
   acknowledged the writes (acked), and both switches read back exactly
   what they must hold (verified, the same comparison as the raw writer's).
3. **Withdrawal.** Peer A withdraws every route (UPDATEs of MP_UNREACH_NLRI),
   timed the same way.
4. **Learning again**, then **session loss**: peer A's session ends (a
   NOTIFICATION, Cease, and the connection closed), timed from there until
   none of its routes is left on either ToR; peer B's routes counted on both
   switches before and after. Peer A connects again for the next round.

``learn.over_raw``: per learning, the raw writer's seconds until verified
over the learning's (the raw writer of the same round), median over all.
Then ``--big`` routes (half IPv4, half IPv6 hosts: BMv2's host_route table
holds 65,536) learned the same way: time to installed, peak RSS of this
process (the controller, its source, the bench) and of the controller's
gobgpd.

**From one new route to the first routed frame.** A VM on tor1 sends a
frame every millisecond through the anycast gateway to an IP nobody
announces yet (dropped: no route); peer A then announces that IP (one
UPDATE); timed from just before the UPDATE is written until the first frame routed to
it leaves tor1's uplink (VXLAN, VNI 50000, to the peer's router MAC, that
IP), on the wire. ``--samples`` times, a new IP each, with none of the
peer's routes installed, with ``--routes``, and with ``--big``.

The controller, its EVPN source, the peers' API clients, the raw writer and
the probes run in this one process, as the other benchmarks do.

Result: bench/results/evpn_irb.json. It reports; it asserts nothing on speed.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from bgp_injector import PER_UPDATE, Host, Injector
from common import percentile, require_switch, summary, switches, write_result
from dataplane_load import process_cpu_seconds
from p4vtep.cli.controller_run import settle_collector
from p4vtep.compiler import SwitchState
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn import gobgp_api, gobgp_codec
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.evpn.speaker import ESTABLISHED, GoBgpSpeaker, ReceiveClock, wait_for
from p4vtep.model.fabric import Fabric, Server, Subnet, Tor, Uplink, Vm, Vni, Vrf
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection, _update_errors
from p4vtep.runtime.protos import p4runtime_pb2
from p4vtep.sources.evpn import EvpnSource
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import VethSet
from p4vtep.switch.reconciler import Diff, SwitchReader, diff
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

ASN = 65000
L3VNI, PEER_VNI = 50000, 7000  # the peer's hosts: a subnet (L2 VNI) no ToR hosts
PEER_VTEP, PEER_RMAC = "10.0.9.10", "02:fe:00:00:00:09"
OTHER_VTEP, OTHER_RMAC = "10.0.9.11", "02:fe:00:00:00:0b"  # peer B
PEER_RTS = (f"{ASN}:{PEER_VNI}", f"{ASN}:{L3VNI}")
ANYCAST = "00:00:5e:00:01:01"
UPLINK_MAC = "00:5e:00:00:01:01"
SUBNETS = {5000: "10.50", 5001: "10.51"}  # VRF red's two subnets (/16)
PROBER = Vm("prober", "02:aa:00:00:00:01", ("10.50.200.1",), 5000, "s1", 4000)
OTHER = Vm("other", "02:aa:00:00:00:02", ("10.51.200.2",), 5001, "s2", 4000)
BATCH = 1000
RAW_ELECTION_ID = 1 << 20  # above the controller's: primary while it writes
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def peer_ip(i: int, v6_from: int | None = None) -> str:
    """The i-th host behind peer A: 10.70.0.1 ...; from ``v6_from`` on,
    IPv6 (2001:db8:70::1 ...)."""
    if v6_from is not None and i >= v6_from:
        return f"2001:db8:70::{i - v6_from + 1:x}"
    n = i + 1
    return f"10.{70 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}"


def other_ip(i: int) -> str:
    """The i-th host behind peer B."""
    n = i + 1
    return f"10.72.{n >> 8}.{n & 255}"


def probe_ip(i: int) -> str:
    """The i-th host the peer announces while a probe waits for it."""
    n = i + 1
    return f"10.71.{n >> 8}.{n & 255}"


def peer_mac(i: int, first: int = 0x70) -> str:
    return f"02:{first:02x}:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}"


def peer_route(ip: str, i: int, vtep: str = PEER_VTEP, rmac: str = PEER_RMAC) -> MacIpRoute:
    mac = peer_mac(i, 0x70 if vtep == PEER_VTEP else 0x72)
    return MacIpRoute(
        f"{vtep}:{PEER_VNI}", mac, PEER_VNI, vtep, ip, PEER_RTS, l3vni=L3VNI, router_mac=rmac,
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
def speaker_namespaces() -> Iterator[tuple[str, str, str, str, str]]:
    """Two namespaces joined by a veth, for the controller's speaker and the
    peers': (controller's ns, its IP, peers' ns, peer A's IP, peer B's IP).
    Removed on exit."""
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
        ip("-n", peer_ns, "addr", "add", f"{net}.3/24", "dev", "bgp0")
        yield ctl_ns, f"{net}.1", peer_ns, f"{net}.2", f"{net}.3"
    finally:
        for ns in (ctl_ns, peer_ns):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def make_fabric(addresses: list[str], ctl_ip: str, *peers: str) -> Fabric:
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
        peers=tuple(EvpnPeer(peer, ASN) for peer in peers),
        vnis=tuple(VniRouting(v, None, (f"{ASN}:{v}",), (f"{ASN}:{v}",)) for v in SUBNETS),
    ).for_fabric(fabric)
    return fabric


def _ignore(*_: object) -> None:
    pass


class Peer:
    """Another VTEP's speaker: a gobgpd fed routes through its API; what it
    hears from the controller is ignored."""

    def __init__(self, ns: str, address: str, ctl_ip: str) -> None:
        self.ctl_ip = ctl_ip
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

    def shut(self) -> None:
        """Close the session (a NOTIFICATION, Cease): the controller's side
        loses every route it had from us."""
        self.stub.DisablePeer(self.api.DisablePeerRequest(address=self.ctl_ip))
        assert wait_for(lambda: not self.up(), 30, 0.01), "session still up"

    def open(self) -> None:
        """Let the session come up again: the whole table is sent."""
        self.stub.EnablePeer(self.api.EnablePeerRequest(address=self.ctl_ip))

    def up(self) -> bool:
        return any(p.state == ESTABLISHED for p in self.speaker.peers())

    def peak_rss_mib(self) -> float:
        return peak_rss_mib(self.speaker.pid)


class InjectorPeer:
    """Peer A: the injector, with what it announced (withdrawals name it)."""

    def __init__(self, ns: str, address: str, ctl_ip: str) -> None:
        self.injector = Injector(
            ns, address, ctl_ip, ASN, PEER_VTEP, PEER_VNI, L3VNI, PEER_RMAC, PEER_RTS
        )
        self.held: dict[str, Host] = {}
        self.sent_s = 0.0  # how long the last send took

    def open(self) -> None:
        self.injector.connect()

    def shut(self) -> None:
        """Session lost: the speaker drops all its routes (so do we)."""
        self.injector.close()
        self.held.clear()

    def encoded(self, hosts: list[Host]) -> Callable[[], None]:
        """A send of ``hosts``' announcements, encoded now."""
        data = self.injector.announcements(hosts)

        def send() -> None:
            t = time.perf_counter()
            self.injector.send(data)
            self.sent_s = time.perf_counter() - t
            self.held.update((h.ip, h) for h in hosts)

        return send

    def withdraw_all(self) -> None:
        data = self.injector.withdrawals(list(self.held.values()))
        self.held.clear()
        t = time.perf_counter()
        self.injector.send(data)
        self.sent_s = time.perf_counter() - t


def hosts_of(count: int, v6_from: int | None = None) -> list[Host]:
    return [Host(peer_mac(i), peer_ip(i, v6_from)) for i in range(count)]


def peak_rss_mib(pid: int | None) -> float:
    """A process's peak resident set (VmHWM), MiB."""
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def hosts_committed(controller: Controller) -> int:
    return len(controller.desired.learned.hosts.get("red", {}))


def settle(
    controller: Controller, want: int, timeout: float = 900, interval: float = 0.005
) -> float:
    """Until the controller holds ``want`` host routes and both ToRs have
    the version that gave them (read once the commit in flight is done:
    ``desired_view`` waits for it); when it held them (perf_counter)."""
    committed = until(lambda: hosts_committed(controller) == want, timeout, interval)
    assert controller.wait_version(controller.desired_view().version, timeout)
    return committed


def host_routes_to(conn: SwitchConnection, p4info: Any, vteps: list[str]) -> dict[str, int]:
    """How many host routes (IPv4 and IPv6) the switch holds towards each VTEP."""
    wanted = {socket.inet_aton(v): v for v in vteps}
    counts = dict.fromkeys(vteps, 0)
    for table in ("host_route", "ipv6_host_route"):
        for e in conn.read(entities.table_entry(p4info, table)):
            for param in e.table_entry.action.action.params:
                vtep = wanted.get(param.value)
                if vtep is not None:
                    counts[vtep] += 1
                    break
    return counts


class Verifier:
    """Reads both switches back and compares them with what they must hold."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.p4info = bmv2_pipeline().p4info
        self.reader = SwitchReader(self.p4info)

    def exact(self, expected: dict[str, SwitchState]) -> bool:
        ok = True
        for name, tor in self.fabric.tors.items():
            with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
                ok &= len(diff(expected[name], self.reader.read(conn))) == 0
        return ok

    def counts(self) -> dict[str, dict[str, int]]:
        """Host routes towards peer A and peer B, per ToR."""
        out = {}
        for name, tor in self.fabric.tors.items():
            with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
                out[name] = host_routes_to(conn, self.p4info, [PEER_VTEP, OTHER_VTEP])
        return out


def compiled(controller: Controller) -> dict[str, SwitchState]:
    """What every ToR must hold now: the controller's whole-state compile."""
    return {name: controller.compile_for(name)[1] for name in controller.fabric.tors}


def until(predicate: Callable[[], bool], timeout: float, interval: float = 0.005) -> float:
    """Poll until ``predicate()``; the time it first held (perf_counter)."""
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not within {timeout} s")
        time.sleep(interval)
    return time.perf_counter()


class Timed:
    """One timed change: from ``send()`` until the controller holds ``want``
    host routes (committed), both ToRs acknowledged (acked), and both read
    back ``expected`` (verified). Seconds are given from the call and, for
    a change the controller's gobgpd received path by path, from its
    receipt of the first path (``clock``): the peer's own work before it
    (its session coming up, its processing of a DeletePath) is not ours."""

    def __init__(
        self,
        controller: Controller,
        verifier: Verifier,
        switch_pids: list[int],
        clock: ReceiveClock,
        gobgpd_pid: int | None = None,
    ) -> None:
        """``gobgpd_pid``: the controller's gobgpd, whose CPU is counted
        beside this process's and the switches' (it decodes the peers'
        UPDATEs and hands them to the speaker: on a machine of 2 cores the
        three share them)."""
        self.controller, self.verifier = controller, verifier
        self.switch_pids, self.clock = switch_pids, clock
        self.gobgpd_pid = gobgpd_pid

    def run(
        self, send: Callable[[], None], want: int, expected: dict[str, SwitchState], paths: int
    ) -> dict[str, Any]:
        controller = self.controller
        version = controller.version
        switches_cpu = sum(map(process_cpu_seconds, self.switch_pids))
        gobgpd_cpu = process_cpu_seconds(self.gobgpd_pid) if self.gobgpd_pid else 0.0
        self.clock.reset()
        cpu = time.process_time()
        t0 = time.perf_counter()
        send()
        sent = time.perf_counter()
        committed = settle(controller, want)
        acked = time.perf_counter()
        commits = controller.version - version
        own_cpu = time.process_time() - cpu
        switch_cpu = sum(map(process_cpu_seconds, self.switch_pids)) - switches_cpu
        exact = self.verifier.exact(expected)
        verified = time.perf_counter()
        out: dict[str, Any] = {
            "sent_s": sent - t0,
            "committed_s": committed - t0,
            "acked_s": acked - t0,
            "verified_s": verified - t0,
            "commits": commits,
            "own_cpu_s": own_cpu,
            "switches_cpu_s": switch_cpu,
            "read_back_exact": exact,
            **(
                {"gobgpd_cpu_s": process_cpu_seconds(self.gobgpd_pid) - gobgpd_cpu}
                if self.gobgpd_pid
                else {}
            ),
            "paths_received": self.clock.paths,
            "events_received": self.clock.events,
        }
        first, last = self.clock.first, self.clock.last
        if paths:
            # the peer handed them over in the time its send took (the
            # controller's gobgpd reading them off the session)
            out["delivered_per_s"] = paths / max(out["sent_s"], 1e-6)
        if paths and first is not None and last is not None:
            out.update(
                first_received_s=first - t0,  # (by the speaker, from gobgpd)
                last_received_s=last - t0,
            )
        return out


class RawWriter:
    """A raw P4Runtime client writing pre-encoded requests to both ToRs at
    once (one thread per ToR, one request at a time, 1,000 updates each),
    as primary: the controller's supervisors step back meanwhile, and
    reconcile (finding nothing to do) once it closes."""

    def __init__(self, fabric: Fabric, verifier: Verifier) -> None:
        self.fabric, self.verifier = fabric, verifier

    def requests(self, delta: dict[str, Diff]) -> dict[str, list[p4runtime_pb2.WriteRequest]]:
        requests = {}
        for name, tor in self.fabric.tors.items():
            updates = delta[name].updates()
            batches = []
            for start in range(0, len(updates), BATCH):
                req = p4runtime_pb2.WriteRequest(
                    device_id=tor.device_id,
                    atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
                )
                req.election_id.low = RAW_ELECTION_ID
                req.updates.extend(updates[start : start + BATCH])
                batches.append(req)
            requests[name] = batches
        return requests

    def run(
        self,
        controller: Controller,
        switch_pids: list[int],
        steps: list[tuple[dict[str, list[Any]], dict[str, SwitchState]]],
    ) -> list[dict[str, Any]]:
        """Each step's requests written and its expected state read back;
        the timings per step."""
        conns = {}
        reconciles = {n: s.status.reconciles for n, s in controller.supervisors.items()}
        for name, tor in self.fabric.tors.items():
            conns[name] = SwitchConnection(tor.address, tor.device_id, election_id=RAW_ELECTION_ID)
            assert conns[name].connect()
        results = []
        try:
            for requests, expected in steps:
                switches_cpu = sum(map(process_cpu_seconds, switch_pids))
                cpu = time.process_time()
                failed: list[str] = []
                t0 = time.perf_counter()

                def write(
                    name: str, requests: dict[str, list[Any]] = requests, failed: list[str] = failed
                ) -> None:
                    for req in requests[name]:
                        try:
                            conns[name].stub.Write(req)
                        except grpc.RpcError as exc:
                            errors = _update_errors(exc, req.updates, 0, self.verifier.p4info)
                            failed.append(f"{name}: {errors[:3]} ({len(errors)} refused)")

                threads = [threading.Thread(target=write, args=(n,)) for n in self.fabric.tors]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                acked = time.perf_counter()
                own_cpu = time.process_time() - cpu
                switch_cpu = sum(map(process_cpu_seconds, switch_pids)) - switches_cpu
                exact = self.verifier.exact(expected)
                verified = time.perf_counter()
                results.append(
                    {
                        "acked_s": acked - t0,
                        "verified_s": verified - t0,
                        "own_cpu_s": own_cpu,
                        "switches_cpu_s": switch_cpu,
                        "read_back_exact": exact,
                        "refused": failed,
                    }
                )
                if failed:
                    print(f"raw writer: refused updates: {failed}", flush=True)
        finally:
            for conn in conns.values():
                conn.close()
        # The supervisors are primary again and have read their switches back.
        until(
            lambda: all(
                s.status.primary and s.status.reconciles > reconciles[n]
                for n, s in controller.supervisors.items()
            ),
            60,
            0.05,
        )
        return results


class GcWatch:
    """The cyclic collector's pauses in this process meanwhile: how many
    full (generation 2) collections, and the longest pause of each
    generation, in seconds (a pause holds every thread of the controller)."""

    def __init__(self) -> None:
        self.full = 0
        self.longest = [0.0, 0.0, 0.0]
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info["generation"]
        self.longest[generation] = max(
            self.longest[generation], time.perf_counter() - self._started
        )
        self.full += generation == 2

    def __enter__(self) -> GcWatch:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


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
    peer: InjectorPeer, iface: str, wire: str, samples: int, first: int, installed: int
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
    with WireWatch(wire) as watch, GcWatch() as collector:
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
            announce = peer.encoded([Host(peer_mac(1 << 20 | i), ip)])
            t0 = time.perf_counter()
            announce()
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
        "gc_full_collections": collector.full,
        "gc_longest_pause_s": collector.longest,
    }


def rates(rounds: list[dict[str, Any]], n: int, key: str) -> dict[str, Any]:
    return summary([n / r[key] for r in rounds if key in r])


KEYS = (
    "sent_s",
    "first_received_s",
    "last_received_s",
    "committed_s",
    "acked_s",
    "verified_s",
    "delivered_per_s",
    "commits",
    "own_cpu_s",
    "switches_cpu_s",
    "gobgpd_cpu_s",
)


def feed_alone(
    config: EvpnConfig, options: EvpnOptions, peer: InjectorPeer, n: int, rounds: int
) -> dict[str, Any]:
    """gobgpd's feed alone: the speaker as the controller runs it (the same
    config and options; each event's paths decoded), but nothing done with
    what it receives. Peer A announces and withdraws ``n`` routes ``rounds``
    times; each timed from the injector's first byte until the speaker's
    last event (``ReceiveClock``). The most the feed gives: what the
    learning would take if the controller cost nothing."""
    up = threading.Event()

    def state(address: str, is_up: bool) -> None:
        if address == peer.injector.local and is_up:
            up.set()

    def ignore(*_: object) -> None:
        pass

    speaker = GoBgpSpeaker(
        config,
        on_route=ignore,
        on_withdraw=ignore,
        on_peer_state=state,
        on_malformed=ignore,
        options=options,
        on_paths=ignore,
    )
    speaker.start()
    runs: list[dict[str, float]] = []
    try:
        peer.open()
        assert up.wait(60), "no BGP session with peer A (feed alone)"
        hosts = hosts_of(n)
        clock = speaker.received

        def arrived() -> bool:
            return clock.paths >= n

        for _ in range(rounds):
            run: dict[str, float] = {}
            for what, send in (("learn", peer.encoded(hosts)), ("withdraw", peer.withdraw_all)):
                clock.reset()
                cpu = process_cpu_seconds(speaker.pid) if speaker.pid else 0.0
                t0 = time.perf_counter()
                send()
                assert wait_for(arrived, 120, 0.002), f"feed: {what}"
                assert clock.last is not None
                run[f"{what}_s"] = clock.last - t0
                run[f"{what}_gobgpd_cpu_s"] = (
                    process_cpu_seconds(speaker.pid) - cpu if speaker.pid else 0.0
                )
            runs.append(run)
    finally:
        peer.shut()
        speaker.stop()
    return {
        "routes": n,
        **{key: summary([r[key] for r in runs]) for key in runs[0]},
        "runs": runs,
    }


def fed_over_learned(feed: dict[str, Any], learned: dict[str, Any], what: str) -> float:
    """How many times faster gobgpd's feed alone gives the speaker the
    routes than they are learned (until read back), medians."""
    n = feed["routes"]
    return float((n / feed[f"{what}_s"]["median"]) / learned["routes_per_s_verified"]["median"])


def rounds_summary(
    rounds: list[dict[str, Any]], n: int, raw: list[float] | None = None, start: str = ""
) -> dict[str, Any]:
    """``raw``: per round, the raw writer's seconds until verified, for
    ``over_raw`` (raw seconds / ours, until verified)."""
    out: dict[str, Any] = {
        "routes_per_s_acked": rates(rounds, n, f"acked{start}_s"),
        "routes_per_s_verified": rates(rounds, n, f"verified{start}_s"),
        **{k: summary([r[k] for r in rounds]) for k in KEYS if all(k in r for r in rounds)},
        "read_back_exact": [r["read_back_exact"] for r in rounds],
        "runs": rounds,
    }
    if raw is not None:
        ratios = [t / r[f"verified{start}_s"] for t, r in zip(raw, rounds, strict=True)]
        out["over_raw"] = summary(ratios)["median"]
        out["over_raw_spread"] = summary(ratios)
        acked = [r["raw_acked_s"] / r[f"acked{start}_s"] for r in rounds if "raw_acked_s" in r]
        if acked:
            out["over_raw_acked"] = summary(acked)
    if all("delivered_per_s" in r for r in rounds):
        learned = [n / r[f"acked{start}_s"] for r in rounds]
        out["delivered_over_learned"] = summary(
            [r["delivered_per_s"] / x for r, x in zip(rounds, learned, strict=True)]
        )
    return out


def say(what: str, n: int, r: dict[str, Any]) -> None:
    extra = (
        f", handed over by the peer in {r['sent_s'] * 1e3:.0f} ms ({r['delivered_per_s']:.0f}/s)"
        f", the speaker's last event at {r['last_received_s']:.2f} s"
        if "delivered_per_s" in r and "last_received_s" in r
        else ""
    )
    print(
        f"{n} routes {what}: acked {r['acked_s']:.2f} s ({n / r['acked_s']:.0f}/s), verified "
        f"{r['verified_s']:.2f} s, {r['commits']} commits{extra}; CPU: this process "
        f"{r['own_cpu_s']:.1f} s, switches {r['switches_cpu_s']:.1f} s"
        + (f", gobgpd {r['gobgpd_cpu_s']:.1f} s" if "gobgpd_cpu_s" in r else "")
        + "; read back exact "
        f"{r['read_back_exact']}",
        flush=True,
    )


def say_feed(feed: dict[str, Any]) -> None:
    n = feed["routes"]
    learn, withdraw = feed["learn_s"]["median"], feed["withdraw_s"]["median"]
    print(
        f"gobgpd's feed alone (nothing done with it): {n} routes announced in {learn:.2f} s "
        f"({n / learn:.0f}/s), withdrawn in {withdraw:.2f} s ({n / withdraw:.0f}/s); gobgpd "
        f"CPU {feed['learn_gobgpd_cpu_s']['median']:.2f} / "
        f"{feed['withdraw_gobgpd_cpu_s']['median']:.2f} s",
        flush=True,
    )


def say_frames(frames: dict[str, Any]) -> None:
    print(
        f"first routed frame after a new route, {frames['routes_installed']} installed: p50 "
        f"{frames['p50'] * 1e3:.1f} ms, p99 {frames['p99'] * 1e3:.1f} ms, max "
        f"{frames['max'] * 1e3:.1f} ms ({frames['missing']} missing, "
        f"{frames['before_route']} before the route; {frames['gc_full_collections']} full "
        f"collections, longest pause {frames['gc_longest_pause_s'][2] * 1e3:.0f} ms)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routes", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--vms", type=int, default=1000, help="routed VMs of our own")
    parser.add_argument("--other", type=int, default=1000, help="peer B's routes")
    parser.add_argument(
        "--big", type=int, default=100000, help="routes of the large case (0: none)"
    )
    parser.add_argument(
        "--commit-window",
        type=float,
        help="EvpnOptions.commit_window, seconds (default: the controller's)",
    )
    parser.add_argument(
        "--gobgpd-dir", type=Path, help="keep the controller's gobgpd socket and log there"
    )
    args = parser.parse_args()
    require_switch()
    if gobgp_api.MISSING:
        print(f"SKIP: {gobgp_api.MISSING}")
        return
    n, n_other = args.routes, args.other
    load_before = os.getloadavg()
    tag = os.getpid() % 10000
    result: dict[str, Any] = {"routes": n, "vms": args.vms + 2, "rounds": args.rounds}
    with (
        tempfile.TemporaryDirectory() as tmp,
        speaker_namespaces() as (ctl_ns, ctl_ip, peer_ns, peer_a, peer_b),
        VethSet(f"pq{tag}", 4) as veths,
    ):
        (p1s, p1h), (u1s, u1h), (p2s, _), (u2s, _) = veths.pairs
        ports = {1: {1: p1s, 3: u1s}, 2: {1: p2s, 3: u2s}}
        with switches(2, Path(tmp) / "logs", ports) as sws:
            fabric = make_fabric([sw.grpc_address for sw in sws], ctl_ip, peer_a, peer_b)
            controller = Controller(
                fabric, bmv2_pipeline(), Store(Path(tmp) / "state.db"), resync_seconds=3600
            )
            source = EvpnSource(
                controller,
                EvpnOptions(
                    command_prefix=("ip", "netns", "exec", ctl_ns),
                    listen_addresses=(ctl_ip,),
                    run_dir=args.gobgpd_dir,
                    **(
                        {"commit_window": args.commit_window}
                        if args.commit_window is not None
                        else {}
                    ),
                ),
            )
            speaker = source.service.speaker
            peer = InjectorPeer(peer_ns, peer_a, ctl_ip)
            other = Peer(peer_ns, peer_b, ctl_ip)
            # Before the controller's speaker starts (the same address): the
            # feed alone, in this run, beside which the learning is judged.
            result["feed"] = feed_alone(
                speaker.config, speaker.options, peer, n, max(args.rounds, 2)
            )
            say_feed(result["feed"])
            source.start(initial_wait=0)
            other.speaker.start()
            try:
                controller.replace_source("inventory", [*background(args.vms), PROBER, OTHER])
                controller.start()
                assert controller.wait_converged(600)
                peer.open()
                assert wait_for(other.up, 60), "no BGP session with peer B"
                pids = [sw.process.pid for sw in sws if sw.process is not None]
                verifier = Verifier(fabric)
                timed = Timed(controller, verifier, pids, speaker.received, speaker.pid)
                frames = [first_frames(peer, p1h, u1h, args.samples, 0, 0)]
                say_frames(frames[0])
                peer.withdraw_all()
                # Peer B's routes, there throughout.
                other.announce_all(
                    other.requests(
                        [peer_route(other_ip(i), i, OTHER_VTEP, OTHER_RMAC) for i in range(n_other)]
                    )
                )
                settle(controller, n_other, 300)
                without = compiled(controller)  # what the ToRs hold without peer A
                assert verifier.exact(without)
                hosts = hosts_of(n)

                def learn(expected: dict[str, SwitchState]) -> dict[str, Any]:
                    return timed.run(peer.encoded(hosts), n + n_other, expected, n)

                # A first learning, untimed: what the ToRs hold with peer A's routes.
                learn(without)
                with_peer = compiled(controller)
                assert verifier.exact(with_peer)
                counts = verifier.counts()
                assert all(c == {PEER_VTEP: n, OTHER_VTEP: n_other} for c in counts.values())
                installing = {t: diff(with_peer[t], without[t]) for t in fabric.tors}
                removing = {t: diff(without[t], with_peer[t]) for t in fabric.tors}
                raw = RawWriter(fabric, verifier)
                raw_requests = (raw.requests(installing), raw.requests(removing))
                peer.withdraw_all()
                settle(controller, n_other, 300)
                # What this process keeps for checking (the expected states,
                # the raw writer's requests) would not be in a controller's
                # process: out of the collector's sight, as the convergence
                # benchmark does; and the collector as `p4vtep controller
                # run` sets it once started (the controller's own state of
                # the moment frozen with it, its thresholds raised).
                settle_collector()

                raws: list[list[dict[str, Any]]] = []
                learned: list[dict[str, Any]] = []
                withdrawn: list[dict[str, Any]] = []
                lost: list[dict[str, Any]] = []
                untouched: list[bool] = []
                for _ in range(args.rounds):
                    # (the switches without peer A's routes)
                    raws.append(
                        raw.run(
                            controller,
                            pids,
                            [(raw_requests[0], with_peer), (raw_requests[1], without)],
                        )
                    )
                    print(
                        f"raw writer: {2 * n} entries installed and read back in "
                        f"{raws[-1][0]['verified_s']:.2f} s (acked {raws[-1][0]['acked_s']:.2f}"
                        f" s), deleted in {raws[-1][1]['verified_s']:.2f} s",
                        flush=True,
                    )
                    learned.append(learn(with_peer))
                    say("learned", n, learned[-1])
                    withdrawn.append(timed.run(peer.withdraw_all, n_other, without, n))
                    say("withdrawn", n, withdrawn[-1])
                    learned.append(learn(with_peer))
                    say("learned", n, learned[-1])
                    lost.append(timed.run(peer.shut, n_other, without, 0))
                    counts = verifier.counts()
                    untouched.append(
                        all(c == {PEER_VTEP: 0, OTHER_VTEP: n_other} for c in counts.values())
                    )
                    say("gone with the session", n, lost[-1])
                    print(f"  peer B's routes untouched: {untouched[-1]} {counts}", flush=True)
                    peer.open()
                # The raw writer's figures beside each of ours, per round.
                for i, r in enumerate(raws):
                    for x in learned[2 * i : 2 * i + 2]:
                        x["raw_acked_s"], x["raw_verified_s"] = r[0]["acked_s"], r[0]["verified_s"]
                    for x in (withdrawn[i], lost[i]):
                        x["raw_acked_s"], x["raw_verified_s"] = r[1]["acked_s"], r[1]["verified_s"]
                result["raw"] = {
                    "install": {
                        k: summary([r[0][k] for r in raws])
                        for k in ("acked_s", "verified_s", "own_cpu_s", "switches_cpu_s")
                    },
                    "delete": {
                        k: summary([r[1][k] for r in raws])
                        for k in ("acked_s", "verified_s", "own_cpu_s", "switches_cpu_s")
                    },
                    "read_back_exact": [x["read_back_exact"] for r in raws for x in r],
                    "runs": raws,
                }
                result["learn"] = rounds_summary(learned, n, [x["raw_verified_s"] for x in learned])
                result["withdraw"] = rounds_summary(
                    withdrawn, n, [x["raw_verified_s"] for x in withdrawn]
                )
                result["session_loss"] = rounds_summary(
                    lost, n, [x["raw_verified_s"] for x in lost]
                )
                result["session_loss"]["other_peer_untouched"] = untouched
                for what, key in (("learn", "learn"), ("withdraw", "withdraw")):
                    result[key]["fed_over_learned"] = fed_over_learned(
                        result["feed"], result[key], what
                    )
                result["other_routes"] = n_other
                # Installed again, for the probes.
                say("learned", n, learn(with_peer))
                frames.append(first_frames(peer, p1h, u1h, args.samples, args.samples, n))
                say_frames(frames[1])
                peer.shut()
                settle(controller, n_other, 300)
                if args.big:
                    peer.open()
                    result["big"] = big_case(
                        args, controller, source, peer, timed, verifier, n_other, p1h, u1h
                    )
                    frames.append(result["big"].pop("first_frame"))
            finally:
                controller.stop()
                other.speaker.stop()
                peer.injector.close()
                source.stop()
    result["first_frame_seconds"] = frames
    result["method"] = {
        "peer": "bench/bgp_injector.py (iBGP) in a namespace: pre-encoded UPDATEs of "
        f"{PER_UPDATE} routes each, one sendall; peer B a gobgpd",
        "withdrawal": "UPDATEs of MP_UNREACH_NLRI for every route of peer A",
        "session_loss": "peer A's NOTIFICATION (Cease) and the connection closed",
        "raw": "pre-encoded WriteRequests of 1,000 updates, one thread per ToR, primary",
        "timed_from": "the injector's first byte (session loss: its NOTIFICATION)",
        "commit_window_s": source.service.speaker.options.commit_window,
        "probe_interval_ms": 1,
        "tors": 2,
        "niceness": os.nice(0),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }
    write_result("evpn_irb", result)


def big_case(
    args: argparse.Namespace,
    controller: Controller,
    source: EvpnSource,
    peer: InjectorPeer,
    timed: Timed,
    verifier: Verifier,
    n_other: int,
    p1h: str,
    u1h: str,
) -> dict[str, Any]:
    """``--big`` routes (the second half IPv6) from peer A: time to
    installed, peak RSS; then the first routed frame after one new route
    with them installed, and the session lost."""
    big = args.big
    half = big // 2
    send = peer.encoded(hosts_of(big, half))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    version = controller.version
    clock = timed.clock
    clock.reset()
    t0 = time.perf_counter()
    send()
    sent = time.perf_counter()
    committed = settle(controller, big + n_other, 1800, 0.02)
    acked = time.perf_counter()
    commits = controller.version - version
    # (read back against the controller's compile, made after: untimed)
    checked = time.perf_counter()
    exact = verifier.exact(compiled(controller))
    counts = verifier.counts()
    verify_s = time.perf_counter() - checked
    learned = {
        "routes": big,
        "ipv6_routes": big - half,
        "sent_s": sent - t0,
        "delivered_per_s": big / (sent - t0),
        "last_received_s": (clock.last or t0) - t0,
        "committed_s": committed - t0,
        "acked_s": acked - t0,
        "routes_per_s_acked": big / (acked - t0),
        "read_back_s": verify_s,
        "commits": commits,
        "read_back_exact": exact,
        "host_routes": counts,
        "rss_peak_mib": {
            "controller_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "controller_process_before": rss_before,
            "gobgpd": peak_rss_mib(source.service.speaker.pid),
        },
    }
    print(
        f"{big} routes learned: acked {learned['acked_s']:.2f} s "
        f"({learned['routes_per_s_acked']:.0f}/s), handed over in {sent - t0:.2f} s, "
        f"{commits} commits; read back ({verify_s:.1f} s) exact {exact} {counts}",
        flush=True,
    )
    print(f"  peak RSS: {learned['rss_peak_mib']}", flush=True)
    frame = first_frames(peer, p1h, u1h, args.samples, 2 * args.samples, big)
    say_frames(frame)
    t0 = time.perf_counter()
    version = controller.version
    peer.shut()
    settle(controller, n_other, 1800, 0.02)
    learned["session_loss_acked_s"] = time.perf_counter() - t0
    learned["session_loss_commits"] = controller.version - version
    print(
        f"  session lost: gone from both ToRs after {learned['session_loss_acked_s']:.2f} s",
        flush=True,
    )
    learned["first_frame"] = frame
    return learned


if __name__ == "__main__":
    main()
