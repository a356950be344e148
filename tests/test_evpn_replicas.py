"""BGP EVPN with controller replicas: FRR peers with every replica, the leader
is SIGKILLed while traffic flows both ways between a VM behind a BMv2 ToR and
FRR's VM, and the peers lose nothing.

    [ns vma] a1 (vlan 10) ─ port 1 ┐
             (a2: no namespace)     ├ [tor1 BMv2] port 3 ══ up0 [ns frr] zebra+bgpd
                                    ┘                        br5000 ─ vxlan5000
    root ns: etcd (1 member), replicas r0..rN as processes,  └─ vmbr0 ══ vm0 [ns vm]
             each gobgpd on its own address of p4vb<pid> ───── frr0
             (10.99.<n>.1, .4, .5: FRR has a neighbor per address)

Every replica runs its own speaker (--evpn-address), advertises our VMs from
the desired state it follows and learns FRR's routes; only the leader commits
them. The figures (frames lost each way at a probe every 10 ms, switch writes
at the takeover, time to take over, how long FRR lacked our route) are
printed, not asserted: run with -s. What is asserted: FRR keeps our route
throughout, the new leader writes exactly what the switches lack (nothing
when the routes did not change), a route FRR sends during the failover is on
the switch after it, and the switch then equals the full compile of what
etcd holds plus what FRR advertises. The mutants (replica_mutant.py) check
the two mechanisms: with only the leader speaking BGP FRR loses our routes
for the failover; without the hold the takeover rewrites learned entries.
The last test measures the alternative (leader-only with graceful restart).

Needs root, BMv2, etcd, FRR, gobgpd; skips with one line otherwise. Every
namespace, veth and process is made here and removed or stopped here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from etcd_cluster import etcd_cluster, needs_etcd
from frr_lab import VM_MAC, FrrLab, needs_frr
from helpers import wait_until
from p4vtep.compiler import Learned, LearnedMac
from p4vtep.controller import Controller
from p4vtep.model.fabric import Fabric, Server, Tor, Uplink, Vm, Vni
from p4vtep.processes import stop_processes
from p4vtep.sources.fabric_file import load_fabric
from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, free_port
from p4vtep.switch.reconciler import diff
from replica_harness import (
    ReplicaProcess,
    fabric_yaml,
    find_leader,
    read_switches,
    reference,
    seed,
    start_replica,
    wait_ready,
)
from switch_fabric import needs_switch
from vm_netns import vm_behind_port

pytestmark = [pytest.mark.etcd, pytest.mark.evpn, needs_etcd(), needs_frr(), *needs_switch()]

VNI = 5000
TOR_VTEP, TOR_MAC = "10.0.0.1", "00:aa:00:00:00:01"
UP_MAC = "00:5e:00:00:99:01"  # FRR's underlay interface, the ToR's next hop
FRR_VM_IP = "192.168.1.20"
MAC2 = "52:54:00:f0:00:22"  # a MAC FRR starts advertising during a failover
A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), VNI, "s1", 10)
A2 = Vm("a2", "00:00:0a:00:00:02", ("192.168.1.2",), VNI, "s2", 20)
TTL, MARGIN = 5, 1.0  # the default lease
PROBE_PORT, PROBE_INTERVAL = 5555, 0.01
HERE = Path(__file__).parent
PROBE, MUTANT = HERE / "udp_probe.py", HERE / "replica_mutant.py"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@dataclass
class Lab:
    frr: FrrLab
    fabric: Fabric  # as the replicas load it from fabric_file
    fabric_file: Path
    vma: str  # a1's namespace

    def expected_learned(self, *more_macs: str) -> Learned:
        """What FRR advertises: its VM (MAC and MAC+IP), its VTEP in the
        VNI's flood list, and ``more_macs`` (MAC routes alone)."""
        frr_ip = self.frr.frr_ip
        macs = [LearnedMac(VNI, VM_MAC, frr_ip, (FRR_VM_IP,))]
        macs += [LearnedMac(VNI, mac, frr_ip) for mac in more_macs]
        return Learned.of(macs, {VNI: [frr_ip]})

    def expected(self, settings: EtcdSettings, learned: Learned) -> Controller:
        """The reference: the full compile of what etcd holds plus ``learned``."""
        ref = reference(self.fabric, settings)
        ref.desired.set_learned(learned)  # (replica ids: as etcd has them)
        return ref

    def lacking(self, settings: EtcdSettings, learned: Learned, states=None) -> int:
        """How many entities the switches lack or hold wrongly against the reference."""
        ref = self.expected(settings, learned)
        states = read_switches(self.fabric) if states is None else states
        return sum(len(diff(ref.compile_for(n)[1], s)) for n, s in states.items())

    def frr_has_our_route(self) -> bool:
        return any(e.get("mac") == A1.mac and e.get("dst") == TOR_VTEP for e in self.frr.fdb())


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("evpn-replicas")
    tag = os.getpid() % 10000
    vma = f"p4vr-a{tag}"
    relays: list[subprocess.Popen[bytes]] = []
    with (
        FrrLab(vni=VNI, asn=65000, hold_time=3, controllers=3, root_side=True) as frr,
        VethSet(f"pq{tag}", 3) as veths,
    ):
        (s1, h1), (s2, _h2), (s3, h3) = veths.pairs
        switch = Bmv2Switch("tor1", 1, free_port(), free_port(), {1: s1, 2: s2, 3: s3}, log_dir=tmp)
        try:
            frr.attach_underlay(h3, UP_MAC, TOR_VTEP, TOR_MAC)
            relays.append(vm_behind_port(vma, h1, A1))
            frr.set_vm_ip(FRR_VM_IP)
            frr.add_vm_mac()
            # The probes' ARP is settled: only the forwarding entries matter.
            _ip("-n", vma, "neigh", "replace", FRR_VM_IP, "lladdr", VM_MAC, "dev", "vm",
                "nud", "permanent")  # fmt: skip
            _ip("-n", frr.vm_ns, "neigh", "replace", A1.ips[0], "lladdr", A1.mac, "dev", "vm0",
                "nud", "permanent")  # fmt: skip
            switch.start()
            fabric = Fabric()
            fabric.tors["tor1"] = Tor(
                "tor1", switch.grpc_address, 1, TOR_VTEP, TOR_MAC, (Uplink(3, UP_MAC),)
            )
            for port in (1, 2):
                fabric.servers[f"s{port}"] = Server(f"s{port}", "tor1", port)
            fabric.vnis[VNI] = Vni(VNI, "tenant-a")
            path = fabric_yaml(fabric, tmp / "fabric.yaml")
            doc = yaml.safe_load(path.read_text())
            doc["evpn"] = {
                "asn": 65000,
                "router_id": frr.ctl_ips[0],  # (each replica gives its own: --evpn-address)
                "hold_time": 3,
                "listen_port": -1,  # connect out only: nothing listens on 179 here
                "peers": [{"address": frr.frr_ip, "asn": 65000}],
                "vnis": [{"vni": VNI, "route_targets": [f"65000:{VNI}"]}],
            }
            path.write_text(yaml.safe_dump(doc))
            yield Lab(frr, load_fabric(path), path, vma)
        finally:
            switch.stop()
            stop_processes(relays)
            subprocess.run(["ip", "netns", "del", vma], check=False, capture_output=True)


