"""Tofino 1's port-security verdict (port_security.p4, ``port_security_verdict``)
decides what the v1model's and Tofino 2's chain of checks decides, for what
Tofino 1's profile carries (ARP, IPv4, DHCPv4), and drops a guarded VM's
IPv6 as spoofed_ip (no IPv6 guard there).

No Tofino runs here (docs/tofino.md, "What is verified"), so this reads the
table's constant entries from the P4 source and matches every combination of
its key's values that tells the checks apart, first entry first as the
TCAM does, against the checks written out in Python (the BMv2 program's,
which the PTF suite proves on packets).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from p4vtep.dataplane.drop_reasons import DropReason
from p4vtep.dataplane.entries import PORT_SECURITY_REASONS, port_security_index

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "p4src" / "include" / "control" / "port_security.p4"
DEFINES = REPO / "p4src" / "include" / "defines.p4"

KEY = (
    "meta.guard_flags",
    "hdr.arp.isValid()",
    "hdr.ipv4.isValid()",
    "hdr.ipv6.isValid()",
    "hdr.udp.isValid()",
    "meta.source_refused",
    "meta.claimed_ipv4",
    "meta.lla_diff",
    "hdr.udp.src_port",
    "hdr.udp.dst_port",
)
WIDTH = dict(zip(KEY, (2, 1, 1, 1, 1, 1, 32, 48, 16, 16), strict=True))


def _constants() -> dict[str, int]:
    found = re.findall(r"const\s+\w+(?:<\d+>)?\s+(\w+)\s*=\s*(\w+)\s*;", DEFINES.read_text())
    return {name: int(value, 0) for name, value in found if re.fullmatch(r"\d+|0x[0-9a-f]+", value)}


CONSTANTS = _constants()


def _value(text: str) -> int:
    """A constant expression of the entries: a number, true/false, a named
    constant, a difference of them, under a cast."""
    text = re.sub(r"\(bit<\d+>\)", "", text).strip()
    text = {"true": "1", "false": "0"}.get(text, text)
    text = re.sub(r"[A-Z_][A-Z0-9_]+", lambda m: str(CONSTANTS[m.group(0)]), text)
    if not re.fullmatch(r"[0-9xXa-fA-Fb \-()]+", text):
        raise ValueError(f"not a constant expression: {text!r}")
    return int(eval(text, {"__builtins__": {}}))  # (digits, -, parentheses only)


def _split(text: str) -> list[str]:
    """Top-level comma-separated parts of ``text``."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    return [*parts, current.strip()] if current.strip() else parts


def verdict_entries() -> list[tuple[list[tuple[int, int] | None], tuple[int, int] | None]]:
    """Each entry, in order: per key field (value, mask) or None (``_``), and
    refuse's (reason, class) or None (NoAction)."""
    source = SOURCE.read_text()
    table = source[source.index("@hidden table port_security_verdict") :]
    key = re.findall(r"^\s*([\w.()]+)\s*:\s*ternary\s*;", table[: table.index("}")], re.M)
    assert tuple(key) == KEY, "the verdict's key changed: update this test"
    body = table[table.index("const entries") :]
    body = body[body.index("{") + 1 : body.index("\n        }")]
    body = re.sub(r"//[^\n]*", "", body)
    entries = []
    for match in re.finditer(r"\(([^:]*?)\)\s*:\s*(\w+)\s*\((.*?)\)\s*;", body, re.S):
        fields, action, args = match.groups()
        values = _split(fields)
        assert len(values) == len(KEY)
        parsed: list[tuple[int, int] | None] = []
        for name, text in zip(KEY, values, strict=True):
            full = (1 << WIDTH[name]) - 1
            if text == "_":
                parsed.append(None)
            elif "&&&" in text:
                value, mask = text.split("&&&")
                parsed.append((_value(value), _value(mask)))
            else:
                parsed.append((_value(text), full))
        if action == "NoAction":
            entries.append((parsed, None))
        else:
            assert action == "refuse"
            reason, class_index = (_value(a) for a in _split(args))
            entries.append((parsed, (reason, class_index)))
    assert len(entries) == body.count(";"), "an entry was not read"
    return entries


ENTRIES = verdict_entries()


Entry = tuple[list[tuple[int, int] | None], tuple[int, int] | None]


def tcam(values: dict[str, int], entries: list[Entry] = ENTRIES) -> DropReason | None:
    """What the table does: the first entry that matches, else NoAction."""
    for fields, action in entries:
        if all(
            f is None or values[name] & f[1] == f[0] & f[1]
            for name, f in zip(KEY, fields, strict=True)
        ):
            if action is None:
                return None
            reason, class_index = action
            assert class_index == reason - DropReason.SPOOFED_IP
            return DropReason(reason)
    return None


