"""`serve`: the APScheduler set-up, and the real process (scheduler + web app) running a fast
schedule and stopping cleanly on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger

from service.config import Settings
from service.errors import BenchwatchError
from service.schedule.scheduler import DIGEST_JOB, RUN_JOB, build_scheduler, run_trigger
from service.store.db import Store
from service.store.tables import SchemaNote

ROOT = Path(__file__).resolve().parent.parent


def test_jobs_from_config_never_overlap_and_coalesce(sqlite_url):
    store = Store(sqlite_url)
    settings = Settings(schedule={"cron": "0,30 9-12 * * *", "extra_cron": "0 13 * * *", "misfire_grace_s": 900},
                        notify={"digest_enabled": True, "digest_cron": "0 14 * * 1-5"})
    sched = build_scheduler(store, settings, run_job=lambda: None, digest_job=lambda: None)
    run, digest = sched.get_job(RUN_JOB), sched.get_job(DIGEST_JOB)
    for job in (run, digest):
        assert (job.max_instances, job.coalesce, job.misfire_grace_time) == (1, True, 900)
    assert isinstance(run.trigger, OrTrigger) and len(run.trigger.triggers) == 2
    first = run.trigger.triggers[0]
    assert str(first.fields[first.FIELD_NAMES.index("hour")]) == "9-12"
    assert str(first.fields[first.FIELD_NAMES.index("minute")]) == "0,30"
    assert isinstance(digest.trigger, CronTrigger)
    assert Settings().notify.digest_enabled is False
    assert build_scheduler(store, Settings(), run_job=lambda: None).get_job(DIGEST_JOB) is None
    store.dispose()


def test_a_bad_cron_line_names_its_key():
    with pytest.raises(BenchwatchError, match=r"schedule.extra_cron: not a valid crontab line '61 \* \* \* \*'"):
        run_trigger(Settings(schedule={"extra_cron": "61 * * * *"}))


def test_fast_schedule_runs_and_a_slow_job_never_overlaps(sqlite_url):
    store = Store(sqlite_url)
    running, peak, done = [0], [0], threading.Event()
    lock = threading.Lock()
    runs: list[float] = []

    def job() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(1.5)  # longer than the interval
        with lock:
            running[0] -= 1
            runs.append(time.monotonic())
            if len(runs) >= 2:
                done.set()

    sched = build_scheduler(store, Settings(schedule={"interval_s": 1}), run_job=job)
    sched.start()
    try:
        assert done.wait(15)
    finally:
        sched.shutdown(wait=True)
    assert peak[0] == 1 and len(runs) >= 2
    store.dispose()


def _env(db_url: str, **extra: str) -> dict:
    env = dict(os.environ)
    env.update(
        BENCHWATCH_DATABASE_URL=db_url, BENCHWATCH_SCHEDULE_INTERVAL_S="1",
        BENCHWATCH_SOURCES_DASHBOARD="", BENCHWATCH_SOURCES_PRETUNED="", BENCHWATCH_HELION_REPO="",
        BENCHWATCH_SLACK_TOKEN="", PYTHONPATH=str(ROOT), **extra,
    )
    return env


def _wait_for_run(store: Store, proc: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with store.session() as s:
            row = s.get(SchemaNote, "run_once.last_finished")
            if row is not None:
                return row.value
        time.sleep(0.2)
    return ""


@pytest.mark.parametrize("web", [True, False], ids=["scheduler+web", "scheduler-only"])
def test_serve_runs_the_scheduled_job_and_stops_on_sigterm(sqlite_url, tmp_path, web):
    store = Store(sqlite_url)
    args = ["serve", "--host", "127.0.0.1", "--port", "0"] + ([] if web else ["--no-web"])
    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen([sys.executable, "-c", "from service.cli.main import app; app()", *args],
                            env=_env(sqlite_url), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        finished = _wait_for_run(store, proc)
        log.seek(0)
        output = log.read()
        assert finished, output[-3000:]
        if web:
            port = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", output)
            assert port, output[-3000:]
            r = httpx.get(f"http://127.0.0.1:{port.group(1)}/healthz", timeout=10)
            assert r.status_code == 200
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log.seek(0)
    output = log.read()
    assert code == 0, output[-3000:]
    assert "run-once: started" in output and "run-once: finished" in output
    assert "scheduler stopped" in output
    assert "Traceback" not in output
    store.dispose()
