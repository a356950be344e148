"""The compiled pipelines under p4src/ (one per target), and how to load them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..runtime.p4info import P4Info, pipeline_cookie
from .targets import Target, profile
from .tofino_config import TofinoDeviceConfig

REPO_ROOT = Path(__file__).resolve().parents[3]
P4SRC = REPO_ROOT / "p4src"
V1MODEL_MAIN = P4SRC / "v1model" / "p4vtep.p4"
V1MODEL_BUILD = P4SRC / "v1model" / "build"
BMV2_JSON = V1MODEL_BUILD / "p4vtep.json"
P4INFO_TXT = V1MODEL_BUILD / "p4vtep.p4info.txtpb"
TNA_MAIN = P4SRC / "tna" / "p4vtep.p4"
# p4src/tna/build/<chip>/: the committed P4Info, bf-rt.json and resource
# summary; out/ below it is the full compiler output (not committed).
TNA_BUILD = P4SRC / "tna" / "build"
PROGRAM_NAME = "p4vtep"
PIPE_NAME = "pipe"  # the Pipeline instance in p4src/tna/p4vtep.p4


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


@dataclass(frozen=True)
class TofinoPipeline(Pipeline):
    """device_config_path is the compiler's output directory (make p4-tofino).

    The binary, context.json and bf-rt.json packed are all from that one run
    (the committed bf-rt.json may differ in the compiler's snapshot tables)."""

    chip: str = "tofino"

    @cached_property
    def device_config(self) -> bytes:
        pipe = self.device_config_path / PIPE_NAME
        binary, context = pipe / f"{self.chip}.bin", pipe / "context.json"
        bfrt = self.device_config_path / "bf-rt.json"
        for path in (binary, context, bfrt):
            if not path.is_file():
                raise FileNotFoundError(
                    f"{path} is missing: the Tofino binary is not committed, "
                    "build it with 'make p4-tofino' (needs p4c-tofino)"
                )
        return TofinoDeviceConfig(
            PROGRAM_NAME,
            binary.read_bytes(),
            context.read_bytes(),
            PIPE_NAME,
            bfrt.read_bytes(),
        ).pack()


def tofino_build_dir(target: Target) -> Path:
    return TNA_BUILD / profile(target).p4c_target


def tofino_pipeline(target: Target) -> TofinoPipeline:
    """P4VTEP_TOFINO_OUT overrides where the compiler output is read from."""
    build = tofino_build_dir(target)
    chip = profile(target).p4c_target
    out = Path(os.environ.get("P4VTEP_TOFINO_OUT", build / "out"))
    return TofinoPipeline(build / "p4vtep.p4info.txtpb", out, chip)


def pipeline_for(target: Target | str, bmv2: Pipeline | None = None) -> Pipeline:
    """The pipeline for a ToR's target; bmv2 is the (possibly overridden) BMv2 one."""
    target = Target.parse(target) if isinstance(target, str) else target
    if target is Target.BMV2:
        return bmv2 if bmv2 is not None else bmv2_pipeline()
    return tofino_pipeline(target)
