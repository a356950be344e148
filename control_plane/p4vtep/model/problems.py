"""What a refused change or fabric says: one Problem per wrong field.

Its own module so that every checker (validation.py, routing_checks.py) can
use it without importing another checker."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    subject: str  # "vm web-1", "tor tor1", ...
    field: str
    message: str
    # Where in the fabric file the problem lies, for the loader to name the
    # line: ("vrfs", <VRF name>, "l3vni"), ("vnis", <VNI>, "subnets", 0, "gateway").
    # Empty for VM problems (they have no place in the fabric file).
    at: tuple[str | int, ...] = dataclasses.field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.subject}: {self.field}: {self.message}"


class ValidationError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def subject(kind: str, name: str) -> str:
    """``kind name``; the name quoted if it is empty or holds characters a
    log line should not show raw (a newline would forge a second line)."""
    return f"{kind} {name}" if name and name.isprintable() else f"{kind} {name!r}"