def checks(v: dict[str, Any]) -> DropReason | None:
    """The chain of checks of port_security.p4 (PortSecurityChecks with
    IPv6), for what Tofino 1 parses; a guarded VM's IPv6: spoofed_ip."""
    guarded, no_dhcp_server = v["guard_flags"] & 2, not v["guard_flags"] & 1
    if not guarded:
        return None
    refused_claim = v["source_refused"] and v["claimed_ipv4"] != 0
    if v["arp"]:
        if v["lla_diff"] != 0 or refused_claim:
            return DropReason.SPOOFED_ARP
    elif v["ipv4"]:
        if refused_claim:
            return DropReason.SPOOFED_IP
        if no_dhcp_server and v["udp"] and (v["src_port"], v["dst_port"]) == (67, 68):
            return DropReason.DHCP_SERVER_FROM_VM
    elif v["ipv6"]:
        return DropReason.SPOOFED_IP
    return None


# The values that tell the checks apart: each flag, zero and non-zero
# addresses and MAC differences (either half), the DHCPv4 server ports and
# others (DHCPv6's, reversed, one of them only).
FRAMES = ("arp", "ipv4", "ipv6", "other")
PORTS = ((67, 68), (68, 67), (547, 546), (67, 80), (53, 68))


def combinations() -> list[dict[str, Any]]:
    out = []
    for flags, frame, udp, refused, claimed, lla, ports in itertools.product(
        range(4),
        FRAMES,
        (False, True),
        (False, True),
        (0, 0x0A000001, 0x80000000),
        (0, 1, 1 << 23, 1 << 24, 1 << 47),
        PORTS,
    ):
        if udp and frame not in ("ipv4", "ipv6"):
            continue  # (the parser reads UDP only after IP)
        out.append(
            {
                "guard_flags": flags, "arp": frame == "arp", "ipv4": frame == "ipv4",
                "ipv6": frame == "ipv6", "udp": udp, "source_refused": refused,
                "claimed_ipv4": claimed, "lla_diff": lla,
                "src_port": ports[0], "dst_port": ports[1],
            }
        )  # fmt: skip
    return out


def test_the_verdict_decides_as_the_checks() -> None:
    cases = combinations()
    wrong = []
    for v in cases:
        values = dict(zip(KEY, (v["guard_flags"], v["arp"], v["ipv4"], v["ipv6"], v["udp"],
                                v["source_refused"], v["claimed_ipv4"], v["lla_diff"],
                                v["src_port"], v["dst_port"]), strict=True))  # fmt: skip
        got, want = tcam({k: int(x) for k, x in values.items()}), checks(v)
        if got != want:
            wrong.append(f"{v}: verdict {got}, checks {want}")
    assert not wrong, f"{len(wrong)} of {len(cases)} differ, e.g.\n" + "\n".join(wrong[:5])
    # Every reason Tofino 1 can give is reached, and each has its counter cell.
    reached = {checks(v) for v in cases} - {None}
    assert reached == {
        DropReason.SPOOFED_IP,
        DropReason.SPOOFED_ARP,
        DropReason.DHCP_SERVER_FROM_VM,
    }
    assert all(r in PORT_SECURITY_REASONS for r in reached)
    assert port_security_index(5, DropReason.DHCP_SERVER_FROM_VM) == 5 << 3 | 4


def test_the_comparison_is_not_vacuous() -> None:
    """Without one entry (the ARP probe's 0.0.0.0) an ARP probe would be
    dropped, which the checks do not do."""
    probe = {"guard_flags": 2, "arp": True, "ipv4": False, "ipv6": False, "udp": False,
             "source_refused": True, "claimed_ipv4": 0, "lla_diff": 0,
             "src_port": 0, "dst_port": 0}  # fmt: skip
    values = dict(zip(KEY, (2, 1, 0, 0, 0, 1, 0, 0, 0, 0), strict=True))
    assert checks(probe) is None
    assert tcam(values) is None
    assert tcam(values, [e for i, e in enumerate(ENTRIES) if i != 1]) == DropReason.SPOOFED_ARP


def test_the_constants_are_read() -> None:
    """The names the entries use are defines.p4's values."""
    names = ("DHCPV4_SERVER_PORT", "DHCPV4_CLIENT_PORT", "DROP_SPOOFED_IP", "DROP_SPOOFED_ARP")
    assert [CONSTANTS[n] for n in names] == [67, 68, DropReason.SPOOFED_IP, DropReason.SPOOFED_ARP]
