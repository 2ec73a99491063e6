"""Validation schemas of `dashboard-data.json` and `pretuned-dashboard-data.json`.

Everything is validated before anything is written; unknown extra fields are accepted (and
dropped) because the upstream schema grows, but impossible values (negative speedups, non-hex
shas, bad dates) are refused.

The schema also states every bound the *store* has, so a document that validates can always be
written, identically on SQLite and PostgreSQL: string lengths of the columns they land in, no NUL
character (PostgreSQL text cannot hold one), integers within a 32-bit INTEGER column, dates that
stay within the datetime range once converted to UTC. Numbers are strict: ``"1.23"``, ``true`` and
``"7"`` are refused where the upstream schema is numeric (an int is still a valid float).

The schemas are TypedDicts validated by pydantic-core in one pass straight from the JSON bytes:
a year of history is ~35k entries, and building a model instance per entry cost more than the
whole JSON parse. The result is plain dicts/lists holding already-converted values (datetimes,
floats, str run ids) that `normalize` walks without further checks. Optional keys may be absent;
readers use `.get()` with the defaults written next to each field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, Strict, TypeAdapter, ValidationError
from typing_extensions import NotRequired, TypedDict

from service.domain import Source, baseline_metric
from service.errors import BenchwatchError


def _digits(v: Any) -> Any:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


INT32_MAX = 2**31 - 1  # INTEGER columns on PostgreSQL (SQLite's are wider; the bound is shared)
NO_NUL = r"^[^\x00]*$"  # PostgreSQL text and varchar refuse NUL; SQLite would keep it


def _utc(v: datetime) -> datetime:
    """Naive UTC, as the store keeps it; a date that leaves datetime's range on the way is refused
    here instead of crashing the write (``0001-01-01T00:30:00+01:00``)."""
    if v.tzinfo is None:
        return v
    try:
        return v.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:
        raise ValueError("date is out of range once converted to UTC") from None


def Text(max_length: int | None = None, min_length: int = 0) -> Any:
    """A string the store can hold: no NUL, at most the column's length."""
    return Annotated[str, Field(min_length=min_length, max_length=max_length, pattern=NO_NUL)]


# Pattern before converter keeps the check inside pydantic-core (the other order runs Python).
RunId = Annotated[str, Field(pattern=r"^[0-9]{1,20}$"), BeforeValidator(_digits)]
ShortSha = Annotated[str, Field(pattern=r"^[0-9a-f]{7,40}$")]
FullSha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
NonNeg = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Count = Annotated[int, Strict(), Field(ge=0, le=INT32_MAX)]
Date = Annotated[datetime, AfterValidator(_utc)]
Free = Text()  # Text columns: pretuned error strings, shape descriptions
Label = Text(255)  # baseline_label
Name = Text(255, 1)  # kernel, platform, branch: String(255) columns
Short = Text(64, 1)  # platform_short: a String(64) column
Compute = Text(64)
# a pretuned baseline becomes the metric ``baseline:<name>:geomean`` in a String(255) column
BaselineName = Text(255 - len(baseline_metric("")), 1)
Values = list[NonNeg | None]

PER_SHAPE_COLUMNS = (
    "helion_speedup",
    "triton_speedup",
    "torch_compile_speedup",
    "helion_accuracy",
    "helion_compile_time_s",
    "helion_latency_ms",
)


class RunInfo(TypedDict):
    run_id: RunId
    sha: ShortSha
    full_sha: FullSha
    date: Date
    branch: NotRequired[Name]  # default "main"
    is_nightly: NotRequired[bool]  # default False
    kernel_count: NotRequired[Count | None]


def _sha_matches(run: dict) -> dict:
    if not run["full_sha"].startswith(run["sha"]):
        raise ValueError(f"sha {run['sha']} is not a prefix of full_sha {run['full_sha']}")
    return run


class PerShape(TypedDict):
    shapes: list[Free]
    helion_speedup: NotRequired[Values]  # every column: default [], else one value per shape
    triton_speedup: NotRequired[Values]
    torch_compile_speedup: NotRequired[Values]
    helion_accuracy: NotRequired[Values]
    helion_compile_time_s: NotRequired[Values]
    helion_latency_ms: NotRequired[Values]


