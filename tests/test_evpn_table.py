"""The learned EVPN table: RFC 7432 MAC mobility rules, withdrawal, peer down."""

from __future__ import annotations

from p4vtep.evpn.routes import InclusiveMulticastRoute, MacIpRoute
from p4vtep.evpn.table import LearnedTable
from p4vtep.evpn.view import LocalAdvertisement, LocalMac, RemoteMac, ViewChange

VNI = 5000
MAC = "52:54:00:00:00:01"
PEER_A, PEER_B = "192.0.2.1", "192.0.2.2"
VTEP_A, VTEP_B = "198.51.100.1", "198.51.100.2"
TOR1, TOR2 = "10.0.0.1", "10.0.0.2"


def mac_route(
    vtep: str,
    seq: int = 0,
    ip: str | None = None,
    mac: str = MAC,
    vni: int = VNI,
    sticky: bool = False,
) -> MacIpRoute:
    return MacIpRoute(
        rd=f"{vtep}:{vni & 0xFFFF}",
        mac=mac,
        vni=vni,
        next_hop=vtep,
        ip=ip,
        route_targets=(f"65000:{vni}",),
        mobility_seq=seq,
        sticky=sticky,
    )


def imet(vtep: str, vni: int = VNI) -> InclusiveMulticastRoute:
    return InclusiveMulticastRoute(
        rd=f"{vtep}:{vni}", vni=vni, originator=vtep, next_hop=vtep, route_targets=(f"65000:{vni}",)
    )


def remote(table: LearnedTable) -> dict[tuple[int, str], tuple[str, int]]:
    return {(m.vni, m.mac): (m.vtep, m.seq) for m in table.view().remote_macs()}


def test_a_learned_mac_and_its_ips_become_one_remote_fact() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A))
    change = table.learn(PEER_A, mac_route(VTEP_A, ip="192.168.1.10"))
    table.learn(PEER_A, mac_route(VTEP_A, ip="fd00::10"))
    assert table.view().remote_macs() == {
        RemoteMac(VNI, MAC, VTEP_A, frozenset({"192.168.1.10", "fd00::10"}), 0, PEER_A)
    }
    assert change.remote_removed == {RemoteMac(VNI, MAC, VTEP_A, frozenset(), 0, PEER_A)}
    assert change.remote_added == {
        RemoteMac(VNI, MAC, VTEP_A, frozenset({"192.168.1.10"}), 0, PEER_A)
    }


def test_higher_sequence_number_wins_the_mac_move() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=0))
    change = table.learn(PEER_B, mac_route(VTEP_B, seq=1))
    assert remote(table) == {(VNI, MAC): (VTEP_B, 1)}
    assert {m.vtep for m in change.remote_removed} == {VTEP_A}
    # The old owner's late withdrawal changes nothing more.
    assert not table.unlearn(PEER_A, mac_route(VTEP_A).nlri_key())
    assert remote(table) == {(VNI, MAC): (VTEP_B, 1)}


def test_a_stale_lower_sequence_number_does_not_take_the_mac_back() -> None:
    table = LearnedTable()
    table.learn(PEER_B, mac_route(VTEP_B, seq=5))
    assert not table.learn(PEER_A, mac_route(VTEP_A, seq=4))
    assert remote(table) == {(VNI, MAC): (VTEP_B, 5)}
    # ...but it is the next best once the winner is withdrawn.
    table.unlearn(PEER_B, mac_route(VTEP_B).nlri_key())
    assert remote(table) == {(VNI, MAC): (VTEP_A, 4)}


def test_equal_sequence_numbers_from_two_vteps_are_refused_and_counted() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=3))
    change = table.learn(PEER_B, mac_route(VTEP_B, seq=3))
    assert not change
    assert remote(table) == {(VNI, MAC): (VTEP_A, 3)}  # what was installed stays
    assert table.refused["conflict"] == 1
    # The conflict ends when one side moves on: a higher number wins again.
    table.learn(PEER_B, mac_route(VTEP_B, seq=4))
    assert remote(table) == {(VNI, MAC): (VTEP_B, 4)}
    assert table.refused["conflict"] == 1


