"""The web app in-process (FastAPI TestClient) on SQLite and PostgreSQL: pages, API parity with
the CLI's JSON, sign-in, CSRF, escaping of untrusted text, health and secrets hygiene."""

from __future__ import annotations

import json
import logging
import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from service.config import WebSettings
from service.store.alert_reads import get_alert, list_alerts
from service.store.db import Store
from service.store.tables import Alert, AlertHistory
from service.web.app import create_app
from service.web.auth import check_credentials
from tests.web_client import (  # noqa: F401 - alice_hash, client and world are fixtures
    PASSWORD, SECRET_KEY, TEAM_TOKEN, alice_hash, client, csrf_of, make_settings, sign_in, world,
)
from tests.web_world import XSS_KERNEL, XSS_NOTE, XSS_SUBJECT, build_world

def queue_rows(html: str) -> list[tuple[str, str, str]]:
    """(group id, status, cause) of each queue row, in page order."""
    return re.findall(r'<tr data-group="(\d*)" data-status="(\w+)" data-cause="(\w+)"', html)


# --- queue -----------------------------------------------------------------------------------


def test_queue_lists_groups_newest_first_with_cause_counts_and_filters(client, world):
    html = client.get("/").text
    g = world.groups
    # active (open + acknowledged) by default, newest first-bad first; the resolved noise group is hidden
    assert [r[0] for r in queue_rows(html)] == [str(g["method"]), str(g["real"]), str(g["hardware"])]
    counts = dict(re.findall(r'data-cause="(\w+)">[^<]*<b>(\d+)</b>', html))
    assert counts == {"real": "1", "method_change": "1", "hardware": "1", "noise": "0", "improvement": "0",
                      "health": "0"}  # health: its own filter
    assert "gemm" in html and "−20.0%" in html and "0000001e" in html  # kernel, change, first-bad sha
    only_real = client.get("/", params={"cause": "real"}).text
    assert [r[0] for r in queue_rows(only_real)] == [str(g["real"])]
    assert [r[0] for r in queue_rows(client.get("/?platform=h100").text)] == [str(g["hardware"])]
    everything = queue_rows(client.get("/?status=all").text)
    assert (str(g["noise"]), "resolved", "noise") in everything and len(everything) == 4
    assert queue_rows(client.get("/?source=pretuned").text) == []
    bad = client.get("/?status=closed")
    assert bad.status_code == 400 and "status must be one of" in bad.text


def test_queue_paginates(store, alice_hash):
    build_world(store, nights=40, kernels=("gemm", "softmax"), extra_groups=30)
    app = create_app(make_settings(alice_hash, page_size=10), store)
    with TestClient(app) as c:
        first = queue_rows(c.get("/?status=all").text)
        second = queue_rows(c.get("/?status=all&page=2").text)
        last = c.get("/?status=all&page=4").text
    assert len(first) == 10 and len(second) == 10 and not set(first) & set(second)
    assert "page 4 of 4" in last and len(queue_rows(last)) == 34 - 30


def test_group_page_lists_members_and_verdict(client, world):
    html = client.get(f"/groups/{world.groups['hardware']}").text
    assert "Hardware issue" in html and html.count('href="/alerts/') >= 5
    assert client.get("/groups/999999").status_code == 404


# --- alert page ------------------------------------------------------------------------------


def test_alert_page_shows_the_move_and_escapes_untrusted_text(client, world):
    html = client.get(f"/alerts/{world.alerts['xss']}").text
    # kernel name, commit subject and note appear as text, never as markup
    for raw in (XSS_KERNEL, XSS_SUBJECT, XSS_NOTE):
        assert raw not in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "faster tiling &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "<script>alert" not in html and "<img src=x" not in html
    # chart data is JSON inside a non-executing block, with < escaped
    blocks = re.findall(r'<script type="application/json" id="([\w-]+)-data">(.*?)</script>', html, re.S)
    assert blocks and all("<" not in body for _, body in blocks)
    main = json.loads(dict(blocks)["main-chart"])
    names = [t["name"] for t in main["traces"]]
    assert names[:4] == ["helion_speedup_geomean", "triton_speedup_geomean",
                         "torch_compile_speedup_geomean", "helion_latency_avg_ms"]
    assert {t["name"]: t["axis"] for t in main["traces"]}["helion_latency_avg_ms"] == "y2"
    assert [m["label"] for m in main["marks"]] == ["last good", "first bad"]
    assert all(len(t["x"]) == len(t["y"]) > 40 for t in main["traces"])
    # commit window links to GitHub with the full sha; evidence, honest speedup
    alert = get_alert_json(client, world.alerts["xss"])
    assert f'href="https://github.com/pytorch/helion/commit/{alert["culprit"]["full_sha"]}"' in html
    assert "the step held 20 nights" in html and "1.28×" in html
    # breadth: the other b200 kernels, group members first
    small = [json.loads(body) for name, body in blocks if name.startswith("small-")]
    assert small[0]["kernel"] == "gemm" and small[0]["in_group"] and len(small) == 8
    assert client.get("/alerts/424242").status_code == 404


