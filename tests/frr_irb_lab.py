"""An FRR 8.4 VTEP doing symmetric IRB, in network namespaces the test owns.

    [ns ctl]  gobgpd (p4vtep's speaker)
       ctl0 10.96.<n>.1 ───veth─── frr0 10.96.<n>.2  [ns frr]   zebra -n + bgpd
                                   (10.96.<n>.3: a second peer, the observer)
                                   vxlan<L3VNI>, vxlan<L2VNI> (local 10.96.<n>.2)
                                   (up0: a ToR's uplink, for the data plane)
                                       │ moved into
                                   [ns vrf: FRR's VRF]  br<L3VNI> (the RMAC)
                                                        br<L2VNI> 192.168.7.1/24
                                                          └── vmbr0 ══ vm0 [ns vm]
                                                        (br<shared VNI>: one of the
                                                         fabric's subnets, anycast
                                                         gateway; a VM moves here)

The container's kernel has no VRF devices (CONFIG_NET_VRF is not set:
``ip link add ... type vrf`` fails with "Unknown device type"), so FRR runs
with its other VRF backend, network namespaces (``zebra -n``): the VRF is the
namespace named like it, and the tenant's devices live in it. Then FRR 8.4
does what it does with a kernel VRF: the L3 VNI comes up with the L3 SVI's
MAC as router MAC, ``advertise-all-vni`` sends the VRF's hosts as two-label
type 2 routes and ``advertise ipv4 unicast`` its prefixes as type 5, and the
routes it imports are installed in that namespace: routes via the remote
VTEPs over the L3 SVI, a neighbour entry per remote VTEP IP with its router
MAC, an FDB entry per router MAC towards its VTEP. The VXLAN devices keep
FRR's namespace as their underlay (they were made there), so that is the
whole Linux data plane of symmetric IRB, programmed by FRR. zebra runs with
a /run/netns of its own holding only the VRF's namespace (it would make a VRF
of every namespace there).

The tenant's Linux side and FRR's VRF configuration are
``topologies/frr_vrf.py``'s (``FrrTenant``), which the demo's FRR host
(``make demo EVPN=1``) uses as well; this lab adds the namespaces around it.

``backend="vrf"`` builds the usual layout instead, where the kernel has VRF
devices: everything in FRR's namespace, the bridges enslaved to a VRF device,
zebra without ``-n`` (``kernel_vrf_missing()`` says why it cannot run here).

FRR runs as its packaged user with every file in a private temp dir, as in
frr_lab.py. Namespaces carry this run's pid and are deleted at the end; only
the daemons started here are stopped, by the processes started here.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabric_fixture import L3VNI, evpn_for
from frr_host import evpn_paths
from frr_lab import FRR_DIR, _run
from frr_vrf import FrrTenant, Svi
from helpers import assert_each_tor_compiles
from p4vtep.compiler import Encoder, Learned
from p4vtep.compiler.learned import LearnedPrefix
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, RemoteVtepHop
from p4vtep.evpn import gobgp_api
from p4vtep.evpn.config import EvpnConfig, EvpnPeer, VniRouting, VrfRouting
from p4vtep.evpn.options import EvpnOptions
from p4vtep.evpn.service import EvpnService
from p4vtep.evpn.speaker import wait_for
from p4vtep.evpn.view import RemotePrefix
from p4vtep.model.fabric import Fabric, Vm
from p4vtep.processes import stop_processes

VM_MAC = "52:54:00:f0:00:07"
VM_IP = "192.168.7.10"
SUBNET = "192.168.7.0/24"
GATEWAY = "192.168.7.1"
# With ipv6=True the tenant is dual-stack: FRR's subnet and VM get these too.
VM_IP6 = "fd00:7::10"
SUBNET6 = "fd00:7::/64"
GATEWAY6 = "fd00:7::1"
FRR_RMAC = "02:fe:00:00:00:02"
FRR_VNI = 5007  # FRR's own L2 VNI (the default; its VRF's L3 VNI: the fabric's L3VNI)
OBSERVER_ASN = 65099
VRF_TABLE = 1001  # the kernel VRF device's table (backend "vrf")


@dataclass(frozen=True)
class SharedVni:
    """An L2 VNI FRR serves as well as the fabric: one of its subnets, with
    the fabric's anycast gateway (IP and MAC) on FRR's SVI, as a
    distributed gateway does; a VM can move between the two. ``gateway6``:
    the subnet's IPv6 gateway (a /64) beside it, for a dual-stack tenant."""

    vni: int
    prefix_len: int
    gateway: str
    gateway_mac: str
    gateway6: str | None = None


