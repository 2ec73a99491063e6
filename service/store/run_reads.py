"""Nightlies as pages show them: a run's stamp (pk, GitHub run id, date, commit), by pk or as a
source's trend nights inside a date window.

One row shape for the queue, the charts and the group view, so a run reads the same on each;
the web and notify layers format it (ISO dates, 8-hex shas), the store only reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.store.db import chunks
from service.store.tables import Run

_COLUMNS = (Run.id, Run.run_id, Run.date, Run.full_sha)


class RunStamp(NamedTuple):
    pk: int
    run_id: str  # the dashboard's run id (a GitHub Actions run for nightlies)
    date: datetime  # naive UTC, as stored
    full_sha: str


def runs_by_pk(session: Session, pks: Iterable[int | None]) -> dict[int, RunStamp]:
    """The stamps of the given runs (None entries and unknown pks are left out)."""
    wanted = sorted({pk for pk in pks if pk is not None})
    out: dict[int, RunStamp] = {}
    for chunk in chunks(wanted, 500):
        out.update((r[0], RunStamp(*r)) for r in session.execute(select(*_COLUMNS).where(Run.id.in_(chunk))))
    return out


def trend_nights(session: Session, source: str, lo: datetime | None = None,
                 hi: datetime | None = None) -> list[RunStamp]:
    """A source's trend runs (nightlies on main: the only runs that alert), optionally inside
    [lo, hi]; in no particular order (callers sort by date)."""
    q = select(*_COLUMNS).where(Run.source == source, Run.is_trend)
    if lo is not None:
        q = q.where(Run.date >= lo)
    if hi is not None:
        q = q.where(Run.date <= hi)
    return [RunStamp(*r) for r in session.connection().execute(q)]  # Core rows: a year of nights
