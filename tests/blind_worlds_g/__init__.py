"""Blind evaluation set G: labeled worlds on the real Helion history (see README.md).

Written only from the shared domain documents and the real Helion repository. A world is three
windows' worth of real first-parent nightlies; per-shape times are simulated; the dashboard and
pretuned documents are produced by Helion's own builders imported from the bundle; labels are
decided from what the planted mechanisms really are (events.py).
"""
from __future__ import annotations

import json
import shutil
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label

from . import publish
from .config import COMPUTE, DEVICE, read_config
from .events import Planner, pick_scatter
from .repo import Repo, clone
from .sim import Effect, dashboard_values, geo, make_series, pretuned_values, rng_for
from .timeline import plan

SEEDS = (61, 62, 63)
WINDOWS = {
    61: dict(start="2025-10-16", end="2026-02-22",
             about="Oct 2025 - Feb 2026: h100/b200/mi325x, speedup timer only (no latency or compile time "
                   "published yet); gemm/welford num_inputs, int4_gemm baselines redefined, LFBO autotuner "
                   "default, quiet January"),
    62: dict(start="2026-01-10", end="2026-05-03",
             about="Jan - May 2026: torch 2.10 pin, ROCm 7.1 image, mi325x runner swap, b200 CUDA 13.1 image, "
                   "grouped_gemm cudagraph removal, mi350x replaces mi325x, compile time and latency appear, "
                   "torch 2.11, tritonbench once, layer_norm-bwd/rms_norm-bwd cudagraph removal, "
                   "compile-time fix in the second-to-last nightly"),
    63: dict(start="2026-05-01", end="2026-08-19",
             about="May - Aug 2026: CuTe/TPU columns, H100 runner migration + cu130, autotune budget, rope "
                   "num_inputs, pretuned suite from 2026-07-01 (torch.compile baselines, L2-clearing timer, "
                   "checked-in config changes), linear-attention rows and their shapes/pretuning, ROCm 7.14 "
                   "in the last nightly"),
}
_HW = {"b200_cute": "b200", "tpu_bridge": "tpu"}
_METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
            "compile_time_geomean_s", "helion_latency_avg_ms")


def bundle_path() -> Path:
    from tests.shared_data import bundle_path as bp
    return bp()


@dataclass(frozen=True)
class NightInfo:
    date: datetime
    full_sha: str
    p_full_sha: str | None
    run_id: str
    p_run_id: str | None


class _Model:
    """Everything the planner and the generator share about one full window."""

    def __init__(self, seed, repo: Repo, fp, nights, extras):
        self.seed, self.repo, self.nights, self.extras = seed, repo, nights, extras
        self.subject = {c["sha"]: c["subject"] for c in fp}
        self.parent_of = {fp[i]["sha"]: fp[i - 1]["sha"] for i in range(1, len(fp))}
        self._touched = repo.all_touched()
        self.numstat = repo.all_numstat()
        self.effects: list[Effect] = []
        self.outages: set = set()
        self._series: dict = {}
        self.scatter_keys: set = set()
        names, vnames = [], []
        for n in nights:
            names += [x for x in n.cfg.linattn_shapes if x not in names]
            vnames += [x for x in n.cfg.varlen_shapes if x not in vnames]
        self.la_names, self.la_vnames = names, vnames
        self._plat = [n.cfg.platforms() for n in nights]

    def touched(self, sha):
        return self._touched.get(sha, ())

    def plat(self, n):
        return self._plat[n]

    def series(self, key):
        s = self._series.get(key)
        if s is None:
            source, ps, k = key
            if source == "pretuned":
                s = make_series(self.seed, source, ps, k, "pretuned")
            else:
                suite = next((p[ps][k].suite for p in self._plat if k in p.get(ps, {})), "gpu")
                shapes = None
                if suite == "linattn":
                    shapes = self.la_vnames if k in self._varlen() else self.la_names
                scat = None
                if (ps, k) in self.scatter_keys:
                    scat = float(rng_for(self.seed, "scat", ps, k).uniform(0.06, 0.09))
                s = make_series(self.seed, source, ps, k, suite, shapes, scatter=scat)
            self._series[key] = s
        return s

    def _varlen(self):
        return set().union(*(n.cfg.varlen_variants for n in self.nights))

    def sel(self, s, cfg, job_suite):
        if job_suite == "linattn":
            names = cfg.varlen_shapes if s.kernel in cfg.varlen_variants else cfg.linattn_shapes
            return [s.universe.index(x) for x in names if x in s.universe]
        if job_suite == "tpu":
            return list(range(s.default_n))
        num = cfg.options.get(s.kernel, (False, None))[1] or s.default_n
        return list(range(min(num, len(s.universe))))

    def no_cg(self, s, cfg, job_suite):
        return job_suite == "gpu" and cfg.options.get(s.kernel, (False, None))[0]

    def pf(self, ps, n):
        return float(np.exp(rng_for(self.seed, "pf", _HW.get(ps, ps), n).normal(0, 0.006)))


