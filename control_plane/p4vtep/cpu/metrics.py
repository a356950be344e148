"""The responder's counters for Prometheus, read at scrape time: register
``ResponderCollector(responder)`` with the registry the API serves."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from .responder import Responder


class ResponderCollector(Collector):
    """``p4vtep_cpu_punts_total{tor,class,outcome,reason}`` (every punted
    frame and what became of it) and ``p4vtep_cpu_sent_total{tor,kind}``
    (every frame the CPU path sent)."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder

    def collect(self) -> Iterator[Metric]:
        punts = CounterMetricFamily(
            "p4vtep_cpu_punts",
            "Frames the data plane punted, by ToR, punt class and outcome (reason: why ignored)",
            labels=["tor", "class", "outcome", "reason"],
        )
        for (tor, punt_class, outcome, why), count in sorted(self.responder.punt_counts().items()):
            punts.add_metric([tor, punt_class, outcome, why], count)
        sent = CounterMetricFamily(
            "p4vtep_cpu_sent",
            "Frames the CPU path sent (ICMP errors, echo replies, router advertisements)",
            labels=["tor", "kind"],
        )
        for (tor, kind), count in sorted(self.responder.sent_counts().items()):
            sent.add_metric([tor, kind], count)
        yield punts
        yield sent
