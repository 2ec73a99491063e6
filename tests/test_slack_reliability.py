"""Slack faults that must never block the queue: a history lookup that fails, refused posts,
long Retry-After answers, messages too long or refused outright (dead-lettered, and counted)."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from service.notify import slack as slack_api
from service.store import outbox
from service.store.status import store_status
from service.web.app import create_app
from tests.loop_rows import Rows, night_time
from tests.notify_harness import make_settings, plan_and_deliver, slack  # noqa: F401 - fixture

NO_HISTORY = 10**6  # every conversations.history call refused, as without channels:history


def _groups(store, n: int) -> list[int]:
    rows = Rows(store)
    return [rows.group([rows.alert(f"gpu{i}", "rms_norm", 30)], 30, f"gpu{i}") for i in range(n)]


def _deliver(store, settings, hours=3.0):
    return plan_and_deliver(store, settings, night_time(30, hours))[1]


@pytest.mark.parametrize("fault", ["refused", "http_500"])
def test_failing_posts_without_history_still_deliver_every_message_exactly_once(store, slack, fault):
    groups = _groups(store, 7)
    slack.refuse("conversations.history", "missing_scope", times=NO_HISTORY)
    if fault == "refused":
        slack.refuse("chat.postMessage", "internal_error", times=4)
    else:  # the client retries each 500 twice, so four attempts fail
        slack.fail("chat.postMessage", status=500, times=12)
    settings = make_settings(slack)
    for n in range(8):
        summary = _deliver(store, settings, 3 + n / 10)
        if summary.pending_left == 0:
            break
    assert summary.pending_left == 0 and n <= 5, (n, summary.line())
    assert [len(slack.by_group(g)) for g in groups] == [1] * 7  # each once: no duplicates
    with store.session() as s:
        assert outbox.backlog(s)["sent"] == 7


def test_an_answer_lost_without_history_is_posted_again_and_said(store, slack):
    """The one case exactly-once cannot be checked: the post may have landed and history is not
    readable. The queue goes on and the summary says a duplicate is possible."""
    (group,) = _groups(store, 1)
    slack.refuse("conversations.history", "missing_scope", times=NO_HISTORY)
    slack.drop("chat.postMessage")
    settings = make_settings(slack)
    first = _deliver(store, settings)
    assert first.failed == 1 and first.pending_left == 1
    second = _deliver(store, settings, 4)
    assert second.posted == 1 and second.unverified == 1 and second.pending_left == 0
    assert "a duplicate is possible" in second.line()
    assert len(slack.by_group(group)) == 2


def test_an_answer_lost_with_history_is_recovered_not_reposted(store, slack):
    (group,) = _groups(store, 1)
    slack.drop("chat.postMessage")
    settings = make_settings(slack)
    _deliver(store, settings)
    again = _deliver(store, settings, 4)
    assert again.recovered == 1 and again.posted == 0 and len(slack.by_group(group)) == 1


def test_a_long_retry_after_is_not_waited_for_but_a_short_one_is(store, slack):
    groups = _groups(store, 2)
    slack.fail("chat.postMessage", status=429, times=1, retry_after=60)
    settings = make_settings(slack)
    started = time.monotonic()
    summary = _deliver(store, settings)
    assert time.monotonic() - started < 10  # not the 60 s Slack asked for
    assert summary.pending_left == 2 and "http_429" in summary.line()
    slack.fail("chat.postMessage", status=429, times=1, retry_after=1)  # a short wait is honoured
    summary = _deliver(store, settings, 4)
    assert summary.posted == 2 and summary.pending_left == 0
    assert [len(slack.by_group(g)) for g in groups] == [1, 1]


def test_a_message_too_long_is_shortened_to_fit_not_dropped(store, slack):
    (group,) = _groups(store, 1)
    slack.refuse("chat.postMessage", "msg_too_long")
    summary = _deliver(store, make_settings(slack))
    assert summary.posted == 1 and summary.shortened == 1 and "shortened to fit" in summary.line()
    (msg,) = slack.by_group(group)
    assert "shortened to fit Slack" in msg.blocks[-1]["elements"][0]["text"]
    with store.session() as s:
        assert store_status(s)["outbox_dead"] == 0


def test_shorten_caps_the_text_and_blocks():
    long = {"text": "x" * 50_000, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "y"}}] * 40}
    short = slack_api.shorten(long)
    assert len(short["text"]) <= slack_api.MAX_TEXT and short["text"].endswith("group page)")
    assert len(short["blocks"]) == slack_api.MAX_SHORT_BLOCKS + 1
    assert slack_api.shorten({"text": "fine"}) == {"text": "fine"}


def test_dead_letters_are_counted_in_status_and_on_the_status_page(store, slack):
    _groups(store, 2)
    slack.refuse("chat.postMessage", "invalid_blocks")
    summary = _deliver(store, make_settings(slack))
    assert summary.failed == 1 and summary.posted == 1  # the refusal did not stop the next one
    with store.session() as s:
        assert store_status(s)["outbox_dead"] == 1
    with TestClient(create_app(make_settings(slack), store)) as c:
        page = c.get("/status").text
    assert '<span data-testid="outbox-dead">1</span> refused by Slack' in page