# ---- traffic -----------------------------------------------------------------------


class Probes:
    """udp_probe.py in a1's namespace and in FRR's VM, each sending to the
    other every PROBE_INTERVAL; ``losses`` counts each direction's frames
    sent in a stretch of time and never received."""

    def __init__(self, lab: Lab, tmp: Path) -> None:
        self.files = {"vm": tmp / "probe-vm.json", "frr": tmp / "probe-frr.json"}
        ends = {"vm": (lab.vma, A1.ips[0], FRR_VM_IP), "frr": (lab.frr.vm_ns, FRR_VM_IP, A1.ips[0])}
        self.processes = {
            side: subprocess.Popen(
                [
                    *("ip", "netns", "exec", ns, sys.executable, str(PROBE), me, peer),
                    *(str(PROBE_PORT), str(PROBE_INTERVAL), str(self.files[side])),
                ],
                stdin=subprocess.DEVNULL,
            )
            for side, (ns, me, peer) in ends.items()
        }
        self.data: dict[str, dict[str, list[list[float]]]] = {}

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        stop_processes(self.processes.values(), timeout=10)
        for side, path in self.files.items():
            self.data[side] = json.loads(path.read_text()) if path.exists() else {}

    def losses(self, start: float, end: float) -> dict[str, tuple[int, int, float]]:
        """Per direction ("to_vm": FRR's VM -> a1, "from_vm": a1 -> FRR's VM):
        (frames sent in [start, end), of them lost, longest run lost in s)."""
        out = {}
        for direction, sender, receiver in (("to_vm", "frr", "vm"), ("from_vm", "vm", "frr")):
            got = {int(seq) for seq, _ in self.data[receiver].get("received", [])}
            sent = [
                (int(seq), t) for seq, t in self.data[sender].get("sent", []) if start <= t < end
            ]
            lost = [seq for seq, _ in sent if seq not in got]
            run = longest = 0
            previous = None
            for seq in lost:
                run = run + 1 if previous is not None and seq == previous + 1 else 1
                longest = max(longest, run)
                previous = seq
            out[direction] = (len(sent), len(lost), longest * PROBE_INTERVAL)
        return out


