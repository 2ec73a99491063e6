"""Upstream values that pass a loose schema but not the store: each is refused in one line (exit
2), identically on SQLite and PostgreSQL, with the store unchanged; never a crash of the write."""

from __future__ import annotations

import json
from pathlib import Path

from service.store.db import Store
from tests import upstream_docs as docs
from tests.ingest_counts import ingest_row_counts

D, P = "dashboard", "pretuned"
BASELINE = {"wins": 1, "total": 4, "geomean": 1.1}
CASES = [  # (source, path, value, the text the one line must contain)
    (D, ("runs", 0, "kernel_count"), 2**63, "runs[0].kernel_count"),
    (D, ("summary", 0, "history", 1, "kernel_count"), 2**31, "summary[0].history[1].kernel_count"),
    (D, ("runs", 1, "date"), "0001-01-01T00:30:00+01:00", "out of range once converted to UTC"),
    (D, ("summary", 1, "history", 0, "date"), "9999-12-31T23:59:59-01:00", "summary[1].history[0].date"),
    (D, ("summary", 0, "kernel"), "rms\x00norm", "summary[0].kernel: String should not contain a NUL"),
    (D, ("summary", 2, "platform_short"), "b2\x00", "summary[2].platform_short"),
    (D, ("summary", 0, "history", 3, "per_shape", "shapes"), ["[1]", "[\x00]"], "history[3].per_shape.shapes[1]"),
    (P, ("summary", 0, "history", 0, "baselines"), {"tri\x00ton": BASELINE}, "baselines"),
    (P, ("summary", 1, "history", 2, "error"), "boom\x00", "summary[1].history[2].error"),
    (D, ("summary", 0, "platform_short"), "x" * 65, "at most 64 characters"),
    (P, ("summary", 0, "compute"), "y" * 65, "summary[0].compute"),
    (D, ("summary", 3, "baseline_label"), "z" * 256, "summary[3].baseline_label"),
    (D, ("summary", 3, "kernel"), "k" * 256, "summary[3].kernel"),
    # the baseline name becomes the metric "baseline:<name>:geomean" in a String(255) column
    (P, ("summary", 2, "history", 0, "baselines"), {"b" * 240: BASELINE}, "baselines"),
    (D, ("summary", 0, "history", 0, "helion_speedup_geomean"), "1.23", "valid number"),
    (D, ("summary", 0, "history", 0, "triton_speedup_geomean"), True, "valid number"),
    (P, ("summary", 0, "history", 0, "helion_wins"), "7", "valid integer"),
    (P, ("summary", 0, "history", 1, "total"), 2**40, "summary[0].history[1].total"),
]


def _status(cli) -> dict:
    res = cli("status", "--format", "json")
    assert res.exit_code == 0, res.output
    return {k: v for k, v in json.loads(res.stdout).items() if not k.endswith("_at")}


def test_values_the_store_cannot_hold_are_refused_on_both_backends(cli, db_url, tmp_path: Path):
    good = {D: docs.dashboard(3), P: docs.pretuned(3)}
    for source, doc in good.items():
        path = tmp_path / f"{source}.json"
        path.write_text(json.dumps(doc))
        assert cli("ingest", f"--{source}", str(path)).exit_code == 0
    assert _status(cli)["runs"] == 6 and _status(cli)["shape_rows"] == 8
    store = Store(db_url)
    before = ingest_row_counts(store)
    for i, (source, where, value, needle) in enumerate(CASES):
        path = tmp_path / f"bad{i}.json"
        path.write_text(json.dumps(docs.poke(docs.dashboard(4) if source == D else docs.pretuned(4), where, value)))
        res = cli("ingest", f"--{source}", str(path))
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.exit_code == 2, (where, res.output)
        assert len(lines) == 1 and needle in lines[0], (where, res.stderr)
        assert ingest_row_counts(store) == before, where
    store.dispose()
    # the same documents without the poison are stored: the bounds refuse only what they must
    path = tmp_path / "fine.json"
    path.write_text(json.dumps(docs.poke(docs.dashboard(4), ("summary", 0, "platform_short"), "x" * 64)))
    assert cli("ingest", "--dashboard", str(path)).exit_code == 0
    assert _status(cli)["runs_dashboard"] == 4
