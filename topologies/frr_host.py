"""An FRR host for the demo fabric (`make demo EVPN=1`): a standard Linux
EVPN VTEP, the kind p4vtep meets in a mixed data centre.

    sp1 ─┐                 frr1: VTEP 10.0.1.10 on lo, ECMP to both spines
         ├── frr1 ── c1    br5000 ── vxlan5000 (local 10.0.1.10)
    sp2 ─┘    │  │             └── c1's port      c1: a tenant A VM, no p4vtep in sight
              │  └──── c2  VRF tenant-a (a namespace: frr_vrf.py): br50000 (L3 VNI,
              │                FRR's router MAC), br5001 192.168.2.254 (the fabric's
              │                anycast gateway) and 2001:db8:3::1 (FRR's own IPv6
              │                subnet) ── vxlan5001, c2's port
              └── mgmt veth ── the controller's speaker (root namespace)

FRR (zebra + bgpd with advertise-all-vni) peers with the controller's BGP
speaker over a management link and learns nothing from a fabric file: the
p4vtep ToRs and frr1 find each other through EVPN routes only. VNI 5000 is
bridged (L2 only, as a VTEP without routing has it); tenant A's second
subnet (VNI 5001) is routed in FRR's VRF with the fabric's L3 VNI, symmetric
IRB (c2 in 192.168.2.0/24 and tenant A's VMs in 192.168.1.0/24 reach each
other through both sides' gateways). Over IPv6, c2 is in a subnet of FRR's
own, 2001:db8:3::/64 on the same SVI, which every dual-stack VM of tenant A
(2001:db8:1::/64 and 2001:db8:2::/64) reaches routed. c2 does not forward
IPv6: FRR would mark its MAC+IPv6 route with the ND extended community
(router flag), which GoBGP takes as a withdrawal (docs/evpn.md).

This kernel has no VRF devices, so zebra runs with its network-namespace VRF
backend (frr_vrf.py, shared with tests/frr_irb_lab.py); frr1's Mininet
namespace is named for `ip netns` (``ip netns attach``) and FRR runs in it.
Every FRR file (configs, pids, vty sockets, zebra's socket, logs) is in a
private directory: /etc/frr and /var/run/frr are not touched. Only the
processes started here are stopped.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frr_vrf import FrrTenant, Svi
from p4vtep.model.fabric import Fabric
from p4vtep.processes import stop_processes

FRR_DIR = Path("/usr/lib/frr")


@dataclass(frozen=True)
class FrrHostPlan:
    """Names and addresses of the FRR host; the controller's evpn: section is
    derived from them (evpn_section)."""

    name: str = "frr1"
    asn: int = 65000  # iBGP with the controller: both sides derive RT 65000:<VNI>
    vtep_ip: str = "10.0.1.10"
    vni: int = 5000
    # The BGP session: a /30 between the root namespace (controller) and frr1.
    mgmt_ctl_ip: str = "172.31.255.1"
    mgmt_frr_ip: str = "172.31.255.2"
    mgmt_ctl_intf: str = "p4v-bgp0"  # root namespace side
    # Underlay links frr1 <-> spine N: 10.1.N.0/31, spine .0, frr1 .1.
    vm_name: str = "c1"
    vm_mac: str = "00:00:0a:00:00:21"
    vm_ip: str = "192.168.1.21"
    # frr1's namespace as `ip netns` names it (FRR runs there; frr_vrf.py).
    netns: str = "p4vd-frr1"
    # The routed tenant: a host in another subnet of a routed VNI, behind
    # FRR's VRF (that VNI's VRF in the fabric file: name, L3 VNI, gateway).
    routed_vni: int = 5001
    routed_vm_name: str = "c2"
    routed_vm_mac: str = "00:00:0a:00:01:21"
    routed_vm_ip: str = "192.168.2.21"
    # Its IPv6 address, in a subnet of FRR's own on the same SVI (gateway ::1
    # of it): in no fabric subnet, so every dual-stack VM of the VRF routes to it.
    routed_subnet6: str = "2001:db8:3::/64"
    routed_vm_ip6: str = "2001:db8:3::21"
    router_mac: str = "02:fe:00:01:00:10"  # FRR's (its L3 SVI's): not a ToR's, not the anycast
    vrf_netns: str = "p4vd-frr1-vrf"  # the VRF's namespace (zebra sees it under the VRF's name)

    def spine_link(self, spine: int) -> tuple[str, str]:
        """(spine address, frr1 address) of the link to spine ``spine`` (1-based)."""
        return f"10.1.{spine}.0", f"10.1.{spine}.1"

    @property
    def routed_gateway6(self) -> str:
        """c2's IPv6 gateway: the first address of its subnet, on FRR's SVI."""
        return str(ipaddress.IPv6Network(self.routed_subnet6)[1])

    def tenant(self, fabric: Fabric) -> FrrTenant:
        """FRR's side of the routed VNI's VRF: the fabric's VRF name and L3
        VNI, the VNI's IPv4 subnet with the fabric's anycast gateway (IP and
        MAC) on FRR's SVI, as a distributed gateway has it, and FRR's own
        IPv6 subnet (``routed_subnet6``) beside it."""
        vni = fabric.vnis[self.routed_vni]
        assert vni.vrf is not None, f"VNI {vni.vni} is not routed"
        assert fabric.anycast_gateway_mac is not None
        [subnet] = [s for s in vni.subnets if ipaddress.ip_network(s.prefix).version == 4]
        prefix_len = subnet.prefix.split("/")[1]
        length6 = ipaddress.IPv6Network(self.routed_subnet6).prefixlen
        svi = Svi(
            vni.vni,
            f"{subnet.gateway}/{prefix_len}",
            fabric.anycast_gateway_mac,
            address6=f"{self.routed_gateway6}/{length6}",
        )
        return FrrTenant(
            vrf=vni.vrf,
            l3vni=fabric.vrfs[vni.vrf].l3vni,
            router_mac=self.router_mac,
            svis=(svi,),
            underlay_ns=self.netns,
            vtep_ip=self.vtep_ip,
            netns=self.vrf_netns,
        )

    def evpn_section(self, hold_time: int = 9) -> dict[str, Any]:
        """The controller's fabric-file evpn: section for this host. Our side
        only connects out (listen_port -1): nothing listens on port 179 in
        the root namespace."""
        return {
            "evpn": {
                "asn": self.asn,
                "router_id": self.mgmt_ctl_ip,
                "hold_time": hold_time,
                "listen_port": -1,
                "peers": [{"address": self.mgmt_frr_ip, "asn": self.asn}],
            }
        }


def frr_missing() -> list[str]:
    missing = []
    if not (FRR_DIR / "bgpd").exists() or not (FRR_DIR / "zebra").exists():
        missing.append("FRR (Debian package frr)")
    if not Path("/usr/bin/vtysh").exists():
        missing.append("vtysh")
    return missing


class FrrDaemons:
    """zebra and bgpd in the FRR host's namespace (``plan.netns``), zebra
    with the tenant's VRF (``tenant``), their files in a private temporary
    directory (removed by stop), logs copied to ``log_dir``."""

    def __init__(self, plan: FrrHostPlan, tenant: FrrTenant, log_dir: Path) -> None:
        self.plan = plan
        self.tenant = tenant
        self.dir = Path(tempfile.mkdtemp(prefix="p4vtep-frr-"))
        self.log_dir = log_dir
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> None:
        self.dir.chmod(0o777)  # the frr user writes its sockets, pids and logs here
        self.log_dir.mkdir(parents=True, exist_ok=True)
        p = self.plan
        (self.dir / "zebra.conf").write_text(
            f"hostname {p.name}\nlog file {self.dir}/zebra.log\n" + self.tenant.zebra_config()
        )
        (self.dir / "bgpd.conf").write_text(
            f"""frr defaults datacenter