class RouteWatch(threading.Thread):
    """Samples FRR's FDB (every ~50 ms) for a1's MAC towards our VTEP, the
    entry zebra installs from our type 2 route: how long FRR lacked it."""

    def __init__(self, lab: Lab) -> None:
        super().__init__(daemon=True, name="route-watch")
        self.lab = lab
        self.samples: list[tuple[float, bool]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.samples.append((time.monotonic(), self.lab.frr_has_our_route()))
            self._halt.wait(0.05)

    def stop(self) -> float:
        """Seconds without the route (sum of the gaps between samples)."""
        self._halt.set()
        self.join(10)
        missing = 0.0
        for (t, present), (t_next, _) in zip(self.samples, self.samples[1:], strict=False):
            if not present:
                missing += t_next - t
        return missing

    @property
    def always_present(self) -> bool:
        return all(present for _, present in self.samples)


# ---- a run: replicas, kills --------------------------------------------------------


@dataclass
class Failover:
    kill: int
    old: str
    new: str
    takeover: float  # s from the SIGKILL to the new leader primary with its pass done
    writes: int  # the new leader's switch writes once the switch holds the reference
    expected_writes: int  # what the switch lacked (read just before the kill)
    frr_without_route: float  # s
    frr_paths: int  # FRR's paths for a1's MAC before the kill (one per speaking replica)
    window: tuple[float, float] = (0.0, 0.0)
    losses: dict[str, tuple[int, int, float]] = field(default_factory=dict)

    def line(self, label: str) -> str:
        to_vm, from_vm = self.losses["to_vm"], self.losses["from_vm"]
        return (
            f"{label} kill {self.kill}: {self.old} -> {self.new}: takeover {self.takeover:.2f} s, "
            f"switch writes {self.writes} (lacked {self.expected_writes}); FRR -> VM lost "
            f"{to_vm[1]}/{to_vm[0]} (longest gap {to_vm[2]:.2f} s), VM -> FRR lost "
            f"{from_vm[1]}/{from_vm[0]} (longest gap {from_vm[2]:.2f} s); FRR paths for a1 "
            f"before {self.frr_paths}, FRR without our route {self.frr_without_route:.2f} s"
        )


def frr_paths(lab: Lab) -> int:
    """FRR's paths for a1's MAC route (from distinct neighbors)."""
    peers = {
        path.get("peerId")
        for path in lab.frr.evpn_routes()
        if f"[{A1.mac}]" in path["prefix"] and f"[{A1.ips[0]}]" not in path["prefix"]
    }
    return len(peers)


def run_failovers(
    lab: Lab,
    tmp: Path,
    count: int,
    kills: int,
    label: str,
    launcher: Sequence[str] = ("-m", "p4vtep.cli"),
    learn_during: Sequence[int] = (),
    all_speak: bool = True,
) -> list[Failover]:
    """``count`` replicas; the leader is SIGKILLed ``kills`` times while the
    probes run, each killed replica restarted as a follower. At the kills in
    ``learn_during`` FRR starts advertising MAC2 right after the kill."""
    frr = lab.frr
    learned_macs: list[str] = []
    results: list[Failover] = []
    with etcd_cluster(1) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix=f"/p4vtep-{label}")
        seed(lab.fabric, settings, [A1, A2])

        def start(index: int, name: str) -> ReplicaProcess:
            extra = ["--evpn-address", frr.ctl_ips[index]]
            return start_replica(
                lab.fabric_file, settings, name, tmp, TTL, MARGIN, extra, launcher=launcher
            )

        procs = [start(i, f"{label}{i}") for i in range(count)]
        probes: Probes | None = None
        try:
            wait_ready(procs, timeout=120)
            leader = find_leader(procs, timeout=120)
            speaking = frr.ctl_ips[:count] if all_speak else [frr.ctl_ips[procs.index(leader)]]
            assert wait_until(lambda: all(frr.session_established(ip) for ip in speaking), 60)
            assert wait_until(lab.frr_has_our_route, 30), frr.fdb()
            assert wait_until(lambda: lab.lacking(settings, lab.expected_learned()) == 0, 60, 1.0)
            probes = Probes(lab, tmp)
            time.sleep(0.5)  # (both probes up)
            baseline = time.monotonic()
            time.sleep(3.0)  # a baseline
            for kill in range(kills):
                paths = frr_paths(lab)
                before = read_switches(lab.fabric)
                watch = RouteWatch(lab)
                watch.start()
                old = leader
                killed_at = time.monotonic()
                old.kill()
                if kill in learn_during:
                    frr.add_vm_mac(MAC2)  # FRR advertises it while no one leads
                    learned_macs.append(MAC2)
                others = [p for p in procs if p is not old]
                leader = find_leader(others, timeout=90)
                took = time.monotonic() - killed_at
                learned = lab.expected_learned(*learned_macs)
                expected_writes = lab.lacking(settings, learned, before)
                assert wait_until(lambda lr=learned: lab.lacking(settings, lr) == 0, 60, 1.0)
                time.sleep(2.0)  # traffic after the takeover
                writes = sum(s.writes for s in leader.switches(timeout=5) or ())
                missing = watch.stop()
                results.append(
                    Failover(
                        kill,
                        old.replica_id,
                        leader.replica_id,
                        took,
                        writes,
                        expected_writes,
                        missing,
                        paths,
                        window=(killed_at, time.monotonic()),
                    )
                )
                if all_speak:  # (the mechanism under test: FRR never lacked our route)
                    assert watch.always_present, f"FRR lacked our route for {missing:.2f} s"
                index = procs.index(old)
                procs[index] = start(index, f"{label}{index}k{kill}")
                wait_ready(procs, timeout=120)  # (its speaker has the routes: it may lead)
                if all_speak:
                    ip = frr.ctl_ips[index]
                    assert wait_until(lambda ip=ip: frr.session_established(ip), 30)
            probes.stop()
            steady = probes.losses(baseline, baseline + 3.0)
            for result in results:
                result.losses = probes.losses(*result.window)
                print(result.line(label))
            print(
                f"{label} baseline (3 s before the first kill): FRR -> VM lost "
                f"{steady['to_vm'][1]}/{steady['to_vm'][0]}, VM -> FRR lost "
                f"{steady['from_vm'][1]}/{steady['from_vm'][0]}"
            )
        finally:
            if probes is not None and not probes.data:
                probes.stop()
            for proc in procs:
                proc.stop()
            for mac in learned_macs:
                frr.del_vm_mac(mac)
    return results


