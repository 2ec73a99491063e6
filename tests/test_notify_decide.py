"""The notifier's decisions and words as pure functions of a hand-made GroupView: no database,
no Slack (Alertmanager-style table tests)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

import pytest

from service.notify import words
from service.notify.decide import Action, Reason, decide, posted_and_current
from service.notify.render import render_group
from service.notify.view import AuditEntry, audit_entries, kernel_rows
from service.store import outbox
from service.notify.view import RunAt
from tests.views import CommitView, alert, row, view

NOW = datetime(2026, 4, 1, 12)


@dataclass(frozen=True)
class R:
    kind: str
    state: str
    revision: int


CASES = [
    # (name, view overrides, outbox rows, child_posted, expected action, reason)
    ("new group is posted", {}, [], False, Action.POST, Reason.NEW),
    ("old group goes to the digest", {"first_bad_date": datetime(2026, 3, 20)}, [], False,
     Action.DIGEST, Reason.OLD),
    ("noise is never posted", {"cause": "noise"}, [], False, Action.SKIP, Reason.NOT_POSTABLE),
    ("retracted is never posted", {"state": "retracted"}, [], False, Action.SKIP, Reason.NOT_POSTABLE),
    ("closed before seen is never posted", {"all_closed": True}, [], False, Action.SKIP, Reason.NOT_POSTABLE),
    ("empty group", {"alerts": ()}, [], False, Action.SKIP, Reason.EMPTY),
    ("parent adopts a posted child", {}, [], True, Action.ADOPT, Reason.CHILD_POSTED),
    ("parent adopts even when old", {"first_bad_date": datetime(2026, 1, 1)}, [], True,
     Action.ADOPT, Reason.CHILD_POSTED),
    ("posted and current", {"revision": 2}, [R("post", "sent", 1), R("update", "sent", 2)], False,
     Action.SKIP, Reason.UP_TO_DATE),
    ("revised after posting", {"revision": 3}, [R("post", "sent", 1), R("update", "sent", 2)], False,
     Action.UPDATE, Reason.REVISED),
    ("revised while the post is pending", {"revision": 2}, [R("post", "pending", 1)], False,
     Action.UPDATE, Reason.REVISED),
    ("a digested group stays digested", {"revision": 9}, [R("post", outbox.HISTORIC, 1)], False,
     Action.SKIP, Reason.HISTORIC),
    ("noise after posting is an edit", {"cause": "noise", "revision": 2}, [R("post", "sent", 1)], False,
     Action.UPDATE, Reason.REVISED),
]


@pytest.mark.parametrize("name,over,rows,child,action,reason", CASES, ids=[c[0] for c in CASES])
def test_decide(name, over, rows, child, action, reason):
    intent = decide(view(**over), rows, NOW, max_age_days=3, child_posted=child)
    assert (intent.action, intent.reason) == (action, reason)
    # the planner's cheap pre-check never skips a group decide would act on
    if posted_and_current(view(**over).revision, rows):
        assert intent.action is Action.SKIP


def test_kernel_rows_put_speedup_and_latency_of_a_kernel_on_one_row():
    alerts = [
        {"id": 1, "platform_short": "b200", "kernel": "gemm", "metric": "helion_latency_avg_ms",
         "change_pct": 25.0, "direction": "regression", "status": "open"},
        {"id": 2, "platform_short": "b200", "kernel": "gemm", "metric": "helion_speedup_geomean",
         "change_pct": -20.0, "direction": "regression", "status": "acknowledged", "true_speedup": 1.3},
        {"id": 3, "platform_short": "b200", "kernel": "sum", "metric": "helion_speedup_geomean",
         "change_pct": -30.0, "direction": "regression", "status": "resolved"},
    ]
    rows = kernel_rows(alerts, words.metric_words)
    assert [(r.kernel, r.speedup_pct, r.latency_pct, r.lead_alert_id) for r in rows] == [
        ("sum", -30.0, None, 3), ("gemm", -20.0, 25.0, 2)]
    assert rows[1].status == "open" and rows[1].alert_ids == (2, 1) and rows[1].true_speedup == 1.3


def test_one_group_action_is_one_audit_entry_naming_every_member():
    h = {"at": "2026-04-01T10:00:00Z", "by": "alice", "action": "acknowledged", "new": "acknowledged",
         "note": "on it"}
    machine = {"at": "2026-03-31T10:00:00Z", "by": "benchwatch", "action": "created", "new": None, "note": None}
    entries = audit_entries([{"id": 1, "history": [machine, h]}, {"id": 2, "history": [h]}])
    assert entries == (AuditEntry("2026-04-01T10:00:00Z", "alice", "acknowledged", "acknowledged", "on it", (1, 2)),)


def test_headline_says_who_where_how_much_when_why_and_the_culprit_with_its_author():
    assert words.headline(view()) == (
        "rms_norm and 3 more on b200 lost 10–14% speedup on 2026-03-31 — real regression (code change), "
        "culprit cccccccc [Triton] slower tiling by Ada Lovelace")


@pytest.mark.parametrize("over,want", [
    ({"direction": "improvement", "kernels": (row("gemm", 30.0, None, direction="improvement"),)},
     "gemm on b200 gained 30% speedup on 2026-03-31 — real improvement (code change)"),
    ({"kernels": (row("gemm", None, 25.0),), "commit": None, "kind": ""},
     "gemm on b200 got 25% slower on 2026-03-31 — real regression"),
    ({"state": "retracted"}, "Retracted: the move of rms_norm and 3 more on b200 on 2026-03-31 (it now looks like noise)"),
    ({"cause": "noise", "cause_by_human": True},
     "Retracted: the move of rms_norm and 3 more on b200 on 2026-03-31 (on-call marked it as noise)"),
])
def test_headline_variants(over, want):
    assert words.headline(view(**over)).startswith(want)


def test_an_ended_group_says_when_it_recovered_and_the_revert_that_ended_it():
    ended = dict(state="ended", end=RunAt("7033", "dddddddd", "d" * 40, "2026-04-03T08:00:00Z", None))
    assert ", recovered on 2026-04-03 — " in words.headline(view(**ended))
    episode = {"check": "episode", "verdict": "real", "detail": "came back after a revert",
               "facts": {"value": "reverted_code", "revert": "e" * 40, "reverted": "c" * 40}}
    reverted = view(**ended, alerts=({**alert(), "evidence": [episode]},))
    assert ", recovered on 2026-04-03 (eeeeeeee reverted it) — " in words.headline(reverted)
    # a value that is not a sha is never shown
    bad = {**episode, "facts": {**episode["facts"], "revert": "<!here>"}}
    assert "reverted it" not in words.headline(view(**ended, alerts=({**alert(), "evidence": [bad]},)))


@pytest.mark.parametrize("over,must", [
    ({}, ["Ping Ada Lovelace about cccccccc", "revert"]),
    ({"commit": None}, ["No single commit stands out"]),
    ({"direction": "improvement"}, ["Nothing to fix"]),
    ({"cause": "method_change", "kind": "shapes", "commit": None}, ["input shapes changed", "Re-baseline", "dismiss"]),
    ({"cause": "method_change", "kind": "cudagraph"}, ["CUDA graphs", "Re-baseline"]),
    ({"cause": "hardware", "kind": "runner"}, ["Check the runner of b200"]),
    ({"cause": "hardware", "kind": "thermal"}, ["throttling", "rerun the nightly"]),
    ({"cause": "hardware", "kind": ""}, ["Check the b200 machines"]),
    ({"cause": "noise"}, ["Nothing to do"]),
    ({"all_closed": True, "statuses": (("dismissed", 4),)}, ["every alert is dismissed"]),
])
def test_next_step_per_cause_and_kind(over, must):
    text = " ".join(words.next_steps(view(**over)))
    for m in must:
        assert m in text, (m, text)


def test_slack_header_has_the_magnitude_and_each_kernel_gets_one_line():
    msg = render_group(view())
    assert msg["blocks"][0]["text"]["text"] == "Real regression: rms_norm and 3 more on b200 lost 10–14% speedup (confirmed)"
    kernels = next(b["text"]["text"] for b in msg["blocks"] if "Kernels (4)" in b.get("text", {}).get("text", ""))
    assert kernels.splitlines()[1:] == [
        "• `rms_norm`: speedup −14.2%, latency +16.0%, honest 1.28x",
        "• `layer_norm`: speedup −10.1%, latency +11.0%, honest 1.28x",
        "• `softmax`: speedup −12.0%, honest 1.28x",
        "• `sum`: speedup −11.0%, honest 1.28x",
    ]
    text = str(msg)
    assert "compare/" + "a" * 40 + "..." + "b" * 40 in text and "by *Ada Lovelace*" in text
    assert "*Next:* Ping Ada Lovelace" in text
    assert "Confidence" not in text and "82%" not in text  # no unexplained number
    assert "helion_only" not in text and "breadth" not in text  # no internal check names


def test_untrusted_text_is_escaped_in_every_mrkdwn_block():
    evil = "<!channel> & <https://evil.example|click>"
    v = view(kernels=(row(evil),), evidence=(evil,), assignee=evil,
             commit=CommitView("culprit", "c" * 8, "c" * 40, evil, evil, "https://github.com/pytorch/helion/commit/" + "c" * 40),
             audit=(AuditEntry("2026-04-01T00:00:00Z", evil, "acknowledged", None, evil, (1,)),))
    msg = render_group(v)
    for b in msg["blocks"]:
        texts = [b["text"]["text"]] if b.get("text") and b["text"]["type"] == "mrkdwn" else \
            [e["text"] for e in b.get("elements", [])]
        for t in texts:
            for m in re.finditer(r"<([^>]*)>", t):
                assert m.group(1).startswith(("https://github.com/pytorch/helion/", "http://bw.test/groups/7")), m.group(0)
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in str(msg["blocks"])


def test_retracted_message_shows_no_culprit_and_says_nothing_to_do():
    msg = render_group(view(state="retracted"))
    text = str(msg)
    assert msg["blocks"][0]["text"]["text"].startswith("Retracted:")
    assert "Culprit" not in text and "Nothing to do" in text


def test_view_json_has_the_words_and_numbers_of_the_message():
    v = view(assignee="bob")
    data = v.to_json()
    assert data["headline"] == words.headline(v) and data["next_steps"] == list(words.next_steps(v))
    assert data["kernels"][0]["speedup_pct"] == -14.2 and data["kernels"][0]["latency_pct"] == 16.0
    assert data["commit"]["author"] == "Ada Lovelace" and data["assignee"] == "bob"
    assert data["alert_ids"] == [1, 2, 3, 4] and data["statuses"] == {"open": 4}
    assert replace(v, revision=2) != v  # frozen value, compared by content

