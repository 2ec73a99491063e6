"""Turn a validated document into plain rows: runs, tracks, and one observation per (track, run).

A run that produced nothing (speedup or latency `0`, or a pretuned `error`) becomes a failure
(`None`) rather than a value of 0, so no detector ever sees a fake 100% drop.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from datetime import datetime, timezone

from service.ingest.documents import PER_SHAPE_COLUMNS, ParsedDocument
from service.domain import DASHBOARD_METRICS, Source, baseline_metric

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

        blake2b over the values packed as doubles (failed = -1), then the sorted metric names,
        then the cudagraph flag and error. Stored digests depend on these exact bytes, so keep
        them; the per-key-set layout is cached because every night re-digests ~35k rows.
        """
        keys = tuple(self.values)
        layout = _LAYOUTS.get(keys)
        if layout is None:
            order = tuple(sorted(keys))
            packer = struct.Struct(f"={len(order)}d")  # native doubles, as array("d") had
            layout = _LAYOUTS[keys] = (order, packer, "|".join(order).encode())
        order, packer, names = layout
        values = self.values
        packed = packer.pack(*[_FAILED if (v := values[k]) is None else v for k in order])
        flag = 2 if self.cudagraph is None else int(self.cudagraph)
        tail = b"\0%d%s" % (flag, (self.error or "").encode())
        return hashlib.blake2b(packed + names + tail, digest_size=8).hexdigest()


_LAYOUTS: dict[tuple[str, ...], tuple[tuple[str, ...], struct.Struct, bytes]] = {}


@dataclass(frozen=True, slots=True)
class FlagRow:
    """A summary item's health flags about the document's newest nightly (see TrackFlags)."""

    infra_missing: bool = False
    run_failures: tuple[str, ...] = ()
    accuracy_failures: tuple[str, ...] = ()
    error: str | None = None

    def __bool__(self) -> bool:
        return bool(self.infra_missing or self.run_failures or self.accuracy_failures or self.error)


def _labels(items) -> tuple[str, ...]:
    """Shape labels as text (the builder writes strings; anything else is shown as given)."""
    return tuple(str(x) for x in items or ())


