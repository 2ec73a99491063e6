"""What about a track itself changed across a step: the evidence a person reads as "the timer /
the baselines / the cudagraph flag changed", in words.

It lives beside the classifier that weighs it (the store only hands over the logged events and
the values at the two ends), and reads them through the small protocols below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from service.domain import metric
from service.records import AttributeChange


class _Logged(Protocol):
    run_pk: int | None
    attribute: str
    old: str | None
    new: str | None


class _Run(Protocol):
    run_id: str
    date: datetime


def _between(rows: Mapping[int, _Run], lo: int, hi: int) -> set[int]:
    """Run pks dated in (last_good, first_bad]."""
    a, b = rows[lo].date, rows[hi].date
    return {pk for pk, r in rows.items() if a < r.date <= b}


def attribute_changes(
    events: Sequence[_Logged], per_metric: Mapping[str, Mapping[int, float | None]],
    rows: Mapping[int, _Run], last_good_pk: int, first_bad_pk: int,
) -> list[AttributeChange]:
    """Logged TrackEvents inside the window, a flip of the pretuned per-run `cudagraph` flag,
    and a change in the set of `baseline:*` series reporting (``per_metric``: metric -> run pk
    -> value at the two ends). Pure, so the detect pass can feed it preloaded data.
    """
    if last_good_pk not in rows or first_bad_pk not in rows:
        return []
    window = _between(rows, last_good_pk, first_bad_pk)
    out: list[AttributeChange] = []
    for ev in events:
        if ev.run_pk is not None and ev.run_pk in window:
            out.append(
                AttributeChange(
                    ev.attribute, ev.old, ev.new, rows[ev.run_pk].run_id,
                    f"{ev.attribute} changed from {ev.old} to {ev.new}",
                )
            )
    flags = per_metric.get("cudagraph", {})
    old, new = flags.get(last_good_pk), flags.get(first_bad_pk)
    if old is not None and new is not None and old != new:
        out.append(
            AttributeChange(
                "cudagraph", str(bool(old)).lower(), str(bool(new)).lower(),
                rows[first_bad_pk].run_id,
                f"the run's cudagraph flag flipped from {bool(old)} to {bool(new)}",
            )
        )

    def baselines(pk: int) -> set[str]:
        return {
            m.split(":")[1]
            for m, vals in per_metric.items()
            if metric(m).baseline is not None and vals.get(pk) is not None
        }

    b_old, b_new = baselines(last_good_pk), baselines(first_bad_pk)
    if b_old != b_new and (b_old or b_new):
        added, removed = sorted(b_new - b_old), sorted(b_old - b_new)
        parts = ([f"added {', '.join(added)}"] if added else []) + (
            [f"removed {', '.join(removed)}"] if removed else []
        )
        out.append(
            AttributeChange(
                "baselines", ",".join(sorted(b_old)), ",".join(sorted(b_new)),
                rows[first_bad_pk].run_id, "the set of baselines changed: " + "; ".join(parts),
            )
        )
    return out
