"""The P4Runtime protobuf modules, on the fast (upb) protobuf runtime.

The ``p4runtime`` PyPI package ships ``_pb2`` modules made by an old protoc,
which current protobuf runtimes refuse to import (short of falling back to
the pure-Python runtime, about ten times slower at encoding entries).
``make proto`` (run by ``make deps``) generates modern modules from that
package's descriptors into ``p4vtep.runtime.generated`` (not committed; see
tools/gen_p4runtime_protos.py). ``google.rpc`` is used as shipped.

Import the protos from here, never from ``p4.*`` directly:

    from p4vtep.runtime.protos import p4runtime_pb2, p4info_pb2, p4runtime_pb2_grpc
"""

from __future__ import annotations

from google.rpc import code_pb2, status_pb2

try:
    from .generated.p4.config.v1 import p4info_pb2, p4types_pb2
    from .generated.p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc
except ModuleNotFoundError as exc:  # pragma: no cover - a setup error, not a code path
    raise ImportError(
        "the P4Runtime Python modules are not generated: run 'make proto' "
        "(or tools/gen_p4runtime_protos.py)"
    ) from exc

__all__ = [
    "code_pb2",
    "p4data_pb2",
    "p4info_pb2",
    "p4runtime_pb2",
    "p4runtime_pb2_grpc",
    "p4types_pb2",
    "status_pb2",
]
