"""Between P4Runtime's stream and the responder: a packet-in as a
``PuntedFrame``, an ``Emit`` as a packet-out's payload and metadata, both by
the ToR's P4Info names (dataplane/packet_io.py)."""

from __future__ import annotations

from ..dataplane.packet_io import decode_packet_in, packet_out_metadata
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2
from .frames import Emit, PuntedFrame


def punted(p4info: P4Info, tor: str, packet: p4runtime_pb2.PacketIn) -> PuntedFrame:
    """Raises ValueError for a packet-in without its port or reason."""
    meta = decode_packet_in(p4info, packet)
    return PuntedFrame(tor, meta.reason, meta.ingress_port, meta.vni, meta.vlan, packet.payload)


def packet_out(p4info: P4Info, emit: Emit) -> tuple[bytes, dict[int, bytes]]:
    """What ``Supervisor.send_packet_out`` takes: the payload and the
    metadata by id. Raises ValueError when the pipeline cannot send it (a
    build before issue 39 knows PORT only)."""
    return emit.frame, packet_out_metadata(p4info, emit.mode, emit.egress_port, emit.vni)
