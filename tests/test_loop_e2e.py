"""The whole loop on a generated world replayed nightly: real ingest, detect, classify, culprit
search in the world's git repo, notify through slack-sdk into the local Slack stand-in.

The world: two platforms, planted old events (the backfill must not post them one by one) and a
real regression stepping on nightly 33 of h100 whose culprit is a planted commit.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from service.config import Settings
from service.schedule.lock import LockBusy
from service.schedule.run_once import run_once
from service.store import outbox
from service.store.db import Store
from tests.slack_standin import TOKEN, SlackStandIn
from tests.worlds import EventSpec, WorldSpec, generate_world

STEP = 33  # the nightly the regression steps on
SEEN = STEP + 1  # a lone bad night waits for a second (detect.report_after_nights): first posted here
BACKFILL = 30  # the first run sees the history up to this nightly
LAST = 37
KERNELS = ("softmax", "rms_norm")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    events = (
        EventSpec("real", "dashboard", "b200", ("sum",), 8, -0.25, "code"),
        EventSpec("hardware", "dashboard", "h100", ("vector_add", "vector_exp", "sum", "softmax"), 14, -0.2, "thermal"),
        EventSpec("real", "dashboard", "h100", KERNELS, STEP, -0.2, "code"),
    )
    spec = WorldSpec(seed=11, nightlies=LAST + 1, platforms=("h100", "b200"), max_kernels_per_platform=6,
                     pretuned=False, events=events, manual_runs=True, churn=False, gaps=False,
                     repo_dir=str(tmp_path_factory.mktemp("world") / "helion"))
    return generate_world(spec)


def _settings(db_url: str, slack: SlackStandIn, world) -> Settings:
    return Settings(database={"url": db_url}, helion={"repo": str(world.repo), "remote": ""},
                    slack={"token": TOKEN, "channel": "C0TRIAGE", "api_url": slack.base_url,
                           "retries": 2, "backoff_s": 0.01},
                    web={"base_url": "http://bw.test"},
                    # moves only: this world keeps 2 platforms and 6 kernels while its generated
                    # workflow files still ask for all five platforms, which health rightly calls
                    # outages (health has its own worlds in tests/test_health_*.py)
                    health={"enabled": False})


def _night(store, settings, world, n: int, hours: float = 3.0):
    now = world.nights[n].date + timedelta(hours=hours)
    return run_once(store, settings, dashboard=world.dashboard_bytes(n), pretuned=None, now=now)


def _regression_messages(slack: SlackStandIn):
    return [m for m in slack.messages if "h100" in m.text and "rms_norm" in m.text and "historical" not in m.text]


def test_nightly_replay_posts_each_group_once_and_edits_it(world, store):
    label = next(lb for lb in world.labels if lb.event.night == STEP)
    with SlackStandIn() as slack:
        settings = _settings(store.url, slack, world)
        out = _night(store, settings, world, BACKFILL)
        assert out.ok, out.errors
        assert len(slack.messages) <= 1  # the backfill: at most one digest
        assert all("historical moves recorded" in m.text for m in slack.messages)
        _night(store, settings, world, BACKFILL, 6)  # the same nightly again: nothing new
        before = len(slack.messages)
        assert before <= 1
        posted_at = None
        for n in range(BACKFILL + 1, LAST + 1):
            out = _night(store, settings, world, n)
            assert out.ok, out.errors
            if posted_at is None and _regression_messages(slack):
                posted_at = n
        assert posted_at is not None and posted_at <= STEP + 2
        [msg] = _regression_messages(slack)
        assert msg.text.startswith("Real regression: ") and " on h100 lost " in msg.text
        for kernel in KERNELS:
            assert kernel in msg.text
        assert label.culprit[:8] in msg.text
        assert msg.edits and "(confirmed)" in msg.text  # confirmation edited the same message
        posts = slack.count("chat.postMessage")
        for hours in (4, 5):
            _night(store, settings, world, LAST, hours)  # re-running a nightly posts nothing new
        assert slack.count("chat.postMessage") == posts
        assert len(slack.by_group(msg.metadata["event_payload"]["group_id"])) == 1
    with store.session() as s:
        assert outbox.backlog(s)["pending"] == 0


def test_slack_failures_and_a_crash_delay_but_never_double(world, sqlite_url):
    store = Store(sqlite_url)
    with SlackStandIn() as slack:
        settings = _settings(sqlite_url, slack, world)
        _night(store, settings, world, SEEN - 1)  # the backfill
        baseline = len(slack.messages)
        slack.fail("chat.postMessage", status=500, times=3)  # the night it is seen: Slack is down
        out = _night(store, settings, world, SEEN)
        assert out.ok and len(slack.messages) == baseline and out.delivery.pending_left >= 1
        slack.fail("chat.postMessage", status=429, times=1, retry_after=0)
        slack.drop("chat.postMessage")  # then Slack posts but the answer is lost (a crash)
        out = _night(store, settings, world, SEEN, 5)
        assert len(_regression_messages(slack)) == 1 and out.delivery.pending_left >= 1
        for n in range(SEEN + 1, SEEN + 3):
            out = _night(store, settings, world, n)
            assert out.delivery.pending_left == 0
        [msg] = _regression_messages(slack)
        assert slack.count("chat.postMessage", 200) == len(slack.messages)
        assert out.delivery.errors == []
    store.dispose()


def test_two_concurrent_runs_do_the_work_once(world, sqlite_url):
    store = Store(sqlite_url)
    with SlackStandIn() as slack:
        settings = _settings(sqlite_url, slack, world)
        _night(store, settings, world, SEEN - 1)  # the backfill
        slack.delay("chat.postMessage", 1.0)  # keep the first run busy while the second starts
        results: list[object] = []

        def go() -> None:
            try:
                results.append(_night(store, settings, world, SEEN))
            except LockBusy as exc:
                results.append(exc)

        threads = [threading.Thread(target=go) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        busy = [r for r in results if isinstance(r, LockBusy)]
        assert len(results) == 2 and len(busy) == 1
        assert len(_regression_messages(slack)) == 1
    store.dispose()
