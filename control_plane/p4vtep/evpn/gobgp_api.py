"""GoBGP's gRPC API classes, compiled from GoBGP's own protos at install time.

``make deps`` (target ``gobgp-api``) runs grpc_tools.protoc over the protos
that Debian ships in golang-github-osrg-gobgp-dev (the same version as the
gobgpd daemon) and puts gobgp_pb2, attribute_pb2, capability_pb2 and
gobgp_pb2_grpc into the virtualenv. Nothing of GoBGP is committed here.
"""

from __future__ import annotations

import importlib
from typing import Any

from google.protobuf import any_pb2

PROTO_DIR = "/usr/share/gocode/src/github.com/osrg/gobgp/api"


def _load(name: str) -> Any:
    return importlib.import_module(name)


try:
    attribute_pb2: Any = _load("attribute_pb2")
    gobgp_pb2: Any = _load("gobgp_pb2")
    gobgp_pb2_grpc: Any = _load("gobgp_pb2_grpc")
    MISSING: str | None = None
except ImportError as exc:  # depends on the install
    MISSING = (
        f"GoBGP API classes are not installed ({exc}); run `make deps` "
        f"(needs gobgpd and golang-github-osrg-gobgp-dev, protos in {PROTO_DIR})"
    )
    attribute_pb2 = gobgp_pb2 = gobgp_pb2_grpc = None

__all__ = ["MISSING", "PROTO_DIR", "any_pb2", "attribute_pb2", "gobgp_pb2", "gobgp_pb2_grpc"]
