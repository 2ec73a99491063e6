"""Ingest end to end through the CLI: idempotent, incremental, and all-or-nothing on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from service.store.db import Store
from service.store.tables import Point, Run, Series, ShapeValue, Track
from tests.worlds import WorldSpec, generate_world


@pytest.fixture(scope="module")
def world():
    return generate_world(WorldSpec(seed=11, nightlies=40, with_git=False))


def _write(tmp_path: Path, name: str, data) -> str:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(p)


def _status(cli) -> dict:
    res = cli("status", "--format", "json")
    assert res.exit_code == 0, res.output
    return {k: v for k, v in json.loads(res.stdout).items() if not k.endswith("_at")}


def test_ingest_twice_changes_nothing(cli, world, tmp_path):
    n = len(world.nights) - 1
    d = _write(tmp_path, "d.json", world.dashboard_bytes(n))
    p = _write(tmp_path, "p.json", world.pretuned_bytes(n))
    first = cli("ingest", "--dashboard", d, "--pretuned", p)
    assert first.exit_code == 0, first.output
    after_first = _status(cli)
    assert after_first["runs_dashboard"] >= len(world.nights)
    assert after_first["points"] > 1000 and after_first["shape_rows"] > 0
    again = cli("ingest", "--dashboard", d, "--pretuned", p)
    assert again.exit_code == 0
    assert again.stdout.count("not modified") == 2  # same bytes: not even parsed
    assert _status(cli) == after_first
    # the same content under another name is parsed and compared run by run: nothing new
    d2 = _write(tmp_path, "d2.json", world.dashboard_bytes(n))
    third = cli("ingest", "--dashboard", d2)
    assert third.exit_code == 0
    assert "0 new runs, 0 points" in third.stdout
    assert _status(cli) == after_first


def test_incremental_nightly_adds_only_the_new_run(cli, world, tmp_path, db_url):
    n = len(world.nights) - 1
    cli("ingest", "--dashboard", _write(tmp_path, "a.json", world.dashboard_bytes(n - 1)))
    before = _status(cli)
    res = cli("ingest", "--dashboard", _write(tmp_path, "b.json", world.dashboard_bytes(n)))
    assert res.exit_code == 0, res.output
    after = _status(cli)
    doc_n = world.dashboard(n)
    doc_prev = world.dashboard(n - 1)
    new_runs = {r["run_id"] for r in doc_n["runs"]} - {r["run_id"] for r in doc_prev["runs"]}
    assert after["runs_dashboard"] - before["runs_dashboard"] == len(new_runs) >= 1
    # per-shape rows of the previous latest nightly are kept although the new file strips them
    store = Store(db_url)
    with store.session() as s:
        runs_with_shapes = set(s.scalars(select(ShapeValue.run_pk).distinct()))
    store.dispose()
    assert len(runs_with_shapes) == 2
    assert after["shape_rows"] > before["shape_rows"]


def test_failures_stored_as_failures_not_zero(cli, world, tmp_path, db_url):
    n = len(world.nights) - 1
    doc = world.dashboard(n)
    item = doc["summary"][0]
    item["history"][3]["helion_speedup_geomean"] = 0
    item["history"][3]["helion_latency_avg_ms"] = 0.0
    res = cli("ingest", "--dashboard", _write(tmp_path, "d.json", doc))
    assert res.exit_code == 0, res.output
    store = Store(db_url)
    with store.session() as s:
        rows = s.execute(
            select(Series.metric, Point.value, Point.failed)
            .join(Point, Point.series_id == Series.id)
            .join(Track, Track.id == Series.track_id)
            .join(Run, Run.id == Point.run_pk)
            .where(
                Track.kernel == item["kernel"],
                Track.platform_short == item["platform_short"],
                Run.run_id == str(item["history"][3]["run_id"]),
                Series.metric.in_(["helion_speedup_geomean", "helion_latency_avg_ms"]),
            )
        ).all()
        zeros = s.scalar(select(Point.value).where(Point.value == 0).limit(1))
    store.dispose()
    assert sorted(rows) == [("helion_latency_avg_ms", None, True), ("helion_speedup_geomean", None, True)]
    assert zeros is None


def test_manual_and_side_branch_runs_are_stored_but_marked(cli, world, tmp_path, db_url):
    n = len(world.nights) - 1
    doc = world.dashboard(n)
    cli("ingest", "--dashboard", _write(tmp_path, "d.json", doc))
    expected_non_trend = {
        r["run_id"] for r in doc["runs"] if not (r["is_nightly"] and r["branch"] == "main")
    }
    store = Store(db_url)
    with store.session() as s:
        marked = set(s.scalars(select(Run.run_id).where(Run.source == "dashboard", ~Run.is_trend)))
    store.dispose()
    assert expected_non_trend, "the generated world should contain manual or side-branch runs"
    assert expected_non_trend <= marked


def test_changed_value_is_reported_not_overwritten(cli, world, tmp_path, db_url):
    n = len(world.nights) - 1
    doc = world.dashboard(n)
    cli("ingest", "--dashboard", _write(tmp_path, "d.json", doc))
    entry = doc["summary"][1]["history"][5]
    original = entry["helion_speedup_geomean"]
    entry["helion_speedup_geomean"] = round(original * 1.5 + 0.1, 4)
    res = cli("ingest", "--dashboard", _write(tmp_path, "e.json", doc))
    assert res.exit_code == 0
    assert "conflicting" in res.stdout
    assert _status(cli)["conflicts"] == 1
    store = Store(db_url)
    with store.session() as s:
        value = s.scalar(
            select(Point.value)
            .join(Series, Series.id == Point.series_id)
            .join(Track, Track.id == Series.track_id)
            .join(Run, Run.id == Point.run_pk)
            .where(
                Track.kernel == doc["summary"][1]["kernel"],
                Track.platform_short == doc["summary"][1]["platform_short"],
                Series.metric == "helion_speedup_geomean",
                Run.run_id == str(entry["run_id"]),
            )
        )
    store.dispose()
    assert value == pytest.approx(original)


def _corruptions(doc: dict) -> list[tuple[str, object, str]]:
    """(name, bad document or bytes, text the error must contain)."""
    import copy

    raw = json.dumps(doc).encode()
    out: list[tuple[str, object, str]] = [
        ("not json", b"<html>502 Bad Gateway</html>", "not valid JSON"),
        ("truncated", raw[: len(raw) // 2], "not valid JSON"),
        ("empty", b"", "not valid JSON"),
        ("a list", b"[1, 2]", "(document)"),
    ]
    d = copy.deepcopy(doc)
    d["summary"] = {"not": "a list"}
    out.append(("summary not a list", d, "summary"))
    d = copy.deepcopy(doc)
    d["summary"][2]["history"][4]["helion_speedup_geomean"] = -1.5
    out.append(("negative speedup", d, "summary[2].history[4].helion_speedup_geomean"))
    d = copy.deepcopy(doc)
    d["summary"][0]["history"][1]["sha"] = "zz12XY!!"
    out.append(("sha not hex", d, "summary[0].history[1].sha"))
    d = copy.deepcopy(doc)
    d["summary"][0]["history"][2]["date"] = "yesterday-ish"
    out.append(("bad date", d, "summary[0].history[2].date"))
    d = copy.deepcopy(doc)
    d["runs"][0]["full_sha"] = "0" * 40
    out.append(("sha/full_sha mismatch", d, "runs[0]"))
    d = copy.deepcopy(doc)
    del d["summary"][3]["kernel"]
    out.append(("missing kernel", d, "summary[3].kernel"))
    d = copy.deepcopy(doc)
    d["summary"][0]["history"][0]["run_id"] = "12ab"
    out.append(("run_id not digits", d, "summary[0].history[0].run_id"))
    return out


def test_bad_documents_are_refused_and_store_unchanged(cli, world, tmp_path):
    n = len(world.nights) - 1
    good = world.dashboard(n - 3)
    cli("ingest", "--dashboard", _write(tmp_path, "good.json", good))
    before = _status(cli)
    for i, (name, bad, needle) in enumerate(_corruptions(world.dashboard(n))):
        res = cli("ingest", "--dashboard", _write(tmp_path, f"bad{i}.json", bad))
        assert res.exit_code == 2, (name, res.output)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, (name, res.stderr)
        assert needle in lines[0], (name, lines[0])
        assert _status(cli) == before, name


def test_unknown_fields_are_accepted(cli, world, tmp_path, db_url):
    doc = world.dashboard(5)
    doc["brand_new_top_level"] = {"x": 1}
    doc["summary"][0]["new_field"] = [1, 2]
    doc["summary"][0]["history"][0]["another"] = "y"
    res = cli("ingest", "--dashboard", _write(tmp_path, "d.json", doc))
    assert res.exit_code == 0, res.output
    # the document is stored whole: every track and run, the one with extra fields included
    store = Store(db_url)
    with store.session() as s:
        tracks = set(s.execute(select(Track.platform_short, Track.kernel).where(Track.source == "dashboard")))
        runs = set(s.scalars(select(Run.run_id).where(Run.source == "dashboard")))
    store.dispose()
    assert tracks == {(r["platform_short"], r["kernel"]) for r in doc["summary"]}
    assert runs >= {r["run_id"] for r in doc["runs"]}


def test_a_short_per_shape_column_is_dropped_not_the_document(cli, world, tmp_path, db_url):
    """Helion's own builder copies each per-shape column as the run produced it, so a comparator
    that ran on some shapes publishes a shorter list: that column cannot be aligned, the rest can."""
    n = len(world.nights) - 1
    doc = world.dashboard(n)
    row = next(r for r in doc["summary"] if any(h.get("per_shape") for h in r["history"]))
    ps = next(h["per_shape"] for h in row["history"] if h.get("per_shape"))
    assert len(ps["shapes"]) > 1
    ps["triton_speedup"] = ps["triton_speedup"][:1]
    res = cli("ingest", "--dashboard", _write(tmp_path, "d.json", doc))
    assert res.exit_code == 0, res.output
    store = Store(db_url)
    with store.session() as s:
        track = s.scalar(select(Track).where(Track.kernel == row["kernel"], Track.platform_short == row["platform_short"],
                                             Track.source == "dashboard"))
        rows = list(s.scalars(select(ShapeValue).where(ShapeValue.track_id == track.id)))
    store.dispose()
    assert len(rows) == len(ps["shapes"])
    assert all(r.helion_speedup is not None and r.triton_speedup is None for r in rows)


def test_missing_file_and_size_cap(cli, world, tmp_path, monkeypatch):
    res = cli("ingest", "--dashboard", str(tmp_path / "nope.json"))
    assert res.exit_code == 2 and "no such file" in res.stderr
    monkeypatch.setenv("BENCHWATCH_FETCH_MAX_BYTES", "1000")
    res = cli("ingest", "--dashboard", _write(tmp_path, "d.json", world.dashboard_bytes(5)))
    assert res.exit_code == 2 and "cap" in res.stderr


def test_pretuned_errors_baselines_and_cudagraph(cli, world, tmp_path, db_url):
    n = len(world.nights) - 1
    doc = world.pretuned(n)
    res = cli("ingest", "--pretuned", _write(tmp_path, "p.json", doc))
    assert res.exit_code == 0, res.output
    store = Store(db_url)
    with store.session() as s:
        metrics = set(
            s.scalars(
                select(Series.metric).join(Track).where(Track.source == "pretuned").distinct()
            )
        )
    store.dispose()
    assert {"geomean", "best_speedup", "helion_wins", "total"} <= metrics
    names = {n for item in doc["summary"] for h in item["history"] for n in (h.get("baselines") or {})}
    assert {f"baseline:{b}:geomean" for b in names} <= metrics


def test_the_real_builders_empty_pretuned_document_is_accepted(cli, tmp_path, helion_clone):
    """Before the pretuned suite's first nightly, Helion's own builder publishes a document with
    ``generated_at: ""`` and ``latest_run: {}``: nothing in it, and nothing wrong with it."""
    import importlib.util
    import subprocess

    src = subprocess.run(["git", "-C", str(helion_clone), "show",
                          "main:.github/dashboard/build_pretuned_dashboard_data.py"],
                         check=True, capture_output=True).stdout
    mod_path = tmp_path / "_builder.py"
    mod_path.write_bytes(src)  # a temporary checkout of the real builder, imported at test time
    spec = importlib.util.spec_from_file_location("_real_pretuned_builder", mod_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    empty = mod.build_dashboard_data(str(tmp_path / "cache"), [], existing_data=None)
    assert empty["generated_at"] == "" and empty["latest_run"] == {} and empty["summary"] == []
    res = cli("ingest", "--pretuned", _write(tmp_path, "p.json", empty))
    assert res.exit_code == 0, res.output
    assert _status(cli)["runs_pretuned"] == 0
