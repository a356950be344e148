#!/usr/bin/env python3
"""BMv2's cost per kind of P4 work, the model behind the data-plane figures.

Each variant is the baseline program (bench/baseline/l2fwd.p4's one exact
table on the ingress port, written out here so the variants differ from it
only in what they add) with N copies of one kind of work added: table
applies, keyless blocks, primitives, conditions, counters, meters, declared
headers and metadata, parsed headers, checksums, a hash. Every variant is
compiled with p4c, swapped into one simple_switch_grpc by
SetForwardingPipelineConfig and loaded with ``tcpreplay --topspeed`` exactly
as bench/dataplane.py does; its figure is packets per switch core against
the mean of the baseline runs either side of it (a baseline every third
variant), so drift in the machine hits both. The cost of one item, in units
of the baseline's whole per-packet cost, is (1 / ratio - 1) / N, against the
variant it extends (the plain baseline, or the one with IPv4 parsed for the
checksums).

Run alone on a quiet machine (``make bench-dataplane-cost``); writes
bench/results/dataplane_cost.json, shown in docs/benchmarks.md section 4."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from common import machine, require_switch, write_result
from dataplane_load import MachineShare, Sampler, find_tcpreplay, topspeed
from dataplane_paths import compile_v1model, install_baseline, switch_on, write_pcap
from p4vtep.dataplane.artifacts import Pipeline
from p4vtep.runtime.client import SwitchConnection
from p4vtep.switch.bmv2 import VethSet

N = 10  # copies of the work in a variant: one item is below the noise


def program(
    *,
    headers: str = "",
    header_fields: str = "",
    parse: str = "transition accept;",
    meta: str = "",
    decls: str = "",
    actions: str = "",
    forward_extra: str = "",
    tables: str = "",
    table_extra: str = "",
    apply_after: str = "",
    verify: str = "",
    egress: str = "",
    compute: str = "",
    emit: str = "",
) -> str:
    """The baseline with the given pieces spliced in (empty: the baseline)."""
    return f"""#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>
