"""The compiled pipeline committed under p4src/, and how to load it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..runtime.p4info import P4Info, pipeline_cookie

REPO_ROOT = Path(__file__).resolve().parents[3]
P4SRC = REPO_ROOT / "p4src"
V1MODEL_MAIN = P4SRC / "v1model" / "p4vtep.p4"
V1MODEL_BUILD = P4SRC / "v1model" / "build"
BMV2_JSON = V1MODEL_BUILD / "p4vtep.json"
P4INFO_TXT = V1MODEL_BUILD / "p4vtep.p4info.txtpb"


@dataclass(frozen=True)
class Pipeline:
    p4info_path: Path
    device_config_path: Path

    @cached_property
    def p4info_text(self) -> str:
        return self.p4info_path.read_text(encoding="utf-8")

    @cached_property
    def p4info(self) -> P4Info:
        return P4Info.from_text(self.p4info_text)

    @cached_property
    def device_config(self) -> bytes:
        return self.device_config_path.read_bytes()

    @cached_property
    def cookie(self) -> int:
        return pipeline_cookie(self.p4info_text, self.device_config)


def bmv2_pipeline() -> Pipeline:
    """The BMv2 pipeline; P4VTEP_P4INFO / P4VTEP_BMV2_JSON override the paths."""
    return Pipeline(
        Path(os.environ.get("P4VTEP_P4INFO", P4INFO_TXT)),
        Path(os.environ.get("P4VTEP_BMV2_JSON", BMV2_JSON)),
    )