def get_alert_json(client, alert_id: int) -> dict:
    r = client.get(f"/api/alerts/{alert_id}")
    assert r.status_code == 200
    return r.json()


# --- API -------------------------------------------------------------------------------------


def test_api_alerts_are_the_cli_objects(client, store, world):
    with store.session() as s:
        expected_open = list_alerts(s)
        expected_b200 = list_alerts(s, status="all", platform="b200", cause="real")
        one = get_alert(s, world.alerts["gemm"])
    assert client.get("/api/alerts").json() == json.loads(json.dumps(expected_open))
    got = client.get("/api/alerts", params={"status": "all", "platform": "b200", "cause": "real"}).json()
    assert got == json.loads(json.dumps(expected_b200)) and len(got) == 2
    assert client.get(f"/api/alerts/{world.alerts['gemm']}").json() == json.loads(json.dumps(one))
    missing = client.get("/api/alerts/999999")
    assert missing.status_code == 404 and missing.json() == {"error": "no alert with id 999999"}
    assert client.get("/api/alerts?status=closed").status_code == 400
    group = client.get(f"/api/groups/{world.groups['hardware']}").json()
    assert len(group["alerts"]) == 5 and len(group["kernels"]) == 5
    assert group["headline"] == "vector_add and 4 more on h100 lost 15–19% speedup on 2026-01-21 — hardware issue"
    schema = client.get("/api/openapi.json").json()
    assert {"/api/alerts", "/api/alerts/{alert_id}", "/api/series", "/api/status"} <= set(schema["paths"])


def test_api_series_and_series_page(client, world):
    keys = client.get("/api/series", params={"platform": "mi350x", "kernel": "softmax"}).json()["series"]
    assert len(keys) == 5
    one = client.get("/api/series", params={"source": "dashboard", "platform": "b200", "kernel": "sum",
                                            "metric": "helion_speedup_geomean"}).json()
    assert len(one["points"]) == 50 and one["points"][7]["value"] is None  # the failed night
    html = client.get("/series", params={"platform": "mi350x", "kernel": "softmax"}).text
    chart = json.loads(re.search(r'id="series-chart-data">(.*?)</script>', html, re.S).group(1))
    labels = [m["label"] for m in chart["marks"]]
    assert any("+30.0% (method_change)" in x for x in labels)  # the move on this series
    assert any("switch timer" in x for x in labels) and any("baseline_label" in x for x in labels)
    shapes = client.get("/series", params={"platform": "b200", "kernel": "gemm"}).text
    assert "[2048, 4096]" in shapes and "Per-shape values" in shapes


# --- sign-in and actions -----------------------------------------------------------------------


