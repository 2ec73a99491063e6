"""build_world: one blind world of Helion nightlies on a window of the real history.

Order of work, and why: (1) the window and each nightly's real sha; (2) what the files say each
nightly measured (specs) and every change of it, attributed to its commit; (3) the regimes and
labels those changes imply; (4) real commits, hardware episodes and noise planted on top,
kept apart unless their overlap is the point; (5) honest values read from the finished model;
(6) the runs, their artifacts, and the two documents published night by night by Helion's own
builders. Everything is planned on the full window, so ``nights=`` only cuts the tail.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path

from . import environment as V
from . import events as E
from . import real as RL
from .core import Ctx, night_specs
from .gitdata import Blobs, first_parent, master_clone, world_clone
from .jsonfmt import Dumper
from .labels import Label, Night
from .publish import Builders, publish_dashboard, publish_pretuned, write_artifacts
from .regimes import build_regimes, collect_changes
from .runs import dashboard_artifacts, pretuned_artifacts, schedule
from .timeline import load_history
from .window import choose_window, nightly_times

PUBLISH_DELAY_H = 6  # the docs deploy runs when the nightly's jobs finish


class World:
    def __init__(self, seed, nights, labels, repo, dash, pre, series, night_ids, window, ctx=None):
        self.seed = seed
        self.nights = nights
        self.labels = labels
        self.repo = repo
        self._dash = dash
        self._pre = pre
        self._series = series
        self._night_ids = night_ids
        self.window = window
        self.ctx = ctx

    def night_of(self, run_id) -> int | None:
        return self._night_ids.get(str(run_id)) if run_id is not None else None

    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self._dash[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        raw = self._pre[n]
        return zlib.decompress(raw) if raw is not None else None

    def series_count(self) -> int:
        return self._series


def _count_series(dash: dict, pre: dict | None) -> int:
    metrics = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
               "compile_time_geomean_s", "helion_latency_avg_ms")
    n = 0
    for s in dash.get("summary", []):
        for m in metrics:
            if any(h.get(m) for h in s.get("history", [])):
                n += 1
    for s in (pre or {}).get("summary", []):
        if any(h.get("geomean") for h in s.get("history", [])):
            n += 1
    return n


def _finalize(ctx, drafts, dash_ids, pre_ids, N) -> list[Label]:
    labels = []
    for d in drafts:
        ids = pre_ids if d.source == "pretuned" else dash_ids
        if d.night < 1 or d.night >= N or ids[d.night] is None or ids[d.night - 1] is None:
            continue
        head = E.HEAD[d.source]
        honest, ds, signs = {}, [], []
        for k in d.keys:
            if d.cause == "noise":
                a, b = ctx.expected(k, d.night, skip=d.skip), ctx.expected(k, d.night)
            else:
                a, b = ctx.expected(k, d.night - 1), ctx.expected(k, d.night)
            if not a or not b:
                continue
            dd = {m: E._rel(a[m], b[m]) for m in a if m in b}
            ds.append(dd)
            signs.append(dd.get(head, 0.0))
            name = f"{k[1]}/{k[2]}"
            if d.honest == "after":
                honest[name] = round(b[head], 4)
            elif d.honest in ("before", "normal"):
                honest[name] = round(a[head], 4)
            elif d.honest == "cg":
                honest[name] = round((a if d.cg_before.get(k, True) else b)[head], 4)
            elif d.honest == "healthy":
                worse = b[head] < a[head]
                honest[name] = round(a[head] if (worse or d.end is not None) else b[head], 4)
        big = [s for s in signs if abs(s) >= 0.02]
        direction = "none" if not big else "regression" if all(s < 0 for s in big) else \
            "improvement" if all(s > 0 for s in big) else "mixed"
        metrics = d.metrics or E.metric_list(ds, d.source)
        end = d.end if d.end is not None and d.end < N else None
        labels.append(Label(
            id=d.id, source=d.source, cause=d.cause, kind=d.kind, direction=direction,
            members=tuple((k[1], k[2]) for k in d.keys), metrics=tuple(metrics),
            first_bad_run_id=ids[d.night], last_good_run_id=ids[d.night - 1],
            end_run_id=ids[end] if end is not None else None, culprit_sha=d.culprit, change_sha=d.change,
            honest_speedup=honest, note=d.note))
    labels.sort(key=lambda l: (l.source != "dashboard", l.first_bad_run_id, l.id))
    return labels


def plan(seed: int, repo: Path):
    """Everything but the documents: the context (model and effects) and the drafts."""
    w = choose_window(seed)
    times = nightly_times(seed, w)
    commits = first_parent(str(repo))
    import bisect

    stamps = [c.time.timestamp() for c in commits]
    nidx = [bisect.bisect_right(stamps, t1.timestamp()) - 1 for t1, _ in times]
    pidx_raw = [bisect.bisect_right(stamps, t2.timestamp()) - 1 for _, t2 in times]
    blobs = Blobs(repo)
    try:
        hist = load_history(repo, blobs, nidx[0], max(pidx_raw[-1], nidx[-1]))
    finally:
        blobs.close()
    pidx = [i if hist.state_at(i).p_nightly[0] else None for i in pidx_raw]
    ctx = Ctx(seed, repo, hist, nidx, pidx, [t for t, _ in times], [t for _, t in times])
    ctx.specs = night_specs(hist, nidx, pidx)
    changes = collect_changes(ctx)
    ctx.book = build_regimes(ctx, changes)
    drafts = E.config_drafts(ctx, changes)
    drafts += RL.plant_real(ctx, drafts)
    drafts += V.plant_environment(ctx, drafts)
    drafts += V.plant_noise(ctx)
    return w, ctx, drafts


def build_world(seed: int, workdir: Path, nights: int | None = None) -> World:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    master = master_clone()
    repo = world_clone(workdir)
    w, ctx, drafts = plan(seed, master)
    N_full = len(ctx.nidx)
    N = min(nights, N_full) if nights else N_full
    dash_runs, pre_runs = schedule(ctx)
    dash_ids = [None] * N_full
    pre_ids = [None] * N_full
    for r in dash_runs:
        if r.kind == "nightly":
            dash_ids[r.night] = r.run_id
    for r in pre_runs:
        pre_ids[r.night] = r.run_id
    labels = [l for l in _finalize(ctx, drafts, dash_ids, pre_ids, N)]
    commits = ctx.hist.commits
    night_list = [Night(dash_ids[n], commits[ctx.nidx[n]].sha, commits[ctx.nidx[n]].sha[:8], ctx.ntimes[n],
                        pre_ids[n], commits[ctx.pidx[n]].sha if ctx.pidx[n] is not None else None) for n in range(N)]
    night_ids = {}
    for n in range(N):
        night_ids[dash_ids[n]] = n
        if pre_ids[n]:
            night_ids[pre_ids[n]] = n
    dash, pre = _publish_all(ctx, dash_runs, pre_runs, N)
    last_d = json.loads(zlib.decompress(dash[-1]))
    last_p = json.loads(zlib.decompress(pre[-1])) if pre[-1] is not None else None
    return World(seed, night_list, labels, repo, dash, pre, _count_series(last_d, last_p), night_ids, w, ctx)


def _publish_all(ctx, dash_runs, pre_runs, N) -> tuple[list, list]:
    from datetime import timedelta

    b = Builders(master_clone())
    shm = Path("/dev/shm")
    tmp = Path(tempfile.mkdtemp(prefix="bw-i-cache-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
    dash, pre = [], []
    try:
        existing, p_existing = {}, {}
        dd, pd = Dumper(), Dumper()
        published, p_published = [], []
        for n in range(N):
            now = ctx.ntimes[n] + timedelta(hours=PUBLISH_DELAY_H)
            cache = tmp / f"d{n}"
            cache.mkdir()
            for r in dash_runs:
                if r.publish == n:
                    write_artifacts(cache, r.run_id, dashboard_artifacts(ctx, r), "helionbench.json")
                    published.append(r)
            st = ctx.hist.state_at(ctx.nidx[n])
            data = publish_dashboard(b, cache, [r.meta() for r in published], existing, st.dispatch_text, now)
            dash.append(zlib.compress(dd.dumps(data).encode(), 1))
            existing = data
            shutil.rmtree(cache, ignore_errors=True)
            new = [r for r in pre_runs if r.publish == n]
            if not new and not p_published:
                pre.append(None)
                continue
            pcache = tmp / f"p{n}"
            pcache.mkdir()
            for r in new:
                write_artifacts(pcache, r.run_id, pretuned_artifacts(ctx, r), "pretuned-bench.json")
                p_published.append(r)
            pst = ctx.hist.state_at(ctx.pidx[n] if ctx.pidx[n] is not None else ctx.nidx[n])
            pnow = ctx.ptimes[n] + timedelta(hours=PUBLISH_DELAY_H)
            pdata = publish_pretuned(b, pcache, [r.meta() for r in p_published], p_existing, pst.p_dispatch_text, pnow)
            pre.append(zlib.compress(pd.dumps(pdata).encode(), 1))
            p_existing = pdata
            shutil.rmtree(pcache, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        b.close()
    return dash, pre
