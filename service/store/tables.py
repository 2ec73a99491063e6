"""The schema, as SQLAlchemy 2 ORM classes. Alembic migrations create it; nothing else does.

Layout follows the reads: a *track* is one (source, platform, kernel); a *series* is one metric
of a track; a *point* is one run's value of a series (``value`` NULL + ``failed`` for a run
that produced nothing). *Observations* hold what is per (track, run) rather than per metric:
a digest of the values (cheap idempotence and conflict checks), the pretuned error string and
cudagraph flag.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from service import domain


class Base(DeclarativeBase):
    pass


# --- ingest side -------------------------------------------------------------------------


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        UniqueConstraint("source", "run_id", name="uq_runs_source_run_id"),
        Index("ix_runs_source_date", "source", "date"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    run_id: Mapped[str] = mapped_column(String(32))
    sha: Mapped[str] = mapped_column(String(8))
    full_sha: Mapped[str] = mapped_column(String(40))
    date: Mapped[datetime] = mapped_column(DateTime)
    branch: Mapped[str] = mapped_column(String(255))
    is_nightly: Mapped[bool] = mapped_column(Boolean)
    is_trend: Mapped[bool] = mapped_column(Boolean)  # nightly on main: the only runs that alert
    kernel_count: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Track(Base):
    __tablename__ = "tracks"
    __table_args__ = (
        UniqueConstraint("source", "platform_short", "kernel", name="uq_tracks_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    platform_short: Mapped[str] = mapped_column(String(64))
    platform: Mapped[str] = mapped_column(String(255))
    kernel: Mapped[str] = mapped_column(String(255))
    baseline_label: Mapped[str | None] = mapped_column(String(255), nullable=True)
    cudagraph: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    compute: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Series(Base):
    __tablename__ = "series"
    __table_args__ = (UniqueConstraint("track_id", "metric", name="uq_series_track_metric"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    track_id: Mapped[int] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"))
    metric: Mapped[str] = mapped_column(String(255))


class Point(Base):
    __tablename__ = "points"
    __table_args__ = (Index("ix_points_run_series", "run_pk", "series_id"),)

    series_id: Mapped[int] = mapped_column(
        ForeignKey("series.id", ondelete="CASCADE"), primary_key=True
    )
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    failed: Mapped[bool] = mapped_column(Boolean, default=False)


class Observation(Base):
    __tablename__ = "observations"
    __table_args__ = (Index("ix_observations_run", "run_pk"),)

    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    digest: Mapped[str] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cudagraph: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class ShapeValue(Base):
    __tablename__ = "shape_values"

    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    shape_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    shape: Mapped[str] = mapped_column(Text)
    helion_speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    triton_speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    torch_compile_speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    helion_accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)
    helion_compile_time_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    helion_latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)


class TrackEvent(Base):
    """An attribute of a track changed between two ingests (baseline_label, cudagraph, ...)."""

    __tablename__ = "track_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    track_id: Mapped[int] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"), index=True)
    run_pk: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), nullable=True)
    attribute: Mapped[str] = mapped_column(String(64))
    old_value: Mapped[str | None] = mapped_column(Text, nullable=True)
    new_value: Mapped[str | None] = mapped_column(Text, nullable=True)
    seen_at: Mapped[datetime] = mapped_column(DateTime)


class IngestLog(Base):
    __tablename__ = "ingest_log"
    __table_args__ = (Index("ix_ingest_log_source_started", "source", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    location: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    etag: Mapped[str | None] = mapped_column(String(255), nullable=True)
    content_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    outcome: Mapped[str] = mapped_column(String(16))  # added | unchanged | not_modified
    runs_added: Mapped[int] = mapped_column(Integer, default=0)
    points_added: Mapped[int] = mapped_column(Integer, default=0)
    shapes_added: Mapped[int] = mapped_column(Integer, default=0)
    conflicts: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str | None] = mapped_column(Text, nullable=True)


class IngestConflict(Base):
    """A stored run that came back with different values: reported, never overwritten."""

    __tablename__ = "ingest_conflicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ingest_id: Mapped[int] = mapped_column(ForeignKey("ingest_log.id", ondelete="CASCADE"))
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    track_id: Mapped[int | None] = mapped_column(ForeignKey("tracks.id"), nullable=True)
    detail: Mapped[str] = mapped_column(Text)


# --- detection / on-call side ------------------------------------------------------------


class DetectState(Base):
    """Per series: how many trend points detection last saw, so `detect` revisits only new data."""

    __tablename__ = "detect_state"

    series_id: Mapped[int] = mapped_column(
        ForeignKey("series.id", ondelete="CASCADE"), primary_key=True
    )
    points_seen: Mapped[int] = mapped_column(Integer)
    last_run_pk: Mapped[int | None] = mapped_column(Integer, nullable=True)
    checked_at: Mapped[datetime] = mapped_column(DateTime)


class AlertGroup(Base):
    """Moves on the same first-bad run: per platform, or across platforms (platform_short NULL).

    ``kind="health"``: the health findings of one source's nightly (one Slack message); such a
    group has ``platform_short="health"`` (never a real platform, so move grouping never meets
    it) and ``health_key`` = ``health:<source>:<YYYY-MM-DD>`` (the nightly's day, or the day a
    missing nightly was due).
    """

    __tablename__ = "alert_groups"
    __table_args__ = (
        UniqueConstraint("source", "first_bad_run_pk", "platform_short", "part", name="uq_group_key"),
        Index("ix_alert_groups_health_key", "health_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    first_bad_run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    platform_short: Mapped[str | None] = mapped_column(String(64), nullable=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("alert_groups.id"), nullable=True)
    cause: Mapped[str] = mapped_column(String(32))
    confidence: Mapped[float] = mapped_column(Float)
    evidence: Mapped[list] = mapped_column(JSON, default=list)
    state: Mapped[str] = mapped_column(String(16))  # provisional | confirmed | ended | retracted
    # the mechanism under the cause (e.g. hardware: runner | driver | thermal), "" when unknown
    cause_kind: Mapped[str] = mapped_column(String(32), default="", server_default="")
    end_run_pk: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), nullable=True)  # episode end
    revision: Mapped[int] = mapped_column(Integer, default=1)  # bumps on every visible change
    created_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)
    kind: Mapped[str] = mapped_column(String(16), default="move", server_default="move")
    health_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # "" for a platform nightly's moves; "own_method" for the kernels whose own measurement
    # changed in the window (their inputs, their timing): that part is an event of its own;
    # "suite FLA" (or "own_method/suite FLA") for a suite with a job of its own (`[suites]`)
    part: Mapped[str] = mapped_column(String(32), default="", server_default="")


class Alert(Base):
    """One flagged move in one series: what on-call works."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index("ix_alerts_status_created", "status", "created_at"),
        Index("ix_alerts_series", "series_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"))
    group_id: Mapped[int | None] = mapped_column(ForeignKey("alert_groups.id"), nullable=True)
    last_good_run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    first_bad_run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    last_good_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    first_bad_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    before: Mapped[float] = mapped_column(Float)
    after: Mapped[float] = mapped_column(Float)
    change_pct: Mapped[float] = mapped_column(Float)
    direction: Mapped[str] = mapped_column(String(16))
    significance: Mapped[float] = mapped_column(Float)
    noise_sigma: Mapped[float] = mapped_column(Float, default=0.0)
    nights_after: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default=domain.AlertStatus.OPEN.value)
    cause: Mapped[str] = mapped_column(String(32))  # machine's verdict
    cause_kind: Mapped[str] = mapped_column(String(32), default="", server_default="")  # mechanism under the cause
    end_run_pk: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), nullable=True)  # episode end
    human_cause: Mapped[str | None] = mapped_column(String(32), nullable=True)  # never overwritten
    confidence: Mapped[float] = mapped_column(Float)
    evidence: Mapped[list] = mapped_column(JSON, default=list)
    true_speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    true_speedup_reason: Mapped[str] = mapped_column(Text, default="")
    culprit: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    change_commit: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    candidates: Mapped[list] = mapped_column(JSON, default=list)
    related: Mapped[list] = mapped_column(JSON, default=list)
    reopened_from: Mapped[int | None] = mapped_column(ForeignKey("alerts.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)

    @hybrid_property
    def effective_cause(self) -> str:
        """The cause a person reads: the human's over the machine's (`domain.effective_cause`);
        the same rule as SQL, so the queue filters on what it shows."""
        return domain.effective_cause(self.cause, self.human_cause)

    @effective_cause.inplace.expression
    @classmethod
    def _effective_cause_sql(cls):
        return func.coalesce(func.nullif(cls.human_cause, ""), cls.cause)


class AuditColumns:
    """Who did what, when, and why: the rows of both audit trails (moves and health alerts)."""

    at: Mapped[datetime] = mapped_column(DateTime)
    by: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(32))
    old_value: Mapped[str | None] = mapped_column(Text, nullable=True)
    new_value: Mapped[str | None] = mapped_column(Text, nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)


class AlertHistory(AuditColumns, Base):
    """The audit trail: who did what to an alert, when, and why."""

    __tablename__ = "alert_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"), index=True)


