"""Series in and out of the store for detection: stored points back as `records.SeriesData`, the
per-track facts (shape lists, attribute changes) the classifier weighs, and the detect progress
written back (`mark_detected`: which points a pass has seen).

Loading is bulk (one query for the series, one for their points, one for the runs of each
source) because `detect` walks every series each night and must stay well under a second.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.records import SeriesData, SeriesKey, SeriesPoint, aware, naive
from service.store.tables import DetectState, Point, Run, Series, ShapeValue, Track, TrackEvent


@dataclass(frozen=True)
class SeriesRef:
    """Where a series lives in the store, next to the key the stages use."""

    series_id: int
    track_id: int
    key: SeriesKey


@dataclass(frozen=True)
class RunRow:
    pk: int
    run_id: str
    sha: str
    full_sha: str
    date: datetime  # tz-aware UTC
    is_trend: bool


def series_refs(
    session: Session,
    *,
    source: str | None = None,
    platform_short: str | None = None,
    kernel: str | None = None,
    metric: str | None = None,
    series_ids: Iterable[int] | None = None,
) -> list[SeriesRef]:
    q = select(
        Series.id, Series.track_id, Track.source, Track.platform_short, Track.kernel, Series.metric
    ).join(Track, Track.id == Series.track_id)
    if source is not None:
        q = q.where(Track.source == source)
    if platform_short is not None:
        q = q.where(Track.platform_short == platform_short)
    if kernel is not None:
        q = q.where(Track.kernel == kernel)
    if metric is not None:
        q = q.where(Series.metric == metric)
    if series_ids is not None:
        ids = list(series_ids)
        if not ids:
            return []
        q = q.where(Series.id.in_(ids))
    return [
        SeriesRef(sid, tid, SeriesKey(src, plat, kern, met))
        for sid, tid, src, plat, kern, met in session.execute(q.order_by(Series.id))
    ]


def runs_of(session: Session, source: str) -> dict[int, RunRow]:
    """Every run of a source by primary key."""
    return {
        pk: RunRow(pk, run_id, sha, full_sha, aware(date), bool(trend))
        for pk, run_id, sha, full_sha, date, trend in session.execute(
            select(Run.id, Run.run_id, Run.sha, Run.full_sha, Run.date, Run.is_trend).where(
                Run.source == source
            )
        )
    }


def load_series(
    session: Session, refs: Sequence[SeriesRef], runs: dict[str, dict[int, RunRow]] | None = None
) -> dict[int, SeriesData]:
    """SeriesData for each ref (all runs, trend and not, date order), keyed by series id."""
    if not refs:
        return {}
    runs = dict(runs or {})
    for src in {r.key.source for r in refs}:
        if src not in runs:
            runs[src] = runs_of(session, src)
    wanted = {r.series_id: r for r in refs}
    raw: dict[int, list[tuple[int, float | None]]] = defaultdict(list)
    q = select(Point.series_id, Point.run_pk, Point.value)
    if len(wanted) <= 500:
        q = q.where(Point.series_id.in_(list(wanted)))
    else:  # a big IN list is slower than reading the source's points through the join
        srcs = list({r.key.source for r in refs})
        q = q.join(Series, Series.id == Point.series_id).join(Track, Track.id == Series.track_id)
        q = q.where(Track.source.in_(srcs))
    # Core execution, not ORM: plain rows, without the ORM's per-row loading machinery
    for sid, run_pk, value in session.connection().execute(q).fetchall():
        if sid in wanted:
            raw[sid].append((run_pk, value))
    # rank every run once by (date, run_id); sorting small ints per series is cheap
    rank: dict[str, dict[int, int]] = {}
    for src, rmap in runs.items():
        order = sorted(rmap, key=lambda pk: (rmap[pk].date, rmap[pk].run_id))
        rank[src] = {pk: i for i, pk in enumerate(order)}
    out: dict[int, SeriesData] = {}
    for sid, ref in wanted.items():
        rmap, rk = runs[ref.key.source], rank[ref.key.source]
        items = raw.get(sid, [])
        items.sort(key=lambda t: rk[t[0]])
        out[sid] = SeriesData(ref.key, tuple(
            SeriesPoint(r.run_id, r.sha, r.full_sha, r.date, value, r.is_trend)
            for r, value in ((rmap[pk], v) for pk, v in items)
        ))
    return out


def load_one(session: Session, key: SeriesKey) -> tuple[SeriesRef, SeriesData] | None:
    refs = series_refs(
        session, source=key.source, platform_short=key.platform_short, kernel=key.kernel,
        metric=key.metric,
    )
    if not refs:
        return None
    return refs[0], load_series(session, refs)[refs[0].series_id]


# --- per-shape lists -----------------------------------------------------------------------


def shapes_at(session: Session, track_id: int, run_pk_: int) -> tuple[str, ...] | None:
    """The shape labels stored for one (track, run), or None when that run kept none."""
    rows = session.execute(
        select(ShapeValue.shape)
        .where(ShapeValue.track_id == track_id, ShapeValue.run_pk == run_pk_)
        .order_by(ShapeValue.shape_index)
    ).scalars().all()
    return tuple(rows) if rows else None


# --- attribute changes ----------------------------------------------------------------------


@dataclass(frozen=True)
class LoggedEvent:
    run_pk: int | None
    attribute: str
    old: str | None
    new: str | None


class TrackFacts:
    """Shape rows and logged attribute events of a whole source, loaded in two queries.

    The detect pass asks, for every move, which shapes ran either side of the step and what
    about the track changed; one query per question per move was most of a pass's time.
    """

    def __init__(self, session: Session, source: str, rows: dict[int, RunRow]) -> None:
        self._session = session
        self.rows = rows
        self.shape_runs: dict[int, list[tuple[datetime, int]]] = defaultdict(list)
        for track_id, run_pk_ in session.execute(
            select(ShapeValue.track_id, ShapeValue.run_pk)
            .join(Track, Track.id == ShapeValue.track_id)
            .where(Track.source == source)
            .distinct()
        ):
            if run_pk_ in rows:
                self.shape_runs[track_id].append((rows[run_pk_].date, run_pk_))
        for runs in self.shape_runs.values():
            runs.sort()
        self.events: dict[int, list[LoggedEvent]] = defaultdict(list)
        for ev in session.scalars(
            select(TrackEvent).join(Track, Track.id == TrackEvent.track_id)
            .where(Track.source == source).order_by(TrackEvent.id)
        ):
            self.events[ev.track_id].append(LoggedEvent(ev.run_pk, ev.attribute, ev.old_value, ev.new_value))
        self._shapes: dict[tuple[int, int], tuple[str, ...] | None] = {}

    def shapes_near(self, track_id: int, run_pk_: int, *, side: str) -> tuple[str, ...] | None:
        """Shapes of the nearest run that kept them, at/before (side="before") or at/after a run.

        Only the runs that were the newest when ingested carry per-shape rows, so the exact
        last-good / first-bad run often has none; the nearest one on the right side still tells
        whether the shape list changed across the step.
        """
        if side not in ("before", "after"):
            raise ValueError(f"side must be 'before' or 'after', not {side!r}")
        anchor = self.rows.get(run_pk_)
        runs = self.shape_runs.get(track_id)
        if anchor is None or not runs:
            return None
        pick = None
        if side == "before":
            for date, pk in reversed(runs):
                if date <= anchor.date:
                    pick = pk
                    break
        else:
            for date, pk in runs:
                if date >= anchor.date:
                    pick = pk
                    break
        if pick is None:
            return None
        key = (track_id, pick)
        if key not in self._shapes:
            self._shapes[key] = shapes_at(self._session, track_id, pick)
        return self._shapes[key]


# --- incremental detection bookkeeping ----------------------------------------------------


@dataclass(frozen=True)
class SeriesProgress:
    ref: SeriesRef
    trend_points: int  # stored trend points (failures included) now
    last_run_pk: int | None  # newest trend run with a point
    seen: int | None  # what the last detect pass saw (None = never)


def series_progress(session: Session, source: str | None = None) -> list[SeriesProgress]:
    """Trend-point counts per series next to what DetectState says the last pass saw."""
    counts = _trend_counts(session)
    seen = {
        sid: n for sid, n in session.execute(select(DetectState.series_id, DetectState.points_seen))
    }
    out = []
    for ref in series_refs(session, source=source):
        n, last = counts.get(ref.series_id, (0, None))
        out.append(SeriesProgress(ref, n, last, seen.get(ref.series_id)))
    return out


def _trend_counts(session: Session, series_ids: Sequence[int] | None = None) -> dict[int, tuple[int, int | None]]:
    """series id -> (trend points stored, newest trend run pk with a point)."""
    q = (
        select(Point.series_id, func.count(), func.max(Point.run_pk))
        .join(Run, Run.id == Point.run_pk)
        .where(Run.is_trend)
        .group_by(Point.series_id)
    )
    if series_ids is not None:
        q = q.where(Point.series_id.in_(list(series_ids)))
    return {sid: (int(n), last) for sid, n, last in session.execute(q)}


def detected_through(session: Session, series_ids: Sequence[int]) -> bool:
    """Has the last detect pass seen every trend point of these series? Then their stored
    alerts are what detection finds in them now (`investigate` reads those instead of searching
    again: the same answer, without loading the search)."""
    ids = list(series_ids)
    if not ids:
        return False
    counts = _trend_counts(session, ids)
    seen = dict(session.execute(
        select(DetectState.series_id, DetectState.points_seen).where(DetectState.series_id.in_(ids))).all())
    return all(sid in seen and seen[sid] == counts.get(sid, (0, None))[0] for sid in ids)


def series_with_new_points(session: Session, source: str | None = None) -> list[SeriesProgress]:
    return [p for p in series_progress(session, source) if p.trend_points != (p.seen or 0)]


def mark_detected(
    session: Session, progress: Iterable[SeriesProgress], now: datetime
) -> None:
    """Record what this pass saw, so the next pass skips untouched series."""
    have = {s.series_id: s for s in session.scalars(select(DetectState))}
    for p in progress:
        st = have.get(p.ref.series_id)
        if st is None:
            session.add(
                DetectState(
                    series_id=p.ref.series_id, points_seen=p.trend_points,
                    last_run_pk=p.last_run_pk, checked_at=naive(now),
                )
            )
        elif st.points_seen != p.trend_points or st.last_run_pk != p.last_run_pk:
            st.points_seen, st.last_run_pk, st.checked_at = p.trend_points, p.last_run_pk, naive(now)
