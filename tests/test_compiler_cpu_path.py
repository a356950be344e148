"""compiler.cpu_path: the punt policy and the CoPP meters each ToR of a
routing fabric holds, compared with the pipeline's entry builders; none on
an L2-only fabric or a pipeline without the CPU path."""

from __future__ import annotations

from fabric_fixture import routed_fabric, routed_vms, two_tor_fabric, vms
from helpers import table_entries
from p4vtep.compiler import DesiredState, Encoder, compile_tor
from p4vtep.compiler.cpu_path import cpu_path_supported
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.drop_reasons import DropReason
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.model.allocation import Allocations, allocate
from p4vtep.model.fabric import CoppRate, PuntClass
from p4vtep.runtime.p4info import P4Info
from p4vtep.runtime.protos import p4info_pb2

ENTRIES = PipelineEntries(bmv2_pipeline().p4info)
ENC = Encoder(ENTRIES)


def built(*messages) -> dict:  # type: ignore[no-untyped-def]
    return dict(ENC.of(m) for m in messages)


def test_a_routing_tor_punts_what_the_controller_answers_at_the_fabrics_rates() -> None:
    fabric, routed = routed_fabric(), routed_vms()
    fabric.copp[PuntClass.TTL_EXPIRED] = CoppRate(20, 10)
    alloc = Allocations()
    allocate(fabric, routed, alloc)
    e = ENTRIES
    for tor in ("tor1", "tor2"):
        state = compile_tor(fabric, routed, tor, alloc, ENC)
        assert table_entries(state, e.p4info, {"punt_policy"}, set()) == built(
            e.punt_policy(DropReason.TENANT_TTL_EXPIRED, PuntClass.TTL_EXPIRED),
            e.punt_policy(DropReason.TENANT_HOP_LIMIT, PuntClass.TTL_EXPIRED),
            e.punt_policy(DropReason.NO_TENANT_ROUTE, PuntClass.NO_ROUTE),
            e.punt_policy(DropReason.TO_GATEWAY, PuntClass.TO_GATEWAY),
            e.punt_policy(DropReason.ROUTER_SOLICITATION, PuntClass.ROUTER_SOLICITATION),
            e.punt_policy(DropReason.PACKET_TOO_BIG, PuntClass.PACKET_TOO_BIG),
        )
        copp_id = e.p4info.meter("copp_meter").preamble.id
        meters = {
            k: v for k, v in state.meters.items() if state.entity(k).meter_entry.meter_id == copp_id
        }
        assert meters == built(
            e.copp_meter(PuntClass.L2_TRAP, 100, 50),
            e.copp_meter(PuntClass.TTL_EXPIRED, 20, 10),
            e.copp_meter(PuntClass.NO_ROUTE, 100, 50),
            e.copp_meter(PuntClass.TO_GATEWAY, 100, 50),
            e.copp_meter(PuntClass.ROUTER_SOLICITATION, 50, 25),
            e.copp_meter(PuntClass.PACKET_TOO_BIG, 100, 50),
        )
    # The incremental compile holds the same, built first and changed after.
    alloc = Allocations()
    desired = DesiredState(fabric, ENC, alloc)
    for compiler in desired.tors.values():
        compiler.state  # noqa: B018 -- built now: what follows are changes
    desired.change(routed, [])
    for tor, compiler in desired.tors.items():
        reference = compile_tor(fabric, desired.view(tor).values(), tor, alloc, ENC)
        assert compiler.state == reference, tor


def test_an_l2_only_fabric_punts_nothing() -> None:
    fabric, l2 = two_tor_fabric(), vms()
    alloc = Allocations()
    allocate(fabric, l2, alloc)
    state = compile_tor(fabric, l2, "tor1", alloc, ENC)
    assert table_entries(state, ENTRIES.p4info, {"punt_policy"}, set()) == {}


def test_a_pipeline_without_the_cpu_path_gets_none_of_it() -> None:
    message = p4info_pb2.P4Info()
    message.CopyFrom(ENTRIES.p4info.message)
    kept = [t for t in message.tables if t.preamble.alias != "punt_policy"]
    del message.tables[:]
    message.tables.extend(kept)
    older = PipelineEntries(P4Info(message))
    assert cpu_path_supported(ENTRIES)
    assert not cpu_path_supported(older)
    fabric, routed = routed_fabric(), routed_vms()
    alloc = Allocations()
    allocate(fabric, routed, alloc)
    state = compile_tor(fabric, routed, "tor1", alloc, Encoder(older))
    copp_id = ENTRIES.p4info.meter("copp_meter").preamble.id
    assert not [k for k in state.meters if state.entity(k).meter_entry.meter_id == copp_id]
