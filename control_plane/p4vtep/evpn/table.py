"""Learned EVPN state and the MAC mobility rules (RFC 7432 sections 7.7, 15).

Inputs: remote routes accepted from peers (by peer), static remote VTEPs from
the fabric file, and the MACs of our own VMs (by ToR VTEP). Output, as an
``EvpnView``: which (VNI, MAC) lives behind which remote VTEP, which remote
VTEPs want each VNI's BUM traffic, and which local MACs we advertise with
which sequence number. Pure logic: no I/O, no threads of its own. What the
ToRs are given (``EvpnView.learned``) is kept up to date with each update's
change (``Published``), so an update costs what it touches, not what is held.

Per (VNI, MAC) every VTEP that claims the MAC is a candidate with a sequence
number (the highest among its routes for that MAC; absent = 0). The winner is
the candidate with the highest sequence number (a sticky claim beats a
non-sticky one, RFC 7432 15.2). Two VTEPs at the same highest number are a
conflict: the new claim is refused (counted and logged) and whatever was
installed stays. RFC 7432 15.1 would instead pick the lowest VTEP IP; we keep
the installed state because a tie means a duplicate MAC or a broken peer, and
moving traffic on that evidence is worse than staying put.

A local VM whose MAC is claimed remotely is advertised with seq = highest
remote + 1 (it moved to us); a remote claim above our number means the VM
moved away, and we stop advertising it.

Routed tenants (symmetric IRB): a type 2 route admitted for a VRF makes its
IP a host route of that VRF behind its VTEP. The host route belongs to the
MAC's claim, so it follows the MAC mobility winner: one winner per (VNI,
MAC), its MAC entry and its host routes given out together. A type 2 for an
L2 VNI this fabric does not host takes part in the mobility rules the same
way, but only its host routes are given out. Type 5 routes (IP prefixes of
a VRF) are held per peer; for each (VRF, prefix) the route from the lowest
VTEP IP is the one given out (our data plane has one next hop per prefix).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from ..compiler.learned import (
    Learned,
    LearnedHost,
    LearnedMac,
    LearnedPrefix,
)
from .published import Published
from .routes import EvpnRoute, InclusiveMulticastRoute, IpPrefixRoute, MacIpRoute
from .view import (
    LOCAL,
    EvpnView,
    HeldRoute,
    LocalAdvertisement,
    LocalMac,
    MacKey,
    PrefixKey,
    RemoteHost,
    RemoteMac,
    RemotePrefix,
    RoutedIp,
    ViewChange,
)

log = logging.getLogger(__name__)

STATIC = "static"  # the source name of fabric-file static VTEPs


CONFLICT = "conflict"
SUPERSEDED = "superseded"


class _Claim(NamedTuple):
    """A VTEP's claim on a (VNI, MAC). (A named tuple: one is made per
    route learned; compared only with other claims.)"""

    vtep: str
    seq: int
    sticky: bool
    ips: frozenset[str]
    source: str  # peer address, "static" or "local"
    bridged: bool = True
    routed: frozenset[RoutedIp] = frozenset()

    @property
    def rank(self) -> tuple[bool, int]:
        return (self.sticky, self.seq)


@dataclass(frozen=True)
class _Before:
    """The state of the keys an update touches, taken before it."""

    winners: dict[MacKey, _Claim | None]
    local_seq: dict[MacKey, int | None]
    flood: frozenset[tuple[int, str]] | None
    prefixes: dict[PrefixKey, RemotePrefix | None]


class Learn(NamedTuple):
    """A validated route from peer ``source`` (``LearnedTable.learn``). (A
    named tuple: one is made per route received.)"""

    source: str
    route: EvpnRoute
    vrf: str | None = None
    bridged: bool = True
    neighbour: bool = True


class Unlearn(NamedTuple):
    """Peer ``source`` withdrew the route with this NLRI key."""

    source: str
    nlri_key: tuple[object, ...]


class LearnedTable:
    """The table; ``view()`` is the read side the controller uses."""

    def __init__(self) -> None:
        # Accepted remote routes by (peer, NLRI key), and type 2 keys by (VNI, MAC).
        self._type2: dict[tuple[str, tuple[object, ...]], MacIpRoute] = {}
        # What each type 2 route is used for: (VRF of its host route, bridged,
        # its IP given to ARP/ND suppression with the MAC).
        self._use: dict[tuple[str, tuple[object, ...]], tuple[str | None, bool, bool]] = {}
        self._type3: dict[tuple[str, tuple[object, ...]], InclusiveMulticastRoute] = {}
        self._type5: dict[tuple[str, tuple[object, ...]], tuple[IpPrefixRoute, str]] = {}
        self._by_prefix: dict[PrefixKey, set[tuple[str, tuple[object, ...]]]] = {}
        self._by_mac: dict[MacKey, set[tuple[str, tuple[object, ...]]]] = {}
        self._static_macs: dict[MacKey, _Claim] = {}
        self._static_flood: set[tuple[int, str]] = set()
        self._local: dict[MacKey, LocalMac] = {}
        self._local_seq: dict[MacKey, int] = {}  # the number each local MAC carries
        self._winner: dict[MacKey, _Claim] = {}  # what is installed, per (VNI, MAC)
        self._published = Published()  # what the ToRs are given (``_diff`` keeps it)
        self.refused: Counter[str] = Counter()
        self._listeners: list[Callable[[ViewChange], None]] = []
        self._lock = threading.RLock()  # the speaker's thread and the controller's

    # ---- inputs -------------------------------------------------------------

    def learn(
        self,
        source: str,
        route: EvpnRoute,
        vrf: str | None = None,
        bridged: bool = True,
        neighbour: bool = True,
    ) -> ViewChange:
        """A validated route from peer ``source`` (a re-advertisement replaces
        the earlier version of the same NLRI). ``vrf``: the VRF the intake
        admitted it into (type 2: its host route; type 5: required);
        ``bridged``: a type 2's MAC is installed in its VNI (a VNI we host);
        ``neighbour``: with its IP, for ARP or ND suppression (False: a
        link-local or other never-routed IPv6 address, see intake.py)."""
        return self.update([Learn(source, route, vrf, bridged, neighbour)])

    def unlearn(self, source: str, nlri_key: tuple[object, ...]) -> ViewChange:
        """The peer withdrew the route with this NLRI; unknown keys are ignored."""
        return self.update([Unlearn(source, nlri_key)])

    def update(self, ops: Iterable[Learn | Unlearn]) -> ViewChange:
        """Routes learned and withdrawn, in order, as one update: the same
        table as ``learn`` and ``unlearn`` one by one (each route settles
        the mobility contest of its MAC in turn, so a conflict is refused
        as it would be alone, and a route withdrawn after it was learned in
        the same batch is gone), but one change for all of them, taken
        against the state before the first, and one notification. The
        speaker hands over what each of gobgpd's events carries this way."""
        ops = list(ops)
        if not ops:
            return ViewChange()
        with self._lock:
            change = self._new_macs(ops)
            if change is None:
                change = self._gone_macs(ops)
            if change is not None:
                self._notify(change)
                return change
            touched: set[MacKey] = set()
            touched5: set[PrefixKey] = set()
            flood = False
            for op in ops:  # what any of them may change, as it is now
                key = (op.source, op.route.nlri_key() if isinstance(op, Learn) else op.nlri_key)
                old = self._type2.get(key)
                if old is not None:
                    touched.add((old.vni, old.mac))
                old5 = self._type5.get(key)
                if old5 is not None:
                    touched5.add((old5[1], old5[0].prefix))
                flood = flood or key in self._type3
                if isinstance(op, Learn):
                    route = op.route
                    if isinstance(route, MacIpRoute):
                        touched.add((route.vni, route.mac))
                    elif isinstance(route, IpPrefixRoute):
                        if op.vrf is None:
                            raise ValueError(f"type 5 {route.prefix} learned without its VRF")
                        touched5.add((op.vrf, route.prefix))
                    else:
                        flood = True
            before = self._before(touched, flood, prefixes=touched5)
            for op in ops:
                if isinstance(op, Learn):
                    self._learn(op)
                else:
                    self._unlearn(op.source, op.nlri_key)
            change = self._diff(before)
        self._notify(change)
        return change

    def _new_macs(self, ops: list[Learn | Unlearn]) -> ViewChange | None:
        """An update of type 2 routes for MACs nobody else claims (no route,
        local VM or static MAC for their VNI and MAC, one route each): a
        peer's table as it comes. Each route's claim is its MAC's winner
        and the change adds them all, as the rules would settle it; done
        without their bookkeeping (the state before, the contest, the
        difference), which costs more than the route. None when any route
        is not such (the update takes the general path)."""
        fresh: dict[MacKey, tuple[tuple[str, tuple[object, ...]], Learn]] = {}
        by_mac, local, static, type2 = self._by_mac, self._local, self._static_macs, self._type2
        for op in ops:
            route = op.route if isinstance(op, Learn) else None
            if not isinstance(route, MacIpRoute):
                return None
            mac_key = (route.vni, route.mac)
            key = (op.source, route.nlri_key())
            if (
                mac_key in fresh
                or mac_key in by_mac
                or mac_key in local
                or mac_key in static
                or key in type2
            ):
                return None
            fresh[mac_key] = (key, op)  # type: ignore[assignment]
        added = []
        uses, winners = self._use, self._winner
        for mac_key, (key, op) in fresh.items():
            route = op.route
            assert isinstance(route, MacIpRoute)
            use = op[2:]  # (vrf, bridged, neighbour)
            type2[key] = route
            uses[key] = use
            by_mac[mac_key] = {key}
            claim = _claim(route, op.source, use)
            winners[mac_key] = claim
            added.append(_remote(mac_key, claim))
        change = ViewChange(frozenset(added))
        self._published.apply(change, None)
        return change

    def _gone_macs(self, ops: list[Learn | Unlearn]) -> ViewChange | None:
        """An update withdrawing, for each MAC it names, every route that
        claims it, where no local VM or static MAC claims it either (a peer
        withdrawing routes it alone held, ``_new_macs``'s reverse): each
        MAC's winner leaves with its routes, as the rules would settle it,
        without their bookkeeping. Keys held by no route are ignored, as
        ``unlearn`` ignores them. None when the update holds anything else
        (it takes the general path)."""
        gone: dict[MacKey, set[tuple[str, tuple[object, ...]]]] = {}
        type2 = self._type2
        for op in ops:
            if isinstance(op, Learn):
                return None
            key = (op.source, op.nlri_key)
            if key in self._type5 or key in self._type3:
                return None
            route = type2.get(key)
            if route is not None:
                gone.setdefault((route.vni, route.mac), set()).add(key)
        return self._drop_macs(gone)

    def _drop_macs(
        self, gone: dict[MacKey, set[tuple[str, tuple[object, ...]]]]
    ) -> ViewChange | None:
        """Every type 2 route of each MAC given (its keys: all of the MAC's
        routes), its winner removed; None, changing nothing, when a MAC has
        other claims (a route not given, a local VM, a static MAC)."""
        by_mac, local, static = self._by_mac, self._local, self._static_macs
        for mac_key, keys in gone.items():
            if mac_key in local or mac_key in static or by_mac.get(mac_key) != keys:
                return None
        removed = []
        for mac_key, keys in gone.items():
            for key in keys:
                del self._type2[key]
                self._use.pop(key, None)
            del by_mac[mac_key]
            claim = self._winner.pop(mac_key, None)
            if claim is not None:
                removed.append(_remote(mac_key, claim))
        change = ViewChange(remote_removed=frozenset(removed))
        self._published.apply(change, None)
        return change

    def _learn(self, op: Learn) -> None:
        source, route = op.source, op.route
        key = (source, route.nlri_key())
        if isinstance(route, MacIpRoute):
            old = self._type2.get(key)
            touched = {(route.vni, route.mac)}
            if old is not None:
                touched.add((old.vni, old.mac))
                self._unindex(key, old)
            self._type2[key] = route
            self._use[key] = (op.vrf, op.bridged, op.neighbour)
            self._by_mac.setdefault((route.vni, route.mac), set()).add(key)
            self._settle(touched, newcomer=(source, route))
        elif isinstance(route, IpPrefixRoute):
            assert op.vrf is not None  # (update checked)
            old5 = self._type5.get(key)
            if old5 is not None:
                self._unindex_prefix(key, old5)
            self._type5[key] = (route, op.vrf)
            self._by_prefix.setdefault((op.vrf, route.prefix), set()).add(key)
        else:
            self._type3[key] = route

    def _unlearn(self, source: str, nlri_key: tuple[object, ...]) -> None:
        key = (source, nlri_key)
        old = self._type2.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            self._settle({(old.vni, old.mac)})
        old5 = self._type5.pop(key, None)
        if old5 is not None:
            self._unindex_prefix(key, old5)
        self._type3.pop(key, None)

    def drop_source(self, source: str) -> ViewChange:
        """Session to ``source`` went down (hold timer expired or closed):
        every route it gave us is withdrawn."""
        with self._lock:
            gone2 = [k for k in self._type2 if k[0] == source]
            gone3 = [k for k in self._type3 if k[0] == source]
            gone5 = [k for k in self._type5 if k[0] == source]
            # The MACs this peer alone claimed go in bulk (``_drop_macs``);
            # the rest (another claim stays) through the rules.
            macs: dict[MacKey, set[tuple[str, tuple[object, ...]]]] = {}
            for k in gone2:
                r = self._type2[k]
                macs.setdefault((r.vni, r.mac), set()).add(k)
            alone = {
                m: keys
                for m, keys in macs.items()
                if m not in self._local
                and m not in self._static_macs
                and self._by_mac.get(m) == keys
            }
            bulk = self._drop_macs(alone) if alone else None
            if bulk is None:
                alone = {}
            gone2 = [k for m, keys in macs.items() if m not in alone for k in keys]
            touched = {(self._type2[k].vni, self._type2[k].mac) for k in gone2}
            touched5 = {(self._type5[k][1], self._type5[k][0].prefix) for k in gone5}
            before = self._before(touched, flood=bool(gone3), prefixes=touched5)
            for key in gone2:
                self._unindex(key, self._type2.pop(key))
            for key in gone3:
                del self._type3[key]
            for key in gone5:
                self._unindex_prefix(key, self._type5.pop(key))
            self._settle(touched)
            change = self._diff(before)
            if bulk is not None:
                change = ViewChange(
                    **{
                        f.name: getattr(change, f.name) | getattr(bulk, f.name)
                        for f in dataclasses.fields(ViewChange)
                    }
                )
        self._notify(change)
        return change

    def set_static(
        self,
        flood: Iterable[tuple[int, str]],
        macs: Iterable[tuple[int, str, str, Iterable[str]]],
    ) -> ViewChange:
        """Static remote VTEPs of the fabric file: (VNI, VTEP) flood members and
        (VNI, MAC, VTEP, IPs) MACs. Static MACs are sticky: the operator said so."""
        with self._lock:
            new = {
                (vni, mac): _Claim(vtep, 0, True, frozenset(ips), STATIC)
                for vni, mac, vtep, ips in macs
            }
            touched = set(self._static_macs) | set(new)
            before = self._before(touched, flood=True)
            self._static_flood = set(flood)
            self._static_macs = new
            self._settle(touched)
            change = self._diff(before)
        self._notify(change)
        return change

    def set_local(self, macs: Iterable[LocalMac]) -> ViewChange:
        """The full set of our VMs' MACs (the desired state's, after a compile)."""
        with self._lock:
            new = {(m.vni, m.mac): m for m in macs}
            touched = {k for k in set(self._local) | set(new) if self._local.get(k) != new.get(k)}
            before = self._before(touched, flood=False)
            for key in touched:
                mac = new.get(key)
                old = self._local.get(key)
                if mac is None:
                    self._local_seq.pop(key, None)
                elif old is None:
                    # A MAC that appears here: RFC 7432 15, one more than any
                    # number a remote VTEP holds for it.
                    remote = [c.seq for c in self._remote_claims(key).values()]
                    self._local_seq[key] = max(remote) + 1 if remote else 0
                elif old.vtep != mac.vtep:
                    # Moved between two of our ToRs: a new number so remote
                    # VTEPs prefer the new route even before the old is withdrawn.
                    self._local_seq[key] = self._local_seq.get(key, 0) + 1
            self._local = new
            self._settle(touched)
            change = self._diff(before)
        self._notify(change)
        return change

    def on_change(self, listener: Callable[[ViewChange], None]) -> None:
        self._listeners.append(listener)

    def view(self) -> EvpnView:
        return EvpnView(self)

    def _unindex(self, key: tuple[str, tuple[object, ...]], route: MacIpRoute) -> None:
        self._use.pop(key, None)
        keys = self._by_mac.get((route.vni, route.mac))
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_mac[route.vni, route.mac]

    def _unindex_prefix(
        self, key: tuple[str, tuple[object, ...]], held: tuple[IpPrefixRoute, str]
    ) -> None:
        route, vrf = held
        keys = self._by_prefix.get((vrf, route.prefix))
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_prefix[vrf, route.prefix]

    # ---- the rules ----------------------------------------------------------

    def _remote_claims(self, key: MacKey) -> dict[str, _Claim]:
        """One claim per remote VTEP: its highest number, the union of its IPs
        (of the routes bridged into the VNI) and of its host routes."""
        claims: dict[str, _Claim] = {}
        keys = self._by_mac.get(key, ())
        for route_key in sorted(keys, key=repr) if len(keys) > 1 else keys:
            route = self._type2[route_key]
            claim = _claim(route, route_key[0], self._use.get(route_key, (None, True, True)))
            old = claims.get(route.next_hop)
            if old is None:
                claims[route.next_hop] = claim
            else:
                claims[route.next_hop] = _Claim(
                    route.next_hop,
                    max(old.seq, claim.seq),
                    old.sticky or claim.sticky,
                    old.ips | claim.ips,
                    old.source,
                    old.bridged or claim.bridged,
                    old.routed | claim.routed,
                )
        static = self._static_macs.get(key)
        if static is not None and static.vtep not in claims:
            claims[static.vtep] = static
        return claims

    def _settle(
        self,
        keys: Iterable[MacKey],
        newcomer: tuple[str, MacIpRoute] | None = None,
    ) -> None:
        for key in keys:
            claims = list(self._remote_claims(key).values())
            local = self._local.get(key)
            if local is not None:
                claims.append(
                    _Claim(local.vtep, self._local_seq.get(key, 0), False, local.ips, LOCAL)
                )
            current = self._winner.get(key)
            if not claims:
                self._winner.pop(key, None)
                continue
            top = max(c.rank for c in claims)
            leaders = [c for c in claims if c.rank == top]
            if len(leaders) == 1:
                self._winner[key] = leaders[0]
                continue
            # Two VTEPs, one number: keep what is installed (refreshed, if it
            # is one of the leaders), refuse the rest.
            kept = next(
                (c for c in leaders if current is not None and c.vtep == current.vtep), None
            )
            if kept is not None:
                self._winner[key] = kept
            elif current is not None and any(c.vtep == current.vtep for c in claims):
                # The installed claim stands, though outranked by the tie.
                self._winner[key] = next(c for c in claims if c.vtep == current.vtep)
            else:
                self._winner.pop(key, None)
            if newcomer is not None:
                source, route = newcomer
                contested = route.next_hop in {c.vtep for c in leaders}
                if (
                    (route.vni, route.mac) == key
                    and contested
                    and (kept is None or kept.vtep != route.next_hop)
                ):
                    self.refused["conflict"] += 1
                    log.warning(
                        "EVPN: refused %s in VNI %d from %s (VTEP %s, seq %d): "
                        "same sequence number as VTEP(s) %s",
                        route.mac,
                        route.vni,
                        source,
                        route.next_hop,
                        route.mobility_seq,
                        ", ".join(sorted(c.vtep for c in leaders if c.vtep != route.next_hop)),
                    )

    # ---- read side ----------------------------------------------------------

    def _before(
        self, touched: set[MacKey], flood: bool, prefixes: Iterable[PrefixKey] = ()
    ) -> _Before:
        return _Before(
            {k: self._winner.get(k) for k in touched},
            {k: self._local_seq.get(k) for k in touched},
            self._flood() if flood else None,
            {k: self._prefix_winner(k) for k in prefixes},
        )

    def _prefix_winner(self, key: PrefixKey) -> RemotePrefix | None:
        """The route given out for a (VRF, prefix): the lowest VTEP IP's (then
        the lowest peer's, when two peers pass on the same VTEP's route)."""
        best: tuple[tuple[int, str], RemotePrefix] | None = None
        for route_key in self._by_prefix.get(key, ()):
            route, vrf = self._type5[route_key]
            assert route.router_mac is not None  # (the intake refuses a route without)
            candidate = RemotePrefix(
                vrf, route.prefix, route.next_hop, route.router_mac, route.l3vni, route_key[0]
            )
            rank = (int(ipaddress.IPv4Address(route.next_hop)), route_key[0])
            if best is None or rank < best[0]:
                best = (rank, candidate)
        return best[1] if best is not None else None

    def _diff(self, before: _Before) -> ViewChange:
        added: set[RemoteMac] = set()
        removed: set[RemoteMac] = set()
        local: set[MacKey] = set()
        for key, old in before.winners.items():
            new = self._winner.get(key)
            if old == new and before.local_seq[key] == self._local_seq.get(key):
                continue
            for claim, bucket in ((old, removed), (new, added)):
                if claim is None:
                    continue
                if claim.source == LOCAL:
                    local.add(key)
                else:
                    bucket.add(_remote(key, claim))
        flood_added: frozenset[tuple[int, str]] = frozenset()
        flood_removed: frozenset[tuple[int, str]] = frozenset()
        flood: frozenset[tuple[int, str]] | None = None
        if before.flood is not None:
            flood = self._flood()
            flood_added, flood_removed = flood - before.flood, before.flood - flood
        common = added & removed
        prefixes_added: set[RemotePrefix] = set()
        prefixes_removed: set[RemotePrefix] = set()
        for pkey, was in before.prefixes.items():
            now = self._prefix_winner(pkey)
            if was != now:
                if was is not None:
                    prefixes_removed.add(was)
                if now is not None:
                    prefixes_added.add(now)
        change = ViewChange(
            frozenset(added - common),
            frozenset(removed - common),
            flood_added,
            flood_removed,
            frozenset(local),
            frozenset(prefixes_added),
            frozenset(prefixes_removed),
        )
        self._published.apply(change, flood)
        return change

    def _remote_winners(self) -> list[RemoteMac]:
        return [_remote(key, c) for key, c in self._winner.items() if c.source != LOCAL]

    def _remote_macs(self) -> frozenset[RemoteMac]:
        return frozenset(m for m in self._remote_winners() if m.bridged)

    def _host_routes(self) -> frozenset[RemoteHost]:
        return frozenset(
            RemoteHost(vrf, ip, m.vtep, rmac, vni, m.vni, m.mac, m.seq, m.source)
            for m in self._remote_winners()
            for vrf, ip, rmac, vni in m.routes
        )

    def _prefix_routes(self) -> frozenset[RemotePrefix]:
        winners = (self._prefix_winner(key) for key in self._by_prefix)
        return frozenset(w for w in winners if w is not None)

    def _flood(self) -> frozenset[tuple[int, str]]:
        learned = {(r.vni, r.vtep) for r in self._type3.values()}
        return frozenset(learned | self._static_flood)

    def _advertisements(self) -> dict[MacKey, LocalAdvertisement]:
        return {
            key: LocalAdvertisement(key[0], key[1], c.vtep, c.ips, c.seq)
            for key, c in self._winner.items()
            if c.source == LOCAL
        }

    def _held_routes(self) -> list[HeldRoute]:
        held = []
        for route_key, r2 in self._type2.items():
            source = route_key[0]
            key = (r2.vni, r2.mac)
            ips = frozenset([r2.ip]) if r2.ip else frozenset()
            vrf, _, _ = self._use.get(route_key, (None, True, True))
            held.append(
                HeldRoute(
                    source,
                    2,
                    r2.vni,
                    r2.next_hop,
                    r2.mac,
                    ips,
                    r2.mobility_seq,
                    r2.rd,
                    self._lost(key, r2.next_hop),
                    vrf or "",
                    r2.l3vni or 0,
                    r2.router_mac or "",
                )
            )
        for (source, _), r3 in self._type3.items():
            held.append(HeldRoute(source, 3, r3.vni, r3.vtep, rd=r3.rd))
        for (source, _), (r5, vrf) in self._type5.items():
            winner = self._prefix_winner((vrf, r5.prefix))
            held.append(
                HeldRoute(
                    source,
                    5,
                    r5.l3vni,
                    r5.next_hop,
                    ips=frozenset([r5.prefix]),
                    rd=r5.rd,
                    lost="" if winner is not None and winner.vtep == r5.next_hop else SUPERSEDED,
                    vrf=vrf,
                    l3vni=r5.l3vni,
                    router_mac=r5.router_mac or "",
                )
            )
        for key, claim in self._static_macs.items():
            held.append(
                HeldRoute(
                    STATIC,
                    2,
                    key[0],
                    claim.vtep,
                    key[1],
                    claim.ips,
                    lost=self._lost(key, claim.vtep),
                )
            )
        for vni, vtep in self._static_flood:
            held.append(HeldRoute(STATIC, 3, vni, vtep))
        return held

    def _lost(self, key: MacKey, vtep: str) -> str:
        """Why the claim of ``vtep`` on ``key`` is not the installed one ("" if it is)."""
        winner = self._winner.get(key)
        if winner is not None and winner.vtep == vtep:
            return ""
        claims = self._remote_claims(key)
        local = self._local.get(key)
        ranks = [c.rank for v, c in claims.items() if v != vtep]
        if local is not None and local.vtep != vtep:
            ranks.append((False, self._local_seq.get(key, 0)))
        mine = claims[vtep].rank if vtep in claims else (False, 0)
        return CONFLICT if ranks and max(ranks) <= mine else SUPERSEDED

    def _learned(self) -> Learned:
        return self._published.learned()

    def _learned_from_scratch(self) -> Learned:
        """``_learned`` rebuilt from every winner held (what the kept value
        must equal: the tests compare the two)."""
        macs = [LearnedMac(m.vni, m.mac, m.vtep, tuple(sorted(m.ips))) for m in self._remote_macs()]
        flood: dict[int, set[str]] = {}
        for vni, vtep in self._flood():
            flood.setdefault(vni, set()).add(vtep)
        hosts = [
            LearnedHost(h.vrf, h.ip, h.vtep, h.router_mac, h.vni, h.l2vni, h.mac)
            for h in self._host_routes()
        ]
        prefixes = [
            LearnedPrefix(p.vrf, p.prefix, p.vtep, p.router_mac, p.l3vni)
            for p in self._prefix_routes()
        ]
        return Learned.of(macs, flood, hosts, prefixes)

    def _notify(self, change: ViewChange) -> None:
        if not change:
            return
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # a listener's bug must not stop route intake
                log.exception("EVPN: change listener failed")


