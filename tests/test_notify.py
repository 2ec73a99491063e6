"""Slack notifier: rendering (with mrkdwn escaping), planning intents, and exactly-once delivery
through slack-sdk's WebClient against the local stand-in (never slack.com)."""

from __future__ import annotations

import logging
import re
import time

from service.notify.deliver import deliver_pending
from service.notify.plan import plan_daily_digest, plan_notifications
from service.notify.render import escape, render_group
from service.notify.slack import make_client
from service.notify.view import group_view
from service.store import outbox
from service.store.tables import AlertGroup, OutboxMessage, SlackThread
from tests.loop_rows import Rows, night_time, sha
from tests.notify_harness import make_settings, plan_and_deliver, slack  # noqa: F401 - fixture


def _all_text(msg: dict) -> str:
    parts = [msg["text"]]
    for b in msg["blocks"]:
        t = b.get("text")
        if isinstance(t, dict):
            parts.append(t["text"])
        for e in b.get("elements", []):
            parts.append(e.get("text", ""))
    return "\n".join(parts)


# --- rendering -----------------------------------------------------------------------------


def test_escape_only_the_three_control_characters():
    assert escape("a & b <!channel> > c") == "a &amp; b &lt;!channel&gt; &gt; c"
    assert escape("*bold* _it_") == "*bold* _it_"


def test_render_names_cause_platform_kernels_culprit_and_escapes_untrusted_text(lite):
    rows = Rows(lite)
    evil = "<!channel> fix & <https://evil.example|click>"
    a1 = rows.alert("h100", "rms_norm", 30, change_pct=-14.2, subject=evil)
    a2 = rows.alert("h100", "layer<b>_norm", 30, change_pct=-11.0, subject=evil)
    gid = rows.group([a1, a2], 30, "h100", evidence=({"check": "x", "verdict": "real", "detail": "<@U123> said so"},))
    settings = make_settings()
    with lite.session() as s:
        msg = render_group(group_view(s, s.get(AlertGroup, gid), settings))
    text = _all_text(msg)
    assert msg["blocks"][0]["text"]["text"] == "Real regression: rms_norm and 1 more on h100 lost 11–14% speedup (provisional)"
    for want in ("h100", "`rms_norm`: speedup −14.2%", "layer&lt;b&gt;_norm", "−11.0%", sha(30)[:8], "2026-03-31",
                 sha(29)[:8], "honest 1.42x", "the step held 3 nights",
                 "&lt;!channel&gt; fix &amp; &lt;https://evil.example|click&gt;", "&lt;@U123&gt; said so"):
        assert want in text, want
    assert "beef" in text and "/commit/0000beef" in text  # culprit linked to GitHub
    # every '<' left is one of our own links, never a mention or a forged link
    for m in re.finditer(r"<([^>]*)>", text):
        assert m.group(1).startswith(("http://bw.test:8080/groups/", "https://github.com/pytorch/helion/commit/",
                                      "https://github.com/pytorch/helion/compare/",
                                      "https://github.com/pytorch/helion/actions/runs/")), m.group(0)
    assert f"<http://bw.test:8080/groups/{gid}|Open in benchwatch>" in text  # the group's page
    assert len(msg["text"]) < 3000 and all(len(b.get("text", {}).get("text", "")) <= 3000 for b in msg["blocks"])


def test_render_words_for_each_cause(lite):
    rows = Rows(lite)
    settings = make_settings()
    cases = {"method_change": "Benchmark method change", "hardware": "Hardware issue"}
    for i, (cause, words) in enumerate(cases.items()):
        a = rows.alert("b200", f"k{i}", 20 + i, cause=cause)
        gid = rows.group([a], 20 + i, "b200", cause=cause)
        with lite.session() as s:
            msg = render_group(group_view(s, s.get(AlertGroup, gid), settings))
        assert msg["blocks"][0]["text"]["text"].startswith(words)
        assert ("Change commit" if cause == "method_change" else "Runner/hardware commit") in _all_text(msg)
    a = rows.alert("mi350x", "up", 25, change_pct=+20.0, direction="improvement")
    gid = rows.group([a], 25, "mi350x")
    with lite.session() as s:
        msg = render_group(group_view(s, s.get(AlertGroup, gid), settings))
    assert msg["blocks"][0]["text"]["text"].startswith("Real improvement: up on mi350x gained 20% speedup")


