"""Builder: the ToR's ports (access or fabric) and its VTEP identity."""

from __future__ import annotations

from ..dataplane.entries import PortRole
from ..model.fabric import Fabric
from .encode import Encoder
from .switch_state import Encoded


def build(enc: Encoder, fabric: Fabric, tor_name: str) -> list[Encoded]:
    tor = fabric.tors[tor_name]
    out = [
        enc.port_role(server.port, PortRole.ACCESS)
        for server in sorted(fabric.servers.values(), key=lambda s: s.port)
        if server.tor == tor_name
    ]
    out += [enc.port_role(uplink.port, PortRole.FABRIC) for uplink in tor.uplinks]
    out.append(enc.my_vtep(tor.vtep_ip))
    out.append(enc.local_vtep(tor.vtep_ip, tor.router_mac))  # keyless table's default
    return out
