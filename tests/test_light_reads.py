"""store/light_reads.py (the Core reads behind `benchwatch status` and the `alerts` table) names
only tables and columns that exist with the same types, and answers exactly as the ORM reads do
(`status.store_status`, `alert_reads.list_alerts`, `choices.platforms`) on SQLite and PostgreSQL,
so the faster path can never show a person something the web or the JSON does not."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from service.health.records import Finding
from service.store import choices, health_writer, ingest_writer, light_reads, outbox
from service.store.alert_reads import list_alerts
from service.store.db import Store
from service.store.status import store_status
from service.store.tables import Alert, Base, IngestConflict, IngestLog, Observation, OutboxMessage, Run, Track
from tests.web_world import T0, build_world, full_sha

ROOT = Path(__file__).resolve().parent.parent
NOW = T0 + timedelta(days=40)


def test_every_table_and_column_named_exists_with_its_type():
    for light in light_reads.TABLES:
        mapped = Base.metadata.tables[light.name]
        for col in light.columns:
            assert col.name in mapped.c, f"{light.name}.{col.name}"
            assert type(mapped.c[col.name].type) is type(col.type), f"{light.name}.{col.name}"


def test_stored_words_are_the_writers_words():
    assert light_reads.INGEST_FAILED == ingest_writer.FAILED
    assert (light_reads.OUTBOX_PENDING, light_reads.OUTBOX_DEAD) == (outbox.PENDING, outbox.DEAD)
    for source in ("dashboard", "pretuned"):
        assert light_reads.FETCH_KEY.format(source=source) == health_writer._fetch_key(source)


@pytest.fixture
def world(store):
    """The web tests' world plus what `status` reports beyond it: a pretuned run and track, a
    failed ingest after a good one, a conflict, outbox rows, an open health alert, failed fetches
    and a human re-classification (the cause filter reads the effective cause)."""
    w = build_world(store, nights=30)
    with store.session() as s:
        run = Run(source="pretuned", run_id="p1", sha=full_sha(7)[:8], full_sha=full_sha(7), date=NOW,
                  branch="main", is_nightly=True, is_trend=True)
        track = Track(source="pretuned", platform_short="b200", platform="NVIDIA B200", kernel="gemm")
        s.add_all([run, track])
        s.flush()
        s.add(Observation(track_id=track.id, run_pk=run.id, digest="d"))
        good = IngestLog(source="pretuned", location="p.json", started_at=NOW, finished_at=NOW, outcome="added")
        s.add(good)
        s.flush()
        s.add(IngestConflict(ingest_id=good.id, run_pk=run.id, track_id=track.id, detail="p1 gemm geomean"))
        s.add(IngestLog(source="pretuned", location="p.json", started_at=NOW + timedelta(hours=1),
                        finished_at=NOW + timedelta(hours=1), outcome=ingest_writer.FAILED,
                        message="pretuned: not JSON"))
        for i, state in enumerate((outbox.PENDING, outbox.PENDING, outbox.DEAD, outbox.SENT)):
            s.add(OutboxMessage(kind="post", key=f"k{i}", payload={}, state=state, created_at=NOW))
        health_writer.reconcile(s, "dashboard", [Finding("platform_outage", "dashboard", "no h100 results",
                                                         platform_short="h100")],
                                day_of={"platform_outage": f"{NOW:%Y-%m-%d}"}, run_pk=w.runs[-1], now=NOW)
        for _ in range(2):
            health_writer.note_fetch(s, "dashboard", NOW, "timed out")
    with store.session() as s:
        s.get(Alert, w.alerts["method"]).human_cause = "real"
        s.get(Alert, w.alerts["gemm"]).human_cause = ""  # an empty verdict is no verdict
    return w


def test_status_reads_what_the_orm_reads(store, world):
    with store.session() as s:
        expected = store_status(s)
    with store.engine.connect() as conn:
        got = light_reads.store_status(conn)
    assert list(got.items()) == list(expected.items())  # same keys, same order (the table's rows)
    # the world is not trivially empty: every part of the reading is exercised
    assert got["outbox_pending"] == 2 and got["outbox_dead"] == 1 and got["health_alerts_open"] == 1
    assert got["last_ingest_pretuned_error"] == "pretuned: not JSON" and got["conflicts"] == 1
    assert got["fetch_failures_dashboard"] == 2 and got["newest_pretuned_b200_at"] is not None


def _commit(c: dict | None) -> dict | None:
    return c and {"sha": c["sha"], "subject": c["subject"]}


def _table_fields(a: dict) -> dict:
    """The part of an alert's JSON the `alerts` table shows."""
    keys = ("id", "group_id", "state", "status", "cause", "kind", "direction", "change_pct", "source",
            "platform_short", "kernel", "metric")
    return {**{k: a[k] for k in keys}, "first_bad": {"sha": a["first_bad"]["sha"], "date": a["first_bad"]["date"]},
            "culprit": _commit(a["culprit"]), "change_commit": _commit(a["change_commit"])}


@pytest.mark.parametrize("filters", [
    {}, {"status": "all"}, {"status": "resolved"}, {"platform": "b200"}, {"cause": "real"},
    {"cause": "method_change", "status": "all"}, {"source": "pretuned"}, {"platform": "h100", "cause": "hardware"},
])
def test_alert_rows_are_list_alerts_rows(store, world, filters):
    with store.session() as s:
        expected = list_alerts(s, **filters)
    with store.engine.connect() as conn:
        got = light_reads.alert_rows(conn, **filters)
    assert got == [_table_fields(a) for a in expected]
    if filters.get("cause") == "real":  # the human's verdict moved the method alert in, not "" out
        assert {world.alerts["method"], world.alerts["gemm"]} <= {a["id"] for a in got}


def test_platforms_are_the_stored_platforms(store, world):
    with store.session() as s, store.engine.connect() as conn:
        for source in (None, "dashboard", "pretuned"):
            assert light_reads.platforms(conn, source) == choices.platforms(s, source)
        assert light_reads.platforms(conn, "pretuned") == ["b200"]


@pytest.mark.parametrize("args", [("status",), ("alerts",), ("alerts", "--status", "all", "--cause", "real")])
def test_status_and_the_alerts_table_import_no_mapped_class(tmp_path, args):
    """What keeps them quick (no timing here: benchmarks/cli_startup.py measures)."""
    url = f"sqlite:///{tmp_path / 'bw.db'}"
    Store(url).dispose()
    code = ("import sys; from service.cli.main import app\n"
            f"try: app({list(args)!r})\nexcept SystemExit: pass\n"
            "print('LOADED', ' '.join(m for m in ('service.store.tables', 'numpy', 'httpx', 'alembic') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "BENCHWATCH_DATABASE_URL": url}).stdout
    assert out.rsplit("LOADED", 1)[1].split() == []
