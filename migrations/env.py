"""Alembic environment: runs on the connection benchwatch hands it (see service/store/db.py)."""

from __future__ import annotations

from alembic import context

from service.store.tables import Base

config = context.config
target_metadata = Base.metadata


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from service.config import load_settings
        from service.store.db import make_engine

        engine = config.attributes.get("engine") or make_engine(load_settings().database.url)
        with engine.begin() as conn:
            context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
        return
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


run()
