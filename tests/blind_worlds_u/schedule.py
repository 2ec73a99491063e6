"""When things run: the nightlies of a window on the real first-parent history (one main nightly a
day at the cron time plus the usual dispatch delay, on the last first-parent commit before it; a few
skipped days), the pretuned nightly two hours later once its workflow exists, and the runs that are
not nightlies (manual dispatches on main, side-branch runs)."""
from __future__ import annotations

import bisect
import hashlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from . import facts as F
from . import repo as R

EPOCH = datetime(2025, 6, 1, tzinfo=timezone.utc)


def run_id_at(t: datetime, salt: str) -> str:
    """GitHub-like run ids: growing with time, unique."""
    h = int(hashlib.md5(salt.encode()).hexdigest()[:3], 16)
    return str(17_000_000_000 + int((t - EPOCH).total_seconds()) * 10 + h % 10)


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunMeta:
    run_id: str
    full_sha: str
    date: datetime
    branch: str
    is_nightly: bool
    source: str                 # dashboard | pretuned
    night: int | None = None    # index of the window nightly this run is (None: not a nightly)
    platforms: tuple = ()       # for manual/side runs: which platforms ran
    kernels: tuple = ()         # for manual/side runs: which kernels ran (empty: all)
    side_effect: float = 1.0    # a side-branch/manual run's code may differ from main

    def meta(self) -> dict:
        return {"run_id": self.run_id, "sha": self.full_sha[:8], "full_sha": self.full_sha, "date": iso(self.date),
                "branch": self.branch, "is_nightly": self.is_nightly}


@dataclass
class Schedule:
    nights: list = field(default_factory=list)       # RunMeta of dashboard nightlies, in order
    pnights: list = field(default_factory=list)      # RunMeta | None per night (pretuned nightly)
    extra: list = field(default_factory=list)        # RunMeta of non-nightly runs (both sources)
    skipped: list = field(default_factory=list)


class History:
    def __init__(self, repo: R.Repo):
        self.commits = repo.first_parent()
        self.dates = [c.date for c in self.commits]
        self.index = {c.sha: i for i, c in enumerate(self.commits)}

    def head_at(self, t: datetime) -> R.Commit:
        i = bisect.bisect_left(self.dates, t) - 1
        return self.commits[i]

    def between(self, lo_sha: str, hi_sha: str) -> list:
        """First-parent commits in (lo, hi]."""
        return self.commits[self.index[lo_sha] + 1: self.index[hi_sha] + 1]

    def first_night_with(self, nights: list, sha: str) -> int | None:
        i = self.index[sha]
        for n, run in enumerate(nights):
            if self.index[run.full_sha] >= i:
                return n
        return None


def build_schedule(repo: R.Repo, hist: History, seed: int, end: datetime, n_nights: int,
                   times: dict | None = None) -> Schedule:
    rng = random.Random(seed * 7919 + 17)
    days = []
    d = end
    runs = 0
    while runs < n_nights:
        near_end = (end - d).days < 5
        if not near_end and rng.random() < 0.028 and runs < n_nights - 3 and d.strftime("%Y-%m-%d") not in (times or {}):
            days.append(("skip", d))
        else:
            days.append(("run", d))
            runs += 1
        d -= timedelta(days=1)
    days.reverse()
    sch = Schedule()
    for kind, day in days:
        if kind == "skip":
            sch.skipped.append(day)
            continue
        base = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        cron_h, cron_m = 8, 0
        delay = rng.randint(4, 34)
        forced = (times or {}).get(day.strftime("%Y-%m-%d"))
        if forced:
            cron_h, delay = forced[0], forced[1]
        t = base + timedelta(hours=cron_h, minutes=cron_m + delay, seconds=rng.randint(0, 59))
        c = hist.head_at(t)
        # never on the exact second of a commit (`--before` must pick this one)
        n = len(sch.nights)
        sch.nights.append(RunMeta(run_id_at(t, f"n{seed}{n}"), c.sha, t, "main", True, "dashboard", night=n))
        pt = base + timedelta(hours=10, minutes=rng.randint(4, 34), seconds=rng.randint(0, 59))
        pc = hist.head_at(pt)
        if F.pretuned_at(repo, pc.sha) is not None:
            sch.pnights.append(RunMeta(run_id_at(pt, f"p{seed}{n}"), pc.sha, pt, "main", True, "pretuned", night=n))
        else:
            sch.pnights.append(None)
    _extra_runs(repo, hist, sch, seed, rng)
    return sch


SIDE_BRANCHES = ("yifeixu/tpu-nightly-benchmark", "jongsok/bench-autotune-budget", "oulgen/cute-perf",
                 "ethche/lfbo-tuning", "gh/rope-bwd-fix")


def _extra_runs(repo, hist, sch: Schedule, seed: int, rng: random.Random) -> None:
    """Manual dispatches (is_nightly false) on main and on side branches, and a side-branch nightly
    workflow (is_nightly true, branch != main). One lands within a day before every nightly that a
    small build can start from (the last 12), and otherwise about every third day."""
    nights = sch.nights
    force = {0, max(0, len(nights) - 12)}
    for i, night in enumerate(nights):
        if i not in force and rng.random() > 0.33:
            continue
        # a few hours before this nightly (between the previous nightly and this one)
        t = night.date - timedelta(hours=rng.randint(3, 14), minutes=rng.randint(0, 59))
        if i > 0 and t <= nights[i - 1].date:
            continue
        c = hist.head_at(t)
        setup = F.setup_at(repo, c.sha, linattn_live=True)
        plats = sorted({p for p, _ in setup.series})
        if not plats:
            continue
        plat = rng.choice(plats)
        ks = sorted(k for p, k in setup.series if p == plat)
        kernels = tuple(sorted(rng.sample(ks, min(len(ks), rng.randint(1, 4)))))
        roll = rng.random()
        if roll < 0.6:
            sch.extra.append(RunMeta(run_id_at(t, f"m{seed}{i}"), c.sha, t, "main", False, "dashboard",
                                     platforms=(plat,), kernels=kernels))
        else:
            branch = rng.choice(SIDE_BRANCHES)
            fake = hashlib.sha1(f"{branch}{seed}{i}".encode()).hexdigest()
            side_nightly = branch.startswith("yifeixu") and "tpu" in plats
            if side_nightly:
                plat = "tpu"
                kernels = tuple(sorted(k for p, k in setup.series if p == "tpu"))
            eff = rng.choice([0.8, 0.88, 1.0, 1.12, 1.25])
            sch.extra.append(RunMeta(run_id_at(t, f"s{seed}{i}"), fake, t, branch, side_nightly, "dashboard",
                                     platforms=(plat,), kernels=kernels, side_effect=eff))
    # manual pretuned dispatches (a developer re-running a kernel or two)
    for i, pn in enumerate(sch.pnights):
        if pn is None or rng.random() > 0.15:
            continue
        t = pn.date + timedelta(hours=rng.randint(2, 9), minutes=rng.randint(0, 59))
        if i + 1 < len(nights) and t >= nights[i + 1].date:
            continue
        c = hist.head_at(t)
        ps = F.pretuned_at(repo, c.sha)
        if ps is None:
            continue
        ks = sorted(ps.kernels)
        kernels = tuple(sorted(rng.sample(ks, min(len(ks), rng.randint(1, 3)))))
        sch.extra.append(RunMeta(run_id_at(t, f"q{seed}{i}"), c.sha, t, "main", False, "pretuned",
                                 platforms=("b200", "h100"), kernels=kernels))
    sch.extra.sort(key=lambda r: r.date)