class TrackFlags(Base):
    """What a document's summary says about a track on its newest nightly (``latest_run``):
    ``infra_missing``, the shapes in ``run_failures``/``accuracy_failures``, the pretuned
    ``error``. Kept per (track, run) so the health checks read the newest and history stays."""

    __tablename__ = "track_flags"
    __table_args__ = (Index("ix_track_flags_run", "run_pk"),)

    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    infra_missing: Mapped[bool] = mapped_column(Boolean, default=False)
    run_failures: Mapped[list] = mapped_column(JSON, default=list)
    accuracy_failures: Mapped[list] = mapped_column(JSON, default=list)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class HealthAlert(Base):
    """A health finding (no nightly, fetch failing, platform outage, failing kernel, accuracy,
    matrix change) that on-call works like a move: status, audit trail, one Slack message per
    nightly (its ``group_id``). ``state`` is the machine's: active until the condition clears
    (then ``recovered`` and the message is edited), or ``info`` for a finding that is news, not
    a failure (a kernel removed from the matrix)."""

    __tablename__ = "health_alerts"
    __table_args__ = (
        Index("ix_health_alerts_key_state", "key", "state"),
        Index("ix_health_alerts_group", "group_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("alert_groups.id"))
    kind: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(512))  # identity of the condition across passes
    source: Mapped[str] = mapped_column(String(16))
    platform_short: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kernel: Mapped[str | None] = mapped_column(String(255), nullable=True)
    detail: Mapped[str] = mapped_column(Text)
    shapes: Mapped[list] = mapped_column(JSON, default=list)
    state: Mapped[str] = mapped_column(String(16))  # active | recovered | info
    status: Mapped[str] = mapped_column(String(16), default=domain.AlertStatus.OPEN.value)
    run_pk: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)
    recovered_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class HealthHistory(AuditColumns, Base):
    """The audit trail of a health alert (the same rows as `AlertHistory`)."""

    __tablename__ = "health_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    health_alert_id: Mapped[int] = mapped_column(
        ForeignKey("health_alerts.id", ondelete="CASCADE"), index=True
    )


