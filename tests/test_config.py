"""Settings precedence (default file < --config < env) and one-line errors."""

from __future__ import annotations

import pytest

from service.config import load_settings
from service.errors import BenchwatchError


def test_defaults_then_file_then_env(tmp_path, monkeypatch):
    for var in ("BENCHWATCH_DATABASE_URL", "BENCHWATCH_SLACK_CHANNEL", "BENCHWATCH_SLACK_API_URL"):
        monkeypatch.delenv(var, raising=False)
    s = load_settings()
    assert s.sources.dashboard.endswith("/dashboard-data.json")
    f = tmp_path / "c.toml"
    f.write_text('[slack]\nchannel = "#perf"\napi_url = "http://127.0.0.1:9/api/"\n')
    s = load_settings(f)
    assert s.slack.channel == "#perf"
    monkeypatch.setenv("BENCHWATCH_SLACK_CHANNEL", "#oncall")
    monkeypatch.setenv("BENCHWATCH_SLACK_TOKEN", "xoxb-secret")
    monkeypatch.setenv("BENCHWATCH_HELION_REPO", "/srv/helion")
    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", "postgresql://u@h/db")
    s = load_settings(f)
    assert s.slack.channel == "#oncall"
    assert s.slack.api_url == "http://127.0.0.1:9/api/"  # from the file, not clobbered
    assert s.helion.repo == "/srv/helion"
    assert s.database.url == "postgresql://u@h/db"
    assert s.slack.token.get_secret_value() == "xoxb-secret"
    assert "xoxb-secret" not in repr(s) and "xoxb-secret" not in str(s.model_dump())


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[fetch]\nretries = -1\n", "fetch.retries"),
        ("[fetch]\nnot_a_key = 1\n", "fetch.not_a_key"),
        ("[database]\nurl = 'mysql://x'\n", "database"),
        ("this is = = not toml", "not valid TOML"),
        ("[schedule]\ntimezone = 'Europe/Berln'\n", "schedule.timezone: Value error, unknown time zone 'Europe/Berln'"),
        ("[detect]\npenalty_typo = 5\n", "detect.penalty_typo"),
        ("[classify]\nmin_significance = 'high'\n", "classify.min_significance"),
    ],
)
def test_bad_config_is_one_line_error(tmp_path, text, needle):
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(BenchwatchError) as exc:
        load_settings(f)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_a_known_time_zone_is_accepted(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[schedule]\ntimezone = 'Europe/Berlin'\n")
    assert load_settings(f).schedule.timezone == "Europe/Berlin"


def test_missing_config_file(tmp_path):
    with pytest.raises(BenchwatchError, match="does not exist"):
        load_settings(tmp_path / "none.toml")


def test_cli_reports_bad_config(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from service.cli.main import app

    f = tmp_path / "c.toml"
    f.write_text("[fetch]\nretries = 'many'\n")
    res = CliRunner().invoke(app, ["--config", str(f), "status"])
    assert res.exit_code == 2
    assert "fetch.retries" in res.stderr
    f.write_text("[schedule]\ntimezone = 'Mars/Olympus'\n")  # `serve` died of a traceback on it
    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", f"sqlite:///{tmp_path / 'none' / 'bw.db'}")  # never reached
    for command in (["status"], ["serve", "--no-web"], ["run-once", "--no-fetch"]):
        res = CliRunner().invoke(app, ["--config", str(f), *command])
        assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
            "benchwatch: error: config: schedule.timezone: Value error, unknown time zone 'Mars/Olympus' "
            "(an IANA name such as UTC or Europe/Berlin)"], command
