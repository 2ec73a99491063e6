"""Ingest through the real HTTP path against a local server: ETag, gzip, retries, night by night."""

from __future__ import annotations

import json

import pytest

from tests.dashboard_server import DashboardServer
from tests.worlds import WorldSpec, generate_world


@pytest.fixture(scope="module")
def world():
    return generate_world(WorldSpec(seed=21, nightlies=35, with_git=False))


def _status(cli) -> dict:
    res = cli("status", "--format", "json")
    assert res.exit_code == 0, res.output
    return {k: v for k, v in json.loads(res.stdout).items() if not k.endswith("_at")}


def test_nightly_replay_over_http_with_etags(cli, world, monkeypatch):
    monkeypatch.setenv("BENCHWATCH_FETCH_BACKOFF_S", "0")
    with DashboardServer() as srv:
        args = ("ingest", "--dashboard", srv.url("dashboard"), "--pretuned", srv.url("pretuned"))
        runs_before = 0
        for n in (30, 31, 32):
            srv.publish(dashboard=world.dashboard_bytes(n), pretuned=world.pretuned_bytes(n))
            res = cli(*args)
            assert res.exit_code == 0, res.output
            now = _status(cli)
            assert now["trend_runs_dashboard"] == n + 1
            assert now["runs"] > runs_before
            runs_before = now["runs"]
        # nothing new published: the server answers 304 and nothing is downloaded or written
        res = cli(*args)
        assert res.exit_code == 0
        assert res.stdout.count("not modified") == 2
        assert srv.requests[-1][2] == 304 and srv.requests[-1][1]
        assert _status(cli) == now


def test_server_errors_retry_then_fail_cleanly(cli, world, monkeypatch):
    monkeypatch.setenv("BENCHWATCH_FETCH_BACKOFF_S", "0")
    monkeypatch.setenv("BENCHWATCH_FETCH_RETRIES", "2")
    with DashboardServer() as srv:
        srv.publish(dashboard=world.dashboard_bytes(20))
        srv.fail_next = [502, 503]
        res = cli("ingest", "--dashboard", srv.url("dashboard"))
        assert res.exit_code == 0, res.output  # third attempt succeeds
        before = _status(cli)
        srv.publish(dashboard=world.dashboard_bytes(21))
        srv.fail_next = [500, 500, 500]
        res = cli("ingest", "--dashboard", srv.url("dashboard"))
        assert res.exit_code == 1
        assert "giving up after 3 attempts" in res.stderr
        assert _status(cli) == before
