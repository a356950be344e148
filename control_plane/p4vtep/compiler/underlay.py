"""Builder: the underlay. One ECMP group over every uplink, a /32 route to
every other ToR's VTEP and to every external VTEP (learned through EVPN, or
static) through it."""

from __future__ import annotations

from collections.abc import Iterable

from ..model.fabric import Fabric
from .encode import Encoder
from .switch_state import Encoded

ECMP_GROUP_ID = 1


def build(
    enc: Encoder, fabric: Fabric, tor_name: str, external: Iterable[str] = ()
) -> list[Encoded]:
    tor = fabric.tors[tor_name]
    out = [enc.next_hop_member(u.port + 1, u.port, u.next_hop_mac) for u in tor.uplinks]
    members = [u.port + 1 for u in tor.uplinks]
    out.append(enc.ecmp_group(ECMP_GROUP_ID, members, max_size=max(16, len(tor.uplinks))))
    out += [
        enc.underlay_route(other.vtep_ip, 32, group_id=ECMP_GROUP_ID)
        for other in sorted(fabric.tors.values(), key=lambda t: t.name)
        if other.name != tor_name
    ]
    out += [enc.underlay_route(ip, 32, group_id=ECMP_GROUP_ID) for ip in sorted(external)]
    return out
