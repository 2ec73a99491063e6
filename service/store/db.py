"""Engine and session set-up, and schema upgrades through Alembic (the only schema author)."""

from __future__ import annotations

import fcntl
import os
import re
from contextlib import contextmanager, nullcontext
from pathlib import Path
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError

from service.config import project_root
from service.errors import BenchwatchError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker


def chunks(items: list, size: int) -> Iterator[list]:
    """Bounded slices of a long list: one statement's parameters stay under the drivers' limits."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def normalise_url(url: str) -> str:
    """Accept `postgresql://` and use the psycopg 3 driver we ship."""
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def make_engine(url: str, *, create: bool = False) -> Engine:
    """An engine for the URL. A SQLite file's folder is made only when ``create`` (`db upgrade`):
    otherwise a mistyped path would quietly become a new, empty store reporting all zeros."""
    url = normalise_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise BenchwatchError("database.url is not a valid SQLAlchemy URL") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            folder = Path(parsed.database).parent
            if create:
                folder.mkdir(parents=True, exist_ok=True)
            elif not folder.is_dir():
                raise BenchwatchError(
                    f"database.url: folder {folder} does not exist (a typo? `benchwatch db upgrade` "
                    "creates a new store)"
                )
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(engine: Engine):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(project_root() / "migrations"))
    cfg.attributes["engine"] = engine
    return cfg


_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(None|['\"]([^'\"]+)['\"])\s*$", re.M)


def migration_head() -> str | None:
    """The newest migration's id, read from the files without Alembic (loading Alembic's script
    directory costs ~0.4 s, most of a quick command). None when the files are not one plain
    chain (a merge, a branch, an unusual layout): the caller then lets Alembic decide."""
    revisions, parents = set(), set()
    for path in (project_root() / "migrations" / "versions").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        rev, down = _REVISION.search(text), _DOWN.search(text)
        if rev is None or down is None:
            return None
        revisions.add(rev.group(1))
        if down.group(2):
            parents.add(down.group(2))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


def stored_revision(engine: Engine) -> str | None:
    """The store's Alembic revision; None when it has none yet (a new store)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


MIGRATION_LOCK_KEY = 0x62656E6368  # PostgreSQL advisory-lock key of schema upgrades ("bench")


@contextmanager
def _sqlite_migration_lock(engine: Engine) -> Iterator[None]:
    """An exclusive ``flock`` on ``<db>.migrate.lock``: SQLite runs DDL outside a transaction,
    so without it two copies upgrading a fresh file both create ``ingest_log``."""
    path = engine.url.database
    if not path or path == ":memory:":
        yield
        return
    try:
        fd = os.open(f"{path}.migrate.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a folder this process may not write: it cannot upgrade the store either
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks: the other copy finishes, this one finds head
        yield
    finally:
        os.close(fd)  # closing drops the lock


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (idempotent, run by every command).

    A store already at the newest revision costs one query. Otherwise copies started together
    (the scheduler and a CLI call, several containers) upgrade one after another: a
    transaction-level advisory lock on PostgreSQL, a lock file on SQLite. The later ones then
    find the schema at head and do nothing. On SQLite the lock file covers the check too: a
    process's first connection switches the file to WAL, and that switch, met while another
    copy is creating the file, fails at once ("database is locked") instead of waiting.
    """
    lock = _sqlite_migration_lock(engine) if engine.dialect.name == "sqlite" else nullcontext()
    try:
        with lock:
            head = migration_head()
            if head is not None and stored_revision(engine) == head:
                return
            from alembic import command

            with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
                cfg = alembic_config(engine)
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
    except OperationalError as exc:
        raise _unreachable(exc) from None


def _unreachable(exc: OperationalError) -> BenchwatchError:
    return BenchwatchError(
        f"database unreachable: {exc.orig.__class__.__name__}: {str(exc.orig).splitlines()[0]}",
        exit_code=1,
    )


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


class Store:
    """An engine plus a session factory; what every command opens once."""

    def __init__(self, url: str, *, auto_upgrade: bool = True, create: bool = False) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url, create=create)
        if auto_upgrade:
            upgrade(self.engine)

    @cached_property
    def sessions(self) -> "sessionmaker[Session]":
        """The session factory, made on first use: the ORM's import is a third of a command's
        start-up, and `status` and the `alerts` table read through Core only."""
        from sqlalchemy.orm import sessionmaker

        return sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.sessions() as s:
            with s.begin():
                yield s

    def dispose(self) -> None:
        self.engine.dispose()