# --- planning ------------------------------------------------------------------------------


def test_plan_posts_new_groups_once_and_never_noise_or_old(store):
    rows = Rows(store)
    now = night_time(35)
    fresh = rows.group([rows.alert("h100", "a", 34)], 34, "h100")
    noise = rows.group([rows.alert("h100", "b", 33, cause="noise")], 33, "h100", cause="noise")
    old1 = rows.group([rows.alert("b200", "c", 10), rows.alert("b200", "d", 10)], 10, "b200")
    old2 = rows.group([rows.alert("b200", "e", 20)], 20, "b200")
    settings = make_settings(max_age_days=3)
    with store.session() as s:
        first = plan_notifications(s, settings, now)
    with store.session() as s:
        again = plan_notifications(s, settings, now)
        got = {(r.key, r.state) for r in s.query(OutboxMessage)}
    assert (first.posts, first.historic, first.digests) == (1, 2, 1)
    assert (again.posts, again.updates, again.historic, again.digests) == (0, 0, 0, 0)
    assert (f"post:{fresh}", "pending") in got
    assert (f"post:{old1}", "historic") in got and (f"post:{old2}", "historic") in got
    assert not any(k == f"post:{noise}" for k, _ in got)
    digest = [k for k, st in got if k.startswith("digest:")]
    assert len(digest) == 1
    with store.session() as s:
        payload = outbox.by_key(s, digest[0]).payload
    assert payload["text"].startswith("3 historical moves recorded (2 groups")


def test_plan_never_posts_a_group_retracted_before_it_was_seen(lite):
    rows = Rows(lite)
    a = rows.alert("h100", "a", 34)
    gid = rows.group([a], 34, "h100", state="retracted")
    with lite.session() as s:
        plan = plan_notifications(s, make_settings(), night_time(35))
        assert plan.posts == 0 and outbox.group_rows(s, gid) == []


# --- delivery ------------------------------------------------------------------------------


def test_post_then_edit_the_same_message_on_confirmation(store, slack):
    rows = Rows(store)
    settings = make_settings(slack)
    a = rows.alert("h100", "rms_norm", 30)
    gid = rows.group([a], 30, "h100")
    plan, sent = plan_and_deliver(store, settings, night_time(30))
    assert (plan.posts, sent.posted, sent.pending_left) == (1, 1, 0)
    [msg] = slack.messages
    assert msg.metadata["event_type"] == "benchwatch_message"
    assert msg.metadata["event_payload"] == {"key": f"post:{gid}", "group_id": gid, "revision": 1}
    assert "(provisional)" in msg.text and "rms_norm" in msg.text
    # nothing changed: nothing sent
    plan, sent = plan_and_deliver(store, settings, night_time(30, 5))
    assert (plan.posts, plan.updates, sent.posted, sent.updated) == (0, 0, 0, 0)
    # confirmed the next night: the same ts is edited
    rows.alert("h100", "rms_norm", 30, state="confirmed", now=night_time(31))
    rows.group([a], 30, "h100", state="confirmed", now=night_time(31))
    plan, sent = plan_and_deliver(store, settings, night_time(31))
    assert (plan.updates, sent.updated, sent.posted) == (1, 1, 0)
    assert len(slack.messages) == 1 and len(msg.edits) == 1
    assert "(confirmed)" in msg.text and slack.count("chat.postMessage") == 1
    with store.session() as s:
        thread = s.get(SlackThread, gid)
        assert (thread.ts, thread.revision) == (msg.ts, 2)
    # retracted as noise later: edited again, never a new post
    rows.group([a], 30, "h100", state="retracted", cause="noise", now=night_time(33))
    plan_and_deliver(store, settings, night_time(33))
    assert len(slack.messages) == 1 and msg.text.startswith("Retracted") and len(msg.edits) == 2


