"""What differs between the switch targets p4vtep compiles for, in one place.

The P4 side keeps its copy in p4src/v1model/arch.p4 and p4src/tna/arch.p4;
tests/test_tofino_outputs.py checks the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Target(str, Enum):
    BMV2 = "bmv2"  # simple_switch_grpc, v1model
    TOFINO = "tofino"  # Tofino 1, TNA
    TOFINO2 = "tofino2"  # Tofino 2, T2NA

    @classmethod
    def parse(cls, value: str) -> Target:
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(t.value for t in cls)
            raise ValueError(f"unknown target {value!r} (one of: {choices})") from None


@dataclass(frozen=True)
class TargetProfile:
    target: Target
    cpu_port: int  # where packet-in leaves and packet-out enters
    meter_yellow: int  # colour values the data plane's meters produce
    meter_red: int
    p4c_target: str  # p4c-tofino --target / p4c --target
    p4c_arch: str


PROFILES: dict[Target, TargetProfile] = {
    Target.BMV2: TargetProfile(Target.BMV2, 255, 1, 2, "bmv2", "v1model"),
    # The PCIe CPU port of pipe 0 on Tofino 1; port 2 in the Tofino 2 model's
    # usual port setup (a real Tofino 2 board may differ: see docs/tofino.md).
    Target.TOFINO: TargetProfile(Target.TOFINO, 64, 1, 3, "tofino", "tna"),
    Target.TOFINO2: TargetProfile(Target.TOFINO2, 2, 1, 3, "tofino2", "t2na"),
}


def profile(target: Target | str) -> TargetProfile:
    return PROFILES[Target.parse(target) if isinstance(target, str) else target]
