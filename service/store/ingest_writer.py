"""Write a normalised document: only what is new, in one transaction, never overwriting.

Idempotence is checked per (track, run) with a digest of the values, so re-reading a year of
history each night costs one small query instead of re-comparing every point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from service.ingest.documents import PER_SHAPE_COLUMNS
from service.ingest.normalize import NormalizedDocument, ObservationRow
from service.store.db import chunks
from service.store.tables import (
    IngestConflict,
    IngestLog,
    Observation,
    Point,
    Run,
    Series,
    ShapeValue,
    Track,
    TrackEvent,
    TrackFlags,
)


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass
class IngestResult:
    source: str
    location: str
    outcome: str  # added | unchanged | not_modified
    runs_added: int = 0
    tracks_added: int = 0
    points_added: int = 0
    shapes_added: int = 0
    conflicts: list[str] = field(default_factory=list)
    new_run_ids: list[str] = field(default_factory=list)

    def line(self) -> str:
        if self.outcome == "not_modified":
            return f"{self.source}: not modified since the last fetch"
        text = (
            f"{self.source}: {self.runs_added} new runs, {self.points_added} points, "
            f"{self.shapes_added} per-shape rows"
        )
        if self.conflicts:
            text += f"; {len(self.conflicts)} conflicting re-reported values kept as stored"
        return text


def _bulk(session: Session, table, rows: list[dict]) -> None:
    """Core insert of dict rows: for the small tables (runs, tracks, series)."""
    for chunk in chunks(rows, 5000):
        session.execute(insert(table.__table__), chunk)


def _fetch(session: Session, sql: str, *params) -> list[tuple]:
    """Plain tuples straight from the driver (``?`` marks become the driver's own style).

    The digest map is one row per stored (track, run), ~35k, read on every nightly ingest.
    """
    conn = session.connection()
    if conn.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    cur = conn.connection.driver_connection.cursor()
    try:
        cur.execute(sql, params)
        return cur.fetchall()
    finally:
        cur.close()


def _copy_rows(session: Session, table, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Append many tuples through the raw driver, inside the session's transaction.

    The large tables (a year is ~35k observations and ~170k points) are most of an ingest;
    SQLAlchemy's per-row parameter processing cost more than the database itself. PostgreSQL
    gets COPY FROM STDIN (psycopg escapes every value); SQLite a plain executemany. Rows are
    plain ints, floats, bools, str and None, which both drivers store exactly as Core would.
    """
    if not rows:
        return
    name = table.__table__.name
    conn = session.connection()
    dbapi = conn.connection.driver_connection
    if conn.dialect.name == "postgresql":
        with dbapi.cursor() as cur:
            with cur.copy(f"COPY {name} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    marks = ", ".join("?" * len(columns))
    cur = dbapi.cursor()
    try:
        cur.executemany(f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({marks})", rows)
    finally:
        cur.close()


FAILED = "failed"  # an ingest_log outcome: the source could not be ingested (message says why)


def last_etag(session: Session, source: str, location: str) -> tuple[str | None, str | None]:
    row = session.execute(
        select(IngestLog.etag, IngestLog.content_hash)
        .where(IngestLog.source == source, IngestLog.location == location, IngestLog.outcome != FAILED)
        .order_by(IngestLog.id.desc())
        .limit(1)
    ).first()
    return (row[0], row[1]) if row else (None, None)


def log_not_modified(
    session: Session, source: str, location: str, etag: str | None, content_hash: str | None = None
) -> IngestResult:
    now = utcnow()
    session.add(
        IngestLog(
            source=source, location=location, started_at=now, finished_at=now, etag=etag,
            content_hash=content_hash,
            outcome="not_modified", runs_added=0, points_added=0, shapes_added=0, conflicts=0,
        )
    )
    return IngestResult(source, location, "not_modified")


def log_failure(session: Session, source: str, location: str, message: str) -> None:
    """A source that could not be ingested this pass: kept so `status` and `/status` show it."""
    now = utcnow()
    session.add(
        IngestLog(
            source=source, location=location, started_at=now, finished_at=now, outcome=FAILED,
            runs_added=0, points_added=0, shapes_added=0, conflicts=0, message=message[:2000],
        )
    )


def _sync_runs(session: Session, doc: NormalizedDocument, result: IngestResult) -> dict[str, int]:
    stored = {
        r.run_id: r
        for r in session.execute(
            select(Run.id, Run.run_id, Run.full_sha, Run.date, Run.branch, Run.is_nightly).where(
                Run.source == doc.source
            )
        )
    }
    new = []
    for run_id, row in doc.runs.items():
        have = stored.get(run_id)
        if have is None:
            new.append(
                dict(
                    source=doc.source, run_id=run_id, sha=row.sha, full_sha=row.full_sha,
                    date=row.date, branch=row.branch, is_nightly=row.is_nightly,
                    is_trend=row.is_trend, kernel_count=row.kernel_count,
                )
            )
        elif (have.full_sha, have.date, have.branch, have.is_nightly) != (
            row.full_sha, row.date, row.branch, row.is_nightly
        ):
            result.conflicts.append(
                f"run {run_id}: stored {have.full_sha[:8]} {have.date:%Y-%m-%d} {have.branch}, "
                f"document says {row.sha} {row.date:%Y-%m-%d} {row.branch}"
            )
    _bulk(session, Run, new)
    result.runs_added = len(new)
    result.new_run_ids = sorted(r["run_id"] for r in new)
    return {
        run_id: pk
        for pk, run_id in session.execute(select(Run.id, Run.run_id).where(Run.source == doc.source))
    }


def _sync_tracks(
    session: Session, doc: NormalizedDocument, result: IngestResult, newest_run_pk: int | None
) -> dict[tuple[str, str], int]:
    stored = {
        (t.platform_short, t.kernel): t
        for t in session.scalars(select(Track).where(Track.source == doc.source))
    }
    now = utcnow()
    new = []
    for key, row in doc.tracks.items():
        have = stored.get(key)
        if have is None:
            new.append(
                dict(
                    source=doc.source, platform_short=row.platform_short, kernel=row.kernel,
                    platform=row.platform, baseline_label=row.baseline_label,
                    cudagraph=row.cudagraph, compute=row.compute,
                )
            )
            continue
        for attr in ("platform", "baseline_label", "cudagraph", "compute"):
            old, cur = getattr(have, attr), getattr(row, attr)
            if old != cur:
                session.add(
                    TrackEvent(
                        track_id=have.id, run_pk=newest_run_pk, attribute=attr,
                        old_value=None if old is None else str(old),
                        new_value=None if cur is None else str(cur), seen_at=now,
                    )
                )
                setattr(have, attr, cur)
    _bulk(session, Track, new)
    result.tracks_added = len(new)
    session.flush()
    return {
        (p, k): tid
        for tid, p, k in session.execute(
            select(Track.id, Track.platform_short, Track.kernel).where(Track.source == doc.source)
        )
    }


def _sync_series(
    session: Session, doc: NormalizedDocument, track_ids: dict[tuple[str, str], int]
) -> dict[tuple[int, str], int]:
    metrics: dict[tuple[str, str], set[str]] = {}
    for o in doc.observations:
        have = metrics.get(o.track)
        if have is None:
            metrics[o.track] = set(o.values)
        elif not have.issuperset(o.values):
            have.update(o.values)
    wanted = {(track_ids[t], m) for t, ms in metrics.items() for m in ms}
    query = select(Series.id, Series.track_id, Series.metric).join(Track).where(
        Track.source == doc.source
    )
    stored = {(t, m): sid for sid, t, m in session.execute(query)}
    new = [dict(track_id=t, metric=m) for (t, m) in sorted(wanted - stored.keys())]
    if new:
        _bulk(session, Series, new)
        stored = {(t, m): sid for sid, t, m in session.execute(query)}
    return stored


def _describe_conflict(
    session: Session, obs: ObservationRow, track_id: int, run_pk: int, series_ids: dict
) -> str:
    stored = {
        metric: value
        for metric, value in session.execute(
            select(Series.metric, Point.value)
            .join(Point, Point.series_id == Series.id)
            .where(Series.track_id == track_id, Point.run_pk == run_pk)
        )
    }
    diffs = [
        f"{m} stored {stored.get(m)!r} now {v!r}"
        for m, v in sorted(obs.values.items())
        if stored.get(m) != v
    ]
    return f"{obs.track[1]} on {obs.track[0]} run {obs.run_id}: " + (
        "; ".join(diffs[:3]) or "error/cudagraph flag differs"
    )


_OBSERVATION_COLUMNS = ("track_id", "run_pk", "digest", "error", "cudagraph")
_POINT_COLUMNS = ("series_id", "run_pk", "value", "failed")
_SHAPE_COLUMNS = ("track_id", "run_pk", "shape_index", "shape", *PER_SHAPE_COLUMNS)


def _write_flags(session: Session, doc: NormalizedDocument, track_ids: dict, run_pks: dict) -> None:
    """The summary's flags belong to the document's newest nightly: written once per run (a
    later document for the same nightly adds the tracks it newly flags, never rewrites)."""
    run_pk = run_pks.get(doc.latest_run_id) if doc.latest_run_id else None
    if run_pk is None or not doc.flags:
        return
    have = {t for (t,) in session.execute(select(TrackFlags.track_id).where(TrackFlags.run_pk == run_pk))}
    rows = [
        dict(track_id=track_ids[key], run_pk=run_pk, infra_missing=f.infra_missing,
             run_failures=list(f.run_failures), accuracy_failures=list(f.accuracy_failures), error=f.error)
        for key, f in doc.flags.items() if key in track_ids and track_ids[key] not in have
    ]
    if rows:
        session.execute(insert(TrackFlags), rows)


def write_document(
    session: Session,
    doc: NormalizedDocument,
    *,
    location: str,
    etag: str | None = None,
    content_hash: str | None = None,
) -> IngestResult:
    """Add what is new in ``doc``; the caller's transaction makes it all-or-nothing."""
    started = utcnow()
    result = IngestResult(doc.source, location, "unchanged")
    result.conflicts.extend(doc.problems)
    run_pks = _sync_runs(session, doc, result)
    newest = max(doc.runs.values(), key=lambda r: (r.date, r.run_id), default=None)
    track_ids = _sync_tracks(session, doc, result, run_pks.get(newest.run_id) if newest else None)
    series_ids = _sync_series(session, doc, track_ids)

    digests = dict(
        ((t, r), d)
        for t, r, d in _fetch(
            session,
            "SELECT o.track_id, o.run_pk, o.digest FROM observations o "
            "JOIN tracks t ON t.id = o.track_id WHERE t.source = ?",
            doc.source,
        )
    )
    with_shapes = set(
        _fetch(
            session,
            "SELECT DISTINCT v.track_id, v.run_pk FROM shape_values v "
            "JOIN tracks t ON t.id = v.track_id WHERE t.source = ?",
            doc.source,
        )
    )
    series_of: dict[int, dict[str, int]] = {}  # track id -> metric -> series id
    for (track_id, metric), sid in series_ids.items():
        series_of.setdefault(track_id, {})[metric] = sid
    obs_rows: list[tuple] = []
    point_rows: list[tuple] = []
    shape_rows: list[tuple] = []
    conflicts: list[tuple[int, int | None, str]] = []
    for obs in doc.observations:
        track_id = track_ids[obs.track]
        run_pk = run_pks[obs.run_id]
        digest = obs.digest()
        have = digests.get((track_id, run_pk))
        if have is None:
            obs_rows.append((track_id, run_pk, digest, obs.error, obs.cudagraph))
            sids = series_of[track_id]
            point_rows += [(sids[m], run_pk, v, v is None) for m, v in obs.values.items()]
        elif have != digest:
            detail = _describe_conflict(session, obs, track_id, run_pk, series_ids)
            conflicts.append((run_pk, track_id, detail))
            result.conflicts.append(detail)
        if obs.shapes and (track_id, run_pk) not in with_shapes:
            shape_rows.extend(
                (track_id, run_pk, s.index, s.shape, *(getattr(s, c) for c in PER_SHAPE_COLUMNS))
                for s in obs.shapes
            )
    _write_flags(session, doc, track_ids, run_pks)
    _copy_rows(session, Observation, _OBSERVATION_COLUMNS, obs_rows)
    _copy_rows(session, Point, _POINT_COLUMNS, point_rows)
    _copy_rows(session, ShapeValue, _SHAPE_COLUMNS, shape_rows)
    result.points_added = len(point_rows)
    result.shapes_added = len(shape_rows)
    if result.runs_added or point_rows or shape_rows or result.tracks_added:
        result.outcome = "added"

    log = IngestLog(
        source=doc.source, location=location, started_at=started, finished_at=utcnow(),
        etag=etag, content_hash=content_hash, outcome=result.outcome,
        runs_added=result.runs_added, points_added=result.points_added,
        shapes_added=result.shapes_added, conflicts=len(result.conflicts),
        message="; ".join(result.conflicts[:5]) or None,
    )
    session.add(log)
    session.flush()
    for run_pk, track_id, detail in conflicts:
        session.add(IngestConflict(ingest_id=log.id, run_pk=run_pk, track_id=track_id, detail=detail))
    return result


