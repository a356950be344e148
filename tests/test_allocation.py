"""Index spaces (model/allocation.py): which index a key gets, kept in a
byte per index of the space rather than a set of the indices in use."""

from __future__ import annotations

import pytest
from p4vtep.model.allocation import IndexSpace, SpaceFull


def test_indices_are_handed_out_in_order_and_a_freed_one_not_at_once():
    space = IndexSpace("vm@tor1", 1, 5)
    assert [space.get(k) for k in "abc"] == [1, 2, 3]
    assert space.get("a") == 1  # (a key keeps its index)
    space.release("b")
    assert space.get("d") == 4  # after the last one given, not the freed 2
    assert space.peek("b") is None
    assert space.changes == {"a": 1, "b": None, "c": 3, "d": 4}


def test_past_the_top_the_lowest_free_index_is_reused_then_the_space_is_full():
    space = IndexSpace("vni", 1, 4)
    for key in "abcd":
        space.get(key)
    space.release("b")
    space.release("c")
    assert space.get("e") == 2
    assert space.get("f") == 3
    with pytest.raises(SpaceFull, match="vni: all 4 indices in use"):
        space.get("g")
    assert space.peek("g") is None
    space.release("a")
    assert space.get("g") == 1


def test_restored_indices_are_taken_and_one_outside_the_space_is_kept_as_it_is():
    space = IndexSpace("tor", 0, 3)
    space.restore_all([("tor1", 0), ("tor2", 2), ("old", 9)])  # (9: other limits once)
    space.restore("tor3", 1)
    assert space.get("new") == 3
    assert space.peek("old") == 9
    space.release("old")  # (nothing to mark)
    with pytest.raises(SpaceFull):
        space.get("more")
    assert space.changes == {"new": 3, "old": None}
