"""An FRR 8.4 VTEP doing symmetric IRB, in network namespaces the test owns.

    [ns ctl]  gobgpd (p4vtep's speaker)
       ctl0 10.96.<n>.1 ───veth─── frr0 10.96.<n>.2  [ns frr]   zebra -n + bgpd
                                   (10.96.<n>.3: a second peer, the observer)
                                   vxlan<L3VNI>, vxlan<L2VNI> (local 10.96.<n>.2)
                                       │ moved into
                                   [ns vrf: FRR's VRF]  br<L3VNI> (the RMAC)
                                                        br<L2VNI> 192.168.7.1/24
                                                          └── vmbr0 ══ vm0 [ns vm]

The container's kernel has no VRF devices (CONFIG_NET_VRF is not set:
``ip link add ... type vrf`` fails with "Unknown device type"), so FRR runs
with its other VRF backend, network namespaces (``zebra -n``): the VRF is the
namespace named like it, and the tenant's devices live in it. Then FRR 8.4
does what it does with a kernel VRF: the L3 VNI comes up with the L3 SVI's
MAC as router MAC, ``advertise-all-vni`` sends the VRF's hosts as two-label
type 2 routes and ``advertise ipv4 unicast`` its prefixes as type 5, and the
routes it imports are installed in that namespace's routing table. zebra
looks at every namespace under /run/netns (it lists them as VRFs); only the
configured one is used.

FRR runs as its packaged user with every file in a private temp dir, as in
frr_lab.py. Namespaces carry this run's pid and are deleted at the end; only
the daemons started here are stopped, by the processes started here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from frr_host import evpn_paths
from frr_lab import FRR_DIR, _run
from p4vtep.processes import stop_processes

VM_MAC = "52:54:00:f0:00:07"
VM_IP = "192.168.7.10"
SUBNET = "192.168.7.0/24"
GATEWAY = "192.168.7.1"
FRR_RMAC = "02:fe:00:00:00:02"
OBSERVER_ASN = 65099


class FrrIrbLab:
    def __init__(self, asn: int = 65000, l3vni: int = 50000, l2vni: int = 5007) -> None:
        tag = os.getpid() % 100000
        self.asn, self.l3vni, self.l2vni = asn, l3vni, l2vni
        self.ctl_ns, self.frr_ns = f"p4vi-c{tag}", f"p4vi-f{tag}"
        self.vrf, self.vm_ns = f"p4vi-r{tag}", f"p4vi-v{tag}"  # (the VRF is a namespace)
        subnet = tag % 250 + 1
        self.ctl_ip, self.frr_ip = f"10.96.{subnet}.1", f"10.96.{subnet}.2"
        self.observer_ip = f"10.96.{subnet}.3"
        self.dir = Path(tempfile.mkdtemp(prefix="p4vtep-frr-irb-"))
        self.dir.chmod(0o777)
        self.daemons: dict[str, subprocess.Popen[bytes]] = {}

    def __enter__(self) -> FrrIrbLab:
        try:
            self._network()
            self._start_frr()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- setup ----------------------------------------------------------------

    def _network(self) -> None:
        c, f, r, v = self.ctl_ns, self.frr_ns, self.vrf, self.vm_ns
        for ns in (c, f, r, v):
            _run("ip", "netns", "add", ns)
        _run("ip", "netns", "exec", v, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        _run("ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        _run("ip", "-n", c, "link", "add", "ctl0", "type", "veth", "peer", "name", "frr0",
             "netns", f)  # fmt: skip
        for ns, dev, ip in ((c, "ctl0", self.ctl_ip), (f, "frr0", self.frr_ip)):
            _run("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            _run("ip", "-n", ns, "link", "set", dev, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", f, "addr", "add", f"{self.observer_ip}/24", "dev", "frr0")
        # p4vtep's ToR VTEPs (10.0.0.0/24) through the controller's side: FRR's
        # next-hop tracking then finds our routes' next hops resolvable.
        _run("ip", "-n", f, "route", "add", "10.0.0.0/24", "via", self.ctl_ip)
        # VXLAN devices are made in FRR's namespace (their underlay) and
        # moved into the VRF's, where the bridges (the SVIs) are.
        for vni in (self.l3vni, self.l2vni):
            _run("ip", "-n", f, "link", "add", f"vxlan{vni}", "type", "vxlan", "id", str(vni),
                 "local", self.frr_ip, "dstport", "4789", "nolearning")  # fmt: skip
            _run("ip", "-n", f, "link", "set", f"vxlan{vni}", "netns", r)
        _run("ip", "-n", r, "link", "set", "lo", "up")
        _run("ip", "-n", r, "link", "add", f"br{self.l3vni}", "address", FRR_RMAC, "type",
             "bridge")  # fmt: skip
        _run("ip", "-n", r, "link", "add", f"br{self.l2vni}", "type", "bridge")
        for vni in (self.l3vni, self.l2vni):
            _run("ip", "-n", r, "link", "set", f"vxlan{vni}", "master", f"br{vni}")
        _run("ip", "-n", r, "addr", "add", f"{GATEWAY}/24", "dev", f"br{self.l2vni}")
        for dev in (f"br{self.l3vni}", f"br{self.l2vni}", f"vxlan{self.l3vni}",
                    f"vxlan{self.l2vni}"):  # fmt: skip
            _run("ip", "-n", r, "link", "set", dev, "up")
        _run("ip", "-n", r, "link", "add", "vmbr0", "type", "veth", "peer", "name", "vm0",
             "address", VM_MAC, "netns", v)  # fmt: skip
        _run("ip", "-n", r, "link", "set", "vmbr0", "master", f"br{self.l2vni}")
        _run("ip", "-n", r, "link", "set", "vmbr0", "up")
        _run("ip", "-n", v, "link", "set", "vm0", "up")
        _run("ip", "-n", v, "addr", "add", f"{VM_IP}/24", "dev", "vm0")

    def _start_frr(self) -> None:
        (self.dir / "zebra.conf").write_text(
            f"hostname frr-irb\nlog file {self.dir}/zebra.log\n"
            f"vrf {self.vrf}\n vni {self.l3vni}\nexit-vrf\n"
        )
        (self.dir / "bgpd.conf").write_text(
            f"""frr defaults datacenter
