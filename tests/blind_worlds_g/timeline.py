"""Nights, runs and run ids of a window on the real first-parent history.

Why: a nightly benchmarks whatever `main` pointed to when the 08:00 UTC cron dispatched it (and
the pretuned suite at 10:00 UTC), so each night's sha is the last first-parent commit at that
moment. Manual dispatches and side-branch runs are interleaved as they are on the live site.
Run ids are increasing digit strings in time order, like GitHub's.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from .config import NightConfig, read_config
from .sim import rng_for


@dataclass
class NightPlan:
    idx: int
    date: datetime
    sha: str
    cfg: NightConfig
    p_date: datetime | None = None
    p_sha: str | None = None
    p_cfg: dict | None = None
    run_id: str = ""
    p_run_id: str | None = None
    commits: tuple = ()      # first-parent commits since the previous nightly (oldest first)
    p_commits: tuple = ()


@dataclass
class ExtraRun:
    date: datetime
    sha: str
    branch: str
    is_nightly: bool
    platforms: tuple
    helion_skew: float
    run_id: str = ""
    kind: str = "manual"


def sha_at(fp: list, times: list, t: datetime) -> int:
    return bisect.bisect_right(times, t) - 1


def plan(repo, fp: list, seed: int, start: str, end: str) -> tuple[list, list]:
    times = [c["time"] for c in fp]
    r = rng_for(seed, "timeline")
    d0 = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
    d1 = datetime.fromisoformat(end).replace(tzinfo=timezone.utc)
    cfg_cache: dict = {}
    nights = []
    day = d0
    prev_i = prev_pi = None
    while day <= d1:
        t = day + timedelta(hours=8, minutes=int(r.integers(1, 25)), seconds=int(r.integers(0, 60)))
        i = sha_at(fp, times, t)
        sha = fp[i]["sha"]
        if sha not in cfg_cache:
            cfg_cache[sha] = read_config(repo, sha)
        cfg = cfg_cache[sha]
        n = NightPlan(idx=len(nights), date=t, sha=sha, cfg=cfg)
        n.commits = tuple(c["sha"] for c in fp[(prev_i + 1 if prev_i is not None else i):i + 1])
        pt = day + timedelta(hours=10, minutes=int(r.integers(1, 20)), seconds=int(r.integers(0, 60)))
        pi = sha_at(fp, times, pt)
        psha = fp[pi]["sha"]
        if psha not in cfg_cache:
            cfg_cache[psha] = read_config(repo, psha)
        if cfg_cache[psha].pretuned:
            n.p_date, n.p_sha, n.p_cfg = pt, psha, cfg_cache[psha].pretuned
            n.p_commits = tuple(c["sha"] for c in fp[(prev_pi + 1 if prev_pi is not None else pi):pi + 1])
            prev_pi = pi
        prev_i = i
        nights.append(n)
        day += timedelta(days=1)
    # manual dispatches on main and a side-branch "nightly" now and then
    extras = []
    for n in nights[1:]:
        u = r.random()
        if u < 0.10 or (0.10 <= u < 0.14):
            t = n.date - timedelta(hours=int(r.integers(3, 15)), minutes=int(r.integers(0, 59)))
            i = sha_at(fp, times, t)
            plats = sorted(n.cfg.platforms())
            k = int(r.integers(1, min(3, len(plats)) + 1))
            chosen = tuple(sorted(r.choice(plats, size=k, replace=False).tolist()))
            if u < 0.10:
                extras.append(ExtraRun(t, fp[i]["sha"], "main", False, chosen, float(r.uniform(0.9, 1.12))))
            else:
                extras.append(ExtraRun(t, fp[i]["sha"], "bench/" + ("tpu-nightly" if "tpu" in chosen else "perf-experiment"),
                                       True, chosen, float(r.uniform(0.7, 0.85)), kind="branch"))
    # run ids: increasing in time order over every run
    stamps = [(n.date, "d", n.idx) for n in nights] + [(n.p_date, "p", n.idx) for n in nights if n.p_date] + \
             [(e.date, "e", j) for j, e in enumerate(extras)]
    stamps.sort()
    rid = 15_400_000_000 + int(r.integers(0, 90_000_000)) + (seed % 7) * 1_000_000_000
    for when, kind, j in stamps:
        rid += int(r.integers(1_500_000, 9_000_000))
        if kind == "d":
            nights[j].run_id = str(rid)
        elif kind == "p":
            nights[j].p_run_id = str(rid)
        else:
            extras[j].run_id = str(rid)
    return nights, extras
