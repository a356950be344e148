"""What the learned EVPN table gives out: remote MACs, host routes and
prefixes, the local MACs we advertise, the change an update made, and the
routes held back (value types), and ``EvpnView``, the read-only side the
controller's compiler uses (``table.LearnedTable.view``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..compiler.learned import (
    Learned,
)

if TYPE_CHECKING:
    from .table import LearnedTable

LOCAL = "local"  # the source name of our own VMs' claims

MacKey = tuple[int, str]  # (VNI, MAC)
PrefixKey = tuple[str, str]  # (VRF, prefix)
# A host route a type 2 route gives: (VRF, IP address, router MAC, the VNI
# routed frames travel in: the L3 VNI, or the host's own VNI when asymmetric).
RoutedIp = tuple[str, str, str, int]


@dataclass(frozen=True)
class RemoteMac:
    """A MAC behind a VTEP that is not one of ours: what the ToRs will install
    (its MAC entry in its VNI when ``bridged``, and its host ``routes``)."""

    vni: int
    mac: str
    vtep: str
    ips: frozenset[str]
    seq: int
    source: str  # peer address, or "static"
    bridged: bool = True  # False: a VNI we do not host (symmetric IRB), routes only
    routes: frozenset[RoutedIp] = frozenset()


@dataclass(frozen=True)
class RemoteHost:
    """A host route of a VRF behind an external VTEP (from the winner of its MAC)."""

    vrf: str
    ip: str
    vtep: str
    router_mac: str
    vni: int  # what routed frames travel in (see RoutedIp)
    l2vni: int
    mac: str
    seq: int
    source: str


@dataclass(frozen=True)
class RemotePrefix:
    """A prefix of a VRF behind an external VTEP (type 5): what the ToRs install."""

    vrf: str
    prefix: str
    vtep: str
    router_mac: str
    l3vni: int
    source: str


@dataclass(frozen=True)
class LocalMac:
    """A MAC of one of our VMs, behind one of our ToRs."""

    vni: int
    mac: str
    vtep: str  # the ToR's VTEP IP
    ips: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LocalAdvertisement:
    """A local MAC we advertise, with the sequence number it must carry."""

    vni: int
    mac: str
    vtep: str
    ips: frozenset[str]
    seq: int


@dataclass(frozen=True)
class ViewChange:
    """What one update changed; the controller recompiles from these."""

    remote_added: frozenset[RemoteMac] = frozenset()
    remote_removed: frozenset[RemoteMac] = frozenset()
    flood_added: frozenset[tuple[int, str]] = frozenset()  # (VNI, VTEP)
    flood_removed: frozenset[tuple[int, str]] = frozenset()
    local_changed: frozenset[MacKey] = frozenset()  # advertisement added, gone or renumbered
    prefixes_added: frozenset[RemotePrefix] = frozenset()
    prefixes_removed: frozenset[RemotePrefix] = frozenset()

    @property
    def learned_changed(self) -> bool:
        """Whether what the ToRs are given (``EvpnView.learned``) changed."""
        return bool(
            self.remote_added
            or self.remote_removed
            or self.flood_added
            or self.flood_removed
            or self.prefixes_added
            or self.prefixes_removed
        )

    def __bool__(self) -> bool:
        return self.learned_changed or bool(self.local_changed)


@dataclass(frozen=True)
class HeldRoute:
    """A remote route the table holds (learned from a peer, or a static entry
    of the fabric file), and whether it is what the ToRs get for its MAC."""

    source: str  # peer address, or "static"
    type: int  # 2, 3 or 5
    vni: int  # type 5: the L3 VNI
    vtep: str
    mac: str = ""  # type 2
    ips: frozenset[str] = frozenset()  # type 5: the prefix
    seq: int = 0
    rd: str = ""  # empty for static entries
    # Why it is not installed: "conflict" (another VTEP holds the MAC with the
    # same number) or "superseded" (another VTEP, or our VM, with a higher one;
    # type 5: a lower VTEP IP with the same prefix).
    lost: str = ""
    vrf: str = ""  # the VRF of a host (type 2) or prefix (type 5) route
    l3vni: int = 0  # type 2 with a second label
    router_mac: str = ""


class EvpnView:
    """Read-only facts for the controller's compiler."""

    def __init__(self, table: LearnedTable) -> None:
        self._table = table

    def remote_macs(self, vni: int | None = None) -> frozenset[RemoteMac]:
        """The remote winners whose MAC is installed in its VNI (a VNI we host)."""
        with self._table._lock:
            macs = self._table._remote_macs()
        return macs if vni is None else frozenset(m for m in macs if m.vni == vni)

    def host_routes(self, vrf: str | None = None) -> frozenset[RemoteHost]:
        """The host routes of the remote winners (symmetric IRB type 2, and
        MAC+IP routes in our routed VNIs)."""
        with self._table._lock:
            hosts = self._table._host_routes()
        return hosts if vrf is None else frozenset(h for h in hosts if h.vrf == vrf)

    def prefix_routes(self, vrf: str | None = None) -> frozenset[RemotePrefix]:
        """The type 5 routes given out: one per (VRF, prefix)."""
        with self._table._lock:
            prefixes = self._table._prefix_routes()
        return prefixes if vrf is None else frozenset(p for p in prefixes if p.vrf == vrf)

    def learned(self) -> Learned:
        """Everything the ToRs are given, as the compiler takes it: the
        winners' MACs (of VNIs we host) and host routes, the flood VTEPs and
        the prefix routes, read at one instant. Kept up to date update by
        update, not rebuilt: the same value until something changes, and
        each new one says what differs from the one before (``Learned.since``)."""
        with self._table._lock:
            return self._table._learned()

    def flood_vteps(self, vni: int) -> frozenset[str]:
        with self._table._lock:
            return frozenset(vtep for v, vtep in self._table._flood() if v == vni)

    def flood_map(self) -> dict[int, frozenset[str]]:
        with self._table._lock:
            flood = self._table._flood()
        result: dict[int, set[str]] = {}
        for vni, vtep in flood:
            result.setdefault(vni, set()).add(vtep)
        return {vni: frozenset(vteps) for vni, vteps in result.items()}

    def advertisements(self) -> frozenset[LocalAdvertisement]:
        """Local MACs that win, with the sequence number to advertise."""
        with self._table._lock:
            return frozenset(self._table._advertisements().values())

    def moved_away(self) -> frozenset[MacKey]:
        """Local VMs whose MAC a remote VTEP holds with a higher number: the
        VM runs elsewhere now (or the inventory is stale); not advertised."""
        with self._table._lock:
            return frozenset(
                key
                for key in self._table._local
                if self._table._winner.get(key) is None or self._table._winner[key].source != LOCAL
            )

    def on_change(self, listener: Callable[[ViewChange], None]) -> None:
        self._table.on_change(listener)

    def held_routes(self) -> list[HeldRoute]:
        """Every remote route held (learned and static), each with its fate."""
        with self._table._lock:
            return self._table._held_routes()

    def learned_counts(self) -> Counter[str]:
        """Routes held per peer (type 2, 3 and 5), refused ones not included."""
        with self._table._lock:
            counts: Counter[str] = Counter(source for source, _ in self._table._type2)
            counts.update(source for source, _ in self._table._type3)
            counts.update(source for source, _ in self._table._type5)
        return counts
