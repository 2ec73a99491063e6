"""`benchwatch serve`: the APScheduler jobs and the web app in one process.

The scheduler is a BackgroundScheduler so the web app (uvicorn) can own the main thread; with no
web app (``--no-web``) the main thread just waits for SIGTERM/SIGINT.
Jobs: run-once on ``schedule.cron`` OR ``schedule.extra_cron`` (one job, so ``max_instances=1``
really means no overlap; the run lock also guards against other processes), and the optional
daily digest. ``coalesce`` folds missed firings into one; ``misfire_grace_time`` drops firings
older than the grace.
"""

from __future__ import annotations

import logging
import signal
import threading
from datetime import datetime, timezone
from typing import Any, Callable

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from service.config import Settings
from service.errors import BenchwatchError
from service.schedule.lock import LockBusy
from service.store.db import Store

log = logging.getLogger(__name__)
RUN_JOB, DIGEST_JOB = "run-once", "digest"


def cron_trigger(expr: str, tz: str, key: str) -> CronTrigger:
    """A 5-field crontab line; a bad one is a config error naming the key."""
    try:
        return CronTrigger.from_crontab(expr, timezone=tz)
    except (ValueError, KeyError, LookupError) as exc:
        raise BenchwatchError(f"config: {key}: not a valid crontab line {expr!r} ({exc})") from None


def run_trigger(settings: Settings):
    s = settings.schedule
    if s.interval_s > 0:
        return IntervalTrigger(seconds=s.interval_s, timezone=s.timezone)
    triggers = [cron_trigger(s.cron, s.timezone, "schedule.cron")]
    if s.extra_cron.strip():
        triggers.append(cron_trigger(s.extra_cron, s.timezone, "schedule.extra_cron"))
    return triggers[0] if len(triggers) == 1 else OrTrigger(triggers)


def _guarded(name: str, fn: Callable[[], Any]) -> Callable[[], None]:
    """A job never raises into the scheduler: a failed run is logged and retried next firing."""

    def job() -> None:
        log.info("%s: started", name)
        try:
            result = fn()
        except LockBusy as exc:
            log.info("%s: skipped: %s", name, exc.message)
            return
        except BenchwatchError as exc:
            log.error("%s: failed: %s", name, exc.message)
            return
        except Exception:  # noqa: BLE001 - keep the service alive; the traceback goes to the log
            log.exception("%s: crashed", name)
            return
        ok = getattr(result, "ok", True)
        log.info("%s: finished%s", name, "" if ok else " with errors")

    return job


def build_scheduler(store: Store, settings: Settings, *, run_job: Callable[[], Any] | None = None,
                    digest_job: Callable[[], Any] | None = None) -> BackgroundScheduler:
    from service.schedule.run_once import run_digest, run_once

    s = settings.schedule
    scheduler = BackgroundScheduler(timezone=s.timezone)
    common = dict(max_instances=1, coalesce=True, misfire_grace_time=s.misfire_grace_s, replace_existing=True)
    scheduler.add_job(_guarded(RUN_JOB, run_job or (lambda: run_once(store, settings))),
                      run_trigger(settings), id=RUN_JOB, name=RUN_JOB, **common)
    if settings.notify.digest_enabled:
        scheduler.add_job(
            _guarded(DIGEST_JOB, digest_job or (lambda: run_digest(store, settings))),
            cron_trigger(settings.notify.digest_cron, s.timezone, "notify.digest_cron"),
            id=DIGEST_JOB, name=DIGEST_JOB, **common,
        )
    return scheduler


def next_run(scheduler: BackgroundScheduler) -> datetime | None:
    """When run-once fires next (for `/status`)."""
    job = scheduler.get_job(RUN_JOB)
    return None if job is None else job.next_run_time


def load_web_app(settings: Settings, store: Store):
    """The FastAPI app, imported here so a scheduler-only process never loads the web stack."""
    from service.web.app import create_app

    return create_app(settings, store)


def serve(store: Store, settings: Settings, *, host: str | None = None, port: int | None = None,
          scheduler: bool = True, web: bool = True) -> int:
    """Run until SIGTERM/SIGINT; returns the exit code (0 on a clean stop)."""
    sched = build_scheduler(store, settings) if scheduler else None
    app = load_web_app(settings, store) if web else None
    if sched is None and app is None:
        raise BenchwatchError("nothing to serve: --no-web and --no-scheduler were both given")
    if sched is not None:
        sched.start()
        log.info("scheduler started; next run-once at %s", next_run(sched))
    if app is not None:
        if sched is not None:
            app.state.scheduler = sched
        import uvicorn

        config = uvicorn.Config(app, host=host or settings.web.host,
                                port=settings.web.port if port is None else port,
                                log_level="info", access_log=False, lifespan="on")
        server = uvicorn.Server(config)
        # uvicorn takes SIGTERM/SIGINT while it runs and re-raises them once it has shut down;
        # these handlers receive that re-raise so the scheduler still gets a clean stop
        old = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            server.run()
        finally:
            _stop(sched)
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return 0
    stop = threading.Event()

    def _handle(signum, _frame) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        stop.set()

    old = {sig: signal.signal(sig, _handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    log.info("serving the scheduler only (no web app); stop with SIGTERM")
    try:
        while not stop.wait(1.0):
            pass
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _stop(sched)
    return 0


def _stop(sched: BackgroundScheduler | None) -> None:
    if sched is not None and sched.running:
        log.info("scheduler: waiting for a running job to finish")
        sched.shutdown(wait=True)
        log.info("scheduler stopped at %s", datetime.now(timezone.utc).isoformat(timespec="seconds"))
