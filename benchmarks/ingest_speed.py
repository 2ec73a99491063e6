"""Ingest speed: a full year into an empty store, one incremental nightly, the floor, 10x scale.

Run: `.venv/bin/python -m benchmarks.ingest_speed [--postgres URL] [--repeat N]` (also part of
`make bench`); figures are printed and written to benchmarks/results/ingest_speed.json (a
"before" entry already in that file is kept, so a baseline survives re-runs).
The floor is `json.loads` of the same file plus a raw DB-API `executemany` of the same point rows:
what any ingest must at least pay. Each figure is the best of N runs (wall clock; the machines
are shared, so the best run is the least disturbed one), with that run's process CPU time beside
it; on PostgreSQL the server's own CPU is not in the process figure.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sqlite3
import tempfile
import time
from pathlib import Path

from service.config import load_settings
from service.ingest.documents import parse_document
from service.ingest.normalize import normalize
from service.store.db import Store
from service.store.ingest_writer import write_document
from benchmarks.databases import Databases
from tests.worlds import WorldSpec, generate_world


RESULTS = Path(__file__).resolve().parent / "results" / "ingest_speed.json"


def _ingest(store: Store, source: str, raw: bytes) -> tuple[float, float]:
    """(wall, cpu) seconds of one ingest: validate, normalise, write in one transaction."""
    t0, c0 = time.perf_counter(), time.process_time()
    doc = normalize(parse_document(source, raw))
    with store.session() as s:
        write_document(s, doc, location=source)
    return time.perf_counter() - t0, time.process_time() - c0


def _best(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return min(samples)


def _rows(raw: bytes) -> list[tuple]:
    doc = json.loads(raw)
    out = []
    for si, item in enumerate(doc["summary"]):
        for h in item["history"]:
            for m in ("helion_speedup_geomean", "triton_speedup_geomean",
                      "torch_compile_speedup_geomean", "helion_latency_avg_ms",
                      "compile_time_geomean_s"):
                out.append((si * 8 + hash(m) % 8, int(h["run_id"]), h.get(m)))
    return out


def _floor_sqlite(raw: bytes) -> float:
    with tempfile.TemporaryDirectory() as d:
        conn = sqlite3.connect(Path(d) / "f.db")
        conn.execute("CREATE TABLE p (s INTEGER, r INTEGER, v REAL)")
        t0 = time.perf_counter()
        rows = _rows(raw)
        conn.executemany("INSERT INTO p VALUES (?,?,?)", rows)
        conn.commit()
        took = time.perf_counter() - t0
        conn.close()
    return took


def _floor_pg(raw: bytes, url: str, *, copy: bool = False) -> float:
    """json.loads + a bare insert of the point rows: executemany, or COPY (what our PostgreSQL
    path competes with)."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TEMP TABLE p (s INTEGER, r BIGINT, v DOUBLE PRECISION)")
        t0 = time.perf_counter()
        rows = _rows(raw)
        with conn.cursor() as cur:
            if copy:
                with cur.copy("COPY p (s, r, v) FROM STDIN") as out:
                    for row in rows:
                        out.write_row(row)
            else:
                cur.executemany("INSERT INTO p VALUES (%s,%s,%s)", rows)
        conn.commit()
        return time.perf_counter() - t0


def _scaled(doc: dict, factor: int) -> bytes:
    out = copy.deepcopy(doc)
    extra = []
    for i in range(1, factor):
        for item in doc["summary"]:
            clone = copy.deepcopy(item)
            clone["kernel"] = f"{item['kernel']}_x{i}"
            extra.append(clone)
    out["summary"] = doc["summary"] + extra
    return json.dumps(out).encode()


