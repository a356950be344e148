"""VM bindings from libvirt: one connection per server URI.

A running domain with an SR-IOV interface (``<interface type='hostdev'>``,
giving MAC and VF VLAN) and a p4vtep metadata element (VNI, IPs, QoS) is a
VM binding on that server. Lifecycle events re-read the server; a VM that
starts on another server while still known elsewhere is migrated
make-before-break.

    <metadata>
      <p4vtep:vm xmlns:p4vtep="https://p4vtep.dev/xmlns/vm/1">
        <p4vtep:vni>5000</p4vtep:vni>
        <p4vtep:ip>192.168.1.10</p4vtep:ip>    <!-- repeat for several -->
        <p4vtep:qos>gold</p4vtep:qos>          <!-- optional -->
        <!-- port security (docs/security.md), optional: -->
        <p4vtep:allowed_pair>192.168.1.100/32</p4vtep:allowed_pair>  <!-- repeat -->
        <p4vtep:allowed_pair mac="00:00:5e:00:01:07">192.168.1.107</p4vtep:allowed_pair>
        <p4vtep:port_security>false</p4vtep:port_security>  <!-- default true -->
        <p4vtep:dhcp_server>true</p4vtep:dhcp_server>      <!-- default false -->
      </p4vtep:vm>
    </metadata>
"""

from __future__ import annotations

import logging
import threading
import time
import xml.etree.ElementTree as ET
from typing import Any

from ..controller import Controller
from ..events import DesiredStateChanged
from ..model.addressing import canonical_ip
from ..model.fabric import Vm
from ..model.port_security import pair
from ..model.validation import ValidationError, normalise_mac
from ..state.protocol import StateError
from . import SourceError

log = logging.getLogger(__name__)

NAMESPACE = "https://p4vtep.dev/xmlns/vm/1"
SOURCE = "libvirt"
RETRY_SECONDS = 1.0  # after a read the store could not take (no quorum, leadership lost)
_event_loop_started = False
_event_loop_lock = threading.Lock()


class MetadataError(ValueError):
    pass


def parse_domain(xml: str, server: str) -> Vm | None:
    """The binding a domain describes, None if it has no p4vtep metadata.
    Raises MetadataError naming the domain and the field if it is malformed."""
    root = ET.fromstring(xml)
    name = root.findtext("name", "")
    meta = root.find(f"metadata/{{{NAMESPACE}}}vm")
    if meta is None:
        return None

    def fail(field: str, message: str) -> MetadataError:
        return MetadataError(f"domain {name} on {server}: {field}: {message}")

    vni_text = (meta.findtext(f"{{{NAMESPACE}}}vni") or "").strip()
    if not vni_text.isdigit():
        raise fail("vni", f"expected a number, got {vni_text!r}")
    # (IPv6 in its canonical form: RFC 5952)
    ips = tuple(canonical_ip((e.text or "").strip()) for e in meta.findall(f"{{{NAMESPACE}}}ip"))
    qos = (meta.findtext(f"{{{NAMESPACE}}}qos") or "").strip() or None
    interfaces = root.findall("devices/interface[@type='hostdev']")
    if len(interfaces) != 1:
        raise fail(
            "interface", f"expected one hostdev (SR-IOV VF) interface, found {len(interfaces)}"
        )
    iface = interfaces[0]
    mac = iface.find("mac")
    tag = iface.find("vlan/tag")
    address = mac.get("address") if mac is not None else None
    tag_id = (tag.get("id") if tag is not None else None) or ""
    if not address:
        raise fail("interface.mac", "missing")
    if not tag_id.isdigit():
        raise fail("interface.vlan", "the VF needs a VLAN tag id")

    def flag(field: str, default: bool) -> bool:
        text = (meta.findtext(f"{{{NAMESPACE}}}{field}") or "").strip().lower()
        if not text:
            return default
        if text not in ("true", "false"):
            raise fail(field, f"expected true or false, got {text!r}")
        return text == "true"

    pairs = tuple(
        pair((e.text or "").strip(), e.get("mac"))
        for e in meta.findall(f"{{{NAMESPACE}}}allowed_pair")
    )
    return Vm(
        name=name,
        mac=normalise_mac(address),
        ips=ips,
        vni=int(vni_text),
        server=server,
        vlan=int(tag_id),
        qos=qos,
        source=SOURCE,
        port_security=flag("port_security", True),
        dhcp_server=flag("dhcp_server", False),
        allowed_pairs=pairs,
    )


