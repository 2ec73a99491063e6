"""The schema comes only from Alembic, matches the ORM models, and upgrades idempotently."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from service.store.db import Store, alembic_config, current_revision, upgrade
from service.store.tables import Base


def test_upgrade_creates_schema_matching_models(db_url):
    store = Store(db_url)
    try:
        head = ScriptDirectory.from_config(alembic_config(store.engine)).get_current_head()
        assert current_revision(store.engine) == head
        with store.engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diffs == [], f"models and migrations disagree: {diffs[:3]}"
        upgrade(store.engine)  # second time is a no-op
        assert current_revision(store.engine) == head
        assert {"runs", "points", "alerts", "outbox"} <= set(inspect(store.engine).get_table_names())
    finally:
        store.dispose()


def test_indexes_fit_the_reads(db_url):
    store = Store(db_url)
    try:
        insp = inspect(store.engine)
        point_indexes = {tuple(ix["column_names"]) for ix in insp.get_indexes("points")}
        assert ("run_pk", "series_id") in point_indexes  # all series of one run
        pk = insp.get_pk_constraint("points")["constrained_columns"]
        assert pk[0] == "series_id"  # one series' history is a PK range scan
        run_indexes = {tuple(ix["column_names"]) for ix in insp.get_indexes("runs")}
        assert ("source", "date") in run_indexes  # history in date order
    finally:
        store.dispose()
