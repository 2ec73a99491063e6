"""What a person may type: the platforms, kernels and metrics actually stored.

The CLI and the series page check a value against these before using it, so a typo is answered
with the valid choices instead of an empty result (or, on the web, another platform's chart).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.store.tables import Series, Track


def platforms(session: Session, source: str | None = None) -> list[str]:
    q = select(Track.platform_short).distinct().order_by(Track.platform_short)
    if source is not None:
        q = q.where(Track.source == source)
    return list(session.scalars(q))


def kernels(session: Session, source: str, platform: str) -> list[str]:
    return list(session.scalars(
        select(Track.kernel).where(Track.source == source, Track.platform_short == platform)
        .order_by(Track.kernel)
    ))


def metrics(session: Session, source: str, platform: str, kernel: str | None = None) -> list[str]:
    """Metrics of one kernel, or of any kernel on the platform."""
    q = (select(Series.metric).join(Track, Track.id == Series.track_id)
         .where(Track.source == source, Track.platform_short == platform)
         .distinct().order_by(Series.metric))
    if kernel is not None:
        q = q.where(Track.kernel == kernel)
    return list(session.scalars(q))
