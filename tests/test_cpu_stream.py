"""The thin glue between P4Runtime's stream and the responder, on the BMv2
P4Info: a packet-in decoded by name into a PuntedFrame, answered, and the
answer's packet-out metadata as the pipeline names it."""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from fabric_fixture import ANYCAST_MAC, L3VNI, TOR1_RMAC, dual_stack_fabric, dual_stack_vms
from p4vtep.cpu.frames import Emit, EmitMode, PuntClass
from p4vtep.cpu.responder import Responder
from p4vtep.cpu.stream import packet_out, punted
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Fabric, Vm
from p4vtep.runtime import codec
from p4vtep.runtime.protos import p4runtime_pb2
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

P4INFO = bmv2_pipeline().p4info


@dataclass(frozen=True)
class View:
    version: int
    fabric: Fabric
    vms: dict[str, Vm]


def metadata_ids(header: str) -> dict[str, tuple[int, int]]:
    meta = P4INFO.controller_packet_metadata(header)
    return {m.name: (m.id, m.bitwidth) for m in meta.metadata}


def packet_in(frame: bytes, **values: int) -> p4runtime_pb2.PacketIn:
    packet = p4runtime_pb2.PacketIn(payload=frame)
    for name, (mid, bitwidth) in metadata_ids("packet_in").items():
        packet.metadata.add(metadata_id=mid, value=codec.encode(values.get(name, 0), bitwidth))
    return packet


def decoded_out(metadata: dict[int, bytes]) -> dict[str, int]:
    names = {mid: name for name, (mid, _) in metadata_ids("packet_out").items()}
    return {names[mid]: codec.decode(value) for mid, value in metadata.items()}


def responder(sent: list[Emit]) -> Responder:
    vms = {vm.name: vm for vm in dual_stack_vms()}
    view = View(1, dual_stack_fabric(), vms)
    return Responder(view, sent.append, lambda tor: True, rng=Random(3))


def test_a_packet_in_from_a_vf_is_answered_out_of_its_port() -> None:
    sent: list[Emit] = []
    probe = IP(src="192.168.1.1", dst="10.1.2.3", ttl=1) / UDP()
    frame = bytes(Ether(src="00:00:0a:00:00:01", dst=ANYCAST_MAC) / Dot1Q(vlan=10) / probe)
    packet = packet_in(frame, ingress_port=1, reason=PuntClass.TTL_EXPIRED, vni=5000, vlan=10)
    (emit,) = responder(sent).handle(punted(P4INFO, "tor1", packet))
    payload, metadata = packet_out(P4INFO, emit)
    assert payload == emit.frame
    assert decoded_out(metadata) == {"egress_port": 1, "_pad": 0, "mode": 0, "vni": 0}
    assert Ether(payload)[ICMP].type == 11


def test_a_packet_in_from_the_fabric_is_answered_routed_in_its_vrf() -> None:
    sent: list[Emit] = []
    probe = IP(src="192.168.2.1", dst="10.1.2.3", ttl=1) / UDP()
    frame = bytes(Ether(src="00:aa:00:00:00:02", dst=TOR1_RMAC) / probe)
    packet = packet_in(frame, ingress_port=3, reason=PuntClass.TTL_EXPIRED, vni=L3VNI, vlan=0)
    (emit,) = responder(sent).handle(punted(P4INFO, "tor1", packet))
    assert emit.mode is EmitMode.ROUTE
    _, metadata = packet_out(P4INFO, emit)
    assert decoded_out(metadata) == {"egress_port": 0, "_pad": 0, "mode": 1, "vni": L3VNI}
