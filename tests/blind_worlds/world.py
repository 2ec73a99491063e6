"""Blind labeled evaluation worlds on the real Helion history. See package docstring."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import sys
import types
import zlib
from dataclasses import dataclass, field, asdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from . import repo as R
from .sim import (DEVICE, Matrix, MatrixReader, Model, SeriesCfg, family, geo, h32, rng_for)

WINDOW_END = datetime(2026, 8, 22, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Night:
    run_id: str
    full_sha: str
    sha: str
    date: datetime
    p_run_id: str | None = None  # that day's pretuned nightly run (None before the suite existed)
    p_full_sha: str | None = None


@dataclass(frozen=True)
class Label:
    id: str
    source: str
    cause: str
    kind: str
    direction: str
    members: tuple
    metrics: tuple
    first_bad_run_id: str
    last_good_run_id: str
    end_run_id: str | None
    culprit_sha: str | None
    change_sha: str | None
    honest_speedup: dict
    note: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["members"] = [list(m) for m in self.members]
        d["metrics"] = list(self.metrics)
        return d


@dataclass
class Effect:
    start: int
    end: int | None
    f: dict


@dataclass
class Run:
    run_id: str
    full_sha: str
    date: datetime
    branch: str
    is_nightly: bool
    night: int  # index of the nightly this run is published with (first nightly at/after it)
    kind: str  # nightly | manual | branch
    platforms: tuple | None = None
    skew: float = 1.0


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_builder(repo: Path, name: str, tmp: Path):
    src = repo / ".github" / "dashboard" / f"{name}.py"
    dst = tmp / f"_bw_{name}.py"
    shutil.copyfile(src, dst)  # a temporary checkout copy, imported at run time
    spec = importlib.util.spec_from_file_location(f"_bw_{name}_{id(tmp)}", dst)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _FrozenClock:
    """Stands in for the builder module's `datetime` so its 365-day cutoff is measured from the
    publication time of the document, as on the live site that night."""

    def __init__(self):
        real = datetime
        clock = self

        class _DT(real):
            @classmethod
            def now(cls, tz=None):
                return clock.now

        self.datetime = _DT
        self.timedelta = timedelta
        self.timezone = timezone
        self.now = real.now(timezone.utc)


class BlindWorld:
    def __init__(self, seed: int, workdir: Path, nights: int | None, repo: Path | None = None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = R.clone_repo(repo)
        self.blobs = R.Blobs(self.repo)
        self.commits = R.first_parent(self.repo)
        self.fp_index = {c.sha: i for i, c in enumerate(self.commits)}
        self.mr = MatrixReader(self.blobs, seed)
        self.model = Model(seed)
        self.rng = np.random.default_rng(seed)
        self.effects: dict[tuple, list[Effect]] = {}
        self.labels: list[Label] = []
        self.platform_night: dict = {}
        self._plan_nights(nights)
        self._plan_events()
        self._write_artifacts()
        self._docs: dict = {"dashboard": {}, "pretuned": {}}
        self._state: dict = {"dashboard": (-1, None), "pretuned": (-1, None)}
        self._builders = {}
        tmp = self.workdir / "_builders"
        tmp.mkdir(exist_ok=True)
        self._builders["dashboard"] = _load_builder(self.repo, "build_dashboard_data", tmp)
        self._builders["pretuned"] = _load_builder(self.repo, "build_pretuned_dashboard_data", tmp)
        for mod in self._builders.values():
            clk = _FrozenClock()
            mod.datetime = clk
            mod._bw_clock = clk
        self.blobs.close()

    # ------------------------------------------------------------------ nights and runs
    def _sha_before(self, when: datetime) -> str:
        lo, hi = 0, len(self.commits)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.commits[mid].date < when:
                lo = mid + 1
            else:
                hi = mid
        return self.commits[max(lo - 1, 0)].sha

    def _plan_nights(self, nights: int | None):
        g = rng_for(self.seed, "nights")
        length = int(g.integers(120, 181))
        if nights is not None:
            length = max(int(nights), 8)
        start = WINDOW_END - timedelta(days=length - 1)
        skipped = set(int(x) for x in g.choice(range(5, length - 5), size=2, replace=False)) if length > 20 else set()
        self.nights: list[Night] = []
        run_id = 20_000_000_000 + int(g.integers(0, 10**9)) + self.seed * 7_000_000
        prun = run_id + 3_000_000_000
        for d in range(length):
            day = start + timedelta(days=d)
            if d in skipped:
                continue
            t = day.replace(hour=8, minute=0) + timedelta(minutes=int(g.integers(0, 91)), seconds=int(g.integers(0, 60)))
            sha = self._sha_before(t)
            run_id += int(g.integers(40_000, 90_000))
            pt = day.replace(hour=10, minute=int(g.integers(0, 20)), second=int(g.integers(0, 60)))
            psha = self._sha_before(pt)
            prid = pfs = None
            if self.mr.pretuned(psha).series:
                prun += int(g.integers(40_000, 90_000))
                prid, pfs = str(prun), psha
            self.nights.append(Night(str(run_id), sha, sha[:8], t, prid, pfs))
        self._night_by_run = {n.run_id: i for i, n in enumerate(self.nights)}
        self._night_by_run.update({n.p_run_id: i for i, n in enumerate(self.nights) if n.p_run_id})
        # extra runs: manual dispatches on main and side-branch runs (never the trend)
        self.runs: list[Run] = []
        self.pruns: list[Run] = []
        for i, n in enumerate(self.nights):
            self.runs.append(Run(n.run_id, n.full_sha, n.date, "main", True, i, "nightly"))
            if n.p_run_id:
                self.pruns.append(Run(n.p_run_id, n.p_full_sha, n.date.replace(hour=10), "main", True, i, "nightly"))
        n_extra = max(2, len(self.nights) // 25)
        for j in range(n_extra * 2):
            i = int(g.integers(1, len(self.nights)))
            when = self.nights[i - 1].date + timedelta(hours=int(g.integers(3, 20)), minutes=int(g.integers(0, 59)))
            if when >= self.nights[i].date:
                continue
            manual = j % 2 == 0
            rid = str(int(self.nights[i - 1].run_id) + int(g.integers(1_000, 30_000)))
            sha = self._sha_before(when) if manual else self.commits[self.fp_index[self._sha_before(when)]].sha
            plats = ("b200",) if manual else (("tpu",) if j % 4 == 1 else ("h100", "b200"))
            self.runs.append(Run(rid, sha, when, "main" if manual else f"user/exp-{h32(rid) % 997}",
                                 (not manual) and j % 4 == 1, i, "manual" if manual else "branch", plats,
                                 float(math.exp(g.normal(0, 0.12)))))
            if manual and self.nights[i].p_run_id and j % 3 == 0:
                self.pruns.append(Run(str(int(rid) + 11), sha, when + timedelta(minutes=5), "main", False, i, "manual",
                                      ("b200",), float(math.exp(g.normal(0, 0.1)))))
        self.runs.sort(key=lambda r: r.date)
        self.pruns.sort(key=lambda r: r.date)
        # platform outages (artifact missing for a night) – not labeled: no data is not a move
        self.missing = {(int(g.integers(3, len(self.nights))), str(g.choice(["mi350x", "h100", "tpu"])))
                        for _ in range(2)}

    def night_of(self, run_id) -> int | None:
        return self._night_by_run.get(str(run_id))

    # ------------------------------------------------------------------ matrices
    def dmatrix(self, i: int) -> Matrix:
        return self.mr.dashboard(self.nights[i].full_sha)

    def pmatrix(self, i: int) -> Matrix:
        n = self.nights[i]
        return self.mr.pretuned(n.p_full_sha) if n.p_full_sha else Matrix()

    def first_night_with(self, sha: str, pretuned: bool = False) -> int | None:
        ci = self.fp_index[sha]
        for i, n in enumerate(self.nights):
            s = n.p_full_sha if pretuned else n.full_sha
            if s and self.fp_index[s] >= ci:
                return i
        return None

    def commits_between(self, i: int, pretuned: bool = False):
        """Commits in (nightly i-1, nightly i] (first-parent)."""
        key = (lambda n: n.p_full_sha) if pretuned else (lambda n: n.full_sha)
        a, b = key(self.nights[i - 1]), key(self.nights[i])
        if not a or not b:
            return []
        return self.commits[self.fp_index[a] + 1: self.fp_index[b] + 1]

    from .plan import plan_events as _plan_events  # noqa: E402
    from .labels import finalize_labels as _finalize_labels, diff_text as _diff  # noqa: E402
    _Effect = Effect

    def _read(self, sha, path):
        return self.blobs.read(sha, path) if self.blobs._p.poll() is None else R.git_show(self.repo, sha, path)
    from .emit import write_artifacts as _write_artifacts, dashboard_bytes, pretuned_bytes, series_count  # noqa: E402


def build_world(seed: int, workdir: Path, nights: int | None = None, repo: Path | None = None) -> BlindWorld:
    return BlindWorld(seed, Path(workdir), nights, repo)