def test_500_then_429_delay_delivery_but_lose_and_double_nothing(lite, slack):
    rows = Rows(lite)
    settings = make_settings(slack)
    gid = rows.group([rows.alert("h100", "a", 30)], 30, "h100")
    slack.fail("chat.postMessage", status=500, times=3)  # the first call and both retries
    _, sent = plan_and_deliver(lite, settings, night_time(30))
    assert slack.messages == [] and sent.pending_left == 1 and sent.failed == 1
    assert slack.count("chat.postMessage", 500) == 3 and "http_500" in sent.errors[0]
    with lite.session() as s:
        row = outbox.by_key(s, f"post:{gid}")
        assert (row.state, row.attempts) == ("pending", 1) and "http_500" in row.last_error
    slack.fail("chat.postMessage", status=429, times=1, retry_after=1)
    started = time.monotonic()
    _, sent = plan_and_deliver(lite, settings, night_time(30, 4))
    assert time.monotonic() - started >= 1.0  # Retry-After honoured by the client's handler
    assert sent.posted == 1 and sent.pending_left == 0 and len(slack.messages) == 1
    assert slack.count("chat.postMessage", 429) == 1 and slack.count("conversations.history") == 1
    _, sent = plan_and_deliver(lite, settings, night_time(30, 5))
    assert len(slack.messages) == 1 and sent.posted == 0


def test_crash_between_post_and_mark_sent_is_recovered_not_doubled(store, slack):
    rows = Rows(store)
    settings = make_settings(slack)
    a = rows.alert("h100", "a", 30)
    gid = rows.group([a], 30, "h100")
    slack.drop("chat.postMessage")  # Slack posts, the answer (ts) never arrives
    _, sent = plan_and_deliver(store, settings, night_time(30))
    assert len(slack.messages) == 1 and sent.posted == 0 and sent.pending_left == 1
    with store.session() as s:
        assert s.get(SlackThread, gid) is None
    _, sent = plan_and_deliver(store, settings, night_time(30, 4))
    assert (sent.recovered, sent.posted, sent.pending_left) == (1, 0, 0)
    assert len(slack.messages) == 1 and slack.count("chat.postMessage") == 1
    with store.session() as s:
        assert s.get(SlackThread, gid).ts == slack.messages[0].ts
    rows.group([a], 30, "h100", state="confirmed", now=night_time(31))
    _, sent = plan_and_deliver(store, settings, night_time(31))
    assert sent.updated == 1 and len(slack.messages) == 1 and "(confirmed)" in slack.messages[0].text


def test_updates_wait_for_the_post_and_only_the_newest_is_shown(lite, slack):
    rows = Rows(lite)
    settings = make_settings(slack)
    a = rows.alert("h100", "a", 30)
    gid = rows.group([a], 30, "h100")
    slack.fail("chat.postMessage", status=503, times=3)
    plan_and_deliver(lite, settings, night_time(30))
    rows.group([a], 30, "h100", state="confirmed", now=night_time(31))
    _, sent = plan_and_deliver(lite, settings, night_time(31))
    assert sent.posted == 1 and sent.updated == 0 and sent.superseded == 1
    assert len(slack.messages) == 1 and "(confirmed)" in slack.messages[0].text
    assert slack.messages[0].metadata["event_payload"]["revision"] == 2
    with lite.session() as s:
        assert {r.state for r in outbox.group_rows(s, gid)} == {"sent", "superseded"}


