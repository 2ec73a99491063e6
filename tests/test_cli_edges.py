"""The rough edges a new user hits on the command line: a mistyped SQLite path, start-up cost,
`hashpw` and `reopen` as commands, and unknown values answered with the valid ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from service.store.db import Store, migration_head, stored_revision
from service.web.auth import check_credentials
from service.config import WebSettings
from tests.loop_rows import Rows

ROOT = Path(__file__).resolve().parent.parent
BENCHWATCH = Path(sys.executable).parent / "benchwatch"
HEAVY = ("numpy", "ruptures", "sqlalchemy", "alembic", "fastapi", "starlette", "slack_sdk", "httpx",
         "apscheduler", "pydantic", "jinja2", "plotly", "rich")


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


# --- start-up: nothing heavy is imported before a command asks for it ------------------------


def test_importing_the_cli_app_imports_no_heavy_module():
    code = ("import sys, service.cli.main; "
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=60).stdout
    assert out.split() == []


def test_help_imports_no_heavy_module():
    """`benchwatch --help` renders the command list without any of them (plain click help)."""
    code = ("import sys; from service.cli.main import app\n"
            "try: app(['--help'])\nexcept SystemExit: pass\n"
            f"print('LOADED', ' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=60).stdout
    assert "reopen" in out and "hashpw" in out
    assert out.rsplit("LOADED", 1)[1].split() == []


def test_alerts_does_not_import_the_change_point_stack(tmp_path):
    url = f"sqlite:///{tmp_path / 'bw.db'}"
    Store(url).dispose()
    code = ("import sys; from service.cli.main import app\n"
            "try: app(['alerts', '--format', 'json'])\nexcept SystemExit: pass\n"
            "print('LOADED', ' '.join(m for m in ('numpy', 'ruptures', 'fastapi', 'slack_sdk', 'httpx', "
            "'apscheduler', 'alembic') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "BENCHWATCH_DATABASE_URL": url}).stdout
    assert out.startswith("[]") and out.rsplit("LOADED", 1)[1].split() == []


# --- a SQLite path whose folder does not exist ------------------------------------------------


@pytest.mark.parametrize("args", [("status",), ("alerts",), ("ingest", "--dashboard", "nothing.json"),
                                  ("ack", "1")])
def test_missing_sqlite_folder_is_refused_not_created(tmp_path, monkeypatch, args):
    from typer.testing import CliRunner

    from service.cli.main import app

    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", f"sqlite:///{missing / 'bw.db'}")
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 2
    line = _one_line(res.stderr)
    assert f"folder {missing} does not exist" in line and "db upgrade" in line
    assert not missing.exists()


def test_db_upgrade_creates_the_store_and_its_folder(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from service.cli.main import app

    folder = tmp_path / "new" / "var"
    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", f"sqlite:///{folder / 'bw.db'}")
    res = CliRunner().invoke(app, ["db", "upgrade"])
    assert res.exit_code == 0 and f"schema at revision {migration_head()}" in res.stdout
    assert (folder / "bw.db").is_file()
    assert json.loads(CliRunner().invoke(app, ["status", "--format", "json"]).stdout)["runs"] == 0


def test_migration_head_read_from_files_is_alembics(tmp_path):
    from alembic.script import ScriptDirectory

    from service.store.db import alembic_config, make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    assert migration_head() == ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    assert stored_revision(engine) is None  # a new file: Alembic runs
    Store(f"sqlite:///{tmp_path / 'x.db'}").dispose()
    assert stored_revision(engine) == migration_head()


@pytest.mark.parametrize("files, head", [
    ({"a.py": "revision = 'a'\ndown_revision = None\n", "b.py": 'revision: str = "b"\ndown_revision: str | None = "a"\n'}, "b"),
    ({"a.py": "revision = 'a'\ndown_revision = None\n", "b.py": "revision = 'b'\ndown_revision = None\n"}, None),
    ({"a.py": "revision = 'a'\ndown_revision = None\n", "m.py": "revision = 'm'\ndown_revision = ('a', 'x')\n"}, None),
    ({"a.py": "revision = 'a'\ndown_revision = 'gone'\n"}, None),
])
def test_migration_head_is_none_unless_one_plain_chain(tmp_path, monkeypatch, files, head):
    """Anything but one chain (two heads, a merge, a missing parent) leaves the decision to Alembic."""
    (tmp_path / "migrations" / "versions").mkdir(parents=True)
    for name, text in files.items():
        (tmp_path / "migrations" / "versions" / name).write_text(text)
    monkeypatch.setattr("service.store.db.project_root", lambda: tmp_path)
    assert migration_head() == head


# --- hashpw and reopen as commands -------------------------------------------------------------


def test_hashpw_command_works_from_any_folder(tmp_path):
    run = lambda *a, stdin: subprocess.run([str(BENCHWATCH), "hashpw", *a], input=stdin,  # noqa: E731
                                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    res = run("alice", stdin="s3cret-pass\n")
    assert res.returncode == 0, res.stderr
    web = WebSettings(users=json.loads(res.stdout))
    assert check_credentials(web, "alice", "s3cret-pass").ok and not check_credentials(web, "alice", "x").ok
    res = run(stdin="s3cret-pass\n")
    assert res.returncode == 0 and res.stdout.startswith("$2b$")
    res = run("alice", stdin="\n")
    assert res.returncode == 2 and _one_line(res.stderr) == "benchwatch: error: empty password"
    res = run("al ice", stdin="pw\n")
    assert res.returncode == 2 and "name 'al ice' must be 1-64 letters" in _one_line(res.stderr)


def test_reopen_command_records_it_on_the_audit_trail(cli, store):
    rows = Rows(store)
    a = rows.alert("h100", "softmax", 30)
    rows.group([a], 30, "h100")
    assert cli("resolve", str(a), "--by", "alice").exit_code == 0
    res = cli("reopen", str(a), "--by", "bob", "--note", "came back", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "open"
    assert (data["history"][-1]["action"], data["history"][-1]["by"], data["history"][-1]["note"],
            data["history"][-1]["old"], data["history"][-1]["new"]) == (
        "reopened", "bob", "came back", "resolved", "open")
    [listed] = json.loads(cli("alerts", "--format", "json").stdout)  # back in the open queue
    assert listed["id"] == a
    res = cli("dismiss", str(a), "--by", "bob")
    assert res.exit_code == 0 and cli("reopen", str(a), "--by", "bob").exit_code == 0
    res = cli("reopen", str(a), "--by", "bob")  # already open: nothing to reopen, no new entry
    assert res.exit_code == 0
    with store.session() as s:
        from service.store.alert_reads import get_alert

        actions = [h["action"] for h in get_alert(s, a)["history"]]
    assert actions == ["created", "resolved", "reopened", "dismissed", "reopened"]


# --- unknown values name the valid ones --------------------------------------------------------


def test_unknown_command_lists_the_commands(cli):
    res = cli("acknowledge", "3")
    assert res.exit_code == 2
    line = _one_line(res.stderr)
    assert line.startswith("benchwatch: error: unknown command 'acknowledge' (valid: ")
    assert all(c in line for c in ("ack", "reopen", "hashpw", "alerts", "db"))
    res = cli("db", "migrate")
    assert res.exit_code == 2 and _one_line(res.stderr).endswith("unknown command 'migrate' (valid: upgrade)")


@pytest.mark.parametrize("args, expected", [
    (("--status", "closed"), "--status must be one of open, acknowledged, resolved, dismissed, all, not 'closed'"),
    (("--cause", "gremlins"), "--cause must be one of real, method_change, hardware, noise, not 'gremlins'"),
    (("--source", "nightly"), "--source must be one of dashboard, pretuned, not 'nightly'"),
    (("--platform", "a100"), "--platform must be one of b200, h100, not 'a100'"),
    (("--platform", "b200", "--source", "pretuned"), "--platform 'b200': nothing stored yet"),
    (("--kind", "health", "--platform", "a100"), "--platform must be one of b200, h100, not 'a100'"),
    (("--groups", "--platform", "a100"), "--platform must be one of b200, h100, not 'a100'"),
    (("--kind", "heath"), "--kind must be one of move, health, not 'heath'"),
])
def test_alerts_unknown_values_name_the_valid_ones(cli, store, args, expected):
    rows = Rows(store)
    rows.alert("h100", "softmax", 30)
    rows.alert("b200", "gemm", 30)
    res = cli("alerts", *args)
    assert res.exit_code == 2
    assert _one_line(res.stderr) == f"benchwatch: error: {expected}"


def test_investigate_unknown_kernel_or_metric_names_the_valid_ones(cli, store):
    rows = Rows(store)
    rows.alert("h100", "softmax", 30)
    rows.alert("h100", "gemm", 30)
    res = cli("investigate", "--platform", "h100", "--kernel", "sofmax", "--date", "2026-03-30")
    assert res.exit_code == 2
    assert _one_line(res.stderr) == ("benchwatch: error: --kernel must be one of gemm, softmax on h100 "
                                     "(dashboard), not 'sofmax'")
    res = cli("investigate", "--platform", "h100", "--kernel", "gemm", "--metric", "speedup",
              "--date", "2026-03-30")
    assert res.exit_code == 2
    assert _one_line(res.stderr) == ("benchwatch: error: --metric must be one of helion_speedup_geomean "
                                     "on h100 (dashboard), not 'speedup'")
    res = cli("investigate", "--platform", "a100", "--date", "2026-03-30")
    assert res.exit_code == 2 and "(known: h100)" in _one_line(res.stderr)


def test_enum_options_list_their_choices(cli):
    res = cli("status", "--format", "xml")
    assert res.exit_code == 2 and "'xml' is not one of 'table', 'json'" in res.output