def test_actions_need_a_signed_in_user_and_a_csrf_token(client, store, world):
    aid = world.alerts["gemm"]
    real_group = str(world.groups["real"])
    assert {r[0]: r[1] for r in queue_rows(client.get("/").text)}[real_group] == "open"  # primes the cache
    page = client.get(f"/alerts/{aid}").text
    assert 'action="/alerts/' not in page and "Sign in</a> to acknowledge" in page
    assert client.post(f"/alerts/{aid}/ack", data={}).status_code == 403  # no CSRF token
    token = csrf_of(client.get("/login").text)
    assert client.post(f"/alerts/{aid}/ack", data={"csrf_token": token}).status_code == 401
    refused = sign_in(client, password="wrong")
    assert refused.status_code == 401 and "wrong name or password" in refused.text
    ok = sign_in(client, next_=f"/alerts/{aid}")
    assert ok.status_code == 303 and ok.headers["location"] == f"/alerts/{aid}"
    page = client.get(f"/alerts/{aid}").text
    token = csrf_of(page)
    assert client.post(f"/alerts/{aid}/ack", data={"csrf_token": "forged"}).status_code == 403
    r = client.post(f"/alerts/{aid}/ack", data={"csrf_token": token, "note": "looking"})
    assert r.status_code == 303
    client.post(f"/alerts/{aid}/reclassify", data={"csrf_token": token, "cause": "method_change",
                                                   "note": XSS_NOTE})
    bad = client.post(f"/alerts/{aid}/reclassify", data={"csrf_token": token, "cause": "gremlins"})
    assert bad.status_code == 303 and "cause must be one of" in client.get(f"/alerts/{aid}").text
    with store.session() as s:
        a = s.get(Alert, aid)
        hist = s.scalars(select(AlertHistory).where(AlertHistory.alert_id == aid).order_by(AlertHistory.id)).all()
        assert (a.status, a.human_cause, a.cause) == ("acknowledged", "method_change", "real")
        assert [h.by for h in hist[1:]] == ["alice", "alice"] and hist[1].note == "looking"
    html = client.get(f"/alerts/{aid}").text
    assert "Benchmark method change" in html and "machine said Real regression" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and XSS_NOTE not in html
    # the queue sees the change at once (its cache keys on the data): a group is open while any
    # member is, so it turns acknowledged when its second alert is acknowledged too
    assert {r[0]: r[1] for r in queue_rows(client.get("/").text)}[real_group] == "open"
    client.post(f"/alerts/{world.alerts['xss']}/ack", data={"csrf_token": token})
    assert {r[0]: r[1] for r in queue_rows(client.get("/").text)}[real_group] == "acknowledged"


def test_team_token_signs_in_under_a_name_and_logout_ends_it(client, world):
    assert sign_in(client, name="bob", password=TEAM_TOKEN).status_code == 303
    page = client.get(f"/alerts/{world.alerts['method']}").text
    assert "bob (team token)" in page
    client.post(f"/alerts/{world.alerts['method']}/note", data={"csrf_token": csrf_of(page), "note": "on it"})
    hist = get_alert_json(client, world.alerts["method"])["history"]
    assert hist[-1]["by"] == "bob (team token)" and hist[-1]["action"] == "note"
    assert sign_in(client, name="<x>", password=TEAM_TOKEN).status_code == 401  # names are validated
    client.post("/logout", data={"csrf_token": csrf_of(client.get("/").text)})
    assert "bob (team token)" not in client.get("/").text


def test_session_cookie_is_signed_httponly_and_redirects_stay_on_site(client):
    r = sign_in(client, next_="//evil.example/x")
    assert r.headers["location"] == "/"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    # a request that carries only a forged session cookie (the signed-in one dropped) is nobody's
    client.cookies.clear()
    client.cookies.set("benchwatch_session", "forged.value.here")
    assert "alice" not in client.get("/").text


def test_secrets_never_reach_pages_or_logs(client, world, alice_hash, caplog):
    caplog.set_level(logging.DEBUG)
    sign_in(client, password="wrong-" + PASSWORD)
    sign_in(client)
    bodies = [client.get(u).text for u in (
        "/", "/status", "/series", f"/alerts/{world.alerts['gemm']}", f"/groups/{world.groups['real']}",
        "/api/status", "/api/openapi.json", "/login",
    )]
    for secret in (PASSWORD, TEAM_TOKEN, SECRET_KEY, alice_hash):
        assert not any(secret in b for b in bodies), secret
        assert secret not in caplog.text
    assert "sign-in: alice" in caplog.text


def test_check_credentials_rules(alice_hash):
    web = WebSettings(users={"alice": alice_hash}, team_token=TEAM_TOKEN)
    assert check_credentials(web, "alice", PASSWORD).user == "alice"
    assert not check_credentials(web, "alice", TEAM_TOKEN).ok  # a user's own password only
    assert check_credentials(web, "carol", TEAM_TOKEN).user == "carol (team token)"
    assert not check_credentials(WebSettings(), "carol", "").ok  # nothing configured: nobody
    with pytest.raises(ValueError, match="bcrypt"):
        WebSettings(users={"alice": "plaintext"})


