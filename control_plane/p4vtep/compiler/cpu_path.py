"""Builder: what a ToR needs for the CPU path (docs/routing.md#the-cpu-path):
which drops go to the controller instead (``punt_policy``), and each punt
class's CoPP meter from the fabric file's ``copp:``.

Only on a routing fabric (the controller answers in routed VNIs only) and a
pipeline with the tables (older builds and profiles have none)."""

from __future__ import annotations

from ..dataplane.drop_reasons import DropReason
from ..dataplane.entries import PipelineEntries
from ..dataplane.packet_io import PuntClass
from ..model.fabric import Fabric
from ..model.routing_checks import routing_configured
from .encode import Encoder
from .switch_state import Encoded

# The drops the controller answers for, and as which class.
PUNTED = {
    DropReason.TENANT_TTL_EXPIRED: PuntClass.TTL_EXPIRED,
    DropReason.TENANT_HOP_LIMIT: PuntClass.TTL_EXPIRED,
    DropReason.NO_TENANT_ROUTE: PuntClass.NO_ROUTE,
    DropReason.TO_GATEWAY: PuntClass.TO_GATEWAY,
    DropReason.ROUTER_SOLICITATION: PuntClass.ROUTER_SOLICITATION,
    DropReason.PACKET_TOO_BIG: PuntClass.PACKET_TOO_BIG,
}


def cpu_path_supported(entries: PipelineEntries) -> bool:
    """Whether the pipeline punts (has ``punt_policy`` and the CoPP meter)."""
    p4info = entries.p4info
    if not p4info.has_table("punt_policy"):
        return False
    try:
        p4info.meter("copp_meter")
    except KeyError:
        return False
    return True


def build(enc: Encoder, fabric: Fabric) -> list[Encoded]:
    """The same on every ToR: the fabric's CoPP rates are fabric-wide."""
    if not routing_configured(fabric) or not cpu_path_supported(enc.entries):
        return []
    out = [enc.of(enc.entries.punt_policy(reason, c)) for reason, c in PUNTED.items()]
    out += [
        enc.of(enc.entries.copp_meter(c, rate.pps, rate.burst))
        for c, rate in sorted(fabric.copp.items())
    ]
    return out
