"""`run_once`: the nightly pass with its lock, replayed over hand-made nights against the Slack
stand-in (the detect stage is replaced by a script that writes the alerts a night would bring)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


from service.schedule.lock import LockBusy, run_lock
from service.schedule.run_once import run_once
from service.store import outbox
from service.store.status import store_status
from service.store.tables import SchemaNote
from tests import upstream_docs as docs
from tests.slack_standin import TOKEN, SlackStandIn
from tests.loop_rows import Rows, ScriptedDetect, night_time
from tests.notify_harness import CHANNEL, make_settings

ROOT = Path(__file__).resolve().parent.parent


def _run(store, settings, detect, night, hours=3.0):
    return run_once(store, settings, dashboard=None, pretuned=None, now=night_time(night, hours),
                    detect=detect)


def test_nightly_replay_backfill_post_confirm_and_rerun(store):
    rows = Rows(store, nights=45)
    ids: dict[str, int] = {}

    def backfill(r: Rows) -> None:  # a long history: three old groups, nothing recent
        for n, k in ((5, "a"), (12, "b"), (20, "c")):
            r.group([r.alert("h100", k, n, state="confirmed")], n, "h100", state="confirmed")
        r.group([r.alert("h100", "z", 25, cause="noise")], 25, "h100", cause="noise")

    def step(r: Rows) -> None:  # night 36: a regression steps on b200
        ids["a1"] = r.alert("b200", "rms_norm", 36, change_pct=-15.0)
        ids["a2"] = r.alert("b200", "layer_norm", 36, change_pct=-11.0)
        ids["g"] = r.group([ids["a1"], ids["a2"]], 36, "b200")

    def confirm(r: Rows) -> None:  # night 38: it held
        for key, k in (("a1", "rms_norm"), ("a2", "layer_norm")):
            r.alert("b200", k, 36, state="confirmed", change_pct=-15.0 if key == "a1" else -11.0)
        r.group([ids["a1"], ids["a2"]], 36, "b200", state="confirmed")

    detect = ScriptedDetect(rows, {35: backfill, 36: step, 38: confirm})
    with SlackStandIn() as slack:
        settings = make_settings(slack)
        first = _run(store, settings, detect, 35)
        assert first.ok and len(slack.messages) == 1  # the backfill: one digest, nothing one by one
        assert slack.messages[0].text.startswith("3 historical moves recorded")
        _run(store, settings, detect, 35, 6)  # re-run the same nightly: nothing new
        assert len(slack.messages) == 1
        _run(store, settings, detect, 36)
        assert len(slack.messages) == 2
        msg = slack.messages[1]
        assert msg.text.startswith("Real regression: rms_norm and 1 more on b200 lost 11–15% speedup (provisional)")
        assert "rms_norm speedup −15.0%" in msg.text and "layer_norm speedup −11.0%" in msg.text and "0000beef" in msg.text
        _run(store, settings, detect, 37)
        _run(store, settings, detect, 38)
        assert len(slack.messages) == 2 and len(msg.edits) == 1 and "(confirmed)" in msg.text
        for hours in (4, 5):
            _run(store, settings, detect, 38, hours)
        assert len(slack.messages) == 2 and len(msg.edits) == 1
        assert slack.count("chat.postMessage") == 2
    with store.session() as s:
        assert outbox.backlog(s)["pending"] == 0
        assert s.get(SchemaNote, "run_once.last_finished") is not None


def test_slack_down_during_the_run_delays_but_delivers_once(store):
    rows = Rows(store)
    detect = ScriptedDetect(rows, {30: lambda r: r.group([r.alert("h100", "a", 30)], 30, "h100")})
    with SlackStandIn() as slack:
        settings = make_settings(slack)
        slack.fail("chat.postMessage", status=500, times=3)
        out = _run(store, settings, detect, 30)
        assert out.ok and slack.messages == [] and out.delivery.pending_left == 1  # not a run failure
        slack.fail("chat.postMessage", status=429, times=2, retry_after=0)
        out = _run(store, settings, detect, 30, 4)
        assert out.delivery.posted == 1 and len(slack.messages) == 1
        _run(store, settings, detect, 30, 5)
        assert len(slack.messages) == 1


def test_two_concurrent_runs_do_the_work_once(store):
    rows = Rows(store)
    detect = ScriptedDetect(rows, {30: lambda r: r.group([r.alert("h100", "a", 30)], 30, "h100")}, pause=1.0)
    outcomes: list[str] = []

    def go() -> None:
        try:
            _run(store, settings, detect, 30)
            outcomes.append("ran")
        except LockBusy as exc:
            outcomes.append(exc.message)

    with SlackStandIn() as slack:
        settings = make_settings(slack)
        threads = [threading.Thread(target=go) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert outcomes.count("ran") == 1 and len(outcomes) == 2
        busy = [o for o in outcomes if o != "ran"]
        assert "run-once: another run is in progress" in busy[0]
        assert detect.calls == 1 and len(slack.messages) == 1
    with run_lock(store):  # released afterwards
        pass


def _document(tmp_path: Path) -> str:
    """A good dashboard document on disk: what a run that did any work would ingest."""
    path = tmp_path / "dashboard.json"
    path.write_text(json.dumps(docs.dashboard(3)))
    return str(path)


def _ingested_runs(store) -> int:
    with store.session() as s:
        return store_status(s)["runs"]


def test_cli_second_copy_exits_cleanly_saying_why(cli, store, tmp_path):
    with run_lock(store):
        r = cli("run-once", "--dashboard", _document(tmp_path), "--pretuned", "")
    assert r.exit_code == 0
    assert f"another run is in progress (held by pid {os.getpid()} on " in r.output
    assert _ingested_runs(store) == 0  # the second copy did nothing


def test_cli_bad_repo_is_refused_before_any_work(cli, store, tmp_path):
    r = cli("run-once", "--dashboard", _document(tmp_path), "--pretuned", "", "--repo", str(tmp_path / "nope"))
    assert r.exit_code == 2 and "is not a git clone" in r.output
    assert _ingested_runs(store) == 0
    r = cli("run-once", "--dashboard", _document(tmp_path), "--pretuned", "")  # the same run, once allowed
    assert r.exit_code == 0 and _ingested_runs(store) == 3, r.output


def _subprocess_env(db_url: str, slack: SlackStandIn) -> dict:
    env = dict(os.environ)
    env.update(
        BENCHWATCH_DATABASE_URL=db_url, BENCHWATCH_SLACK_TOKEN=TOKEN, BENCHWATCH_SLACK_CHANNEL=CHANNEL,
        BENCHWATCH_SLACK_API_URL=slack.base_url, BENCHWATCH_SOURCES_DASHBOARD="",
        BENCHWATCH_SOURCES_PRETUNED="", BENCHWATCH_HELION_REPO="", BENCHWATCH_NOTIFY_MAX_AGE_DAYS="100000",
        BENCHWATCH_HEALTH_ENABLED="false",  # a hand-made store, stale by today's clock: moves only
        PYTHONPATH=str(ROOT),
    )
    return env


# run_once in a process of its own, detection skipped (the store already holds the group)
_RUN_SCRIPT = """
from service.config import load_settings
from service.schedule.run_once import run_once
from service.store.db import Store
settings = load_settings()
out = run_once(Store(settings.database.url), settings, detect=lambda *a, **k: "detect skipped")
print("\\n".join(out.lines()))
"""


def test_killed_between_post_and_mark_sent_doubles_nothing(sqlite_url):
    """A real crash: the process is SIGKILLed after Slack stored the post, before its answer."""
    from service.store.db import Store

    store = Store(sqlite_url)
    rows = Rows(store)
    gid = rows.group([rows.alert("h100", "a", 30)], 30, "h100")
    cmd = [sys.executable, "-c", _RUN_SCRIPT]
    with SlackStandIn() as slack:
        slack.delay("chat.postMessage", 30)
        env = _subprocess_env(sqlite_url, slack)
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not slack.messages and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert len(slack.messages) == 1, proc.stderr.read().decode()[-2000:]
        with store.session() as s:
            row = outbox.by_key(s, f"post:{gid}")
            assert (row.state, row.attempts) == ("pending", 1)
        slack.clear_faults()
        again = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert "1 recovered" in again.stdout, again.stdout + again.stderr
        assert len(slack.messages) == 1 and slack.count("chat.postMessage") == 1
    with store.session() as s:
        assert outbox.by_key(s, f"post:{gid}").state == "sent"
    store.dispose()


def test_the_digest_waits_for_a_running_pass_instead_of_skipping(store):
    from service.schedule.run_once import run_digest

    rows = Rows(store)
    rows.group([rows.alert("h100", "a", 30)], 30, "h100")
    with SlackStandIn() as slack:
        settings = make_settings(slack, digest_enabled=True)
        holder_done = threading.Event()

        def hold() -> None:
            with run_lock(store):
                holder_done.wait(1.5)

        t = threading.Thread(target=hold)
        t.start()
        time.sleep(0.3)
        started = time.monotonic()
        sent = run_digest(store, settings, now=night_time(31))
        waited = time.monotonic() - started
        holder_done.set()
        t.join()
        assert waited >= 0.5 and sent.posted == 1
        [msg] = slack.messages
        assert "1 open alert groups" in msg.text
