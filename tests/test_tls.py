"""Mutual TLS on the P4Runtime sessions and the service API, with
certificates made by the test; a client without a valid certificate is
refused."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from fabric_fixture import two_tor_fabric
from p4vtep import tls
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.api.server import serve, server_credentials
from p4vtep.cli import main as cli_main
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Fabric, TlsFiles, Tor, Uplink
from p4vtep.runtime.client import P4RuntimeError, SwitchConnection
from p4vtep.state.sqlite_store import Store
from p4vtep.switch.bmv2 import Bmv2Switch, find_simple_switch_grpc, free_port

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="openssl not found: TLS tests skipped"
)


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d: Path, name: str) -> None:
    openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.pem",
        cwd=d,
    )


def make_cert(d: Path, ca: str, name: str, server: bool) -> None:
    openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        f"/CN={name}",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.csr",
        cwd=d,
    )
    ext = d / f"{name}.ext"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n" if server else "extendedKeyUsage=clientAuth\n"
    )
    openssl(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        f"{ca}.pem",
        "-CAkey",
        f"{ca}.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        f"{name}.pem",
        "-extfile",
        ext.name,
        cwd=d,
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    make_ca(d, "ca")
    make_ca(d, "rogue-ca")
    make_cert(d, "ca", "server", server=True)
    make_cert(d, "ca", "client", server=False)
    make_cert(d, "rogue-ca", "rogue", server=False)
    return d


def files(d: Path, who: str, ca: str = "ca") -> TlsFiles:
    return TlsFiles(str(d / f"{ca}.pem"), str(d / f"{who}.pem"), str(d / f"{who}.key"))


def channel_credentials(d: Path, who: str | None) -> grpc.ChannelCredentials:
    if who is None:
        return tls.channel_credentials(d / "ca.pem")
    return tls.client_credentials(files(d, who))


def test_api_requires_a_client_certificate(pki, tmp_path):
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    address = f"127.0.0.1:{free_port()}"
    server = serve(controller, address, credentials=server_credentials(files(pki, "server")))
    try:
        good = pb_grpc.OverlayStub(grpc.secure_channel(address, channel_credentials(pki, "client")))
        assert good.ListVMs(pb.ListVMsRequest(), timeout=5).vms == []
        for who in (None, "rogue"):
            bad = pb_grpc.OverlayStub(grpc.secure_channel(address, channel_credentials(pki, who)))
            with pytest.raises(grpc.RpcError) as info:
                bad.ListVMs(pb.ListVMsRequest(), timeout=5)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        plain = pb_grpc.OverlayStub(grpc.insecure_channel(address))
        with pytest.raises(grpc.RpcError):
            plain.ListVMs(pb.ListVMsRequest(), timeout=5)
    finally:
        server.stop(0)


def test_cli_talks_mutual_tls_to_the_api(pki, tmp_path, capsys):
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    address = f"127.0.0.1:{free_port()}"
    server = serve(controller, address, credentials=server_credentials(files(pki, "server")))
    client = files(pki, "client")
    try:
        argv = ["--api", address, "--ca", client.ca, "--cert", client.cert, "--key", client.key]
        assert cli_main([*argv, "status"]) == 0
        assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:]] == [
            "tor1",
            "tor2",
        ]
    finally:
        server.stop(0)


@pytest.mark.switch
@pytest.mark.skipif(
    find_simple_switch_grpc() is None,
    reason="simple_switch_grpc not found: P4Runtime TLS test skipped",
)
def test_p4runtime_over_mutual_tls(pki, tmp_path):
    switch = Bmv2Switch(
        "tls", 1, free_port(), free_port(), log_dir=tmp_path, tls=files(pki, "server")
    )
    switch.start()
    try:
        with SwitchConnection(
            switch.grpc_address, 1, 1, credentials=channel_credentials(pki, "client")
        ) as conn:
            assert conn.connect(timeout=5)
        for who in (None, "rogue"):
            with (
                SwitchConnection(
                    switch.grpc_address, 1, 2, credentials=channel_credentials(pki, who)
                ) as conn,
                pytest.raises((grpc.FutureTimeoutError, P4RuntimeError)),
            ):
                conn.connect(timeout=3)
        # The controller, configured through the fabric, converges over TLS.
        fabric = Fabric(
            tors={
                "tor1": Tor(
                    "tor1",
                    switch.grpc_address,
                    1,
                    "10.0.0.1",
                    "00:aa:00:00:00:01",
                    (Uplink(3, "00:5e:00:00:01:01"),),
                )
            },
            vnis=two_tor_fabric().vnis,
            p4runtime_tls=files(pki, "client"),
        )
        controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
        controller.start()
        try:
            assert controller.wait_converged(30)
            status = controller.supervisors["tor1"].status
            assert status.connected
            assert status.primary
            assert status.writes > 0
        finally:
            controller.stop()
    finally:
        switch.stop()
