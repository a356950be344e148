"""`p4vtep controller run`: build a controller, its sources, API and metrics
from the command line and the fabric file, and run them until a signal."""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..evpn.options import EvpnOptions
    from ..ha.replica import SourceFactory
    from ..state.etcd_connection import EtcdSettings


# The collector's thresholds once the controller runs (Python's are 700, 10,
# 10): measured in bench/NOTES.md (issue 40, sessions 8, 15 and 16).
COLLECTOR_THRESHOLDS = (50_000, 20, 10)


def settle_collector() -> None:
    """The controller's collector, once it has started: what it holds now
    (fabric, pipeline, desired state, compiled entries) is frozen out of the
    collector's sight (``gc.freeze``: never scanned again, still freed when
    no longer referenced), so that the old generation's collections no
    longer walk it; and the youngest generation is collected after 50,000
    allocations instead of 700 (``COLLECTOR_THRESHOLDS``). A burst of
    learned routes or events allocates objects that live on (the routes,
    their entries), and with 700 the collector walked each of them a few
    times over, for nothing: the controller makes no reference cycles in its
    work (tests/test_reference_cycles.py). A process-wide choice: made here,
    for ``p4vtep controller run``, not by the library; the benchmarks that
    run a controller in their own process call it at the same point.

    These thresholds once made a replica that had lost etcd's quorum take
    no writes after quorum came back: each refused API call was kept in a
    reference cycle, and with it its HTTP/2 stream, until a collection, so
    that the server refused every call after 64 (fixed in session 15;
    tests/test_api.py, tests/test_reference_cycles.py)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def run_controller(args: argparse.Namespace) -> int:
    from ..api.server import serve
    from ..controller import Controller
    from ..dataplane.artifacts import bmv2_pipeline
    from ..sources.fabric_file import load_fabric
    from ..sources.inventory_file import InventoryWatcher
    from ..state.sqlite_store import Store

    logging.basicConfig(
        level=logging.INFO if not args.verbose else logging.DEBUG,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    fabric = load_fabric(args.fabric)
    etcd = etcd_settings(args)
    libvirt_uris = {s.name: s.libvirt for s in fabric.servers.values() if s.libvirt}
    replica = None
    watcher = None
    libvirt_source = None
    evpn_source = None
    if etcd is None:
        controller = Controller(
            fabric,
            bmv2_pipeline(),
            Store(args.state),
            election_id=args.election_id,
            resync_seconds=args.resync,
        )
        if fabric.evpn is not None:
            from ..sources.evpn import EvpnSource

            evpn_source = EvpnSource(controller, evpn_options(args))
        if args.inventory:
            watcher = InventoryWatcher(controller, args.inventory)
            watcher.load_now()
        if evpn_source is not None:
            # Before the supervisors: the switches get the learned routes at once.
            evpn_source.start()
        controller.start()
        if watcher:
            watcher.start()
        if libvirt_uris:
            from ..sources.libvirt_domains import LibvirtSource

            libvirt_source = LibvirtSource(controller, libvirt_uris)
            libvirt_source.start()
    else:
        from ..ha.replica import Replica, SharedSourceFactory

        shared: list[SharedSourceFactory] = []
        if fabric.evpn is not None:
            # Every replica speaks BGP and learns; only the leader commits
            # (docs/ha.md, "BGP EVPN with replicas").
            from ..sources.evpn import EvpnSource

            options = evpn_options(args)
            if options.router_id is None:
                logging.getLogger(__name__).warning(
                    "EVPN with replicas: this replica uses the fabric file's router id %s; "
                    "give each replica its own (--evpn-address or --evpn-router-id)",
                    fabric.evpn.router_id,
                )
            shared.append(lambda controller: EvpnSource(controller, options))
        replica = Replica(
            fabric,
            bmv2_pipeline(),
            etcd,
            args.replica_id,
            args.api_address or args.listen,
            ttl=args.lease_ttl,
            margin=args.lease_margin,
            resync_seconds=args.resync,
            sources=leader_sources(args.inventory, libvirt_uris),
            shared=shared,
        )
        controller = replica.controller
        if fabric.evpn is not None:
            from ..sources.evpn import EvpnSource

            evpn_source = next(s for s in replica.shared_sources if isinstance(s, EvpnSource))
        replica.start()
    # BMv2 ToRs: the servers' link rates as egress queue rates (queue_rates.py).
    from ..switch.queue_rates import QueueRateSync

    queue_rates = QueueRateSync(controller)
    queue_rates.start()
    credentials = None
    if fabric.api_tls is not None:
        from ..tls import server_credentials

        credentials = server_credentials(fabric.api_tls)
    evpn = evpn_source.service if evpn_source is not None else None
    server = serve(controller, args.listen, credentials=credentials, evpn=evpn)
    if args.metrics_port:
        from ..api.metrics import start_metrics

        start_metrics(controller, args.metrics_port, args.metrics_address, evpn=evpn)
    settle_collector()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    role = f", replica {args.replica_id} (etcd)" if replica is not None else ""
    print(
        f"p4vtep controller: {len(fabric.tors)} ToRs, {len(controller.vms)} VMs, "
        f"API on {args.listen}{role}",
        flush=True,
    )
    stop.wait()
    queue_rates.stop()
    server.stop(grace=1)
    if watcher:
        watcher.stop()
    if libvirt_source:
        libvirt_source.stop()
    if replica is not None:
        replica.stop()  # (and its EVPN source)
    else:
        controller.stop()
        if evpn_source is not None:
            evpn_source.stop()
    return 0


def evpn_options(args: argparse.Namespace) -> EvpnOptions:
    """How this process runs its BGP speaker: ``--evpn-address`` is where
    gobgpd listens and what its sessions come from, and the router id unless
    ``--evpn-router-id`` says otherwise."""
    from ..evpn.options import EvpnOptions
    from ..sources.fabric_file import ConfigError

    address = args.evpn_address
    router_id = args.evpn_router_id or address
    if router_id is not None:
        import ipaddress

        try:
            ipaddress.IPv4Address(router_id)
        except ValueError:
            raise ConfigError(
                f"EVPN router id {router_id!r} is not an IPv4 address (--evpn-router-id)"
            ) from None
    return EvpnOptions(
        listen_addresses=(address,) if address else (),
        local_address=address,
        router_id=router_id,
    )


def leader_sources(inventory: str | None, libvirt_uris: dict[str, str]) -> list[SourceFactory]:
    """The inputs a replica runs while it leads: each replica reads its own
    copy of the inventory file and the fabric file's libvirt URIs. A bad
    inventory file stops the start here, as it does without etcd."""
    from ..sources.fabric_file import load_inventory
    from ..sources.inventory_file import InventoryWatcher

    sources: list[SourceFactory] = []
    if inventory:
        load_inventory(inventory)
        sources.append(lambda controller: InventoryWatcher(controller, inventory))
    if libvirt_uris:
        from ..sources.libvirt_domains import LibvirtSource

        sources.append(lambda controller: LibvirtSource(controller, libvirt_uris))
    return sources


def etcd_settings(args: argparse.Namespace) -> EtcdSettings | None:
    """etcd from the command line (--etcd) or else the fabric file's
    ``store:`` section; None: the SQLite store (--state)."""
    from ..sources.fabric_file import ConfigError, load_store
    from ..state.etcd_connection import EtcdSettings

    settings = load_store(args.fabric)
    if args.etcd:
        endpoints = tuple(e.strip() for e in args.etcd.split(",") if e.strip())
        try:
            settings = EtcdSettings(
                endpoints,
                args.etcd_prefix or (settings.prefix if settings else "/p4vtep"),
                settings.tls if settings else None,
            )
        except ValueError as exc:
            raise ConfigError(f"--etcd {args.etcd}: {exc}") from None
    if settings is not None and not args.replica_id:
        raise ConfigError("etcd replicas need --replica-id (unique per controller)")
    return settings
