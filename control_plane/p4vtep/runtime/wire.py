"""Protobuf messages assembled from parts that are already serialized.

On the wire, a message field is its tag, its length and its bytes, and a
repeated field is its elements one after another, so a message whose parts
were serialized once (an entity, a multicast replica) is built again by
concatenation, without parsing anything back into Python objects. The
write path uses this for every Update and WriteRequest; field numbers come
from the generated descriptors, never from literals.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_LENGTH_DELIMITED = 2  # wire type of bytes, strings and messages


def varint(number: int) -> bytes:
    """Base-128 varint of a non-negative integer (lengths, ids)."""
    if number < 0x80:
        return bytes((number,))
    out = bytearray()
    while number >= 0x80:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def tag(message: Any, field_name: str) -> bytes:
    """The tag of a length-delimited field of a generated message class."""
    field = message.DESCRIPTOR.fields_by_name[field_name]
    if field.type not in (field.TYPE_MESSAGE, field.TYPE_BYTES, field.TYPE_STRING):
        raise ValueError(f"{message.DESCRIPTOR.name}.{field_name} is not length-delimited")
    return varint(field.number << 3 | _LENGTH_DELIMITED)


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]  # the varints of 0-127


def wrap(field_tag: bytes, payload: bytes) -> bytes:
    """One length-delimited field holding ``payload``."""
    length = len(payload)
    return field_tag + (_ONE_BYTE[length] if length < 0x80 else varint(length)) + payload


_SHORT = [varint(n) for n in range(1 << 14)]  # the varints of lengths under 16 KiB


def wrap_all(field_tag: bytes, payloads: Iterable[bytes], prefix: bytes = b"") -> list[bytes]:
    """``prefix`` followed by ``wrap(field_tag, payload)``, for each payload:
    one comprehension and a table of lengths, since the write path wraps
    every entity of a switch this way (a call per entity costs more than
    the wrapping)."""
    short = _SHORT
    return [
        prefix + field_tag + short[len(p)] + p if len(p) < 0x4000 else prefix + wrap(field_tag, p)
        for p in payloads
    ]