hostname frr-irb
log file {self.dir}/bgpd.log
router bgp {self.asn}
 bgp router-id {self.frr_ip}
 no bgp default ipv4-unicast
 neighbor {self.ctl_ip} remote-as {self.asn}
 neighbor {self.ctl_ip} timers 1 3
 neighbor {self.ctl_ip} timers connect 1
 address-family l2vpn evpn
  neighbor {self.ctl_ip} activate
  advertise-all-vni
 exit-address-family
router bgp {self.asn} vrf {self.vrf}
 bgp router-id {self.frr_ip}
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
 address-family l2vpn evpn
  advertise ipv4 unicast
 exit-address-family
"""
        )
        for name in ("zebra", "bgpd"):
            log = open(self.dir / f"{name}.out", "wb")  # noqa: SIM115 - handed to the child
            options = ["-n"] if name == "zebra" else ["-l", self.frr_ip]
            command = ["ip", "netns", "exec", self.frr_ns, str(FRR_DIR / name), *options]
            command += ["-f", str(self.dir / f"{name}.conf"), "-i", str(self.dir / f"{name}.pid")]
            command += ["--vty_socket", str(self.dir), "-z", str(self.dir / "zserv.api"), "-P", "0"]
            self.daemons[name] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            log.close()
            if name == "zebra":
                deadline = time.monotonic() + 10
                while not (self.dir / "zserv.api").exists():
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"zebra did not start; see {self.dir}")
                    time.sleep(0.05)

    def vm_speaks(self) -> None:
        """The VM pings its gateway once, while zebra runs: the bridge learns
        its MAC and the SVI its ARP entry (zebra, with the namespace backend,
        takes both from notifications), and FRR advertises the VM's MAC and
        MAC+IP routes."""
        _run("ip", "netns", "exec", self.vm_ns, "ping", "-c", "1", "-W", "2", GATEWAY)

    def set_router_mac(self, mac: str) -> None:
        """FRR's router MAC is its L3 SVI's MAC."""
        _run("ip", "-n", self.vrf, "link", "set", f"br{self.l3vni}", "address", mac)

    # ---- looking at FRR -------------------------------------------------------

    def vtysh(self, command: str) -> str:
        return _run("vtysh", "--vty_socket", str(self.dir), "-c", command)

    def configure(self, *lines: str) -> None:
        """Configuration lines, entered from ``configure terminal``."""
        commands = [arg for line in ("configure terminal", *lines) for arg in ("-c", line)]
        _run("vtysh", "--vty_socket", str(self.dir), *commands)

    def evpn_routes(self) -> list[dict[str, Any]]:
        return evpn_paths(self.vtysh("show bgp l2vpn evpn json"))

    def evpn_detail(self) -> str:
        return self.vtysh("show bgp l2vpn evpn route detail")

    def vrf_routes(self) -> dict[str, Any]:
        """FRR's BGP table of the VRF (what it imported), by prefix."""
        table = json.loads(self.vtysh(f"show bgp vrf {self.vrf} ipv4 unicast json") or "{}")
        return dict(table.get("routes", {}))

    def kernel_routes(self) -> list[dict[str, Any]]:
        """The VRF's routing table in the kernel (the VRF's namespace)."""
        out = _run("ip", "-n", self.vrf, "-j", "route", "show")
        return list(json.loads(out or "[]"))

    def rmacs(self) -> dict[str, Any]:
        return dict(json.loads(self.vtysh(f"show evpn rmac vni {self.l3vni} json") or "{}"))

    def l3vni_up(self) -> bool:
        out = json.loads(self.vtysh("show evpn vni json") or "{}")
        entry = out.get(str(self.l3vni), {})
        return bool(entry.get("type") == "L3" and entry.get("state", "Up") == "Up")

    def session_established(self) -> bool:
        summary = json.loads(self.vtysh("show bgp l2vpn evpn summary json") or "{}")
        return summary.get("peers", {}).get(self.ctl_ip, {}).get("state") == "Established"

    # ---- teardown -------------------------------------------------------------

    def close(self) -> None:
        stop_processes(self.daemons.values(), timeout=5)
        self.daemons.clear()
        for ns in (self.ctl_ns, self.frr_ns, self.vrf, self.vm_ns):
            _run("ip", "netns", "del", ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
