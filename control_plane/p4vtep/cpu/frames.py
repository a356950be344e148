"""What the CPU path takes and gives: a punted frame with its packet-in
metadata, and a frame to send with its packet-out metadata, both as plain
values (the glue converts them from and to P4Runtime's StreamMessages)."""

from __future__ import annotations

from dataclasses import dataclass

from ..dataplane.packet_io import PacketOutMode, PuntClass

__all__ = ["Emit", "EmitMode", "Ignored", "PuntClass", "PuntedFrame"]


@dataclass(frozen=True)
class PuntedFrame:
    """A packet-in: ``vlan`` is the VF tag it came with (0: from the fabric,
    decapsulated, ``vni`` then the VNI it arrived in, a VRF's L3 VNI for a
    routed frame); ``frame`` is the Ethernet frame as the pipeline held it
    (from an access port still tagged), possibly truncated."""

    tor: str
    punt_class: int
    ingress_port: int
    vni: int
    vlan: int
    frame: bytes


# packet_out's ``mode``: PORT (out of ``egress_port`` as it is, the frame
# carrying the VF tag), ROUTE (routed by ingress in the VRF whose L3 VNI is
# ``vni``), FLOOD (into VNI ``vni``'s flood group).
EmitMode = PacketOutMode


@dataclass(frozen=True)
class Emit:
    """A packet-out for ``tor``."""

    tor: str
    mode: EmitMode
    egress_port: int  # PORT mode; 0 otherwise
    vni: int  # ROUTE: the VRF's L3 VNI; FLOOD: the VNI; 0 for PORT
    frame: bytes


class Ignored(Exception):
    """A punted frame that gets no answer, and why (a counter's label:
    short, lower case, no numbers)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why
