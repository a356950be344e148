"""The P4Runtime p4_device_config for the open-source Tofino P4Runtime server.

bf_switchd --p4rt-server hands SetForwardingPipelineConfig's p4_device_config
to bf-drivers' PI backend (open-p4studio, pkgsrc/bf-drivers/src/pi/pi_imp.c,
_pi_update_device_start), which reads length-prefixed chunks, each length a
32-bit integer in the switch CPU's byte order (PI's retrieve_uint32 is a
memcpy; x86, so little-endian):

    program name | <chip>.bin | context.json | pipeline name | bf-rt.json

The server reads the pipeline-name length unconditionally; a zero length means
"no pipeline name and no bf-rt.json". Stratum takes a different message
(BfPipelineConfig): see docs/tofino.md.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# _PI_UPDATE_MAX_NAME_SIZE in the server: longer names are refused.
MAX_NAME_BYTES = 100
_LENGTH = struct.Struct("<I")


class DeviceConfigError(ValueError):
    pass


@dataclass(frozen=True)
class TofinoDeviceConfig:
    program_name: str
    binary: bytes  # pipe/tofino.bin or pipe/tofino2.bin
    context_json: bytes  # pipe/context.json
    pipeline_name: str = "pipe"  # the Pipeline instance in the P4 program
    bfrt_json: bytes | None = None  # bf-rt.json; needed with a pipeline name

    def pack(self) -> bytes:
        _check_name("program name", self.program_name, allow_empty=False)
        _check_name("pipeline name", self.pipeline_name, allow_empty=True)
        if not self.binary or not self.context_json:
            raise DeviceConfigError("the Tofino binary and context.json must not be empty")
        if bool(self.pipeline_name) != (self.bfrt_json is not None):
            raise DeviceConfigError("a pipeline name and bf-rt.json go together, or neither")
        chunks = [self.program_name.encode(), self.binary, self.context_json]
        if self.pipeline_name:
            assert self.bfrt_json is not None
            chunks += [self.pipeline_name.encode(), self.bfrt_json]
        else:
            chunks.append(b"")
        out = bytearray()
        for chunk in chunks:
            if len(chunk) >= 1 << 32:
                raise DeviceConfigError("a chunk is 4 GiB or larger")
            out += _LENGTH.pack(len(chunk)) + chunk
        return bytes(out)

    @classmethod
    def unpack(cls, data: bytes) -> TofinoDeviceConfig:
        """The inverse of pack, with the server's own limits (for read-back)."""
        reader = _Reader(data)
        program = reader.chunk().decode()
        binary = reader.chunk()
        context = reader.chunk()
        pipeline = reader.chunk().decode()
        bfrt = reader.chunk() if pipeline else None
        if not reader.done():
            raise DeviceConfigError(f"{len(data) - reader.offset} bytes after the last chunk")
        config = cls(program, binary, context, pipeline, bfrt)
        _check_name("program name", program, allow_empty=False)
        _check_name("pipeline name", pipeline, allow_empty=True)
        return config


def _check_name(what: str, name: str, *, allow_empty: bool) -> None:
    raw = name.encode()
    if not raw and not allow_empty:
        raise DeviceConfigError(f"the {what} must not be empty")
    if len(raw) > MAX_NAME_BYTES:
        raise DeviceConfigError(f"the {what} is {len(raw)} bytes; the server takes at most 100")
    if b"\0" in raw or b"/" in raw:
        # The server makes temporary file names from the program name.
        raise DeviceConfigError(f"the {what} {name!r} has a NUL or '/'")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def chunk(self) -> bytes:
        if self.offset + _LENGTH.size > len(self.data):
            raise DeviceConfigError(f"truncated: no chunk length at byte {self.offset}")
        (length,) = _LENGTH.unpack_from(self.data, self.offset)
        start = self.offset + _LENGTH.size
        if start + length > len(self.data):
            raise DeviceConfigError(f"truncated: a {length}-byte chunk at byte {start}")
        self.offset = start + length
        return self.data[start : self.offset]

    def done(self) -> bool:
        return self.offset == len(self.data)
