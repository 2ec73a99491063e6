"""Chart payloads: plain JSON the browser hands to Plotly (served by the app, no CDN).

Only trend nightlies are drawn (manual and side-branch runs never alert). Queries are bounded
by a date window so an alert page reads a few hundred points, not a platform's whole year.
Each unit gets its own axis (speedups ×, latency ms, compile time s: never one axis for ms and
s), failed nightlies are listed so the page marks them instead of leaving an unexplained gap,
and an alert's chart carries the detector's before/after levels with their scatter band, so
the step can be judged against the noise it beat.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from service.records import LOWER_IS_BETTER
from service.store.alert_reads import AlertRows, iso
from service.store.tables import Alert, Point, Run, Series, ShapeValue, Track, TrackEvent

WINDOW = timedelta(days=30)
MAX_SMALL_CHARTS = 24
MAIN_METRICS = {
    "dashboard": (
        "helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
        "helion_latency_avg_ms", "compile_time_geomean_s",
    ),
    "pretuned": ("geomean", "best_speedup"),
}


UNITS = {"y": "speedup (×)", "y2": "latency (ms)", "y3": "compile time (s)"}
BAND_SIGMAS = 2.0  # the band drawn around each level: ± this many of the detector's sigma


def _axis(metric: str) -> str:
    """One axis per unit: speedups (and counts) left, milliseconds and seconds on their own
    right-hand axes (a latency in ms and a compile time in s must not share a scale)."""
    if metric.endswith("_ms"):
        return "y2"
    if metric.endswith("_s") or metric in LOWER_IS_BETTER:
        return "y3"
    return "y"


def _label(metric: str) -> str:
    """An axis title with its unit, for a one-metric chart."""
    unit = {"y2": "ms", "y3": "s"}.get(_axis(metric), "×" if "speedup" in metric or "geomean" in metric else "")
    return f"{metric} ({unit})" if unit else metric


def _runs(
    session: Session, source: str, lo: datetime | None = None, hi: datetime | None = None
) -> dict[int, tuple[str, str]]:
    """Trend runs of a source (pk -> ISO date, short sha), optionally inside [lo, hi].

    Dates are formatted once per run here, not once per point (it was the page's top cost).
    """
    q = select(Run.id, Run.date, Run.full_sha).where(Run.source == source, Run.is_trend)
    if lo is not None:
        q = q.where(Run.date >= lo)
    if hi is not None:
        q = q.where(Run.date <= hi)
    return {pk: (iso(date), full_sha[:8]) for pk, date, full_sha in session.execute(q)}


def _points(
    session: Session, series_ids: list[int], runs: dict[int, tuple[str, str]]
) -> dict[int, list[tuple[str, float | None, str, bool]]]:
    """Values of several series at the given runs, in date order (primary-key lookups only):
    (date, value, short sha, failed)."""
    if not series_ids or not runs:
        return {}
    q = select(Point.series_id, Point.run_pk, Point.value, Point.failed).where(
        Point.series_id.in_(series_ids), Point.run_pk.in_(list(runs))
    )
    have: dict[int, dict[int, tuple[float | None, bool]]] = defaultdict(dict)
    for sid, pk, value, failed in session.connection().execute(q).all():  # Core rows, one fetch
        have[sid][pk] = (value, bool(failed))
    order = sorted(runs, key=lambda pk: runs[pk][0])  # ISO strings sort as dates
    return {
        sid: [(runs[pk][0], *vals[pk][:1], runs[pk][1], vals[pk][1]) for pk in order if pk in vals]
        for sid, vals in have.items()
    }


def _trace(name: str, pts: list[tuple[str, float | None, str, bool]], *, axis: str, main: bool) -> dict:
    return {
        "name": name,
        "x": [p[0] for p in pts],
        "y": [p[1] for p in pts],
        "sha": [p[2] for p in pts],
        "failed": [p[0] for p in pts if p[3]],
        "axis": axis,
        "main": main,
    }


def _mark_copies(traces: list[dict]) -> None:
    """A trace with exactly the main trace's values (the pretuned best speedup is often the
    geomean itself) is flagged, so the page draws it dashed under the main line and says so in
    the legend, instead of hiding the headline beneath it."""
    main = next((t for t in traces if t["main"]), None)
    if main is None:
        return
    for t in traces:
        if t is not main and t["axis"] == main["axis"] and t["x"] == main["x"] and any(
            v is not None for v in t["y"]
        ) and all(
            (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9))
            for a, b in zip(t["y"], main["y"])
        ):
            t["same_as"] = main["name"]


def _levels(rows: AlertRows, x: list[str], axis: str) -> list[dict]:
    """The detector's level before and after the step, each with a ±BAND_SIGMAS scatter band
    (sigma is the robust scatter of log values, so the band is multiplicative)."""
    alert = rows.alert
    if not x or alert.before is None or alert.after is None:
        return []
    spread = math.exp(BAND_SIGMAS * max(alert.noise_sigma or 0.0, 0.0))
    lg, fb = iso(rows.last_good.date), iso(rows.first_bad.date)
    return [
        {"x0": x0, "x1": x1, "y": level, "lo": level / spread, "hi": level * spread, "axis": axis,
         "label": f"{label} {level:.4g}"}
        for label, level, x0, x1 in (("before", alert.before, x[0], lg), ("after", alert.after, fb, x[-1]))
    ]


def alert_charts(
    session: Session, rows: AlertRows, prefer: set[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The alert page's charts in three queries: the moved track's speedups (left axis) and
    latency (right axis) around the step, and the same metric for the other kernels on the
    platform over the same nights (group members first, at most MAX_SMALL_CHARTS)."""
    series, track = rows.series, rows.track
    lg_date, fb_date = rows.last_good.date, rows.first_bad.date
    wanted = list(MAIN_METRICS.get(track.source, ()))
    if series.metric not in wanted:
        wanted.append(series.metric)
    ids: dict[str, int] = {}
    others = []
    for sid, metric, track_id, kernel in session.execute(  # this track's series + the neighbours'
        select(Series.id, Series.metric, Track.id, Track.kernel)
        .join(Track, Track.id == Series.track_id)
        .where(
            Track.source == track.source, Track.platform_short == track.platform_short,
            or_(Track.id == track.id, Series.metric == series.metric),
        )
    ):
        if track_id != track.id:
            others.append((sid, kernel))
        elif metric in wanted or (track.source == "pretuned" and metric.startswith("baseline:")):
            ids[metric] = sid
    others = sorted(others, key=lambda r: (r[1] not in prefer, r[1]))[:MAX_SMALL_CHARTS]
    runs = _runs(session, track.source, lg_date - WINDOW, fb_date + WINDOW)
    pts = _points(session, list(ids.values()) + [sid for sid, _ in others], runs)
    order = wanted + sorted(m for m in ids if m not in wanted)
    traces = [
        _trace(m, pts.get(ids[m], []), axis=_axis(m), main=m == series.metric)
        for m in order if m in ids
    ]
    _mark_copies(traces)
    moved = next((t for t in traces if t["main"]), None)
    main = {
        "title": f"{track.kernel} on {track.platform_short}",
        "traces": traces,
        "marks": [
            {"x": iso(lg_date), "label": "last good", "kind": "good"},
            {"x": iso(fb_date), "label": "first bad", "kind": "bad"},
        ],
        "levels": _levels(rows, moved["x"], moved["axis"]) if moved else [],
        "axes": {a: UNITS[a] for a in sorted({t["axis"] for t in traces})},
    }
    small = [
        {
            "title": kernel,
            "kernel": kernel,
            "in_group": kernel in prefer,
            "traces": [_trace(series.metric, pts.get(sid, []), axis="y", main=True)],
            "marks": [{"x": iso(fb_date), "label": "", "kind": "bad"}],
            "small": True,
        }
        for sid, kernel in others
    ]
    return main, small


