"""bench/change_cost.py's measuring parts at a small scale: each round makes
the changes it says it makes and leaves the controller as it found it, so
the next round measures the same thing."""

from __future__ import annotations

from pathlib import Path

import change_cost
import tenants
from change_cost import background, controller_of, learned_route, vm_changes


def held_routes(controller) -> int:
    learned = controller.desired.learned
    return sum(len(hosts) for hosts in learned.hosts.values())


def test_each_tenant_is_on_two_neighbouring_tors():
    fabric = change_cost.fabric_of(5, tors=4)
    vms = background(5, 200, tors=4)
    assert len({vm.vni for vm in vms}) == 5
    for k in range(5):
        tors = {fabric.servers[vm.server].tor for vm in vms if vm.vni == tenants.VNI_BASE + k}
        assert tors == {f"tor{k % 4 + 1}", f"tor{(k + 1) % 4 + 1}"}
    two = change_cost.fabric_of(5)
    for vm in background(5, 200):  # (two ToRs: every tenant on both)
        assert vm.server in two.servers


def test_a_round_of_vm_changes_leaves_the_controller_as_it_was(tmp_path: Path):
    controller = controller_of(5, tmp_path, vms=200, tors=4)
    before = dict(controller.vms)
    states = {tor: c.state.copy() for tor, c in controller.desired.tors.items()}
    attached = []
    attach = controller.attach

    def counting(vm):
        attached.append(vm.name)
        return attach(vm)

    controller.attach = counting  # type: ignore[method-assign]
    assert vm_changes(controller, 5, 40, seed=1) > 0  # (validated: each VM where it may be)
    assert len(attached) > 10  # (about half of the 40)
    assert controller.vms == before
    for tor, compiler in controller.desired.tors.items():
        assert compiler.state == states[tor]


def test_a_round_of_learned_routes_learns_them_and_drops_them_at_the_end(tmp_path: Path):
    controller = controller_of(5, tmp_path, vms=200)
    seen: list[int] = []
    commit = controller.commit_learned

    def counting(learned):
        version = commit(learned)
        seen.append(held_routes(controller))
        return version

    controller.commit_learned = counting  # type: ignore[method-assign]
    assert learned_route(controller, 5, 4) > 0
    # The 1,000 as one commit, then the extra one in and out twice, then the
    # session lost: nothing learned is left.
    assert change_cost.LEARNED in seen
    assert seen.count(change_cost.LEARNED + 1) == 2
    assert seen[-1] == 0
    assert held_routes(controller) == 0
