"""The v1model and Tofino P4Infos describe the same pipeline: same tables,
keys, actions, parameters, counters, meters and action profiles, by name.

Ids may differ (the Tofino backend derives its own): the controller builds
entries per target from each P4Info. Every accepted difference is listed
below with its reason; anything else fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from p4vtep.runtime.protos import p4info_pb2

REPO = Path(__file__).resolve().parents[1]
V1MODEL = REPO / "p4src" / "v1model" / "build" / "p4vtep.p4info.txtpb"
TOFINO = {
    chip: REPO / "p4src" / "tna" / "build" / chip / "p4vtep.p4info.txtpb"
    for chip in ("tofino", "tofino2")
}

# (section, name, field), each with the reason the two targets differ there.
ACCEPTED = {
    # BMv2's bind_vm also takes the VM's first IPv4 address, so that a frame
    # claiming it skips the IPv4 source guard's lookup (a table apply is the
    # unit of cost there); Tofino looks the guard up beside the binding at no
    # cost per frame (v1model/arch.p4, PORT_SECURITY_BOUND_IPV4).
    ("actions", "VtepIngress.access_filtering.bind_vm", "params"),
    # v1model's action_selector has no group-size limit (P4Info says 0); TNA's
    # ActionSelector is declared with at most 16 members per ECMP group, and
    # the Tofino P4Info says 16. The controller's groups stay within 16.
    ("action_profiles", "VtepIngress.underlay.ecmp_selector", "max_group_size"),
}

# Tofino 1's profile (tna/p4vtep.p4, docs/tofino.md "Profiles"): IPv4 tenants,
# with port security for what it carries (the IPv4 source guard, the extra
# MACs, the per-VM counter) but no IPv6 source guard: with IPv6 its ingress
# needs 14-15 of its 12 stages; Tofino 2 has both. The controller reads the
# profile from each P4Info (dataplane/limits.py: IPv6 refused on such a ToR;
# entries.port_security_supported, entries.ipv6_guard_supported).
TOFINO1_PROFILE = {
    ("tables", "VtepIngress.nd_suppression.nd_suppression", "present"),
    ("tables", "VtepIngress.l3_forwarding.ipv6_host_route", "present"),
    ("tables", "VtepIngress.l3_forwarding.ipv6_prefix_route", "present"),
    ("actions", "VtepIngress.nd_suppression.nd_reply", "present"),
    ("actions", "VtepIngress.l3_forwarding.route_to_local_vm_v6", "present"),
    ("actions", "VtepIngress.l3_forwarding.route_to_remote_vtep_v6", "present"),
    ("direct_counters", "VtepIngress.nd_suppression.nd_reply_counter", "present"),
    ("tables", "VtepIngress.access_filtering.port_security.ipv6_source_guard", "present"),
    # Fewer IPv4 guard entries than BMv2 (tna/sizes.p4: the guard is TCAM in
    # the binding's stage, whose 24 blocks hold 6K rows); as many extra MACs.
    ("tables", "VtepIngress.access_filtering.port_security.ipv4_source_guard", "size"),
}

# Per chip: Tofino 1 holds fewer routes, MACs and ARP entries than BMv2 and
# Tofino 2 (tna/sizes.p4: the largest that fit its 12 ingress stages with QoS).
ACCEPTED_ON = {
    "tofino": {
        ("tables", "VtepIngress.l3_forwarding.host_route", "size"),
        ("tables", "VtepIngress.l3_forwarding.prefix_route", "size"),
        ("tables", "VtepIngress.l2_forwarding.mac_table", "size"),
        ("tables", "VtepIngress.arp_suppression.arp_suppression", "size"),
        # Tofino 1 has no ingress stage for the receive meter after the L2/L3
        # decision (docs/tofino.md, "QoS"): its RxPolicing runs in egress, the
        # same meter and colour counter by their short names.
        ("meters", "VtepIngress.rx_policing.vm_rx_meter", "present"),
        ("meters", "VtepEgress.rx_policing.vm_rx_meter", "present"),
        ("counters", "VtepIngress.rx_policing.vm_rx_color_counter", "present"),
        # ...for flood copies too: no flood meter of its own there.
        ("meters", "VtepEgress.rx_delivery.vm_rx_flood_meter", "present"),
        ("counters", "VtepEgress.rx_delivery.vm_rx_flood_color_counter", "present"),
        # ...and no colour counters (NO_COLOR_COUNTERS: they took the stages).
        ("counters", "VtepIngress.tx_color_count.vm_tx_color_counter", "present"),
    }
    | TOFINO1_PROFILE,
    # Tofino 2 holds fewer IPv6 and source-guard entries than BMv2
    # (tna/sizes.p4: TCAM and two-word keys; at 8K + 8K guards it needs
    # 21-26 of its 20 ingress stages: docs/tofino.md, "Profiles").
    "tofino2": {
        ("tables", "VtepIngress.nd_suppression.nd_suppression", "size"),
        ("tables", "VtepIngress.l3_forwarding.ipv6_host_route", "size"),
        ("tables", "VtepIngress.l3_forwarding.ipv6_prefix_route", "size"),
        ("tables", "VtepIngress.access_filtering.port_security.allowed_source_mac", "size"),
        ("tables", "VtepIngress.access_filtering.port_security.ipv4_source_guard", "size"),
        ("tables", "VtepIngress.access_filtering.port_security.ipv6_source_guard", "size"),
    },
}


def _load(path: Path) -> p4info_pb2.P4Info:
    message = p4info_pb2.P4Info()
    text_format.Parse(path.read_text(encoding="utf-8"), message)
    return message


def _summary(p4info: p4info_pb2.P4Info) -> dict[str, dict[str, dict[str, Any]]]:
    """Everything the controller relies on, keyed by names instead of ids."""
    names = {}
    for section in (
        "tables",
        "actions",
        "action_profiles",
        "counters",
        "direct_counters",
        "meters",
    ):
        for obj in getattr(p4info, section):
            names[obj.preamble.id] = obj.preamble.name

    def action_refs(table: Any) -> list[tuple[str, int]]:
        return sorted((names[a.id], a.scope) for a in table.action_refs)

    out: dict[str, dict[str, dict[str, Any]]] = {
        "tables": {
            t.preamble.name: {
                "keys": [(m.name, m.bitwidth, m.match_type) for m in t.match_fields],
                "actions": action_refs(t),
                "const_default_action": names.get(t.const_default_action_id, ""),
                "implementation": names.get(t.implementation_id, ""),
                "direct_resources": sorted(names[r] for r in t.direct_resource_ids),
                "size": t.size,
                "is_const_table": t.is_const_table,
            }
            for t in p4info.tables
        },
        "actions": {
            a.preamble.name: {"params": [(p.name, p.bitwidth) for p in a.params]}
            for a in p4info.actions
        },
        "action_profiles": {
            p.preamble.name: {
                "tables": sorted(names[t] for t in p.table_ids),
                "with_selector": p.with_selector,
                "size": p.size,
                "max_group_size": p.max_group_size,
            }
            for p in p4info.action_profiles
        },
        "counters": {
            c.preamble.name: {"unit": c.spec.unit, "size": c.size} for c in p4info.counters
        },
        "direct_counters": {
            c.preamble.name: {"unit": c.spec.unit, "table": names[c.direct_table_id]}
            for c in p4info.direct_counters
        },
        "meters": {m.preamble.name: {"unit": m.spec.unit, "size": m.size} for m in p4info.meters},
        "controller_packet_metadata": {
            c.preamble.name: {"metadata": [(m.name, m.bitwidth) for m in c.metadata]}
            for c in p4info.controller_packet_metadata
        },
    }
    return out


def _differences(a: dict, b: dict) -> list[tuple[str, str, str]]:
    found = []
    for section in sorted(set(a) | set(b)):
        sa, sb = a.get(section, {}), b.get(section, {})
        for name in sorted(set(sa) | set(sb)):
            if name not in sa or name not in sb:
                found.append((section, name, "present"))
                continue
            for field in sorted(set(sa[name]) | set(sb[name])):
                if sa[name].get(field) != sb[name].get(field):
                    found.append((section, name, field))
    return found


@pytest.mark.parametrize("chip", sorted(TOFINO))
def test_tofino_p4info_matches_v1model(chip: str) -> None:
    v1model = _summary(_load(V1MODEL))
    tofino = _summary(_load(TOFINO[chip]))
    found = _differences(v1model, tofino)
    accepted = ACCEPTED | ACCEPTED_ON[chip]
    unexpected = [d for d in found if d not in accepted]
    detail = [
        f"{s} {n} {f}: v1model={v1model.get(s, {}).get(n, {}).get(f)!r} "
        f"{chip}={tofino.get(s, {}).get(n, {}).get(f)!r}"
        for s, n, f in unexpected
    ]
    assert not unexpected, "\n".join(detail)
    # An accepted difference that went away must leave the list too.
    assert set(found) >= accepted, f"no longer different: {accepted - set(found)}"


def test_the_summary_sees_a_renamed_key() -> None:
    """The comparison is not vacuous: a key renamed on one side is reported."""
    p4info = _load(V1MODEL)
    changed = p4info_pb2.P4Info()
    changed.CopyFrom(p4info)
    changed.tables[0].match_fields[0].name = "renamed"
    assert (
        "tables",
        changed.tables[0].preamble.name,
        "keys",
    ) in _differences(_summary(p4info), _summary(changed))
