"""A short resource summary of a p4c-tofino build, from the compiler's own
files: per P4 table (and attached counter, meter, selector, action data) the
stages and the SRAM / TCAM / map RAM blocks it occupies (pipe/context.json),
the stages per gress, and PHV and memory use (pipe/logs/metrics.json and
resources.json, made with -g).

    python -m p4vtep.dataplane.tofino_resources <compiler output dir>

prints JSON; `make p4-tofino` commits it as p4src/tna/build/<chip>/resources.json.
Its compiler_version records which build of the compiler made it; `decided`
leaves that out, for comparing what the program decides.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# Names of the program's own objects; the compiler's helper tables (gateways,
# tbl_<file><line> for statements outside tables) are summed per gress.
OWN_PREFIXES = ("VtepIngress.", "VtepEgress.")
# Fields that name the compiler's build, not anything the program decides: builds
# of one release differ here alone (a git checkout's "9.13.4 (34b86e9bac)", a
# release tarball's "9.13.4 ()"). Recorded, but not compared (issue 41).
BUILD_FIELDS = frozenset({"compiler_version"})


def _allocations(node: Any) -> Iterator[tuple[int | None, str, int]]:
    """(stage, memory type, memory unit) for every block under node."""
    if isinstance(node, dict):
        stage = node.get("stage_number")
        for key, value in node.items():
            if key.endswith("memory_resource_allocation") and isinstance(value, dict):
                kind = value.get("memory_type", "?")
                for entry in value.get("memory_units_and_vpns", []):
                    for unit in entry.get("memory_units", []):
                        yield stage, kind, unit
            else:
                for found_stage, kind, unit in _allocations(value):
                    yield (found_stage if found_stage is not None else stage), kind, unit
    elif isinstance(node, list):
        for item in node:
            yield from _allocations(item)


def _stages(node: Any) -> set[int]:
    found: set[int] = set()
    if isinstance(node, dict):
        if isinstance(node.get("stage_number"), int) and node["stage_number"] >= 0:
            found.add(node["stage_number"])
        for value in node.values():
            found |= _stages(value)
    elif isinstance(node, list):
        for item in node:
            found |= _stages(item)
    return found


def summarise(out_dir: Path) -> dict[str, Any]:
    context = json.loads((out_dir / "pipe" / "context.json").read_text())
    tables: dict[str, dict[str, Any]] = {}
    gress_stages: dict[str, set[int]] = defaultdict(set)
    for table in context["tables"]:
        name = table["name"]
        stages = _stages(table)
        gress_stages[table.get("direction", "?")] |= stages
        if not name.startswith(OWN_PREFIXES):
            continue
        blocks: dict[str, set[tuple[int | None, int]]] = defaultdict(set)
        for stage, kind, unit in _allocations(table):
            blocks[kind].add((stage, unit))
        tables[name] = {
            "type": table["table_type"],
            "size": table.get("size"),
            "stages": sorted(stages),
            "blocks": {kind: len(units) for kind, units in sorted(blocks.items())},
        }
    summary: dict[str, Any] = {
        "target": context.get("target"),
        "compiler_version": context.get("compiler_version"),
        "stages": {g: (max(s) + 1 if s else 0) for g, s in sorted(gress_stages.items())},
        "tables": dict(sorted(tables.items())),
    }
    logs = out_dir / "pipe" / "logs"
    if (logs / "metrics.json").is_file() and (logs / "resources.json").is_file():
        metrics = json.loads((logs / "metrics.json").read_text())
        containers = json.loads((logs / "resources.json").read_text())["resources"]
        summary["phv"] = _phv(metrics["phv"], containers["phv_containers"])
        mau = metrics["mau"]
        summary["memories_used"] = {k: mau[k] for k in ("srams", "tcams", "map_rams")}
    return summary


def decided(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary without its BUILD_FIELDS: the stages, tables, memories and PHV the
    program takes, which two builds of the same compiler agree on."""
    return {key: value for key, value in summary.items() if key not in BUILD_FIELDS}


def _phv(used: dict[str, Any], available: dict[str, Any]) -> dict[str, Any]:
    """Per container kind and width: containers occupied of those there are,
    and the bits the program's fields occupy (made with -g: logs/)."""
    out: dict[str, Any] = {}
    for kind, rows in sorted(used.items()):
        sizes = {c["width"]: c["units"] for c in available.get(kind, [])}
        for row in rows:
            width = row["bit_width"]
            out[f"{kind}_{width}b"] = {
                "containers": f"{row['containers_occupied']}/{sizes.get(width, '?')}",
                "bits": row["bits_occupied"],
            }
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(summarise(Path(argv[1])), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