# --- health, status, assets --------------------------------------------------------------------


def test_healthz_status_and_local_plotly(client, world):
    assert client.get("/healthz").json() == {"ok": True}
    status = client.get("/status").text
    assert "Outbox backlog" in status and "+50 runs" in status and "MiB" in status
    js = client.get("/static-vendor/plotly.min.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"] and len(js.content) > 1_000_000
    page = client.get(f"/alerts/{world.alerts['gemm']}")
    srcs = re.findall(r'<script[^>]* src="([^"]+)"', page.text)
    assert srcs and all(s.startswith("/") and not s.startswith("//") for s in srcs)
    assert "default-src 'self'" in page.headers["content-security-policy"]


def test_healthz_is_503_when_the_store_is_unreachable(alice_hash):
    dead = Store("postgresql+psycopg://nobody@127.0.0.1:1/none", auto_upgrade=False)
    try:
        with TestClient(create_app(make_settings(alice_hash), dead)) as c:
            r = c.get("/healthz")
        assert r.status_code == 503 and r.json()["ok"] is False
    finally:
        dead.dispose()


def test_cached_pages_follow_actions_and_outside_writes(store, world, alice_hash):
    """Anonymous readers share rendered pages; an action here shows at once, a write by another
    process (the CLI, the nightly pass) once the data version is re-read."""
    from service.store import oncall

    app = create_app(make_settings(alice_hash), store)
    aid = world.alerts["method"]
    with TestClient(app, follow_redirects=False) as reader, TestClient(app, follow_redirects=False) as oncall_user:
        assert "status-open" in reader.get(f"/alerts/{aid}").text
        sign_in(oncall_user)
        token = csrf_of(oncall_user.get(f"/alerts/{aid}").text)
        oncall_user.post(f"/alerts/{aid}/ack", data={"csrf_token": token})
        page = reader.get(f"/alerts/{aid}").text
        assert "status-acknowledged" in page and "set-cookie" not in reader.get("/").headers
        app.state.page_cache.ttl_s = 0.0  # re-read the version on every request
        reader.get(f"/alerts/{aid}")
        with store.session() as s:
            oncall.resolve(s, aid, by="cli-user", note="from the CLI")
        page = reader.get(f"/alerts/{aid}").text
        assert "status-resolved" in page and "from the CLI" in page


def test_status_page_hides_credentials_in_source_urls(store, alice_hash):
    from service.config import SourcesSettings

    settings = make_settings(alice_hash).model_copy(update={"sources": SourcesSettings(
        dashboard="https://bot:hunter2@example.invalid/d.json?token=abc123",
        pretuned="/srv/data/pretuned-dashboard-data.json")})
    with TestClient(create_app(settings, store)) as c:
        page = c.get("/status").text
    assert "https://example.invalid/d.json" in page and "/srv/data/pretuned-dashboard-data.json" in page
    assert "hunter2" not in page and "abc123" not in page


def test_cross_platform_group_is_one_queue_row_with_its_children(client, store, world):
    from datetime import datetime

    from service.store.tables import AlertGroup as G

    with store.session() as s:
        hw, real = s.get(G, world.groups["hardware"]), s.get(G, world.groups["real"])
        parent = G(source="dashboard", first_bad_run_pk=hw.first_bad_run_pk, platform_short=None, cause="hardware",
                   confidence=0.7, evidence=[], state="confirmed", revision=1,
                   created_at=datetime(2026, 6, 1), updated_at=datetime(2026, 6, 1))
        s.add(parent)
        s.flush()
        hw.parent_id = real.parent_id = parent.id
        pid = parent.id
    rows = queue_rows(client.get("/?status=all").text)
    ids = [r[0] for r in rows]
    assert str(pid) in ids and str(world.groups["hardware"]) not in ids and str(world.groups["real"]) not in ids
    html = client.get("/?status=all").text
    assert "all: b200, h100" in html
    assert [r[0] for r in queue_rows(client.get("/?platform=h100").text)] == [str(pid)]
    page = client.get(f"/groups/{pid}").text
    assert " on b200, h100 " in page and page.count('href="/alerts/') >= 7  # one row per kernel
    assert "gemm</a>@b200" in page and "gemm</a>@h100" in page


