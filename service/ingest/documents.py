"""Pydantic models of `dashboard-data.json` and `pretuned-dashboard-data.json`.

Everything is validated before anything is written; unknown extra fields are allowed because
the upstream schema grows, but impossible values (negative speedups, non-hex shas, bad dates)
are refused.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from service.errors import BenchwatchError


def _digits(v: Any) -> Any:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


RunId = Annotated[str, BeforeValidator(_digits), Field(pattern=r"^[0-9]{1,20}$")]
ShortSha = Annotated[str, Field(pattern=r"^[0-9a-f]{7,40}$")]
FullSha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=255)]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class RunInfo(_Doc):
    run_id: RunId
    sha: ShortSha
    full_sha: FullSha
    date: datetime
    branch: Annotated[str, Field(min_length=1, max_length=255)] = "main"
    is_nightly: bool = False
    kernel_count: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _sha_matches(self) -> "RunInfo":
        if not self.full_sha.startswith(self.sha):
            raise ValueError(f"sha {self.sha} is not a prefix of full_sha {self.full_sha}")
        return self


class PerShape(_Doc):
    shapes: list[str]
    helion_speedup: list[NonNeg | None] = Field(default_factory=list)
    triton_speedup: list[NonNeg | None] = Field(default_factory=list)
    torch_compile_speedup: list[NonNeg | None] = Field(default_factory=list)
    helion_accuracy: list[NonNeg | None] = Field(default_factory=list)
    helion_compile_time_s: list[NonNeg | None] = Field(default_factory=list)
    helion_latency_ms: list[NonNeg | None] = Field(default_factory=list)

    @model_validator(mode="after")
    def _parallel(self) -> "PerShape":
        n = len(self.shapes)
        for name in (
            "helion_speedup",
            "triton_speedup",
            "torch_compile_speedup",
            "helion_accuracy",
            "helion_compile_time_s",
            "helion_latency_ms",
        ):
            got = len(getattr(self, name))
            if got not in (0, n):
                raise ValueError(f"per_shape.{name} has {got} values for {n} shapes")
        return self


class DashboardHistoryItem(RunInfo):
    helion_speedup_geomean: NonNeg | None = None
    triton_speedup_geomean: NonNeg | None = None
    torch_compile_speedup_geomean: NonNeg | None = None
    compile_time_geomean_s: NonNeg | None = None
    helion_latency_avg_ms: NonNeg | None = None
    per_shape: PerShape | None = None


class DashboardSummaryItem(_Doc):
    kernel: Name
    platform: Name
    platform_short: Name
    baseline_label: str | None = None
    has_nightly_data: bool | None = None
    status: str | None = None
    infra_missing: bool | None = None
    accuracy_failures: list[Any] = Field(default_factory=list)
    run_failures: list[Any] = Field(default_factory=list)
    history: list[DashboardHistoryItem]


class DashboardDocument(_Doc):
    generated_at: datetime | None = None
    latest_run: RunInfo | None = None
    runs: list[RunInfo] = Field(default_factory=list)
    platforms: list[Any] = Field(default_factory=list)
    platform_shorts: list[str] = Field(default_factory=list)
    unique_kernels: list[str] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)
    summary: list[DashboardSummaryItem]


class BaselineStats(_Doc):
    wins: Annotated[int, Field(ge=0)] | None = None
    total: Annotated[int, Field(ge=0)] | None = None
    geomean: NonNeg | None = None
    best_speedup: NonNeg | None = None


class PretunedHistoryItem(RunInfo):
    cudagraph: bool | None = None
    error: str | None = None
    geomean: NonNeg | None = None
    helion_wins: Annotated[int, Field(ge=0)] | None = None
    total: Annotated[int, Field(ge=0)] | None = None
    best_speedup: NonNeg | None = None
    baselines: dict[Name, BaselineStats] | None = None


class PretunedSummaryItem(_Doc):
    kernel: Name
    platform: Name
    platform_short: Name
    compute: str | None = None
    cudagraph: bool | None = None
    has_nightly_data: bool | None = None
    failed: bool | None = None
    error: str | None = None
    status: str | None = None
    history: list[PretunedHistoryItem]


class PretunedDocument(_Doc):
    generated_at: datetime | None = None
    latest_run: RunInfo | None = None
    runs: list[RunInfo] = Field(default_factory=list)
    platforms: list[Any] = Field(default_factory=list)
    platform_shorts: list[str] = Field(default_factory=list)
    kernels: list[str] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)
    summary: list[PretunedSummaryItem]


MODELS = {"dashboard": DashboardDocument, "pretuned": PretunedDocument}


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


def parse_document(source: str, raw: bytes) -> DashboardDocument | PretunedDocument:
    """Validate a whole document; the first problem becomes a one-line BenchwatchError."""
    from pydantic import ValidationError

    model = MODELS[source]
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        if err["type"] == "json_invalid":
            raise BenchwatchError(f"{source}: not valid JSON ({err['msg']})") from None
        where = _where(tuple(err["loc"]))
        raise BenchwatchError(f"{source}: {where}: {err['msg']}") from None
