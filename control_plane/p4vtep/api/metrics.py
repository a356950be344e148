"""Prometheus metrics: writes, reconciles, switch state, the data-plane
counters of every VM and VNI (read from the switches at scrape time), the
BGP EVPN sessions and routes (read from the speaker at scrape time), and
what the CPU path's responder answered (cpu/metrics.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from prometheus_client import Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .. import events
from ..controller import Controller
from ..cpu.metrics import ResponderCollector
from ..evpn import status as evpn_status
from ..evpn.service import EvpnService
from ..model.tenant_routes import route_counts
from .counters import CounterReader

log = logging.getLogger(__name__)

ENTRIES_WRITTEN = Counter(
    "p4vtep_entries_written_total", "P4Runtime updates written", ["switch", "type"]
)
RECONCILE_SECONDS = Histogram(
    "p4vtep_reconcile_seconds", "Read + diff + write time of a pass", ["switch"]
)
RECONCILES = Counter("p4vtep_reconcile_runs_total", "Reconcile passes", ["switch"])
RECONCILE_DIFF = Gauge("p4vtep_reconcile_last_diff", "Updates needed by the last pass", ["switch"])
WRITE_ERRORS = Counter("p4vtep_write_errors_total", "Updates the switch refused", ["switch"])
ROUTE_CHANGES = Counter(
    "p4vtep_route_changes_total",
    "Tenant routes added, removed or moved (to another VM or ToR), per VRF",
    ["vrf", "change"],
)
CONNECTED = Gauge("p4vtep_switch_connected", "1 if the P4Runtime session is up", ["switch"])
PRIMARY = Gauge("p4vtep_switch_primary", "1 if this controller is primary", ["switch"])
VMS = Gauge("p4vtep_vms", "VMs in the desired state")
VMS_NOT_INSTALLED = Gauge(
    "p4vtep_vms_not_installed", "VMs with entries a switch refused (e.g. a full table)", ["switch"]
)


class DataPlaneCollector(Collector):
    """Scrape-time counters of every reachable switch, and which switches
    could be read (p4vtep_switch_up)."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.reader = CounterReader(controller)

    def collect(self) -> Iterator[Metric]:
        vm_packets = CounterMetricFamily(
            "p4vtep_vm_packets", "Packets per VM and direction", labels=["vm", "tor", "direction"]
        )
        vm_bytes = CounterMetricFamily(
            "p4vtep_vm_bytes", "Bytes per VM and direction", labels=["vm", "tor", "direction"]
        )
        vni_packets = CounterMetricFamily(
            "p4vtep_vni_packets",
            "Packets per VNI and direction",
            labels=["vni", "tor", "direction"],
        )
        color_labels = ["vm", "tor", "direction", "color"]
        color_packets = CounterMetricFamily(
            "p4vtep_vm_color_packets",
            "Packets a VM's QoS meter coloured, per direction and colour (red: dropped)",
            labels=color_labels,
        )
        color_bytes = CounterMetricFamily(
            "p4vtep_vm_color_bytes",
            "Bytes a VM's QoS meter coloured, per direction and colour (red: dropped)",
            labels=color_labels,
        )
        guard_labels = ["vm", "tor", "reason"]
        guard_packets = CounterMetricFamily(
            "p4vtep_vm_port_security_drop_packets",
            "Packets a VM sent that port security dropped, by reason (docs/security.md)",
            labels=guard_labels,
        )
        guard_bytes = CounterMetricFamily(
            "p4vtep_vm_port_security_drop_bytes",
            "Bytes a VM sent that port security dropped, by reason (docs/security.md)",
            labels=guard_labels,
        )
        drops = CounterMetricFamily("p4vtep_drops", "Drops by reason", labels=["tor", "reason"])
        up = GaugeMetricFamily(
            "p4vtep_switch_up",
            "1 if this scrape read the switch's counters, 0 if it could not",
            labels=["switch"],
        )
        counters = self.reader.collect()
        for vm in counters.vms:
            for direction, traffic in (("tx", vm.tx), ("rx", vm.rx)):
                vm_packets.add_metric([vm.name, vm.tor, direction], traffic.packets)
                vm_bytes.add_metric([vm.name, vm.tor, direction], traffic.bytes)
            for direction, colors in vm.colors.items():
                for color, traffic in colors.items():
                    color_packets.add_metric([vm.name, vm.tor, direction, color], traffic.packets)
                    color_bytes.add_metric([vm.name, vm.tor, direction, color], traffic.bytes)
            for reason, traffic in vm.port_security.items():
                guard_packets.add_metric([vm.name, vm.tor, reason], traffic.packets)
                guard_bytes.add_metric([vm.name, vm.tor, reason], traffic.bytes)
        for vni in counters.vnis:
            vni_packets.add_metric([str(vni.vni), vni.tor, "tx"], vni.tx.packets)
            vni_packets.add_metric([str(vni.vni), vni.tor, "rx"], vni.rx.packets)
        for tor, reasons in sorted(counters.drops.items()):
            for reason, packets in reasons.items():
                drops.add_metric([tor, reason], packets)
        for tor in sorted(self.controller.supervisors):
            up.add_metric([tor], 0 if tor in counters.unreachable else 1)
        for tor, error in sorted(counters.unreachable.items()):
            log.debug("counter scrape: %s not read: %s", tor, error)
        yield from (
            vm_packets,
            vm_bytes,
            color_packets,
            color_bytes,
            guard_packets,
            guard_bytes,
            vni_packets,
            drops,
            up,
        )


