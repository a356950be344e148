"""What the fabric learned about VTEPs that are not its own (BGP EVPN routes
and the fabric file's static VTEPs), as the compiler takes it: which MACs
live behind which external VTEP (with their IPs, for ARP suppression), which
external VTEPs want each VNI's BUM traffic (head-end replication), and, for
routed tenants, the host routes (EVPN type 2 with the L3 VNI, or a MAC+IP
route in a routed VNI) and prefix routes (type 5) of each VRF behind them.

Pure values; ``evpn.table.EvpnView.learned`` builds them from the learned
table.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LearnedMac:
    vni: int
    mac: str
    vtep: str  # an external VTEP's IP
    ips: tuple[str, ...] = ()


@dataclass(frozen=True)
class LearnedHost:
    """A host of a VRF behind an external VTEP: routed to ``router_mac`` over
    ``vni``, the VRF's L3 VNI (symmetric IRB), or the host's own L2 VNI with
    the host's MAC as ``router_mac`` (a single-label MAC+IP route in a
    routed VNI we host: asymmetric on receive). ``l2vni`` and ``mac`` are the
    host's (``Learned.takes``)."""

    vrf: str
    ip: str
    vtep: str
    router_mac: str
    vni: int
    l2vni: int
    mac: str


@dataclass(frozen=True)
class LearnedPrefix:
    """A prefix of a VRF behind an external VTEP (type 5), routed to its
    router MAC over the VRF's L3 VNI."""

    vrf: str
    prefix: str  # canonical network, e.g. "0.0.0.0/0"
    vtep: str
    router_mac: str
    vni: int


def _vtep_order(vtep: str) -> tuple[int, str]:
    try:
        return int(ipaddress.ip_address(vtep)), vtep
    except ValueError:
        return 0, vtep


@dataclass(frozen=True)
class Learned:
    macs: Mapping[int, Mapping[str, LearnedMac]] = field(default_factory=dict)  # VNI -> MAC ->
    flood: Mapping[int, frozenset[str]] = field(default_factory=dict)  # VNI -> external VTEPs
    hosts: Mapping[str, Mapping[str, LearnedHost]] = field(default_factory=dict)  # VRF -> IP ->
    prefixes: Mapping[str, Mapping[str, LearnedPrefix]] = field(
        default_factory=dict
    )  # VRF -> prefix ->
    # (VNI, MAC) of every learned MAC and host route (derived: ``takes``)
    taken: frozenset[tuple[int, str]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        taken = {(vni, mac) for vni, macs in self.macs.items() for mac in macs}
        taken.update((h.l2vni, h.mac) for hosts in self.hosts.values() for h in hosts.values())
        object.__setattr__(self, "taken", frozenset(taken))

    @classmethod
    def of(
        cls,
        macs: Iterable[LearnedMac],
        flood: Mapping[int, Iterable[str]] | None = None,
        hosts: Iterable[LearnedHost] = (),
        prefixes: Iterable[LearnedPrefix] = (),
    ) -> Learned:
        """Grouped. One host route per (VRF, IP): when several hosts claim an
        IP, the lowest (L2 VNI, MAC) (as ARP suppression gives an IP two
        learned MACs claim to the lower MAC); one prefix route per (VRF,
        prefix): the lowest VTEP IP."""
        by_vni: dict[int, dict[str, LearnedMac]] = {}
        for mac in macs:
            by_vni.setdefault(mac.vni, {})[mac.mac] = mac
        flood_sets = {vni: frozenset(vteps) for vni, vteps in (flood or {}).items() if vteps}
        by_ip: dict[str, dict[str, LearnedHost]] = {}
        for host in sorted(
            hosts, key=lambda h: (h.l2vni, h.mac, _vtep_order(h.vtep)), reverse=True
        ):
            by_ip.setdefault(host.vrf, {})[host.ip] = host  # (the lowest comes last)
        by_prefix: dict[str, dict[str, LearnedPrefix]] = {}
        for prefix in sorted(
            prefixes, key=lambda p: (_vtep_order(p.vtep), p.router_mac, p.vni), reverse=True
        ):
            by_prefix.setdefault(prefix.vrf, {})[prefix.prefix] = prefix
        return cls(by_vni, flood_sets, by_ip, by_prefix)

    def holds(self, vni: int, mac: str) -> bool:
        """Whether a remote VTEP holds the MAC (for one of our VMs: it moved away)."""
        macs = self.macs.get(vni)
        return macs is not None and mac in macs

    def takes(self, vni: int, mac: str) -> bool:
        """Whether a remote VTEP holds the MAC, in the MAC table or with a
        host route. The learned table gives out one of our VMs' MACs only
        when a remote VTEP won it (MAC mobility: the VM moved away); the
        VM's host routes then leave with its MAC."""
        return (vni, mac) in self.taken

    def vteps(self) -> frozenset[str]:
        """Every external VTEP named: each gets an underlay route on every ToR."""
        out = {m.vtep for macs in self.macs.values() for m in macs.values()}
        out.update(h.vtep for hosts in self.hosts.values() for h in hosts.values())
        out.update(p.vtep for prefixes in self.prefixes.values() for p in prefixes.values())
        return frozenset(out.union(*self.flood.values()))

    def flood_vteps(self) -> frozenset[str]:
        """External VTEPs in some VNI's flood list: each needs a replica id."""
        return frozenset().union(*self.flood.values())


NOTHING = Learned()
