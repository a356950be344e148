"""External VTEPs (EVPN-learned or static) compiled into a ToR: learned MACs
towards their VTEP with ARP entries, the VTEP in the VNI's flood group with a
replica entry, an underlay route; a MAC or IP our VMs have stays theirs."""

from __future__ import annotations

import pytest
from fabric_fixture import two_tor_fabric, vms
from p4vtep.compiler import (
    VTEP_REPLICA_BASE,
    Allocations,
    DesiredState,
    Encoder,
    Learned,
    LearnedMac,
    compile_tor,
    flood_group,
)
from p4vtep.compiler.underlay import ECMP_GROUP_ID
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.model.allocation import SpaceFull, external_vtep_key
from p4vtep.runtime.protos import p4runtime_pb2

ENC = Encoder(PipelineEntries(bmv2_pipeline().p4info))
FRR = "192.0.2.10"
FOREIGN = LearnedMac(5000, "52:54:00:00:00:10", FRR, ("192.168.1.10",))


def desired(learned: Learned) -> DesiredState:
    state = DesiredState(two_tor_fabric(), ENC, Allocations())
    state.change(vms(), [])
    state.set_learned(learned)
    return state


def has(state, item) -> bool:
    key, data = item
    return state.get(key) == data


def test_a_learned_mac_goes_to_every_tor_hosting_its_vni_towards_its_vtep() -> None:
    d = desired(Learned.of([FOREIGN], {5000: [FRR]}))
    for tor in ("tor1", "tor2"):  # both host VNI 5000 (a1, a2)
        state = d.tors[tor].state
        assert has(state, ENC.mac_to_remote_vtep(5000, FOREIGN.mac, FRR))
        assert has(state, ENC.neighbour(5000, "192.168.1.10", FOREIGN.mac))
        assert has(state, ENC.underlay_route(FRR, 32, ECMP_GROUP_ID))
        assert state == compile_tor(d.fabric, d.view(tor).values(), tor, d.alloc, ENC, d.learned)


def test_the_external_vtep_is_a_flood_copy_with_its_own_replica_id() -> None:
    d = desired(Learned.of([], {5000: [FRR]}))
    replica = VTEP_REPLICA_BASE + d.alloc.tor[external_vtep_key(FRR)]
    assert d.alloc.tor[external_vtep_key(FRR)] not in {d.alloc.tor[t] for t in d.fabric.tors}
    state = d.tors["tor1"].state
    group = flood_group(d.alloc.vni[5000])
    entity = state.entity(b"2%d" % group)
    copies = {
        (r.egress_port, r.instance)
        for r in entity.packet_replication_engine_entry.multicast_group_entry.replicas
    }
    uplink = list(d.fabric.tors["tor1"].uplinks)
    assert any(c[1] == replica and c[0] in {u.port for u in uplink} for c in copies)
    next_hop = {u.port: u.next_hop_mac for u in uplink}[
        next(c[0] for c in copies if c[1] == replica)
    ]
    assert has(state, ENC.replica_to_vtep(replica, FRR, next_hop))


def test_a_vni_not_hosted_on_a_tor_brings_it_nothing_but_the_underlay_route() -> None:
    learned = Learned.of([LearnedMac(6000, "52:54:00:00:00:60", FRR)], {6000: [FRR]})
    d = desired(learned)
    state = d.tors["tor2"].state  # tor2 hosts only VNI 5000
    assert not has(state, ENC.mac_to_remote_vtep(6000, "52:54:00:00:00:60", FRR))
    replica = VTEP_REPLICA_BASE + d.alloc.tor[external_vtep_key(FRR)]
    assert not has(state, ENC.replica_to_vtep(replica, FRR, "00:5e:00:02:01:01"))
    assert not has(state, ENC.replica_to_vtep(replica, FRR, "00:5e:00:02:01:02"))
    assert has(state, ENC.underlay_route(FRR, 32, ECMP_GROUP_ID))


