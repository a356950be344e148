"""The EVPN learning path's bulk steps (issue 40): a peer's routes learned,
withdrawn or dropped with its session in bulk, and their host routes
compiled and encoded in bulk. Each must give exactly what the general path
gives: the table's changes and facts against the rules applied route by
route (the bulk steps switched off), the ToRs' entries against the
encoder's one-by-one ones and a full compile."""

from __future__ import annotations

from typing import Any

import pytest
from fabric_fixture import routed_fabric, routed_vms
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4vtep.compiler import DesiredState, Encoder, Learned, compile_tor
from p4vtep.compiler.learned import LearnedHost
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries, RemoteVtepHop
from p4vtep.evpn import gobgp_api, gobgp_codec
from p4vtep.evpn.routes import MacIpRoute
from p4vtep.evpn.table import Learn, LearnedTable, Unlearn
from p4vtep.evpn.view import LocalMac, ViewChange
from p4vtep.model.allocation import Allocations
from test_evpn_batching import PEERS, TOR, VNI, VRF, VTEPS, as_op, mac_of, state

ENCODER = Encoder(PipelineEntries(bmv2_pipeline().p4info))
L3VNI = 50000
RMAC = "02:fe:00:00:00:09"


class RulesOnly(LearnedTable):
    """The table with its bulk steps switched off: every update through the
    mobility rules (the state before, the contest, the difference)."""

    def _new_macs(self, ops: list[Learn | Unlearn]) -> ViewChange | None:
        return None

    def _gone_macs(self, ops: list[Learn | Unlearn]) -> ViewChange | None:
        return None

    def _drop_macs(self, gone: dict[Any, Any]) -> ViewChange | None:
        return None


def routed(peer_vtep: str, n: int, seq: int = 0) -> MacIpRoute:
    """A two-label type 2 for host 10.9.<n>: MAC ``n`` behind ``peer_vtep``."""
    return MacIpRoute(
        rd=f"{peer_vtep}:{VNI}",
        mac=f"02:70:00:00:{n >> 8:02x}:{n & 255:02x}",
        vni=VNI,
        next_hop=peer_vtep,
        ip=f"10.9.{n >> 8}.{n & 255}",
        route_targets=(f"65000:{VNI}",),
        mobility_seq=seq,
        l3vni=L3VNI,
        router_mac=RMAC,
    )


def both(*tables: LearnedTable) -> list[list[ViewChange]]:
    seen: list[list[ViewChange]] = []
    for table in tables:
        seen.append([])
        table.on_change(seen[-1].append)
    return seen


def learned_ops(routes: list[MacIpRoute], peer: str = PEERS[0]) -> list[Learn | Unlearn]:
    return [Learn(peer, r, VRF) for r in routes]


def test_a_peers_withdrawal_in_bulk_equals_the_rules() -> None:
    bulk, rules = LearnedTable(), RulesOnly()
    seen = both(bulk, rules)
    routes = [routed(VTEPS[0], n) for n in range(50)]
    for table in (bulk, rules):
        table.update(learned_ops(routes))
        table.update([Unlearn(PEERS[0], r.nlri_key()) for r in routes[:30]])
    assert seen[0] == seen[1]
    assert {m.mac for m in seen[0][-1].remote_removed} == {r.mac for r in routes[:30]}
    assert state(bulk) == state(rules)
    assert bulk.view().learned() == bulk._learned_from_scratch()
    assert {h.ip for h in bulk.view().host_routes()} == {r.ip for r in routes[30:]}


def test_a_withdrawal_of_a_mac_another_peer_claims_goes_through_the_rules() -> None:
    """Peer B holds MAC 3 too, with a lower number: when A withdraws it, B's
    claim is installed (a bulk step that dropped the MAC would lose it)."""
    bulk, rules = LearnedTable(), RulesOnly()
    seen = both(bulk, rules)
    for table in (bulk, rules):
        table.update(learned_ops([routed(VTEPS[0], n, seq=1) for n in range(5)]))
        table.update(learned_ops([routed(VTEPS[1], 3)], PEERS[1]))
        table.update([Unlearn(PEERS[0], routed(VTEPS[0], n).nlri_key()) for n in range(5)])
    assert seen[0] == seen[1]
    assert {(m.mac, m.vtep) for m in bulk.view().remote_macs()} == {
        (routed(VTEPS[1], 3).mac, VTEPS[1])
    }
    assert state(bulk) == state(rules)


