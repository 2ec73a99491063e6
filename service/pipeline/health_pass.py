"""The health step of run-once: read each source's recent nightlies and fetch record from the
store, the workflow expectations from the Helion clone, run the pure checks (service/health),
and reconcile the findings into health alerts (delivered by the same outbox as moves)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, time
from pathlib import Path

from sqlalchemy import func, select

from service.config import Settings
from service.health import freshness, matrix
from service.health.history import open_outages, past_outages
from service.health.nightly import check_nightly
from service.health.records import Finding, SourceNights
from service.store.db import Store
from service.store.health_reads import night_rows, recent_nightlies
from service.store.health_writer import (
    HealthOutcome, anchor_open, detect_state, fetch_state, history_mark, reconcile, record_past, set_history_mark,
)
from service.domain import SOURCES, Source
from service.store.tables import Run

log = logging.getLogger(__name__)


@dataclass
class HealthSummary:
    outcomes: dict[str, HealthOutcome] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    past: int = 0

    def line(self) -> str:
        opened = sum(len(o.opened) for o in self.outcomes.values())
        recovered = sum(len(o.recovered) for o in self.outcomes.values())
        info = sum(len(o.info) for o in self.outcomes.values())
        text = f"health: {opened} new, {recovered} recovered, {info} matrix changes"
        if self.past:
            text += f", {self.past} past outages found in the stored history"
        return text + (f" ({'; '.join(self.skipped)})" if self.skipped else "")


def source_findings(store: Store, settings: Settings, source: str, repo: Path | None,
                    now: datetime) -> tuple[list[Finding], dict[str, str], int | None]:
    """This pass's findings for one source, the day each kind's new alerts join, and the run the
    health group hangs on (the newest nightly; None when the source has none)."""
    h = settings.health
    with store.session() as s:
        nights = recent_nightlies(s, source, h.lookback_nights)
        pks = [pk for pk, _ in nights]
        rows = night_rows(s, pks, pks[-1] if pks else None, h.min_accuracy)
        fetch = fetch_state(s, source)
        detect = detect_state(s) if source == Source.DASHBOARD else None
        any_run = pks[-1] if pks else s.scalar(select(Run.id).order_by(Run.date.desc()).limit(1))
    due = time.fromisoformat(h.nightly_due_utc)
    findings: list[Finding] = []
    newest = nights[-1][1] if nights else None
    if source in h.nightly_sources:
        f = freshness.no_nightly(source, newest, now, due, h.max_nightly_age_days)
        findings += [f] if f else []
    f = freshness.fetch_failing(source, fetch["failures"], fetch["since"], fetch["error"], h.fetch_failures)
    findings += [f] if f else []
    if detect is not None:  # one detect pass serves both sources: said once, on the dashboard's message
        f = freshness.detect_failing(source, detect["failures"], detect["since"], detect["error"], h.detect_failures)
        findings += [f] if f else []
    if nights:
        expected = matrix.expected_at(repo, newest.full_sha) if source == Source.DASHBOARD else None
        data = SourceNights(source, tuple(n for _, n in nights), tuple(rows[pk] for pk in pks), expected)
        nightly = check_nightly(data, failing_nights=h.failing_nights, partial_min=h.partial_outage_min_kernels)
        removed = {(f.platform_short, f.kernel) for f in nightly if f.kind == "matrix_change"}
        if removed:
            since = nights[0][1].full_sha
            data = SourceNights(data.source, data.nights, data.results, expected, {
                (p, k): sha for p, k in removed
                if (sha := matrix.removal_commit(repo, since, newest.full_sha, p, k))
            })
            nightly = check_nightly(data, failing_nights=h.failing_nights, partial_min=h.partial_outage_min_kernels)
        findings += nightly
    day_of = {k: f"{newest.date:%Y-%m-%d}" if newest else f"{now:%Y-%m-%d}"
              for k in ("platform_outage", "partial_outage", "failing_kernel", "accuracy", "matrix_change")}
    day_of["no_nightly"] = f"{freshness.due_date(now, due, h.max_nightly_age_days):%Y-%m-%d}"
    day_of["fetch_failing"] = day_of["detect_failing"] = f"{now:%Y-%m-%d}"
    return findings, day_of, any_run


def _nights_to_scan(session, source: str, settings: Settings) -> int:
    """How many nightlies the history scan reads: every one since its last read plus the lookback
    (an episode needs a nightly the platform ran on before it), or ``history_nights`` at first."""
    h = settings.health
    mark = history_mark(session, source)
    if mark is None:
        return h.history_nights
    since = datetime.fromisoformat(mark)
    new = session.scalar(select(func.count(Run.id)).where(Run.source == source, Run.is_trend,
                                                          Run.date > since)) or 0
    return new + h.lookback_nights if new else 0


def record_history(store: Store, settings: Settings, source: str, repo: Path | None, now: datetime) -> int:
    """Write the platform outages that began and ended between two passes (health/history.py):
    already recovered, never posted one by one when old (the notify plan's digest). A platform
    the workflow of the outage's first nightly did not schedule was not down. An outage still
    running whose live alert was opened after it began is moved to its first nightly. Returns
    how many past outages were written."""
    with store.session() as s:
        n = _nights_to_scan(s, source, settings)
        nights = recent_nightlies(s, source, n) if n else []
        if len(nights) < 3:
            return 0
        pks = [pk for pk, _ in nights]
        rows = night_rows(s, pks, None, settings.health.min_accuracy)
    data = SourceNights(source, tuple(n for _, n in nights), tuple(rows[pk] for pk in pks))
    found = []
    for ep in past_outages(data):
        first = data.nights[ep.first]
        if source == Source.DASHBOARD:
            expected = matrix.expected_at(repo, first.full_sha)
            if expected is not None and expected.platforms is not None and ep.platform_short not in expected.platforms:
                continue
        found.append(ep)
    written = 0
    with store.session() as s:
        for ep in found:
            first = data.nights[ep.first]
            finding = Finding("platform_outage", source, ep.detail(data), ep.platform_short)
            written += record_past(s, source, finding, run_pks=pks[ep.first:ep.last + 1],
                                   day=f"{first.date:%Y-%m-%d}", recovered_at=data.nights[ep.back].date, now=now)
        for platform, first in open_outages(data).items():
            night = data.nights[first]
            anchor_open(s, Finding("platform_outage", source, "", platform).key, run_pks=pks[first:],
                        since=f"{night.date:%Y-%m-%d} ({night.sha}), {len(pks) - first} nightlies", now=now)
        set_history_mark(s, source, nights[-1][1].date.replace(tzinfo=None).isoformat())
    return written


def health_pass(store: Store, settings: Settings, repo: Path | None, *, now: datetime) -> HealthSummary:
    summary = HealthSummary()
    if not settings.health.enabled:
        summary.skipped.append("disabled")
        return summary
    for source in SOURCES:
        findings, day_of, run_pk = source_findings(store, settings, source, repo, now)
        if run_pk is None:
            if findings:  # nothing stored at all: the group has no run to hang on; logged only
                summary.skipped.append(f"{source}: {findings[0].detail}")
                log.warning("health %s: %s", source, findings[0].detail)
            continue
        with store.session() as s:
            summary.outcomes[source] = reconcile(s, source, findings, day_of=day_of, run_pk=run_pk, now=now)
        if settings.health.history_nights:
            summary.past += record_history(store, settings, source, repo, now)
    return summary
