"""The inputs that declare VMs (the inventory file, libvirt) with controller
replicas over etcd and two BMv2 ToRs: only the leader runs them, and a new
leader reads each one whole when it takes over, so what changed in it while
the old leader went away is applied then and reaches the switches.

Replicas run in this process (``Replica``), each with its own sources, as
``p4vtep controller run --etcd ... --inventory FILE`` builds them."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from etcd_cluster import etcd_cluster, needs_etcd
from helpers import wait_until
from libvirt_xml import NODE, domain
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.ha.replica import Replica, SourceFactory
from p4vtep.model.fabric import Fabric, Server, Vm
from p4vtep.sources.inventory_file import InventoryWatcher
from p4vtep.sources.libvirt_domains import LibvirtSource
from p4vtep.state.etcd_connection import EtcdSettings
from p4vtep.state.etcd_store import EtcdStateStore
from replica_harness import (
    fabric_yaml,
    find_leader,
    start_replica,
    switches_converged,
    wait_ready,
)
from switch_fabric import SwitchFabric, bmv2_fabric, needs_switch

pytestmark = [pytest.mark.etcd, needs_etcd(), *needs_switch()]

TTL, MARGIN = 2, 0.5  # a short lease: a resigned leader is followed at once anyway

A1 = Vm("a1", "02:0a:00:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
A2 = Vm("a2", "02:0a:00:00:00:02", ("192.168.1.2",), 5000, "s21", 20)
A3 = Vm("a3", "02:0a:00:00:00:03", ("192.168.1.3",), 5000, "s12", 30)
A4 = Vm("a4", "02:0a:00:00:00:04", ("192.168.1.4",), 5000, "s22", 40)


@pytest.fixture(scope="module")
def sf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwitchFabric]:
    with bmv2_fabric(tmp_path_factory.mktemp("bmv2")) as fabric:
        yield fabric


def write_inventory(path: Path, vms: list[Vm]) -> None:
    """Replace the file in one step, as config tools do."""
    doc = {
        "vms": [
            {
                "name": vm.name,
                "mac": vm.mac,
                "ips": list(vm.ips),
                "vni": vm.vni,
                "server": vm.server,
                "vlan": vm.vlan,
            }
            for vm in vms
        ]
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(doc))
    tmp.replace(path)


def stored(settings: EtcdSettings) -> dict[str, Vm]:
    """The VMs etcd holds now."""
    store = EtcdStateStore(settings, "checker")
    try:
        return dict(store.load().vms)
    finally:
        store.close()


class Replicas:
    """Replicas started in order (the first leads), each stopped once."""

    def __init__(self, fabric: Fabric, settings: EtcdSettings) -> None:
        self.fabric = fabric
        self.settings = settings
        self.running: list[Replica] = []

    def start(self, name: str, source: SourceFactory) -> Replica:
        replica = Replica(
            self.fabric,
            bmv2_pipeline(),
            self.settings,
            name,
            f"{name}:50051",
            ttl=TTL,
            margin=MARGIN,
            sources=[source],
        )
        replica.start()
        self.running.append(replica)
        return replica

    def stop(self, replica: Replica) -> None:
        self.running.remove(replica)
        replica.stop()  # resigns: the follower leads at once

    def stop_all(self) -> None:
        while self.running:
            self.stop(self.running[-1])


def failover(
    fabric: Fabric,
    settings: EtcdSettings,
    sources: tuple[SourceFactory, SourceFactory],
    before: set[str],
    edit: Callable[[], None],
    after: set[str],
    then: Callable[[], None] = lambda: None,
) -> None:
    """The first replica leads and applies its source (``before``); the
    second follows without running its own; ``edit`` changes the second's
    input in a way the first does not see (another copy of the file, a
    domain libvirt's test driver shows only to a new connection), then the
    first stops; the second leads and applies its input as it is now
    (``after``), and ``then`` runs while it leads. The switches
    hold each state in turn."""
    replicas = Replicas(fabric, settings)
    try:
        leader = replicas.start("r1", sources[0])
        assert wait_until(lambda: leader.leading, timeout=20)
        assert wait_until(lambda: set(stored(settings)) == before, timeout=20, interval=0.2)
        follower = replicas.start("r2", sources[1])
        assert wait_until(lambda: set(follower.controller.vms) == before, timeout=20)
        assert not follower.leading
        assert follower.sources == []  # its input is not run, only followed through etcd
        assert switches_converged(fabric, settings, timeout=30)

        edit()  # (before the leader goes: the follower may lead at once)
        replicas.stop(leader)
        assert wait_until(lambda: follower.leading, timeout=20)
        assert wait_until(lambda: len(follower.sources) == 1, timeout=10)
        assert wait_until(lambda: set(stored(settings)) == after, timeout=20, interval=0.2)
        assert switches_converged(fabric, settings, timeout=30)
        then()
    finally:
        replicas.stop_all()


def test_inventory_file_is_run_by_the_leader_and_read_again_by_the_next(
    sf: SwitchFabric, tmp_path: Path
) -> None:
    """Each replica reads its own copy of the file. Here the copies differ,
    so whose copy is applied shows who runs it: the leader's alone. An edit
    to a follower's copy waits until that follower leads, and the edits
    after that are applied as they come."""
    first, second = tmp_path / "r1.yaml", tmp_path / "r2.yaml"
    write_inventory(first, [A1, A2])
    write_inventory(second, [A1, A3])

    def watch(path: Path) -> SourceFactory:
        def make(controller: Controller) -> InventoryWatcher:
            return InventoryWatcher(controller, path, interval=0.05)

        return make

    with etcd_cluster(1) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix="/p4vtep-inventory")

        def next_edit() -> None:
            write_inventory(second, [A1, A4])
            assert wait_until(lambda: set(stored(settings)) == {"a1", "a4"}, 20, 0.2)
            assert switches_converged(sf.fabric, settings, timeout=30)

        failover(
            sf.fabric,
            settings,
            (watch(first), watch(second)),
            before={"a1", "a2"},
            edit=lambda: write_inventory(second, [A1, A3, A4]),
            after={"a1", "a3", "a4"},
            then=next_edit,
        )
        vms = stored(settings)
        assert vms["a4"] == A4  # (source "inventory", the default)


def test_libvirt_domains_are_read_again_by_a_new_leader(sf: SwitchFabric, tmp_path: Path) -> None:
    """Server s11's hypervisor is libvirt's test driver, its running domains
    in a node file each connection reads when it opens: a domain the old
    leader never saw is there for the new leader's first read."""
    pytest.importorskip("libvirt", reason="libvirt-python not installed")
    node = tmp_path / "s11.xml"

    def running(*domains: str) -> None:
        node.write_text(NODE.replace("</node>", "".join(domains) + "</node>"))

    web1 = domain("web-1", "52:54:00:aa:00:01", 11)
    web2 = domain("web-2", "52:54:00:aa:00:02", 12, ips=("192.168.1.12",))
    running(web1)
    fabric = copy.deepcopy(sf.fabric)
    s11 = fabric.servers["s11"]
    uris = {"s11": f"test://{node}"}
    fabric.servers["s11"] = Server(s11.name, s11.tor, s11.port, uris["s11"])

    def libvirt_source(controller: Controller) -> LibvirtSource:
        return LibvirtSource(controller, uris)

    with etcd_cluster(1) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix="/p4vtep-libvirt")
        failover(
            fabric,
            settings,
            (libvirt_source, libvirt_source),
            before={"web-1"},
            edit=lambda: running(web1, web2),
            after={"web-1", "web-2"},
        )
        vm = stored(settings)["web-2"]
        assert (vm.server, vm.vlan, vm.source) == ("s11", 12, "libvirt")


