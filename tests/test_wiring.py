"""The seams between the controller and what runs beside it: the controller
imports no input (EVPN, the sources) and no input reaches into it; inputs
read it through desired_view/placements and write through its methods; the
package has no import cycle, and its folders are layers: each imports only
the ones below it (``LAYERS``; CONTRIBUTING.md draws the same map)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import p4vtep
import pytest
from fabric_fixture import two_tor_fabric
from helpers import RecordingLock
from p4vtep.api.counters import CounterReader
from p4vtep.controller import Controller, NotFound, VmPlacement, VniPlacement
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn.options import EvpnOptions
from p4vtep.model.fabric import Vm
from p4vtep.state.sqlite_store import Store

PACKAGE = Path(p4vtep.__file__).parent
A1 = Vm("a1", "00:00:0a:00:00:01", ("192.168.1.1",), 5000, "s11", 10)
A2 = Vm("a2", "00:00:0a:00:00:02", ("192.168.1.2",), 5000, "s21", 20)
B1 = Vm("b1", "00:00:0b:00:00:01", ("192.168.1.1",), 6000, "s12", 30)


# ---- imports ----------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: dict[str, Path], type_checking: bool) -> set[str]:
    """The p4vtep modules ``path`` imports anywhere in its code (functions
    too); with ``type_checking`` also those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    skipped: set[int] = set()
    if not type_checking:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names]
            found.update(s for s in subs if s in modules)
            if not all(s in modules for s in subs):  # names from the module itself
                found.add(target)
    return {m for m in found if m == "p4vtep" or m.startswith("p4vtep.")}


def package_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in PACKAGE.rglob("*.py")
        if "generated" not in path.parts and not path.name.startswith("overlay_pb2")
    }


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name lives in (``p4vtep.evpn.status.X`` -> its module)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in modules else None


def graph(type_checking: bool) -> dict[str, set[str]]:
    modules = package_modules()
    result = {}
    for name, path in modules.items():
        targets = {resolve(m, modules) for m in imports(path, modules, type_checking)}
        result[name] = {t for t in targets if t is not None and t != name}
    return result


def test_the_package_has_no_import_cycle() -> None:
    """Every import that runs (module level or in a function; not the ones
    under TYPE_CHECKING, which never run) leads away: no module needs one
    that needs it back."""
    edges = graph(type_checking=False)
    assert {"p4vtep.controller", "p4vtep.sources.evpn", "p4vtep.cli"} <= set(edges)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycle = path[path.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)


# The package's folders (and top-level modules) as layers, lowest first: a
# unit imports only units of lower layers, never one beside or above it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"runtime", "events", "processes", "netns"}),  # P4Runtime client; shared leaves
    frozenset({"dataplane"}),  # the P4 program: artifacts, sizes, entry builders
    frozenset({"model"}),  # the desired state as data, and every check on it
    frozenset({"compiler", "state", "tls", "cpu"}),  # desired -> entries; durable state; CPU path
    frozenset({"evpn", "switch"}),  # BGP EVPN logic; one switch's life
    frozenset({"controller"}),  # the core: desired state to every ToR
    frozenset({"sources"}),  # what feeds it: fabric and inventory files, libvirt, EVPN
    frozenset({"ha", "api"}),  # replicas; what users talk to (gRPC, metrics, counters)
    frozenset({"cli"}),  # the entry point
)
# Imports only a type checker follows (under ``if TYPE_CHECKING:``) that go
# up a layer, each for a type named in an annotation only, and why.
TYPE_ONLY_UPWARD = {
    ("dataplane", "model"),  # entries.vm_meter takes the model's Rates
    ("model", "evpn"),  # Fabric.evpn is the fabric file's EvpnConfig
}


def unit(module: str) -> str:
    """``p4vtep.model.fabric`` -> ``model``; ``p4vtep.controller`` -> ``controller``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer(name: str) -> int:
    return next(i for i, units in enumerate(LAYERS) if name in units)


def unit_edges(type_checking: bool) -> set[tuple[str, str]]:
    return {
        (unit(module), unit(target))
        for module, targets in graph(type_checking).items()
        for target in targets
        if unit(module) and unit(target) and unit(module) != unit(target)
    }


def test_every_folder_and_top_level_module_has_a_layer() -> None:
    units = {unit(m) for m in package_modules()} - {""}
    placed = set().union(*LAYERS)
    assert units - placed == set(), "place the new unit in LAYERS (and CONTRIBUTING.md)"
    assert placed - units == set(), "LAYERS names a unit that no longer exists"
    top_level = {
        m for m in package_modules() if m.count(".") == 1 and not (PACKAGE / unit(m)).is_dir()
    }
    assert len(top_level) <= 5, f"the top level keeps shared modules only: {sorted(top_level)}"


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = sorted(
        f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
        for a, b in unit_edges(type_checking=False)
        if layer(b) >= layer(a)
    )
    assert wrong == []


def test_type_only_imports_go_up_only_where_listed() -> None:
    upward = {(a, b) for a, b in unit_edges(type_checking=True) if layer(b) >= layer(a)}
    assert upward == TYPE_ONLY_UPWARD


def test_the_controller_imports_no_input_not_even_for_type_checking() -> None:
    edges = graph(type_checking=True)
    inputs = ("p4vtep.evpn", "p4vtep.sources", "p4vtep.api", "p4vtep.cli", "p4vtep.api.metrics")
    for module in ("p4vtep.controller", "p4vtep.api.counters"):
        assert not {t for t in edges[module] if t.startswith(inputs)}, module
    # ... and EVPN itself knows no controller: sources/evpn.py joins the two.
    for module, targets in edges.items():
        if module.startswith("p4vtep.evpn"):
            assert not {t for t in targets if t.startswith(("p4vtep.controller", *inputs[1:]))}, (
                module
            )


# In a fresh interpreter: what importing the controller, then building one
# for a fabric with an evpn: section, loads of EVPN and the sources.
LOADED = """
import sys
def inputs():
    return sorted(m for m in sys.modules if m.startswith(("p4vtep.evpn", "p4vtep.sources")))
