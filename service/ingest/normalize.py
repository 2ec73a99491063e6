"""Turn a validated document into plain rows: runs, tracks, and one observation per (track, run).

A run that produced nothing (speedup or latency `0`, or a pretuned `error`) becomes a failure
(`None`) rather than a value of 0, so no detector ever sees a fake 100% drop.
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone

from service.ingest.documents import (
    DashboardDocument,
    DashboardHistoryItem,
    PretunedDocument,
    PretunedHistoryItem,
    RunInfo,
)
from service.records import DASHBOARD_METRICS, baseline_metric

_FAILED = -1.0  # never a stored value: values are validated non-negative

# Metrics for which 0 means "nothing ran". Counts (helion_wins, total) may legitimately be 0.
ZERO_IS_FAILURE = frozenset(DASHBOARD_METRICS) | {"geomean", "best_speedup"}


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    sha: str
    full_sha: str
    date: datetime  # naive UTC
    branch: str
    is_nightly: bool
    kernel_count: int | None

    @property
    def is_trend(self) -> bool:
        return self.is_nightly and self.branch == "main"


@dataclass(frozen=True, slots=True)
class TrackRow:
    platform_short: str
    kernel: str
    platform: str
    baseline_label: str | None = None
    cudagraph: bool | None = None
    compute: str | None = None


@dataclass(frozen=True, slots=True)
class ShapeRow:
    index: int
    shape: str
    helion_speedup: float | None
    triton_speedup: float | None
    torch_compile_speedup: float | None
    helion_accuracy: float | None
    helion_compile_time_s: float | None
    helion_latency_ms: float | None


@dataclass(slots=True)
class ObservationRow:
    track: tuple[str, str]  # (platform_short, kernel)
    run_id: str
    values: dict[str, float | None]  # metric -> value; None = failed; absent = not measured
    error: str | None = None
    cudagraph: bool | None = None
    shapes: list[ShapeRow] | None = None

    def digest(self) -> str:
        """Fingerprint of the values only (shapes are stripped upstream on older entries).

        Packed binary rather than repr(): a year of history is ~35k observations per file and
        this runs on every one of them each night.
        """
        keys = sorted(self.values)
        vals = array("d", [_FAILED if (v := self.values[k]) is None else v for k in keys])
        h = hashlib.blake2b(vals.tobytes(), digest_size=8)
        h.update("|".join(keys).encode())
        h.update(b"\0%d%s" % (2 if self.cudagraph is None else int(self.cudagraph), (self.error or "").encode()))
        return h.hexdigest()


@dataclass
class NormalizedDocument:
    source: str
    runs: dict[str, RunRow] = field(default_factory=dict)
    tracks: dict[tuple[str, str], TrackRow] = field(default_factory=dict)
    observations: list[ObservationRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # internal inconsistencies, reported
    _raw_runs: dict[str, tuple] = field(default_factory=dict, repr=False)  # run_id -> as first read


def _utc(dt: datetime) -> datetime:
    if dt.tzinfo is None:
        return dt
    return dt.astimezone(timezone.utc).replace(tzinfo=None)


def _run_row(item: RunInfo) -> RunRow:
    return RunRow(
        run_id=item.run_id,
        sha=item.sha[:8],
        full_sha=item.full_sha,
        date=_utc(item.date),
        branch=item.branch,
        is_nightly=item.is_nightly,
        kernel_count=item.kernel_count,
    )


def _value(metric: str, v: float | None) -> float | None:
    if v is None or (v == 0 and metric in ZERO_IS_FAILURE):
        return None
    return float(v)


def _add_run(doc: NormalizedDocument, item: RunInfo) -> None:
    raw = doc._raw_runs.get(item.run_id)
    ident = (item.full_sha, item.date, item.branch, item.is_nightly)
    if raw is not None and raw[0] == ident and (raw[1] is not None or item.kernel_count is None):
        return  # the same run again (every kernel's history repeats it): nothing to convert
    if raw is None or raw[0] == ident:
        doc._raw_runs[item.run_id] = (ident, item.kernel_count)
    row = _run_row(item)
    seen = doc.runs.get(row.run_id)
    if seen is None:
        doc.runs[row.run_id] = row
    elif (seen.full_sha, seen.date, seen.branch, seen.is_nightly) != (
        row.full_sha,
        row.date,
        row.branch,
        row.is_nightly,
    ):
        doc.problems.append(f"run {row.run_id} appears with two different descriptions")
    elif seen.kernel_count is None and row.kernel_count is not None:
        doc.runs[row.run_id] = row


def _dashboard_values(h: DashboardHistoryItem) -> dict[str, float | None]:
    values: dict[str, float | None] = {}
    for metric in DASHBOARD_METRICS:
        raw = getattr(h, metric)
        if metric == "compile_time_geomean_s" and raw is None:
            continue  # not measured, not a failure
        values[metric] = _value(metric, raw)
    return values


def _shapes(h: DashboardHistoryItem) -> list[ShapeRow] | None:
    ps = h.per_shape
    if ps is None or not ps.shapes:
        return None

    def col(name: str, i: int) -> float | None:
        values = getattr(ps, name)
        return values[i] if values else None

    return [
        ShapeRow(
            i,
            shape,
            col("helion_speedup", i),
            col("triton_speedup", i),
            col("torch_compile_speedup", i),
            col("helion_accuracy", i),
            col("helion_compile_time_s", i),
            col("helion_latency_ms", i),
        )
        for i, shape in enumerate(ps.shapes)
    ]


def normalize_dashboard(doc: DashboardDocument) -> NormalizedDocument:
    out = NormalizedDocument("dashboard")
    for run in doc.runs:
        _add_run(out, run)
    for s in doc.summary:
        key = (s.platform_short, s.kernel)
        if key in out.tracks:
            out.problems.append(f"summary lists {s.kernel} on {s.platform_short} twice")
            continue
        out.tracks[key] = TrackRow(s.platform_short, s.kernel, s.platform, s.baseline_label)
        seen_runs: set[str] = set()
        for h in s.history:
            if h.run_id in seen_runs:
                out.problems.append(f"{s.kernel} on {s.platform_short} lists run {h.run_id} twice")
                continue
            seen_runs.add(h.run_id)
            _add_run(out, h)
            out.observations.append(
                ObservationRow(key, h.run_id, _dashboard_values(h), shapes=_shapes(h))
            )
    return out


def _pretuned_values(h: PretunedHistoryItem) -> dict[str, float | None]:
    if h.error is not None:
        return {"geomean": None}
    values: dict[str, float | None] = {
        "geomean": _value("geomean", h.geomean),
        "best_speedup": _value("best_speedup", h.best_speedup),
    }
    if h.helion_wins is not None:
        values["helion_wins"] = float(h.helion_wins)
    if h.total is not None:
        values["total"] = float(h.total)
    if h.cudagraph is not None:
        values["cudagraph"] = 1.0 if h.cudagraph else 0.0
    for name, stats in (h.baselines or {}).items():
        values[baseline_metric(name)] = _value("geomean", stats.geomean)
    return values


def normalize_pretuned(doc: PretunedDocument) -> NormalizedDocument:
    out = NormalizedDocument("pretuned")
    for run in doc.runs:
        _add_run(out, run)
    for s in doc.summary:
        key = (s.platform_short, s.kernel)
        if key in out.tracks:
            out.problems.append(f"summary lists {s.kernel} on {s.platform_short} twice")
            continue
        out.tracks[key] = TrackRow(
            s.platform_short, s.kernel, s.platform, None, s.cudagraph, s.compute
        )
        seen_runs: set[str] = set()
        for h in s.history:
            if h.run_id in seen_runs:
                out.problems.append(f"{s.kernel} on {s.platform_short} lists run {h.run_id} twice")
                continue
            seen_runs.add(h.run_id)
            _add_run(out, h)
            out.observations.append(
                ObservationRow(key, h.run_id, _pretuned_values(h), h.error, h.cudagraph)
            )
    return out


def normalize(doc: DashboardDocument | PretunedDocument) -> NormalizedDocument:
    if isinstance(doc, DashboardDocument):
        return normalize_dashboard(doc)
    return normalize_pretuned(doc)
