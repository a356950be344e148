"""EtcdConnection.call without an etcd: what it leaves behind when every
try fails."""

from __future__ import annotations

import grpc
import pytest
from helpers import refusal_leaves_no_cycle
from p4vtep.state.etcd_connection import EtcdConnection, EtcdSettings
from p4vtep.state.protocol import StoreUnavailable
from p4vtep.switch.bmv2 import free_port


class MemberDown(grpc.RpcError):
    """What a call to a member that is down raises."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection refused"


def test_an_unavailable_store_leaves_no_reference_cycle() -> None:
    """After StoreUnavailable has been handled, what the caller's frame
    held is freed by reference counting alone: the last member's error,
    kept for the message, used to make a cycle with the frame that kept
    it, and through the frames behind it held the caller's (an API call's
    HTTP/2 stream, counted against the server's limit) until a collection."""
    nobody = f"127.0.0.1:{free_port()}"  # (diagnose() finds no member there)
    connection = EtcdConnection(
        EtcdSettings((nobody,), timeout=0.3, attempt_timeout=0.1, retry_member_after=0.0)
    )

    def down(channel: grpc.Channel, timeout: float) -> None:
        raise MemberDown()

    try:
        with pytest.raises(StoreUnavailable, match="connection refused"):
            connection.call("read the state", down)  # (the last member's error, named)
        assert refusal_leaves_no_cycle(
            lambda: connection.call("read the state", down), StoreUnavailable
        )
    finally:
        connection.close()
