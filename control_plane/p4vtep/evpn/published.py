"""The ``Learned`` value the ToRs are given, kept up to date change by change
(``Published``) for ``table.LearnedTable``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Set
from typing import Any, TypeVar

from ..compiler.learned import (
    NOTHING,
    Learned,
    LearnedDelta,
    LearnedHost,
    LearnedMac,
    LearnedPrefix,
    host_rank,
)
from .view import RemoteMac, RemotePrefix, ViewChange

_K = TypeVar("_K")
_G = TypeVar("_G")
_V = TypeVar("_V")
_T = TypeVar("_T")
_S = TypeVar("_S")

# An overlay grows to this many keys, or an eighth of its base, before it
# is folded into a new base (a copy of the whole set).
OVERLAY_MIN = 1024


class Overlay(Set[_T]):
    """A frozen set given as a frozen ``base`` shared with earlier values,
    the keys ``added`` since and those ``removed`` from it: a value of its
    own for what a change or two changed, made without copying what it did
    not (``Published``: the taken MACs of 100,000 routes are not copied for
    each route). ``added`` is disjoint from ``base``; ``removed`` is part
    of it."""

    __slots__ = ("_added", "_base", "_removed")

    def __init__(self, base: frozenset[_T], added: frozenset[_T], removed: frozenset[_T]) -> None:
        self._base, self._added, self._removed = base, added, removed

    def __contains__(self, key: object) -> bool:
        return key in self._added or (key in self._base and key not in self._removed)

    def __iter__(self) -> Iterator[_T]:
        yield from self._added
        removed = self._removed
        for key in self._base:
            if key not in removed:
                yield key

    def __len__(self) -> int:
        return len(self._base) - len(self._removed) + len(self._added)

    def __hash__(self) -> int:
        return self._hash()

    @classmethod
    def _from_iterable(cls, keys: Iterable[_S]) -> frozenset[_S]:  # (Set's operators)
        return frozenset(keys)

    def changed(self, present: set[_T], absent: set[_T]) -> Overlay[_T]:
        """This set with ``present`` in it and ``absent`` out of it."""
        # (each part copied once, and only when it changes: a commit of a
        # burst's new MACs adds to ``added`` alone)
        base, added, removed = self._base, self._added, self._removed
        new = [k for k in present if k not in base]
        if new:
            added = added.union(new)
        if absent and added:
            added = added.difference(absent)
        gone = [k for k in absent if k in base]
        if gone:
            removed = removed.union(gone)
        if present and removed:
            removed = removed.difference(present)
        return Overlay(base, added, removed)

    @property
    def overlay(self) -> int:
        return len(self._added) + len(self._removed)

    @property
    def base(self) -> frozenset[_T]:
        return self._base


class OverlayMap(Mapping[str, _V]):
    """A frozen mapping given as a ``base`` dict shared with earlier values
    (never changed), the entries ``added`` or changed since, and the keys
    ``removed`` from the base: what ``Overlay`` is for a set, for the host
    routes of a VRF (a lone route added to 100,000 does not copy them)."""

    __slots__ = ("_added", "_base", "_extra", "_removed")

    def __init__(
        self,
        base: dict[str, _V],
        added: dict[str, _V],
        removed: frozenset[str],
        extra: int | None = None,
    ) -> None:
        """``extra``: how many keys of ``added`` the base lacks (counted if not given)."""
        self._base, self._added, self._removed = base, added, removed
        self._extra = sum(1 for k in added if k not in base) if extra is None else extra

    def __getitem__(self, key: str) -> _V:
        if key in self._added:
            return self._added[key]
        if key in self._removed:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._added or (key in self._base and key not in self._removed)

    def get(self, key: str, default: Any = None) -> Any:  # (without KeyError for a miss)
        if key in self._added:
            return self._added[key]
        if key in self._removed:
            return default
        return self._base.get(key, default)

    def __iter__(self) -> Iterator[str]:
        removed = self._removed
        for key in self._base:
            if key not in removed:
                yield key
        base = self._base
        for key in self._added:
            if key not in base:
                yield key

    def __len__(self) -> int:
        return len(self._base) - len(self._removed) + self._extra

    @property
    def overlay(self) -> int:
        return len(self._added) + len(self._removed)

    def changed(self, live: Mapping[str, _V], keys: Iterable[str]) -> OverlayMap[_V]:
        """This mapping with ``keys`` as ``live`` has them (absent there: removed)."""
        base = self._base
        added, extra = dict(self._added), self._extra
        gone: list[str] = []  # keys of the base now absent, and present again
        back: list[str] = []
        for key in keys:
            value = live.get(key)
            new = key not in base
            if value is None:
                if added.pop(key, None) is not None and new:
                    extra -= 1
                if not new:
                    gone.append(key)
            else:
                if new and key not in added:
                    extra += 1
                added[key] = value
                if not new:
                    back.append(key)
        removed = self._removed  # (copied only when it changes: rarely in a burst)
        if gone:
            removed = removed.union(gone)
        if back and removed:
            removed = removed.difference(back)
        return OverlayMap(base, added, removed, extra)


def _hosts_refreshed(
    given: Mapping[str, Mapping[str, _V]],
    live: dict[str, dict[str, _V]],
    stale: dict[str, set[str]],
) -> Mapping[str, Mapping[str, _V]]:
    """``given`` (the hosts of a value given out) with the IPs changed since
    (``stale``, by VRF) taken from ``live``: a VRF's hosts as an
    ``OverlayMap`` on those given before, or a copy of the live ones once the
    overlay would be large (or the VRF was new or emptied)."""
    if not stale:
        return given
    out = dict(given)
    for vrf, ips in stale.items():
        current = live.get(vrf)
        if not current:
            out.pop(vrf, None)
            continue
        before = given.get(vrf)
        if isinstance(before, OverlayMap):
            value = before.changed(current, ips)
        elif isinstance(before, dict):
            value = OverlayMap(before, {}, frozenset()).changed(current, ips)
        else:
            out[vrf] = dict(current)
            continue
        out[vrf] = dict(current) if value.overlay > max(OVERLAY_MIN, len(current) // 8) else value
    return out


def updated(given: Set[_T], live: Mapping[_T, object], stale: set[_T]) -> Set[_T]:
    """``given`` (a set given out) brought to ``live``'s keys, the ``stale``
    ones changed since: an ``Overlay`` on the same base, or a new frozenset
    once the overlay would be large (then copied whole)."""
    current = (
        given if isinstance(given, Overlay) else Overlay(frozenset(given), frozenset(), frozenset())
    )
    present = {k for k in stale if k in live}
    value = current.changed(present, stale - present)
    if value.overlay > max(OVERLAY_MIN, len(value.base) // 8):
        return frozenset(live)
    return value


class Published:
    """The ``Learned`` value the ToRs are given, kept up to date change by
    change (``apply``, with what each update changed) rather than rebuilt
    from every route held: a change touches only the VNIs, VRFs and IPs it
    names. ``learned()`` gives out a value of its own, equal to what
    ``Learned.of`` builds from the whole view: unchanged VNIs and VRFs share
    their (never mutated) mappings with the value given out before, the ones
    changed since are copied, and the value tells the compiler what
    differs from the one before (``Learned.since``)."""

    def __init__(self) -> None:
        self.macs: dict[int, dict[str, LearnedMac]] = {}
        self.flood: dict[int, frozenset[str]] = {}
        # Every host route of a remote winner, by (VRF, IP); the lowest is given out.
        self.claims: dict[tuple[str, str], set[LearnedHost]] = {}
        self.hosts: dict[str, dict[str, LearnedHost]] = {}
        self.prefixes: dict[str, dict[str, LearnedPrefix]] = {}
        # How many MACs and host routes given out name each (VNI, MAC), and
        # each VTEP (with the prefixes'): ``Learned.taken`` and ``vteps()``.
        self.taken: Counter[tuple[int, str]] = Counter()
        self.vteps: Counter[str] = Counter()
        # What changed since the value last given out (its ``LearnedDelta``).
        self._stale_macs: set[int] = set()
        self._stale_hosts: dict[str, set[str]] = {}  # VRF -> IPs
        self._stale_prefixes: set[str] = set()
        self._stale_flood: set[int] = set()
        self._stale_taken: set[tuple[int, str]] = set()
        self._stale_vteps = False
        self._value = NOTHING  # (what the compiler starts from: the first delta is from it)

    def apply(self, change: ViewChange, flood: frozenset[tuple[int, str]] | None) -> None:
        """What one update changed. ``flood``: every (VNI, VTEP) flood
        member, when the update may have changed them."""
        for remote in change.remote_removed:
            self._remote(remote, -1)
        for remote in change.remote_added:
            self._remote(remote, +1)
        for prefix in change.prefixes_removed:
            self._prefix(prefix, -1)
        for prefix in change.prefixes_added:
            self._prefix(prefix, +1)
        if flood is not None and (change.flood_added or change.flood_removed):
            by_vni: dict[int, set[str]] = {}
            for vni, vtep in flood:
                by_vni.setdefault(vni, set()).add(vtep)
            self.flood = {vni: frozenset(vteps) for vni, vteps in by_vni.items()}
            self._stale_flood.update(vni for vni, _ in change.flood_added | change.flood_removed)
            self._stale_vteps = True

    def _count(self, counter: Counter[_K], key: _K, sign: int) -> bool:
        """Whether ``key`` came or went (its count left or reached 0)."""
        counter[key] += sign
        if counter[key] <= 0:
            del counter[key]
            return True
        return sign > 0 and counter[key] == 1

    def _take(self, key: tuple[int, str], sign: int) -> None:
        if self._count(self.taken, key, sign):
            self._stale_taken.add(key)

    def _vtep(self, vtep: str, sign: int) -> None:
        if self._count(self.vteps, vtep, sign):
            self._stale_vteps = True

    def _came(self, key: tuple[int, str], vtep: str) -> None:
        """``_take(key, +1)`` and ``_vtep(vtep, +1)`` (a host route given out,
        once per route learned: the counters inline)."""
        taken, vteps = self.taken, self.vteps
        count = taken.get(key, 0) + 1
        taken[key] = count
        if count == 1:
            self._stale_taken.add(key)
        count = vteps.get(vtep, 0) + 1
        vteps[vtep] = count
        if count == 1:
            self._stale_vteps = True

    def _went(self, key: tuple[int, str], vtep: str) -> None:
        """``_take(key, -1)`` and ``_vtep(vtep, -1)``, inline."""
        taken, vteps = self.taken, self.vteps
        count = taken.get(key, 0) - 1
        if count <= 0:
            taken.pop(key, None)
            self._stale_taken.add(key)
        else:
            taken[key] = count
        count = vteps.get(vtep, 0) - 1
        if count <= 0:
            vteps.pop(vtep, None)
            self._stale_vteps = True
        else:
            vteps[vtep] = count

    def _remote(self, remote: RemoteMac, sign: int) -> None:
        if remote.bridged:
            key = (remote.vni, remote.mac)
            if sign > 0:
                mac = LearnedMac(remote.vni, remote.mac, remote.vtep, tuple(sorted(remote.ips)))
                self.macs.setdefault(remote.vni, {})[remote.mac] = mac
            else:
                macs = self.macs[remote.vni]
                del macs[remote.mac]
                if not macs:
                    del self.macs[remote.vni]
            self._stale_macs.add(remote.vni)
            self._take(key, sign)
            self._vtep(remote.vtep, sign)
        for vrf, ip, router_mac, vni in remote.routes:
            host = _host(vrf, ip, remote.vtep, router_mac, vni, remote.vni, remote.mac)
            claims = self.claims.get((vrf, ip))
            if claims is None and sign > 0:
                # The IP's first claim (a peer's new host, the common case):
                # given out as it is, what ``_choose`` would settle.
                self.claims[vrf, ip] = {host}
                hosts = self.hosts.get(vrf)
                if hosts is None:
                    hosts = self.hosts[vrf] = {}
                if ip not in hosts:
                    hosts[ip] = host
                    self._came((remote.vni, remote.mac), remote.vtep)
                    stale = self._stale_hosts.get(vrf)
                    if stale is None:
                        stale = self._stale_hosts[vrf] = set()
                    stale.add(ip)
                    continue
                self._choose(vrf, ip)
                continue
            if sign < 0 and claims is not None and len(claims) == 1 and host in claims:
                # The IP's last claim goes (a peer's withdrawal, the common
                # case): so does its host route, if it was the one given out.
                del self.claims[vrf, ip]
                hosts = self.hosts.get(vrf)
                if hosts is not None and hosts.get(ip) == host:
                    del hosts[ip]
                    if not hosts:
                        del self.hosts[vrf]
                    self._went((remote.vni, remote.mac), remote.vtep)
                    self._stale_hosts.setdefault(vrf, set()).add(ip)
                    continue
                self.claims[vrf, ip] = set()
                self._choose(vrf, ip)
                continue
            if claims is None:
                claims = self.claims[vrf, ip] = set()
            if sign > 0:
                claims.add(host)
            else:
                claims.discard(host)
            self._choose(vrf, ip)

    def _choose(self, vrf: str, ip: str) -> None:
        """The host route given out for (VRF, IP): the lowest claim's."""
        claims = self.claims[vrf, ip]
        best: LearnedHost | None
        if len(claims) == 1:
            (best,) = claims  # (one claim, the common case: no ranking)
        else:
            best = min(claims, key=host_rank) if claims else None
        if not claims:
            del self.claims[vrf, ip]
        hosts = self.hosts.get(vrf)
        was = hosts.get(ip) if hosts is not None else None
        if was == best:
            return
        if was is not None:
            assert hosts is not None
            del hosts[ip]
            if not hosts:
                del self.hosts[vrf]
            self._take((was.l2vni, was.mac), -1)
            self._vtep(was.vtep, -1)
        if best is not None:
            self.hosts.setdefault(vrf, {})[ip] = best
            self._take((best.l2vni, best.mac), +1)
            self._vtep(best.vtep, +1)
        self._stale_hosts.setdefault(vrf, set()).add(ip)

    def _prefix(self, remote: RemotePrefix, sign: int) -> None:
        prefix = LearnedPrefix(
            remote.vrf, remote.prefix, remote.vtep, remote.router_mac, remote.l3vni
        )
        if sign > 0:
            self.prefixes.setdefault(remote.vrf, {})[remote.prefix] = prefix
        else:
            prefixes = self.prefixes[remote.vrf]
            del prefixes[remote.prefix]
            if not prefixes:
                del self.prefixes[remote.vrf]
        self._stale_prefixes.add(remote.vrf)
        self._vtep(remote.vtep, sign)

    def learned(self) -> Learned:
        before = self._value
        if not (
            self._stale_macs
            or self._stale_hosts
            or self._stale_prefixes
            or self._stale_flood
            or self._stale_taken
            or self._stale_vteps
        ):
            return before
        flood = dict(self.flood) if self._stale_flood else before.flood
        delta = LearnedDelta(
            frozenset(self._stale_macs),
            {vrf: frozenset(ips) for vrf, ips in self._stale_hosts.items()},
            frozenset(self._stale_prefixes),
            frozenset(self._stale_flood),
            frozenset(self._stale_taken),
        )
        value = Learned.assembled(
            _refreshed(before.macs, self.macs, self._stale_macs),
            flood,
            _hosts_refreshed(before.hosts, self.hosts, self._stale_hosts),
            _refreshed(before.prefixes, self.prefixes, self._stale_prefixes),
            updated(before.taken, self.taken, self._stale_taken)
            if self._stale_taken
            else before.taken,
            (frozenset(self.vteps).union(*flood.values()) if self._stale_vteps else before.vteps()),
            parent=before,
            delta=delta,
        )
        self._stale_macs, self._stale_hosts, self._stale_prefixes = set(), {}, set()
        self._stale_flood, self._stale_taken, self._stale_vteps = set(), set(), False
        self._value = value
        return value


def _host(
    vrf: str, ip: str, vtep: str, router_mac: str, vni: int, l2vni: int, mac: str
) -> LearnedHost:
    """``LearnedHost(...)``, equal to one built the usual way, its fields set
    at once (one is made per host route learned and withdrawn: the frozen
    constructor's field-by-field assignment costs more than the rest)."""
    host = object.__new__(LearnedHost)
    host.__dict__.update(
        vrf=vrf, ip=ip, vtep=vtep, router_mac=router_mac, vni=vni, l2vni=l2vni, mac=mac
    )
    return host


def _refreshed(
    given: Mapping[_G, Mapping[str, _V]], live: dict[_G, dict[str, _V]], stale: set[_G]
) -> Mapping[_G, Mapping[str, _V]]:
    """``given`` (a value given out) with the groups changed since copied
    from ``live``; the others are shared."""
    if not stale:
        return given
    out = dict(given)
    for group in stale:
        current = live.get(group)
        if current:
            out[group] = dict(current)
        else:
            out.pop(group, None)
    return out
