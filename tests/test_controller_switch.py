"""The controller against two real BMv2 ToRs: attach, read back, forward,
restart the controller (zero writes), restart a switch (state restored),
migrate a VM (traffic follows)."""

from __future__ import annotations

import time

import pytest
from helpers import wait_until
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Vm
from p4vtep.runtime import entities
from p4vtep.runtime.client import SwitchConnection
from p4vtep.state.sqlite_store import Store
from switch_fabric import (
    A1,
    A2,
    B1,
    bmv2_fabric,
    delivered,
    frame,
    needs_switch,
    start_controller,
)

pytestmark = needs_switch()


@pytest.fixture(scope="module")
def sf(tmp_path_factory):
    with bmv2_fabric(tmp_path_factory.mktemp("bmv2")) as fabric:
        yield fabric


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "state.db"


def read_table(sf, tor: str, table: str) -> list:
    pipeline = bmv2_pipeline()
    with SwitchConnection(
        sf.switches[tor].grpc_address, sf.fabric.tors[tor].device_id, election_id=0
    ) as conn:
        query = entities.table_entry(pipeline.p4info, table)
        return [e.table_entry for e in conn.read(query)]


def test_attach_reads_back_and_forwards(sf, store_path):
    controller = start_controller(sf, store_path, [A1, A2, B1])
    try:
        pipeline = bmv2_pipeline()
        e = controller.entries
        bindings = read_table(sf, "tor1", "access_binding")
        assert sorted(b.SerializeToString() for b in bindings) == sorted(
            # (port security on: the default; the binding holds the VM's IPv4
            # address, BMv2's short-cut past the source guard)
            e.access_binding(p, v, vni, i, mac, guarded=True, ipv4=ip).SerializeToString()
            for p, v, vni, i, mac, ip in [
                (1, 10, 5000, controller.alloc.vm_space("tor1").peek("a1"), A1.mac, A1.ips[0]),
                (2, 30, 6000, controller.alloc.vm_space("tor1").peek("b1"), B1.mac, B1.ips[0]),
            ]
        )
        macs = read_table(sf, "tor2", "mac_table")
        assert e.mac_to_remote_vtep(5000, A1.mac, "10.0.0.1").SerializeToString() in [
            m.SerializeToString() for m in macs
        ]
        assert pipeline.p4info.alias_of(macs[0].table_id) == "mac_table"
        assert delivered(sf, A1, A2)
        assert delivered(sf, A2, A1)
    finally:
        controller.stop()


def test_controller_restart_writes_nothing(sf, store_path):
    first = start_controller(sf, store_path, [A1, A2, B1])
    first.stop()
    second = start_controller(sf, store_path)
    try:
        assert {n: s.status.writes for n, s in second.supervisors.items()} == {"tor1": 0, "tor2": 0}
        assert set(second.vms) == {"a1", "a2", "b1"}
        assert delivered(sf, A1, A2)
    finally:
        second.stop()


def test_switch_restart_is_restored(sf, store_path):
    controller = start_controller(sf, store_path, [A1, A2])
    try:
        sf.switches["tor2"].restart()
        tor2 = controller.supervisors["tor2"]
        assert wait_until(
            lambda: (
                tor2.status.reconciles >= 1
                and tor2.status.connected
                and tor2.status.writes > 0
                and delivered(sf, A1, A2)
            ),
            timeout=30,
        )
    finally:
        controller.stop()


def test_migration_moves_traffic(sf, store_path):
    controller = start_controller(sf, store_path, [A1, A2])
    try:
        assert delivered(sf, A1, A2)
        controller.migrate("a2", "s12", vlan=21)
        assert controller.wait_converged(30)
        assert delivered(sf, A1, A2, dst_server="s12", dst_vlan=21)
        assert not delivered(sf, A1, A2, tag=1)  # nothing left at the old place
    finally:
        controller.stop()