def test_resolved_alert_offers_reopen_only(client, world):
    sign_in(client)
    aid = world.alerts["noise"]  # resolved in the world
    page = client.get(f"/alerts/{aid}").text
    assert 'data-action="reopen"' in page and 'data-action="ack"' not in page
    client.post(f"/alerts/{aid}/reopen", data={"csrf_token": csrf_of(page), "note": "came back"})
    assert get_alert_json(client, aid)["status"] == "open"
    assert 'data-action="ack"' in client.get(f"/alerts/{aid}").text


def test_fast_path_serves_the_same_page_with_headers_and_never_to_signed_in_users(client, world):
    from service.web.cache import key_for

    assert key_for("/alerts/7", b"") == ("alert", 7) and key_for("/alerts/07", b"") is None
    assert key_for("/", b"cause=real&cause=noise") is None and key_for("/", b"utm=x") is None
    first = client.get(f"/alerts/{world.alerts['gemm']}")
    again = client.get(f"/alerts/{world.alerts['gemm']}")  # served before routing
    assert again.text == first.text and "default-src 'self'" in again.headers["content-security-policy"]
    sign_in(client)
    assert 'data-action="ack"' in client.get(f"/alerts/{world.alerts['gemm']}").text


def test_bad_ids_and_params_are_one_line_errors(client):
    r = client.get("/alerts/99999999999999999999")
    assert r.status_code == 400 and "alert_id" in r.text and "Traceback" not in r.text
    assert client.get("/?page=abc").status_code == 400
    assert client.get("/api/alerts/0").status_code == 422  # the API keeps FastAPI's JSON detail


def test_queue_shows_the_cause_slack_shows_when_on_call_reclassified_some_members(store, world):
    """One member of the five-kernel hardware group reclassified by hand: the queue row and the
    Slack message must both read the human's verdict (the same rule, effective_cause)."""
    from service.notify.view import group_view
    from service.store import oncall
    from service.store.tables import AlertGroup
    from service.web.queue import build_rows

    with store.session() as s:
        oncall.reclassify(s, world.alerts["hw-gemm"], cause="method_change", by="alice")
    with store.session() as s:
        row = next(r for r in build_rows(s) if r.group_id == world.groups["hardware"])
        slack = group_view(s, s.get(AlertGroup, world.groups["hardware"]))
    assert slack.cause == "method_change" and row.cause == slack.cause
    assert row.machine_cause == "hardware"


def test_improvements_and_retracted_moves_read_as_slack_says_and_leave_the_default_queue(client, store, world):
    """A real move for the better is "Real improvement" (not a red "Real regression"), a
    retracted one "Retracted"; neither is work, so the default view leaves them out and says so."""
    from service.store.tables import Alert, AlertGroup

    with store.session() as s:
        s.get(AlertGroup, world.groups["method"]).state = "retracted"
        real = s.get(AlertGroup, world.groups["real"])
        for a in s.query(Alert).filter(Alert.group_id == real.id):
            a.direction, a.change_pct = "improvement", abs(a.change_pct)
    html = client.get("/").text
    assert [r[0] for r in queue_rows(html)] == [str(world.groups["hardware"])]
    assert "2 not shown" in html
    better = client.get("/?cause=improvement").text
    assert [r[0] for r in queue_rows(better)] == [str(world.groups["real"])]
    assert '<span class="badge cause-improvement"' in better and "Real improvement" in better
    assert "Real regression</span>" not in better
    gone = client.get("/?cause=noise").text
    assert [r[0] for r in queue_rows(gone)] == [str(world.groups["method"])]
    assert '<span class="badge cause-retracted" title="retracted">Retracted</span>' in gone
    page = client.get(f"/groups/{world.groups['real']}").text
    assert "Real improvement" in page and "gained" in page and "Nothing to fix" in page
    page = client.get(f"/groups/{world.groups['method']}").text
    assert ">Retracted<" in page and "Retracted: the move of softmax on mi350x" in page
