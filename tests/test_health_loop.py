"""Health alerts end to end: planted outages, failure streaks, accuracy failures, a pretuned
error, a kernel removed from the matrix, a late nightly and a fetch that keeps failing, replayed
nightly through run_once (real ingest, the world's git repo, Slack played by the stand-in).
Each raises exactly one alert and one Slack message, recovers by itself and edits its message;
a healthy world stays silent."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select

from service.config import Settings
from service.schedule.run_once import run_once
from service.store.health_oncall import set_status
from service.store.tables import AlertGroup, HealthAlert, Run
from tests.health_world import GPU, LINATTN, Faults, HealthWorld
from tests.slack_standin import TOKEN, SlackStandIn

ERROR = "CUDA error: <!channel> out of memory & <http://evil|click>"


def faulty_world() -> HealthWorld:
    return HealthWorld(nights=10, faults={
        2: Faults(infra_missing={("h100", "rms_norm"), ("h100", "gemm")}),
        3: Faults(missing_platforms={"b200"}),
        4: Faults(pretuned_error={("h100", "matmul"): ERROR}),
        5: Faults(failed={("h100", "softmax")}, accuracy={("b200_cute", "sum"): ["(4096, 4096)"]},
                  pretuned_error={("h100", "matmul"): ERROR}),
        6: Faults(failed={("h100", "softmax")}),
    }, removed={8: ("kernels", "layer_norm")})


def _settings(db_url, slack, repo) -> Settings:
    return Settings(database={"url": db_url}, helion={"repo": str(repo), "remote": ""},
                    slack={"token": TOKEN, "channel": "C0TRIAGE", "api_url": slack.base_url,
                           "retries": 1, "backoff_s": 0.01},
                    web={"base_url": "http://bw.test"})


def _no_detect(*_a, **_k):
    return "detect: skipped"


def _pass(store, settings, world, n, at_hours=3.0, *, dashboard=None, day=None):
    day = n if day is None else day
    now = world.date(day) + timedelta(hours=at_hours)
    return run_once(store, settings, now=now, detect=_no_detect, fetch_repo=False,
                    dashboard=world.dashboard_bytes(n) if dashboard is None else dashboard,
                    pretuned=world.pretuned_bytes(n))


@pytest.fixture
def repo_world(tmp_path):
    def make(world: HealthWorld) -> HealthWorld:
        world.build_repo(tmp_path / "helion")
        return world
    return make


def _final_text(m) -> str:
    return m.edits[-1]["text"] if m.edits else m.text


def test_each_fault_raises_one_alert_and_one_message_and_recovers(lite, repo_world, tmp_path):
    world = repo_world(faulty_world())
    with SlackStandIn() as slack:
        settings = _settings(lite.url, slack, tmp_path / "helion")
        for n in range(9):
            summary = _pass(lite, settings, world, n)
            assert summary.ok, summary.errors
            if n in (3, 6):  # a second pass the same morning (findings still there) changes nothing
                _pass(lite, settings, world, n, at_hours=4.0)
        _pass(lite, settings, world, 8, at_hours=5.5, day=9)  # 13:30 on day 9: nightly 9 is late
        _pass(lite, settings, world, 9, at_hours=6.0)  # it arrives
        for i in range(3):  # day 10: the dashboard fetch keeps failing (a refused document)
            assert not _pass(lite, settings, world, 9, at_hours=1.0 + i * 0.5, dashboard=b"not json", day=10).ok
        _pass(lite, settings, world, 9, at_hours=3.0, day=10)  # and works again

        with lite.session() as s:
            alerts = list(s.scalars(select(HealthAlert).order_by(HealthAlert.id)))
            groups = list(s.scalars(select(AlertGroup).where(AlertGroup.kind == "health")))
        kinds = Counter((a.kind, a.source) for a in alerts)
        assert kinds == Counter({
            ("partial_outage", "dashboard"): 1, ("platform_outage", "dashboard"): 1,
            ("failing_kernel", "dashboard"): 1, ("failing_kernel", "pretuned"): 1,
            ("accuracy", "dashboard"): 1, ("matrix_change", "dashboard"): 2,  # h100 and b200
            ("no_nightly", "dashboard"): 1, ("fetch_failing", "dashboard"): 1,
        })
        by_kind = {a.kind + ":" + a.source: a for a in alerts}  # (the b200 matrix change)
        assert by_kind["partial_outage:dashboard"].shapes == ["gemm", "rms_norm"]
        assert by_kind["platform_outage:dashboard"].platform_short == "b200"
        assert by_kind["failing_kernel:dashboard"].kernel == "softmax"
        assert by_kind["accuracy:dashboard"].shapes == ["(4096, 4096)"]
        assert by_kind["matrix_change:dashboard"].kernel == "layer_norm"
        assert world.removal_shas[8][:8] in by_kind["matrix_change:dashboard"].detail
        assert all(a.state == "recovered" and a.status == "resolved" for a in alerts if a.kind != "matrix_change")

        # one message per nightly's findings (8 nightlies/days had some), each posted once
        assert len(groups) == 8
        assert slack.count("chat.postMessage") == 8 == len(slack.messages)
        for g in groups:
            (msg,) = slack.by_group(g.id)
            text = _final_text(msg)
            if {a.kind for a in alerts if a.group_id == g.id} == {"matrix_change"}:
                assert "layer_norm" in text and "removed from the matrix" in text
                assert not msg.edits
            else:
                assert "recovered" in text, text
                assert msg.edits, "recovery edits the message"
        pretuned = next(m for m in slack.messages if "matmul" in m.text)
        raw = str(pretuned.blocks)
        assert "<!channel>" not in raw and "&lt;!channel&gt;" in raw and "&amp;" in raw
        posts, edits = slack.count("chat.postMessage"), slack.count("chat.update")

        _pass(lite, settings, world, 9, at_hours=4.0, day=10)  # nothing new: nothing sent
        assert (slack.count("chat.postMessage"), slack.count("chat.update")) == (posts, edits)


def test_a_detect_pass_that_keeps_failing_is_a_health_alert_until_it_runs(lite, repo_world, tmp_path):
    """benchwatch's own detection failing night after night (a database error, a bug) must not
    read as a quiet dashboard: one health alert after `detect_failures` passes in a row, naming
    the error, one message; it recovers, and the message is edited, when a pass runs."""
    world = repo_world(HealthWorld(nights=5))

    def broken(*_a, **_k):
        raise RuntimeError("UNIQUE constraint failed: alert_groups <!channel>")

    with SlackStandIn() as slack:
        settings = _settings(lite.url, slack, tmp_path / "helion")
        assert _pass(lite, settings, world, 0).ok
        for n in (1, 2):
            now = world.date(n) + timedelta(hours=3)
            summary = run_once(lite, settings, now=now, detect=broken, fetch_repo=False,
                               dashboard=world.dashboard_bytes(n), pretuned=world.pretuned_bytes(n))
            assert summary.errors == ["detect: unexpected RuntimeError: UNIQUE constraint failed: alert_groups <!channel>"]
            with lite.session() as s:
                alerts = s.scalars(select(HealthAlert)).all()
            assert [a.kind for a in alerts] == ([] if n == 1 else ["detect_failing"])  # two in a row
        (alert,) = alerts
        assert alert.source == "dashboard" and "RuntimeError" in alert.detail and alert.state != "recovered"
        assert slack.count("chat.postMessage") == 1
        raw = str(slack.messages[0].blocks)
        assert "<!channel>" not in raw and "&lt;!channel&gt;" in raw
        assert _pass(lite, settings, world, 3).ok  # detection runs again
        with lite.session() as s:
            alert = s.get(HealthAlert, alert.id)
        assert alert.state == "recovered" and alert.status == "resolved"
        assert slack.messages[0].edits and "recovered" in _final_text(slack.messages[0])
        assert slack.count("chat.postMessage") == 1


def test_a_healthy_world_raises_nothing(lite, repo_world, tmp_path):
    world = repo_world(HealthWorld(nights=6))
    with SlackStandIn() as slack:
        settings = _settings(lite.url, slack, tmp_path / "helion")
        for n in range(6):
            assert _pass(lite, settings, world, n).ok
            assert _pass(lite, settings, world, n, at_hours=8.0).ok  # 16:00, after the due time
        with lite.session() as s:
            assert s.scalars(select(HealthAlert)).all() == []
        assert slack.messages == []


def test_on_call_cli_web_and_status_see_health_alerts(lite, repo_world, tmp_path, monkeypatch):
    """`alerts --kind health`, `ack H<id>` (audit trail, Slack edit), the queue's health badge and
    filter, the health group page, and data freshness on /status."""
    import json
    import re

    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from service.cli.main import app as cli_app
    from service.web.app import create_app

    world = repo_world(HealthWorld(nights=3, faults={1: Faults(failed={("h100", "gemm")}),
                                                      2: Faults(failed={("h100", "gemm")})}))
    with SlackStandIn() as slack:
        settings = _settings(lite.url, slack, tmp_path / "helion")
        for n in range(3):
            assert _pass(lite, settings, world, n).ok
        (msg,) = slack.messages
        assert "gemm" in msg.text and "Failing kernel" in str(msg.blocks)

        monkeypatch.setenv("BENCHWATCH_DATABASE_URL", lite.url)
        runner = CliRunner()
        out = runner.invoke(cli_app, ["alerts", "--kind", "health", "--format", "json"], catch_exceptions=False)
        (row,) = json.loads(out.stdout)
        assert (row["kind"], row["kernel"], row["status"]) == ("failing_kernel", "gemm", "open")
        out = runner.invoke(cli_app, ["ack", row["id"], "--by", "carol", "--note", "on it"], catch_exceptions=False)
        assert out.exit_code == 0 and "acknowledged" in out.stdout
        bad = runner.invoke(cli_app, ["reclassify", row["id"], "--cause", "real"], catch_exceptions=False)
        assert bad.exit_code != 0 and "no cause" in bad.stderr
        bad = runner.invoke(cli_app, ["ack", "Hx"], catch_exceptions=False)
        assert bad.exit_code != 0
        bad = runner.invoke(cli_app, ["alerts", "--kind", "weird"], catch_exceptions=False)
        assert bad.exit_code != 0 and "kind" in bad.stderr
        _pass(lite, settings, world, 2, at_hours=4.0)
        assert msg.edits and "(acknowledged)" in str(msg.blocks)  # the action edits the message

        with TestClient(create_app(settings, lite)) as web:
            page = web.get("/?cause=health&status=all")
            assert page.status_code == 200 and 'data-cause="health"' in page.text and "gemm" in page.text
            rows = re.findall(r'<tr data-group="\d*" data-status="\w+" data-cause="(\w+)"', page.text)
            assert rows == ["health"]
            group = web.get(f"/groups/{row['group_id']}")
            assert group.status_code == 200 and "failing_kernel" in group.text
            status = web.get("/status")
            assert "newest_nightly_dashboard_at" in status.text and "newest_dashboard_h100_at" in status.text


def test_a_cold_start_records_the_outages_that_ended_before_it_once(store, repo_world, tmp_path):
    """Started on a cumulative history, benchwatch records the platform outages it never saw as
    a newest nightly: already recovered and resolved, the old ones in the backfill digest, a
    recent one posted; a platform the nightly workflow did not schedule was not down; a second
    pass, on-call acting on an old one and the next nightly send nothing again."""
    everything_h100 = {("h100", k) for k in GPU + LINATTN + [f"{k}-bwd" for k in LINATTN]}
    world = repo_world(HealthWorld(nights=13, faults={
        2: Faults(missing_platforms={"b200"}), 3: Faults(missing_platforms={"b200"}),
        6: Faults(failed=everything_h100),
        10: Faults(missing_platforms={"b200_cute"}),
    }, unscheduled={4: {"b200_cute"}, 5: {"b200_cute"}}))
    with SlackStandIn() as slack:
        settings = _settings(store.url, slack, tmp_path / "helion")
        assert _pass(store, settings, world, 11).ok
        with store.session() as s:
            alerts = list(s.scalars(select(HealthAlert).order_by(HealthAlert.platform_short)))
            runs = {a.id: s.get(Run, a.run_pk).run_id for a in alerts}
        assert [(a.kind, a.platform_short, runs[a.id], a.state, a.status) for a in alerts] == [
            ("platform_outage", "b200", world.run(2)["run_id"], "recovered", "resolved"),
            ("platform_outage", "b200_cute", world.run(10)["run_id"], "recovered", "resolved"),
            ("platform_outage", "h100", world.run(6)["run_id"], "recovered", "resolved"),
        ]
        assert "no results on 2 nightlies" in alerts[0].detail and "ran again on 2026-03-06" in alerts[0].detail
        # nights 2 and 6 are more than notify.max_age_days old: one digest; night 10 is posted
        texts = [m.text for m in slack.messages]
        assert len(texts) == 2, texts
        assert any(t.startswith("2 past platform outages recorded") for t in texts), texts
        assert any("b200_cute" in str(m.blocks) and "stored history" in str(m.blocks) for m in slack.messages)
        sent = slack.count("chat.postMessage")
        with store.session() as s:  # on-call acts on an old one (no message of its own): nothing to edit
            set_status(s, alerts[0].id, "open", by="carol", note="was this the March outage?")
            set_status(s, alerts[0].id, "resolved", by="carol", note="it was")
        assert _pass(store, settings, world, 11, at_hours=5.0).ok
        assert _pass(store, settings, world, 12).ok
        with store.session() as s:
            assert len(s.scalars(select(HealthAlert)).all()) == 3
        assert slack.count("chat.postMessage") == sent and slack.count("chat.update") == 0

        from fastapi.testclient import TestClient

        from service.web.app import create_app

        with TestClient(create_app(settings, store)) as web:  # on-call sees them in the queue and on their page
            queue = web.get("/?cause=health&status=all")
            assert queue.status_code == 200 and "b200_cute" in queue.text
            page = web.get(f"/groups/{alerts[0].group_id}")
            assert page.status_code == 200 and "found in the stored history" in page.text
            assert "2026-03-04" in page.text  # the outage's first nightly


def test_an_outage_already_running_at_a_cold_start_is_dated_from_its_first_nightly(store, repo_world, tmp_path):
    """Started while b200 has been down for three nightlies: the live alert says since when and
    hangs on the first of them; when b200 is back it recovers, and the history read does not add
    it a second time."""
    down = Faults(missing_platforms={"b200"})
    world = repo_world(HealthWorld(nights=9, faults={5: down, 6: down, 7: down}))
    with SlackStandIn() as slack:
        settings = _settings(store.url, slack, tmp_path / "helion")
        assert _pass(store, settings, world, 7).ok
        with store.session() as s:
            (alert,) = s.scalars(select(HealthAlert)).all()
            first = s.get(Run, alert.run_pk).run_id
            detail, state = alert.detail, alert.state
        assert (alert.kind, alert.platform_short, state, first) == ("platform_outage", "b200", "active", world.run(5)["run_id"])
        assert "down since 2026-03-07" in detail and "3 nightlies" in detail
        (msg,) = slack.messages
        assert "down since 2026-03-07" in str(msg.blocks)
        assert _pass(store, settings, world, 8).ok
        with store.session() as s:
            (alert,) = s.scalars(select(HealthAlert)).all()
            assert alert.state == "recovered" and s.get(Run, alert.run_pk).run_id == world.run(5)["run_id"]
