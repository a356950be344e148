"""Two BMv2 ToRs wired back to back for controller integration tests.

    host end   h1 h2            h3 h4
    tor port    1  2   3 4 ══ 3 4  1  2
               [  tor1  ]    [  tor2  ]

Ports 3 and 4 of the two ToRs are cabled to each other (two equal-cost
"uplinks" standing in for the spines); the test sends and sniffs VM frames on
the host ends h1..h4. Everything is made in the host namespace with names
unique to this run and removed at the end.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from netns_socket import ETH_P_ALL, PACKET_AUXDATA, SOL_PACKET, receive
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Fabric, Server, StaticRoute, Subnet, Tor, Uplink, Vm, Vni, Vrf
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import Bmv2Switch, VethSet, find_simple_switch_grpc, free_port
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw

_F = TypeVar("_F", bound=Callable[..., Any])

# The skip line's reason: why, and what to set (issue 9).
SWITCH_MISSING = (
    "simple_switch_grpc not found (run `make toolchain`, or set SIMPLE_SWITCH_GRPC "
    "or P4VTEP_TOOLCHAIN_ARCHIVE; docs/toolchain.md)"
)
ROUTER_MAC = {"tor1": "00:aa:00:00:00:01", "tor2": "00:aa:00:00:00:02"}


def needs_switch(*tiers: str) -> list[pytest.MarkDecorator]:
    """The marks of a test that runs BMv2 switches: the ``switch`` tier (and
    any other ``tiers`` named, e.g. "scale"), and a skip saying why when this
    machine cannot run them."""
    reasons = []
    if find_simple_switch_grpc() is None:
        reasons.append(SWITCH_MISSING)
    if os.geteuid() != 0:
        reasons.append("not root (veths)")
    if shutil.which("ip") is None:
        reasons.append("iproute2 missing")
    skip = pytest.mark.skipif(bool(reasons), reason="; ".join(reasons) + ": switch tests skipped")
    return [pytest.mark.switch, *(getattr(pytest.mark, tier) for tier in tiers), skip]


def switch_test(*tiers: str) -> Callable[[_F], _F]:
    """``needs_switch`` as a decorator of one test (for files that mix unit
    tests and switch tests)."""

    def decorate(test: _F) -> _F:
        for mark in needs_switch(*tiers):
            test = mark(test)
        return test

    return decorate


@dataclass
class SwitchFabric:
    fabric: Fabric
    switches: dict[str, Bmv2Switch]
    host_ifaces: dict[str, str]  # server name -> host end of its cable


@contextmanager
def bmv2_fabric(log_dir: Path) -> Iterator[SwitchFabric]:
    """Two BMv2 ToRs cabled back to back (see the module doc), torn down on exit."""
    prefix = f"pv{os.getpid() % 10000}"
    with VethSet(prefix, 6) as veths:
        (s1, h1), (s2, h2), (s3, h3), (s4, h4), (f1a, f1b), (f2a, f2b) = veths.pairs
        ports = {"tor1": {1: s1, 2: s2, 3: f1a, 4: f2a}, "tor2": {1: s3, 2: s4, 3: f1b, 4: f2b}}
        switches = {
            name: Bmv2Switch(name, i, free_port(), free_port(), ports[name], log_dir=log_dir)
            for i, name in enumerate(("tor1", "tor2"), start=1)
        }
        fabric = Fabric()
        for i, name in enumerate(("tor1", "tor2"), start=1):
            peer = "tor2" if name == "tor1" else "tor1"
            fabric.tors[name] = Tor(
                name,
                switches[name].grpc_address,
                i,
                f"10.0.0.{i}",
                ROUTER_MAC[name],
                (Uplink(3, ROUTER_MAC[peer]), Uplink(4, ROUTER_MAC[peer])),
            )
            for j in (1, 2):
                fabric.servers[f"s{i}{j}"] = Server(f"s{i}{j}", name, j)
        fabric.vnis[5000] = Vni(5000, "tenant-a", 2)
        fabric.vnis[6000] = Vni(6000, "tenant-b", 1)
        try:
            for sw in switches.values():
                sw.start()
            yield SwitchFabric(fabric, switches, {"s11": h1, "s12": h2, "s21": h3, "s22": h4})
        finally:
            for sw in switches.values():
                sw.stop()


# The servers ``bmv2_fabric`` cables: two on each ToR.
SERVERS = ("s11", "s12", "s21", "s22")

# Two VMs on VLANs the background population never uses, for probing traffic.
PROBE_SENDER = Vm("prober", "02:aa:00:00:00:01", ("172.16.0.1",), 5000, "s11", 4000)
PROBE_TARGET = Vm("mover", "02:aa:00:00:00:02", ("172.16.0.2",), 5000, "s21", 4001)


def background_vms(count: int) -> list[Vm]:
    """``count`` VMs over the four servers in VNIs 5000/6000 (VLANs 1 up)."""
    return [
        Vm(
            f"bg{i}",
            f"02:bb:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}",
            (f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}",),
            5000 if i % 2 else 6000,
            SERVERS[i % 4],
            1 + i // 4,
        )
        for i in range(count)
    ]


def start_controller(
    sf: SwitchFabric,
    store_path: Path,
    vms: Iterable[Vm] = (),
    election_id: int = 1,
    timeout: float = 30.0,
) -> Controller:
    """A started controller for the fabric, with ``vms`` attached, converged."""
    controller = Controller(
        sf.fabric, bmv2_pipeline(), Store(store_path), election_id=election_id, resync_seconds=3600
    )
    controller.start()
    for vm in vms:
        controller.attach(vm)
    assert controller.wait_converged(timeout), {
        n: s.status for n, s in controller.supervisors.items()
    }
    return controller


def read_back_matches(sf: SwitchFabric, controller) -> None:
    """Every switch holds exactly what the controller compiles: nothing
    missing, nothing extra, nothing different."""
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.runtime.client import SwitchConnection
    from p4vtep.switch.reconciler import SwitchReader, diff

    reader = SwitchReader(bmv2_pipeline().p4info)
    for name, tor in sf.fabric.tors.items():
        _, desired = controller.compile_for(name)
        with SwitchConnection(tor.address, tor.device_id, election_id=0) as conn:
            left = diff(desired, reader.read(conn))
        assert len(left) == 0, (
            f"{name}: {len(left.inserts)} missing, {len(left.modifies)} "
            f"different, {len(left.deletes)} extra"
        )


# Three VMs for traffic checks: a1 and a2 share VNI 5000 across the two ToRs;
# b1 is in VNI 6000 with a1's IP address.
A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
A2 = Vm("a2", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s21", 20)
B1 = Vm("b1", "00:00:0b:00:00:01", ("192.168.1.1",), 6000, "s12", 30)


def frame(src: Vm, dst: Vm, tag: int = 0) -> Packet:
    return (
        Ether(src=src.mac, dst=dst.mac)
        / Dot1Q(vlan=src.vlan)
        / IP(src=src.ips[0], dst=dst.ips[0])
        / UDP(sport=1000 + tag, dport=80)
        / Raw(b"p4vtep" * 10)
    )


def send_and_receive(send_iface: str, pkt, recv_iface: str, timeout: float = 2.0) -> list[Ether]:
    """Send one frame on ``send_iface``; return what arrives on ``recv_iface``."""
    return [Ether(data) for data in send_frames(send_iface, [pkt], recv_iface, timeout)]


def send_frames(send_iface: str, frames, recv_iface: str, timeout: float = 2.0) -> list[bytes]:
    """Send ``frames`` on ``send_iface``; return the bytes of every frame that
    arrives on ``recv_iface`` within ``timeout`` (VLAN tags as on the wire)."""
    with (
        # Protocol 0 until bound, so no frame of another interface is queued.
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as rx,
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx,
    ):
        rx.bind((recv_iface, ETH_P_ALL))  # (host order: Python converts)
        # The kernel strips a received VLAN tag into ancillary data; put it back.
        rx.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        tx.bind((send_iface, 0))
        for frame in frames:
            tx.send(bytes(frame))
        got = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            rx.settimeout(left)
            try:
                data, outgoing = receive(rx)
            except TimeoutError:
                break
            if outgoing:
                continue
            got.append(data)
        return got


def delivered(
    sf: SwitchFabric,
    src: Vm,
    dst: Vm,
    dst_server: str | None = None,
    dst_vlan: int | None = None,
    tag: int = 0,
) -> bool:
    sent = frame(src, dst, tag)
    got = send_and_receive(
        sf.host_ifaces[src.server], sent, sf.host_ifaces[dst_server or dst.server]
    )
    want = bytes(
        Ether(src=src.mac, dst=dst.mac) / Dot1Q(vlan=dst_vlan or dst.vlan) / sent[Dot1Q].payload
    )
    return any(bytes(p) == want for p in got)


def probe_a_migration(
    sf: SwitchFabric,
    controller: Controller,
    moved: Vm,
    sender: str,
    probe: Callable[[int], bytes],
    arrived: Callable[[Ether], bool],
) -> tuple[int, dict[str, int]]:
    """Migrate ``moved`` (its new server and VLAN) while ``probe(n)`` is sent
    from server ``sender`` every 20 ms; count the frames ``arrived`` accepts
    at its old server ("old") and its new one ("new"). Returns the probes
    sent and those counts, once the controller has converged and the last
    probes had time to land."""
    old = controller.vms[moved.name].server
    stop, stop_probe = threading.Event(), threading.Event()
    sent = [0]
    counts = {"old": 0, "new": 0}

    def send() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
            tx.bind((sf.host_ifaces[sender], 0))
            while not stop_probe.is_set():
                tx.send(probe(sent[0]))
                sent[0] += 1
                time.sleep(0.02)

    def listen(iface: str, key: str) -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as rx:
            rx.bind((iface, ETH_P_ALL))
            rx.settimeout(0.2)
            while not stop.is_set():
                try:
                    data = rx.recv(65535)
                except TimeoutError:
                    continue
                if arrived(Ether(data)):
                    counts[key] += 1

    listeners = [
        threading.Thread(target=listen, args=(sf.host_ifaces[server], key), daemon=True)
        for server, key in ((old, "old"), (moved.server, "new"))
    ]
    for t in listeners:
        t.start()
    prober = threading.Thread(target=send, daemon=True)
    time.sleep(0.3)
    prober.start()
    try:
        time.sleep(1.0)
        controller.migrate(moved.name, moved.server, moved.vlan)
        assert controller.wait_converged(30)
        time.sleep(1.0)
    finally:
        stop_probe.set()
        prober.join()
        time.sleep(0.5)  # the last probes reach the listeners
        stop.set()
        for t in listeners:
            t.join()
    return sent[0], counts


# The anycast gateway MAC of the dual-stack tenant below, and the gateway's
# link-local address (its modified EUI-64).
ANYCAST = "00:00:5e:00:01:01"
GATEWAY_LLA = "fe80::200:5eff:fe00:101"


def route_dual_stack_tenant(
    sf: SwitchFabric, routes: tuple[StaticRoute, ...] = (), **vni_fields: Any
) -> None:
    """Tenant red: VNI 5000 (192.168.1.0/24 and 2001:db8:1::/64) and VNI
    5001 (192.168.2.0/24 and 2001:db8:2::/64), gateways .254 and ::1, in
    VRF red (L3 VNI 50000) with ``routes``; ``vni_fields`` set on both VNIs."""
    fabric = sf.fabric
    fabric.anycast_gateway_mac = ANYCAST
    fabric.vrfs["red"] = Vrf("red", 50000, routes)
    for vni, v4, v6 in ((5000, "192.168.1", "2001:db8:1"), (5001, "192.168.2", "2001:db8:2")):
        base = fabric.vnis.get(vni, Vni(vni, f"red-{vni}"))
        fabric.vnis[vni] = replace(
            base,
            vrf="red",
            subnets=(Subnet(f"{v4}.0/24", f"{v4}.254"), Subnet(f"{v6}::/64", f"{v6}::1")),
            **vni_fields,
        )


def routed_fabric_fixtures(route: Callable[[SwitchFabric], None], vms: list[Vm]) -> tuple:
    """The ``sf`` (module: two BMv2 ToRs, made routed by ``route``) and
    ``controller`` (per test: started over ``vms``) fixtures of a routed
    switch-tier module: ``sf, controller = routed_fabric_fixtures(...)``."""

    @pytest.fixture(scope="module")
    def sf(tmp_path_factory):
        with bmv2_fabric(tmp_path_factory.mktemp("logs")) as fabric:
            route(fabric)
            yield fabric

    @pytest.fixture
    def controller(sf, tmp_path):
        c = start_controller(sf, tmp_path / "state.db", vms)
        yield c
        c.stop()

    return sf, controller


def assert_make_before_break(sent: int, counts: dict[str, int], what: str) -> None:
    """A migration probed by probe_a_migration: frames reached the old place
    and then the new one, and none was lost between them."""
    lost = sent - counts["old"] - counts["new"]
    print(f"{what}: {sent} probes, {lost} lost, {counts}")
    assert counts["old"] > 0, counts
    assert counts["new"] > 0, counts
    assert lost == 0, counts  # make-before-break: every probe reached one place


@contextmanager
def restarted_controller(sf: SwitchFabric, store: Path, vms: list[Vm]) -> Iterator[Controller]:
    """A controller that wrote ``vms`` and stopped, then a second one started
    over the same store and switches; asserts the second wrote nothing."""
    first = start_controller(sf, store, vms)
    first.stop()
    second = start_controller(sf, store)
    try:
        assert {n: s.status.writes for n, s in second.supervisors.items()} == dict.fromkeys(
            sf.fabric.tors, 0
        )
        yield second
    finally:
        second.stop()