def test_a_refused_claim_wins_once_it_is_uncontested() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=1))
    table.learn(PEER_B, mac_route(VTEP_B, seq=2))
    table.learn(PEER_A, mac_route(VTEP_A, seq=2))  # ties with the winner: refused
    assert remote(table) == {(VNI, MAC): (VTEP_B, 2)}
    table.unlearn(PEER_B, mac_route(VTEP_B).nlri_key())
    assert remote(table) == {(VNI, MAC): (VTEP_A, 2)}  # uncontested now


def test_a_tie_left_when_the_winner_goes_installs_nothing() -> None:
    table = LearnedTable()
    vtep_c = "198.51.100.3"
    table.learn(PEER_A, mac_route(VTEP_A, seq=2))
    table.learn(PEER_B, mac_route(VTEP_B, seq=2))  # refused
    table.learn(PEER_A, mac_route(vtep_c, seq=3))
    assert remote(table) == {(VNI, MAC): (vtep_c, 3)}
    change = table.unlearn(PEER_A, mac_route(vtep_c).nlri_key())
    # A and B tie at 2 and neither was installed: no guess, the MAC is unknown.
    assert remote(table) == {}
    assert {m.vtep for m in change.remote_removed} == {vtep_c}


def test_a_sticky_mac_is_not_moved_by_a_higher_number() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=0, sticky=True))
    table.learn(PEER_B, mac_route(VTEP_B, seq=9))
    assert remote(table) == {(VNI, MAC): (VTEP_A, 0)}


def test_a_local_vm_for_a_remotely_learned_mac_advertises_seq_plus_one() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=4))
    change = table.set_local([LocalMac(VNI, MAC, TOR1, frozenset({"192.168.1.10"}))])
    assert change.local_changed == {(VNI, MAC)}
    assert {m.vtep for m in change.remote_removed} == {VTEP_A}
    assert table.view().remote_macs() == frozenset()
    assert table.view().advertisements() == {
        LocalAdvertisement(VNI, MAC, TOR1, frozenset({"192.168.1.10"}), 5)
    }


def test_a_new_local_mac_nobody_else_claims_starts_at_zero() -> None:
    table = LearnedTable()
    table.set_local([LocalMac(VNI, MAC, TOR1)])
    assert [a.seq for a in table.view().advertisements()] == [0]


def test_a_remote_claim_above_ours_means_the_vm_moved_away() -> None:
    table = LearnedTable()
    table.set_local([LocalMac(VNI, MAC, TOR1)])
    change = table.learn(PEER_A, mac_route(VTEP_A, seq=1))
    assert change.local_changed == {(VNI, MAC)}
    assert table.view().advertisements() == frozenset()  # we stop advertising it
    assert table.view().moved_away() == {(VNI, MAC)}
    assert remote(table) == {(VNI, MAC): (VTEP_A, 1)}


def test_a_remote_claim_equal_to_ours_is_a_conflict_and_ours_stays() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=2))
    table.set_local([LocalMac(VNI, MAC, TOR1)])  # seq 3
    change = table.learn(PEER_B, mac_route(VTEP_B, seq=3))
    assert not change
    assert [(a.vtep, a.seq) for a in table.view().advertisements()] == [(TOR1, 3)]
    assert table.refused["conflict"] == 1
    assert table.view().remote_macs() == frozenset()


def test_a_vm_migrating_away_and_back_keeps_raising_the_number() -> None:
    table = LearnedTable()
    table.set_local([LocalMac(VNI, MAC, TOR1)])  # 0
    table.learn(PEER_A, mac_route(VTEP_A, seq=1))  # moved to the FRR host
    table.set_local([])  # the inventory follows: detached here
    assert remote(table) == {(VNI, MAC): (VTEP_A, 1)}
    table.set_local([LocalMac(VNI, MAC, TOR2)])  # and back, onto our other ToR
    assert [(a.vtep, a.seq) for a in table.view().advertisements()] == [(TOR2, 2)]
    assert table.view().remote_macs() == frozenset()
    # The remote side withdraws its now-stale route: nothing changes for us.
    assert not table.unlearn(PEER_A, mac_route(VTEP_A).nlri_key())


