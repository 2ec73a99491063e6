"""When things run: the nightlies of a window and the runs around them.

The cron fires at 08:00 UTC and dispatches on ``main``, so a nightly benchmarks the last main
commit that landed before then; the pretuned cron follows at 10:00 UTC once its workflow exists
at that commit. Some days have no nightly at all (the dispatch never ran). Between nightlies
people dispatch by hand (``is_nightly`` false, a platform or two, a few kernels), run feature
branches (commits that are not on ``main``), and one side branch ran a TPU "nightly" of its own
(``is_nightly`` true, branch not ``main``): all of it lands in the documents and none of it is a
trend point.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone

from . import facts as F
from .repo import Repo
from .sim import rng

RUN_ID_BASE = 21_000_000_000
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Night:
    run_id: str
    full_sha: str
    sha: str
    date: datetime
    p_run_id: str | None = None  # that day's pretuned nightly (None before the suite existed)
    p_full_sha: str | None = None
    p_date: datetime | None = None


@dataclass
class Run:
    """A benchmark run that is not a main nightly (or, for source "pretuned", any run)."""
    source: str  # dashboard | pretuned
    run_id: str
    full_sha: str
    date: datetime
    branch: str
    is_nightly: bool
    facts_sha: str  # the main commit whose files say what it runs (a branch's fork point)
    night: int = -1  # the nightly whose document first carries it
    platforms: tuple = ()  # () = every platform the facts list
    kernels: tuple = ()  # () = every kernel
    skew: dict = field(default_factory=dict)  # a branch's own change: kernel -> Helion factor

    def meta(self) -> dict:
        return {"run_id": self.run_id, "sha": self.full_sha[:8], "full_sha": self.full_sha,
                "date": iso(self.date), "branch": self.branch, "is_nightly": self.is_nightly}


def iso(d: datetime) -> str:
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_id_at(t: datetime, salt: int) -> str:
    """GitHub run ids grow with time; runs here are minutes apart, ids ~9 per second."""
    return str(RUN_ID_BASE + int((t - EPOCH).total_seconds()) * 9 + salt % 9)


def days_of(seed: int, end: date, n: int) -> list[date]:
    """The n days with a nightly, ending on ``end``; walking back, a day is skipped (no
    nightly) with probability 3.5%, never in the last four days."""
    r = rng(seed, "days")
    out = []
    d = end
    while len(out) < n:
        if not ((end - d).days > 3 and r.uniform() < 0.035):
            out.append(d)
        d -= timedelta(days=1)
    out.reverse()
    return out


def nights(repo: Repo, seed: int, days: list[date]) -> list[Night]:
    out = []
    for d in days:
        r = rng(seed, "night", d.isoformat())
        t = datetime.combine(d, time(8, 0), timezone.utc) + timedelta(
            minutes=int(r.integers(0, 20)), seconds=int(r.integers(0, 60)))
        c = repo.at(t)
        pt = datetime.combine(d, time(10, 0), timezone.utc) + timedelta(
            minutes=int(r.integers(0, 15)), seconds=int(r.integers(0, 60)))
        pc = repo.at(pt)
        has_p = F.pre_facts(repo, pc.sha) is not None
        out.append(Night(run_id=run_id_at(t, int(r.integers(0, 9))), full_sha=c.sha, sha=c.sha[:8],
                         date=t, p_run_id=run_id_at(pt, int(r.integers(0, 9))) if has_p else None,
                         p_full_sha=pc.sha if has_p else None, p_date=pt if has_p else None))
    return out


BRANCHES = ("jansel/loop-reorder", "oulgen/cute-reduction-wip", "jongsokchoi/autotune-budget",
            "shangdiy/pretuned-sweep", "tarindu/linattn-configs", "pianpwk/indexing-cleanup")


def _fake_sha(*keys) -> str:
    return hashlib.sha1(repr(keys).encode()).hexdigest()


def extras(repo: Repo, seed: int, ns: list[Night]) -> list[Run]:
    """Manual dispatches, feature-branch runs, a side-branch TPU 'nightly', and manual
    pretuned runs, between the first and the last nightly."""
    out: list[Run] = []
    first, last = ns[0].date, ns[-1].date
    d = first.date()
    tpu_side = None
    while d < last.date():
        r = rng(seed, "extras", d.isoformat())
        base = datetime.combine(d, time(0, 0), timezone.utc)
        if r.uniform() < 0.09:
            t = base + timedelta(hours=int(r.integers(13, 23)), minutes=int(r.integers(0, 60)))
            c = repo.at(t)
            f = F.dash_facts(repo, c.sha)
            gpu = sorted({j.platform for j in f.jobs if j.suite == "tritonbench"})
            if gpu:
                plats = tuple(sorted(r.choice(gpu, size=min(len(gpu), int(r.integers(1, 3))),
                                              replace=False).tolist()))
                ks = sorted({k for j in f.jobs if j.platform in plats for k in j.kernels})
                kern = tuple(sorted(r.choice(ks, size=min(len(ks), int(r.integers(2, 7))),
                                             replace=False).tolist()))
                out.append(Run("dashboard", run_id_at(t, int(r.integers(0, 9))), c.sha, t, "main",
                               False, c.sha, platforms=plats, kernels=kern))
        if r.uniform() < 0.05:
            t = base + timedelta(hours=int(r.integers(12, 24)), minutes=int(r.integers(0, 60)))
            c = repo.at(t)
            f = F.dash_facts(repo, c.sha)
            branch = BRANCHES[int(r.integers(len(BRANCHES)))]
            gpu = sorted({j.platform for j in f.jobs if j.suite == "tritonbench"})
            if gpu:
                plat = gpu[int(r.integers(len(gpu)))]
                ks = sorted({k for j in f.jobs if j.platform == plat for k in j.kernels})
                kern = tuple(sorted(r.choice(ks, size=min(len(ks), int(r.integers(2, 6))),
                                             replace=False).tolist()))
                skew = {k: float(r.uniform(0.7, 1.35)) for k in kern[:int(r.integers(1, 3))]}
                sha = _fake_sha(seed, branch, t.isoformat()) if r.uniform() < 0.7 else c.sha
                out.append(Run("dashboard", run_id_at(t, int(r.integers(0, 9))), sha, t, branch,
                               False, c.sha, platforms=(plat,), kernels=kern, skew=skew))
        if tpu_side is None and r.uniform() < 0.02:
            f = F.dash_facts(repo, repo.at(base + timedelta(hours=9)).sha)
            if any(j.platform == "tpu" for j in f.jobs):
                tpu_side = d
        if tpu_side is not None and 0 <= (d - tpu_side).days < 5:
            t = base + timedelta(hours=9, minutes=30 + int(r.integers(0, 10)))
            c = repo.at(t)
            out.append(Run("dashboard", run_id_at(t, int(r.integers(0, 9))),
                           _fake_sha(seed, "tpu-side", d.isoformat()), t,
                           "yifeixu/tpu-nightly-benchmark", True, c.sha, platforms=("tpu",)))
        if r.uniform() < 0.06:
            t = base + timedelta(hours=int(r.integers(15, 23)), minutes=int(r.integers(0, 60)))
            c = repo.at(t)
            if F.pre_facts(repo, c.sha) is not None:
                out.append(Run("pretuned", run_id_at(t, int(r.integers(0, 9))), c.sha, t, "main",
                               False, c.sha))
        d += timedelta(days=1)
    times = [n.date for n in ns]
    kept = []
    for run in sorted(out, key=lambda x: x.date):
        later = [i for i, t in enumerate(times) if t >= run.date]
        if later:
            run.night = later[0]
            kept.append(run)
    return kept