# ---- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("count", [2, 3])
def test_leader_killed_peers_keep_forwarding_and_nothing_is_rewritten(
    lab: Lab, tmp_path: Path, count: int
) -> None:
    """Kill 0: nothing changed, the new leader writes nothing. Kill 1: FRR
    advertises MAC2 during the failover; the new leader writes exactly its
    entries. FRR keeps our route throughout (one of N identical paths left)."""
    results = run_failovers(lab, tmp_path, count, 2, f"every{count}", learn_during=(1,))
    assert results[0].expected_writes == 0
    assert results[1].expected_writes > 0  # (MAC2's entry)
    for r in results:
        assert r.writes == r.expected_writes  # what the switch lacked, nothing twice
        assert r.frr_paths == count  # FRR heard every replica


def test_mutant_only_the_leader_speaks_bgp_frr_loses_our_routes(lab: Lab, tmp_path: Path) -> None:
    """Without the followers' sessions, FRR drops our routes when the
    leader's session goes and has them back only from the new leader."""
    results = run_failovers(
        lab, tmp_path, 2, 1, "leaderonly", launcher=(str(MUTANT), "leader-only"), all_speak=False
    )
    (r,) = results
    assert r.frr_paths == 1
    assert r.frr_without_route > 0.5, r.line("leaderonly")
    assert r.losses["to_vm"][1] > 0


def test_mutant_without_the_hold_the_takeover_rewrites_learned_entries(
    lab: Lab, tmp_path: Path
) -> None:
    results = run_failovers(lab, tmp_path, 2, 1, "nohold", launcher=(str(MUTANT), "no-hold"))
    (r,) = results
    assert r.expected_writes == 0
    assert r.writes > 0, "the takeover wrote nothing: the mutant was not caught"


def test_alternative_leader_only_with_graceful_restart(lab: Lab, tmp_path: Path) -> None:
    """The design not taken, measured: only the leader speaks BGP and
    announces graceful restart; FRR (helper by default) keeps the dead
    leader's routes as stale while the next leader comes up. Figures only
    (and the switch right in the end)."""
    results = run_failovers(
        lab,
        tmp_path,
        2,
        1,
        "leaderonlygr",
        launcher=(str(MUTANT), "leader-only-gr"),
        all_speak=False,
    )
    assert len(results) == 1
