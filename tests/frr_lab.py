"""A standard Linux EVPN VTEP run by FRR, in network namespaces the test owns.

    [ns ctl]  gobgpd (p4vtep's speaker)
       ctl0 10.99.<n>.1 ───veth─── frr0 10.99.<n>.2   [ns frr]
                                   zebra + bgpd (advertise-all-vni)
                                   br<vni> ── vxlan<vni> (local 10.99.<n>.2)
                                      └── vmbr0 ══ vm0 (the VM's MAC)  [ns vm]

With ``controllers=N`` FRR has a neighbor per controller address (10.99.<n>.1,
.4, .5, ...: one per controller replica, each speaker on its own address);
with ``root_side=True`` the controllers' end of the veth is in the root
namespace (``p4vb<pid>``), where controller processes that also reach etcd
and the switches on loopback run their speakers.

FRR runs as its own packaged user with every file (config, pid, vty sockets,
zebra API socket, logs) in a private temp dir: nothing under /etc/frr or
/var/run/frr is touched. Namespaces and links carry this run's pid in their
names and are deleted at the end; only the daemons started here are killed,
by the pids of the processes started here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from frr_host import evpn_paths  # (topologies/: the demo parses FRR the same way)
from frr_vrf import run as _run  # (topologies/: the demo's FRR host runs commands alike)
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.service import EvpnService
from p4vtep.processes import stop_process, stop_processes

FRR_DIR = Path("/usr/lib/frr")
OBSERVER_ASN = 65099  # the observer: a second, eBGP, peer that only listens
VM_MAC = "52:54:00:f0:00:01"


def missing_requirements() -> list[str]:
    reasons = []
    if os.geteuid() != 0:
        reasons.append("not root (network namespaces)")
    for tool in ("ip", "bridge"):
        if shutil.which(tool) is None:
            reasons.append(f"{tool} missing")
    if not (FRR_DIR / "bgpd").exists() or shutil.which("vtysh") is None:
        reasons.append("FRR missing (Debian package frr)")
    if shutil.which("gobgpd") is None:
        reasons.append("gobgpd missing (Debian package gobgpd)")
    from p4vtep.evpn import gobgp_api

    if gobgp_api.MISSING:
        reasons.append("GoBGP API classes missing (make deps)")
    return reasons


def needs_frr() -> pytest.MarkDecorator:
    reasons = missing_requirements()
    return pytest.mark.skipif(
        bool(reasons), reason="; ".join(reasons) + ": FRR EVPN interop tests skipped"
    )


class FrrLab:
    def __init__(
        self,
        vni: int = 5000,
        asn: int = 65000,
        hold_time: int = 3,
        foreign_vni: int | None = None,
        controllers: int = 1,
        root_side: bool = False,
    ) -> None:
        tag = os.getpid() % 100000
        self.vni, self.asn, self.hold_time = vni, asn, hold_time
        self.foreign_vni = foreign_vni  # a second VNI with no VM, only a type 3 route
        # The VM has a namespace of its own: bgpd refuses routes for a MAC that
        # belongs to one of its own interfaces ("self mac").
        self.ctl_ns, self.frr_ns, self.vm_ns = f"p4ve-c{tag}", f"p4ve-f{tag}", f"p4ve-v{tag}"
        subnet = tag % 250 + 1
        self.ctl_ip, self.frr_ip = f"10.99.{subnet}.1", f"10.99.{subnet}.2"
        self.observer_ip = f"10.99.{subnet}.3"  # a second address on FRR's side, for a 2nd peer
        # One address per controller (replica), each a neighbor of FRR's.
        self.ctl_ips = [self.ctl_ip] + [f"10.99.{subnet}.{4 + i}" for i in range(controllers - 1)]
        # The controllers' end of the veth: in the root namespace, or ctl0 in ctl_ns.
        self.root_dev = f"p4vb{tag}" if root_side else None
        self.dir = Path(tempfile.mkdtemp(prefix="p4vtep-frr-"))
        self.dir.chmod(0o777)  # the frr user writes its sockets, pid and log files here
        self.daemons: dict[str, subprocess.Popen[bytes]] = {}
        self.extra_ns: list[str] = []  # more VMs behind the bridge (add_vm)

    # ---- setup ----------------------------------------------------------------

    def __enter__(self) -> FrrLab:
        try:
            self._network()
            self._start_frr()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _network(self) -> None:
        c, f, vni = self.ctl_ns, self.frr_ns, self.vni
        if self.root_dev is None:
            _run("ip", "netns", "add", c)
        _run("ip", "netns", "add", f)
        _run("ip", "netns", "add", self.vm_ns)
        # The VM says nothing unless told to (no IPv6 DAD or router solicitations).
        _run(
            "ip",
            "netns",
            "exec",
            self.vm_ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.default.disable_ipv6=1",
        )
        if self.root_dev is None:
            _run(
                "ip", "-n", c, "link", "add", "ctl0", "type", "veth", "peer", "name", "frr0",
                "netns", f,
            )  # fmt: skip
            ctl_side = ["ip", "-n", c]
            _run(*ctl_side, "link", "set", "lo", "up")
            dev = "ctl0"
        else:
            _run("ip", "link", "add", self.root_dev, "type", "veth", "peer", "name", "frr0",
                 "netns", f)  # fmt: skip
            ctl_side, dev = ["ip"], self.root_dev
        for ip in self.ctl_ips:
            _run(*ctl_side, "addr", "add", f"{ip}/24", "dev", dev)
        _run(*ctl_side, "link", "set", dev, "up")
        _run("ip", "-n", f, "addr", "add", f"{self.frr_ip}/24", "dev", "frr0")
        _run("ip", "-n", f, "link", "set", "frr0", "up")
        _run("ip", "-n", f, "link", "set", "lo", "up")
        _run("ip", "-n", f, "addr", "add", f"{self.observer_ip}/24", "dev", "frr0")
        # p4vtep's ToR VTEPs (10.0.0.0/24) are reached through the controller's
        # side here, so FRR's next-hop tracking finds them resolvable.
        _run("ip", "-n", f, "route", "add", "10.0.0.0/24", "via", self.ctl_ip)
        for v in (vni, self.foreign_vni):
            if v is None:
                continue
            _run("ip", "-n", f, "link", "add", f"br{v}", "type", "bridge")
            _run(
                "ip", "-n", f, "link", "add", f"vxlan{v}", "type", "vxlan", "id", str(v),
                "local", self.frr_ip, "dstport", str(4789 + (v != vni)), "nolearning",
            )  # fmt: skip
            _run("ip", "-n", f, "link", "set", f"vxlan{v}", "master", f"br{v}")
            _run("ip", "-n", f, "link", "set", f"br{v}", "up")
            _run("ip", "-n", f, "link", "set", f"vxlan{v}", "up")
        _run(
            "ip", "-n", f, "link", "add", "vm0", "address", VM_MAC, "type", "veth", "peer", "vmbr0"
        )
        _run("ip", "-n", f, "link", "set", "vm0", "netns", self.vm_ns)
        _run("ip", "-n", f, "link", "set", "vmbr0", "master", f"br{vni}")
        _run("ip", "-n", f, "link", "set", "vmbr0", "up")
        _run("ip", "-n", self.vm_ns, "link", "set", "vm0", "up")

    # ---- for the data-plane tests (a p4vtep ToR on BMv2 as the other VTEP) ------

    def attach_underlay(self, iface: str, mac: str, tor_vtep: str, tor_mac: str) -> None:
        """Move ``iface`` (the far end of a ToR's uplink) into FRR's namespace
        as ``up0``, with the MAC the ToR sends to; the ToR's VTEP is reached
        through it (a /32, more specific than the route via the controller)."""
        f = self.frr_ns
        _run("ip", "link", "set", iface, "netns", f)
        _run("ip", "-n", f, "link", "set", iface, "name", "up0")
        _run("ip", "-n", f, "link", "set", "up0", "address", mac, "up")
        for conf in ("all", "default", "up0"):
            _run("ip", "netns", "exec", f, "sysctl", "-qw", f"net.ipv4.conf.{conf}.rp_filter=0")
        _run("ip", "-n", f, "route", "replace", f"{tor_vtep}/32", "dev", "up0")
        _run("ip", "-n", f, "neigh", "replace", tor_vtep, "lladdr", tor_mac, "dev", "up0",
             "nud", "permanent")  # fmt: skip

    def set_vm_ip(self, ip: str, prefix: int = 24) -> None:
        """The VM's IP, and its ARP entry on the bridge (the VNI's SVI), so
        zebra learns the neighbour and bgpd advertises MAC+IP too."""
        _run("ip", "-n", self.vm_ns, "addr", "replace", f"{ip}/{prefix}", "dev", "vm0")
        _run("ip", "-n", self.frr_ns, "neigh", "replace", ip, "lladdr", VM_MAC, "dev",
             f"br{self.vni}", "nud", "permanent")  # fmt: skip

    def add_vm(self, name: str, mac: str, ip: str, prefix: int = 24) -> str:
        """Another VM behind the bridge, in a namespace of its own (down until
        ``vm_up``); returns the namespace."""
        ns = f"{self.vm_ns}{name}"
        _run("ip", "netns", "add", ns)
        self.extra_ns.append(ns)
        _run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        port = f"{name}br"
        _run("ip", "-n", self.frr_ns, "link", "add", f"{name}0", "address", mac, "type", "veth",
             "peer", port)  # fmt: skip
        _run("ip", "-n", self.frr_ns, "link", "set", f"{name}0", "netns", ns)
        _run("ip", "-n", self.frr_ns, "link", "set", port, "master", f"br{self.vni}")
        _run("ip", "-n", self.frr_ns, "link", "set", port, "up")
        _run("ip", "-n", ns, "addr", "add", f"{ip}/{prefix}", "dev", f"{name}0")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        return ns

    def vm_up(self, name: str, up: bool = True) -> None:
        ns = f"{self.vm_ns}{name}"
        _run("ip", "-n", ns, "link", "set", f"{name}0", "up" if up else "down")
        if not up:  # the VM left: so does its bridge entry
            _run("bridge", "-n", self.frr_ns, "fdb", "flush", "dev", f"{name}br", check=False)

    def in_ns(self, ns: str, *command: str, check: bool = True) -> str:
        return _run("ip", "netns", "exec", ns, *command, check=check)

    def counter(self, ns: str, dev: str, what: str = "rx") -> int:
        """Packets ``dev`` in ``ns`` received (rx) or sent (tx)."""
        info = json.loads(_run("ip", "-n", ns, "-s", "-j", "link", "show", dev))
        return int(info[0]["stats64"][what]["packets"])

    def stop_bgpd(self) -> None:
        """bgpd exits (a peer failure); its routes stay in zebra's hands
        until it would come back, but the session to us is gone."""
        stop_process(self.daemons["bgpd"], timeout=0)

    def add_vm_mac(self, mac: str = VM_MAC) -> None:
        """The VM's MAC as a local FDB entry on its bridge port: zebra sees it
        and bgpd advertises it as a type 2 route."""
        _run("bridge", "-n", self.frr_ns, "fdb", "replace", mac, "dev", "vmbr0", "master", "static")

    def del_vm_mac(self, mac: str = VM_MAC) -> None:
        """The VM left the host: its bridge entry goes (whatever its kind)."""
        _run("bridge", "-n", self.frr_ns, "fdb", "del", mac, "dev", "vmbr0", "master", check=False)

    def vm_speaks(self) -> None:
        """The VM sends exactly one frame, so the bridge learns its MAC on
        vmbr0 as a dynamic entry (as after a live migration's announcement).
        One raw frame, not a ping: ARP retries would keep re-teaching the MAC
        here after the VM has moved away."""
        sender = (
            "import socket; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); "
            "s.bind(('vm0', 0)); "
            f"s.send(b'\\xff' * 6 + bytes.fromhex('{VM_MAC.replace(':', '')}') "
            "+ b'\\x88\\xb5' + bytes(46))"
        )
        _run("ip", "netns", "exec", self.vm_ns, sys.executable, "-c", sender)

    def _start_frr(self) -> None:
        (self.dir / "zebra.conf").write_text(f"hostname frr-evpn\nlog file {self.dir}/zebra.log\n")
        neighbors = "".join(
            f" neighbor {ip} remote-as {self.asn}\n"
            f" neighbor {ip} timers 1 {self.hold_time}\n"
            f" neighbor {ip} timers connect 1\n"
            for ip in self.ctl_ips
        )
        activate = "".join(f"  neighbor {ip} activate\n" for ip in self.ctl_ips)
        (self.dir / "bgpd.conf").write_text(
            f"""frr defaults datacenter
hostname frr-evpn
log file {self.dir}/bgpd.log
router bgp {self.asn}
 bgp router-id {self.frr_ip}
 no bgp default ipv4-unicast
{neighbors} address-family l2vpn evpn
{activate}  advertise-all-vni
 exit-address-family
"""
        )
        for name in ("zebra", "bgpd"):
            self._start_daemon(name)
            if name == "zebra":
                self._wait_for_file(self.dir / "zserv.api")

    def _start_daemon(self, name: str) -> None:
        log = open(self.dir / f"{name}.out", "wb")  # noqa: SIM115 - handed to the child
        self.daemons[name] = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.frr_ns,
                str(FRR_DIR / name),
                "-f",
                str(self.dir / f"{name}.conf"),
                "-i",
                str(self.dir / f"{name}.pid"),
                "--vty_socket",
                str(self.dir),
                "-z",
                str(self.dir / "zserv.api"),
                "-P",
                "0",
                # bgpd listens on FRR's own address only: the other address on
                # frr0 belongs to a second peer in some tests.
                *(["-l", self.frr_ip] if name == "bgpd" else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()

    def _wait_for_file(self, path: Path, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} did not appear; see {self.dir}")
            time.sleep(0.05)

    def observer(self, asn: int = OBSERVER_ASN) -> EvpnService:
        """A second EVPN speaker (GoBGP, eBGP) on FRR's side that peers with
        the controller and only listens: what the controller tells others.
        Not started."""
        vni = self.vni
        return EvpnService(
            EvpnConfig(
                asn=asn,
                router_id=self.observer_ip,
                peers=(EvpnPeer(self.ctl_ip, 65000),),
                vnis=(VniRouting(vni, None, (f"*:{vni}",), (f"{asn}:{vni}",)),),
                hold_time=3,
                listen_port=-1,
            ),
            [],
            EvpnOptions(
                command_prefix=("ip", "netns", "exec", self.frr_ns),
                local_address=self.observer_ip,
            ),
        )

    # ---- looking at FRR -------------------------------------------------------

    def vtysh(self, command: str) -> str:
        return _run("vtysh", "--vty_socket", str(self.dir), "-c", command)

    def evpn_routes(self) -> list[dict[str, Any]]:
        """FRR's EVPN table as a flat list of paths (type, MAC, IP, next hop, ...)."""
        return evpn_paths(self.vtysh("show bgp l2vpn evpn json"))

    def fdb(self) -> list[dict[str, Any]]:
        out = _run("bridge", "-n", self.frr_ns, "-j", "fdb", "show", "dev", f"vxlan{self.vni}")
        return list(json.loads(out or "[]"))

    def session_established(self, address: str | None = None) -> bool:
        """FRR's session to ``address`` (default: the first controller's) is up."""
        summary = json.loads(self.vtysh("show bgp l2vpn evpn summary json") or "{}")
        peers = summary.get("peers", {})
        return peers.get(address or self.ctl_ip, {}).get("state") == "Established"

    def freeze_bgpd(self) -> None:
        """bgpd stops answering but keeps its TCP session: only the hold
        timer can tell the peer it is gone."""
        self.daemons["bgpd"].send_signal(signal.SIGSTOP)

    # ---- teardown -------------------------------------------------------------

    def close(self) -> None:
        stop_processes(self.daemons.values(), timeout=5)  # a frozen bgpd is resumed first
        self.daemons.clear()
        if self.root_dev is not None:
            _run("ip", "link", "del", self.root_dev, check=False)
        for ns in (self.ctl_ns, self.frr_ns, self.vm_ns, *self.extra_ns):
            _run("ip", "netns", "del", ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def start_evpn_controller(fabric: Any, store: Path, ctl_ns: str, ctl_ip: str) -> tuple[Any, Any]:
    """A controller and its EVPN source started as the CLI starts them: the
    source first (the switches get the learned routes at once), then the
    supervisors; gobgpd runs in the lab's controller namespace."""
    from p4vtep.controller import Controller
    from p4vtep.dataplane.artifacts import bmv2_pipeline
    from p4vtep.sources.evpn import EvpnSource
    from p4vtep.state.sqlite_store import Store

    controller = Controller(fabric, bmv2_pipeline(), Store(store), resync_seconds=3600)
    source = EvpnSource(
        controller,
        EvpnOptions(command_prefix=("ip", "netns", "exec", ctl_ns), listen_addresses=(ctl_ip,)),
    )
    source.start()
    controller.start()
    return controller, source
