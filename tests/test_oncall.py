"""On-call lifecycle: ack / resolve / reclassify / dismiss / note, the audit trail, a human's
cause surviving detection, and the Slack message following the human's verdict."""

from __future__ import annotations

import json

import pytest

from service.errors import BenchwatchError
from service.store import oncall
from service.store.alert_reads import get_alert
from service.store.tables import Alert, AlertGroup
from tests.slack_standin import SlackStandIn
from tests.loop_rows import Rows, night_time
from tests.notify_harness import make_settings, plan_and_deliver


def test_actions_write_an_audit_trail_and_bump_the_group(store):
    rows = Rows(store)
    a = rows.alert("h100", "rms_norm", 30)
    gid = rows.group([a], 30, "h100")
    with store.session() as s:
        oncall.acknowledge(s, a, by="alice", note="looking", now=night_time(31))
        oncall.acknowledge(s, a, by="alice", now=night_time(31))  # twice: no second entry
        oncall.reclassify(s, a, cause="method_change", by="bob", note="harness PR #12", now=night_time(31, 4))
        oncall.add_note(s, a, by="carol", note="confirmed with the PR author", now=night_time(31, 5))
        data = oncall.resolve(s, a, by="alice", note="accepted", now=night_time(32))
        rev = s.get(AlertGroup, gid).revision
    assert data["status"] == "resolved" and data["cause"] == "method_change"
    assert (data["machine_cause"], data["human_cause"]) == ("real", "method_change")
    trail = [(h["by"], h["action"], h["old"], h["new"], h["note"]) for h in data["history"]]
    assert trail == [
        ("benchwatch", "created", None, "real", "provisional move of -12.0%"),
        ("alice", "acknowledged", "open", "acknowledged", "looking"),
        ("bob", "reclassified", "real", "method_change", "harness PR #12"),
        ("carol", "note", None, None, "confirmed with the PR author"),
        ("alice", "resolved", "acknowledged", "resolved", "accepted"),
    ]
    assert data["history"][1]["at"] == "2026-04-01T11:00:00Z"
    assert rev == 1 + 3  # ack, reclassify, resolve; the note changes nothing visible


def test_dismiss_and_invalid_actions(store):
    rows = Rows(store)
    a = rows.alert("h100", "a", 30)
    with store.session() as s:
        assert oncall.dismiss(s, a, by="alice")["status"] == "dismissed"
    cases = [
        (lambda s: oncall.acknowledge(s, a, by="alice"), "is dismissed; it cannot be acknowledged"),
        (lambda s: oncall.acknowledge(s, 999, by="alice"), "no alert with id 999"),
        (lambda s: oncall.reclassify(s, a, cause="cosmic_rays", by="x"), "cause must be one of"),
        (lambda s: oncall.resolve(s, a, by=""), "--by must be"),
        (lambda s: oncall.resolve(s, a, by="bob\x1b[31m"), "--by must be"),
        (lambda s: oncall.add_note(s, a, by="bob", note="x" * 2001), "at most 2000"),
        (lambda s: oncall.add_note(s, a, by="bob", note="   "), "empty"),
    ]
    for fn, msg in cases:
        with pytest.raises(BenchwatchError, match=msg):
            with store.session() as s:
                fn(s)
    with store.session() as s:
        assert oncall.reopen(s, a, by="alice")["status"] == "open"


def test_human_cause_survives_detection_and_slack_follows_it(store):
    rows = Rows(store)
    a = rows.alert("h100", "rms_norm", 30)
    gid = rows.group([a], 30, "h100")
    with SlackStandIn() as slack:
        settings = make_settings(slack)
        plan_and_deliver(store, settings, night_time(30))
        with store.session() as s:
            oncall.reclassify(s, a, cause="hardware", by="alice", note="runner swap <b>", now=night_time(30, 6))
        # the machine runs again the next night and still says "real": the human's verdict stays
        rows.alert("h100", "rms_norm", 30, state="confirmed", now=night_time(31))
        rows.group([a], 30, "h100", state="confirmed", now=night_time(31))
        with store.session() as s:
            alert = s.get(Alert, a)
            assert (alert.cause, alert.human_cause, alert.state) == ("real", "hardware", "confirmed")
        _, sent = plan_and_deliver(store, settings, night_time(31))
        [msg] = slack.messages
    assert sent.updated == 1 and sent.posted == 0
    assert msg.text.startswith("Hardware issue: rms_norm on h100 lost 12% speedup (confirmed)")
    context = msg.blocks[-1]["elements"][0]["text"]
    assert "reclassified by alice as Hardware issue: runner swap &lt;b&gt;" in context
    assert "Cause set by on-call" in msg.blocks[1]["text"]["text"]
    with store.session() as s:
        assert s.get(AlertGroup, gid).revision >= 3


def test_dismissing_every_member_edits_the_message(store):
    rows = Rows(store)
    a = rows.alert("h100", "a", 30)
    rows.group([a], 30, "h100")
    with SlackStandIn() as slack:
        settings = make_settings(slack)
        plan_and_deliver(store, settings, night_time(30))
        with store.session() as s:
            oncall.dismiss(s, a, by="bob")
        plan_and_deliver(store, settings, night_time(30, 5))
        assert len(slack.messages) == 1 and "(dismissed)" in slack.messages[0].text


def test_cli_commands(cli, store):
    rows = Rows(store)
    a = rows.alert("h100", "a", 30)
    rows.group([a], 30, "h100")
    r = cli("ack", str(a), "--by", "alice", "--note", "on it")
    assert r.exit_code == 0 and f"alert {a}: acknowledged" in r.output and "by alice" in r.output
    r = cli("reclassify", str(a), "--cause", "noise", "--by", "bob", "--json")
    data = json.loads(r.output)
    assert data["cause"] == "noise" and data["history"][-1]["by"] == "bob"
    r = cli("note", str(a), "flaky runner", "--by", "carol")
    assert r.exit_code == 0
    r = cli("resolve", str(a), "--note", "done", "--by", "alice")
    assert r.exit_code == 0 and "resolved" in r.output
    r = cli("dismiss", str(a), "--by", "alice")
    assert r.exit_code == 2 and "cannot be dismissed" in r.output
    r = cli("reclassify", str(a), "--cause", "bogus")
    assert r.exit_code == 2 and "cause must be one of" in r.output
    r = cli("ack", "424242")
    assert r.exit_code == 2 and "no alert with id 424242" in r.output
    with store.session() as s:
        actions = [h["action"] for h in get_alert(s, a)["history"]]
    assert actions == ["created", "acknowledged", "reclassified", "note", "resolved"]
    r = cli("alerts", "--status", "all", "--format", "json")
    [listed] = json.loads(r.output)
    assert [h["action"] for h in listed["history"]] == actions
    assert listed["history"][1]["by"] == "alice" and listed["history"][1]["note"] == "on it"
    assert (listed["status"], listed["human_cause"]) == ("resolved", "noise")
