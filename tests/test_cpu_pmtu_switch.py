"""Path MTU discovery through the fabric (issue 39): a Linux VM on tor1 that
pings a VM in a VNI with a smaller MTU on tor2 gets ICMPv6 Packet Too Big
from the far ToR (routed back over the L3 VNI) and its kernel learns the
path MTU: ``ip -6 route get`` shows it, and ``ping -M do`` then refuses
anything longer locally. The VM is a network namespace with its own IPv6
stack behind tor1's port (tests/vm_netns.py)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import replace

import pytest
from p4vtep.model.fabric import RouterAdvertisements, Vm
from switch_fabric import bmv2_fabric, needs_switch, route_dual_stack_tenant, start_controller
from vm_netns import vm_behind_port

pytestmark = needs_switch()

WEB = Vm("web", "02:0d:00:00:00:01", ("192.168.1.10", "2001:db8:1::10"), 5000, "s11", 10)
DB = Vm("db", "02:0d:00:00:01:01", ("192.168.2.10", "2001:db8:2::10"), 5001, "s21", 11)
DB_MTU = 1400  # VNI 5001's; web's VNI keeps 9000


@pytest.fixture(scope="module")
def sf(tmp_path_factory):
    with bmv2_fabric(tmp_path_factory.mktemp("logs")) as fabric:
        route_dual_stack_tenant(fabric)
        vni = fabric.fabric.vnis[DB.vni]
        fabric.fabric.vnis[DB.vni] = replace(
            vni, router_advertisements=RouterAdvertisements(enabled=False, mtu=DB_MTU)
        )
        yield fabric


def in_ns(ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, *args], capture_output=True, text=True, check=False
    )


def test_a_linux_sender_learns_the_path_mtu_from_the_far_tor(sf, tmp_path):
    controller = start_controller(sf, tmp_path / "state.db", [WEB, DB])
    ns = f"pmtu{os.getpid() % 100000}"
    relay = vm_behind_port(ns, sf.host_ifaces[WEB.server], WEB, "192.168.1.254", "2001:db8:1::1")
    try:
        # Before: the route to db has no learned MTU.
        before = in_ns(ns, "ip", "-6", "route", "get", DB.ips[1])
        assert before.returncode == 0, before.stderr
        assert "mtu" not in before.stdout.split("dev")[-1], before.stdout
        # 1400 bytes of ICMPv6 + 8 + 40: 1448, over db's VNI's 1400. The
        # first attempt is dropped at tor2; its Packet Too Big reaches web.
        for _ in range(3):
            in_ns(ns, "ping", "-6", "-c", "1", "-W", "1", "-M", "do", "-s", "1400", DB.ips[1])
            learned = in_ns(ns, "ip", "-6", "route", "get", DB.ips[1])
            if re.search(r"\bmtu 1400\b", learned.stdout):
                break
        assert re.search(r"\bmtu 1400\b", learned.stdout), (
            learned.stdout,
            controller.responder.punt_counts(),
        )
        key = ("tor2", "packet_too_big", "answered", "")
        assert controller.responder.punt_counts().get(key, 0) >= 1
        # Now the kernel refuses it locally, naming the path MTU.
        again = in_ns(ns, "ping", "-6", "-c", "1", "-W", "1", "-M", "do", "-s", "1400", DB.ips[1])
        # (iputils says "mtu=1400" or "mtu: 1400", by version)
        assert re.search(r"message too long, mtu[=:] ?1400", again.stdout + again.stderr), again
    finally:
        relay.terminate()
        relay.wait(timeout=10)
        subprocess.run(["ip", "netns", "delete", ns], check=False, capture_output=True)
        controller.stop()