def test_a_vm_whose_mac_a_remote_vtep_won_sends_its_traffic_there() -> None:
    """The learned table puts one of our VMs' MACs in the learned facts only
    when a remote VTEP won it (a higher number: the VM moved away). Its MAC
    entry then points at that VTEP on every ToR; its binding, flood copy and
    ARP entries stay until the inventory follows. Each entry has one writer."""
    a1 = vms()[0]  # on tor1, VNI 5000
    d = desired(Learned())
    index = d.alloc.vm["tor1"]["a1"]
    for compiler in d.tors.values():
        compiler.take_changes()
    at_tor1 = ENC.mac_to_local_vm(5000, a1.mac, 1, a1.vlan, index, policed=True)  # (gold rx)
    via_tor1 = ENC.mac_to_remote_vtep(5000, a1.mac, "10.0.0.1")
    via_peer = ENC.mac_to_remote_vtep(5000, a1.mac, FRR)
    assert has(d.tors["tor1"].state, at_tor1)
    assert has(d.tors["tor2"].state, via_tor1)

    moved = LearnedMac(5000, a1.mac, FRR, ("192.168.1.99",))
    steals_ip = LearnedMac(5000, "52:54:00:00:00:11", FRR, (a1.ips[0],))
    d.set_learned(Learned.of([moved, steals_ip]))
    for tor in ("tor1", "tor2"):
        state = d.tors[tor].state
        assert has(state, via_peer)
        assert has(state, ENC.neighbour(5000, a1.ips[0], a1.mac))  # the VM's IP stays
        assert has(state, ENC.neighbour(5000, "192.168.1.99", a1.mac))
        assert has(state, ENC.mac_to_remote_vtep(5000, steals_ip.mac, FRR))
        assert state == compile_tor(d.fabric, d.view(tor).values(), tor, d.alloc, ENC, d.learned)
    assert has(
        d.tors["tor1"].state,
        ENC.access_binding(
            1, a1.vlan, 5000, index, a1.mac, policed=True, guarded=True, ipv4=a1.ips[0]
        ),
    )
    # One change per ToR for the MAC entry: modified in place, never deleted.
    changes = {key: (old, new) for key, old, new in d.tors["tor2"].take_changes()}
    assert changes[via_peer[0]] == (via_tor1[1], via_peer[1])
    changes = {key: (old, new) for key, old, new in d.tors["tor1"].take_changes()}
    assert changes[via_peer[0]] == (at_tor1[1], via_peer[1])

    # The remote claim goes (withdrawn): the VM's own entry is back.
    d.set_learned(Learned())
    assert has(d.tors["tor1"].state, at_tor1)
    assert has(d.tors["tor2"].state, via_tor1)


def test_withdrawn_facts_leave_no_trace_and_free_the_replica_id() -> None:
    d = desired(Learned())
    before = {tor: d.tors[tor].state.copy() for tor in d.tors}
    d.set_learned(Learned.of([FOREIGN], {5000: [FRR]}))
    assert d.alloc.tor.peek(external_vtep_key(FRR)) is not None
    d.set_learned(Learned())
    assert d.alloc.tor.peek(external_vtep_key(FRR)) is None
    for tor in d.tors:
        assert d.tors[tor].state == before[tor]


def test_no_room_for_another_replica_id_is_refused_changing_nothing() -> None:
    d = desired(Learned())
    d.alloc.tor.high = len(d.alloc.tor)  # room for exactly one more
    one, two = "192.0.2.1", "192.0.2.2"
    with pytest.raises(SpaceFull, match="indices in use"):
        d.set_learned(Learned.of([], {5000: [one, two]}))
    assert d.learned == Learned()
    assert not any(k.startswith("vtep:") for k, _ in d.alloc.tor.items())
    d.set_learned(Learned.of([], {5000: [one]}))
    assert d.alloc.tor.peek(external_vtep_key(one)) is not None


def test_entities_decode() -> None:
    # (the learned entries are ordinary P4Runtime table entries)
    d = desired(Learned.of([FOREIGN]))
    key, _ = ENC.mac_to_remote_vtep(5000, FOREIGN.mac, FRR)
    entity = d.tors["tor1"].state.entity(key)
    assert isinstance(entity, p4runtime_pb2.Entity)
    assert entity.table_entry.action.action.params[0].value == bytes([192, 0, 2, 10])
