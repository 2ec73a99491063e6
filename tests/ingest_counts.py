"""Row counts of every table an ingest writes, in one query (a helper module: it holds no tests).

A refused document must leave the store exactly as it was; the fuzz and bounds tests compare these
counts before and after each attempt (hundreds of them, hence one statement).
"""

from __future__ import annotations

from sqlalchemy import text

TABLES = ("runs", "tracks", "series", "points", "observations", "shape_values", "track_events",
          "ingest_log", "ingest_conflicts")
_COUNTS = text("SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in TABLES))


def ingest_row_counts(store) -> tuple[int, ...]:
    """Counts in TABLES order."""
    with store.engine.connect() as conn:
        return tuple(conn.execute(_COUNTS).one())