def test_a_move_between_our_own_tors_bumps_the_number() -> None:
    table = LearnedTable()
    table.set_local([LocalMac(VNI, MAC, TOR1)])
    change = table.set_local([LocalMac(VNI, MAC, TOR2)])
    assert change.local_changed == {(VNI, MAC)}
    assert [(a.vtep, a.seq) for a in table.view().advertisements()] == [(TOR2, 1)]


def test_the_same_mac_in_two_vnis_is_two_facts() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, vni=5000))
    table.learn(PEER_B, mac_route(VTEP_B, vni=6000))
    assert remote(table) == {(5000, MAC): (VTEP_A, 0), (6000, MAC): (VTEP_B, 0)}
    table.set_local([LocalMac(5000, MAC, TOR1)])
    assert remote(table) == {(6000, MAC): (VTEP_B, 0)}
    assert table.view().remote_macs(6000)
    assert not table.view().remote_macs(5000)


def test_type_3_routes_make_the_flood_list_and_go_with_withdrawal() -> None:
    table = LearnedTable()
    change = table.learn(PEER_A, imet(VTEP_A))
    assert change.flood_added == {(VNI, VTEP_A)}
    table.learn(PEER_B, imet(VTEP_B))
    table.learn(PEER_B, imet(VTEP_B, vni=6000))
    assert table.view().flood_vteps(VNI) == {VTEP_A, VTEP_B}
    assert table.view().flood_map() == {VNI: {VTEP_A, VTEP_B}, 6000: {VTEP_B}}
    change = table.unlearn(PEER_A, imet(VTEP_A).nlri_key())
    assert change.flood_removed == {(VNI, VTEP_A)}
    assert table.view().flood_vteps(VNI) == {VTEP_B}


def test_a_session_going_down_withdraws_everything_that_peer_gave() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=1))
    table.learn(PEER_A, imet(VTEP_A))
    table.learn(PEER_B, mac_route(VTEP_B, mac="52:54:00:00:00:02"))
    table.learn(PEER_B, mac_route(VTEP_B, seq=0))  # lower: waits behind VTEP_A
    table.learn(PEER_B, imet(VTEP_B))
    change = table.drop_source(PEER_A)
    assert change.flood_removed == {(VNI, VTEP_A)}
    assert remote(table) == {(VNI, MAC): (VTEP_B, 0), (VNI, "52:54:00:00:00:02"): (VTEP_B, 0)}
    assert table.view().flood_vteps(VNI) == {VTEP_B}
    assert not table.drop_source(PEER_A)  # nothing left from it


def test_two_route_reflectors_carrying_the_same_route_count_once() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=1))
    table.learn(PEER_B, mac_route(VTEP_A, seq=1))  # same VTEP via another peer
    assert remote(table) == {(VNI, MAC): (VTEP_A, 1)}
    assert table.refused["conflict"] == 0
    table.drop_source(PEER_A)
    assert remote(table) == {(VNI, MAC): (VTEP_A, 1)}  # still known through PEER_B


def test_static_vteps_flood_and_static_macs_are_sticky() -> None:
    table = LearnedTable()
    table.set_static([(VNI, VTEP_B)], [(VNI, MAC, VTEP_B, ["192.168.1.50"])])
    assert table.view().flood_vteps(VNI) == {VTEP_B}
    assert remote(table) == {(VNI, MAC): (VTEP_B, 0)}
    table.learn(PEER_A, mac_route(VTEP_A, seq=7))
    assert remote(table) == {(VNI, MAC): (VTEP_B, 0)}  # static wins over BGP
    change = table.set_static([], [])
    assert change.flood_removed == {(VNI, VTEP_B)}
    assert remote(table) == {(VNI, MAC): (VTEP_A, 7)}