def test_a_session_lost_drops_its_own_macs_in_bulk_and_settles_the_shared_ones() -> None:
    bulk, rules = LearnedTable(), RulesOnly()
    seen = both(bulk, rules)
    for table in (bulk, rules):
        table.set_local([LocalMac(VNI, routed(VTEPS[0], 7).mac, TOR)])
        table.update(learned_ops([routed(VTEPS[0], n, seq=2) for n in range(10)]))
        table.update(learned_ops([routed(VTEPS[1], n, seq=1) for n in (2, 4)], PEERS[1]))
        table.drop_source(PEERS[0])
    assert seen[0] == seen[1]
    # MACs 2 and 4 pass to peer B; 7 back to our VM; the rest are gone.
    assert {m.mac: m.vtep for m in bulk.view().remote_macs()} == {
        routed(VTEPS[1], 2).mac: VTEPS[1],
        routed(VTEPS[1], 4).mac: VTEPS[1],
    }
    assert state(bulk) == state(rules)
    assert bulk.view().learned() == bulk._learned_from_scratch()


def test_a_withdrawal_after_its_learning_in_one_batch_equals_the_rules() -> None:
    bulk, rules = LearnedTable(), RulesOnly()
    seen = both(bulk, rules)
    routes = [routed(VTEPS[0], n) for n in range(4)]
    for table in (bulk, rules):
        table.update(
            [*learned_ops(routes), Unlearn(PEERS[0], routes[1].nlri_key())]
            + learned_ops([routed(VTEPS[0], 1, seq=3)])
        )
    assert seen[0] == seen[1]
    assert {(m.mac, m.seq) for m in bulk.view().remote_macs()} == {
        (r.mac, 3 if i == 1 else 0) for i, r in enumerate(routes)
    }


# ---- at random: the bulk steps against the rules ----------------------------------

wide = st.one_of(
    st.tuples(
        st.just("type2"),
        st.sampled_from(PEERS),
        st.sampled_from(VTEPS),
        st.integers(0, 12),  # MAC (most of them one peer's alone)
        st.integers(0, 3),
        st.one_of(st.none(), st.integers(1, 12)),
        st.booleans(),
    ),
    st.tuples(st.just("withdraw"), st.integers(0, 1000)),
    st.tuples(st.just("down"), st.sampled_from(PEERS)),
    st.tuples(st.just("local"), st.frozensets(st.integers(0, 12), max_size=3)),
    st.tuples(st.just("type3"), st.sampled_from(PEERS), st.sampled_from(VTEPS)),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(wide, st.booleans()), max_size=50))
def test_bulk_steps_give_what_the_rules_give(steps: list[tuple[tuple, bool]]) -> None:
    """The same batches into a table with its bulk steps and one without:
    the same change from every update, the same table after."""
    bulk, rules = LearnedTable(), RulesOnly()
    seen = both(bulk, rules)
    learned: list[tuple[str, object]] = []
    batch: list[Learn | Unlearn] = []

    def flush() -> None:
        for table in (bulk, rules):
            table.update(batch)
        batch.clear()

    for step, ends in steps:
        kind = step[0]
        if kind == "down":
            flush()
            for table in (bulk, rules):
                table.drop_source(step[1])
        elif kind == "local":
            flush()
            macs = [LocalMac(VNI, mac_of(m), TOR) for m in sorted(step[1])]
            for table in (bulk, rules):
                table.set_local(macs)
        else:
            operation = as_op(step, learned)
            if operation is None:
                continue
            batch.append(operation)
            if ends:
                flush()
    flush()
    assert seen[0] == seen[1]
    assert state(bulk) == state(rules)
    assert bulk.view().learned() == bulk._learned_from_scratch()


