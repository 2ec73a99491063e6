"""Many processes upgrading a fresh store at once all succeed (the schema is created once)."""

from __future__ import annotations

import multiprocessing

from service.store.db import Store, current_revision, migration_head  # loaded once; forked copies share it


def _upgrade(db_url: str) -> str:
    try:
        store = Store(db_url)  # upgrades on open, as every command does
        rev = current_revision(store.engine) or "none"
        store.dispose()
        return rev
    except Exception as exc:  # noqa: BLE001 - the assertion shows what went wrong
        return f"{exc.__class__.__name__}: {str(exc).splitlines()[0]}"


def test_processes_upgrading_a_fresh_store_together_all_succeed(db_url):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        outcomes = pool.map(_upgrade, [db_url] * 4, chunksize=1)
    head = migration_head()
    assert head is not None and outcomes == [head] * 4, outcomes