def test_listeners_hear_each_change_once_and_a_failing_one_does_not_stop_intake() -> None:
    table = LearnedTable()
    heard: list[ViewChange] = []

    def broken(change: ViewChange) -> None:
        raise RuntimeError("listener bug")

    table.on_change(broken)
    table.view().on_change(heard.append)
    table.learn(PEER_A, mac_route(VTEP_A))
    table.learn(PEER_A, mac_route(VTEP_A))  # the same again: no change, no call
    table.learn(PEER_A, imet(VTEP_A))
    assert [bool(c.remote_added) for c in heard] == [True, False]
    assert heard[1].flood_added == {(VNI, VTEP_A)}


def test_a_readvertisement_with_a_new_next_hop_replaces_the_old_one() -> None:
    table = LearnedTable()
    first = mac_route(VTEP_A, seq=1)
    table.learn(PEER_A, first)
    moved = MacIpRoute(
        rd=first.rd, mac=MAC, vni=VNI, next_hop=VTEP_B, route_targets=first.route_targets,
        mobility_seq=2,
    )  # fmt: skip
    table.learn(PEER_A, moved)  # same NLRI (same RD): an implicit withdrawal
    assert remote(table) == {(VNI, MAC): (VTEP_B, 2)}


# ---- what `p4vtep evpn routes` shows: every held route and its fate -----------


def fates(table: LearnedTable) -> set[tuple[str, int, str, str, int, str]]:
    return {(h.source, h.type, h.mac, h.vtep, h.seq, h.lost) for h in table.view().held_routes()}


def test_held_routes_say_which_is_installed_and_why_the_others_are_not() -> None:
    table = LearnedTable()
    table.learn(PEER_A, mac_route(VTEP_A, seq=1))
    table.learn(PEER_A, imet(VTEP_A))
    table.learn(PEER_B, mac_route(VTEP_B, seq=1))  # a tie: refused, A stays
    assert fates(table) == {
        (PEER_A, 2, MAC, VTEP_A, 1, ""),
        (PEER_A, 3, "", VTEP_A, 0, ""),
        (PEER_B, 2, MAC, VTEP_B, 1, "conflict"),
    }
    table.learn(PEER_B, mac_route(VTEP_B, seq=2))  # B moves on: it wins, A is superseded
    assert fates(table) == {
        (PEER_A, 2, MAC, VTEP_A, 1, "superseded"),
        (PEER_A, 3, "", VTEP_A, 0, ""),
        (PEER_B, 2, MAC, VTEP_B, 2, ""),
    }
    # Our VM takes the MAC (one higher than B): every remote claim is superseded.
    table.set_local([LocalMac(VNI, MAC, TOR1)])
    assert {h.lost for h in table.view().held_routes() if h.type == 2} == {"superseded"}
    assert table.view().learned_counts() == {PEER_A: 2, PEER_B: 1}
    table.drop_source(PEER_A)
    assert table.view().learned_counts() == {PEER_B: 1}


def test_held_routes_include_the_static_vteps_of_the_fabric_file() -> None:
    table = LearnedTable()
    table.set_static([(VNI, VTEP_A)], [(VNI, MAC, VTEP_A, ["192.168.1.5"])])
    table.learn(PEER_B, mac_route(VTEP_B, seq=7))  # static MACs are sticky: B loses
    held = {(h.source, h.type, h.mac, h.vtep, h.ips, h.lost) for h in table.view().held_routes()}
    assert held == {
        ("static", 3, "", VTEP_A, frozenset(), ""),
        ("static", 2, MAC, VTEP_A, frozenset({"192.168.1.5"}), ""),
        (PEER_B, 2, MAC, VTEP_B, frozenset(), "superseded"),
    }
    assert table.view().learned_counts() == {PEER_B: 1}  # static entries are no peer's
