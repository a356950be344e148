"""Prometheus metrics: writes, reconciles, switch state, and the data-plane
counters of every VM and VNI (read from the switches at scrape time)."""

from __future__ import annotations

import logging
import threading

from prometheus_client import Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import REGISTRY, CounterMetricFamily
from prometheus_client.registry import Collector

from . import events
from .controller import Controller, CounterReader

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
CONNECTED = Gauge("p4vtep_switch_connected", "1 if the P4Runtime session is up", ["switch"])
PRIMARY = Gauge("p4vtep_switch_primary", "1 if this controller is primary", ["switch"])
VMS = Gauge("p4vtep_vms", "VMs in the desired state")
VMS_NOT_INSTALLED = Gauge(
    "p4vtep_vms_not_installed", "VMs with entries a switch refused (e.g. a full table)", ["switch"]
)


class DataPlaneCollector(Collector):
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.reader = CounterReader(controller)

    def collect(self):
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
        drops = CounterMetricFamily("p4vtep_drops", "Drops by reason", labels=["tor", "reason"])
        try:
            for name in sorted(self.controller.vms):
                tor, tx, rx = self.reader.vm(name)
                for direction, (packets, octets) in (("tx", tx), ("rx", rx)):
                    vm_packets.add_metric([name, tor, direction], packets)
                    vm_bytes.add_metric([name, tor, direction], octets)
            for vni in sorted({vm.vni for vm in self.controller.vms.values()}):
                for tor, tx, rx in self.reader.vni(vni):
                    vni_packets.add_metric([str(vni), tor, "tx"], tx[0])
                    vni_packets.add_metric([str(vni), tor, "rx"], rx[0])
            for tor in sorted(self.controller.supervisors):
                for reason, packets in self.reader.drops(tor).items():
                    drops.add_metric([tor, reason], packets)
        except Exception as exc:  # noqa: BLE001 -- a scrape must not fail the controller
            log.debug("counter scrape incomplete: %s", exc)
        yield from (vm_packets, vm_bytes, vni_packets, drops)


def start_metrics(controller: Controller, port: int, address: str = "127.0.0.1") -> None:
    REGISTRY.register(DataPlaneCollector(controller))
    subscription = controller.bus.subscribe()

    def follow() -> None:
        while True:
            event = subscription.get()
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

    threading.Thread(target=follow, daemon=True, name="metrics").start()
    start_http_server(port, addr=address)