@dataclass
class NormalizedDocument:
    source: str
    runs: dict[str, RunRow] = field(default_factory=dict)
    tracks: dict[tuple[str, str], TrackRow] = field(default_factory=dict)
    observations: list[ObservationRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # internal inconsistencies, reported
    latest_run_id: str | None = None  # the document's `latest_run` (its newest main nightly)
    flags: dict[tuple[str, str], FlagRow] = field(default_factory=dict)  # only tracks with a flag
    _raw_runs: dict[str, tuple] = field(default_factory=dict, repr=False)  # run_id -> as first read


def _utc(dt: datetime) -> datetime:
    if dt.tzinfo is None:
        return dt
    return dt.astimezone(timezone.utc).replace(tzinfo=None)


def _run_row(item: dict) -> RunRow:
    return RunRow(
        run_id=item["run_id"],
        sha=item["sha"][:8],
        full_sha=item["full_sha"],
        date=_utc(item["date"]),
        branch=item.get("branch", "main"),
        is_nightly=item.get("is_nightly", False),
        kernel_count=item.get("kernel_count"),
    )


def _value(metric: str, v: float | None) -> float | None:
    if v is None or (v == 0 and metric in ZERO_IS_FAILURE):
        return None
    return float(v)


def _add_run(doc: NormalizedDocument, item: dict) -> None:
    """Every kernel's history repeats the same run: the cheap identity check skips the rest."""
    get = item.get
    kernel_count = get("kernel_count")
    ident = (item["full_sha"], item["date"], get("branch", "main"), get("is_nightly", False))
    raw = doc._raw_runs.get(item["run_id"])
    if raw is not None and raw[0] == ident and (raw[1] is not None or kernel_count is None):
        return  # the same run again: nothing to convert
    if raw is None or raw[0] == ident:
        doc._raw_runs[item["run_id"]] = (ident, kernel_count)
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


# Always present in a dashboard observation (absent = failed); compile time only when measured.
_ALWAYS = tuple(m for m in DASHBOARD_METRICS if m != "compile_time_geomean_s")


def _shapes(h: dict) -> list[ShapeRow] | None:
    ps = h.get("per_shape")
    if not ps or not ps["shapes"]:
        return None
    n = len(ps["shapes"])
    cols = [ps.get(name) or [None] * n for name in PER_SHAPE_COLUMNS]
    return [ShapeRow(i, shape, *row) for i, (shape, *row) in enumerate(zip(ps["shapes"], *cols))]


def _history(out: NormalizedDocument, s: dict, make) -> None:
    """One track's history: each run once, in order; ``make(key, entry)`` builds the row."""
    key = (s["platform_short"], s["kernel"])
    seen_runs: set[str] = set()
    add = out.observations.append
    for h in s["history"]:
        run_id = h["run_id"]
        if run_id in seen_runs:
            out.problems.append(f"{s['kernel']} on {s['platform_short']} lists run {run_id} twice")
            continue
        seen_runs.add(run_id)
        _add_run(out, h)
        add(make(key, h))


def _new_track(out: NormalizedDocument, s: dict, row: TrackRow) -> bool:
    key = (s["platform_short"], s["kernel"])
    if key in out.tracks:
        out.problems.append(f"summary lists {s['kernel']} on {s['platform_short']} twice")
        return False
    out.tracks[key] = row
    return True


def _dashboard_row(key: tuple[str, str], h: dict) -> ObservationRow:
    """Every dashboard metric is in ZERO_IS_FAILURE: `v or None` makes both 0 and None a failure."""
    get = h.get
    values: dict[str, float | None] = {m: get(m) or None for m in _ALWAYS}
    compile_s = get("compile_time_geomean_s")
    if compile_s is not None:  # None = not measured, not a failure
        values["compile_time_geomean_s"] = compile_s or None
    shapes = _shapes(h) if "per_shape" in h else None  # only the newest entries carry shapes
    return ObservationRow(key, h["run_id"], values, shapes=shapes)


def _latest(out: NormalizedDocument, doc: dict) -> None:
    latest = doc.get("latest_run")
    if latest:
        _add_run(out, latest)
        out.latest_run_id = latest["run_id"]


def normalize_dashboard(doc: dict) -> NormalizedDocument:
    out = NormalizedDocument(Source.DASHBOARD)
    _latest(out, doc)
    for run in doc.get("runs", ()):
        _add_run(out, run)
    for s in doc["summary"]:
        row = TrackRow(s["platform_short"], s["kernel"], s["platform"], s.get("baseline_label"))
        if _new_track(out, s, row):
            _history(out, s, _dashboard_row)
            flags = FlagRow(bool(s.get("infra_missing")), _labels(s.get("run_failures")),
                            _labels(s.get("accuracy_failures")))
            if flags:
                out.flags[(s["platform_short"], s["kernel"])] = flags
    return out


def _pretuned_values(h: dict) -> dict[str, float | None]:
    if h.get("error") is not None:
        return {"geomean": None}
    values: dict[str, float | None] = {
        "geomean": _value("geomean", h.get("geomean")),
        "best_speedup": _value("best_speedup", h.get("best_speedup")),
    }
    if h.get("helion_wins") is not None:
        values["helion_wins"] = float(h["helion_wins"])
    if h.get("total") is not None:
        values["total"] = float(h["total"])
    if h.get("cudagraph") is not None:
        values["cudagraph"] = 1.0 if h["cudagraph"] else 0.0
    for name, stats in (h.get("baselines") or {}).items():
        values[baseline_metric(name)] = _value("geomean", stats.get("geomean"))
    return values


def _pretuned_row(key: tuple[str, str], h: dict) -> ObservationRow:
    return ObservationRow(key, h["run_id"], _pretuned_values(h), h.get("error"), h.get("cudagraph"))


def normalize_pretuned(doc: dict) -> NormalizedDocument:
    out = NormalizedDocument(Source.PRETUNED)
    _latest(out, doc)
    for run in doc.get("runs", ()):
        _add_run(out, run)
    for s in doc["summary"]:
        row = TrackRow(s["platform_short"], s["kernel"], s["platform"], None,
                       s.get("cudagraph"), s.get("compute"))
        if _new_track(out, s, row):
            _history(out, s, _pretuned_row)
            error = s.get("error") or ("failed" if s.get("failed") else None)
            if error:
                out.flags[(s["platform_short"], s["kernel"])] = FlagRow(error=error)
    return out


def normalize(doc: ParsedDocument) -> NormalizedDocument:
    if doc.source == Source.DASHBOARD:
        return normalize_dashboard(doc.data)
    return normalize_pretuned(doc.data)
