"""What the fabric learned about VTEPs that are not its own (BGP EVPN routes
and the fabric file's static VTEPs), as the compiler takes it: which MACs
live behind which external VTEP (with their IPs, for ARP suppression), which
external VTEPs want each VNI's BUM traffic (head-end replication), and, for
routed tenants, the host routes (EVPN type 2 with the L3 VNI, or a MAC+IP
route in a routed VNI) and prefix routes (type 5) of each VRF behind them.

Pure values; ``evpn.view.EvpnView.learned`` gives them out from the
learned table, which keeps them up to date route by route (``assembled``).
"""

from __future__ import annotations

import ipaddress
import weakref
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import TypeVar

_G = TypeVar("_G")


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


def host_rank(host: LearnedHost) -> tuple[int, str, tuple[int, str], str, int]:
    """Of the hosts claiming one (VRF, IP), the lowest is given out: the
    lowest (L2 VNI, MAC), then VTEP IP, router MAC and VNI (a total order:
    two hosts of one (VRF, IP) that rank the same are equal)."""
    return host.l2vni, host.mac, _vtep_order(host.vtep), host.router_mac, host.vni


def prefix_rank(prefix: LearnedPrefix) -> tuple[tuple[int, str], str, int]:
    """Of the routes of one (VRF, prefix), the lowest is given out."""
    return _vtep_order(prefix.vtep), prefix.router_mac, prefix.vni


@dataclass(frozen=True)
class LearnedDelta:
    """What differs between two ``Learned`` values, as their keys: the VNIs
    whose MACs changed, the (VRF, IP)s whose host route changed, the VRFs
    whose prefixes changed, the VNIs whose flood VTEPs changed, and the
    (VNI, MAC)s that became or stopped being ``taken``. A superset is
    allowed (a key named that did not change costs a rebuild, nothing else)."""

    macs: frozenset[int] = frozenset()
    hosts: Mapping[str, frozenset[str]] = field(default_factory=dict)
    prefixes: frozenset[str] = frozenset()
    flood: frozenset[int] = frozenset()
    taken: frozenset[tuple[int, str]] = frozenset()


@dataclass(frozen=True)
class Learned:
    macs: Mapping[int, Mapping[str, LearnedMac]] = field(default_factory=dict)  # VNI -> MAC ->
    flood: Mapping[int, frozenset[str]] = field(default_factory=dict)  # VNI -> external VTEPs
    hosts: Mapping[str, Mapping[str, LearnedHost]] = field(default_factory=dict)  # VRF -> IP ->
    prefixes: Mapping[str, Mapping[str, LearnedPrefix]] = field(
        default_factory=dict
    )  # VRF -> prefix ->
    # (VNI, MAC) of every learned MAC and host route (derived: ``takes``; a
    # frozenset, or a set the learned table keeps as a frozen overlay)
    taken: Set[tuple[int, str]] = field(init=False, compare=False, repr=False)
    # ``vteps()``, derived when first asked (or given: ``assembled``)
    _vteps: frozenset[str] | None = field(init=False, compare=False, repr=False, default=None)
    # (the value this one was made from, weakly, and what differs: ``since``)
    _parent: weakref.ref[Learned] | None = field(
        init=False, compare=False, repr=False, default=None
    )
    _delta: LearnedDelta | None = field(init=False, compare=False, repr=False, default=None)

    def __post_init__(self) -> None:
        taken = {(vni, mac) for vni, macs in self.macs.items() for mac in macs}
        taken.update((h.l2vni, h.mac) for hosts in self.hosts.values() for h in hosts.values())
        object.__setattr__(self, "taken", frozenset(taken))

    @classmethod
    def assembled(
        cls,
        macs: Mapping[int, Mapping[str, LearnedMac]],
        flood: Mapping[int, frozenset[str]],
        hosts: Mapping[str, Mapping[str, LearnedHost]],
        prefixes: Mapping[str, Mapping[str, LearnedPrefix]],
        taken: Set[tuple[int, str]],
        vteps: frozenset[str],
        parent: Learned | None = None,
        delta: LearnedDelta | None = None,
    ) -> Learned:
        """A value whose parts are already grouped and chosen as ``of`` does
        (no empty inner mapping, one host and prefix per key), with its
        derived ``taken`` and ``vteps()`` given rather than derived: for
        whoever keeps them up to date change by change (the learned table).
        Equal to the value ``of`` builds from the same facts. ``delta``:
        what differs from ``parent`` (``since``)."""
        value = cls.__new__(cls)
        for name, part in (
            ("macs", macs),
            ("flood", flood),
            ("hosts", hosts),
            ("prefixes", prefixes),
            ("taken", taken),
            ("_vteps", vteps),
            ("_parent", weakref.ref(parent) if parent is not None else None),
            ("_delta", delta if parent is not None else None),
        ):
            object.__setattr__(value, name, part)
        return value

    def since(self, old: Learned) -> LearnedDelta:
        """What differs from ``old``: as recorded when this value was made
        from it change by change (``assembled``), else by comparing the two
        (a walk of both)."""
        if self._parent is not None and self._delta is not None and self._parent() is old:
            return self._delta
        hosts: dict[str, frozenset[str]] = {}
        for vrf in old.hosts.keys() | self.hosts.keys():
            was, now = old.hosts.get(vrf, {}), self.hosts.get(vrf, {})
            ips = frozenset(ip for ip in was.keys() | now.keys() if was.get(ip) != now.get(ip))
            if ips:
                hosts[vrf] = ips
        return LearnedDelta(
            _changed_groups(old.macs, self.macs),
            hosts,
            _changed_groups(old.prefixes, self.prefixes),
            _changed_groups(old.flood, self.flood),
            frozenset(old.taken).symmetric_difference(self.taken),
        )

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
        for host in sorted(hosts, key=host_rank, reverse=True):
            by_ip.setdefault(host.vrf, {})[host.ip] = host  # (the lowest comes last)
        by_prefix: dict[str, dict[str, LearnedPrefix]] = {}
        for prefix in sorted(prefixes, key=prefix_rank, reverse=True):
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
        if self._vteps is None:
            out = {m.vtep for macs in self.macs.values() for m in macs.values()}
            out.update(h.vtep for hosts in self.hosts.values() for h in hosts.values())
            out.update(p.vtep for prefixes in self.prefixes.values() for p in prefixes.values())
            object.__setattr__(self, "_vteps", frozenset(out.union(*self.flood.values())))
            assert self._vteps is not None
        return self._vteps

    def flood_vteps(self) -> frozenset[str]:
        """External VTEPs in some VNI's flood list: each needs a replica id."""
        return frozenset().union(*self.flood.values())


def _changed_groups(old: Mapping[_G, object], new: Mapping[_G, object]) -> frozenset[_G]:
    return frozenset(x for x in old.keys() | new.keys() if old.get(x) != new.get(x))


NOTHING = Learned()