import p4vtep.controller
print(inputs())
from fabric_fixture import two_tor_fabric
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.evpn.config import EvpnConfig
fabric = two_tor_fabric()
fabric.evpn = EvpnConfig(asn=65000, router_id="10.0.0.254", peers=(), vnis=(), listen_port=-1)
before = inputs()
controller = p4vtep.controller.Controller(fabric, bmv2_pipeline())
print(sorted(set(inputs()) - set(before)))
print(hasattr(controller, "evpn"))
"""


def test_the_controller_loads_no_evpn_and_no_source() -> None:
    """Neither when imported nor when built for a fabric with EVPN: the
    wiring (the CLI) builds the EVPN source."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        # The p4vtep under test (not whichever the virtualenv installed) and fabric_fixture.
        env={**os.environ, "PYTHONPATH": f"{PACKAGE.parent}{os.pathsep}{Path(__file__).parent}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["[]", "[]", "False"], done.stdout + done.stderr


# ---- what inputs and readers may use ------------------------------------------


@pytest.fixture
def controller(tmp_path: Path) -> Controller:
    """A controller whose supervisors never run (no switch)."""
    c = Controller(two_tor_fabric(), bmv2_pipeline(), Store(tmp_path / "s.db"))
    for vm in (A1, A2, B1):
        c.attach(vm)
    return c


def test_counters_take_the_controllers_lock_only_inside_the_controller(controller) -> None:
    recorder = RecordingLock(controller._lock)
    controller._lock = recorder
    counters = CounterReader(controller).collect()
    assert recorder.files  # it did read the controller under its lock...
    assert set(recorder.files) == {"controller.py"}  # ...through the controller's methods
    assert set(counters.unreachable) == {"tor1", "tor2"}  # (no switch here)
    with pytest.raises(NotFound, match="no VM named 'zz'"):
        CounterReader(controller).collect(["a1", "zz"])


def test_placements_name_each_vms_tor_and_index_and_each_vnis_tors(controller) -> None:
    vms, vnis = controller.placements()
    alloc = controller.alloc
    assert vms == [
        VmPlacement("a1", "tor1", alloc.vm_space("tor1").peek("a1")),
        VmPlacement("a2", "tor2", alloc.vm_space("tor2").peek("a2")),
        VmPlacement("b1", "tor1", alloc.vm_space("tor1").peek("b1")),
    ]
    assert all(p.index is not None for p in vms)
    assert vnis == [
        VniPlacement(5000, alloc.vni.peek(5000), ("tor1", "tor2")),
        VniPlacement(6000, alloc.vni.peek(6000), ("tor1",)),
    ]
    only, some = controller.placements(["b1"], [6000, 7000])
    assert [p.name for p in only] == ["b1"]
    assert some == [
        VniPlacement(6000, alloc.vni.peek(6000), ("tor1",)),
        VniPlacement(7000, None, ()),
    ]
    with pytest.raises(NotFound, match="no VM named 'zz'"):
        controller.placements(["zz"])


def test_desired_view_is_a_consistent_copy(controller) -> None:
    view = controller.desired_view()
    assert (view.version, dict(view.vms)) == (controller.version, controller.vms)
    assert view.tor_of(A2) == "tor2"
    controller.detach("a1")
    assert "a1" in view.vms  # a later commit does not change a view taken before
    assert "a1" not in controller.desired_view().vms
    with pytest.raises(TypeError):
        view.vms["x"] = A1  # type: ignore[index]


def test_evpn_options_are_frozen_values() -> None:
    options = EvpnOptions(command_prefix=["ip", "netns", "exec", "ns1"], run_dir="/tmp/x")  # type: ignore[arg-type]
    assert options.command_prefix == ("ip", "netns", "exec", "ns1")  # a list became a tuple
    assert options.run_dir == Path("/tmp/x")
    assert EvpnOptions() == EvpnOptions(listen_addresses=())
    assert hash(options) == hash(
        EvpnOptions(("ip", "netns", "exec", "ns1"), run_dir=Path("/tmp/x"))
    )
    with pytest.raises(AttributeError):
        options.log_level = "debug"  # type: ignore[misc]
