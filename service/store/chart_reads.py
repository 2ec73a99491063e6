"""What the web charts and the series explorer read: point values, a platform's series, a
track's moves and events, the newest per-shape table, the kernels of a group.

Each read is one bounded statement returning typed rows; `service/web/charts.py` turns them into
chart payloads (dates formatted, traces and marks built) and never writes SQL itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from service.ingest.documents import PER_SHAPE_COLUMNS as SHAPE_COLUMNS  # the upstream document's, in order
from service.store.tables import Alert, Point, Run, Series, ShapeValue, Track, TrackEvent


# one stored value: (value, failed); None with failed=True is a nightly that produced nothing
PointValue = tuple[float | None, bool]


class SeriesOnPlatform(NamedTuple):
    series_id: int
    metric: str
    track_id: int
    kernel: str


class SeriesName(NamedTuple):
    series_id: int
    metric: str


class KernelSeries(NamedTuple):
    """One kernel's track and its series, metric order (the series explorer's menus)."""

    track_id: int | None  # None: no such track stored
    series: tuple[SeriesName, ...]


class SeriesOnTrack(NamedTuple):
    series_id: int
    metric: str
    track_id: int
    source: str
    platform_short: str
    kernel: str


class MoveMark(NamedTuple):
    """A stored move of a track, as a series chart marks it."""

    alert_id: int
    series_id: int
    first_bad_date: datetime
    change_pct: float
    cause: str  # the effective cause (a human's verdict beats the machine's)
    change_commit: dict | None
    culprit: dict | None


class EventMark(NamedTuple):
    """A track attribute that changed (baseline label, cudagraph, ...), dated by its run."""

    attribute: str
    old_value: str | None
    new_value: str | None
    date: datetime  # the run's date, or when the change was seen when no run is known


class ShapeTable(NamedTuple):
    """The per-shape values of a track's newest run that kept them, at most a bounded number."""

    run_id: str
    full_sha: str
    date: datetime
    total: int  # shapes stored for that run (``rows`` may hold fewer)
    rows: tuple[tuple[str, tuple[float | None, ...]], ...]  # (shape, values in SHAPE_COLUMNS order)


def point_values(session: Session, series_ids: list[int],
                 run_pks: Iterable[int]) -> dict[int, dict[int, PointValue]]:
    """Series id -> run pk -> (value, failed) at the given runs (primary-key lookups only), one
    fetch of Core rows. A mapping of plain tuples, not an object per point: an alert page reads a
    few thousand, and a NamedTuple each cost it most of a millisecond."""
    run_pks = list(run_pks)
    out: dict[int, dict[int, PointValue]] = defaultdict(dict)
    if not series_ids or not run_pks:
        return {}
    q = select(Point.series_id, Point.run_pk, Point.value, Point.failed).where(
        Point.series_id.in_(series_ids), Point.run_pk.in_(run_pks)
    )
    for sid, pk, value, failed in session.connection().execute(q).all():
        out[sid][pk] = (value, bool(failed))
    return dict(out)


def series_beside(session: Session, source: str, platform_short: str, track_id: int,
                  metric: str) -> list[SeriesOnPlatform]:
    """Every series of one track, and ``metric`` on the platform's other tracks (one read)."""
    return [SeriesOnPlatform(*r) for r in session.execute(
        select(Series.id, Series.metric, Track.id, Track.kernel)
        .join(Track, Track.id == Series.track_id)
        .where(
            Track.source == source, Track.platform_short == platform_short,
            or_(Track.id == track_id, Series.metric == metric),
        )
    )]


def kernel_series(session: Session, source: str, platform_short: str, kernel: str) -> KernelSeries:
    track_id = session.scalar(
        select(Track.id).where(Track.source == source, Track.platform_short == platform_short,
                               Track.kernel == kernel)
    )
    rows = session.execute(
        select(Series.id, Series.metric).where(Series.track_id == track_id).order_by(Series.metric)
    )
    return KernelSeries(track_id, tuple(SeriesName(*r) for r in rows))


def series_on_track(session: Session, series_id: int) -> SeriesOnTrack:
    """A series with its track's key (raises NoResultFound for an unknown id)."""
    return SeriesOnTrack(*session.execute(
        select(Series.id, Series.metric, Track.id, Track.source, Track.platform_short, Track.kernel)
        .join(Track, Track.id == Series.track_id)
        .where(Series.id == series_id)
    ).one())


def track_moves(session: Session, track_id: int) -> list[MoveMark]:
    """Every stored move on the track's series, by first-bad date."""
    return [MoveMark(*r) for r in session.execute(
        select(Alert.id, Alert.series_id, Run.date, Alert.change_pct, Alert.effective_cause,
               Alert.change_commit, Alert.culprit)
        .join(Run, Run.id == Alert.first_bad_run_pk)
        .join(Series, Series.id == Alert.series_id)
        .where(Series.track_id == track_id)
        .order_by(Run.date, Alert.id)
    )]


def track_events(session: Session, track_id: int) -> list[EventMark]:
    return [EventMark(attribute, old, new, date or seen_at) for attribute, old, new, date, seen_at in session.execute(
        select(TrackEvent.attribute, TrackEvent.old_value, TrackEvent.new_value, Run.date, TrackEvent.seen_at)
        .join(Run, Run.id == TrackEvent.run_pk, isouter=True)
        .where(TrackEvent.track_id == track_id)
        .order_by(TrackEvent.id)
    )]


def newest_shapes(session: Session, track_id: int, limit: int) -> ShapeTable | None:
    """Per-shape values of the newest run that kept them (only the newest run per ingest has
    them), at most ``limit`` rows: what a page renders is bounded whatever upstream sends."""
    run = session.execute(
        select(ShapeValue.run_pk, Run.date, Run.full_sha, Run.run_id)
        .join(Run, Run.id == ShapeValue.run_pk)
        .where(ShapeValue.track_id == track_id)
        .order_by(Run.date.desc())
        .limit(1)
    ).first()
    if run is None:
        return None
    of_run = (ShapeValue.track_id == track_id, ShapeValue.run_pk == run.run_pk)
    rows = tuple(
        (shape, tuple(values)) for shape, *values in session.execute(
            select(ShapeValue.shape, *[getattr(ShapeValue, c) for c in SHAPE_COLUMNS])
            .where(*of_run).order_by(ShapeValue.shape_index).limit(limit)
        )
    )
    total = len(rows)
    if total == limit:
        total = session.scalar(select(func.count()).select_from(ShapeValue).where(*of_run)) or total
    return ShapeTable(run.run_id, run.full_sha, run.date, int(total), rows)


def group_kernels(session: Session, group_id: int) -> set[str]:
    """The kernels with an alert in the group (their small charts come first)."""
    return set(session.scalars(
        select(Track.kernel)
        .join(Series, Series.track_id == Track.id)
        .join(Alert, Alert.series_id == Series.id)
        .where(Alert.group_id == group_id)
    ))
