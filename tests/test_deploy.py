"""The container set-up, checked without a Docker engine: the Dockerfile and compose file read
statically (YAML parses, env keys are real settings, commands are real CLI invocations, ports
and healthchecks agree with the app), then the container's exact command run here against the
local PostgreSQL: entrypoint, migrations on start, /healthz, clean stop on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from sqlalchemy import create_engine, inspect
from typer.testing import CliRunner

from service.cli.main import app as cli_app
from service.config import Settings, WebSettings
from tests.net import free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV_KEY = re.compile(r"^#?\s*(BENCHWATCH_[A-Z0-9_]+)=(.*)$")


# --- reading the files -------------------------------------------------------------------------


def dockerfile() -> dict:
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n\s*", " ", text)  # fold continuation lines
    lines = [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    out: dict = {"text": joined, "ENV": {}}
    for ln in lines:
        op, _, rest = ln.partition(" ")
        op = op.upper()
        if op == "ENV":
            out["ENV"].update(dict(kv.split("=", 1) for kv in shlex.split(rest)))
        elif op in ("CMD", "EXPOSE", "USER", "FROM", "HEALTHCHECK", "WORKDIR"):
            out[op] = rest
    out["RUN"] = [ln[4:] for ln in lines if ln.upper().startswith("RUN ")]
    return out


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def env_example() -> dict[str, tuple[str, bool]]:
    """BENCHWATCH_* keys of .env.example -> (value, set); commented lines document defaults."""
    keys: dict[str, tuple[str, bool]] = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        m = ENV_KEY.match(line.strip())
        if m:
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            keys[m.group(1)] = (value, not line.lstrip().startswith("#"))
    return keys


def setting_for(env_name: str) -> tuple[str, str]:
    """BENCHWATCH_<SECTION>_<KEY> -> (section, key), as pydantic-settings splits it (once)."""
    rest = env_name.removeprefix("BENCHWATCH_").lower()
    section, _, key = rest.partition("_")
    return section, key


# triage tuning knobs: explained (and their defaults written) once, in config/default.toml; a deployment
# overrides them with a --config file or BENCHWATCH_DETECT_<KEY> like any setting, but the example
# env file does not repeat them
TUNING = ("detect", "classify")


def all_settings() -> set[tuple[str, str]]:
    out = set()
    for section, field in Settings.model_fields.items():
        if section in TUNING:
            continue
        fields = getattr(field.annotation, "model_fields", None)
        for key in fields or ():
            out.add((section, key))
    return out


def cli_accepts(argv: list[str]) -> None:
    """The argv parses as a benchwatch invocation (options checked, nothing run)."""
    assert argv[0] == "benchwatch"
    result = CliRunner().invoke(cli_app, argv[1:] + ["--help"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Usage: benchwatch " + argv[1] in result.output.replace("\n", " ") or argv[1] in result.output


# --- static checks -----------------------------------------------------------------------------


def test_dockerfile_slim_nonroot_git_installed_serve_and_healthcheck():
    d = dockerfile()
    assert re.fullmatch(r"python:3\.1[1-9][\w.-]*-slim[\w.-]*", d["FROM"]), d["FROM"]
    assert d["USER"] not in ("root", "0") and "useradd" in " ".join(d["RUN"])
    assert any(re.search(r"apt-get install .*\bgit\b", r) for r in d["RUN"])
    assert any(re.search(r"pip install \.(\s|$)", r) for r in d["RUN"])
    cmd = json.loads(d["CMD"])
    assert cmd == ["benchwatch", "serve", "--host", "0.0.0.0"]
    cli_accepts(cmd)
    port = str(WebSettings().port)
    assert d["EXPOSE"] == port == d["ENV"]["BENCHWATCH_WEB_PORT"]
    assert "/healthz" in d["HEALTHCHECK"] and "BENCHWATCH_WEB_PORT" in d["HEALTHCHECK"]
    for key in d["ENV"]:
        if key.startswith("BENCHWATCH_") and key != "BENCHWATCH_HOME":
            assert setting_for(key) in all_settings(), key
    # the clone volume is where the image points benchwatch at it
    assert d["ENV"]["BENCHWATCH_HELION_REPO"] == "/srv/helion" and "safe.directory /srv/helion" in d["text"]


def test_compose_postgres_and_benchwatch_wired_together():
    c = compose()
    pg, bw = c["services"]["postgres"], c["services"]["benchwatch"]
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    pg_volume = pg["volumes"][0].split(":")[0]
    assert pg_volume in c["volumes"] and pg["volumes"][0].endswith(":/var/lib/postgresql/data")
    assert bw["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert bw["restart"] == "unless-stopped" and pg["restart"] == "unless-stopped"
    assert bw["env_file"] == ".env"
    cli_accepts(bw["command"])
    assert bw["command"] == json.loads(dockerfile()["CMD"])
    env = bw["environment"]
    for key in env:
        assert setting_for(key) in all_settings(), key
    assert env["BENCHWATCH_DATABASE_URL"].startswith("postgresql+psycopg://") and "@postgres:5432/" in env["BENCHWATCH_DATABASE_URL"]
    # the Helion clone lives on a named volume at the path benchwatch reads
    helion = [v for v in bw["volumes"] if v.split(":")[1] == env["BENCHWATCH_HELION_REPO"]]
    assert helion and helion[0].split(":")[0] in c["volumes"]
    clone = c["services"]["helion-clone"]
    assert bw["depends_on"]["helion-clone"]["condition"] == "service_completed_successfully"
    assert clone["volumes"] == helion
    # ports: published -> the port the app listens on -> the port the healthcheck asks
    container_port = bw["ports"][0].rsplit(":", 1)[1]
    assert container_port == env["BENCHWATCH_WEB_PORT"] == dockerfile()["EXPOSE"]
    check = " ".join(bw["healthcheck"]["test"])
    assert f"http://127.0.0.1:{container_port}/healthz" in check
    assert bw["ports"][0].startswith("${PUBLISH_WEB:-127.0.0.1:")  # loopback unless configured


def test_env_example_explains_every_setting_and_nothing_else():
    keys = env_example()
    mapped = {setting_for(k) for k in keys}
    unknown = [k for k in keys if setting_for(k) not in all_settings()]
    assert unknown == []
    missing = sorted(f"{s}.{k}" for s, k in all_settings() - mapped)
    assert missing == [], f".env.example lacks {missing}"
    # every key has a comment line right above its block, and secrets are blank in the example
    text = (ROOT / ".env.example").read_text()
    for secret in ("BENCHWATCH_SLACK_TOKEN", "BENCHWATCH_WEB_SECRET_KEY", "BENCHWATCH_WEB_TEAM_TOKEN"):
        assert keys[secret] == ("", True), secret
    assert "POSTGRES_PASSWORD=" in text
    # the set lines, plus the documented defaults, load as settings
    set_lines = {k: v for k, (v, on) in keys.items() if on}
    defaults = {k: v for k, (v, on) in keys.items() if not on and k != "BENCHWATCH_DATABASE_URL"}
    for env in (set_lines, {**set_lines, **defaults}):
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            from service.config import load_settings

            s = load_settings()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    assert s.web.host == "0.0.0.0" and s.helion.repo == "/srv/helion"
    assert s.schedule.cron == "0,30 9-12 * * *" and s.notify.digest_cron == "0 14 * * *"


def test_hashpw_prints_a_hash_the_app_accepts():
    out = subprocess.run([sys.executable, "-m", "service.web.hashpw", "alice"], input="s3cret-pass\n",
                         capture_output=True, text=True, cwd=ROOT, timeout=30, check=True).stdout
    users = json.loads(out)
    from service.web.auth import check_credentials

    web = WebSettings(users=users)
    assert check_credentials(web, "alice", "s3cret-pass").ok and not check_credentials(web, "alice", "x").ok


# --- the container's command, outside the container ---------------------------------------------


def test_container_command_migrates_serves_healthz_and_stops(pg_url, tmp_path):
    d = dockerfile()
    argv = json.loads(d["CMD"])
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWATCH_")}
    env.update({k: v for k, v in d["ENV"].items() if k.startswith("BENCHWATCH_") and k != "BENCHWATCH_HOME"})
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        BENCHWATCH_DATABASE_URL=pg_url,
        BENCHWATCH_WEB_PORT=str(port),
        BENCHWATCH_HELION_REPO=str(tmp_path / "helion"),
        # nothing may reach outside: local sources, a schedule that will not fire during the test
        BENCHWATCH_SOURCES_DASHBOARD=str(tmp_path / "dashboard-data.json"),
        BENCHWATCH_SOURCES_PRETUNED=str(tmp_path / "pretuned-dashboard-data.json"),
        BENCHWATCH_SCHEDULE_CRON="0 0 1 1 *",
        BENCHWATCH_SCHEDULE_EXTRA_CRON="",
        BENCHWATCH_WEB_SECRET_KEY="deploy-test-secret-9c1",
        BENCHWATCH_WEB_TEAM_TOKEN="deploy-test-token-4d2",
    )
    assert not inspect(create_engine(pg_url)).has_table("runs")
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        status = wait_healthy(f"http://127.0.0.1:{port}/healthz", proc)
        assert status == 200, f"no healthy answer; exit={proc.poll()}"
        engine = create_engine(pg_url)
        try:
            assert inspect(engine).has_table("alembic_version") and inspect(engine).has_table("alerts")
        finally:
            engine.dispose()
        # the image's own HEALTHCHECK command, run as the container would
        check = d["HEALTHCHECK"].split(" CMD ", 1)[1]
        check = re.sub(r"^python\b", shlex.quote(sys.executable), check)
        assert subprocess.run(["sh", "-c", check], env=env, timeout=20).returncode == 0
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=45)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            pytest.fail("serve did not stop on SIGTERM")
    assert proc.returncode == 0, out[-2000:]
    assert "deploy-test-secret-9c1" not in out and "deploy-test-token-4d2" not in out