def test_controller_run_with_inventory_and_etcd(sf: SwitchFabric, tmp_path: Path) -> None:
    """``p4vtep controller run --etcd ... --inventory FILE`` as two processes,
    each with its own copy of the file: the leader's copy is applied; the
    leader killed (SIGKILL: its lease must expire), the other applies its
    copy when it takes over."""
    fabric_file = fabric_yaml(sf.fabric, tmp_path / "fabric.yaml")
    copies = [tmp_path / "r0.yaml", tmp_path / "r1.yaml"]
    write_inventory(copies[0], [A1, A2])
    write_inventory(copies[1], [A1, A3])
    with etcd_cluster(1) as cluster:
        settings = EtcdSettings(tuple(cluster.endpoints), prefix="/p4vtep-run-inventory")
        procs = [
            start_replica(
                fabric_file, settings, f"r{i}", tmp_path, TTL, MARGIN, ["--inventory", str(path)]
            )
            for i, path in enumerate(copies)
        ]
        try:
            wait_ready(procs)
            leader = find_leader(procs)
            mine = [A1, A2] if leader is procs[0] else [A1, A3]
            assert wait_until(
                lambda: stored(settings) == {vm.name: vm for vm in mine}, timeout=20, interval=0.2
            )
            assert switches_converged(sf.fabric, settings, timeout=30)
            leader.kill()
            other = next(p for p in procs if p is not leader)
            theirs = [A1, A3] if leader is procs[0] else [A1, A2]
            assert find_leader([other], timeout=30) is other
            assert wait_until(
                lambda: stored(settings) == {vm.name: vm for vm in theirs}, timeout=20, interval=0.2
            )
            assert switches_converged(sf.fabric, settings, timeout=30)
        finally:
            for proc in procs:
                proc.stop()