def _claim(route: MacIpRoute, source: str, use: tuple[str | None, bool, bool]) -> _Claim:
    """One type 2 route's claim on its MAC; ``use``: (the VRF of its host
    route, bridged, its IP given to ARP/ND suppression)."""
    vrf, bridged, neighbour = use
    ips = frozenset([route.ip]) if route.ip and bridged and neighbour else frozenset()
    routed: frozenset[RoutedIp] = frozenset()
    if vrf is not None and route.ip is not None:
        if route.l3vni is not None and route.router_mac is not None:
            routed = frozenset([(vrf, route.ip, route.router_mac, route.l3vni)])
        else:  # asymmetric: to the host itself, in its own VNI
            routed = frozenset([(vrf, route.ip, route.mac, route.vni)])
    return _Claim(route.next_hop, route.mobility_seq, route.sticky, ips, source, bridged, routed)


def _remote(key: MacKey, claim: _Claim) -> RemoteMac:
    """The claim as a ``RemoteMac``, equal to one built the usual way, its
    fields set at once (one is made per route learned and withdrawn: the
    frozen constructor's field-by-field assignment cost more than the rest)."""
    remote = object.__new__(RemoteMac)
    remote.__dict__.update(
        vni=key[0],
        mac=key[1],
        vtep=claim.vtep,
        ips=claim.ips,
        seq=claim.seq,
        source=claim.source,
        bridged=claim.bridged,
        routes=claim.routed,
    )
    return remote