# ---- host routes compiled and encoded in bulk -------------------------------------


@pytest.mark.parametrize("ip", ["10.9.0.1", "2001:db8:9::1"])
def test_remote_host_routes_are_the_encoders_one_by_one_entries(ip: str) -> None:
    encoder = Encoder(PipelineEntries(bmv2_pipeline().p4info))  # (its own cache)
    bulk = encoder.remote_host_routes(L3VNI, [(ip, "198.51.100.9", RMAC, L3VNI)])
    fresh = Encoder(PipelineEntries(bmv2_pipeline().p4info))
    one = fresh.host_route(L3VNI, ip, RemoteVtepHop("198.51.100.9", RMAC, L3VNI))
    assert bulk == [one]
    # (shared with the other ToRs' look-ups: the same object again)
    again = encoder.host_route(L3VNI, ip, RemoteVtepHop("198.51.100.9", RMAC, L3VNI))
    assert again is bulk[0]


def hosts_learned(ips: list[str], vtep: str = "198.51.100.9") -> Learned:
    return Learned.of(
        (),
        {},
        (LearnedHost(VRF, ip, vtep, RMAC, L3VNI, 9000, f"02:70:00:00:00:{i:02x}")
         for i, ip in enumerate(ips)),
    )  # fmt: skip


def test_learned_host_routes_compiled_in_bulk_are_exact_changes() -> None:
    """A VRF's learned host routes come, move to another VTEP and go: each
    ToR records exactly their entries (before and after), and its state is
    the full compile's. One host has a VM's IP: that step takes the
    general path (the VM's own host route gives way), with the same result."""
    fabric = routed_fabric()
    alloc = Allocations()
    desired = DesiredState(fabric, ENCODER, alloc)
    desired.load(routed_vms())
    for compiler in desired.tors.values():
        compiler.state  # noqa: B018 -- (built)
        compiler.take_changes()
    ips = [f"10.9.0.{n}" for n in range(1, 40)]
    steps = [
        hosts_learned(ips),
        hosts_learned(ips, vtep="198.51.100.10"),  # (moved: modified in place)
        hosts_learned(ips[:10]),
        hosts_learned([*ips[:10], "192.168.2.1"]),  # (db-1's IP)
        Learned.of((), {}, ()),
    ]
    before: dict[str, dict[bytes, bytes]] = {
        tor: dict(compiler.state.entities) for tor, compiler in desired.tors.items()
    }
    for learned in steps:
        desired.set_learned(learned)
        for tor, compiler in desired.tors.items():
            view = desired.view(tor).values()
            reference = compile_tor(fabric, view, tor, alloc, ENCODER, learned)
            assert compiler.state == reference
            held = before[tor]
            for key, old, new in compiler.take_changes():
                assert held.get(key) == old
                if new is None:
                    del held[key]
                else:
                    held[key] = new
            assert held == reference.entities
    # The first step wrote exactly one entry per host and ToR, as the encoder makes it.
    desired.set_learned(steps[0])
    for compiler in desired.tors.values():
        changes = compiler.take_changes()
        expected = {
            ENCODER.host_route(L3VNI, ip, RemoteVtepHop("198.51.100.9", RMAC, L3VNI)) for ip in ips
        }
        table = next(iter(expected))[0][:6]  # (the kind and the table id)
        hosts = {(key, new) for key, _, new in changes if key[:6] == table}
        assert hosts == expected
        assert all(old is None for key, old, _ in changes if key[:6] == table)
        # (besides: the underlay's entry for the VTEP that came)
        assert len(changes) == len(ips) + 1


# ---- the speaker's decode of a peer's UPDATE -------------------------------------

