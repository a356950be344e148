"""The CPU path's service: answers the frames the data plane punts and
sends the gateway's periodic router advertisements.

Fed ``PuntedFrame``s (``handle``) and clock ticks (``tick``), it looks the
sender up in the desired state (``update`` hands it each new view), decides
by punt class, and sends ``Emit``s through ``send``:

- to a VM on this ToR (the frame came tagged from its VF): PORT mode out of
  the port it came in, tagged with its VF VLAN, from the anycast gateway MAC
  to the sender's MAC;
- to a sender behind another VTEP (VLAN 0, the VNI a VRF's L3 VNI): ROUTE
  mode in that VRF, which the data plane routes like a VM's frame.

Only for a ToR where ``may_send`` says this controller is primary (and,
with replicas, the leader): a backup builds and sends nothing. Every punt
is counted per ToR, class and outcome (``punt_counts``), every frame sent
per ToR and kind (``sent_counts``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from random import Random
from typing import Protocol

from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from ..model.addressing import link_local
from ..model.cpu_path_checks import advertises, ipv6_subnets
from ..model.fabric import TENANT_MTU, Fabric, PuntClass, Vm, punt_class_key
from .echo import EchoResponder
from .frames import Emit, EmitMode, Ignored, PuntedFrame
from .icmp_errors import (
    ORIGINATED_TTL,
    PACKET_TOO_BIG,
    TIME_EXCEEDED,
    UNREACHABLE,
    icmp_error,
    refusal,
)
from .parse import IpFrame, parse
from .rate_limit import ERROR_BURST, ERROR_RATE, RateLimiter
from .router_adverts import (
    ALL_NODES,
    ALL_NODES_MAC,
    AdvertisedPrefix,
    RaContent,
    RaSchedule,
    is_solicitation,
    router_advert,
    solicitation_problem,
)

ETHERTYPE = {4: 0x0800, 6: 0x86DD}
IPV6_HEADER = 40
# How stale the view read from a source may get under churn: a VM attached
# this long ago may still be "from a VF with no VM" (its punts ignored).
REFRESH_SECONDS = 1.0
# A punt from a VF the view does not know, while a change is pending, reads
# the view at once, but not more often than this (a flood from an unknown VF
# under churn must not copy the desired state per frame).
FORCED_REFRESH_SECONDS = 0.05
Vf = tuple[str, int, int]  # (ToR, port, VLAN): a VM's VF

# Outcomes of a punted frame (the ``outcome`` label).
ANSWERED = "answered"
RATE_LIMITED = "rate_limited"
IGNORED = "ignored"
NOT_PRIMARY = "not_primary"
BUFFERED = "buffered"  # a fragment kept until its datagram is whole
DEFERRED = "deferred"  # a solicited multicast advert left to the schedule (3 s apart)

# What a solicited router advertisement is counted as (the ``kind`` label).
ROUTER_ADVERT = "router_advert"


class RateLimited(Ignored):
    pass


class View(Protocol):
    """What the responder reads of the desired state (Controller.desired_view())."""

    @property
    def version(self) -> int: ...

    @property
    def fabric(self) -> Fabric: ...

    @property
    def vms(self) -> Mapping[str, Vm]: ...


@dataclass
class _VrfInfo:
    name: str
    l3vni: int
    gateways: set[str] = field(default_factory=set)  # answered for (link-local included)
    # (network, gateway, VNI) of each subnet, the VNIs in order
    subnets: list[tuple[IPv4Network | IPv6Network, str, int]] = field(default_factory=list)
    broadcasts: frozenset[str] = frozenset()


@dataclass
class _Index:
    """The desired state as the responder reads it, built once per view."""

    fabric: Fabric
    gateway_mac: str
    gateway_lla: str
    vrfs: dict[str, _VrfInfo]
    by_l3vni: dict[int, _VrfInfo]
    vfs: dict[Vf, Vm]
    adverts: dict[int, RaContent]  # by VNI, for those that advertise
    tors: frozenset[str]


def _index(view: View) -> _Index | None:
    fabric = view.fabric
    mac = fabric.anycast_gateway_mac
    if mac is None:
        return None  # (no routing: nothing to answer)
    lla = link_local(mac)
    vrfs = {name: _VrfInfo(name, vrf.l3vni) for name, vrf in fabric.vrfs.items()}
    adverts = {}
    for number in sorted(fabric.vnis):
        vni = fabric.vnis[number]
        info = vrfs.get(vni.vrf) if vni.vrf is not None else None
        if info is None:
            continue
        for subnet in vni.subnets:
            try:
                network = ip_network(subnet.prefix)
            except ValueError:
                continue
            info.subnets.append((network, subnet.gateway, number))
            info.gateways.add(subnet.gateway)
            if isinstance(network, IPv6Network):
                info.gateways.add(lla)
        if advertises(vni):
            prefixes = tuple(
                AdvertisedPrefix(network, subnet.on_link, subnet.slaac)
                for _, subnet, network in ipv6_subnets(vni)
            )
            adverts[number] = RaContent(mac, lla, vni.router_advertisements, prefixes)
    for info in vrfs.values():
        info.broadcasts = frozenset(
            str(n.broadcast_address) for n, _, _ in info.subnets if isinstance(n, IPv4Network)
        )
    tor_of = {name: (s.tor, s.port) for name, s in fabric.servers.items()}
    vfs: dict[Vf, Vm] = {}
    for vm in view.vms.values():
        place = tor_of.get(vm.server)
        if place is not None:
            vfs[(place[0], place[1], vm.vlan)] = vm
    by_l3vni = {info.l3vni: info for info in vrfs.values()}
    return _Index(fabric, mac, lla, vrfs, by_l3vni, vfs, adverts, frozenset(fabric.tors))


@dataclass(frozen=True)
class _Sender:
    """Where an answer goes, and how."""

    vrf: _VrfInfo
    mode: EmitMode
    port: int  # PORT mode: the port the frame came in
    vlan: int  # PORT mode: the VF tag
    vni: int  # the sender's VNI (PORT) or the VRF's L3 VNI (ROUTE)
    mac: str  # PORT: the sender's MAC; ROUTE: the ToR's router MAC
    mtu: int
    ttl: int


class Responder:
    """The CPU path's answers for every ToR of the fabric (see the module)."""

    def __init__(
        self,
        view: View | Callable[[], View],
        send: Callable[[Emit], None],
        may_send: Callable[[str], bool],
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: Random | None = None,
        error_rate: float = ERROR_RATE,
        error_burst: float = ERROR_BURST,
        echo: EchoResponder | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        ready: Callable[[str], bool] | None = None,
    ) -> None:
        """``view``: the desired state, or where to read it from
        (``controller.desired_view``: then ``changed()`` on each commit).
        ``ready``: whether a ToR holds its entries yet; its VFs become
        advertising interfaces (the first advert within 16 s) once it does,
        since before that the gateway they would be told of does not
        route. Default: every ToR is."""
        self.send = send
        self.may_send = may_send
        self.ready = ready if ready is not None else (lambda tor: True)
        self._advertising: frozenset[str] = frozenset()  # the ready ToRs the schedule has
        self.clock = clock
        self.limiter = RateLimiter(error_rate, error_burst)
        self.echo = echo if echo is not None else EchoResponder()
        self.schedule: RaSchedule[Vf] = RaSchedule(rng)
        self._lock = threading.Lock()
        self._source = view if callable(view) else None
        self._view: View | None = None if callable(view) else view
        self.refresh_seconds = refresh_seconds
        self._fetched = float("-inf")  # when the source was last read
        self._forced = float("-inf")  # ...and last read at once (``_current(soon=True)``)
        self._changed = self._source is not None  # (the source changed since)
        self._index: _Index | None = None
        self._stale = True
        self._punts: Counter[tuple[str, str, str, str]] = Counter()
        self._sent: Counter[tuple[str, str]] = Counter()

    # --- the desired state ----------------------------------------------------------
    def update(self, view: View) -> None:
        """A newer desired state, read when next needed."""
        with self._lock:
            self._view = view
            self._stale = True

    def changed(self) -> None:
        """The desired state changed (cheap: call it on every commit). The
        source is read again when next needed, at most once every
        ``refresh_seconds``: a view is a copy of every VM, and under churn
        commits come faster than that."""
        with self._lock:
            self._changed = True

    def _current(self, soon: bool = False) -> _Index | None:
        """The index of the view, read again if it changed and
        ``refresh_seconds`` passed (``soon``: ``FORCED_REFRESH_SECONDS``)."""
        if self._changed and self._source is not None:
            now = self.clock()
            # (A forced read is limited by the last forced one, not by the
            # last read: a controller that just started read its view
            # before its first attach, and may be asked at once.)
            due = now - self._fetched >= self.refresh_seconds
            if soon and now - self._forced >= FORCED_REFRESH_SECONDS:
                self._forced, due = now, True
            if due or self._view is None:
                self._changed = False
                self._fetched = now
                self._view = self._source()
                self._stale = True
        rescheduled = False
        if self._stale and self._view is not None:
            self._stale = False
            self._index = _index(self._view)
            rescheduled = True
        index = self._index
        if index is not None:
            advertising = frozenset(tor for tor in index.tors if self.ready(tor))
            rescheduled = rescheduled or advertising != self._advertising
            self._advertising = advertising
        if rescheduled:
            wanted = []
            if index is not None:
                for vf, vm in index.vfs.items():
                    content = index.adverts.get(vm.vni)
                    if content is not None and vf[0] in self._advertising:
                        wanted.append((vf, float(content.settings.interval)))
            self.schedule.set_vfs(wanted, self.clock())
        return index

    # --- punted frames --------------------------------------------------------------
    def handle(self, punted: PuntedFrame) -> list[Emit]:
        """Answer one punted frame; what was sent (also given to ``send``)."""
        try:
            punt_class = PuntClass(punted.punt_class)
        except ValueError:
            self._count(punted.tor, f"class_{punted.punt_class}", IGNORED, "unknown punt class")
            return []
        label = punt_class_key(punt_class)
        if not self.may_send(punted.tor):
            self._count(punted.tor, label, NOT_PRIMARY)
            return []
        with self._lock:
            try:
                emits, kind = self._answer(punted, punt_class)
            except RateLimited as limited:
                self._punts[(punted.tor, label, RATE_LIMITED, limited.why)] += 1
                return []
            except Ignored as ignored:
                self._punts[(punted.tor, label, IGNORED, ignored.why)] += 1
                return []
            if not emits:
                outcome = DEFERRED if kind == ROUTER_ADVERT else BUFFERED
                self._punts[(punted.tor, label, outcome, "")] += 1
                return []
            self._punts[(punted.tor, label, ANSWERED, "")] += 1
            self._sent[(punted.tor, kind)] += len(emits)
        for emit in emits:
            self.send(emit)
        return emits

    def _count(self, tor: str, label: str, outcome: str, why: str = "") -> None:
        with self._lock:
            self._punts[(tor, label, outcome, why)] += 1

    def _answer(self, punted: PuntedFrame, punt_class: PuntClass) -> tuple[list[Emit], str]:
        index = self._current()
        if index is None:
            raise Ignored("the fabric does not route")
        if punt_class is PuntClass.L2_TRAP:
            raise Ignored("no handler for l2 traps")
        frame = parse(punted.frame)
        if frame is None:
            raise Ignored("not IPv4 or IPv6")
        try:
            sender = self._sender(index, punted, frame)
        except Ignored:
            # A VM attached since the view was read (a traceroute right
            # after its attach): read it again now, rather than in a second.
            fresh = self._current(soon=True) if self._changed else None
            if fresh is None or fresh is index:
                raise
            index = fresh
            sender = self._sender(index, punted, frame)
        # A solicitation may also be sent to the router's own address (RFC
        # 4861 6.3.7 allows any of its addresses): the data plane punts that
        # as to_gateway, and it is answered the same way.
        if punt_class is PuntClass.ROUTER_SOLICITATION or (
            punt_class is PuntClass.TO_GATEWAY and is_solicitation(frame)
        ):
            return self._solicited_advert(index, punted, frame, sender), ROUTER_ADVERT
        to_gateway = frame.dst in sender.vrf.gateways
        if punt_class is PuntClass.TO_GATEWAY or (
            punt_class is PuntClass.TTL_EXPIRED and to_gateway
        ):
            if not to_gateway:
                raise Ignored("not to a gateway address")
            if frame.dst == index.gateway_lla and sender.mode is not EmitMode.PORT:
                raise Ignored("to the link-local gateway from the fabric")
            now = self.clock()
            scope = (punted.tor, sender.vrf.name)
            packets = self.echo.reply(scope, frame, sender.ttl, sender.mtu, now)
            return [self._emit(punted.tor, index, sender, p, frame.version) for p in packets], (
                "echo_reply"
            )
        why = refusal(frame, sender.vrf.broadcasts)
        if why is not None:
            raise Ignored(why)
        mtu = 0
        if punt_class is PuntClass.PACKET_TOO_BIG:
            kind = PACKET_TOO_BIG
            mtu = self._next_hop_mtu(index, sender.vrf, frame)
        elif punt_class is PuntClass.TTL_EXPIRED:
            kind = TIME_EXCEEDED
        else:
            kind = UNREACHABLE
        source = self._error_source(index, sender, frame)
        if not self.limiter.allow((punted.tor, sender.vrf.name, frame.src), self.clock()):
            raise RateLimited("per-source ICMP error limit")
        packet = icmp_error(kind, frame, source, sender.ttl, mtu)
        return [self._emit(punted.tor, index, sender, packet, frame.version)], kind

    @staticmethod
    def _next_hop_mtu(index: _Index, vrf: _VrfInfo, frame: IpFrame) -> int:
        """The MTU of the VNI a packet too big was routed into, as the data
        plane's route said (route_to_local_vm_v6 carries it): the VNI whose
        subnet holds the destination (a VM's addresses lie in its VNI's), or,
        for a static route's prefix, the VNI of its next hop."""
        if frame.version != 6:
            raise Ignored("not IPv6")
        destination = frame.destination
        target = None
        if not any(destination in network for network, _, _ in vrf.subnets):
            # (a static route's prefix lies outside every subnet: the longest)
            best = -1
            for route in index.fabric.vrfs[vrf.name].routes:
                network = ip_network(route.prefix)
                if destination in network and network.prefixlen > best:
                    best, target = network.prefixlen, ip_address(route.next_hop)
        target = destination if target is None else target
        for network, _, number in vrf.subnets:
            if target in network:
                mtu = index.fabric.vnis[number].router_advertisements.mtu
                break
        else:
            raise Ignored("its destination is in none of the VRF's VNIs")
        if IPV6_HEADER + int(frame.ip.plen) <= mtu:
            raise Ignored("not longer than its VNI's MTU")
        return mtu

    def _sender(self, index: _Index, punted: PuntedFrame, frame: IpFrame) -> _Sender:
        if punted.vlan != 0:
            vm = index.vfs.get((punted.tor, punted.ingress_port, punted.vlan))
            if vm is None:
                raise Ignored("from a VF with no VM")
            vni = index.fabric.vnis.get(vm.vni)
            vrf = index.vrfs.get(vni.vrf) if vni is not None and vni.vrf is not None else None
            if vni is None or vrf is None:
                raise Ignored("from a VM of an L2-only VNI")
            return _Sender(
                vrf,
                EmitMode.PORT,
                punted.ingress_port,
                punted.vlan,
                vm.vni,
                frame.src_mac,
                vni.router_advertisements.mtu,
                ORIGINATED_TTL,
            )
        vrf = index.by_l3vni.get(punted.vni)
        if vrf is None:
            raise Ignored("from the fabric, not in a VRF's L3 VNI")
        tor = index.fabric.tors.get(punted.tor)
        if tor is None:
            raise Ignored("from an unknown ToR")
        mtu = TENANT_MTU
        for network, _, number in vrf.subnets:
            if network.version == frame.version and frame.source in network:
                mtu = index.fabric.vnis[number].router_advertisements.mtu
                break
        # (the data plane decrements it as for any routed frame)
        return _Sender(
            vrf, EmitMode.ROUTE, 0, 0, vrf.l3vni, tor.router_mac, mtu, ORIGINATED_TTL + 1
        )

    def _error_source(self, index: _Index, sender: _Sender, frame: IpFrame) -> str:
        """The gateway address of the sender's subnet in its VRF, else the
        VRF's first gateway of that family (so traceroute shows the fabric
        hop); the gateway's link-local address to a link-local sender."""
        source = frame.source
        if isinstance(source, IPv6Address) and source.is_link_local:
            if sender.mode is not EmitMode.PORT:
                raise Ignored("a link-local source from the fabric")
            return index.gateway_lla
        first = None
        for network, gateway, _ in sender.vrf.subnets:
            if network.version != frame.version:
                continue
            if source in network:
                return gateway
            first = first or gateway
        if first is None:
            raise Ignored("no gateway address of its family in the VRF")
        return first

    def _solicited_advert(
        self, index: _Index, punted: PuntedFrame, frame: IpFrame, sender: _Sender
    ) -> list[Emit]:
        if sender.mode is not EmitMode.PORT:
            raise Ignored("a router solicitation from the fabric")
        why = solicitation_problem(frame)
        if why is not None:
            raise Ignored(why)
        content = index.adverts.get(sender.vni)
        if content is None:
            raise Ignored("its VNI sends no router advertisements")
        vf = (punted.tor, sender.port, sender.vlan)
        if frame.src == "::":
            if not self.schedule.solicited_multicast(vf, self.clock()):
                return []
            advert = router_advert(content, sender.vlan, ALL_NODES_MAC, ALL_NODES)
        else:
            advert = router_advert(content, sender.vlan, frame.src_mac, frame.src)
        return [Emit(punted.tor, EmitMode.PORT, sender.port, 0, advert)]

    @staticmethod
    def _emit(tor: str, index: _Index, sender: _Sender, packet: bytes, version: int) -> Emit:
        if sender.mode is EmitMode.PORT:
            frame = (
                Ether(dst=sender.mac, src=index.gateway_mac)
                / Dot1Q(vlan=sender.vlan, type=ETHERTYPE[version])
                / Raw(packet)
            )
            return Emit(tor, EmitMode.PORT, sender.port, 0, bytes(frame))
        routed = Ether(dst=sender.mac, src=index.gateway_mac, type=ETHERTYPE[version]) / Raw(packet)
        return Emit(tor, EmitMode.ROUTE, 0, sender.vni, bytes(routed))

    # --- periodic router advertisements ------------------------------------------------
    def tick(self) -> list[Emit]:
        """Send the unsolicited adverts that are due (call it at least every
        second or by ``next_due``)."""
        out = []
        with self._lock:
            index = self._current()
            due = self.schedule.due(self.clock())
            if index is None:
                return []
            for tor, port, vlan in due:
                vm = index.vfs.get((tor, port, vlan))
                content = index.adverts.get(vm.vni) if vm is not None else None
                if content is None:
                    continue
                if not self.may_send(tor):
                    self._sent[(tor, "router_advert_not_primary")] += 1
                    continue
                advert = router_advert(content, vlan, ALL_NODES_MAC, ALL_NODES)
                out.append(Emit(tor, EmitMode.PORT, port, 0, advert))
                self._sent[(tor, "router_advert_periodic")] += 1
        for emit in out:
            self.send(emit)
        return out

    def next_due(self) -> float | None:
        """The clock's time of the next periodic advert (None: none)."""
        with self._lock:
            self._current()
            return self.schedule.next_due()

    # --- counters -------------------------------------------------------------------
    def punt_counts(self) -> dict[tuple[str, str, str, str], int]:
        """Punted frames by (ToR, class, outcome, why): outcome ``answered``,
        ``rate_limited``, ``ignored`` (``why`` says why), ``not_primary``,
        ``buffered`` (a fragment) or ``deferred`` (a solicited multicast
        advert the schedule sends)."""
        with self._lock:
            return dict(self._punts)

    def sent_counts(self) -> dict[tuple[str, str], int]:
        """Frames sent by (ToR, kind): time_exceeded, unreachable,
        echo_reply, router_advert (solicited), router_advert_periodic; and
        router_advert_not_primary, the periodic adverts a backup skipped."""
        with self._lock:
            return dict(self._sent)
