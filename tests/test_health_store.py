"""Migration 0003 on a store that already has data, and what ingest keeps for the health checks."""

from __future__ import annotations

from alembic import command
from sqlalchemy import select, text

from service.store.db import Store, alembic_config, make_engine, upgrade
from service.store.tables import AlertGroup, TrackFlags


def test_upgrade_from_0001_keeps_groups_and_marks_them_moves(db_url):
    engine = make_engine(db_url)
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (id, source, run_id, sha, full_sha, date, branch, is_nightly, is_trend) "
                          "VALUES (1, 'dashboard', '1', 'aaaaaaaa', :f, '2026-03-01 08:00:00', 'main', true, true)"),
                     {"f": "a" * 40})
        conn.execute(text("INSERT INTO alert_groups (id, source, first_bad_run_pk, platform_short, cause, confidence, "
                          "evidence, state, revision, created_at, updated_at) VALUES (1, 'dashboard', 1, 'h100', "
                          "'real', 0.9, '[]', 'confirmed', 2, '2026-03-01 09:00:00', '2026-03-01 09:00:00')"))
    upgrade(engine)
    engine.dispose()
    store = Store(db_url)
    try:
        with store.session() as s:
            (g,) = s.scalars(select(AlertGroup)).all()
            assert (g.kind, g.health_key, g.revision, g.cause) == ("move", None, 2, "real")
    finally:
        store.dispose()


def test_ingest_keeps_the_summary_flags_of_the_newest_nightly(lite):
    from service.ingest.documents import parse_document
    from service.ingest.normalize import normalize
    from service.store.ingest_writer import write_document
    from tests.health_world import Faults, HealthWorld

    world = HealthWorld(nights=2, faults={1: Faults(accuracy={("h100", "gemm"): ["(1024, 1024)"]},
                                                     infra_missing={("b200", "sum")})})
    for n in range(2):
        with lite.session() as s:
            write_document(s, normalize(parse_document("dashboard", world.dashboard_bytes(n))), location="t")
    with lite.session() as s:
        flags = s.scalars(select(TrackFlags)).all()
    assert [f.accuracy_failures for f in flags] == [["(1024, 1024)"]]
