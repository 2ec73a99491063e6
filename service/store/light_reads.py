"""SQLAlchemy Core reads for `benchwatch status` and the `benchwatch alerts` table, without the ORM.

Why this module: a person types these two commands and waits for them (issue 11 wants < 0.5 s
wall). Importing the mapped classes of `tables.py` and configuring their mappers costs ~60-70 ms
of CPU, a sixth of the command, on top of the store's queries. Here every table is a lightweight
``table()``/``column()`` clause naming only the columns read, so nothing mapped is imported.

What keeps it honest (tests/test_light_reads.py): every table and column named here exists in
`tables.py` with the same type, and `store_status`, `alert_rows` and `platforms` give the same
answers as `status.store_status`, `alert_reads.list_alerts` and `choices.platforms` on SQLite and
PostgreSQL. `store_status` accepts an ORM session as well as a Core connection, so the status
page could read through it too. Everything else (JSON contract, groups, actions) stays on the ORM.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String, Text, column, func, select, table

from service.domain import SOURCES, AlertStatus, effective_cause

# Stored words these reads filter on. They are defined beside their writers (ingest_writer.FAILED,
# outbox.PENDING/DEAD, health_writer's fetch key); importing those modules would import the
# mapped classes, so the tests check that these equal them.
INGEST_FAILED = "failed"
OUTBOX_PENDING, OUTBOX_DEAD = "pending", "dead"
FETCH_KEY = "health.fetch.{source}"

runs = table("runs", column("id", Integer), column("source", String), column("full_sha", String),
             column("date", DateTime), column("is_trend", Boolean))
tracks = table("tracks", column("id", Integer), column("source", String), column("platform_short", String),
               column("kernel", String))
series = table("series", column("id", Integer), column("track_id", Integer), column("metric", String))
points = table("points", column("series_id", Integer), column("failed", Boolean))
observations = table("observations", column("track_id", Integer), column("run_pk", Integer))
shape_values = table("shape_values", column("track_id", Integer))
ingest_conflicts = table("ingest_conflicts", column("detail", Text))
ingest_log = table("ingest_log", column("id", Integer), column("source", String), column("finished_at", DateTime),
                   column("outcome", String), column("message", Text))
alerts = table("alerts", column("id", Integer), column("series_id", Integer), column("group_id", Integer),
               column("first_bad_run_pk", Integer), column("change_pct", Float), column("direction", String),
               column("state", String), column("status", String), column("cause", String),
               column("cause_kind", String), column("human_cause", String), column("culprit", JSON),
               column("change_commit", JSON), column("created_at", DateTime))
alert_groups = table("alert_groups", column("id", Integer))
health_alerts = table("health_alerts", column("id", Integer), column("status", String))
outbox = table("outbox", column("id", Integer), column("state", String))
service_state = table("service_state", column("key", String), column("value", Text))

TABLES = (runs, tracks, series, points, observations, shape_values, ingest_conflicts, ingest_log, alerts,
          alert_groups, health_alerts, outbox, service_state)


def _iso_z(dt) -> str | None:
    return dt.isoformat() + "Z" if dt else None


def store_status(conn) -> dict[str, int | str | None]:
    """What `benchwatch status` prints: counts, last ingest per source, outbox, freshness (the
    same keys and values as `status.store_status`). ``conn``: a Core connection or a session."""
    count = select(func.count())
    named: dict[str, Any] = {}
    for source in SOURCES:
        named[f"runs_{source}"] = count.select_from(runs).where(runs.c.source == source)
        named[f"trend_runs_{source}"] = count.select_from(runs).where(runs.c.source == source, runs.c.is_trend)
        named[f"tracks_{source}"] = count.select_from(tracks).where(tracks.c.source == source)
    named.update(
        series=count.select_from(series),
        points=count.select_from(points),
        failed_points=count.select_from(points).where(points.c.failed),
        observations=count.select_from(observations),
        shape_rows=count.select_from(shape_values),
        conflicts=select(func.count(func.distinct(ingest_conflicts.c.detail))),
        alerts=count.select_from(alerts),
        alerts_open=count.select_from(alerts).where(alerts.c.status == AlertStatus.OPEN),
        alert_groups=count.select_from(alert_groups),
        outbox_pending=count.select_from(outbox).where(outbox.c.state == OUTBOX_PENDING),
        outbox_dead=count.select_from(outbox).where(outbox.c.state == OUTBOX_DEAD),
        health_alerts_open=count.select_from(health_alerts).where(health_alerts.c.status == AlertStatus.OPEN),
    )
    for source in SOURCES:
        log = ingest_log.c
        newest_log = select(log.outcome, log.message).where(log.source == source).order_by(log.id.desc()).limit(1)
        named[f"last_ingest_{source}_at"] = select(func.max(log.finished_at)).where(
            log.source == source, log.outcome != INGEST_FAILED)
        named[f"last_outcome_{source}"] = newest_log.with_only_columns(log.outcome)
        named[f"last_message_{source}"] = newest_log.with_only_columns(log.message)
        named[f"newest_nightly_{source}_at"] = select(func.max(runs.c.date)).where(
            runs.c.source == source, runs.c.is_trend)
        named[f"fetch_{source}"] = select(service_state.c.value).where(
            service_state.c.key == FETCH_KEY.format(source=source))
    # one statement for all of it: each statement compiled is ~2 ms of a command a person waits for
    row = conn.execute(select(*[s.scalar_subquery().label(n) for n, s in named.items()])).one()
    got = dict(zip(named, row))

    out: dict[str, int | str | None] = {}
    for source in SOURCES:
        for key in (f"runs_{source}", f"trend_runs_{source}", f"tracks_{source}"):
            out[key] = int(got[key] or 0)
    out["runs"] = sum(int(got[f"runs_{s}"] or 0) for s in SOURCES)
    for key in ("series", "points", "failed_points", "observations", "shape_rows", "conflicts", "alerts",
                "alerts_open", "alert_groups", "outbox_pending", "outbox_dead"):
        out[key] = int(got[key] or 0)
    for source in SOURCES:
        out[f"last_ingest_{source}_at"] = _iso_z(got[f"last_ingest_{source}_at"])
        failed = got[f"last_outcome_{source}"] == INGEST_FAILED
        out[f"last_ingest_{source}_error"] = got[f"last_message_{source}"] if failed else None
    out["health_alerts_open"] = int(got["health_alerts_open"] or 0)
    for source in SOURCES:
        out[f"newest_nightly_{source}_at"] = _iso_z(got[f"newest_nightly_{source}_at"])
        out[f"fetch_failures_{source}"] = _failures(got[f"fetch_{source}"])
    for source, platform, newest in conn.execute(
        select(tracks.c.source, tracks.c.platform_short, func.max(runs.c.date))
        .select_from(tracks.join(observations, observations.c.track_id == tracks.c.id)
                     .join(runs, runs.c.id == observations.c.run_pk))
        .where(runs.c.is_trend).group_by(tracks.c.source, tracks.c.platform_short)
        .order_by(tracks.c.source, tracks.c.platform_short)
    ):
        out[f"newest_{source}_{platform}_at"] = _iso_z(newest)
    return out


def _failures(value: str | None) -> int:
    """Failed fetches in a row from the note `health_writer.note_fetch` keeps; 0 when unreadable."""
    if value is None:
        return 0
    try:
        return int(json.loads(value)["failures"])
    except (ValueError, KeyError, TypeError):
        return 0


def platforms(conn, source: str | None = None) -> list[str]:
    """The stored platforms (of one source): what `--platform` may be."""
    q = select(tracks.c.platform_short).distinct().order_by(tracks.c.platform_short)
    if source is not None:
        q = q.where(tracks.c.source == source)
    return list(conn.execute(q).scalars())


def _commit(c: dict | None) -> dict | None:
    return None if c is None else {"sha": c.get("sha"), "subject": c.get("subject")}


def alert_rows(conn, status: str | None = AlertStatus.OPEN, platform: str | None = None,
               cause: str | None = None, source: str | None = None) -> list[dict[str, Any]]:
    """The fields of the `alerts` table, newest first, filtered as `list_alerts` filters (the
    values are those of its JSON; ``culprit``/``change_commit`` carry their sha and subject).
    ``status`` None or "all": every status; ``cause``: the effective one (a human's beats the
    machine's, `domain.effective_cause`)."""
    first_bad = runs.alias("first_bad")
    q = (select(alerts.c.id, alerts.c.group_id, alerts.c.state, alerts.c.status, alerts.c.cause,
                alerts.c.human_cause, alerts.c.cause_kind, alerts.c.direction, alerts.c.change_pct,
                alerts.c.culprit, alerts.c.change_commit, tracks.c.source, tracks.c.platform_short,
                tracks.c.kernel, series.c.metric, first_bad.c.full_sha, first_bad.c.date)
         .select_from(alerts.join(series, series.c.id == alerts.c.series_id)
                      .join(tracks, tracks.c.id == series.c.track_id)
                      .join(first_bad, first_bad.c.id == alerts.c.first_bad_run_pk))
         .order_by(alerts.c.created_at.desc(), alerts.c.id.desc()))
    if status not in (None, "all"):
        q = q.where(alerts.c.status == status)
    if platform is not None:
        q = q.where(tracks.c.platform_short == platform)
    if source is not None:
        q = q.where(tracks.c.source == source)
    out = []
    for r in conn.execute(q):
        shown = effective_cause(r.cause, r.human_cause)
        if cause is not None and shown != cause:
            continue
        out.append({
            "id": r.id, "group_id": r.group_id, "state": r.state, "status": r.status, "cause": shown,
            "kind": r.cause_kind or "", "direction": r.direction, "change_pct": round(float(r.change_pct), 2),
            "source": r.source, "platform_short": r.platform_short, "kernel": r.kernel, "metric": r.metric,
            "first_bad": {"sha": r.full_sha[:8], "date": r.date.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "culprit": _commit(r.culprit), "change_commit": _commit(r.change_commit),
        })
    return out
