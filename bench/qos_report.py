"""The QoS benchmark's figures (bench/qos.py): per-VM statistics of the 100 ms
throughput samples, the table it prints, the time-series PNG, and the section
bench/report.py puts in docs/benchmarks.md. No network, no switch: unit-tested
in tests/test_bench_qos.py."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from common import RESULTS, percentile

ARMS = {
    "A": "hypervisor shaping (Linux tc on the server, ToR not policing)",
    "B": "p4vtep (the guarantee at the ToR)",
    "C": "p4vtep policing with the hypervisor's rates (x's PIR = link - guarantees)",
}
TARGET_P5 = 0.9  # arm B: p5 of a guaranteed VM's throughput >= 0.9 of its guarantee


def throughput_mbps(samples: list[tuple[float, int]]) -> list[tuple[float, float]]:
    """(time s, counter bytes) samples -> (interval end s, Mbit/s) per interval."""
    out = []
    for (t0, b0), (t1, b1) in itertools.pairwise(samples):
        if t1 > t0:
            out.append((t1, (b1 - b0) * 8 / (t1 - t0) / 1e6))
    return out


def vm_stats(mbps: list[float], guarantee_mbps: float | None) -> dict[str, Any]:
    """p1, p5, median, minimum, mean (Mbit/s) and, for a guaranteed VM, each
    as a fraction of the guarantee."""
    if not mbps:
        return {"n": 0}
    stats: dict[str, Any] = {
        "n": len(mbps),
        "p1": percentile(mbps, 1),
        "p5": percentile(mbps, 5),
        "median": percentile(mbps, 50),
        "min": min(mbps),
        "max": max(mbps),
        "mean": sum(mbps) / len(mbps),
    }
    if guarantee_mbps:
        stats["of_guarantee"] = {
            k: stats[k] / guarantee_mbps for k in ("p1", "p5", "median", "min", "mean")
        }
    return stats


def greedy_share(series: dict[str, list[float]], greedy: str, link_mbps: float) -> dict:
    """The greedy VM's share per interval: of the link, and of what the three
    VMs received together (medians and p95 over the intervals)."""
    n = min(len(v) for v in series.values())
    of_link = [series[greedy][i] / link_mbps for i in range(n)]
    totals = [sum(v[i] for v in series.values()) for i in range(n)]
    of_total = [series[greedy][i] / t for i, t in enumerate(totals) if t > 0]
    if not of_link:
        return {}
    return {
        "of_link_median": percentile(of_link, 50),
        "of_total_median": percentile(of_total, 50) if of_total else 0.0,
        "of_total_p95": percentile(of_total, 95) if of_total else 0.0,
        "link_used_median": percentile([t / link_mbps for t in totals], 50),
    }


def summarise(run: dict) -> dict:
    """Statistics of one arm's run, the first ``run["warmup_s"]`` seconds left
    out: ``vms`` of what each VM's interface received (``run["series"]``: VM
    -> [(t, Mbit/s)]), ``goodput`` of what its application read
    (``run["goodput_series"]``, when the run has it)."""
    warm = run["warmup_s"]

    def per_vm(series: dict[str, list]) -> tuple[dict[str, list[float]], dict[str, Any]]:
        kept = {vm: [m for t, m in s if t > warm] for vm, s in series.items()}
        stats = {
            vm: vm_stats(kept[vm], run["guarantee_mbps"] if vm in run["guaranteed"] else None)
            for vm in kept
        }
        return kept, stats

    kept, vms = per_vm(run["series"])
    out = {"vms": vms, "greedy": greedy_share(kept, run["greedy"], run["link_mbps"])}
    if any(run.get("goodput_series", {}).values()):
        out["goodput"] = per_vm(run["goodput_series"])[1]
    return out


def judged(stats: dict) -> dict:
    """The figures the target is judged on: goodput when the run has it (a
    TCP retransmission is in the interface's bytes twice but delivered once),
    else the interface's."""
    return stats.get("goodput") or stats["vms"]


def met(stats: dict, guaranteed: list[str]) -> bool:
    figures = judged(stats)
    return all(figures[vm].get("of_guarantee", {}).get("p5", 0) >= TARGET_P5 for vm in guaranteed)


def table(result: dict) -> list[str]:
    """Markdown rows: per protocol and arm, the guaranteed VMs' figures and
    the greedy VM's share."""
    rows = [
        "| protocol | arm | round | VM | p1 | p5 | median | min | mean (Mbit/s) "
        "| p5 / guarantee | goodput p5 / guarantee, mean Mbit/s "
        "| greedy: of link / of delivered |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        s = run["stats"]
        share = s["greedy"]
        for vm in run["guaranteed"]:
            v = s["vms"][vm]
            g = s.get("goodput", {}).get(vm)
            p5 = v["of_guarantee"]["p5"]
            # The figure the target is judged on (judged()), in bold for arm B.
            bold = "**" if run["arm"] == "B" else ""
            bold_if, bold_g = ("", bold) if g else (bold, "")
            good = f"{bold_g}{g['of_guarantee']['p5']:.2f}{bold_g}, {g['mean']:.1f}" if g else "-"
            rows.append(
                f"| {run['protocol']} | {run['arm']} | {run['round']} | {vm} | {v['p1']:.1f} | "
                f"{v['p5']:.1f} | {v['median']:.1f} | {v['min']:.1f} | {v['mean']:.1f} | "
                f"{bold_if}{p5:.2f}{bold_if} | {good} | {share.get('of_link_median', 0):.2f} / "
                f"{share.get('of_total_median', 0):.2f} |"
            )
    return rows


def checks(result: dict) -> list[str]:
    """Per run, whether the set-up held: the link full, the ToR taking in all
    that was offered, the relays delivering what the ToR sent, the switch's
    CPU and what other processes on the machine took."""
    rows = [
        "| protocol | arm | round | link used | ToR took in (of offered Mbit/s) "
        "| VMs got / ToR sent (A: after the shapers) | switch CPU (cores) "
        "| other processes (cores) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        sw = run.get("switch", {})
        took = sw.get("switch_took_in")
        rows.append(
            f"| {run['protocol']} | {run['arm']} | {run['round']} | "
            f"{run.get('link_used_median', 0):.2f} | "
            f"{'-' if took is None else f'{took:.3f}'} ({sw.get('offered_mbps', 0):.1f}) | "
            f"{run.get('relay_kept') or 0:.3f} | {run.get('switch_cpu_share', 0):.2f} | "
            f"{run.get('machine', {}).get('others_cores', 0):.2f} |"
        )
    return rows


def plot(result: dict, path: Path) -> None:
    """One panel per protocol and arm (first round), the three VMs' 100 ms
    throughput against time, the guarantee and the link drawn across."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    firsts = [r for r in result["runs"] if r["round"] == 1]
    protocols = list(dict.fromkeys(r["protocol"] for r in firsts))  # in the run's order
    arms = list(dict.fromkeys(r["arm"] for r in firsts))
    fig, axes = plt.subplots(
        len(protocols),
        len(arms),
        figsize=(6 * len(arms), 3.4 * len(protocols)),
        squeeze=False,
        sharey=True,
    )
    colours = {"g1": "tab:blue", "g2": "tab:green", "x": "tab:red"}
    for row, proto in enumerate(protocols):
        for col, arm in enumerate(arms):
            ax = axes[row][col]
            run = next((r for r in firsts if r["protocol"] == proto and r["arm"] == arm), None)
            if run is None:
                ax.set_visible(False)
                continue
            # What the applications read, when the run has it (retransmitted
            # duplicates are in the interfaces' bytes); else the interfaces'.
            goodput = any(run.get("goodput_series", {}).values())
            shown = run["goodput_series"] if goodput else run["series"]
            for vm, series in shown.items():
                label = f"{vm} ({'guaranteed' if vm in run['guaranteed'] else 'greedy'})"
                ax.plot(
                    [t for t, _ in series],
                    [m for _, m in series],
                    lw=0.7,
                    color=colours.get(vm),
                    label=label,
                )
            ax.axhline(run["guarantee_mbps"], ls="--", color="k", lw=0.8, label="guarantee")
            ax.axhline(run["link_mbps"], ls=":", color="grey", lw=0.8, label="link")
            ax.set_title(f"{proto.upper()}, arm {arm}: {ARMS[arm]}", fontsize=8)
            ax.set_xlabel("s")
            ax.set_ylabel("goodput, Mbit/s per 100 ms" if goodput else "Mbit/s received per 100 ms")
            ax.set_ylim(0, run["link_mbps"] * 1.15)
            ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(
        f"Two VMs guaranteed {firsts[0]['guarantee_mbps']:g} Mbit/s each on a "
        f"{firsts[0]['link_mbps']:g} Mbit/s server link, a third greedy "
        f"({result.get('label', '')})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def latest(results: Path = RESULTS) -> list[dict]:
    """The stored runs of bench/qos.py, oldest first (bench/results/qos-*.json)."""
    out = []
    for path in sorted(results.glob("qos-*.json")):
        data = json.loads(path.read_text())
        for entry in data.get("entries", []):
            out.append({"file": path.name, **entry})
    return out


def section(out: list[str]) -> None:
    """docs/benchmarks.md's QoS section (bench/report.py)."""
    out.append(
        '`bench/qos.py` (`make bench-qos`; docs/qos.md, "The benchmark"): the 10GbE '
        "consolidation study of issue 30 scaled down for BMv2. One BMv2 ToR; its port 1 "
        "is a server link with three VMs (VFs, a VLAN each): g1 and g2 guaranteed 20 % of "
        "the link each, x greedy. A peer VM behind port 2 sends about 90 % of the bytes "
        "towards them with iperf3 (TCP: one unlimited stream each to g1 and g2, four to x; "
        "UDP: 1.25 x the guarantee to g1 and g2, 1.5 x the link to x) and each VM sends "
        "3.5 % of the link back. Each VM's received bytes are read from its interface's "
        "kernel counter every 100 ms, and what its application read (goodput) from the "
        "receiving iperf3's 100 ms intervals: a TCP retransmission is in the interface's "
        "bytes but delivered once, so the target is judged on goodput (bold). Arm A, "
        "hypervisor shaping: the ToR does not police; "
        "a tbf on the server's interface towards each VM and on the VM's own interface, x "
        "capped at the link minus the guarantees (60 %), g1 and g2 at the link. Arm B, "
        "p4vtep: QoS policies at the ToR (g1, g2: CIR 20 %, PIR the link; x: CIR 1 %, PIR "
        "the link; default buckets), no shaping on the server. Arm C: as B with x's PIR at "
        "arm A's cap, i.e. the hypervisor's numbers enforced at the ToR, before the link. "
        "Arms alternate in one run. "
        "**Target: arm B p5 >= 0.9 of the guarantee** (the study: 0.5-2.2 Gb/s of 2 Gb/s "
        "with the hypervisor's shaping, 1.4 Gb/s at worst with QoS in hardware).\n"
    )
    entries = latest()
    if not entries:
        out.append("_Not run yet (`make bench-qos`)._\n")
        return
    for entry in entries:
        c = entry["config"]
        out.append(
            f"**{entry['label']}** ({entry['file']}, commit {entry['commit']}"
            f"{', tree with uncommitted changes' if entry.get('dirty') else ''}; "
            f"{entry['machine'].get('when', '?')}): link {c['link_mbps']:g} Mbit/s emulated "
            f"by {c['link_emulation']}, guarantee {c['guarantee_mbps']:g} Mbit/s, "
            f"{c['seconds']} s per arm, first {c['warmup_s']} s left out, load "
            f"{entry.get('load', '?')}.\n"
        )
        if c.get("link_emulation_why"):
            out.append(f"Link emulation chosen so because {c['link_emulation_why']}.\n")
        out += table(entry)
        out.append("")
        out += checks(entry)
        out.append("")
        if entry.get("png"):
            out.append(f"![qos {entry['label']}](../bench/results/{entry['png']})\n")
