"""Canonical P4Runtime byte strings.

P4Runtime (spec 8.3) defines one canonical encoding of a bitstring: big-endian
with no leading zero bytes (zero is a single 0x00). BMv2 returns values in that
form on read, so writing them in any other form makes read-back comparisons
fail forever.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

Value = int | str | bytes

_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")


class EncodingError(ValueError):
    """A value does not fit the field it is meant for."""


def mac_to_int(mac: str) -> int:
    if not _MAC_RE.match(mac):
        raise EncodingError(f"not a MAC address: {mac!r}")
    return _mac_digits_to_int(mac)


def _mac_digits_to_int(mac: str) -> int:
    """A string ``_MAC_RE`` matched, as its number."""
    return int(mac.replace(":", "").replace("-", ""), 16)


def int_to_mac(value: int) -> str:
    raw = value.to_bytes(6, "big")
    return ":".join(f"{b:02x}" for b in raw)


def to_int(value: Value, bitwidth: int) -> int:
    """Interpret an int, a MAC/IPv4/IPv6 string or raw bytes as an integer."""
    if type(value) is int:  # the common case first
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, bytes):
        return int.from_bytes(value, "big")
    if isinstance(value, str):
        return _str_to_int(value, bitwidth)
    raise EncodingError(f"cannot encode {type(value).__name__} {value!r}")


def _str_to_int(value: str, bitwidth: int) -> int:
    # A MAC first: its test is cheaper than the failed inet_pton (an
    # exception) it would otherwise go through.
    if len(value) == 17 and _MAC_RE.match(value):
        return _mac_digits_to_int(value)
    try:  # dotted-quad IPv4: as strict as ipaddress, 7x faster
        return int.from_bytes(socket.inet_pton(socket.AF_INET, value), "big")
    except OSError:
        pass
    if ":" in value:
        # IPv6 the same way: ipaddress's parser took a fifth of a dual-stack
        # ToR's compile (bench/NOTES.md, issue 37); what inet_pton refuses
        # (a scope id, say) is left to ipaddress below, as before.
        try:
            return int.from_bytes(socket.inet_pton(socket.AF_INET6, value), "big")
        except OSError:
            pass
    try:
        return int(ipaddress.ip_address(value))
    except ValueError:
        pass
    try:
        return int(value, 0)
    except ValueError as exc:
        raise EncodingError(f"cannot encode {value!r} as a {bitwidth}-bit value") from exc


def forget_parsed() -> None:
    """Empty the cache of encoded MAC/IP strings, as in a fresh process (a
    benchmark timing a controller start in a process that already encoded
    the same addresses would otherwise time a warm cache)."""
    _encode_str.cache_clear()


def encode(value: Value, bitwidth: int) -> bytes:
    """Canonical bytes for ``value`` in a field of ``bitwidth`` bits."""
    if type(value) is str:
        return _encode_str(value, bitwidth)
    return _encode_int(to_int(value, bitwidth), value, bitwidth)


@functools.lru_cache(maxsize=1 << 12)
def _encode_str(value: str, bitwidth: int) -> bytes:
    # Cached: a VM's MAC and IPs appear in several entries, built together.
    # (Callers that see a value again later keep its encoding themselves:
    # sized for every VM, this cache held about 40 MB with 100,000 VMs.)
    return _encode_int(_str_to_int(value, bitwidth), value, bitwidth)


def _encode_int(number: int, value: Value, bitwidth: int) -> bytes:
    if number < 0 or number >= (1 << bitwidth):
        raise EncodingError(f"{value!r} does not fit in {bitwidth} bits")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def decode(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def canonical(raw: bytes) -> bytes:
    """Strip leading zero bytes from a value read or built elsewhere."""
    stripped = raw.lstrip(b"\x00")
    return stripped or b"\x00"
