"""VM bindings from libvirt's test driver (the real libvirt API, no daemon)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace

import pytest
from fabric_fixture import two_tor_fabric
from fake_p4runtime import FakeP4RuntimeServer
from helpers import FixedLeadership, wait_until
from libvirt_xml import NODE, domain
from p4vtep.controller import Controller
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.model.fabric import Server
from p4vtep.sources.libvirt_domains import MetadataError, parse_domain
from p4vtep.state.sqlite_store import Store

libvirt = pytest.importorskip(
    "libvirt", reason="libvirt-python not installed: libvirt tests skipped"
)


def test_parse_domain():
    vm = parse_domain(domain("web-1", "52:54:00:AA:00:01", 10), "s11")
    assert (vm.name, vm.mac, vm.vlan, vm.vni, vm.ips, vm.server, vm.source) == (
        "web-1",
        "52:54:00:aa:00:01",
        10,
        5000,
        ("192.168.1.10",),
        "s11",
        "libvirt",
    )
    assert parse_domain("<domain><name>plain</name></domain>", "s11") is None
    with pytest.raises(MetadataError, match="domain web-1 on s11: vni: expected a number"):
        parse_domain(
            domain("web-1", "52:54:00:aa:00:01", 10, meta="<p4vtep:vni>x</p4vtep:vni>"), "s11"
        )


@contextlib.contextmanager
def running_source(tmp_path, switches: bool = False):
    """The controller and a libvirt source of s11 (tor1) and s21 (tor2).
    ``switches``: each ToR is an in-process fake P4Runtime switch the
    controller writes to, so a move between the ToRs completes its
    make-before-break (the old ToR lets go once the new one confirms);
    without switches that second step waits for its timeout (30 s)."""
    from p4vtep.sources.libvirt_domains import LibvirtSource

    fabric = two_tor_fabric()
    uris = {}
    for name in ("s11", "s21"):
        node = tmp_path / f"{name}.xml"
        node.write_text(NODE)
        uris[name] = f"test://{node}"
        fabric.servers[name] = Server(
            name, fabric.servers[name].tor, fabric.servers[name].port, uris[name]
        )
    with contextlib.ExitStack() as stack:
        if switches:
            for name, tor in fabric.tors.items():
                fake = stack.enter_context(FakeP4RuntimeServer(device_id=tor.device_id))
                fabric.tors[name] = replace(tor, address=fake.address)
        controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))
        if switches:
            controller.start()
            stack.callback(controller.stop)
        src = LibvirtSource(controller, uris)
        src.start()
        stack.callback(src.stop)
        yield controller, src


@pytest.fixture
def source(tmp_path):
    with running_source(tmp_path) as running:
        yield running


@pytest.fixture
def source_and_switches(tmp_path):
    with running_source(tmp_path, switches=True) as running:
        yield running


def test_lifecycle_events_add_and_remove_bindings(source):
    controller, src = source
    dom = src.connections["s11"].defineXML(domain("web-1", "52:54:00:aa:00:01", 10))
    time.sleep(0.3)
    assert "web-1" not in controller.vms  # defined, not running: no binding
    dom.create()
    assert wait_until(lambda: "web-1" in controller.vms)
    vm = controller.vms["web-1"]
    assert (vm.server, vm.vlan, vm.mac, vm.source) == ("s11", 10, "52:54:00:aa:00:01", "libvirt")
    dom.destroy()
    assert wait_until(lambda: "web-1" not in controller.vms)


def test_move_between_hypervisors_is_a_migration(source_and_switches):
    controller, src = source_and_switches
    old = src.connections["s11"].defineXML(domain("web-2", "52:54:00:aa:00:02", 10))
    old.create()
    assert wait_until(lambda: "web-2" in controller.vms)
    events = controller.bus.subscribe()
    new = src.connections["s21"].defineXML(domain("web-2", "52:54:00:aa:00:02", 22))
    new.create()  # destination starts first...
    assert wait_until(lambda: controller.vms["web-2"].server == "s21")
    assert controller.vms["web-2"].vlan == 22
    old.destroy()  # ...then the source stops
    old.undefine()
    time.sleep(0.3)
    assert controller.vms["web-2"].server == "s21"
    assert controller.wait_converged(10)  # (tor1 let go once tor2 confirmed)
    changes = []
    while not events.empty():
        changes.append(getattr(events.get(), "change", ""))
    assert "migrated" in changes


def test_bad_metadata_is_reported_not_applied(source):
    controller, src = source
    bad = src.connections["s11"].defineXML(
        domain("web-3", "52:54:00:aa:00:03", 10, meta="<p4vtep:vni>none</p4vtep:vni>")
    )
    bad.create()
    assert wait_until(lambda: any("web-3" in e for e in src.errors))
    assert "web-3" not in controller.vms


def test_bindings_the_store_did_not_take_are_read_again(tmp_path):
    """A read the store refused (NotLeader: the lease lapsed) is reported
    and tried again until it is stored; the source keeps running."""
    from p4vtep.sources.libvirt_domains import RETRY_SECONDS, LibvirtSource

    node = tmp_path / "s11.xml"
    node.write_text(NODE.replace("</node>", domain("web-1", "52:54:00:aa:00:01", 10) + "</node>"))
    fabric = two_tor_fabric()
    s11 = fabric.servers["s11"]
    uris = {"s11": f"test://{node}"}
    fabric.servers["s11"] = Server(s11.name, s11.tor, s11.port, uris["s11"])
    leadership = FixedLeadership("r1")
    controller = Controller(
        fabric, bmv2_pipeline(), Store(tmp_path / "s.db"), leadership=leadership
    )
    src = LibvirtSource(controller, uris)
    src.start()
    try:
        assert any("r1 is not the leader" in e for e in src.errors)
        assert "web-1" not in controller.vms
        leadership.term = 1
        assert wait_until(lambda: "web-1" in controller.vms, timeout=5 * RETRY_SECONDS)
        assert src.errors == []
    finally:
        src.stop()


def test_a_source_started_mid_migration_takes_the_destination(tmp_path):
    """A source that starts while a domain runs on two servers (a controller
    restarted, or a new leader, during a live migration) sees both at once:
    the server the desired state already has is the origin, so the other one
    wins, whatever order libvirt lists them in. (Two servers of one ToR:
    the move needs no acknowledgement from another ToR, and no switch runs
    here.)"""
    from p4vtep.sources.libvirt_domains import LibvirtSource

    fabric = two_tor_fabric()
    uris = {}
    for name in ("s11", "s12"):  # (listed in this order: the origin last)
        uris[name] = f"test://{tmp_path / f'{name}.xml'}"
        server = fabric.servers[name]
        fabric.servers[name] = Server(name, server.tor, server.port, uris[name])
    controller = Controller(fabric, bmv2_pipeline(), Store(tmp_path / "s.db"))

    def run(servers: tuple[str, ...], vlan: dict[str, int]) -> None:
        for name in ("s11", "s12"):
            domains = domain("web-9", "52:54:00:aa:00:09", vlan[name]) if name in servers else ""
            (tmp_path / f"{name}.xml").write_text(NODE.replace("</node>", domains + "</node>"))

    run(("s12",), {"s12": 12})
    src = LibvirtSource(controller, uris)
    src.start()
    src.stop()
    assert (controller.vms["web-9"].server, controller.vms["web-9"].vlan) == ("s12", 12)
    run(("s11", "s12"), {"s11": 11, "s12": 12})  # migrating s12 -> s11
    src = LibvirtSource(controller, uris)
    src.start()
    try:
        assert (controller.vms["web-9"].server, controller.vms["web-9"].vlan) == ("s11", 11)
    finally:
        src.stop()


def test_a_uri_that_does_not_open_is_named_and_nothing_stays_open(tmp_path):
    from p4vtep.sources import SourceError
    from p4vtep.sources.libvirt_domains import LibvirtSource

    good = tmp_path / "s11.xml"
    good.write_text(NODE)
    uris = {"s11": f"test://{good}", "s21": f"test://{tmp_path / 'missing.xml'}"}
    controller = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    src = LibvirtSource(controller, uris)
    with pytest.raises(SourceError, match=r"server s21: libvirt test://.*missing\.xml: "):
        src.start()
    assert src.connections == {}
    assert controller.vms == {}