def _suite_of(model, ps, k, n):
    j = model.plat(n).get(ps, {}).get(k)
    return j.suite if j else "gpu"


def _truth(model, key, n, cfg, skip=(), field="helion_speedup"):
    s = model.series(key)
    suite = _suite_of(model, key[1], key[2], n)
    v = dashboard_values(model.seed, s, n, model.sel(s, cfg, suite), model.no_cg(s, cfg, suite), True,
                         model.effects, 1.0, noisy=False, skip=skip)
    if field == "helion_latency_ms":
        return float(np.mean(v[field]))
    if field == "helion_compile_time_s":
        return geo(v.get(field, []))
    return geo(v[field])


def _ptruth(model, key, n, p_cfg, skip=()):
    _, alias, k = key
    names = p_cfg[alias][k][0]
    return pretuned_values(model.seed, model.series(key), n, names, model.effects, 1.0, noisy=False, skip=skip)["geomean"]


class World:
    def __init__(self, seed, repo_path, nights, labels, dash, pret, series_count, run_night):
        self.seed = seed
        self.repo = str(repo_path)
        self.nights = nights
        self.labels = labels
        self._dash = dash
        self._pret = pret
        self._series_count = series_count
        self._run_night = run_night

    def night_of(self, run_id):
        return self._run_night.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return self._series_count

    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self._dash[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        b = self._pret[n]
        return None if b is None else zlib.decompress(b)


def _records(model, cfg, job, n, effects_extra=(), salt=0, protected=frozenset(), allow_fail=True):
    """helionbench.json records of one job on one run."""
    recs = []
    hw = _HW.get(job.alias, job.alias)
    if job.suite == "linattn":
        extra = {"device": DEVICE[hw], "backend": "triton", "baseline_label": "FLA"}
        bname = "Helion Linear-Attention Benchmark"
    elif job.suite == "tpu":
        extra, bname = {"device": DEVICE["tpu"]}, "Helion TPU Benchmark"
    else:
        extra = {"device": DEVICE[hw], "backend": job.backend or "triton"}
        bname = "Helion Benchmark"
    effects = model.effects + list(effects_extra)
    for k in job.kernels:
        key = ("dashboard", job.platform_short, k)
        s = model.series(key)
        r = rng_for(model.seed, "fail", job.platform_short, k, n, salt)
        u = r.random()
        if allow_fail and (key, n) not in protected and u < 0.004:
            continue  # artifact missing for this kernel
        v = dashboard_values(model.seed, s, n, model.sel(s, cfg, job.suite), model.no_cg(s, cfg, job.suite),
                             cfg.measure_compile and job.suite != "linattn", effects, model.pf(job.platform_short, n),
                             salt=salt)
        if not v["shapes"]:
            continue
        if allow_fail and (key, n) not in protected and u < 0.008:
            m = len(v["shapes"])
            v.update(helion_speedup=[0.0] * m, helion_accuracy=[0.0] * m, helion_latency_ms=[0.0] * m)
            if "helion_compile_time_s" in v:
                v["helion_compile_time_s"] = [0.0] * m
        elif allow_fail and (key, n) not in protected and u < 0.013 and len(v["shapes"]) > 1:
            # one shape ran but failed the accuracy check (the summary's accuracy_failures)
            acc = list(v["helion_accuracy"])
            acc[int(r.integers(0, len(acc)))] = 0.0
            v["helion_accuracy"] = acc
        if job.suite == "gpu" and not cfg.emits_latency:
            v.pop("helion_latency_ms", None)
        shapes = v.pop("shapes")
        for metric in ("helion_speedup", "triton_speedup", "torch_compile_speedup", "helion_accuracy",
                       "helion_compile_time_s", "helion_latency_ms"):
            if metric not in v:
                continue
            rec = {"benchmark": {"name": bname, "extra_info": dict(extra)}, "model": {"name": k},
                   "metric": {"name": metric, "benchmark_values": [round(float(x), 6) for x in v[metric]]}}
            if cfg.emits_shapes or job.suite != "gpu":
                rec["shape"] = list(shapes)
            recs.append(rec)
    return recs


def build_world(seed: int, workdir: Path, nights: int | None = None) -> World:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    win = WINDOWS[seed]
    repo_path = clone(bundle_path(), workdir / "helion")
    repo = Repo(repo_path)
    try:
        return _build(seed, workdir, nights, win, repo, repo_path)
    finally:
        repo.close()


def _build(seed, workdir, keep, win, repo, repo_path):
    fp = repo.first_parent()
    nplans, extras = plan(repo, fp, seed, win["start"], win["end"])
    cfg_cache = {}

    def cfg_of(sha):
        if sha not in cfg_cache:
            cfg_cache[sha] = read_config(repo, sha)
        return cfg_cache[sha]

    for n in nplans:
        cfg_cache.setdefault(n.sha, n.cfg)
        n.cfg_p_bench = cfg_of(n.p_sha).pretuned_bench_blob if n.p_sha else ""
    model = _Model(seed, repo, fp, nplans, extras)
    model.scatter_keys = set(pick_scatter(model))
    pl = Planner(model)
    for m in model.scatter_keys:
        pl.busy[("dashboard",) + m] = list(range(-10, len(nplans) + 10))
    pl.config_diffs()
    pl.curated()
    pl.pretuned_diffs()
    pl.real_events()
    pl.episodes()

    N = len(nplans)
    off = 0 if keep is None else max(0, N - int(keep))
    kept = nplans[off:]
    protected = set()
    for p in pl.plans:
        for (ps, k) in p.members:
            for x in (p.first_bad - 1, p.first_bad, p.first_bad + 1) + ((p.end - 1, p.end) if p.end else ()):
                protected.add(((p.source, ps, k), x))

    # ---------- documents, night by night, with Helion's own builders
    mods = publish.load_builders(repo, fp[-1]["sha"], workdir / "_builders")
    dash, pret = [], []
    runs_meta, p_runs_meta = [], []
    series_seen: set = set()
    existing = p_existing = None
    ex_sorted = sorted(extras, key=lambda e: e.date)
    prev_date = kept[0].date - timedelta(days=1)
    disp = ".github/workflows/benchmark_dispatch.yml"
    pdisp = ".github/workflows/benchmark_pretuned_dispatch.yml"
    tmp = workdir / "_tmp"
    for n in kept:
        arts = {}
        for j, e in enumerate(ex_sorted):
            if not (prev_date < e.date <= n.date):
                continue
            ecfg = cfg_of(e.sha)
            idx = extras.index(e)
            skew = Effect(f"extra{idx}", frozenset(("dashboard", ps, k) for ps, ks in ecfg.platforms().items() for k in ks),
                          0, None, {"helion": e.helion_skew})
            dirs = {}
            for ji, job in enumerate(ecfg.jobs):
                if job.platform_short not in e.platforms and _HW.get(job.alias) not in e.platforms:
                    continue
                recs = _records(model, ecfg, job, max(n.idx - 1, 0), (skew,), salt=1000 + idx, allow_fail=False)
                if recs:
                    dirs[f"benchmark-results-{job.alias}-{job.suite}{ji}"] = recs
            if dirs:
                arts[e.run_id] = dirs
                runs_meta.append(dict(run_id=e.run_id, sha=e.sha[:8], full_sha=e.sha, date=_iso(e.date),
                                      branch=e.branch, is_nightly=e.is_nightly))
        dirs = {}
        for ji, job in enumerate(n.cfg.jobs):
            if (job.platform_short, n.idx) in model.outages:
                continue
            recs = _records(model, n.cfg, job, n.idx, protected=protected)
            if recs:
                dirs[f"benchmark-results-{job.alias}-{job.suite}{ji}"] = recs
        arts[n.run_id] = dirs
        runs_meta.append(dict(run_id=n.run_id, sha=n.sha[:8], full_sha=n.sha, date=_iso(n.date), branch="main",
                              is_nightly=True))
        now = n.date + timedelta(hours=3)
        b = publish.build_dashboard(mods["dashboard"], tmp, runs_meta, arts, existing, repo.show(n.sha, disp), now)
        existing = json.loads(b)
        dash.append(zlib.compress(b, 6))
        for e in existing.get("summary", []):
            h = e["history"][-1] if e.get("history") else {}
            for f in _METRICS:
                if h.get(f) not in (None, 0, 0.0):
                    series_seen.add(("dashboard", e["platform_short"], e["kernel"], f))
        if n.p_cfg:
            pdirs = {}
            for alias in sorted(n.p_cfg):
                recs = []
                for k in sorted(n.p_cfg[alias]):
                    names, cg, _ = n.p_cfg[alias][k]
                    key = ("pretuned", alias, k)
                    rec = {"kernel": k, "pretuned_hardware": [alias]}
                    u = rng_for(seed, "perr", alias, k, n.idx).random()
                    if u < 0.01 and (key, n.idx) not in protected:
                        rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
                    else:
                        v = pretuned_values(seed, model.series(key), n.idx, names, model.effects, model.pf(alias, n.idx))
                        rec.update(helion_wins=v["helion_wins"], total=v["total"], geomean=v["geomean"],
                                   best_speedup=v["best_speedup"], cudagraph=cg)
                        if "baselines" in v:
                            rec["baselines"] = v["baselines"]
                    rec["device"] = DEVICE[alias]
                    rec["compute_capability"] = COMPUTE[alias]
                    recs.append(rec)
                pdirs[f"pretuned-results-{alias}"] = recs
            p_runs_meta.append(dict(run_id=n.p_run_id, sha=n.p_sha[:8], full_sha=n.p_sha, date=_iso(n.p_date),
                                    branch="main", is_nightly=True))
            pb = publish.build_pretuned(mods["pretuned"], tmp, p_runs_meta, {n.p_run_id: pdirs}, p_existing,
                                        repo.show(n.p_sha, pdisp), n.p_date + timedelta(hours=2))
            p_existing = json.loads(pb)
            pret.append(zlib.compress(pb, 6))
            for e in p_existing.get("summary", []):
                series_seen.add(("pretuned", e["platform_short"], e["kernel"], "geomean"))
        else:
            pret.append(None if p_existing is None else pret[-1])
        prev_date = n.date
    shutil.rmtree(tmp, ignore_errors=True)

    # ---------- labels
    labels = []
    pn = [i for i in range(N) if nplans[i].p_cfg]
    for i, p in enumerate(pl.plans):
        fb = p.first_bad
        if fb - 1 < off or (p.source == "dashboard" and fb - off < 4):
            continue  # a step needs a few nightlies before it to be judged
        if p.source == "pretuned":
            prev = [x for x in pn if x < fb]
            if not prev or prev[-1] < off:
                continue
            lg = nplans[prev[-1]].p_run_id
            fbr = nplans[fb].p_run_id
        else:
            lg, fbr = nplans[fb - 1].run_id, nplans[fb].run_id
        end_id = None
        if p.end is not None and p.cause != "noise":
            if p.end >= N:
                end_id = None
            else:
                end_id = nplans[p.end].run_id
        skip = tuple(getattr(p, "effect_ids", ()))
        honest = {}
        dirs = []
        members = []
        for (ps, k) in p.members:
            if p.source == "pretuned":
                key = ("pretuned", ps, k)
                prevn = [x for x in pn if x < fb][-1]
                before = _ptruth(model, key, prevn, nplans[prevn].p_cfg)
                after = _ptruth(model, key, fb, nplans[fb].p_cfg)
                h = after if p.honest == "after" else _ptruth(model, key, fb, nplans[prevn].p_cfg, skip)
                moves = {"geomean": after / before - 1}
                sign = moves["geomean"]
            else:
                key = ("dashboard", ps, k)
                c0, c1 = nplans[fb - 1].cfg, nplans[fb].cfg
                moves = {}
                fields = {"helion_speedup_geomean": "helion_speedup", "triton_speedup_geomean": "triton_speedup",
                          "torch_compile_speedup_geomean": "torch_compile_speedup"}
                suite = _suite_of(model, ps, k, fb)
                for met, fld in fields.items():
                    if fld == "helion_speedup" or suite == "gpu":
                        moves[met] = _truth(model, key, fb, c1, field=fld) / _truth(model, key, fb - 1, c0, field=fld) - 1
                if c1.emits_latency or suite != "gpu":
                    l0 = _truth(model, key, fb - 1, c0, field="helion_latency_ms")
                    l1 = _truth(model, key, fb, c1, field="helion_latency_ms")
                    moves["helion_latency_avg_ms"] = l0 / l1 - 1          # >0 = faster
                if c1.measure_compile and c0.measure_compile and suite != "linattn":
                    moves["compile_time_geomean_s"] = _truth(model, key, fb - 1, c0, field="helion_compile_time_s") / \
                        _truth(model, key, fb, c1, field="helion_compile_time_s") - 1
                after = _truth(model, key, fb, c1)
                h = after if p.honest == "after" else _truth(model, key, fb, c0, skip)
                sign = moves.get(p.metrics[0], 0.0) if p.metrics else 0.0
            # a member belongs to the label only if one of the label's metrics really moves
            need = {"helion_latency_avg_ms": 0.04, "compile_time_geomean_s": 0.10}
            moved = any(abs(moves.get(m, 0.0)) >= need.get(m, 0.03) for m in p.metrics)
            if p.kind not in ("outage", "blip") and not moved:
                continue
            members.append((ps, k))
            if p.honest != "none":
                honest[f"{ps}/{k}"] = round(float(h), 4)
            dirs.append(sign)
        if not members:
            continue
        direction = "regression" if (not dirs or float(np.median(dirs)) <= 0) else "improvement"
        labels.append(Label(id=f"G{seed}-{i:02d}", source=p.source, cause=p.cause, kind=p.kind,
                            direction=direction, members=tuple(tuple(m) for m in sorted(members)),
                            metrics=tuple(p.metrics), first_bad_run_id=fbr, last_good_run_id=lg, end_run_id=end_id,
                            culprit_sha=p.culprit, change_sha=p.change, honest_speedup=honest, note=p.note))
    # scatter labels: the series is noisy for the whole window
    for j, (ps, k) in enumerate(sorted(model.scatter_keys)):
        key = ("dashboard", ps, k)
        present = [i for i in range(off, N) if k in model.plat(i).get(ps, {})]
        if len(present) < 2:
            continue
        a, b2 = present[0], present[1]
        h = _truth(model, key, b2, nplans[b2].cfg)
        labels.append(Label(id=f"G{seed}-{len(pl.plans) + j:02d}", source="dashboard", cause="noise", kind="scatter",
                            direction="regression", members=((ps, k),), metrics=("helion_speedup_geomean",),
                            first_bad_run_id=nplans[b2].run_id, last_good_run_id=nplans[a].run_id, end_run_id=None,
                            culprit_sha=None, change_sha=None, honest_speedup={f"{ps}/{k}": round(h, 4)},
                            note="6-9% per-timer scatter all window; no step"))

    # ---------- counts and indexes
    count = len(series_seen)
    run_night = {}
    infos = []
    for i, n in enumerate(kept):
        run_night[n.run_id] = i
        if n.p_run_id and n.p_cfg:
            run_night[n.p_run_id] = i
        infos.append(NightInfo(date=n.date, full_sha=n.sha, p_full_sha=n.p_sha if n.p_cfg else None,
                               run_id=n.run_id, p_run_id=n.p_run_id if n.p_cfg else None))
    return World(seed, repo_path, infos, labels, dash, pret, count, run_night)


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")