def run(pg_url: str | None, repeat: int = 3, x10: bool = True) -> dict:
    world = generate_world(WorldSpec(seed=2026, nightlies=365, with_git=False))
    n = len(world.nights) - 1
    full = world.dashboard_bytes(n)
    prev = world.dashboard_bytes(n - 1)
    pre_full = world.pretuned_bytes(n)
    doc = world.dashboard(n)
    mb = len(full) / 1e6
    print(f"document: {mb:.2f} MB dashboard ({len(doc['summary'])} series), "
          f"{len(pre_full) / 1e6:.2f} MB pretuned")
    dbs = Databases(pg_url)
    results = []
    kinds = ["sqlite"] + (["postgres"] if pg_url else [])
    try:
        for kind in kinds:
            fulls, pres, incs, agains = [], [], [], []
            for _ in range(repeat):
                store = dbs.new(kind)
                fulls.append(_ingest(store, "dashboard", full))
                pres.append(_ingest(store, "pretuned", pre_full))
                store.dispose()
                store = dbs.new(kind)
                _ingest(store, "dashboard", prev)
                incs.append(_ingest(store, "dashboard", full))
                agains.append(_ingest(store, "dashboard", full))
                store.dispose()
            (t_full, c_full), (t_pre, c_pre) = _best(fulls), _best(pres)
            (t_inc, c_inc), (t_again, c_again) = _best(incs), _best(agains)
            floor = min(
                _floor_sqlite(full) if kind == "sqlite" else _floor_pg(full, dbs.pg_url)
                for _ in range(repeat)
            )
            row = dict(
                db=kind, full_s=t_full, full_cpu_s=c_full, full_mb_per_s=mb / t_full,
                pretuned_full_s=t_pre, pretuned_cpu_s=c_pre, incremental_s=t_inc,
                incremental_cpu_s=c_inc, reingest_same_s=t_again, reingest_same_cpu_s=c_again,
                floor_s=floor, ratio=t_full / floor,
            )
            line = (
                f"{kind:8s} full {t_full:.2f}s (cpu {c_full:.2f}s, {mb / t_full:.1f} MB/s; "
                f"pretuned {t_pre:.2f}s) | one nightly {t_inc:.3f}s | "
                f"same file again {t_again:.3f}s | floor {floor:.2f}s -> {t_full / floor:.1f}x"
            )
            if kind == "postgres":
                copy_floor = min(_floor_pg(full, dbs.pg_url, copy=True) for _ in range(repeat))
                row.update(floor_copy_s=copy_floor, ratio_to_copy_floor=t_full / copy_floor)
                line += f" (COPY floor {copy_floor:.2f}s -> {t_full / copy_floor:.1f}x)"
            if x10:
                store = dbs.new(kind)
                big = _scaled(doc, 10)
                t_big, c_big = _ingest(store, "dashboard", big)
                store.dispose()
                row.update(x10_s=t_big, x10_cpu_s=c_big, x10_mb=len(big) / 1e6,
                           x10_growth=t_big / t_full)
                line += (f" | 10x series ({len(big) / 1e6:.0f} MB) {t_big:.2f}s "
                         f"= {t_big / t_full:.1f}x the time")
            results.append(row)
            print(line, flush=True)
    finally:
        dbs.close()
    return dict(
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        machine=dict(cpus=os.cpu_count(), python=platform.python_version(),
                     load_avg_at_start=os.getloadavg()[0]),
        repeat=repeat, dashboard_mb=mb, pretuned_mb=len(pre_full) / 1e6,
        series=len(doc["summary"]), results=results,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    local_pg = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    ap.add_argument("--postgres", default=os.environ.get("BENCHWATCH_TEST_POSTGRES_URL", local_pg))
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is kept")
    ap.add_argument("--no-10x", action="store_true", help="skip the 10x-series document")
    ap.add_argument("--no-write", action="store_true", help="print only; leave the JSON alone")
    args = ap.parse_args()
    load_settings()
    out = run(None if args.no_postgres else args.postgres, max(1, args.repeat), not args.no_10x)
    if not args.no_write:
        if RESULTS.exists():
            before = json.loads(RESULTS.read_text()).get("before")
            if before is not None:
                out["before"] = before
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
