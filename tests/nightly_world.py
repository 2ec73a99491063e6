"""A small dashboard world written straight into the store: one platform, one nightly a day on the
given commits, every dashboard metric of each kernel at 1% scatter, and a factor per (night,
kernel, metric) where a test plants its steps. Shared by the end-to-end event tests, which each
say only what moves."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import insert, select

from service.records import DASHBOARD_METRICS
from service.store.tables import Point, Run, Series, Track
from tests.gitrepo import CommitSpec, build_repo

BASE = {"helion_speedup_geomean": 1.6, "triton_speedup_geomean": 1.2, "torch_compile_speedup_geomean": 1.1,
        "helion_latency_avg_ms": 0.8, "compile_time_geomean_s": 12.0}


def write_world(store, shas: Sequence[str], kernels: Sequence[str], t0: datetime,
                factor: Callable[[int, str, str], float], *, seed: int, run_base: int, platform: str = "h100") -> None:
    """Runs ``run_base + i`` on ``shas[i]`` at ``t0 + i days``; value = BASE x factor(night, kernel,
    metric) x (1 + 1% noise)."""
    rng = random.Random(seed)
    with store.session() as s:
        s.execute(insert(Run), [dict(source="dashboard", run_id=str(run_base + i), sha=sha[:8], full_sha=sha,
                                     date=t0 + timedelta(days=i), branch="main", is_nightly=True, is_trend=True,
                                     kernel_count=len(kernels)) for i, sha in enumerate(shas)])
        pks = [pk for (pk,) in s.execute(select(Run.id).order_by(Run.date))]
        tracks = [Track(source="dashboard", platform_short=platform, platform=platform.upper(), kernel=k)
                  for k in kernels]
        s.add_all(tracks)
        s.flush()
        series = [Series(track_id=t.id, metric=m) for t in tracks for m in DASHBOARD_METRICS]
        s.add_all(series)
        s.flush()
        kernel_of = {t.id: t.kernel for t in tracks}
        rows = [dict(series_id=sr.id, run_pk=pk, failed=False,
                     value=BASE[sr.metric] * factor(i, kernel_of[sr.track_id], sr.metric) * (1 + rng.gauss(0, 0.01)))
                for sr in series for i, pk in enumerate(pks)]
        s.execute(insert(Point), rows)


def nightly_repo(path, t0: datetime, nights: int, planted: Callable[[int, datetime], Sequence[CommitSpec]],
                 first: Sequence[CommitSpec] = ()) -> list[str]:
    """A Helion-like repository with one docs commit a night (at ``t0 + i days - 2 h``: the sha
    nightly ``i`` runs) after the commits ``planted(i, when)`` lands that night; ``first``: commits
    before night 0. Returns the nightlies' shas, one a night, for `write_world`."""
    commits = list(first)
    for i in range(nights):
        when = t0 + timedelta(days=i) - timedelta(hours=2)
        commits += planted(i, when)
        commits.append(CommitSpec(f"docs: night {i}", when, {"docs/night.md": f"{i}\n"}))
    shas = build_repo(path, commits)
    return [sha for sha, c in zip(shas, commits) if c.subject.startswith("docs: night")]