header ethernet_t {{ bit<48> dst_addr; bit<48> src_addr; bit<16> ether_type; }}
{headers}
struct headers_t {{ ethernet_t ethernet; {header_fields} }}
struct metadata_t {{ bit<8> zero; {meta} }}
parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t std) {{
    state start {{ packet.extract(hdr.ethernet); {parse} }}
}}
control V(inout headers_t hdr, inout metadata_t meta) {{ apply {{ {verify} }} }}
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {{
    {decls}
    action forward(bit<9> port) {{ std.egress_spec = port; {forward_extra} }}
    action drop() {{ mark_to_drop(std); }}
    {actions}
    table port_forward {{
        key = {{ std.ingress_port : exact @name("port"); }}
        actions = {{ forward; drop; }}
        const default_action = drop();
        size = 512;
        {table_extra}
    }}
    {tables}
    apply {{ port_forward.apply(); {apply_after} }}
}}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {{
    apply {{ {egress} }}
}}
control C(inout headers_t hdr, inout metadata_t meta) {{ apply {{ {compute} }} }}
control D(packet_out packet, in headers_t hdr) {{ apply {{ packet.emit(hdr.ethernet); {emit} }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@dataclass(frozen=True)
class Variant:
    name: str
    what: str  # one item of it, as the doc's table says
    items: int
    source: str
    relative_to: str = "baseline"  # the variant this one adds its items to


IPV4 = (
    "header ipv4_t { bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> total_len;"
    " bit<16> identification; bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol;"
    " bit<16> hdr_checksum; bit<32> src_addr; bit<32> dst_addr; }"
)
PARSE_IPV4 = (
    "transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; } }"
    " state parse_ipv4 { packet.extract(hdr.ipv4); transition accept;"
)
CHECKSUM_FIELDS = (
    "{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,"
    " hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,"
    " hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr }"
)


def _each(template: str, n: int = N) -> str:
    return "".join(template.format(i=i) for i in range(n))


def _ipv4(**extra: str) -> str:
    return program(
        headers=IPV4,
        header_fields="ipv4_t ipv4;",
        parse=PARSE_IPV4,
        emit="packet.emit(hdr.ipv4);",
        **extra,
    )


VARIANTS = [
    Variant("baseline", "the baseline: one exact table, one primitive", 1, program()),
    Variant(
        "match_apply",
        "exact-match table apply, miss, empty action",
        N,
        program(
            tables=_each(
                "table m{i} {{ key = {{ std.ingress_port : exact; }} actions = {{ NoAction; }}"
                " default_action = NoAction(); size = 512; }}\n"
            ),
            apply_after=_each("m{i}.apply();"),
        ),
    ),
    Variant(
        "keyless_apply",
        "keyless table apply, empty action",
        N,
        program(
            tables=_each(
                "table k{i} {{ actions = {{ NoAction; }} default_action = NoAction(); }}\n"
            ),
            apply_after=_each("k{i}.apply();"),
        ),
    ),
    Variant(
        "keyless_block",
        "keyless table whose action is one assignment (what p4c makes of a straight-line "
        "block, `tbl_*`)",
        N,
        program(
            meta=_each("bit<8> f{i};"),
            actions=_each("action a{i}() {{ meta.f{i} = 1; }}\n"),
            tables=_each("table k{i} {{ actions = {{ a{i}; }} default_action = a{i}(); }}\n"),
            apply_after=_each("k{i}.apply();"),
        ),
    ),
    Variant(
        "primitive",
        "assignment (primitive) inside an action already running",
        N,
        program(meta=_each("bit<8> f{i};"), forward_extra=_each("meta.f{i} = (bit<8>) port;")),
    ),
    Variant(
        "condition_metadata",
        "condition on a metadata field (false)",
        N,
        program(
            meta=_each("bit<8> f{i};"),
            apply_after=_each("if (meta.f{i} == 7) {{ mark_to_drop(std); }}"),
        ),
    ),
    Variant(
        "condition_validity",
        "condition on a header's validity (false)",
        N,
        program(apply_after=_each("if (!hdr.ethernet.isValid()) {{ meta.zero = {i}; }}")),
    ),
    Variant(
        "indexed_counter",
        "indexed counter update in an action",
        N,
        program(
            decls="counter<bit<9>>(512, CounterType.packets_and_bytes) c;",
            forward_extra="c.count(std.ingress_port);" * N,
        ),
    ),
    Variant(
        "metadata_field",
        "metadata field declared, written once",
        100,
        program(meta=_each("bit<16> m{i};", 100), forward_extra="meta.m99 = 1;"),
    ),
    Variant(
        "header_declared",
        "header instance of 13 fields declared, never valid, emitted",
        N,
        program(
            headers=IPV4,
            header_fields=_each("ipv4_t h{i};"),
            emit=_each("packet.emit(hdr.h{i});"),
        ),
    ),
    Variant(
        "ipv4_parsed",
        "IPv4 extracted and emitted, 13 fields (with its select state)",
        1,
        _ipv4(),
    ),
    Variant(
        "ipv4_one_field",
        "the same 20 bytes as 1 field",
        1,
        program(
            headers="header ipv4w_t { bit<160> all; }",
            header_fields="ipv4w_t ipv4;",
            parse=PARSE_IPV4,
            emit="packet.emit(hdr.ipv4);",
        ),
    ),
    Variant(
        "checksum_update",
        "IPv4 checksum update over 12 fields, beyond parsing the header",
        1,
        _ipv4(
            compute=f"update_checksum(hdr.ipv4.isValid(), {CHECKSUM_FIELDS}, "
            "hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);"
        ),
        relative_to="ipv4_parsed",
    ),
    Variant(
        "checksum_verify",
        "IPv4 checksum verify over 12 fields, beyond parsing the header",
        1,
        _ipv4(
            verify=f"verify_checksum(hdr.ipv4.isValid(), {CHECKSUM_FIELDS}, "
            "hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);"
        ),
        relative_to="ipv4_parsed",
    ),
    Variant(
        "crc32_hash",
        "CRC32 hash of 4 fields",
        1,
        program(
            meta="bit<16> h;",
            forward_extra="hash(meta.h, HashAlgorithm.crc32, (bit<16>) 0,"
            " { hdr.ethernet.src_addr, hdr.ethernet.dst_addr, hdr.ethernet.ether_type,"
            " std.ingress_port }, (bit<32>) 65536);",
        ),
    ),
    Variant(
        "egress_block",
        "a non-empty egress (one condition, one keyless table)",
        1,
        program(
            egress="if (std.egress_port == 3) { mark_to_drop(std); } else { std.egress_spec = 1; }"
        ),
    ),
]
BY_NAME = {v.name: v for v in VARIANTS}


def compile_variant(variant: Variant, out: Path) -> Pipeline:
    source = out / f"{variant.name}.p4"
    source.write_text(variant.source)
    return compile_v1model(source, out)


def round_order(names: list[str]) -> list[str]:
    """The baseline first, after every third variant and last."""
    order = ["baseline"]
    for i, name in enumerate(names):
        order.append(name)
        if i % 3 == 2:
            order.append("baseline")
    if order[-1] != "baseline":
        order.append("baseline")
    return order


def against_baselines(runs: list[tuple[str, float]]) -> dict[str, float]:
    """Each variant's figure over the mean of the baseline runs either side."""
    out = {}
    for i, (name, value) in enumerate(runs):
        if name == "baseline":
            continue
        before = next(v for n, v in reversed(runs[:i]) if n == "baseline")
        after = next(v for n, v in runs[i:] if n == "baseline")
        out[name] = value / ((before + after) / 2)
    return out


def unit_cost(ratios: dict[str, float], variant: Variant) -> float:
    """One item's cost in baseline units, against the variant it extends."""
    base = 1.0 if variant.relative_to == "baseline" else 1 / ratios[variant.relative_to]
    return (1 / ratios[variant.name] - base) / variant.items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5, help="topspeed window per run")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--only", nargs="+", choices=sorted(BY_NAME), help="these variants only")
    parser.add_argument("--nice", type=int, default=-10)
    args = parser.parse_args()
    try:
        os.nice(args.nice - os.nice(0))
    except PermissionError:
        print("cannot raise the priority (not root); running as is")
    require_switch()
    if find_tcpreplay() is None:
        print("SKIP: tcpreplay not found (make deps installs it)")
        return
    names = [v.name for v in VARIANTS[1:] if not args.only or v.name in args.only]
    needed = set(names) | {BY_NAME[n].relative_to for n in names}
    names = [v.name for v in VARIANTS[1:] if v.name in needed]
    share = MachineShare()
    share.start()
    per_round: list[dict[str, float]] = []
    baseline_pps: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, VethSet(f"dc{os.getpid() % 1000}", 2) as veths:
        programs = {n: compile_variant(BY_NAME[n], Path(tmp)) for n in ["baseline", *names]}
        pcap = write_pcap(Path(tmp), "baseline", args.size, 64)
        switch = switch_on(veths, "dc", Path(tmp))
        switch.start()
        assert switch.process is not None
        switch_pid = switch.process.pid
        host = {port: h for port, (_, h) in enumerate(veths.pairs, start=1)}
        conn = SwitchConnection(switch.grpc_address, 1, election_id=1)
        try:
            if not conn.connect():
                raise RuntimeError("no P4Runtime connection to the benchmark switch")

            def per_switch_core(name: str) -> float:
                pipeline = programs[name]
                conn.set_pipeline(pipeline.p4info.message, pipeline.device_config, pipeline.cookie)
                install_baseline(conn, pipeline)  # every variant keeps port_forward
                window, _ = topspeed(host[1], pcap, Sampler(host[2], switch_pid), args.seconds)
                return window.packets / max(window.switch_cpu_s, 1e-9)

            for r in range(args.rounds):
                runs = [(n, per_switch_core(n)) for n in round_order(names)]
                baseline_pps += [v for n, v in runs if n == "baseline"]
                per_round.append(against_baselines(runs))
                print(
                    f"round {r + 1}: "
                    + ", ".join(f"{n} {v:.2f}" for n, v in per_round[-1].items()),
                    flush=True,
                )
        finally:
            conn.close()
            switch.stop()
    machine_load = share.stop()
    variants = {}
    for name in names:
        variant = BY_NAME[name]
        rounds = [unit_cost(ratios, variant) for ratios in per_round]
        to_baseline = [ratios[name] for ratios in per_round]
        variants[name] = {
            "what": variant.what,
            "items": variant.items,
            "relative_to": variant.relative_to,
            "ratio_to_baseline": to_baseline,
            "units_per_item": statistics.median(rounds),
            "units_per_item_rounds": rounds,
        }
        print(
            f"{name:20s} ratio {statistics.median(to_baseline):.2f}, "
            f"{statistics.median(rounds):+.3f} units per item"
        )
    write_result(
        "dataplane_cost",
        {
            "method": {
                "frame_bytes": args.size,
                "rounds": args.rounds,
                "seconds": args.seconds,
                "figure": "packets per switch core (tcpreplay --topspeed, egress rx counter, "
                "switch process CPU time), each variant over the mean of the baselines either "
                "side; one item = (1 / ratio - 1 / reference ratio) / items",
            },
            "baseline_pps_per_switch_core": statistics.median(baseline_pps),
            "variants": variants,
            "machine": machine(),
            "machine_load": machine_load,
        },
    )


if __name__ == "__main__":
    main()