def kernel_vrf_missing() -> str | None:
    """Why kernel VRF devices cannot be made here, or None if they can (tried
    in a namespace made and deleted for the purpose)."""
    ns = f"p4vi-k{os.getpid() % 100000}"
    try:
        _run("ip", "netns", "add", ns)
    except RuntimeError as exc:
        return f"no network namespace: {exc}"
    try:
        done = subprocess.run(
            ["ip", "-n", ns, "link", "add", "vrf-probe", "type", "vrf", "table", "10"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return (
                "this kernel has no VRF devices (CONFIG_NET_VRF; `ip link add ... type vrf`: "
                f"{done.stderr.strip()})"
            )
        return None
    finally:
        _run("ip", "netns", "del", ns, check=False)


class FrrIrbLab:
    def __init__(
        self,
        asn: int = 65000,
        l3vni: int = L3VNI,
        l2vni: int = FRR_VNI,
        backend: str = "netns",
        shared: SharedVni | None = None,
        ipv6: bool = False,
    ) -> None:
        """``ipv6``: FRR's subnet (and VM) dual-stack, ``advertise ipv6
        unicast`` in the VRF (SUBNET6, VM_IP6)."""
        tag = os.getpid() % 100000
        self.asn, self.l3vni, self.l2vni = asn, l3vni, l2vni
        self.backend, self.shared, self.ipv6 = backend, shared, ipv6
        self.ctl_ns, self.frr_ns = f"p4vi-c{tag}", f"p4vi-f{tag}"
        self.vrf, self.vm_ns = f"p4vi-r{tag}", f"p4vi-v{tag}"  # (netns: the VRF is a namespace)
        subnet = tag % 250 + 1
        self.ctl_ip, self.frr_ip = f"10.96.{subnet}.1", f"10.96.{subnet}.2"
        svis = [Svi(l2vni, f"{GATEWAY}/24", address6=f"{GATEWAY6}/64" if ipv6 else None)]
        if shared:
            address = f"{shared.gateway}/{shared.prefix_len}"
            address6 = f"{shared.gateway6}/64" if shared.gateway6 else None
            svis.append(Svi(shared.vni, address, shared.gateway_mac, address6))
        # FRR's side of the routed tenant (topologies/frr_vrf.py, shared with the demo).
        self.tenant = FrrTenant(self.vrf, l3vni, FRR_RMAC, tuple(svis), self.frr_ns,
                                self.frr_ip, backend, table=VRF_TABLE)  # fmt: skip
        # Where the tenant's devices (bridges, SVIs, VMs' ports) are.
        self.tenant_ns = self.tenant.ns
        self.observer_ip = f"10.96.{subnet}.3"
        self.dir = Path(tempfile.mkdtemp(prefix="p4vtep-frr-irb-"))
        self.dir.chmod(0o777)
        self.daemons: dict[str, subprocess.Popen[bytes]] = {}
        self.extra_ns: list[str] = []  # more VMs (add_vm)
        self.vm_ip6: dict[str, str] = {}  # their IPv6 addresses (add_vm)
        # FRR's VM's addresses and FRR's subnets: IPv4, and IPv6 with ipv6
        self.vm_ips = (VM_IP, VM_IP6) if ipv6 else (VM_IP,)
        self.subnets = (SUBNET, SUBNET6) if ipv6 else (SUBNET,)

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
        c, f, v = self.ctl_ns, self.frr_ns, self.vm_ns
        for ns in (c, f, v):
            _run("ip", "netns", "add", ns)
        ipv6 = "net.ipv6.conf.default." + ("accept_dad=0" if self.ipv6 else "disable_ipv6=1")
        _run("ip", "netns", "exec", v, "sysctl", "-qw", ipv6)
        if self.ipv6:
            # A host, not a router: FRR marks a router-flagged IPv6 neighbour's
            # MAC+IPv6 route with the ND extended community, which GoBGP takes
            # as a withdrawal (docs/evpn.md, "Two GoBGP pitfalls"). A new
            # namespace does not forward; said here, where it matters.
            _run("ip", "netns", "exec", v, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=0")
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
        # The VRF, its VXLAN devices (underlay: FRR's namespace), bridges and SVIs.
        self.tenant.build()
        _run("ip", "-n", self.tenant_ns, "link", "add", "vmbr0", "type", "veth", "peer", "name",
             "vm0", "address", VM_MAC, "netns", v)  # fmt: skip
        self.tenant.attach_port("vmbr0", self.l2vni)
        _run("ip", "-n", v, "link", "set", "vm0", "up")
        _run("ip", "-n", v, "addr", "add", f"{VM_IP}/24", "dev", "vm0")
        _run("ip", "-n", v, "route", "add", "default", "via", GATEWAY)
        if self.ipv6:
            _run("ip", "-n", v, "addr", "add", f"{VM_IP6}/64", "dev", "vm0")
            _run("ip", "-n", v, "-6", "route", "add", "default", "via", GATEWAY6)

    def _start_frr(self) -> None:
        (self.dir / "zebra.conf").write_text(
            f"hostname frr-irb\nlog file {self.dir}/zebra.log\n" + self.tenant.zebra_config()
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
"""
            + self.tenant.bgpd_config(self.asn, self.frr_ip)
        )
        for name in ("zebra", "bgpd"):
            log = open(self.dir / f"{name}.out", "wb")  # noqa: SIM115 - handed to the child
            command = ["ip", "netns", "exec", self.frr_ns]
            daemon = [str(FRR_DIR / name), *(["-l", self.frr_ip] if name == "bgpd" else [])]
            command += self.tenant.daemon_command(daemon, self.dir)
            command += ["-f", str(self.dir / f"{name}.conf"), "-i", str(self.dir / f"{name}.pid")]
            command += ["--vty_socket", str(self.dir), "-z", str(self.dir / "zserv.api"), "-P", "0"]
            self.daemons[name] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            log.close()
            # zebra's socket for bgpd, and each daemon's vty socket: vtysh
            # says "bgpd is not running" until bgpd.vty exists (seen on a
            # loaded machine: the first session check came before it).
            for ready in ("zserv.api", "zebra.vty") if name == "zebra" else ("bgpd.vty",):
                deadline = time.monotonic() + 10
                while not (self.dir / ready).exists():
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{name} did not start; see {self.dir}")
                    time.sleep(0.05)

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

    def add_vm(self, name: str, mac: str, ip: str, ip6: str | None = None) -> str:
        """A VM on the shared VNI's bridge, in a namespace of its own with the
        anycast gateway as default route, its link down until ``vm_up``;
        returns the namespace. ``ip6``: dual-stack, that IPv6 address (/64)
        too, the shared VNI's IPv6 gateway its default route; a host that
        does not forward (as FrrIrbLab's VM)."""
        assert self.shared is not None
        ns = f"{self.vm_ns}{name}"
        _run("ip", "netns", "add", ns)
        self.extra_ns.append(ns)
        if ip6 is None:
            _run("ip", "netns", "exec", ns, "sysctl", "-qw",
                 "net.ipv6.conf.default.disable_ipv6=1")  # fmt: skip
        else:
            assert self.shared.gateway6 is not None
            self.vm_ip6[name] = ip6
            for key in ("default.accept_dad=0", "default.accept_ra=0", "all.forwarding=0"):
                _run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}")
        port = f"{name}br"
        _run("ip", "-n", self.tenant_ns, "link", "add", port, "type", "veth", "peer", "name",
             f"{name}0", "address", mac, "netns", ns)  # fmt: skip
        self.tenant.attach_port(port, self.shared.vni)
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "addr", "add", f"{ip}/{self.shared.prefix_len}", "dev", f"{name}0")
        return ns

    def vm_up(self, name: str, up: bool = True) -> None:
        """The VM starts (its link up, its route to the gateway back) or
        stops (its link down; its bridge entry and neighbour entry go). A
        dual-stack VM's IPv6 address and route are set when it starts (Linux
        drops an interface's IPv6 addresses when it goes down)."""
        assert self.shared is not None
        ns = f"{self.vm_ns}{name}"
        _run("ip", "-n", ns, "link", "set", f"{name}0", "up" if up else "down")
        if up:
            _run("ip", "-n", ns, "route", "replace", "default", "via", self.shared.gateway)
            if name in self.vm_ip6:
                _run("ip", "-n", ns, "addr", "replace", f"{self.vm_ip6[name]}/64", "dev",
                     f"{name}0", "nodad")  # fmt: skip
                _run("ip", "-n", ns, "-6", "route", "replace", "default", "via",
                     str(self.shared.gateway6))  # fmt: skip
        else:
            _run("bridge", "-n", self.tenant_ns, "fdb", "flush", "dev", f"{name}br", check=False)

    def in_ns(self, ns: str, *command: str, check: bool = True) -> str:
        return _run("ip", "netns", "exec", ns, *command, check=check)

    def vm_speaks(self) -> None:
        """The VM pings its gateway once, while zebra runs: the bridge learns
        its MAC and the SVI its ARP entry (zebra, with the namespace backend,
        takes both from notifications), and FRR advertises the VM's MAC and
        MAC+IP routes (with ``ipv6``, also MAC+IPv6: it pings its IPv6 gateway)."""
        _run("ip", "netns", "exec", self.vm_ns, "ping", "-c", "1", "-W", "2", GATEWAY)
        if self.ipv6:
            _run("ip", "netns", "exec", self.vm_ns, "ping", "-6", "-c", "1", "-W", "2", GATEWAY6)

    def set_router_mac(self, mac: str) -> None:
        """FRR's router MAC is its L3 SVI's MAC."""
        _run("ip", "-n", self.tenant_ns, "link", "set", f"br{self.l3vni}", "address", mac)

    def svi_mac(self, vni: int) -> str:
        """The MAC of VNI ``vni``'s bridge (the SVI): routed frames' source."""
        return self.tenant.svi_mac(vni)

    # ---- looking at FRR -------------------------------------------------------

    def vtysh(self, command: str) -> str:
        return _run("vtysh", "--vty_socket", str(self.dir), "-c", command)

    def configure(self, *lines: str) -> None:
        """Configuration lines, entered from ``configure terminal``."""
        commands = [arg for line in ("configure terminal", *lines) for arg in ("-c", line)]
        _run("vtysh", "--vty_socket", str(self.dir), *commands)

    @contextmanager
    def default_originated(self, family: str) -> Iterator[None]:
        """FRR's VRF originates a default route of ``family`` (ipv4, ipv6)
        as a type 5 until the end."""
        where = (f"router bgp {self.asn} vrf {self.vrf}", "address-family l2vpn evpn")
        self.configure(*where, f"default-originate {family}")
        try:
            yield
        finally:
            self.configure(*where, f"no default-originate {family}")

    def evpn_routes(self) -> list[dict[str, Any]]:
        return evpn_paths(self.vtysh("show bgp l2vpn evpn json"))

    def evpn_routes_via(self, next_hop: str) -> dict[str, dict[str, Any]]:
        """FRR's EVPN paths with this next hop, by "RD prefix"."""
        return {
            f"{p['rd']} {p['prefix']}": p
            for p in self.evpn_routes()
            if any(nh.get("ip") == next_hop for nh in p.get("nexthops", []))
        }

    def evpn_detail(self) -> str:
        return self.vtysh("show bgp l2vpn evpn route detail")

    def vrf_routes(self, family: str = "ipv4") -> dict[str, Any]:
        """FRR's BGP table of the VRF (what it imported), by prefix
        (``family``: ipv4 or ipv6)."""
        table = json.loads(self.vtysh(f"show bgp vrf {self.vrf} {family} unicast json") or "{}")
        return dict(table.get("routes", {}))

    def vrf_next_hops(self, family: str = "ipv4") -> dict[str, set[str]]:
        """FRR's BGP table of the VRF: prefix -> next hops, an IPv4-mapped one
        in RFC 5952's form (``::ffff:10.0.0.1``; FRR writes ``::ffff:a00:1``)."""
        return {
            prefix: {_canonical(nh["ip"]) for path in paths for nh in path.get("nexthops", [])}
            for prefix, paths in self.vrf_routes(family).items()
        }

    def kernel_routes(self, family: str = "-4") -> list[dict[str, Any]]:
        """The VRF's routing table in the kernel (the VRF's namespace, or the
        VRF device's table); ``family`` "-6" for the IPv6 one."""
        return self.tenant.kernel_routes(family)

    def bgp_kernel_routes(self, family: str = "-4") -> dict[str, set[tuple[str, str]]]:
        """The VRF's kernel routes FRR's BGP installed: dst -> {(gateway, dev)}
        (several for an ECMP route); ``family`` "-6" for the IPv6 ones."""
        out = {}
        for r in self.kernel_routes(family):
            if r.get("protocol") == "bgp":
                hops = r.get("nexthops", [r])
                out[r["dst"]] = {(h.get("gateway", ""), h.get("dev", "")) for h in hops}
        return out

    def kernel_neighbours(self) -> dict[str, str]:
        """The L3 SVI's neighbour entries: remote VTEP IP -> router MAC."""
        return self.tenant.neighbours()

    def kernel_fdb(self, vni: int) -> list[dict[str, Any]]:
        """VNI ``vni``'s VXLAN device's FDB (entries with a ``dst``: towards VTEPs)."""
        return self.tenant.fdb(vni)

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
        self.tenant.remove()
        for ns in (self.ctl_ns, self.frr_ns, self.vm_ns, *self.extra_ns):
            _run("ip", "netns", "del", ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def _canonical(ip: str) -> str:
    address = ipaddress.ip_address(ip)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return f"::ffff:{mapped}" if mapped is not None else str(address)


# ---- our speaker, peering with FRR, and what it learns compiled ----------------


def assert_routed_to_frr(
    frr: FrrIrbLab,
    fabric: Fabric,
    vms: list[Vm],
    learned: Learned,
    routes: Iterable[str],
) -> None:
    """``learned`` compiled with ``vms`` on ``fabric``: every ToR routes
    each of ``routes`` (host addresses, prefixes) towards FRR's VTEP and
    router MAC in its L3 VNI, has an underlay route to FRR's VTEP, and
    equals its whole compile."""
    entries = PipelineEntries(bmv2_pipeline().p4info)
    to_frr = RemoteVtepHop(frr.frr_ip, FRR_RMAC, frr.l3vni)
    messages = [entries.underlay_route(frr.frr_ip, 32, group_id=1)]
    for route in routes:
        if "/" in route:
            address, length = route.split("/")
            messages.append(entries.prefix_route(frr.l3vni, address, int(length), to_frr))
        else:
            messages.append(entries.host_route(frr.l3vni, route, to_frr))
    assert_each_tor_compiles(fabric, vms, learned, Encoder(entries), messages)


def our_evpn_config(frr: FrrIrbLab, fabric: Fabric, *more_peers: EvpnPeer) -> EvpnConfig:
    """Our speaker's config against ``frr``: VRF red and VNIs 5000/5001 of
    ``fabric`` with the automatic RDs and route targets (FRR's convention:
    65000:VNI, 65000:L3VNI), FRR as iBGP peer (and ``more_peers``), from the
    controller's address, hold time 3 s."""
    peers = (EvpnPeer(frr.frr_ip, 65000), *more_peers)
    return evpn_for(fabric, (5000, 5001), router_id=frr.ctl_ip, peers=peers, hold_time=3)


@contextmanager
def default_route_from_frr(frr: FrrIrbLab, service: EvpnService, prefix: str) -> Iterator[Learned]:
    """FRR's VRF originates the default route ``prefix`` (0.0.0.0/0, ::/0)
    as a type 5: yields what our ``service`` learned once it holds that as
    a prefix route of VRF red towards FRR (checked, in the learned value
    too); FRR stops, and the route goes (checked)."""
    default = RemotePrefix("red", prefix, frr.frr_ip, FRR_RMAC, frr.l3vni, frr.frr_ip)
    with frr.default_originated("ipv6" if ":" in prefix else "ipv4"):
        assert wait_for(lambda: default in service.view.prefix_routes(), 10), (
            service.view.prefix_routes()
        )
        learned = service.view.learned()
        assert learned.prefixes["red"][prefix] == LearnedPrefix(
            "red", prefix, frr.frr_ip, FRR_RMAC, frr.l3vni
        )
        yield learned
    assert wait_for(lambda: default not in service.view.prefix_routes(), 10)


@contextmanager
def advertising(service: EvpnService, *local: Any) -> Iterator[None]:
    """Our speaker advertises ``local`` (``set_local``'s arguments: our VMs'
    MACs, each VTEP's VNIs) until the end, then nothing."""
    service.set_local(*local)
    try:
        yield
    finally:
        service.set_local([], {})


@contextmanager
def our_speaker(frr: FrrIrbLab, fabric: Fabric, vteps: list[str]) -> Iterator[EvpnService]:
    """Our EVPN service for ``fabric`` (ToR VTEPs ``vteps``) in the
    controller's namespace, FRR and the observer's address as its peers,
    yielded once FRR's session and L3 VNI are up and FRR's VM has spoken
    (FRR advertises it)."""
    service = EvpnService(
        our_evpn_config(frr, fabric, EvpnPeer(frr.observer_ip, OBSERVER_ASN)),
        vteps,
        EvpnOptions(
            command_prefix=("ip", "netns", "exec", frr.ctl_ns), listen_addresses=(frr.ctl_ip,)
        ),
    )
    service.start()
    try:
        assert wait_for(frr.session_established, 30), f"no session; logs in {frr.dir}"
        assert wait_for(frr.l3vni_up, 10), frr.vtysh("show evpn vni")
        frr.vm_speaks()
        yield service
    finally:
        service.stop()


# ---- a GoBGP observer: what we send, as another speaker decodes it -------------


def observer_config(frr: FrrIrbLab, l3vni: int = L3VNI) -> EvpnConfig:
    """A second GoBGP (eBGP, AS OBSERVER_ASN; it does not listen, it dials
    us from the observer address) that imports anything of VRF red (L3 VNI
    ``l3vni``) and VNIs 5000/5001, and knows none of our MACs (so it
    refuses none of our routes): what it holds from us is what we send."""
    return EvpnConfig(
        asn=OBSERVER_ASN,
        router_id=frr.observer_ip,
        peers=(EvpnPeer(frr.ctl_ip, 65000),),
        vnis=tuple(
            VniRouting(v, None, (f"*:{v}",), (f"{OBSERVER_ASN}:{v}",)) for v in (5000, 5001)
        ),
        vrfs=(VrfRouting("red", l3vni, None, (f"*:{l3vni}",), (f"{OBSERVER_ASN}:{l3vni}",)),),
        hold_time=3,
        listen_port=-1,
    )


@contextmanager
def observing(frr: FrrIrbLab) -> Iterator[EvpnService]:
    """The observer (``observer_config`` for FRR's L3 VNI), running in
    FRR's namespace from the observer's address until the end."""
    observer = EvpnService(
        observer_config(frr, frr.l3vni),
        [],
        EvpnOptions(
            command_prefix=("ip", "netns", "exec", frr.frr_ns), local_address=frr.observer_ip
        ),
    )
    observer.start()
    try:
        yield observer
    finally:
        observer.stop()


def observed_paths(observer: EvpnService, ctl_ip: str) -> list[dict[str, Any]]:
    """The EVPN paths the observer's gobgpd holds from us, every attribute
    spelt out from GoBGP's own messages."""
    api, attr = gobgp_api.gobgp_pb2, gobgp_api.attribute_pb2
    stub = observer.speaker._stub
    out = []
    request = api.ListPathRequest(
        table_type=api.ADJ_IN,
        name=ctl_ip,
        family=api.Family(afi=api.Family.AFI_L2VPN, safi=api.Family.SAFI_EVPN),
    )
    for reply in stub.ListPath(request):
        for path in reply.destination.paths:
            kind = path.nlri.type_url.rpartition(".")[2]
            seen: dict[str, Any] = {"kind": kind, "rts": set(), "encap": None, "rmac": None}
            if kind == "EVPNMACIPAdvertisementRoute":
                n = _unpacked(path.nlri, attr.EVPNMACIPAdvertisementRoute)
                seen.update(mac=n.mac_address, ip=n.ip_address, labels=list(n.labels))
                seen["esi"] = bytes([n.esi.type]) + bytes(n.esi.value)
            elif kind == "EVPNIPPrefixRoute":
                n = _unpacked(path.nlri, attr.EVPNIPPrefixRoute)
                seen.update(
                    prefix=f"{n.ip_prefix}/{n.ip_prefix_len}", gw=n.gw_address, labels=[n.label]
                )
                seen["esi"] = bytes([n.esi.type]) + bytes(n.esi.value)
            elif kind == "EVPNInclusiveMulticastEthernetTagRoute":
                n = _unpacked(path.nlri, attr.EVPNInclusiveMulticastEthernetTagRoute)
                seen.update(originator=n.ip_address)
            for wrapped in path.pattrs:
                name = wrapped.type_url.rpartition(".")[2]
                if name == "MpReachNLRIAttribute":
                    seen["next_hop"] = _unpacked(wrapped, attr.MpReachNLRIAttribute).next_hops[0]
                elif name == "PmsiTunnelAttribute":
                    seen["pmsi_label"] = _unpacked(wrapped, attr.PmsiTunnelAttribute).label
                elif name == "ExtendedCommunitiesAttribute":
                    for c in _unpacked(wrapped, attr.ExtendedCommunitiesAttribute).communities:
                        _read_community(c, seen)
            out.append(seen)
    return out


def _read_community(community: Any, seen: dict[str, Any]) -> None:
    """Note an extended community of a path in ``seen``: a route target in
    "rts", the encapsulation, the router MAC, the MAC mobility number."""
    attr = gobgp_api.attribute_pb2
    kind = community.type_url.rpartition(".")[2]
    if kind == "TwoOctetAsSpecificExtended":
        rt = _unpacked(community, attr.TwoOctetAsSpecificExtended)
        seen["rts"].add(f"{rt.asn}:{rt.local_admin}")
    elif kind == "EncapExtended":
        seen["encap"] = _unpacked(community, attr.EncapExtended).tunnel_type
    elif kind == "RouterMacExtended":
        seen["rmac"] = _unpacked(community, attr.RouterMacExtended).mac
    elif kind == "MacMobilityExtended":
        seen["seq"] = _unpacked(community, attr.MacMobilityExtended).sequence_num


def _unpacked(wrapped: Any, cls: Any) -> Any:
    """The ``cls`` message packed in the protobuf Any ``wrapped``."""
    message = cls()
    wrapped.Unpack(message)
    return message
