"""Seeded fuzz of both documents against both backends: every mutated document is either stored
or refused with one line (exit code 2) and the store exactly as it was; never a traceback."""

from __future__ import annotations

import json
import random
from pathlib import Path

from service.config import Settings
from service.errors import BenchwatchError
from service.pipeline.ingest_pass import ingest_source
from tests import upstream_docs as docs
from tests.ingest_counts import TABLES, ingest_row_counts

SEED, CASES = 1212, 100  # per backend and document: 400 cases in all
# Values that pass a loose schema but not a store, beside plainly wrong ones. A poisoned leaf
# mostly gets a value of its own kind (strings for strings...), so the cases reach the writer.
NUMBERS = [-1, 0, 1, 2**31 - 1, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 1e308, -0.0, 1.5,
           float("inf"), float("nan"), "1.23", "7", True, None]
STRINGS = ["", "\x00", "a\x00b", "x" * 64, "x" * 65, "y" * 238, "y" * 239, "y" * 255, "y" * 256,
           "é" * 300, "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00Z",
           "9999-12-31T23:59:59Z", "2026-02-30T00:00:00Z", "2026-03-01", "not a date", "00000000",
           "f" * 40, "12345678901234567890", "123456789012345678901", 7, None]
OTHER = [None, True, [], {}, [None], {"shapes": []}, {"\x00": {}}, {"b" * 240: {"geomean": 1.0}}, "x"]


def _odd(rng: random.Random, current):
    if rng.random() < 0.15:
        return rng.choice(NUMBERS + STRINGS + OTHER)
    if isinstance(current, bool):
        return rng.choice(OTHER + NUMBERS[:4])
    if isinstance(current, (int, float)):
        return rng.choice(NUMBERS)
    if isinstance(current, str):
        return rng.choice(STRINGS)
    return rng.choice(OTHER)


def _paths(node, prefix=()):
    """Every path in the document (containers included), so any level can be poisoned."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _get(doc, path):
    for part in path:
        doc = doc[part]
    return doc


def _mutate(rng: random.Random, doc: dict) -> bytes:
    paths = [p for p in _paths(doc) if p]
    kind = rng.random()
    if kind < 0.05:
        raw = json.dumps(doc).encode()
        return raw[: rng.randrange(len(raw))]
    out = doc
    for _ in range(rng.choice((1, 1, 1, 1, 2))):
        path = rng.choice(paths)
        if rng.random() < 0.1 and isinstance(path[-1], str):  # drop a key
            out = docs.poke(out, path, None)
            parent = out
            for part in path[:-1]:
                parent = parent[part]
            parent.pop(path[-1], None)
        elif rng.random() < 0.1 and isinstance(path[-1], str):  # a new key (unknown fields are fine)
            out = docs.poke(out, (*path[:-1], rng.choice(("extra", "\x00", "k" * 300))), _odd(rng, None))
        else:
            out = docs.poke(out, path, _odd(rng, _get(out, path)))
        paths = [p for p in _paths(out) if p]
    return json.dumps(out, allow_nan=True).encode()


def _fuzz(store, tmp_path: Path, source: str, make) -> tuple[int, int]:
    rng = random.Random(f"{SEED}:{source}:{store.dialect}")
    settings = Settings()
    base = make(3)
    path = tmp_path / f"{source}-base.json"
    path.write_bytes(json.dumps(base).encode())
    ingest_source(store, settings, source, str(path))
    stored = refused = 0
    before = ingest_row_counts(store)
    for i in range(CASES):
        path = tmp_path / f"{source}-{i}.json"
        path.write_bytes(_mutate(rng, make(4)))
        try:
            ingest_source(store, settings, source, str(path))
            stored += 1
            before = ingest_row_counts(store)
        except BenchwatchError as exc:
            refused += 1
            assert exc.exit_code == 2, (i, exc.message)
            assert "\n" not in exc.message and exc.message.startswith(f"{source}: "), (i, exc.message)
            assert ingest_row_counts(store) == before, (i, exc.message)
    return stored, refused


def test_fuzzed_documents_are_stored_or_refused_in_one_line(store, tmp_path):
    for source, make in (("dashboard", docs.dashboard), ("pretuned", docs.pretuned)):
        stored, refused = _fuzz(store, tmp_path, source, make)
        # both outcomes happen, so the test exercises the writer and the refusals alike
        assert stored >= 10 and refused >= 50, (source, stored, refused)


def test_a_refused_document_exits_2_through_the_cli(cli, tmp_path, db_url):
    """Through the CLI too: a refused document is one error line, exit 2, and writes nothing; a
    stored one says what it stored on stdout, exit 0, and its ingest is recorded."""
    from service.store.db import Store

    store = Store(db_url)
    rng = random.Random(SEED)
    outcomes = []
    for i in range(8):
        raw = _mutate(rng, docs.dashboard(4))
        path = tmp_path / f"d{i}.json"
        path.write_bytes(raw)
        before = ingest_row_counts(store)
        res = cli("ingest", "--dashboard", str(path))
        after = ingest_row_counts(store)
        outcomes.append(res.exit_code)
        if res.exit_code == 2:
            lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("benchwatch: error: dashboard: "), res.stderr
            assert after == before, (i, res.stderr)
        else:
            assert res.exit_code == 0 and res.stderr.strip() == "", (i, res.output)
            assert res.stdout.startswith("dashboard: "), (i, res.stdout)
            ingests = TABLES.index("ingest_log")
            assert after[ingests] == before[ingests] + 1, i
    store.dispose()
    assert outcomes.count(2) >= 3 and 0 in outcomes and set(outcomes) <= {0, 2}, outcomes  # both paths ran
