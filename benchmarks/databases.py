"""Throw-away stores for benchmarks: SQLite files in a temporary folder and, given a server URL,
brand-new PostgreSQL databases (dropped on close), so no run sees another's rows."""

from __future__ import annotations

import tempfile
import uuid

from sqlalchemy import create_engine, text

from service.store.db import Store, normalise_url


class Databases:
    """Fresh SQLite files and (when a server URL is given) fresh PostgreSQL databases."""

    def __init__(self, pg_url: str | None) -> None:
        self.pg_url = normalise_url(pg_url) if pg_url else None
        self.tmp = tempfile.TemporaryDirectory()
        self.created: list[str] = []

    def new_url(self, kind: str) -> str:
        """The URL of a fresh, empty database of this kind."""
        if kind == "sqlite":
            return f"sqlite:///{self.tmp.name}/{uuid.uuid4().hex}.db"
        name = f"bw_bench_{uuid.uuid4().hex[:10]}"
        admin = create_engine(self.pg_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        self.created.append(name)
        return self.pg_url.rsplit("/", 1)[0] + "/" + name

    def new(self, kind: str) -> Store:
        return Store(self.new_url(kind))

    def close(self) -> None:
        if self.created:
            admin = create_engine(self.pg_url, isolation_level="AUTOCOMMIT")
            with admin.connect() as c:
                for name in self.created:
                    c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
        self.tmp.cleanup()