# --- notify side -------------------------------------------------------------------------


class OutboxMessage(Base):
    """Intent to post/update a Slack message, written before Slack is called (exactly once)."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_state", "state"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("alert_groups.id"), nullable=True)
    kind: Mapped[str] = mapped_column(String(16))  # post | update | digest
    revision: Mapped[int] = mapped_column(Integer, default=1)
    key: Mapped[str] = mapped_column(String(255), unique=True)  # idempotency key
    payload: Mapped[dict] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | sent | dead
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # set before each Slack call, cleared when Slack answers (sent, or a definite refusal): still
    # set means the last attempt may have reached Slack, so it is looked for before posting again
    outcome_unknown: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class SlackThread(Base):
    """The one Slack message of a group: channel + ts, and the revision it shows."""

    __tablename__ = "slack_messages"

    group_id: Mapped[int] = mapped_column(ForeignKey("alert_groups.id"), primary_key=True)
    channel: Mapped[str] = mapped_column(String(64))
    ts: Mapped[str] = mapped_column(String(32))
    revision: Mapped[int] = mapped_column(Integer)
    posted_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)


class ServiceLock(Base):
    """A named lock row: run-once takes it so two copies never work at once."""

    __tablename__ = "service_locks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))
    acquired_at: Mapped[datetime] = mapped_column(DateTime)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime)


class WebSession(Base):
    """A signed-in web session, by the hash of its random id: sign-out deletes the row, so a
    cookie saved before it no longer acts (the cookie alone is only a signed claim)."""

    __tablename__ = "web_sessions"
    __table_args__ = (Index("ix_web_sessions_expires", "expires_at"),)

    sid_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    expires_at: Mapped[datetime] = mapped_column(DateTime)


class SchemaNote(Base):
    """Key/value facts about the store (e.g. when the first backfill finished)."""

    __tablename__ = "service_state"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


