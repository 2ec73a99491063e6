"""The bulk write paths (COPY on PostgreSQL, executemany on SQLite) store the same thing, and
the stored per-(track, run) digests keep their layout, so old stores do not turn into conflicts."""

from __future__ import annotations

import hashlib
from array import array

import pytest
from sqlalchemy import select

from service.ingest.documents import parse_document
from service.ingest.normalize import ObservationRow, normalize
from service.store.db import Store
from service.store.ingest_writer import write_document
from service.store.tables import IngestConflict, Observation, Point, Run, Series, ShapeValue, Track
from tests.worlds import WorldSpec, generate_world

TRICKY_ERROR = "OOM\tat shape (2, 4096)\nretry \\N failed; 'quoted' \"too\" \u00e9"


@pytest.fixture(scope="module")
def documents() -> list[tuple[str, dict]]:
    """A nightly, the next nightly with one re-reported value changed, and pretuned oddities."""
    world = generate_world(WorldSpec(seed=5, nightlies=30, with_git=False))
    n = len(world.nights) - 1
    changed = world.dashboard(n)
    changed["summary"][1]["history"][4]["helion_speedup_geomean"] = 123.0
    changed["summary"][2]["history"][3]["triton_speedup_geomean"] = 0  # a failure, not 0
    pre = world.pretuned(n)
    pre["summary"][0]["history"][2]["error"] = TRICKY_ERROR
    pre["summary"][0]["history"][3]["cudagraph"] = None
    return [
        ("dashboard", world.dashboard(n - 1)),
        ("pretuned", pre),
        ("dashboard", changed),
        ("dashboard", world.dashboard(n)),  # the stored values again: nothing new, no conflict
    ]


def _ingest_all(url: str, documents) -> tuple[list[tuple], dict[str, list[tuple]]]:
    import json

    store = Store(url)
    results = []
    try:
        for source, doc in documents:
            with store.session() as s:
                r = write_document(
                    s, normalize(parse_document(source, json.dumps(doc).encode())), location=source
                )
            results.append((r.outcome, r.runs_added, r.points_added, r.shapes_added,
                            sorted(r.conflicts)))
        with store.session() as s:
            tables = {
                "points": s.execute(
                    select(Track.source, Track.kernel, Track.platform_short, Series.metric,
                           Run.run_id, Point.value, Point.failed)
                    .join(Series, Series.id == Point.series_id)
                    .join(Track, Track.id == Series.track_id)
                    .join(Run, Run.id == Point.run_pk)
                ).all(),
                "observations": s.execute(
                    select(Track.source, Track.kernel, Track.platform_short, Run.run_id,
                           Observation.digest, Observation.error, Observation.cudagraph)
                    .join(Track, Track.id == Observation.track_id)
                    .join(Run, Run.id == Observation.run_pk)
                ).all(),
                "shapes": s.execute(
                    select(Track.kernel, Track.platform_short, Run.run_id, ShapeValue.shape_index,
                           ShapeValue.shape, ShapeValue.helion_speedup, ShapeValue.triton_speedup,
                           ShapeValue.torch_compile_speedup, ShapeValue.helion_accuracy,
                           ShapeValue.helion_compile_time_s, ShapeValue.helion_latency_ms)
                    .join(Track, Track.id == ShapeValue.track_id)
                    .join(Run, Run.id == ShapeValue.run_pk)
                ).all(),
                "conflicts": s.execute(select(IngestConflict.detail)).all(),
            }
    finally:
        store.dispose()
    return results, {k: sorted(tuple(r) for r in rows) for k, rows in tables.items()}


def test_postgres_copy_stores_exactly_what_sqlite_stores(sqlite_url, pg_url, documents):
    lite_results, lite = _ingest_all(sqlite_url, documents)
    pg_results, pg = _ingest_all(pg_url, documents)
    assert pg_results == lite_results
    assert [r[0] for r in lite_results[:3]] == ["added", "added", "added"]
    assert len(lite_results[2][4]) == 2  # both changed values reported, not overwritten
    assert lite_results[3] == ("unchanged", 0, 0, 0, [])
    for name in ("points", "observations", "shapes", "conflicts"):
        assert len(pg[name]) == len(lite[name]) > 0, name
        assert pg[name] == lite[name], name
    failed = [p for p in lite["points"] if p[6]]
    assert failed and all(p[5] is None for p in failed)
    assert any(o[5] == TRICKY_ERROR for o in pg["observations"])
    assert any(o[6] is None for o in pg["observations"] if o[0] == "pretuned")


def _reference_digest(obs: ObservationRow) -> str:
    """The layout every stored digest was written with (the original implementation)."""
    keys = sorted(obs.values)
    vals = array("d", [-1.0 if (v := obs.values[k]) is None else v for k in keys])
    h = hashlib.blake2b(vals.tobytes(), digest_size=8)
    h.update("|".join(keys).encode())
    cg = 2 if obs.cudagraph is None else int(obs.cudagraph)
    h.update(b"\0%d%s" % (cg, (obs.error or "").encode()))
    return h.hexdigest()


def test_digest_layout_is_unchanged(documents):
    import json

    seen = 0
    for source, doc in documents[:2]:
        for obs in normalize(parse_document(source, json.dumps(doc).encode())).observations:
            assert obs.digest() == _reference_digest(obs), obs
            seen += 1
    assert seen > 1000
    odd = ObservationRow(("p", "k"), "1", {"b": None, "a": 2.5}, error="x", cudagraph=False)
    assert odd.digest() == _reference_digest(odd)
    assert odd.digest() != ObservationRow(("p", "k"), "1", {"b": None, "a": 2.5}).digest()

