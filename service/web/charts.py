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
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from service.domain import CHARTED, Cause, metric as metric_of
from service.store.alert_reads import AlertRows, iso
from service.store.chart_reads import (
    SHAPE_COLUMNS, newest_shapes, point_values, series_beside, series_on_track, track_events, track_moves,
)
from service.store.run_reads import RunStamp, trend_nights

WINDOW = timedelta(days=30)
MAX_SMALL_CHARTS = 24
UNITS = {"y": "speedup (×)", "y2": "latency (ms)", "y3": "compile time (s)"}
AXIS_OF_UNIT = {"ms": "y2", "s": "y3"}  # everything else (speedups, counts) on the left axis
BAND_SIGMAS = 2.0  # the band drawn around each level: ± this many of the detector's sigma


def _axis(metric: str) -> str:
    """One axis per unit: speedups (and counts) left, milliseconds and seconds on their own
    right-hand axes (a latency in ms and a compile time in s must not share a scale)."""
    return AXIS_OF_UNIT.get(metric_of(metric).unit, "y")


def _label(metric: str) -> str:
    """An axis title with its unit, for a one-metric chart."""
    unit = metric_of(metric).unit
    return f"{metric} ({unit})" if unit else metric


def _nights(stamps: list[RunStamp]) -> dict[int, tuple[str, str]]:
    """pk -> (ISO date, short sha): dates formatted once per run here, not once per point (it
    was the page's top cost)."""
    return {r.pk: (iso(r.date), r.full_sha[:8]) for r in stamps}


def _points(
    session: Session, series_ids: list[int], runs: dict[int, tuple[str, str]]
) -> dict[int, list[tuple[str, float | None, str, bool]]]:
    """Values of several series at the given runs, in date order: (date, value, short sha, failed)."""
    have = point_values(session, series_ids, runs)
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


def _baseline_of(name: str, source: str) -> bool:
    """A pretuned baseline's geomean of this source: drawn beside the headline it is compared to."""
    m = metric_of(name)
    return m.baseline is not None and m.source == source


def alert_charts(
    session: Session, rows: AlertRows, prefer: set[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The alert page's charts in three queries: the moved track's speedups (left axis) and
    latency (right axis) around the step, and the same metric for the other kernels on the
    platform over the same nights (group members first, at most MAX_SMALL_CHARTS)."""
    series, track = rows.series, rows.track
    lg_date, fb_date = rows.last_good.date, rows.first_bad.date
    wanted = list(CHARTED.get(track.source, ()))
    if series.metric not in wanted:
        wanted.append(series.metric)
    ids: dict[str, int] = {}
    others = []
    for r in series_beside(session, track.source, track.platform_short, track.id, series.metric):
        if r.track_id != track.id:
            others.append((r.series_id, r.kernel))
        elif r.metric in wanted or _baseline_of(r.metric, track.source):
            ids[r.metric] = r.series_id
    others = sorted(others, key=lambda r: (r[1] not in prefer, r[1]))[:MAX_SMALL_CHARTS]
    runs = _nights(trend_nights(session, track.source, lg_date - WINDOW, fb_date + WINDOW))
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
    ref = series_on_track(session, series_id)
    pts = _points(session, [ref.series_id], _nights(trend_nights(session, ref.source))).get(ref.series_id, [])
    marks: list[dict] = []
    for m in track_moves(session, ref.track_id):
        if m.series_id == ref.series_id:
            marks.append({
                "x": iso(m.first_bad_date), "kind": "bad",
                "label": f"#{m.alert_id} {m.change_pct:+.1f}% ({m.cause})",
            })
        for c in (m.change_commit, m.culprit if m.cause != Cause.REAL else None):
            if c and c.get("date"):
                marks.append({
                    "x": c["date"], "kind": "event",
                    "label": f"{str(c.get('sha', ''))[:8]} {str(c.get('subject', ''))[:60]}",
                })
    for ev in track_events(session, ref.track_id):
        marks.append({
            "x": iso(ev.date), "kind": "event",
            "label": f"{ev.attribute}: {ev.old_value} → {ev.new_value}",
        })
    seen, uniq = set(), []
    for m in marks:
        k = (m["x"], m["label"])
        if k not in seen:
            seen.add(k)
            uniq.append(m)
    return {
        "title": f"{ref.kernel} on {ref.platform_short}: {ref.metric}",
        "traces": [_trace(ref.metric, pts, axis="y", main=True)],
        "marks": uniq,
        "axes": {"y": _label(ref.metric)},
    }


MAX_SHAPES_SHOWN = 500  # a run may list 200,000 shapes: the page shows the first ones and the count


def latest_shapes(session: Session, track_id: int, limit: int = MAX_SHAPES_SHOWN) -> dict[str, Any] | None:
    """The per-shape table of the track's newest run that kept one, at most ``limit`` rows."""
    table = newest_shapes(session, track_id, limit)
    if table is None:
        return None
    return {
        "run_id": table.run_id, "sha": table.full_sha[:8], "date": iso(table.date),
        "columns": SHAPE_COLUMNS, "total": table.total,
        "rows": [(shape, list(values)) for shape, values in table.rows],
    }


__all__ = ["alert_charts", "series_chart", "latest_shapes"]
