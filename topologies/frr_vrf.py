"""FRR's side of a routed tenant (symmetric IRB): the Linux devices FRR needs
for a VRF with an L3 VNI, and FRR's configuration for it. Used by the demo's
FRR host (`make demo EVPN=1`, frr_host.py) and by the IRB lab of the tests
(tests/frr_irb_lab.py).

    [FRR's namespace: the underlay]          [the tenant: the VRF]
     vxlan<L3 VNI>, vxlan<L2 VNI>...  ──moved──▶ br<L3 VNI> (MAC: the router MAC)
     made here (local <VTEP IP>)                 br<L2 VNI> <gateway>/<len> (an SVI
                                                   per subnet; the VMs' ports on it)

Two backends, as FRR has:

- ``netns``: the VRF is a network namespace (zebra ``-n``), for a kernel
  without VRF devices (CONFIG_NET_VRF not set, as on this project's test
  machine). The VXLAN devices are made in FRR's namespace, so it stays their
  underlay, and moved into the VRF's, where the bridges are. zebra makes a
  VRF of every namespace under /run/netns, so it runs with a /run/netns of
  its own holding only this one (``daemon_command``), under the VRF's name
  (the namespace's own name may differ: ``netns``).
- ``vrf``: the usual layout, a kernel VRF device in FRR's namespace with the
  bridges enslaved to it.

FRR then programs the rest itself from what it learns (routes via the
remote VTEPs over the L3 SVI, a neighbour entry per remote VTEP with its
router MAC, an FDB entry per router MAC): docs/evpn.md, "Symmetric IRB with
FRR". Every namespace named here must be under /run/netns (a Mininet host's
can be named with ``ip netns attach``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def run(*args: str, check: bool = True) -> str:
    """A command's standard output; RuntimeError with its error if it fails."""
    done = subprocess.run(args, check=False, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@dataclass(frozen=True)
class Svi:
    """An L2 VNI of the tenant: its bridge, with the subnet's gateway on it
    (``address``: gateway/prefix length; ``address6``: an IPv6 one beside it)
    and, for a distributed (anycast) gateway, the fabric's gateway MAC as
    the bridge's MAC."""

    vni: int
    address: str
    mac: str | None = None  # None: the kernel's
    address6: str | None = None  # e.g. "fd00:7::1/64": the tenant is dual-stack


@dataclass(frozen=True)
class FrrTenant:
    """One routed tenant on an FRR VTEP."""

    vrf: str  # FRR's VRF name
    l3vni: int
    router_mac: str  # the L3 SVI's MAC: FRR's router MAC
    svis: tuple[Svi, ...]
    underlay_ns: str  # FRR's own namespace: the VXLAN devices' underlay
    vtep_ip: str
    backend: str = "netns"
    netns: str | None = None  # (netns) the VRF's namespace under /run/netns; default: vrf
    table: int = 1001  # (vrf) the VRF device's table

    def __post_init__(self) -> None:
        if self.backend not in ("netns", "vrf"):
            raise ValueError(f"backend {self.backend!r}: netns or vrf")

    @property
    def ns(self) -> str:
        """Where the tenant's devices (bridges, SVIs, VMs' ports) are."""
        if self.backend == "vrf":
            return self.underlay_ns
        return self.netns or self.vrf

    @property
    def vnis(self) -> list[int]:
        return [self.l3vni, *(s.vni for s in self.svis)]

    @property
    def ipv6(self) -> bool:
        """Dual-stack: an SVI has an IPv6 gateway. IPv6 is off in the tenant
        otherwise (no link-local addresses, no router solicitations)."""
        return any(s.address6 for s in self.svis)

    # ---- Linux ----------------------------------------------------------------

    def build(self) -> None:
        """The VRF (a namespace or a device), a VXLAN device and a bridge per
        VNI, the L3 SVI with the router MAC, each L2 SVI with its gateway,
        all up; the tenant's namespace routes."""
        u, t = self.underlay_ns, self.ns
        if self.backend == "netns":
            run("ip", "netns", "add", t)
        if self.ipv6:
            # (a gateway address usable at once: no duplicate address detection)
            for key in ("net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.default.accept_dad=0"):
                run("ip", "netns", "exec", t, "sysctl", "-qw", key)
        else:
            run("ip", "netns", "exec", t, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "netns", "exec", t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        run("ip", "-n", t, "link", "set", "lo", "up")
        if self.backend == "vrf":
            run("ip", "-n", u, "link", "add", self.vrf, "type", "vrf", "table", str(self.table))
            run("ip", "-n", u, "link", "set", self.vrf, "up")
        for vni in self.vnis:
            run("ip", "-n", u, "link", "add", f"vxlan{vni}", "type", "vxlan", "id", str(vni),
                "local", self.vtep_ip, "dstport", "4789", "nolearning")  # fmt: skip
            if t != u:
                run("ip", "-n", u, "link", "set", f"vxlan{vni}", "netns", t)
        macs = {self.l3vni: self.router_mac, **{s.vni: s.mac for s in self.svis}}
        for vni in self.vnis:
            mac = macs[vni]
            run("ip", "-n", t, "link", "add", f"br{vni}", *(["address", mac] if mac else []),
                "type", "bridge")  # fmt: skip
            if self.backend == "vrf":
                run("ip", "-n", t, "link", "set", f"br{vni}", "master", self.vrf)
            run("ip", "-n", t, "link", "set", f"vxlan{vni}", "master", f"br{vni}")
        for svi in self.svis:
            run("ip", "-n", t, "addr", "add", svi.address, "dev", f"br{svi.vni}")
            if svi.address6:
                run("ip", "-n", t, "addr", "add", svi.address6, "dev", f"br{svi.vni}")
        if self.ipv6:
            # The L3 SVI carries no address, not even a link-local one (FRR
            # resolves the ::ffff:<VTEP> next hops of IPv6 routes on it).
            run("ip", "-n", t, "link", "set", f"br{self.l3vni}", "addrgenmode", "none")
        for vni in self.vnis:
            run("ip", "-n", t, "link", "set", f"br{vni}", "up")
            run("ip", "-n", t, "link", "set", f"vxlan{vni}", "up")

    def attach_port(self, port: str, vni: int) -> None:
        """A VM's port (already in the tenant's namespace) on VNI ``vni``'s bridge."""
        run("ip", "-n", self.ns, "link", "set", port, "master", f"br{vni}")
        run("ip", "-n", self.ns, "link", "set", port, "up")

    def remove(self) -> None:
        """The VRF's namespace (its devices go with it), or the VRF device.
        Stop zebra first: it holds the namespace open."""
        if self.backend == "netns":
            run("ip", "netns", "del", self.ns, check=False)
        else:
            run("ip", "-n", self.underlay_ns, "link", "del", self.vrf, check=False)

    # ---- FRR ------------------------------------------------------------------

    def zebra_config(self) -> str:
        return f"vrf {self.vrf}\n vni {self.l3vni}\nexit-vrf\n"

    def bgpd_config(self, asn: int, router_id: str) -> str:
        """The VRF's BGP instance: its subnets as type 5 routes, the host
        routes of its SVIs' neighbours as two-label type 2 (with
        ``advertise-all-vni`` in the default instance); IPv6 as well when
        the tenant is dual-stack."""
        ipv6_unicast = (
            " address-family ipv6 unicast\n  redistribute connected\n exit-address-family\n"
            if self.ipv6
            else ""
        )
        advertise_ipv6 = "  advertise ipv6 unicast\n" if self.ipv6 else ""
        return f"""router bgp {asn} vrf {self.vrf}
 bgp router-id {router_id}
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
{ipv6_unicast} address-family l2vpn evpn
  advertise ipv4 unicast
{advertise_ipv6} exit-address-family
"""

    def daemon_command(self, daemon: list[str], private_dir: Path) -> list[str]:
        """An FRR daemon's command line (``daemon``: zebra's or bgpd's) for
        this backend. With the netns backend both run in a mount namespace
        of their own whose /run/netns (under ``private_dir``) holds only the
        VRF's namespace, under the VRF's name, and zebra gets ``-n``.
        zebra makes a VRF of every namespace it finds there, and bgpd then
        takes the MACs of all their interfaces for its own: a route for a VM
        whose namespace zebra saw (another VTEP's VM, another lab's) would
        be dropped as "self MAC". bgpd opens each VRF's BGP listener inside
        the VRF's namespace, found by name under /run/netns: without the
        same view its VRF listener lands in FRR's own namespace beside the
        default instance's, on port 179 too, and the kernel hands it about
        half of the incoming sessions, which it rejects ("connection
        rejected(VRF tenant-a) - not configured")."""
        if self.backend == "vrf":
            return daemon
        script = (
            'mkdir -p "$1" && touch "$1/$2" && mount --bind "/run/netns/$3" "$1/$2" '
            '&& mount --rbind "$1" /run/netns && shift 3 && exec "$@"'
        )
        netns_flag = ["-n"] if Path(daemon[0]).name == "zebra" else []
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                str(private_dir / "netns"), self.vrf, self.ns, daemon[0], *netns_flag,
                *daemon[1:]]  # fmt: skip

    # ---- looking at the Linux side ------------------------------------------------

    def kernel_routes(self, family: str = "-4") -> list[dict[str, Any]]:
        """The VRF's routing table in the kernel (the VRF's namespace, or the
        VRF device's table); ``family`` "-6" for the IPv6 one."""
        if self.backend == "netns":
            out = run("ip", family, "-n", self.ns, "-j", "route", "show")
        else:
            out = run("ip", family, "-n", self.underlay_ns, "-j", "route", "show", "vrf", self.vrf)
        return list(json.loads(out or "[]"))

    def bgp_routes(self, family: str = "-4") -> dict[str, set[str]]:
        """The kernel routes FRR installed from BGP: destination -> gateways
        (``family`` "-6": the IPv6 ones, gateways ``::ffff:<VTEP>``)."""
        out = {}
        for r in self.kernel_routes(family):
            if r.get("protocol") == "bgp":
                out[r["dst"]] = {h.get("gateway", "") for h in r.get("nexthops", [r])}
        return out

    def neighbours(self) -> dict[str, str]:
        """The L3 SVI's neighbour entries: remote VTEP IP -> router MAC (and,
        for IPv6 routes, ``::ffff:<VTEP IP>`` -> router MAC)."""
        out = run("ip", "-n", self.ns, "-j", "neigh", "show", "dev", f"br{self.l3vni}")
        return {n["dst"]: n.get("lladdr", "") for n in json.loads(out or "[]")}

    def fdb(self, vni: int) -> list[dict[str, Any]]:
        """VNI ``vni``'s VXLAN device's FDB (entries with a ``dst``: towards VTEPs)."""
        out = run("bridge", "-n", self.ns, "-j", "fdb", "show", "dev", f"vxlan{vni}")
        return [e for e in json.loads(out or "[]") if "dst" in e]

    def svi_mac(self, vni: int) -> str:
        """The MAC of VNI ``vni``'s bridge (the SVI): routed frames' source."""
        out = json.loads(run("ip", "-n", self.ns, "-j", "link", "show", f"br{vni}"))
        return str(out[0]["address"])