def test_a_refused_edit_is_recorded_on_the_edit_that_was_sent(lite, slack):
    """Slack rejecting a payload kills that message's row, not an older pending one."""
    rows = Rows(lite)
    settings = make_settings(slack)
    a = rows.alert("h100", "a", 30)
    gid = rows.group([a], 30, "h100")
    plan_and_deliver(lite, settings, night_time(30))
    rows.group([a], 30, "h100", state="confirmed", now=night_time(31))
    with lite.session() as s:
        plan_notifications(s, settings, night_time(31))
    rows.group([a], 30, "h100", cause="hardware", state="confirmed", now=night_time(32))
    slack.refuse("chat.update", "invalid_blocks")
    _, sent = plan_and_deliver(lite, settings, night_time(32))
    assert sent.failed == 1 and sent.updated == 0 and len(slack.messages[0].edits) == 0
    with lite.session() as s:
        edits = [r for r in outbox.group_rows(s, gid) if r.kind != "post"]
        assert [(r.revision, r.state) for r in edits] == [(2, "pending"), (3, "dead")]
        assert "invalid_blocks" in edits[1].last_error and edits[0].last_error is None


def test_without_a_token_messages_go_to_the_log_and_nothing_fails(lite, caplog):
    rows = Rows(lite)
    settings = make_settings()
    assert make_client(settings) is None
    gid = rows.group([rows.alert("h100", "quiet_kernel", 30)], 30, "h100")
    with caplog.at_level(logging.INFO, logger="service.notify.deliver"):
        _, sent = plan_and_deliver(lite, settings, night_time(30))
    assert sent.logged == 1 and sent.pending_left == 0 and not sent.errors
    assert "quiet_kernel" in caplog.text
    with lite.session() as s:
        assert {r.state for r in outbox.group_rows(s, gid)} == {"logged"}


def test_a_bad_token_stops_delivery_and_keeps_the_messages(lite, slack):
    rows = Rows(lite)
    settings = make_settings(slack)
    settings.slack.token = type(settings.slack.token)("xoxb-wrong")
    rows.group([rows.alert("h100", "a", 30)], 30, "h100")
    _, sent = plan_and_deliver(lite, settings, night_time(30))
    assert "invalid_auth" in sent.errors[0] and sent.pending_left == 1 and slack.messages == []


def test_cross_platform_parent_adopts_the_posted_platform_message(lite, slack):
    rows = Rows(lite)
    settings = make_settings(slack)
    a = rows.alert("h100", "a", 30)
    b = rows.alert("b200", "a", 30)
    g1 = rows.group([a], 30, "h100")
    plan_and_deliver(lite, settings, night_time(30))
    g2 = rows.group([b], 30, "b200")
    parent = rows.group([], 30, None, cause="hardware", child_ids=(g1, g2), now=night_time(31))
    _, sent = plan_and_deliver(lite, settings, night_time(31))
    assert len(slack.messages) == 1 and sent.updated == 1 and sent.posted == 0
    msg = slack.messages[0]
    assert "b200" in msg.text and "h100" in msg.text and msg.text.startswith("Hardware issue")
    with lite.session() as s:
        assert s.get(SlackThread, parent).ts == msg.ts


def test_daily_digest_once_per_day(lite, slack):
    rows = Rows(lite)
    settings = make_settings(slack, digest_enabled=True)
    rows.group([rows.alert("h100", "a", 30)], 30, "h100")
    rows.group([rows.alert("b200", "b", 20, cause="hardware")], 20, "b200", cause="hardware")
    with lite.session() as s:
        assert plan_daily_digest(s, settings, night_time(32))
        assert not plan_daily_digest(s, settings, night_time(32, 6))
    deliver_pending(lite, settings, now=night_time(32))
    [msg] = slack.messages
    assert "2 open alert groups" in msg.text
    body = _all_text({"text": msg.text, "blocks": msg.blocks})
    assert "*1-3 days:* 1 real regression" in body and "*older:* 1 hardware issue" in body
