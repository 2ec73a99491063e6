"""One nightly pass: ingest both sources → detect/classify new data → plan → deliver to Slack.

Safe to repeat (every step is idempotent: ingest keeps only unseen runs, detect only revisits
series with new points, the outbox keys dedupe intents) and safe to kill at any point (each step
commits its own work; the outbox recovers a post whose ``ts`` was lost). Two copies never work
at once: the whole pass runs under `run_lock`; the second copy raises `LockBusy` (exit 0).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from service.config import Settings
from service.errors import BenchwatchError
from service.notify.deliver import DEFAULT_CLIENT, DeliverySummary, deliver_pending
from service.notify.plan import PlanSummary, plan_daily_digest, plan_notifications
from service.pipeline.health_pass import health_pass
from service.pipeline.ingest_pass import ingest_guarded
from service.store.health_writer import note_detect, note_fetch
from service.schedule.lock import run_lock
from service.store.db import Store
from service import domain
from service.records import naive
from service.store.notes import write_note

log = logging.getLogger(__name__)
Source = str | Path | bytes | None
_DEFAULT: Any = object()


@dataclass
class RunSummary:
    ingest: list[str] = field(default_factory=list)
    detect: str | None = None
    health: str | None = None
    plan: PlanSummary = field(default_factory=PlanSummary)
    delivery: DeliverySummary = field(default_factory=DeliverySummary)
    errors: list[str] = field(default_factory=list)  # ingest/detect failures: exit code 1

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        out = list(self.ingest)
        if self.detect:
            out.append(self.detect)
        if self.health:
            out.append(self.health)
        out += [self.plan.line(), self.delivery.line()]
        out += [f"error: {e}" for e in self.errors]
        return out


def _note(store: Store, key: str, value: str) -> None:
    with store.session() as s:
        write_note(s, key, value)


def _ingest(store: Store, settings: Settings, source: str, where: Source, summary: RunSummary,
            now: datetime) -> None:
    """One source in its own guarded step: whatever goes wrong is one line in ``errors``; the
    outcome is counted for the health check "fetch keeps failing"."""
    if where is None or where == "":
        return
    if isinstance(where, bytes):
        # documents handed over in memory (replays, tests) go through the same file path
        with tempfile.TemporaryDirectory(prefix="benchwatch-") as tmp:
            path = Path(tmp) / f"{source}.json"
            path.write_bytes(where)
            line, error = ingest_guarded(store, settings, source, str(path))
    else:
        line, error = ingest_guarded(store, settings, source, str(where))
    if line is not None:
        summary.ingest.append(line)
    if error is not None:
        summary.errors.append(f"ingest {source}: {error}")
    try:
        with store.session() as s:
            note_fetch(s, source, now, error)
    except Exception:  # noqa: BLE001 - the store itself may be the problem; the error is already kept
        log.exception("ingest %s: could not count the fetch for the health check", source)


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


def _default_detect(store: Store, settings: Settings, repo, *, now: datetime, fetch: bool):
    from service.pipeline.detect_pass import detect_pass

    return detect_pass(store, settings, repo, now=now, fetch=fetch)


def run_once(
    store: Store,
    settings: Settings,
    *,
    dashboard: Source = _DEFAULT,
    pretuned: Source = _DEFAULT,
    repo: str | Path | None = None,
    now: datetime | None = None,
    client: Any = DEFAULT_CLIENT,
    detect: Callable[..., Any] | None = None,
    fetch_repo: bool = True,
) -> RunSummary:
    """The whole pass under the lock. Sources default to config (``None``/"" skips one); bytes
    are a document in memory. ``client``: a slack-sdk WebClient, None for log-only, default from
    settings. ``detect`` replaces the detect stage (tests). Raises `LockBusy` if another copy runs.
    """
    from service.pipeline.detect_pass import resolve_repo

    now = now or datetime.now(timezone.utc)
    repo_path = resolve_repo(settings, repo)  # a bad --repo is an input error before any work
    if dashboard is _DEFAULT:
        dashboard = settings.sources.dashboard
    if pretuned is _DEFAULT:
        pretuned = settings.sources.pretuned
    summary = RunSummary()
    with run_lock(store):
        _note(store, "run_once.last_started", naive(datetime.now(timezone.utc)).isoformat())
        _ingest(store, settings, domain.Source.DASHBOARD, dashboard, summary, now)
        _ingest(store, settings, domain.Source.PRETUNED, pretuned, summary, now)
        detect_error = None
        try:
            result = (detect or _default_detect)(store, settings, repo_path, now=now, fetch=fetch_repo)
            summary.detect = result.line() if hasattr(result, "line") else str(result)
        except BenchwatchError as exc:
            detect_error = exc.message
        except Exception as exc:  # noqa: BLE001 - queued Slack messages still go out
            log.exception("run-once: detect failed")
            detect_error = f"unexpected {exc.__class__.__name__}: {_first_line(exc)}"
        if detect_error is not None:
            summary.errors.append(f"detect: {detect_error}")
        try:  # counted for the health check "detection keeps failing"
            with store.session() as s:
                note_detect(s, now, detect_error)
        except Exception:  # noqa: BLE001 - the store itself may be the problem; the error is already kept
            log.exception("run-once: could not count the detect pass for the health check")
        try:  # after detect, which fetched the clone the workflow expectations are read from
            summary.health = health_pass(store, settings, repo_path, now=now).line()
        except BenchwatchError as exc:
            summary.errors.append(f"health: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - queued Slack messages still go out
            log.exception("run-once: health checks failed")
            summary.errors.append(f"health: unexpected {exc.__class__.__name__}: {_first_line(exc)}")
        try:
            with store.session() as s:
                summary.plan = plan_notifications(s, settings, now)
        except Exception as exc:  # noqa: BLE001 - what was already queued is still delivered
            log.exception("run-once: planning notifications failed")
            summary.errors.append(f"plan: {exc.__class__.__name__}: {_first_line(exc)}")
        summary.delivery = deliver_pending(store, settings, now=now, client=client)
        _note(store, "run_once.last_finished", naive(datetime.now(timezone.utc)).isoformat())
    for line in summary.lines():
        log.info("run-once: %s", line)
    return summary


def run_digest(store: Store, settings: Settings, *, now: datetime | None = None,
               client: Any = DEFAULT_CLIENT) -> DeliverySummary:
    """The optional daily digest (open groups by age and cause), once per UTC day. It waits for a
    running run-once (up to 10 minutes) rather than skip the day."""
    now = now or datetime.now(timezone.utc)
    with run_lock(store, wait_s=600):
        with store.session() as s:
            plan_daily_digest(s, settings, now)
        return deliver_pending(store, settings, now=now, client=client)
