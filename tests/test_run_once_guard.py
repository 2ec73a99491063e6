"""A poisoned source never stops the nightly pass: the other source is ingested, detection runs
and queued Slack messages are delivered; the failure is one line, recorded, and shown in status."""

from __future__ import annotations

import json

import pytest

from service.pipeline import ingest_pass
from service.schedule.run_once import run_once
from service.store.status import store_status
from tests import upstream_docs as docs
from tests.slack_standin import SlackStandIn
from tests.loop_rows import Rows, ScriptedDetect, night_time
from tests.notify_harness import make_settings

# passes a schema without bounds; on SQLite the write raised OverflowError, on PostgreSQL a
# NumericValueOutOfRange traceback: exit 1 before pretuned, detection or Slack were reached
POISON = json.dumps(docs.poke(docs.dashboard(3), ("runs", 0, "kernel_count"), 2**63)).encode()
GOOD_PRETUNED = json.dumps(docs.pretuned(3)).encode()


def _pass(store, slack, dashboard=POISON):
    rows = Rows(store)
    detect = ScriptedDetect(rows, {30: lambda r: r.group([r.alert("h100", "a", 30)], 30, "h100")})
    summary = run_once(store, make_settings(slack), dashboard=dashboard, pretuned=GOOD_PRETUNED,
                       now=night_time(30), detect=detect)
    return summary, detect


def test_a_poisoned_document_leaves_the_other_source_detection_and_slack_working(store):
    with SlackStandIn() as slack:
        summary, detect = _pass(store, slack)
        assert len(summary.errors) == 1 and summary.errors[0].startswith("ingest dashboard: dashboard: runs[0]")
        assert summary.ingest == ["pretuned: 3 new runs, 72 points, 0 per-shape rows"]
        assert detect.calls == 1 and summary.delivery.posted == 1 and len(slack.messages) == 1
    with store.session() as s:
        status = store_status(s)
    assert status["runs_pretuned"] == 3
    assert "kernel_count" in status["last_ingest_dashboard_error"]
    assert status["last_ingest_pretuned_error"] is None


def test_an_unexpected_crash_in_one_source_is_contained(lite, monkeypatch):
    real = ingest_pass.write_document

    def crashing(session, doc, **kw):
        if doc.source == "dashboard":
            raise RuntimeError("a bug nobody foresaw\nsecond line")
        return real(session, doc, **kw)

    monkeypatch.setattr(ingest_pass, "write_document", crashing)
    with SlackStandIn() as slack:
        summary, detect = _pass(lite, slack, dashboard=json.dumps(docs.dashboard(3)).encode())
        assert summary.errors == ["ingest dashboard: dashboard: unexpected RuntimeError: a bug nobody foresaw second line"]
        assert detect.calls == 1 and len(slack.messages) == 1 and not summary.ok
    with lite.session() as s:
        assert store_status(s)["last_ingest_dashboard_error"].endswith("second line")
    monkeypatch.setattr(ingest_pass, "write_document", real)
    with SlackStandIn() as slack:  # the next pass ingests it, and the error is gone from status
        summary = run_once(lite, make_settings(slack), dashboard=json.dumps(docs.dashboard(3)).encode(),
                           pretuned=None, now=night_time(30, 5), detect=lambda *a, **k: "nothing")
        assert summary.ok, summary.errors
    with lite.session() as s:
        assert store_status(s)["last_ingest_dashboard_error"] is None


@pytest.mark.parametrize("detect_error", [KeyError("series 7"), ZeroDivisionError("float division")])
def test_a_crash_in_detection_still_delivers_the_queue(lite, detect_error):
    rows = Rows(lite)
    rows.group([rows.alert("h100", "a", 30)], 30, "h100")

    def broken(*args, **kwargs):
        raise detect_error

    with SlackStandIn() as slack:
        summary = run_once(lite, make_settings(slack), dashboard=None, pretuned=None,
                           now=night_time(30), detect=broken)
        assert summary.errors[0].startswith(f"detect: unexpected {detect_error.__class__.__name__}")
        assert len(slack.messages) == 1
