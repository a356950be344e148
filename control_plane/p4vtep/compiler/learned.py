"""What the fabric learned about VTEPs that are not its own (BGP EVPN routes
and the fabric file's static VTEPs), as the compiler takes it: which MACs
live behind which external VTEP (with their IPs, for ARP suppression) and
which external VTEPs want each VNI's BUM traffic (head-end replication).

Pure values; ``evpn.controller_link`` builds them from ``EvpnView``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LearnedMac:
    vni: int
    mac: str
    vtep: str  # an external VTEP's IP
    ips: tuple[str, ...] = ()


@dataclass(frozen=True)
class Learned:
    macs: Mapping[int, Mapping[str, LearnedMac]] = field(default_factory=dict)  # VNI -> MAC ->
    flood: Mapping[int, frozenset[str]] = field(default_factory=dict)  # VNI -> external VTEPs

    @classmethod
    def of(
        cls, macs: Iterable[LearnedMac], flood: Mapping[int, Iterable[str]] | None = None
    ) -> Learned:
        by_vni: dict[int, dict[str, LearnedMac]] = {}
        for mac in macs:
            by_vni.setdefault(mac.vni, {})[mac.mac] = mac
        flood_sets = {vni: frozenset(vteps) for vni, vteps in (flood or {}).items() if vteps}
        return cls(by_vni, flood_sets)

    def holds(self, vni: int, mac: str) -> bool:
        """Whether a remote VTEP holds the MAC (for one of our VMs: it moved away)."""
        macs = self.macs.get(vni)
        return macs is not None and mac in macs

    def vteps(self) -> frozenset[str]:
        """Every external VTEP named: each gets an underlay route on every ToR."""
        out = {m.vtep for macs in self.macs.values() for m in macs.values()}
        return frozenset(out.union(*self.flood.values()))

    def flood_vteps(self) -> frozenset[str]:
        """External VTEPs in some VNI's flood list: each needs a replica id."""
        return frozenset().union(*self.flood.values())


NOTHING = Learned()
