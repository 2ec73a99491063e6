"""Platform outages nobody watched live: episodes of a platform producing nothing that began and
ended between two health passes (the service was down, or it started cold on a year of
cumulative history). The live check judges only the newest nightly, so without this a two-night
outage in March is invisible forever; a person reading the dashboard would see the gap.

An episode is a run of nightlies on which a platform is down (the same test as the live check,
`platform_down`) with a nightly it ran fine on each side, so a platform that started later or
was taken out of the matrix is never an outage. An episode still running on the newest nightly
is the live check's to raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from service.health.records import KernelResult, SourceNights


def ran_on(rows: Mapping[tuple[str, str], KernelResult], platform: str) -> set[str]:
    """The kernels of ``platform`` that ran on one nightly (listed and not infra_missing)."""
    return {k for (p, k), r in rows.items() if p == platform and not r.infra_missing}


def platform_down(rows: Mapping[tuple[str, str], KernelResult], platform: str) -> str | None:
    """Why ``platform`` counts as down on one nightly (None: it ran). No kernel ran, or two or
    more ran and every one came back empty (the machine, not the kernels)."""
    listed = [k for (p, k) in rows if p == platform]
    ran = ran_on(rows, platform)
    if not ran:
        return f"all {len(listed)} kernels infra_missing" if listed else "no rows"
    if len(ran) >= 2 and all(rows[(platform, k)].failed for k in ran):
        return f"all {len(ran)} kernels produced nothing"
    return None


@dataclass(frozen=True)
class PastOutage:
    """Nightlies ``first``..``last`` (indexes into the nights read) on which ``platform_short``
    was down; ``back`` is the first nightly it ran again."""

    platform_short: str
    first: int
    last: int
    back: int

    def detail(self, data: SourceNights) -> str:
        a, b, up = data.nights[self.first], data.nights[self.last], data.nights[self.back]
        span = f"{a.date:%Y-%m-%d}" if self.first == self.last else f"{a.date:%Y-%m-%d} to {b.date:%Y-%m-%d}"
        n = self.last - self.first + 1
        return (f"{self.platform_short}: no results on {n} nightl{'y' if n == 1 else 'ies'}, {span} "
                f"({a.sha}); ran again on {up.date:%Y-%m-%d} ({up.sha}); found in the stored history, "
                f"not watched live")


def _episodes(data: SourceNights):
    """(platform, first down index, first index it ran again or None while still down) for
    every run of down nightlies that came after the platform had run."""
    platforms = sorted({p for rows in data.results for (p, _k) in rows})
    for platform in platforms:
        up = [platform_down(rows, platform) is None for rows in data.results]
        start, seen = None, False  # first down nightly of the open episode; ran before?
        for i, ok in enumerate(up):
            if not ok:
                if start is None and seen:  # down after having run: an episode opens
                    start = i
            elif start is not None:
                yield platform, start, i
                start = None
            seen = seen or ok
        if start is not None:
            yield platform, start, None


def past_outages(data: SourceNights) -> list[PastOutage]:
    """Every ended outage episode in ``data`` (per platform, oldest first; see the module)."""
    return [PastOutage(p, first, back - 1, back) for p, first, back in _episodes(data) if back is not None]


def open_outages(data: SourceNights) -> dict[str, int]:
    """Platform -> the first nightly (index) of the outage still running on the newest nightly:
    the live check raises it on the newest, and a person asks since when (a cold start, or a
    service stopped during it, did not see it begin)."""
    return {p: first for p, first, back in _episodes(data) if back is None}
