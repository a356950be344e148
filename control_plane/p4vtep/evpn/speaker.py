"""The BGP speaker: a GoBGP daemon (gobgpd) run as a child process and driven
over its gRPC API on a private Unix socket.

p4vtep never speaks BGP itself. gobgpd keeps the sessions (open, keepalive,
hold timer, MD5 password), encodes and decodes EVPN; we tell it which routes
to originate (AddPath/DeletePath) and read what peers send (WatchEvent:
adj-RIB-in updates and peer state changes). A route we cannot decode is
counted and logged by the receiver callback's owner, never raised here.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import grpc

from ..processes import stop_process
from . import gobgp_api, gobgp_codec
from .config import EvpnConfig
from .options import DEFAULTS, EvpnOptions
from .routes import EvpnRoute, MacIpRoute, RouteError

log = logging.getLogger(__name__)

GOBGPD = "gobgpd"
ESTABLISHED = "ESTABLISHED"
EXPORT_POLICY = "p4vtep-originated-only"
NO_PEER = frozenset({"", "<nil>", "0.0.0.0"})  # how GoBGP names "locally originated"


class SpeakerError(RuntimeError):
    pass


@dataclass(frozen=True)
class PeerStatus:
    address: str
    asn: int
    state: str  # IDLE, CONNECT, ACTIVE, OPENSENT, OPENCONFIRM, ESTABLISHED
    received: int  # EVPN paths in the adj-RIB-in
    advertised: int  # EVPN paths sent
    uptime: float | None  # epoch seconds the session came up, when up


# Callbacks: a received route (or a malformed one, as its error), a withdrawn
# NLRI key, and a peer's session going up or down.
OnRoute = Callable[[str, EvpnRoute], None]
OnMalformed = Callable[[str, str], None]
OnWithdraw = Callable[[str, tuple[object, ...]], None]
OnPeerState = Callable[[str, bool], None]


class Received(NamedTuple):
    """One path of a gobgpd event from peer ``source``: a ``route``, the NLRI
    key of a ``withdrawn`` one, or why it is ``malformed``. (A named tuple:
    one is made per route received.)"""

    source: str
    route: EvpnRoute | None = None
    withdrawn: tuple[object, ...] | None = None
    malformed: str | None = None


# Every path of one gobgpd event, in order (instead of one call per path).
OnPaths = Callable[[list[Received]], None]


def _received(path: Any) -> Received | None:
    """One path of a gobgpd event as a ``Received``; None for our own paths
    and for what decodes to nothing we keep. (A module function: the batch
    maps it over thousands of paths.)"""
    source = path.neighbor_ip
    if source in NO_PEER:
        return None
    try:
        if path.is_withdraw:
            key = gobgp_codec.decode_key(path)
            return Received(source, None, key) if key is not None else None
        route = gobgp_codec.decode(path)
    except (RouteError, ValueError) as exc:
        return Received(source, None, None, str(exc))
    return Received(source, route) if route is not None else None


class ReceiveClock:
    """When this speaker received the peers' paths from gobgpd (the
    ``time.perf_counter()`` of each event, as it arrived), counted since
    ``reset``: how fast the peers delivered. (gobgpd's own stamp on a path,
    its ``age``, has whole seconds only.)"""

    def __init__(self) -> None:
        self.paths = 0
        self.events = 0
        self.first: float | None = None
        self.last: float | None = None

    def reset(self) -> None:
        self.paths, self.events, self.first, self.last = 0, 0, None, None

    def saw(self, paths: int) -> None:
        now = time.perf_counter()
        self.paths += paths
        self.events += 1
        if self.first is None:
            self.first = now
        self.last = now


class GoBgpSpeaker:
    def __init__(
        self,
        config: EvpnConfig,
        on_route: OnRoute,
        on_withdraw: OnWithdraw,
        on_peer_state: OnPeerState,
        on_malformed: OnMalformed,
        options: EvpnOptions = DEFAULTS,
        on_paths: OnPaths | None = None,
    ) -> None:
        """``options``: how gobgpd runs here (namespace, listen addresses,
        session source address, run directory, log level). ``on_paths``:
        given, it takes each event's paths as one list (a burst of routes
        handled as one), and ``on_route``, ``on_withdraw`` and
        ``on_malformed`` are not called."""
        if gobgp_api.MISSING:
            raise SpeakerError(gobgp_api.MISSING)
        if shutil.which(GOBGPD) is None:
            raise SpeakerError(f"{GOBGPD} not found: install the Debian package gobgpd")
        self.config = config
        self._on_route = on_route
        self._on_withdraw = on_withdraw
        self._on_peer_state = on_peer_state
        self._on_malformed = on_malformed
        self._on_paths = on_paths
        self.received = ReceiveClock()
        self.options = options
        self._own_dir = options.run_dir is None
        self._dir = options.run_dir or Path(tempfile.mkdtemp(prefix="p4vtep-gobgp-"))
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: grpc.Channel | None = None
        self._watch_channel: grpc.Channel | None = None
        self._stub: Any = None
        self._watch: Any = None
        self._watcher: threading.Thread | None = None
        self._up: dict[str, bool] = {}

    @property
    def socket(self) -> Path:
        return self._dir / "gobgpd.sock"

    # ---- lifecycle ----------------------------------------------------------

    def start(self, timeout: float = 10.0) -> None:
        api = gobgp_api.gobgp_pb2
        self._dir.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)  # a dead gobgpd's socket blocks a new one
        self._up = {}
        logfile = open(self._dir / "gobgpd.log", "ab")  # noqa: SIM115 - owned by the child
        command = [
            *self.options.command_prefix,
            GOBGPD,
            f"--api-hosts=unix://{self.socket}",
            "--pprof-disable",
            "--log-plain",
            f"--log-level={self.options.log_level}",
        ]
        self._process = subprocess.Popen(
            command, stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        logfile.close()
        # gobgpd opens its socket some 0.1 s after it starts; gRPC's first
        # try fails before that, and its next would come only after the
        # default reconnect backoff (1 s): retry a local child sooner.
        self._channel = grpc.insecure_channel(
            f"unix://{self.socket}",
            options=[
                ("grpc.initial_reconnect_backoff_ms", 20),
                ("grpc.max_reconnect_backoff_ms", 500),
            ],
        )
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self.stop()
            raise SpeakerError(
                f"gobgpd did not open its API within {timeout} s; see {self._dir}/gobgpd.log"
            ) from None
        self._stub = gobgp_api.gobgp_pb2_grpc.GobgpApiStub(self._channel)
        self._stub.StartBgp(_start_request(api, self.config, self.options.listen_addresses))
        self._export_only_our_routes()
        # The event stream on a channel of its own whose stream calls are
        # read in the reading thread (gRPC's SingleThreadedUnaryStream): a
        # peer's table is one event per route (GoBGP sends one EVPN route
        # per UPDATE), and the usual hand-over of each message from gRPC's
        # thread to ours cost about half of this process's time per route.
        self._watch_channel = grpc.insecure_channel(
            f"unix://{self.socket}", options=[("SingleThreadedUnaryStream", 1)]
        )
        watcher = gobgp_api.gobgp_pb2_grpc.GobgpApiStub(self._watch_channel)
        # Watch before adding peers, so no state change or route is missed.
        self._watch = watcher.WatchEvent(
            api.WatchEventRequest(
                peer=api.WatchEventRequest.Peer(),
                table=api.WatchEventRequest.Table(
                    filters=[
                        api.WatchEventRequest.Table.Filter(
                            type=api.WatchEventRequest.Table.Filter.ADJIN, init=True
                        )
                    ]
                ),
            )
        )
        self._watcher = threading.Thread(target=self._watch_loop, name="evpn-watch", daemon=True)
        self._watcher.start()
        for peer in self.config.peers:
            self._add_peer(peer.address, peer.asn, peer.password)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._process is not None:
            stop_process(self._process, timeout=5)
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        if self._channel is not None:
            self._channel.close()
        if self._watch_channel is not None:
            self._watch_channel.close()
        self._process = None
        if self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _export_only_our_routes(self) -> None:
        """We speak for our ToRs only: never pass one peer's routes on to
        another. (gobgpd would, towards eBGP peers, with itself as next hop.)"""
        api = gobgp_api.gobgp_pb2
        policy = api.Policy(
            name=EXPORT_POLICY,
            statements=[
                api.Statement(
                    name=f"{EXPORT_POLICY}-local",
                    conditions=api.Conditions(route_type=api.Conditions.ROUTE_TYPE_LOCAL),
                    actions=api.Actions(route_action=api.ACCEPT),
                )
            ],
        )
        self._stub.AddPolicy(api.AddPolicyRequest(policy=policy))
        self._stub.AddPolicyAssignment(
            api.AddPolicyAssignmentRequest(
                assignment=api.PolicyAssignment(
                    name="global",
                    direction=api.EXPORT,
                    policies=[api.Policy(name=EXPORT_POLICY)],
                    default_action=api.REJECT,
                )
            )
        )
        # Nor keep their routes in the global RIB: we read them from the
        # adj-RIB-in (WatchEvent ADJIN: before import policy), and gobgpd
        # walks every EVPN path of its global RIB for each type 2 route it
        # receives (its own MAC mobility check, TableManager.handleMacMobility
        # in GoBGP 3.10), which made a peer's table cost quadratic time: 23 s
        # for 10,000 routes, 0.4 h for 100,000. Rejected at import, a route
        # reaches the RIB as a withdrawal, which skips that walk.
        self._stub.AddPolicyAssignment(
            api.AddPolicyAssignmentRequest(
                assignment=api.PolicyAssignment(
                    name="global",
                    direction=api.IMPORT,
                    policies=[api.Policy(name=EXPORT_POLICY)],  # (ours in, theirs not)
                    default_action=api.REJECT,
                )
            )
        )

    def _add_peer(self, address: str, asn: int, password: str | None) -> None:
        api = gobgp_api.gobgp_pb2
        hold = self.config.hold_time
        peer = api.Peer(
            conf=api.PeerConf(neighbor_address=address, peer_asn=asn, auth_password=password or ""),
            timers=api.Timers(
                config=api.TimersConfig(
                    hold_time=hold,
                    keepalive_interval=max(1, hold // 3) if hold else 0,
                    connect_retry=1,
                )
            ),
            afi_safis=[
                api.AfiSafi(
                    config=api.AfiSafiConfig(family=gobgp_codec.evpn_family(), enabled=True)
                )
            ],
            transport=api.Transport(local_address=self.options.local_address or ""),
        )
        self._stub.AddPeer(api.AddPeerRequest(peer=peer))

    # ---- routes out ---------------------------------------------------------

    def announce(self, route: EvpnRoute) -> None:
        api = gobgp_api.gobgp_pb2
        self._stub.AddPath(
            api.AddPathRequest(table_type=api.GLOBAL, path=gobgp_codec.encode(route))
        )

    def withdraw(self, route: EvpnRoute) -> None:
        api = gobgp_api.gobgp_pb2
        if isinstance(route, MacIpRoute):
            # A withdrawal is the NLRI alone. Sent with its old MAC mobility
            # number, gobgpd would refuse it once a peer holds a higher one
            # ("invalid MAC mobility sequence number"): exactly when we must
            # withdraw because the MAC moved away.
            route = dataclasses.replace(route, mobility_seq=0, sticky=False)
        self._stub.DeletePath(
            api.DeletePathRequest(
                table_type=api.GLOBAL,
                family=gobgp_codec.evpn_family(),
                path=gobgp_codec.encode(route),
            )
        )

    def originated(self) -> list[EvpnRoute]:
        """The routes gobgpd holds as ours (its global RIB, local paths)."""
        api = gobgp_api.gobgp_pb2
        routes: list[EvpnRoute] = []
        for reply in self._stub.ListPath(
            api.ListPathRequest(table_type=api.GLOBAL, family=gobgp_codec.evpn_family())
        ):
            for path in reply.destination.paths:
                if path.neighbor_ip not in NO_PEER:
                    continue  # learned from a peer, not ours
                route = gobgp_codec.decode(path)
                if route is not None:
                    routes.append(route)
        return routes

    def peers(self) -> list[PeerStatus]:
        api = gobgp_api.gobgp_pb2
        result = []
        for reply in self._stub.ListPeer(api.ListPeerRequest(enableAdvertised=True)):
            peer = reply.peer
            received = advertised = 0
            for afi_safi in peer.afi_safis:
                received += afi_safi.state.received
                advertised += afi_safi.state.advertised
            state = api.PeerState.SessionState.Name(peer.state.session_state)
            uptime = peer.timers.state.uptime.seconds if state == ESTABLISHED else None
            result.append(
                PeerStatus(
                    peer.conf.neighbor_address,
                    peer.conf.peer_asn,
                    state,
                    received,
                    advertised,
                    uptime,
                )
            )
        return result

    # ---- routes and sessions in ----------------------------------------------

    def _watch_loop(self) -> None:
        api = gobgp_api.gobgp_pb2
        try:
            for event in self._watch:
                if event.HasField("peer"):
                    state = event.peer.peer.state
                    self._peer_event(
                        state.neighbor_address, state.session_state == api.PeerState.ESTABLISHED
                    )
                elif event.HasField("table"):
                    self.received.saw(len(event.table.paths))
                    if self._on_paths is not None:
                        self._batch(event.table.paths)
                    else:
                        for path in event.table.paths:
                            self._path(path)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                log.error("EVPN: gobgpd event stream ended (gobgpd gone?): %s", exc)
        finally:
            # Without gobgpd there are no sessions: whatever they taught us is
            # withdrawn, as when each session goes down.
            for address, up in list(self._up.items()):
                if up:
                    self._peer_event(address, False)

    def _peer_event(self, address: str, up: bool) -> None:
        if address in NO_PEER or self._up.get(address, False) == up:
            return
        self._up[address] = up
        log.info("EVPN: session to %s %s", address, "up" if up else "down")
        self._safe(self._on_peer_state, address, up)

    def _batch(self, paths: Any) -> None:
        received = [r for r in map(_received, paths) if r is not None]
        if received:
            assert self._on_paths is not None
            self._safe(self._on_paths, received)

    def _path(self, path: Any) -> None:
        r = _received(path)
        if r is None:
            return
        if r.malformed is not None:
            self._safe(self._on_malformed, r.source, r.malformed)
        elif r.withdrawn is not None:
            self._safe(self._on_withdraw, r.source, r.withdrawn)
        else:
            self._safe(self._on_route, r.source, r.route)

    @staticmethod
    def _safe(callback: Callable[..., None], *args: Any) -> None:
        try:
            callback(*args)
        except Exception:  # a bug downstream must not end route intake
            log.exception("EVPN: callback %s failed", getattr(callback, "__name__", callback))


def _start_request(api: Any, config: EvpnConfig, listen: Sequence[str]) -> Any:
    # ``global`` is a Python keyword: the field is set through the constructor's kwargs.
    return api.StartBgpRequest(
        **{
            "global": api.Global(
                asn=config.asn,
                router_id=config.router_id,
                listen_port=config.listen_port,
                listen_addresses=list(listen),
            )
        }
    )


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


__all__ = ["GoBgpSpeaker", "PeerStatus", "ReceiveClock", "Received", "SpeakerError", "wait_for"]
