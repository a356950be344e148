"""The CPU path's packet metadata (issue 39, p4src/include/control/cpu_port.p4).

What a packet-in says (why the frame was punted, where it came from) and
what a packet-out asks (send, route or flood), read and written by the
P4Info's metadata names, never by their ids, in P4Runtime's canonical bytes.
Mirrors the PUNT_CLASS_* and PACKET_OUT_* constants of
p4src/include/defines.p4 (a unit test compares them).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..runtime import codec
from ..runtime.p4info import P4Info
from ..runtime.protos import p4runtime_pb2

PACKET_IN = "packet_in"
PACKET_OUT = "packet_out"


class PuntClass(enum.IntEnum):
    """Why a frame went to the controller (packet_in.reason); each class has
    its CoPP meter and counters (index = class)."""

    L2_TRAP = 1  # an l2 entry traps the MAC (mac_table punt_to_cpu)
    TTL_EXPIRED = 2  # routed with IPv4 TTL or IPv6 hop limit <= 1
    NO_ROUTE = 3  # routed without a host or prefix route
    TO_GATEWAY = 4  # to a gateway IP, not answered by the data plane
    ROUTER_SOLICITATION = 5  # ICMPv6 RS from a VM in a routed VNI
    PACKET_TOO_BIG = 6  # routed IPv6 longer than its destination VNI's MTU


# Cells of the CoPP meter and counters (PUNT_CLASS_COUNT in defines.p4).
PUNT_CLASS_COUNT = 8


class PacketOutMode(enum.IntEnum):
    """What a packet-out asks (packet_out.mode)."""

    PORT = 0  # out of egress_port, untouched
    ROUTE = 1  # routed in VRF ``vni`` (its L3 VNI) as a VM's frame
    FLOOD = 2  # flooded in VNI ``vni`` as a VM's BUM frame


@dataclass(frozen=True)
class PacketInMeta:
    """A packet-in's metadata. ``reason`` is the punt class as sent (an int,
    so that a class this controller does not know stays readable);
    ``vni`` the VNI the frame was switched in (from the fabric: the one it
    arrived in, a VRF's L3 VNI for a routed frame); ``vlan`` the VF VLAN it
    came on (0 from the fabric). A pipeline without ``vni`` or ``vlan`` (a
    build before issue 39) gives 0."""

    ingress_port: int
    reason: int
    vni: int = 0
    vlan: int = 0

    @property
    def punt_class(self) -> PuntClass | None:
        """The reason as a known class, or None."""
        try:
            return PuntClass(self.reason)
        except ValueError:
            return None


def _fields(p4info: P4Info, header: str) -> dict[str, tuple[int, int]]:
    """name -> (metadata id, bit width) of a controller header."""
    meta = p4info.controller_packet_metadata(header)
    return {m.name: (m.id, m.bitwidth) for m in meta.metadata}


def decode_packet_in(p4info: P4Info, packet: p4runtime_pb2.PacketIn) -> PacketInMeta:
    """The metadata of ``packet``, by the P4Info's names. Raises ValueError
    when the port or the reason is missing."""
    names = {mid: name for name, (mid, _) in _fields(p4info, PACKET_IN).items()}
    values = {
        names[m.metadata_id]: codec.decode(m.value)
        for m in packet.metadata
        if m.metadata_id in names
    }
    missing = [name for name in ("ingress_port", "reason") if name not in values]
    if missing:
        raise ValueError(f"packet-in without {', '.join(missing)}")
    return PacketInMeta(
        ingress_port=values["ingress_port"],
        reason=values["reason"],
        vni=values.get("vni", 0),
        vlan=values.get("vlan", 0),
    )


def packet_out_metadata(
    p4info: P4Info, mode: PacketOutMode, egress_port: int = 0, vni: int = 0
) -> dict[int, bytes]:
    """The metadata of a packet-out (metadata id -> canonical bytes, what
    ``SwitchConnection.send_packet_out`` takes): PORT sends the frame out of
    ``egress_port`` as it is; ROUTE routes it in the VRF whose L3 VNI is
    ``vni`` (the frame untagged, its Ethernet source the anycast gateway
    MAC); FLOOD floods it in VNI ``vni``. Raises ValueError for a value out
    of range or a VNI missing, and when the pipeline knows only PORT (a
    build before issue 39) for another mode."""
    mode = PacketOutMode(mode)
    if mode is not PacketOutMode.PORT and not vni:
        raise ValueError(f"a {mode.name} packet-out needs a VNI")
    fields = _fields(p4info, PACKET_OUT)
    if mode is not PacketOutMode.PORT and not {"mode", "vni"} <= fields.keys():
        raise ValueError(f"this pipeline sends packet-outs to a port only (not {mode.name})")
    wanted = {"egress_port": egress_port, "mode": int(mode), "vni": vni}
    out = {}
    for name, (mid, bitwidth) in fields.items():
        try:
            out[mid] = codec.encode(wanted.get(name, 0), bitwidth)  # pads: 0
        except codec.EncodingError as exc:
            raise ValueError(f"packet-out {name}: {exc}") from exc
    return out