def series_chart(session: Session, series_id: int) -> dict[str, Any]:
    """A series' whole trend history, with its moves and the track's known events."""
    sid, metric, track_id = session.execute(
        select(Series.id, Series.metric, Series.track_id).where(Series.id == series_id)
    ).one()
    track = session.get(Track, track_id)
    pts = _points(session, [sid], _runs(session, track.source)).get(sid, [])
    marks: list[dict] = []
    alerts = session.execute(
        select(Alert, Run.date)
        .join(Run, Run.id == Alert.first_bad_run_pk)
        .join(Series, Series.id == Alert.series_id)
        .where(Series.track_id == track_id)
        .order_by(Run.date)
    ).all()
    for a, date in alerts:
        if a.series_id == sid:
            marks.append({
                "x": iso(date), "kind": "bad",
                "label": f"#{a.id} {a.change_pct:+.1f}% ({a.human_cause or a.cause})",
            })
        for c in (a.change_commit, a.culprit if (a.human_cause or a.cause) != "real" else None):
            if c and c.get("date"):
                marks.append({
                    "x": c["date"], "kind": "event",
                    "label": f"{str(c.get('sha', ''))[:8]} {str(c.get('subject', ''))[:60]}",
                })
    for ev, date in session.execute(
        select(TrackEvent, Run.date).join(Run, Run.id == TrackEvent.run_pk, isouter=True)
        .where(TrackEvent.track_id == track_id)
    ).all():
        marks.append({
            "x": iso(date or ev.seen_at), "kind": "event",
            "label": f"{ev.attribute}: {ev.old_value} → {ev.new_value}",
        })
    seen, uniq = set(), []
    for m in marks:
        k = (m["x"], m["label"])
        if k not in seen:
            seen.add(k)
            uniq.append(m)
    return {
        "title": f"{track.kernel} on {track.platform_short}: {metric}",
        "traces": [_trace(metric, pts, axis="y", main=True)],
        "marks": uniq,
        "axes": {"y": _label(metric)},
    }