hostname {p.name}
log file {self.dir}/bgpd.log
debug bgp neighbor-events
router bgp {p.asn}
 bgp router-id {p.vtep_ip}
 no bgp default ipv4-unicast
 neighbor {p.mgmt_ctl_ip} remote-as {p.asn}
 neighbor {p.mgmt_ctl_ip} timers connect 1
 address-family l2vpn evpn
  neighbor {p.mgmt_ctl_ip} activate
  advertise-all-vni
 exit-address-family
"""
            + self.tenant.bgpd_config(p.asn, p.vtep_ip)
        )
        self._start("zebra")
        deadline = time.monotonic() + 10
        while not (self.dir / "zserv.api").exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"zebra did not start; see {self.log_dir}/{p.name}-zebra.out")
            time.sleep(0.05)
        self._start("bgpd")

    def _start(self, daemon: str) -> None:
        # (`ip netns exec`, not the Mininet host's popen: the host's mount
        # namespace does not see the VRF's namespace, which zebra and bgpd need.)
        command = self.tenant.daemon_command([str(FRR_DIR / daemon)], self.dir)
        with open(self.log_dir / f"{self.plan.name}-{daemon}.out", "wb") as out:
            self.processes[daemon] = subprocess.Popen(
                [
                    "ip", "netns", "exec", self.plan.netns, *command,
                    "-f", str(self.dir / f"{daemon}.conf"),
                    "-i", str(self.dir / f"{daemon}.pid"),
                    "--vty_socket", str(self.dir),
                    "-z", str(self.dir / "zserv.api"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip

    def stop(self) -> None:
        stop_processes(self.processes.values(), timeout=5)
        self.processes.clear()
        for daemon in ("zebra", "bgpd"):  # FRR's own logs, kept with the demo's
            log = self.dir / f"{daemon}.log"
            if log.exists():
                shutil.copyfile(log, self.log_dir / f"{self.plan.name}-{daemon}.log")
        shutil.rmtree(self.dir, ignore_errors=True)

    def vtysh(self, command: str) -> str:
        done = subprocess.run(
            ["vtysh", "--vty_socket", str(self.dir), "-c", command],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout

    def evpn_paths(self) -> list[dict[str, Any]]:
        """FRR's EVPN table as a flat list of paths (prefix, next hops, ...)."""
        return evpn_paths(self.vtysh("show bgp l2vpn evpn json"))


def evpn_paths(show_json: str) -> list[dict[str, Any]]:
    """``show bgp l2vpn evpn json`` as a flat list of paths, each with its RD
    and prefix (FRR nests them per RD and prefix, the keys that are not RDs
    being summary fields)."""
    table = json.loads(show_json or "{}")
    paths = []
    for rd, prefixes in table.items():
        if not isinstance(prefixes, dict) or ":" not in rd:
            continue
        for prefix, entry in prefixes.items():
            if not isinstance(entry, dict):
                continue
            for group in entry.get("paths", []):
                for path in group if isinstance(group, list) else [group]:
                    paths.append({"rd": rd, "prefix": prefix, **path})
    return paths
