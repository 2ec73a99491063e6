"""Is the data still arriving? A stale newest nightly, and a fetch that keeps failing.

A monitor that stays silent when the data stops reads as "all clear", so silence is a finding.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from service.health.records import Finding, Nightly


def due_date(now: datetime, due_utc: time, max_age_days: int) -> date:
    """The oldest nightly date acceptable at ``now``: today's from the due time on, else
    yesterday's (the alert raised at yesterday's due time holds until a nightly arrives)."""
    today = now.date()
    if now.timetz().replace(tzinfo=None) < due_utc:
        today -= timedelta(days=1)
    return today - timedelta(days=max_age_days)


def no_nightly(source: str, newest: Nightly | None, now: datetime, due_utc: time,
               max_age_days: int) -> Finding | None:
    """The newest main nightly is older than allowed at ``now`` (or there is none at all)."""
    wanted = due_date(now, due_utc, max_age_days)
    if newest is not None and newest.date.date() >= wanted:
        return None
    last = "none stored" if newest is None else f"newest is {newest.date:%Y-%m-%d} ({newest.sha[:8]})"
    return Finding(
        "no_nightly", source,
        f"no main nightly dated {wanted:%Y-%m-%d} or later by {due_utc:%H:%M} UTC; {last}",
    )


def _streak(kind: str, what: str, source: str, failures: int, since: str | None, last_error: str | None,
            threshold: int) -> Finding | None:
    """``failures`` of ``what`` in a row failed, from ``since``, the last with ``last_error``."""
    if failures < threshold:
        return None
    when = f" since {since[:16].replace('T', ' ')} UTC" if since else ""
    why = f": {last_error}" if last_error else ""
    return Finding(kind, source, f"the last {failures} {what} failed{when}{why}")


def fetch_failing(source: str, failures: int, since: str | None, last_error: str | None,
                  threshold: int) -> Finding | None:
    """``failures`` scheduled fetches in a row failed (HTTP errors, refused documents)."""
    return _streak("fetch_failing", "fetches", source, failures, since, last_error, threshold)


def detect_failing(source: str, failures: int, since: str | None, last_error: str | None,
                   threshold: int) -> Finding | None:
    """benchwatch's own detect pass failed ``failures`` times in a row. Down, it finds no move,
    and a monitor that finds nothing reads as "all clear" (a regroup that tripped a database key
    did it every night on one blind world until 7bc4770)."""
    return _streak("detect_failing", "detect passes", source, failures, since, last_error, threshold)
