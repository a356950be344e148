"""The CPU path's names and encodings (issue 39): punt classes and packet-out
modes as defines.p4 has them, packet-in decoding and packet-out metadata by
the P4Info's names, the punt_policy and CoPP builders."""

import re

import pytest
from p4vtep.dataplane.artifacts import P4SRC, bmv2_pipeline
from p4vtep.dataplane.drop_reasons import DropReason
from p4vtep.dataplane.entries import (
    COPP_DROP_COUNTER,
    PUNT_COUNTER,
    PipelineEntries,
    PuntCounts,
    punt_counts,
)
from p4vtep.dataplane.packet_io import (
    PUNT_CLASS_COUNT,
    PacketInMeta,
    PacketOutMode,
    PuntClass,
    decode_packet_in,
    packet_out_metadata,
)
from p4vtep.runtime import codec
from p4vtep.runtime.p4info import P4Info
from p4vtep.runtime.protos import p4runtime_pb2


@pytest.fixture(scope="module")
def p4info() -> P4Info:
    return bmv2_pipeline().p4info


def ids(p4info: P4Info, header: str) -> dict[str, int]:
    return {m.name: m.id for m in p4info.controller_packet_metadata(header).metadata}


def test_classes_and_modes_match_p4_constants():
    text = (P4SRC / "include" / "defines.p4").read_text()
    classes = dict(re.findall(r"const punt_class_t PUNT_CLASS_(\w+)\s*=\s*(\d+);", text))
    classes.pop("NONE")
    assert {k: int(v) for k, v in classes.items()} == {c.name: c.value for c in PuntClass}
    modes = dict(re.findall(r"const bit<8> PACKET_OUT_(\w+)\s*=\s*(\d+);", text))
    assert {k: int(v) for k, v in modes.items()} == {m.name: m.value for m in PacketOutMode}
    assert f"#define PUNT_CLASS_COUNT {PUNT_CLASS_COUNT}" in text


def packet_in(p4info: P4Info, **values: int) -> p4runtime_pb2.PacketIn:
    names = ids(p4info, "packet_in")
    packet = p4runtime_pb2.PacketIn(payload=b"frame")
    for name, value in values.items():
        packet.metadata.add(metadata_id=names[name], value=codec.encode(value, 24))
    return packet


def test_packet_in_is_decoded_by_name(p4info):
    packet = packet_in(p4info, _pad=0, ingress_port=3, reason=2, vni=50000, _pad2=0, vlan=10)
    meta = decode_packet_in(p4info, packet)
    assert meta == PacketInMeta(ingress_port=3, reason=2, vni=50000, vlan=10)
    assert meta.punt_class is PuntClass.TTL_EXPIRED


def test_an_unknown_class_stays_readable_and_a_missing_port_is_refused(p4info):
    assert decode_packet_in(p4info, packet_in(p4info, ingress_port=1, reason=7)).punt_class is None
    with pytest.raises(ValueError, match="without ingress_port"):
        decode_packet_in(p4info, packet_in(p4info, reason=1))


def test_packet_out_metadata_is_canonical_and_named(p4info):
    names = ids(p4info, "packet_out")
    out = packet_out_metadata(p4info, PacketOutMode.ROUTE, vni=50000)
    assert out == {
        names["egress_port"]: b"\x00",
        names["_pad"]: b"\x00",
        names["mode"]: b"\x01",
        names["vni"]: (50000).to_bytes(2, "big"),
    }
    port = packet_out_metadata(p4info, PacketOutMode.PORT, egress_port=2)
    assert port[names["egress_port"]] == b"\x02"
    assert port[names["mode"]] == b"\x00"


@pytest.mark.parametrize(
    ("mode", "kwargs", "message"),
    [
        (PacketOutMode.FLOOD, {}, "FLOOD packet-out needs a VNI"),
        (PacketOutMode.PORT, {"egress_port": 512}, "egress_port"),
        (PacketOutMode.ROUTE, {"vni": 1 << 24}, "vni"),
    ],
)
def test_bad_packet_out_is_refused(p4info, mode, kwargs, message):
    with pytest.raises(ValueError, match=message):
        packet_out_metadata(p4info, mode, **kwargs)


def test_punt_policy_and_copp_meter_encode(p4info):
    e = PipelineEntries(p4info)
    entry = e.punt_policy(DropReason.TENANT_TTL_EXPIRED, PuntClass.TTL_EXPIRED)
    assert entry.table_id == p4info.table("punt_policy").preamble.id
    assert entry.match[0].exact.value == b"\x16"
    assert entry.action.action.params[0].value == b"\x02"
    meter = e.copp_meter(PuntClass.NO_ROUTE, pps=100, burst=10)
    assert (meter.index.index, meter.config.cir, meter.config.pburst) == (3, 100, 10)
    with pytest.raises(ValueError, match="punt class 8"):
        e.punt_policy(DropReason.NO_TENANT_ROUTE, 8)
    with pytest.raises(ValueError, match="nothing to punt"):
        e.punt_policy(0, PuntClass.NO_ROUTE)
    with pytest.raises(ValueError, match="must be positive"):
        e.copp_meter(PuntClass.NO_ROUTE, pps=0, burst=10)


def test_punt_counts_sum_the_two_counters(p4info):
    e = PipelineEntries(p4info)
    read = []
    for name, index, packets in (
        (PUNT_COUNTER, 2, 5),
        (COPP_DROP_COUNTER, 2, 3),
        (PUNT_COUNTER, 4, 1),
    ):
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.CopyFrom(e.counter(name, index))
        entity.counter_entry.data.packet_count = packets
        entity.counter_entry.data.byte_count = packets * 100
        read.append(entity)
    assert punt_counts(p4info, read) == {
        2: PuntCounts(5, 500, 3, 300),
        4: PuntCounts(1, 100, 0, 0),
    }
    assert [c.counter_id for c in e.punt_counters()] == [
        p4info.counter(PUNT_COUNTER).preamble.id,
        p4info.counter(COPP_DROP_COUNTER).preamble.id,
    ]