TYPE2_FIELDS = st.tuples(
    st.sampled_from(VTEPS),  # next hop
    st.integers(0, 3),  # MAC mobility sequence
    st.booleans(),  # sticky
    st.sampled_from((None, RMAC, "02:fe:00:00:00:0a")),  # router MAC
    st.sampled_from(((f"65000:{VNI}",), (f"65000:{VNI}", "65000:50000"), ("65001:1",))),
    st.booleans(),  # routed (a second label)
)


def one_update(routes: list[MacIpRoute]) -> list[Any]:
    """The paths of one UPDATE announcing ``routes``, as gobgpd's event
    gives them: each carries the UPDATE's whole MP_REACH_NLRI."""
    api, attr = gobgp_api.gobgp_pb2, gobgp_api.attribute_pb2
    paths = [gobgp_codec.encode(r) for r in routes]
    nlris = [p.nlri for p in paths]
    for path in paths:
        for wrapped in path.pattrs:
            if wrapped.type_url.endswith(".MpReachNLRIAttribute"):
                reach = attr.MpReachNLRIAttribute.FromString(wrapped.value)
                del reach.nlris[:]
                reach.nlris.extend(nlris)
                wrapped.Pack(reach)
    event = api.WatchEventResponse.FromString(
        api.WatchEventResponse(
            table=api.WatchEventResponse.TableEvent(paths=paths)
        ).SerializeToString()
    )
    return list(event.table.paths)


@pytest.mark.skipif(gobgp_api.MISSING is not None, reason=str(gobgp_api.MISSING))
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TYPE2_FIELDS, st.integers(1, 8)), min_size=1, max_size=6))
def test_type_2_paths_decode_to_their_routes_whatever_their_updates_share(
    updates: list[tuple[tuple[Any, ...], int]],
) -> None:
    """gobgpd gives each path of an UPDATE the UPDATE's attributes, its whole
    MP_REACH_NLRI among them; the decode looks a type 2's attributes up by
    their encoding (``gobgp_codec._TYPE2_ATTRIBUTES``). Paths whose
    attributes differ in any field (next hop, sequence, sticky, router
    MAC, route targets) each decode to their own route, in any order, and
    a withdrawal's key is its route's."""
    n = 0
    for (vtep, seq, sticky, rmac, targets, two_labels), count in updates:
        routes = []
        for _ in range(count):
            n += 1
            routes.append(
                MacIpRoute(
                    rd=f"{vtep}:{VNI}",
                    mac=mac_of(n % 250),
                    vni=VNI,
                    next_hop=vtep,
                    ip=f"10.9.0.{n % 250}",
                    route_targets=targets,
                    mobility_seq=seq,
                    sticky=sticky,
                    l3vni=L3VNI if two_labels else None,
                    router_mac=rmac,
                )
            )
        for path, route in zip(one_update(routes), routes, strict=True):
            assert gobgp_codec.decode(path) == route
            assert gobgp_codec.decode_key(path) == route.nlri_key()


@pytest.mark.skipif(gobgp_api.MISSING is not None, reason=str(gobgp_api.MISSING))
def test_updates_that_differ_only_in_their_routes_share_one_decoded_attribute_set() -> None:
    """A peer's table comes as UPDATEs whose attributes are the same but
    for the routes each MP_REACH_NLRI carries: the attributes are decoded
    once, not once an UPDATE (the decode's key is the MP_REACH_NLRI's next
    hop, not its whole encoding)."""

    def route(n: int) -> MacIpRoute:
        return MacIpRoute(
            f"{VTEPS[0]}:{VNI}", mac_of(n), VNI, VTEPS[0], f"10.9.0.{n}", (f"65000:{VNI}",)
        )

    gobgp_codec._TYPE2_ATTRIBUTES.clear()
    gobgp_codec._LAST_TYPE2[0] = (None, None)
    for first in (1, 5, 9):
        routes = [route(n) for n in range(first, first + 4)]
        assert [gobgp_codec.decode(p) for p in one_update(routes)] == routes
    assert len(gobgp_codec._TYPE2_ATTRIBUTES) == 1
