"""Link speeds as operators write them ("10G", "100M", 2500000000) and as
p4vtep prints them. SI prefixes, bits per second: a NIC's speed. (QoS rates
and bursts stay in bytes per second and bytes, as RFC 2698 and P4Runtime's
meter configuration count them.)"""

from __future__ import annotations

import re

_PREFIXES = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKMGT]?)\s*(?:bit/s|bps|b/s)?\s*$")


def parse_bit_rate(value: object) -> int:
    """Bits per second from an integer or a string such as "10G", "2.5G",
    "100 Mbit/s"; ValueError says what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"expected a rate such as 10G or 100M, got {value!r}")
    if isinstance(value, int):
        bps = value
    elif isinstance(value, str) and (match := _RATE_RE.match(value)):
        bps = round(float(match.group(1)) * _PREFIXES[match.group(2)])
    else:
        raise ValueError(f"expected a rate such as 10G or 100M (bit/s), got {value!r}")
    if bps <= 0:
        raise ValueError(f"a link rate must be positive, got {value!r}")
    return bps


def format_bit_rate(bps: float) -> str:
    """E.g. 10 Gbit/s, 2.5 Gbit/s, 100 Mbit/s, 1.2 kbit/s."""
    for prefix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {prefix}bit/s"
    return f"{bps:.3g} bit/s"
