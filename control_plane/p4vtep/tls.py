"""gRPC TLS credentials from PEM files: the one place they are built (the
controller's P4Runtime sessions, the service API, the CLI)."""

from __future__ import annotations

from pathlib import Path

import grpc

from .model.fabric import TlsFiles


def channel_credentials(
    ca: str | Path, cert: str | Path | None = None, key: str | Path | None = None
) -> grpc.ChannelCredentials:
    """A client that verifies the server against ``ca`` and, when given,
    presents ``cert``/``key`` (mutual TLS)."""
    return grpc.ssl_channel_credentials(
        root_certificates=Path(ca).read_bytes(),
        private_key=Path(key).read_bytes() if key else None,
        certificate_chain=Path(cert).read_bytes() if cert else None,
    )


def client_credentials(files: TlsFiles) -> grpc.ChannelCredentials:
    """Mutual TLS as a client: present ``files.cert``, verify the server against ``files.ca``."""
    return channel_credentials(files.ca, files.cert, files.key)


def server_credentials(files: TlsFiles) -> grpc.ServerCredentials:
    """Mutual TLS as a server: serve ``files.cert``; require client
    certificates signed by ``files.ca``."""
    ca, cert, key = files.read()
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=True
    )