class EvpnCollector(Collector):
    """Scrape-time EVPN figures of ``service``; nothing without one (the
    fabric file has no evpn: section)."""

    def __init__(self, service: EvpnService | None) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        service = self.service
        if service is None:
            return
        sessions = GaugeMetricFamily(
            "p4vtep_evpn_sessions", "BGP EVPN sessions by state", labels=["state"]
        )
        up = GaugeMetricFamily(
            "p4vtep_evpn_session_up", "1 if the session to the peer is established", labels=["peer"]
        )
        routes = GaugeMetricFamily(
            "p4vtep_evpn_routes",
            "EVPN routes per peer: received (held by the speaker), accepted "
            "(in the learned table), advertised (sent to it)",
            labels=["peer", "direction"],
        )
        refused = CounterMetricFamily(
            "p4vtep_evpn_routes_refused",
            "Received EVPN routes refused, by reason",
            labels=["reason"],
        )
        peers = evpn_status.peer_reports(service)
        by_state = dict.fromkeys((*evpn_status.SESSION_STATES, evpn_status.SPEAKER_DOWN), 0)
        for peer in peers:
            by_state[peer.state] = by_state.get(peer.state, 0) + 1
            up.add_metric([peer.address], int(peer.state == "ESTABLISHED"))
            for direction, count in (
                ("received", peer.received),
                ("accepted", peer.accepted),
                ("advertised", peer.advertised),
            ):
                routes.add_metric([peer.address, direction], count)
        for state, count in by_state.items():
            sessions.add_metric([state], count)
        for reason, count in sorted(evpn_status.refusals(service).items()):
            refused.add_metric([reason], count)
        yield from (sessions, up, routes, refused)


class RoutingCollector(Collector):
    """Scrape-time routes per VRF, from the desired state (docs/routing.md)."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def collect(self) -> Iterator[Metric]:
        routes = GaugeMetricFamily(
            "p4vtep_vrf_routes",
            "Routes per VRF: host (VM IPs), static (with a VM owning the next hop), gateway",
            labels=["vrf", "kind"],
        )
        c = self.controller
        for (vrf, kind), count in sorted(route_counts(c.fabric, c.vms.values()).items()):
            routes.add_metric([vrf, kind], count)
        yield routes


STOP = events.Event()  # put on the metrics thread's subscription: it returns


def start_metrics(
    controller: Controller,
    port: int,
    address: str = "127.0.0.1",
    evpn: EvpnService | None = None,
) -> Callable[[], None]:
    """Serve the metrics on ``address:port`` (and ``evpn``'s, the EVPN
    service running beside the controller, if any); returns what stops it
    (the collectors leave the process-wide registry, so another controller
    in the same process, e.g. a test's, can serve its own)."""
    collectors = (
        DataPlaneCollector(controller),
        RoutingCollector(controller),
        EvpnCollector(evpn),
        ResponderCollector(controller.responder),
    )
    for collector in collectors:
        REGISTRY.register(collector)
    subscription = controller.bus.subscribe()

    def follow() -> None:
        while True:
            event = subscription.get()
            if event is STOP:
                return
            VMS.set(len(controller.vms))
            if isinstance(event, events.Reconciled):
                VMS_NOT_INSTALLED.labels(event.switch).set(0)
                RECONCILES.labels(event.switch).inc()
                RECONCILE_SECONDS.labels(event.switch).observe(event.seconds)
                RECONCILE_DIFF.labels(event.switch).set(
                    event.inserts + event.modifies + event.deletes
                )
                for kind in ("inserts", "modifies", "deletes"):
                    ENTRIES_WRITTEN.labels(event.switch, kind[:-1]).inc(getattr(event, kind))
            elif isinstance(event, events.WriteFailed):
                WRITE_ERRORS.labels(event.switch).inc(len(event.errors))
                VMS_NOT_INSTALLED.labels(event.switch).set(len(event.vms))
            elif isinstance(event, events.SwitchConnected):
                CONNECTED.labels(event.switch).set(1)
                PRIMARY.labels(event.switch).set(int(event.primary))
            elif isinstance(event, events.SwitchDisconnected):
                CONNECTED.labels(event.switch).set(0)
                PRIMARY.labels(event.switch).set(0)
            elif isinstance(event, events.PrimaryChanged):
                PRIMARY.labels(event.switch).set(int(event.primary))
            elif isinstance(event, events.RoutesChanged):
                for change in ("added", "removed", "moved"):
                    ROUTE_CHANGES.labels(event.vrf, change).inc(len(getattr(event, change)))

    threading.Thread(target=follow, daemon=True, name="metrics").start()
    server, _ = start_http_server(port, addr=address)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        controller.bus.unsubscribe(subscription)
        subscription.put(STOP)
        for collector in collectors:
            REGISTRY.unregister(collector)

    return stop