def _parallel(ps: dict) -> dict:
    """Keep the columns that line up with ``shapes``; drop the ones that cannot be aligned.

    Helion's own builder copies each column from the raw run as it is, and a run where a
    comparator produced values for only some shapes publishes a shorter column (seen in documents
    built by the real builder). Which shapes its values belong to is unknowable, so that column
    is dropped for that run; refusing the whole document would lose every kernel's nightly.
    """
    n = len(ps["shapes"])
    for name in PER_SHAPE_COLUMNS:
        if len(ps.get(name, ())) not in (0, n):
            del ps[name]
    return ps


class DashboardHistoryItem(RunInfo):
    helion_speedup_geomean: NotRequired[NonNeg | None]
    triton_speedup_geomean: NotRequired[NonNeg | None]
    torch_compile_speedup_geomean: NotRequired[NonNeg | None]
    compile_time_geomean_s: NotRequired[NonNeg | None]
    helion_latency_avg_ms: NotRequired[NonNeg | None]
    per_shape: NotRequired[Annotated[PerShape, AfterValidator(_parallel)] | None]


CheckedRun = Annotated[RunInfo, AfterValidator(_sha_matches)]


class DashboardSummaryItem(TypedDict):
    kernel: Name
    platform: Name
    platform_short: Short
    baseline_label: NotRequired[Label | None]
    has_nightly_data: NotRequired[bool | None]
    status: NotRequired[str | None]
    infra_missing: NotRequired[bool | None]
    accuracy_failures: NotRequired[list[Any]]
    run_failures: NotRequired[list[Any]]
    history: list[Annotated[DashboardHistoryItem, AfterValidator(_sha_matches)]]


def _empty_is_none(v: Any) -> Any:
    """Helion's builders write ``generated_at: ""`` and ``latest_run: {}`` when there are no runs
    yet (the pretuned suite before its first nightly): a document with nothing in it, not a bad one."""
    return None if v == "" or v == {} else v


class _Published(TypedDict):
    """The top level both documents share."""

    generated_at: NotRequired[Annotated[Date | None, BeforeValidator(_empty_is_none)]]
    latest_run: NotRequired[Annotated[CheckedRun | None, BeforeValidator(_empty_is_none)]]
    runs: NotRequired[list[CheckedRun]]
    platforms: NotRequired[list[Any]]
    platform_shorts: NotRequired[list[str]]
    stats: NotRequired[dict[str, Any]]


class DashboardDocument(_Published):
    unique_kernels: NotRequired[list[str]]
    summary: list[DashboardSummaryItem]


class BaselineStats(TypedDict, total=False):
    wins: Count | None
    total: Count | None
    geomean: NonNeg | None
    best_speedup: NonNeg | None


class PretunedHistoryItem(RunInfo):
    cudagraph: NotRequired[bool | None]
    error: NotRequired[Free | None]
    geomean: NotRequired[NonNeg | None]
    helion_wins: NotRequired[Count | None]
    total: NotRequired[Count | None]
    best_speedup: NotRequired[NonNeg | None]
    baselines: NotRequired[dict[BaselineName, BaselineStats] | None]


class PretunedSummaryItem(TypedDict):
    kernel: Name
    platform: Name
    platform_short: Short
    compute: NotRequired[Compute | None]
    cudagraph: NotRequired[bool | None]
    has_nightly_data: NotRequired[bool | None]
    failed: NotRequired[bool | None]
    error: NotRequired[str | None]
    status: NotRequired[str | None]
    history: list[Annotated[PretunedHistoryItem, AfterValidator(_sha_matches)]]


class PretunedDocument(_Published):
    kernels: NotRequired[list[str]]
    summary: list[PretunedSummaryItem]


MODELS: dict[str, TypeAdapter] = {
    Source.DASHBOARD: TypeAdapter(DashboardDocument),
    Source.PRETUNED: TypeAdapter(PretunedDocument),
}


@dataclass(frozen=True)
class ParsedDocument:
    """A validated document: plain dicts and lists shaped like the TypedDict of its source."""

    source: str  # a `domain.Source`
    data: dict[str, Any]


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


def parse_document(source: str, raw: bytes) -> ParsedDocument:
    """Validate a whole document; the first problem becomes a one-line BenchwatchError."""
    try:
        data = MODELS[source].validate_json(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        if err["type"] == "json_invalid":
            raise BenchwatchError(f"{source}: not valid JSON ({err['msg']})") from None
        where = _where(tuple(err["loc"]))
        msg = err["msg"]
        if (err.get("ctx") or {}).get("pattern") == NO_NUL:
            msg = "String should not contain a NUL character"
        raise BenchwatchError(f"{source}: {where}: {msg}") from None
    return ParsedDocument(source, data)