def test_api_attach_counters_and_cli(sf, store_path, capsys):
    import grpc
    from p4vtep.api import overlay_pb2 as pb
    from p4vtep.api import overlay_pb2_grpc as pb_grpc
    from p4vtep.api.messages import vm_to_pb
    from p4vtep.api.server import serve
    from p4vtep.cli import main as cli_main
    from p4vtep.switch.bmv2 import free_port

    controller = start_controller(sf, store_path)
    address = f"127.0.0.1:{free_port()}"
    server = serve(controller, address)
    try:
        client = pb_grpc.OverlayStub(grpc.insecure_channel(address))
        for vm in (A1, A2):
            reply = client.AttachVM(pb.AttachVMRequest(wait=True, vm=vm_to_pb(vm)))
            assert reply.applied

        def read():
            reply = client.GetCounters(pb.GetCountersRequest(vms=["a1", "a2"], vnis=[5000]))
            vms = {c.name: c for c in reply.vms}
            vnis = {(c.vni, c.tor): c for c in reply.vnis}
            return vms, vnis

        # The switches are shared by this module's tests: compare before/after.
        vms0, vnis0 = read()
        sent = 3
        for i in range(sent):
            assert delivered(sf, A1, A2, tag=i)
        vms1, vnis1 = read()
        assert vms1["a1"].tor == "tor1"
        assert vms1["a2"].tor == "tor2"
        assert vms1["a1"].tx.packets - vms0["a1"].tx.packets == sent
        assert vms1["a2"].rx.packets - vms0["a2"].rx.packets == sent
        # BMv2 byte counters count the packet as it entered the switch: here
        # the VXLAN packet (frame - VF tag + 50 bytes of outer headers).
        assert vms1["a2"].rx.bytes - vms0["a2"].rx.bytes == sent * (len(frame(A1, A2)) - 4 + 50)
        assert vnis1[(5000, "tor1")].tx.packets - vnis0[(5000, "tor1")].tx.packets == sent
        assert vnis1[(5000, "tor2")].rx.packets - vnis0[(5000, "tor2")].rx.packets == sent
        switches = client.ListSwitches(pb.ListSwitchesRequest()).switches
        assert all(s.connected and s.primary and s.pipeline_cookie for s in switches)
        capsys.readouterr()
        assert cli_main(["--api", address, "counters", "--vm", "a2"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[2].split()[:2] == ["a2", "tor2"]
        assert out[2].split()[4] == str(vms1["a2"].rx.packets)
    finally:
        server.stop(0)
        controller.stop()


def test_drift_is_repaired(sf, store_path):
    controller = Controller(sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=0.5)
    controller.start()
    try:
        controller.attach(A1)
        controller.attach(A2)
        assert controller.wait_converged(30)
        e = controller.entries
        index = controller.alloc.vm_space("tor1").peek("a1")
        binding = e.access_binding(1, A1.vlan, A1.vni, index, A1.mac, guarded=True, ipv4=A1.ips[0])
        controller.supervisors["tor1"].conn.delete(binding)  # behind the reconciler's back
        assert wait_until(
            lambda: (
                binding.SerializeToString()
                in [b.SerializeToString() for b in read_table(sf, "tor1", "access_binding")]
            ),
            timeout=10,
        )
        assert delivered(sf, A1, A2)
    finally:
        controller.stop()


def test_backup_takes_over_and_finishes_pending_changes(sf, store_path, tmp_path):
    primary = start_controller(sf, store_path, [A1, A2], election_id=10)
    backup = Controller(
        sf.fabric,
        bmv2_pipeline(),
        Store(tmp_path / "backup.db"),
        election_id=5,
        resync_seconds=3600,
    )
    backup.start()
    try:
        for vm in (A1, A2):
            backup.attach(vm)
        assert wait_until(lambda: all(s.status.connected for s in backup.supervisors.values()))
        assert not any(s.status.primary for s in backup.supervisors.values())
        # A change only the backup knows of: pending until it is primary.
        backup.attach(B1)
        time.sleep(1)
        assert all(s.status.writes == 0 for s in backup.supervisors.values())
        assert not any(
            b.match[1].exact.value == b"\x1e" for b in read_table(sf, "tor1", "access_binding")
        )
        started = time.monotonic()
        primary.stop()
        assert backup.wait_converged(30)
        failover = time.monotonic() - started
        assert all(s.status.primary for s in backup.supervisors.values())
        assert any(
            b.match[1].exact.value == b"\x1e"  # b1's VLAN 30
            for b in read_table(sf, "tor1", "access_binding")
        )
        assert delivered(sf, A1, A2)
        print(f"failover to backup and pending change applied in {failover:.2f} s")
    finally:
        primary.stop()
        backup.stop()


def test_reconciled_events_carry_the_counts(sf, store_path):
    from p4vtep.events import Reconciled

    controller = Controller(sf.fabric, bmv2_pipeline(), Store(store_path), resync_seconds=3600)
    seen = controller.bus.subscribe()
    controller.start()
    try:
        assert controller.wait_converged(30)
        # A VM no other test uses, so the switch must get new entries for it.
        controller.attach(Vm("c9", "00:00:0c:00:00:09", ("192.168.9.9",), 5000, "s11", 99))
        assert controller.wait_converged(30)
        reconciled = []
        while not seen.empty():
            event = seen.get()
            if isinstance(event, Reconciled):
                reconciled.append(event)
        assert any(e.switch == "tor1" and e.inserts > 0 and e.seconds >= 0 for e in reconciled)
        assert all(e.at > 1e9 for e in reconciled)  # a wall-clock time, not a count
    finally:
        controller.stop()
