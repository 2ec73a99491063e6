"""Shared fixtures: a fresh store on SQLite and on PostgreSQL, and a CLI runner.

PostgreSQL tests use ``BENCHWATCH_TEST_POSTGRES_URL`` (``.ci/run`` sets it); each test gets a
database of its own. Without the variable they skip with the reason shown, except under CI,
where a missing PostgreSQL is an error.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from service.store.db import Store

PG_URL = os.environ.get("BENCHWATCH_TEST_POSTGRES_URL", "")


def _pg_admin_url() -> str:
    from service.store.db import normalise_url

    return normalise_url(PG_URL)


@pytest.fixture
def pg_url():
    """URL of a brand-new PostgreSQL database, dropped afterwards."""
    if not PG_URL:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but BENCHWATCH_TEST_POSTGRES_URL is not set")
        pytest.skip("PostgreSQL store tests need BENCHWATCH_TEST_POSTGRES_URL (set by .ci/run)")
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
    """The real Helion repository as a bundle, in the shared folder beside the project."""
    from tests.blind_worlds.repo import bundle_path

    return bundle_path()


HELION_BUNDLE = _bundle()


@pytest.fixture(scope="session")
def helion_clone(tmp_path_factory) -> Path:
    """A bare clone of the real Helion repository (from the shared bundle), once per session."""
    import subprocess

    if not HELION_BUNDLE.exists():
        pytest.skip(f"the Helion bundle {HELION_BUNDLE} is not on this machine")
    dest = tmp_path_factory.mktemp("helion-real") / "helion.git"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "clone", "--bare", "-q", str(HELION_BUNDLE), str(dest)], check=True, env=env,
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
