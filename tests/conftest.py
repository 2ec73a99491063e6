"""Shared fixtures: a fresh store on SQLite and on PostgreSQL, and a CLI runner; and the run's
last line, which says what was skipped and why.

PostgreSQL tests use ``BENCHWATCH_TEST_POSTGRES_URL``, or else a local server at
``LOCAL_PG_URL`` when one answers (so `make test` on a machine with PostgreSQL running tests
it); each test gets a database of its own. Without either they skip with the reason shown.
Under ``CI=true`` nothing may be skipped: any skip fails the run (``.ci/run`` starts
PostgreSQL and installs Chromium first).
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from service.store.db import Store

LOCAL_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
CI = os.environ.get("CI") == "true"


def _local_postgres() -> str:
    """LOCAL_PG_URL when a server answers there within a second, else ""."""
    import psycopg

    try:
        psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", connect_timeout=1).close()
    except psycopg.Error:
        return ""
    return LOCAL_PG_URL


PG_URL = os.environ.get("BENCHWATCH_TEST_POSTGRES_URL", "") or _local_postgres()
PG_SKIP = ("PostgreSQL store tests need BENCHWATCH_TEST_POSTGRES_URL or a server answering at "
           "127.0.0.1:5432 (user postgres, database test)")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def skip_summary(reports) -> str:
    """One line: how many tests were skipped, grouped by reason, most common first."""
    reasons = Counter(_skip_reason(r) for r in reports)
    if not reasons:
        return "skipped: none"
    parts = "; ".join(f"{n} because {reason}" for reason, n in reasons.most_common())
    return f"skipped {sum(reasons.values())}: {parts}"


def pytest_sessionfinish(session, exitstatus) -> None:
    """Under CI a skipped test is a missing prerequisite: the run fails."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if CI and reporter is not None and reporter.stats.get("skipped") and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config) -> None:
    """The very last line of the run (after pytest's counts): what was skipped and why."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):  # xdist workers report to the controller
        return
    line = skip_summary(reporter.stats.get("skipped", []))
    if CI and reporter.stats.get("skipped"):
        line += " (CI=true: a skip fails the run)"
    reporter.write_line(line, yellow=bool(reporter.stats.get("skipped")), bold=True)


def _pg_admin_url() -> str:
    from service.store.db import normalise_url

    return normalise_url(PG_URL)


@pytest.fixture
def pg_url():
    """URL of a brand-new PostgreSQL database, dropped afterwards."""
    if not PG_URL:
        if CI:
            pytest.fail(f"CI=true but no PostgreSQL: {PG_SKIP}")
        pytest.skip(PG_SKIP)
    admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    name = f"bw_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(_pg_admin_url()).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :n AND pid <> pg_backend_pid()"
                ),
                {"n": name},
            )
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'bw.db'}"


@pytest.fixture
def lite(sqlite_url):
    """SQLite only: for logic that does not depend on the database (PostgreSQL setup costs ~2 s)."""
    st = Store(sqlite_url)
    yield st
    st.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path: Path) -> str:
    """Run the test once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bw.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(db_url: str):
    s = Store(db_url)
    yield s
    s.dispose()


@pytest.fixture
def cli(db_url: str, monkeypatch):
    """Invoke the real typer app in-process against the test database."""
    from typer.testing import CliRunner

    from service.cli.main import app

    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", db_url)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    return invoke


def _bundle() -> Path:
    """The real Helion repository as a bundle, in the shared folder (`tests/shared_data.py` says
    where; imported here, not at the top, so this conftest also runs alone in a scratch session)."""
    from tests.shared_data import bundle_path

    return bundle_path()


@pytest.fixture(scope="session")
def helion_clone(tmp_path_factory) -> Path:
    """A bare clone of the real Helion repository (from the shared bundle), once per session."""
    import subprocess

    bundle = _bundle()
    if not bundle.exists():
        pytest.skip(f"the Helion bundle {bundle} is not on this machine")
    dest = tmp_path_factory.mktemp("helion-real") / "helion.git"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "clone", "--bare", "-q", str(bundle), str(dest)], check=True, env=env,
                   capture_output=True)
    return dest


_SESSION_START = [0.0]


def pytest_sessionstart(session):
    import time

    _SESSION_START[0] = time.time()


def pytest_terminal_summary(terminalreporter):
    """The live deployment test's wall time per step (tests/test_deploy_live.py writes it)."""
    timings = Path(__file__).resolve().parent.parent / "var" / "deploy-live.json"
    if timings.exists() and timings.stat().st_mtime >= _SESSION_START[0]:
        terminalreporter.write_line("live deployment test, seconds per step: " + " ".join(timings.read_text().split()))
