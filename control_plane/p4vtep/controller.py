"""The controller: desired state in, every ToR reconciled to it.

Changes (from the inventory file, libvirt or the API) are validated against
the whole resulting state and refused whole if anything is wrong; accepted
ones are stored, then every supervisor is told to reconcile.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from . import events
from .compiler import Allocations, CompileCache, CompiledTor, compile_tor
from .dataplane.artifacts import Pipeline, pipeline_for
from .dataplane.entries import PipelineEntries
from .model import Fabric, Vm
from .store import Store
from .supervisor import SwitchSupervisor
from .validation import Problem, ValidationError, VmIndex, check_fabric, validate, validate_change

log = logging.getLogger(__name__)


class NotFound(KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Controller:
    def __init__(
        self,
        fabric: Fabric,
        pipeline: Pipeline,
        store: Store | None = None,
        election_id: int = 1,
        resync_seconds: float = 30.0,
    ) -> None:
        problems = check_fabric(fabric)
        if problems:
            raise ValidationError(problems)
        self.fabric = fabric
        self.pipeline = pipeline
        self.entries = PipelineEntries(pipeline.p4info)
        # Per ToR: its target's pipeline, and entries built with that P4Info's ids.
        self.pipelines = {n: pipeline_for(t.target, pipeline) for n, t in fabric.tors.items()}
        self.tor_entries = {
            n: self.entries if p is pipeline else PipelineEntries(p.p4info)
            for n, p in self.pipelines.items()
        }
        self.store = store or Store()
        self.bus = events.EventBus()
        self._lock = threading.RLock()
        self.vms: dict[str, Vm] = self.store.load_vms()
        self.alloc: Allocations = self.store.load_allocations()
        # During a migration a ToR may be pinned to an older VM set (make-before-break).
        self._pinned: dict[str, dict[str, Vm]] = {}
        self.version = 1
        self.cache = CompileCache()
        self._checked: dict[Vm, list] = {}  # per-VM validation results
        self._index = VmIndex.of(self.vms.values())
        credentials = None
        if fabric.p4runtime_tls is not None:
            import grpc

            ca, cert, key = fabric.p4runtime_tls.read()
            credentials = grpc.ssl_channel_credentials(
                root_certificates=ca, private_key=key, certificate_chain=cert
            )
        self.supervisors = {
            name: SwitchSupervisor(
                tor,
                self.pipelines[name],
                election_id,
                self.compile_for,
                self.bus,
                resync_seconds=resync_seconds,
                credentials=credentials,
            )
            for name, tor in fabric.tors.items()
        }

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        for sup in self.supervisors.values():
            sup.start()

    def stop(self) -> None:
        for sup in self.supervisors.values():
            sup.stop()

    def wait_converged(self, timeout: float = 60.0) -> bool:
        version = self.version
        return all(sup.wait_applied(version, timeout) for sup in self.supervisors.values())

    # --- compilation (called by supervisors) ------------------------------------
    def compile_for(self, tor: str) -> tuple[int, CompiledTor]:
        with self._lock:
            vms = self._pinned.get(tor, self.vms)
            compiled = compile_tor(
                self.fabric, vms.values(), tor, self.alloc, self.tor_entries[tor], self.cache
            )
            if self.alloc.dirty:
                # Indices are handed out while compiling; store them before
                # the switch sees them, so a restart compiles the same.
                self.store.save_allocations(self.alloc)
            return self.version, compiled

    # --- changes ------------------------------------------------------------------
    def _commit(
        self,
        new_vms: dict[str, Vm],
        change: events.DesiredStateChanged,
        upserts: list[Vm] | None = None,
        removals: list[str] | None = None,
    ) -> int:
        """Validate the new state (only the changed VMs when the change is
        given as upserts/removals), store it and wake the supervisors."""
        with self._lock:
            if len(self._checked) > 2 * len(new_vms) + 1000:
                self._checked.clear()
            if upserts is None and removals is None:
                validate(self.fabric, new_vms.values(), self._checked)
                index = VmIndex.of(new_vms.values())
                self.store.save(new_vms.values(), self.alloc)
            else:
                index = validate_change(
                    self.fabric, self.vms, self._index, upserts or [], removals or [], self._checked
                )
                self.store.save_changes(upserts or [], removals or [])
            self._index = index
            self.vms = new_vms
            self.version += 1
            version = self.version
        self.bus.publish(change)
        for sup in self.supervisors.values():
            sup.notify()
        return version

    def attach(self, vm: Vm) -> int:
        with self._lock:
            if vm.name in self.vms and self.vms[vm.name] == vm:
                return self.version
            new = dict(self.vms)
            new[vm.name] = vm
            return self._commit(
                new, events.DesiredStateChanged(vm=vm.name, change="attached"), upserts=[vm]
            )

    def detach(self, name: str) -> int:
        with self._lock:
            if name not in self.vms:
                raise NotFound(f"no VM named {name!r}")
            new = dict(self.vms)
            del new[name]
            return self._commit(
                new, events.DesiredStateChanged(vm=name, change="detached"), removals=[name]
            )

    def replace_source(self, source: str, vms: list[Vm]) -> int:
        """Make the VMs from one source (e.g. the inventory file) exactly ``vms``."""
        with self._lock:
            new = {k: v for k, v in self.vms.items() if v.source != source}
            for vm in vms:
                if vm.name in new:
                    raise ValidationError(
                        [
                            Problem(
                                f"vm {vm.name}",
                                "name",
                                f"already declared by {new[vm.name].source}",
                            )
                        ]
                    )
                new[vm.name] = replace(vm, source=source)
            if new == self.vms:
                return self.version
            return self._commit(
                new, events.DesiredStateChanged(vm="*", change=f"{source} reloaded")
            )

    def get(self, name: str) -> Vm:
        with self._lock:
            if name not in self.vms:
                raise NotFound(f"no VM named {name!r}")
            return self.vms[name]

    def tor_of(self, vm: Vm) -> str:
        return self.fabric.servers[vm.server].tor if vm.server in self.fabric.servers else ""

    def set_qos(self, name: str, qos: str | None) -> int:
        with self._lock:
            vm = self.get(name)
            new = dict(self.vms)
            new[name] = replace(vm, qos=qos or None)
            return self._commit(
                new, events.DesiredStateChanged(vm=name, change="qos"), upserts=[new[name]]
            )

    def wait_version(self, version: int, timeout: float) -> bool:
        return all(sup.wait_applied(version, timeout) for sup in self.supervisors.values())

    def migrate(
        self, name: str, server: str, vlan: int | None = None, timeout: float = 30.0
    ) -> int:
        """Make-before-break: every ToR but the old one gets the new location
        first; only when they hold it does the old ToR let go."""
        with self._lock:
            if name not in self.vms:
                raise NotFound(f"no VM named {name!r}")
            old = self.vms[name]
            moved = replace(old, server=server, vlan=old.vlan if vlan is None else vlan)
            if moved.server not in self.fabric.servers:
                raise ValidationError(
                    [Problem(f"vm {name}", "server", f"unknown server {server!r}")]
                )
            old_tor = self.fabric.servers[old.server].tor
            new_tor = self.fabric.servers[moved.server].tor
            new = dict(self.vms)
            new[name] = moved
            if old_tor != new_tor:
                self._pinned[old_tor] = dict(self.vms)
            try:
                version = self._commit(
                    new, events.DesiredStateChanged(vm=name, change="migrated"), upserts=[moved]
                )
            except Exception:
                self._pinned.pop(old_tor, None)
                raise
        if old_tor != new_tor:
            others = [s for n, s in self.supervisors.items() if n != old_tor]
            ok = all(s.wait_applied(version, timeout) for s in others)
            if not ok:
                log.warning("migration of %s: not every ToR confirmed within %ss", name, timeout)
            with self._lock:
                self._pinned.pop(old_tor, None)
                self.version += 1
                version = self.version
            for sup in self.supervisors.values():  # the old ToR lets go; others confirm
                sup.notify()
        return version