SHAPE_COLUMNS = (
    "helion_speedup", "triton_speedup", "torch_compile_speedup", "helion_accuracy",
    "helion_compile_time_s", "helion_latency_ms",
)


MAX_SHAPES_SHOWN = 500  # a run may list 200,000 shapes: the page shows the first ones and the count


def latest_shapes(session: Session, track_id: int, limit: int = MAX_SHAPES_SHOWN) -> dict[str, Any] | None:
    """Per-shape values of the newest run that kept them (only the newest run per ingest has
    them), at most ``limit`` rows: what a page renders is bounded whatever upstream sends."""
    row = session.execute(
        select(ShapeValue.run_pk, Run.date, Run.full_sha, Run.run_id)
        .join(Run, Run.id == ShapeValue.run_pk)
        .where(ShapeValue.track_id == track_id)
        .order_by(Run.date.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    shapes = session.scalars(
        select(ShapeValue)
        .where(ShapeValue.track_id == track_id, ShapeValue.run_pk == row.run_pk)
        .order_by(ShapeValue.shape_index)
        .limit(limit)
    ).all()
    total = len(shapes)
    if total == limit:
        total = session.scalar(
            select(func.count()).select_from(ShapeValue)
            .where(ShapeValue.track_id == track_id, ShapeValue.run_pk == row.run_pk)
        ) or total
    return {
        "run_id": row.run_id, "sha": row.full_sha[:8], "date": iso(row.date),
        "columns": SHAPE_COLUMNS, "total": int(total),
        "rows": [(s.shape, [getattr(s, c) for c in SHAPE_COLUMNS]) for s in shapes],
    }


__all__ = ["alert_charts", "series_chart", "latest_shapes"]