def _ensure_event_loop(libvirt) -> None:
    global _event_loop_started
    with _event_loop_lock:
        if _event_loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        threading.Thread(target=run, daemon=True, name="libvirt-events").start()
        _event_loop_started = True


class LibvirtSource:
    def __init__(self, controller: Controller, uris: dict[str, str]) -> None:
        import libvirt  # libvirt-python; imported here so the rest runs without it

        self.libvirt = libvirt
        self.controller = controller
        self.uris = uris
        self.connections: dict[str, Any] = {}  # libvirt.virConnect (untyped)
        self.errors: list[str] = []
        self._first_seen: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._run, daemon=True, name="libvirt-source")

    def start(self) -> None:
        _ensure_event_loop(self.libvirt)
        for server, uri in self.uris.items():
            try:
                conn = self.libvirt.open(uri)
            except self.libvirt.libvirtError as exc:
                for opened in self.connections.values():
                    opened.close()
                self.connections = {}
                raise SourceError(f"server {server}: libvirt {uri}: {exc}") from None
            conn.domainEventRegisterAny(
                None, self.libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_event, server
            )
            self.connections[server] = conn
        if not self.resync():
            self._dirty.set()  # (the worker tries again)
        self._worker.start()

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        self._worker.join(timeout=5)
        for conn in self.connections.values():
            conn.close()

    def _on_event(self, conn, domain, event, detail, server) -> None:
        self._dirty.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait()
            self._dirty.clear()
            stored = self._stop.is_set() or self.resync()
            if not stored and not self._stop.wait(RETRY_SECONDS):
                self._dirty.set()  # (read again)

    def _seen_at(self, vm: Vm) -> float:
        """When a running domain counts as started: now, unless the desired
        state already has the VM from libvirt on this server, which makes it
        the older of two (a source started while a migration runs, e.g. on a
        new leader, sees both at once: the other one is the destination)."""
        current = self.controller.vms.get(vm.name)
        if current is not None and current.source == SOURCE and current.server == vm.server:
            return 0.0
        return time.monotonic()

    def resync(self) -> bool:
        """Read every server's running domains and apply the result; False
        if the store could not take it (read again later)."""
        with self._lock:
            found: dict[str, list[Vm]] = {}
            errors = []
            for server, conn in self.connections.items():
                for domain in conn.listAllDomains(self.libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
                    try:
                        vm = parse_domain(domain.XMLDesc(0), server)
                    except (MetadataError, ET.ParseError) as exc:
                        errors.append(str(exc))
                        continue
                    if vm is not None:
                        found.setdefault(vm.name, []).append(vm)
                        if (server, vm.name) not in self._first_seen:
                            self._first_seen[(server, vm.name)] = self._seen_at(vm)
            active = {(vm.server, name) for name, vms in found.items() for vm in vms}
            for key in list(self._first_seen):
                if key not in active:
                    del self._first_seen[key]
            # A VM running on two servers is mid-migration: the newer one wins.
            chosen = {
                name: max(vms, key=lambda v: self._first_seen[(v.server, name)])
                for name, vms in found.items()
            }
            self.errors = errors
            for message in errors:
                log.error("libvirt: %s", message)
            try:
                for name, vm in chosen.items():
                    current = self.controller.vms.get(name)
                    if (
                        current is not None
                        and current.source == SOURCE
                        and current.server != vm.server
                    ):
                        self.controller.migrate(name, vm.server, vm.vlan)
                self.controller.replace_source(SOURCE, list(chosen.values()))
            except ValidationError as exc:
                self.errors.append(str(exc))
                log.error("libvirt bindings refused: %s", exc)
                self.controller.bus.publish(DesiredStateChanged(vm="*", change=f"refused: {exc}"))
            except StateError as exc:
                self.errors.append(str(exc))
                log.warning("libvirt bindings not stored, retrying: %s", exc)
                return False
            return True
