"""Assembling a world: the run schedule, raw artifacts, published documents and resolved labels.

Why it exists: this is the only module that knows the order of things. It lays out the
nightlies on the real first-parent shas (cron 08:00 UTC plus GitHub's dispatch delay; the
pretuned cron at 10:00 UTC once its workflow exists), adds manual dispatches and side-branch
runs, asks `plans` and `changes` for the events, simulates every run's artifacts with `sim`,
feeds them to Helion's builders one nightly at a time (`builders`), and turns each `LabelSpec`
into a `tests.blind_worlds.world.Label` whose run ids, members and honest speedups come from
the same schedule and model that produced the documents.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import pickle
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path

from tests.blind_worlds.world import Label

from . import builders, rng, sim
from .events import Effect, LabelSpec
from .facts import DISPATCH, P_DISPATCH, NightFacts, facts_at
from .repo import Repo, open_repo

UTC = dt.timezone.utc


@dataclass
class Night:
    date: dt.datetime
    run_id: str
    full_sha: str
    p_run_id: str | None = None
    p_full_sha: str | None = None
    day: str = ""
    index: int = 0


@dataclass
class Run:
    run_id: str
    source: str                 # dashboard | pretuned
    kind: str                   # nightly | manual | side
    time: dt.datetime
    sha: str                    # main commit whose files/state the run measures
    report_sha: str             # head sha the run reports (a branch tip for side-branch runs)
    branch: str
    is_nightly: bool
    day: str
    key: str                    # noise key (independent of how many nightlies are kept)
    sha_idx: int
    night: int | None = None
    platforms: tuple | None = None
    kernels: tuple | None = None
    helion_extra: float = 1.0   # side-branch work in progress / manual env tweaks

    def meta(self) -> dict:
        return {"run_id": self.run_id, "sha": self.report_sha[:8], "full_sha": self.report_sha,
                "date": self.time.strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": self.branch,
                "is_nightly": self.is_nightly}


def run_id_at(t: dt.datetime, *salt) -> str:
    base = 19_000_000_000 + int((t - dt.datetime(2025, 10, 1, tzinfo=UTC)).total_seconds() * 2.7)
    return str(base + rng.key_int("rid", *salt) % 997)


# ---------------------------------------------------------------------------------------------
DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}
AMD_ARCH = {"mi325x": "gfx942:sramecc+:xnack-", "mi350x": "gfx950:sramecc+:xnack-"}
FULL_NAME = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200"}
COMPUTE = {"h100": "sm90", "b200": "sm100"}


@dataclass
class Series:
    platform: str
    suite: str
    kernel: str
    alias: str
    job_kernels: tuple


def linattn_rows(variants, fwd_only) -> list[str]:
    out = []
    for v in variants:
        base = v[:-4] if v.endswith("-bwd") else v
        for row in (base, f"{base}-bwd"):
            if row.endswith("-bwd") and base in fwd_only:
                continue
            if row not in out:
                out.append(row)
    return out


def series_of(f: NightFacts) -> list[Series]:
    out = []
    for j in f.jobs:
        rows = linattn_rows(j.kernels, f.linattn_fwd_only) if j.suite == "linattn" else list(j.kernels)
        for k in rows:
            out.append(Series(j.platform, j.suite, k, j.alias, j.kernels))
    return out


class Ctx:
    """Everything plans/changes need to know about a world before it is simulated."""

    def __init__(self, seed: int, repo: Repo, nightly: list[Run], pretuned: list[Run]):
        self.seed = seed
        self.repo = repo
        self.nightly = nightly
        self.pnightly = pretuned
        self.facts = [facts_at(repo, r.sha) for r in nightly]
        self.pfacts = [facts_at(repo, r.sha) for r in pretuned]
        self.series = [series_of(f) for f in self.facts]
        self.baseline_level: dict = {}   # (torch pin, platform, kernel) -> (baseline, tc) factor
        self.pbase_level: dict = {}      # (pretuned torch pin, alias, kernel, baseline) -> factor
        self.aot_level: dict = {}        # (platform, kernel) -> helion factor under AOT configs
        self.labels: list[LabelSpec] = []
        self.effects: list[Effect] = []

    # commits ---------------------------------------------------------------------------------
    def sha(self, prefix: str) -> str:
        hits = [c.sha for c in self.repo.commits if c.sha.startswith(prefix)]
        assert len(hits) == 1, prefix
        return hits[0]

    def idx(self, prefix: str) -> int:
        return self.repo.by_sha[self.sha(prefix)]

    def night_of_commit(self, prefix: str, source: str = "dashboard") -> int | None:
        i = self.idx(prefix)
        runs = self.nightly if source == "dashboard" else self.pnightly
        for n, r in enumerate(runs):
            if r.sha_idx >= i:
                return n
        return None

    def night_on(self, day: str) -> int | None:
        """The nightly of that day (or the first one after it, if the cron skipped the day)."""
        for n, r in enumerate(self.nightly):
            if r.day >= day:
                return n
        return None

    def running(self, n: int, platform: str | None = None) -> list[tuple]:
        return [(s.platform, s.kernel) for s in self.series[n] if platform in (None, s.platform)]


# ---------------------------------------------------------------------------------------------
def _days(start: str, end: str) -> list[dt.date]:
    a, b = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return [a + dt.timedelta(days=i) for i in range((b - a).days + 1)]


def schedule(seed: int, repo: Repo, start: str, end: str) -> tuple[list[Run], list[Run], list[Run]]:
    nightly, pnightly, other = [], [], []
    for d in _days(start, end):
        day = d.isoformat()
        if day != end and rng.chance(0.008, seed, "cron-skip", day):
            continue  # GitHub dropped the cron this day
        t = dt.datetime(d.year, d.month, d.day, 8, 0, tzinfo=UTC) + dt.timedelta(
            seconds=int(rng.uniform(110, 1150, seed, "delay", day)))
        sha = repo.sha_at(t)
        nightly.append(Run(run_id_at(t, seed, day, "n"), "dashboard", "nightly", t, sha, sha, "main",
                           True, day, f"N{day}", repo.by_sha[sha], len(nightly)))
        tp = dt.datetime(d.year, d.month, d.day, 10, 0, tzinfo=UTC) + dt.timedelta(
            seconds=int(rng.uniform(60, 900, seed, "pdelay", day)))
        psha = repo.sha_at(tp)
        if facts_at(repo, psha).pretuned and not rng.chance(0.01, seed, "pskip", day):
            pnightly.append(Run(run_id_at(tp, seed, day, "p"), "pretuned", "nightly", tp, psha, psha,
                                "main", True, day, f"P{day}", repo.by_sha[psha], len(nightly) - 1))
        # manual dispatches (someone re-running a few kernels) and side-branch runs
        if rng.chance(0.11, seed, "manual", day):
            tm = dt.datetime(d.year, d.month, d.day, 15, 0, tzinfo=UTC) + dt.timedelta(
                seconds=int(rng.uniform(0, 7 * 3600, seed, "mt", day)))
            msha = repo.sha_at(tm)
            other.append(Run(run_id_at(tm, seed, day, "m"), "dashboard", "manual", tm, msha, msha, "main",
                             False, day, f"M{day}", repo.by_sha[msha],
                             helion_extra=rng.pick([1.0, 1.0, 1.06, 0.97], seed, "mx", day)))
        elif rng.chance(0.045, seed, "side", day):
            tm = dt.datetime(d.year, d.month, d.day, 18, 0, tzinfo=UTC) + dt.timedelta(
                seconds=int(rng.uniform(0, 4 * 3600, seed, "st", day)))
            msha = repo.sha_at(tm)
            branch = rng.pick(["gh/jansel/412/head", "yf225/tpu-nightly-benchmark", "cute-perf-sweep",
                               "oulgen/autotune-budget", "amd/rocm-bench"], seed, "br", day)
            other.append(Run(run_id_at(tm, seed, day, "s"), "dashboard", "side", tm, msha,
                             rng.fake_sha(seed, "side", day), branch, rng.chance(0.3, seed, "sn", day),
                             day, f"S{day}", repo.by_sha[msha],
                             helion_extra=rng.uniform(0.8, 1.25, seed, "sx", day)))
    return nightly, pnightly, other


# ---------------------------------------------------------------------------------------------
class Model:
    """Turns (run, series) into the harness's per-shape numbers, using the world's events."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx
        self.seed = ctx.seed
        self._quiet: set = set()      # (platform, kernel, day) where no background mishap is drawn

    def method(self, run: Run, f: NightFacts, s: Series) -> sim.Method:
        fam = sim.family(s.kernel)
        fixed = run.is_nightly and "RANDOM_SEED" in f.nightly_env
        if s.suite == "linattn":
            names = f.linattn_varlen_shapes if s.kernel in ("kda_varlen",) else f.linattn_shapes
            aot = f.linattn_aot and ("*" in f.linattn_aot or s.alias in f.linattn_aot)
            return sim.Method(True, list(names), 6, True, False, False, None, False, True,
                              helion_shift=self.ctx.aot_level.get((s.platform, s.kernel), 1.0) if aot else 1.0,
                              has_triton=False, has_tc=False)
        if s.suite in ("tpu", "tpu_bridge"):
            n = f.tpu_num_shapes if s.suite == "tpu" else 2
            labels = sim.tpu_shape_labels(s.kernel, n) if s.suite == "tpu" else sim.shape_labels(s.kernel, 2)
            return sim.Method(True, labels, max(n, 2), True, True, False, None, False, fixed,
                              has_triton=False)
        rc, n = f.opts(s.kernel)
        full = max(sim.DEFAULT_SHAPES[fam], n or 0)
        labels = sim.shape_labels(s.kernel, n or sim.DEFAULT_SHAPES[fam])
        b, tc = self.ctx.baseline_level.get((f.torch_pin, s.platform, s.kernel), (1.0, 1.0))
        return sim.Method(f.cudagraph_flag and not rc, labels, full, f.has_latency, f.has_compile_time,
                          f.two_pass, f.budget_s, f.subprocess_env or f.subprocess_default, fixed,
                          baseline_shift=b, tc_shift=tc)

    def factors(self, run: Run, s: Series, include_transient=True, include_background=True,
                skip: str | None = None) -> sim.Factors:
        fa = sim.Factors()
        key = (s.platform, s.kernel)
        for e in self.ctx.effects:
            if e.source != "dashboard" or key not in e.members or e.id == skip:
                continue
            if e.transient and not include_transient:
                continue
            if not e.active(run):
                continue
            spec = e.members[key]
            wob = 1.0
            if e.jitter:
                wob = math.exp(rng.normal(e.jitter, self.seed, "jit", e.id, run.key, s.platform))
            part = sim.Factors()
            for comp, v in spec.items():
                if comp == "fail":
                    part.fail = bool(v)
                elif comp == "shapes":
                    part.extra["shapes"] = dict(v)
                elif comp == "shape_fail":
                    part.shape_fail = tuple(v)
                elif comp in ("db_add", "launch_add"):
                    fa.extra[comp] = fa.extra.get(comp, 0.0) + v
                else:
                    setattr(part, comp, v ** wob if v != 1.0 else 1.0)
            if "shapes" in part.extra:
                fa.extra.setdefault("shapes", {})
                for lab, v in part.extra["shapes"].items():
                    fa.extra["shapes"][lab] = fa.extra["shapes"].get(lab, 1.0) * v
            fa.mul(part)
        fa.helion *= run.helion_extra
        if include_background and run.kind == "nightly" and (s.platform, s.kernel, run.day) not in self._quiet:
            self._background(run, s, fa)
        return fa

    def _background(self, run: Run, s: Series, fa: sim.Factors) -> None:
        k = (self.seed, "bg", s.platform, s.suite, s.kernel, run.day)
        u = rng.key_int(*k) / 2.0 ** 64
        if u < 0.010:   # a stray single-timer outlier
            comp = rng.pick(["cg_only", "cg_only", "baseline", "db_only", "tc"], *k, "c")
            mag = rng.uniform(1.15, 1.20, *k, "m") ** (1 if rng.chance(0.7, *k, "d") else -1)
            setattr(fa, comp, getattr(fa, comp) * mag)
        elif u < 0.014:
            fa.fail = True
        elif u < 0.026:
            fa.extra["fail_shapes"] = int(rng.uniform(1, 2.99, *k, "nf"))
        elif u < 0.030:
            fa.extra["acc_shapes"] = 1

    def measure(self, run: Run, f: NightFacts, s: Series, noise=True, **kw) -> dict:
        p = sim.profile(s.platform, s.suite, s.kernel, noisy=self.ctx.noise_scale.get((s.platform, s.kernel), 1.0))
        m = self.method(run, f, s)
        fa = self.factors(run, s, include_background=noise, **kw)
        nf = fa.extra.get("fail_shapes")
        if nf:
            fa.shape_fail = tuple(m.labels[-nf:])
        if fa.extra.get("acc_shapes"):
            fa.acc_fail = (m.labels[len(m.labels) // 2],)
        return sim.measure(self.seed, run.key, p, m, fa, noise)


# ---------------------------------------------------------------------------------------------
def tritonbench_records(f: NightFacts, s: Series, device: str, backend: str, vals: dict, labels) -> list:
    order = ["triton_speedup", "triton_accuracy", "torch_compile_speedup", "torch_compile_accuracy",
             "helion_speedup", "helion_accuracy", "helion_latency_ms"]
    extra = {"device": device}
    if f.json_backend:
        extra["backend"] = backend
    recs = []
    for name in order + ["helion_compile_time_s"]:
        if name not in vals:
            continue
        r = {"benchmark": {"name": "Helion Benchmark", "extra_info": dict(extra)},
             "model": {"name": s.kernel}, "metric": {"name": name, "benchmark_values": vals[name]}}
        if f.json_shape:
            r["shape"] = list(labels)
        recs.append(r)
    return recs


def linattn_records(device: str, s: Series, vals: dict, labels) -> list:
    recs = []
    for name in ("helion_accuracy", "helion_latency_ms", "helion_speedup"):
        recs.append({"benchmark": {"name": "Helion Linear-Attention Benchmark",
                                   "extra_info": {"device": device, "backend": "triton", "baseline_label": "FLA"}},
                     "model": {"name": s.kernel}, "metric": {"name": name, "benchmark_values": vals[name]},
                     "shape": list(labels)})
    return recs


def tpu_records(s: Series, vals: dict, labels) -> list:
    recs = []
    for name in ("helion_accuracy", "helion_latency_ms", "helion_speedup", "torch_compile_speedup",
                 "helion_compile_time_s"):
        if name in vals:
            recs.append({"benchmark": {"name": "Helion TPU Benchmark", "extra_info": {"device": "TPU v7"}},
                         "model": {"name": s.kernel}, "metric": {"name": name, "benchmark_values": vals[name]},
                         "shape": list(labels)})
    return recs


def shards(kernels: tuple, n: int) -> list[tuple]:
    jobs = min(len(kernels), max(n, 1))
    buckets = [[] for _ in range(jobs)]
    for i, k in enumerate(kernels):
        buckets[i % jobs].append(k)
    return [tuple(b) for b in buckets]


def dashboard_artifacts(model: Model, run: Run, f: NightFacts) -> dict:
    ctx = model.ctx
    arts = {}
    by_job: dict = {}
    for s in series_of(f):
        by_job.setdefault((s.alias, s.suite), []).append(s)
    for j in f.jobs:
        if run.platforms is not None and j.platform not in run.platforms:
            continue
        if run.kind == "nightly" and (j.platform, run.day) in ctx.platform_down:
            continue
        series = {s.kernel: s for s in by_job.get((j.alias, j.suite), [])}
        if j.suite in ("tpu", "tpu_bridge"):
            groups = [(f"benchmark-results-{j.alias}", tuple(series))]
        else:
            groups = [(f"benchmark-results-{j.alias}-{','.join(b)}", b) for b in shards(j.kernels, j.max_runners)]
        for gi, (art, members) in enumerate(groups):
            if run.kind == "nightly" and rng.chance(0.006, model.seed, "shard", j.platform, j.suite, gi, run.day) \
                    and not any((j.platform, k, run.day) in model._quiet for k in series):
                continue   # that shard's job failed / was cancelled: no artifact
            recs = []
            rows = []
            for k in members:
                if j.suite == "linattn":
                    base = k[:-4] if k.endswith("-bwd") else k
                    rows += [r for r in (base, f"{base}-bwd") if r in series and r not in rows]
                else:
                    rows += [k] if k in series else []
            for k in rows:
                if run.kernels is not None and k not in run.kernels:
                    continue
                s = series[k]
                m = model.method(run, f, s)
                if not m.labels:
                    continue
                vals = model.measure(run, f, s)
                if j.suite == "linattn":
                    recs += linattn_records(FULL_NAME.get(j.alias, DEVICE.get(j.alias)), s, vals, m.labels)
                elif j.suite in ("tpu", "tpu_bridge"):
                    recs += tpu_records(s, vals, m.labels)
                else:
                    dev = DEVICE[j.platform]
                    if j.platform in AMD_ARCH and f.amd_arch_in_name:
                        dev = f"{dev} {AMD_ARCH[j.platform]}"
                    recs += tritonbench_records(f, s, dev, j.backend, vals, m.labels)
            if recs:
                arts[art] = json.dumps(recs).encode()
    return arts


def pretuned_values(model: Model, run: Run, f: NightFacts, alias: str, pk, noise=True,
                    include_transient=True, skip=None) -> dict:
    ctx = model.ctx
    pp = sim.pretuned_profile(alias, pk.name, pk.baselines)
    fa = sim.Factors()
    for e in ctx.effects:
        if e.source != "pretuned" or (alias, pk.name) not in e.members or e.id == skip:
            continue
        if (e.transient and not include_transient) or not e.active(run):
            continue
        for comp, v in e.members[(alias, pk.name)].items():
            if comp == "fail":
                fa.fail = True
            else:
                setattr(fa, comp, getattr(fa, comp) * v)
    cfg = dict(pk.configs).get(alias)
    fa.helion *= ctx.pconfig_level.get((alias, pk.name, cfg), 1.0)
    shift = {b: ctx.pbase_level.get((f.pretuned_torch_pin, alias, pk.name, b), 1.0) for b in pk.baselines}
    l2 = run.sha_idx >= getattr(ctx, "l2_from", 10 ** 9)
    if fa.fail:
        return {"error": "RuntimeError: CUDA error: an illegal memory access was encountered"}
    scale = ctx.noise_scale.get(("pretuned", alias, pk.name), 1.0)
    return sim.measure_pretuned(model.seed, run.key, pp, pk.baselines, pk.cudagraph, l2, fa, shift, noise, scale)


def pretuned_artifacts(model: Model, run: Run, f: NightFacts) -> dict:
    arts = {}
    for alias, runner, image in f.pretuned_jobs:
        recs = []
        for pk in f.pretuned:
            rec = {"kernel": pk.name, "pretuned_hardware": list(pk.hardware)}
            if alias not in pk.hardware:
                rec["skipped"] = f"pretuned for {list(pk.hardware)}; current hardware is {alias}"
            else:
                vals = pretuned_values(model, run, f, alias, pk)
                if "error" in vals:
                    rec["error"] = vals["error"]
                else:
                    rec.update(helion_wins=vals["helion_wins"], total=vals["total"], geomean=vals["geomean"],
                               best_speedup=vals["best_speedup"], cudagraph=pk.cudagraph)
                    if vals.get("baselines"):
                        rec["baselines"] = vals["baselines"]
            rec["device"] = FULL_NAME.get(alias, alias)
            rec["compute_capability"] = COMPUTE.get(alias, "")
            recs.append(rec)
        arts[f"pretuned-results-{alias}"] = json.dumps(recs).encode()
    return arts


# ---------------------------------------------------------------------------------------------
def _truth_dash(model: Model, n: int, key: tuple, skip: str | None = None, transient=False) -> dict | None:
    ctx = model.ctx
    s = next((x for x in ctx.series[n] if (x.platform, x.kernel) == key), None)
    if s is None:
        return None
    run, f = ctx.nightly[n], ctx.facts[n]
    p = sim.profile(s.platform, s.suite, s.kernel)
    m = model.method(run, f, s)
    m.fixed_seed = True
    fa = model.factors(run, s, include_transient=transient, include_background=False, skip=skip)
    fa.helion /= run.helion_extra
    vals = sim.measure(model.seed, run.key, p, m, fa, noise=False)
    out = {"helion_speedup_geomean": round(sim.geomean(vals["helion_speedup"]), 4),
           "triton_speedup_geomean": round(sim.geomean(vals.get("triton_speedup", [])), 4),
           "torch_compile_speedup_geomean": round(sim.geomean(vals.get("torch_compile_speedup", [])), 4)}
    if "helion_latency_ms" in vals:
        out["helion_latency_avg_ms"] = sum(vals["helion_latency_ms"]) / len(vals["helion_latency_ms"])
    if "helion_compile_time_s" in vals:
        out["compile_time_geomean_s"] = sim.geomean(vals["helion_compile_time_s"])
    return out


def _truth_pre(model: Model, n: int, key: tuple, skip: str | None = None, transient=False) -> dict | None:
    ctx = model.ctx
    f = ctx.pfacts[n]
    pk = f.pretuned_kernel(key[1])
    if pk is None or key[0] not in pk.hardware:
        return None
    vals = pretuned_values(model, ctx.pnightly[n], f, key[0], pk, noise=False, include_transient=transient, skip=skip)
    return None if "error" in vals else {"geomean": vals["geomean"]}


def _resolve(ctx: Ctx, spec: LabelSpec):
    runs = ctx.nightly if spec.source == "dashboard" else ctx.pnightly
    if spec.effect is not None:
        act = [spec.effect.active(r) for r in runs]
        if True not in act:
            return None
        first = act.index(True)
        end = next((i for i in range(first, len(runs)) if not act[i]), None)
        if spec.effect.dates and end is not None and any(act[end:]):
            end = None
        return first, end
    return spec.first_night, spec.end_night


def resolve_labels(ctx: Ctx, model: Model) -> list[dict]:
    out = []
    for spec in ctx.labels:
        r = _resolve(ctx, spec)
        if r is None or r[0] is None or r[0] < 1:
            continue
        first, end = r
        truth = _truth_dash if spec.source == "dashboard" else _truth_pre
        headline = "helion_speedup_geomean" if spec.source == "dashboard" else "geomean"
        honest, moves = {}, []
        members = []
        for key in spec.members:
            prev = first - 1   # the series' last nightly before first-bad (a job may have been off)
            while prev > 0 and prev > first - 8 and truth(model, prev, key) is None:
                prev -= 1
            before = truth(model, prev, key)
            after = truth(model, first, key)
            if before is None or after is None or not before[headline]:
                continue   # not running, or failing on every shape before the event
            b_t, a_t = truth(model, prev, key, transient=True), truth(model, first, key, transient=True)
            members.append(key)
            metric = spec.primary_metric if spec.source == "dashboard" else "geomean"
            if metric in b_t and metric in a_t and b_t[metric] and a_t[metric]:
                moves.append(math.log(a_t[metric] / b_t[metric]) * (-1 if metric in (
                    "compile_time_geomean_s", "helion_latency_avg_ms") else 1))
            else:
                moves.append(0.0)
            rule = spec.honest
            if rule == "hw":   # hardware: the healthy side (after only for a persistent improvement)
                rule = "after" if spec.extra.get("improvement") else "before"
            if rule == "before":
                h = before[headline]
            elif rule == "normal":
                h = truth(model, first, key, skip=spec.effect.id if spec.effect else None)[headline]
            else:
                h = after[headline]
            honest[f"{key[0]}/{key[1]}"] = round(h, 4)
        if spec.extra.get("min_move") and moves:
            keep = [(k, mv) for k, mv in zip(members, moves) if abs(mv) >= spec.extra["min_move"]]
            members = [k for k, _ in keep]
            moves = [mv for _, mv in keep]
            honest = {k: v for k, v in honest.items() if tuple(k.split("/", 1)) in set(members)}
        if not members:
            continue
        direction = spec.direction
        if direction is None:
            mean = sum(moves) / len(moves) if moves else 0.0
            if moves and all(m > 0.01 for m in moves):
                direction = "improvement"
            elif moves and all(m < -0.01 for m in moves):
                direction = "regression"
            else:
                direction = "improvement" if mean > 0.02 else "regression" if mean < -0.02 else "mixed"
        out.append(dict(spec=spec, first=first, end=end, members=tuple(sorted(members)), honest=honest,
                        direction=direction))
    return out


class World:
    def __init__(self, seed: int, repo: str, nights: list[Night], labels: list[Label], docs: list[bytes],
                 pdocs: list[bytes | None], night_index: dict, n_series: int):
        self.seed = seed
        self.repo = repo
        self.nights = nights
        self.labels = labels
        self._docs = docs
        self._pdocs = pdocs
        self._night_index = night_index
        self._n_series = n_series

    def night_of(self, run_id) -> int | None:
        return self._night_index.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return self._n_series

    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self._docs[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        d = self._pdocs[n]
        return None if d is None else zlib.decompress(d)


def _code_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_world(seed: int, workdir, nights: int | None = None) -> World:
    from . import WINDOWS
    from .changes import detect
    from .plans import plan

    workdir = Path(workdir)
    repo = open_repo(workdir)
    cache = workdir / "blind_worlds_h_cache" / f"w{seed}-{nights}-{_code_hash()}-{repo.commits[-1].sha[:8]}.pkl"
    if cache.exists() and not os.environ.get("BLIND_WORLDS_H_NO_CACHE"):
        try:
            d = pickle.loads(cache.read_bytes())
            return World(seed, str(repo.path), d["nights"], d["labels"], d["docs"], d["pdocs"],
                         d["night_index"], d["n_series"])
        except Exception:
            pass
    w = WINDOWS[seed]
    nightly, pnightly, other = schedule(seed, repo, w["start"], w["end"])
    ctx = Ctx(seed, repo, nightly, pnightly)
    ctx.noise_scale = {}
    ctx.platform_down = set()
    ctx.pconfig_level = {}
    model = Model(ctx)
    ctx.model = model
    ctx.reserved = set()
    # what the checked-in linear-attention AOT configs do vs autotuning, per row (used once a
    # job switches to AOTAutotuneCache)
    for sl in ctx.series:
        for s in sl:
            if s.suite == "linattn":
                ctx.aot_level[(s.platform, s.kernel)] = rng.uniform(0.86, 1.1, seed, "aot", s.platform, s.kernel)
    changes = detect(ctx, model)
    plan(seed, ctx, changes)
    resolved = resolve_labels(ctx, model)

    # quiet zones: no background mishaps on a labeled series around its first-bad / end nightlies
    for r in resolved:
        if r["spec"].kind == "scatter" or r["spec"].source != "dashboard":
            continue
        for n0 in (r["first"], r["end"]):
            if n0 is None:
                continue
            for n in range(max(n0 - 3, 0), min(n0 + 3, len(nightly))):
                for key in r["members"]:
                    model._quiet.add((key[0], key[1], nightly[n].day))
    for n, run in enumerate(nightly):
        for plat in sorted({s.platform for s in ctx.series[n]}):
            if rng.chance(0.004, seed, "down", plat, run.day) and not any(
                    (plat, k, run.day) in model._quiet for _, k in ctx.running(n, plat)):
                ctx.platform_down.add((plat, run.day))

    # which nightlies are kept
    start = 0 if nights is None else max(len(nightly) - nights, 0)
    kept = nightly[start:]
    t0 = kept[0].time
    scratch = builders.scratch_dir(workdir)
    dash_pub = builders.Publisher(builders.load(repo.path, workdir, "build_dashboard_data"),
                                  scratch / "dashboard", pretuned=False)
    pre_pub = builders.Publisher(builders.load(repo.path, workdir, "build_pretuned_dashboard_data"),
                                 scratch / "pretuned", pretuned=True)
    others = sorted([r for r in other if r.time > t0], key=lambda r: r.time)
    oi = 0
    docs, pdocs = [], []
    pre_by_day = {r.day: (i, r) for i, r in enumerate(pnightly)}
    last_p = None
    out_nights = []
    night_index = {}
    series_keys = set()
    for n in range(start, len(nightly)):
        run = nightly[n]
        f = ctx.facts[n]
        batch = []
        while oi < len(others) and others[oi].time < run.time:
            o = others[oi]
            oi += 1
            fo = facts_at(repo, o.sha)
            pick_plats = sorted({j.platform for j in fo.jobs})
            if not pick_plats:
                continue
            nplat = 1 if rng.chance(0.7, seed, "np", o.key) else 2
            plats = tuple(sorted({rng.pick(pick_plats, seed, "pp", o.key, i) for i in range(nplat)}))
            ks = sorted({s.kernel for s in series_of(fo) if s.platform in plats})
            nk = int(rng.uniform(1, 4.99, seed, "nk", o.key))
            o.platforms = plats
            o.kernels = tuple(sorted({rng.pick(ks, seed, "kk", o.key, i) for i in range(nk)}))
            arts = dashboard_artifacts(model, o, fo)
            if arts:
                batch.append((o.meta(), arts))
        arts = dashboard_artifacts(model, run, f)
        batch.append((run.meta(), arts))
        series_keys |= {(s.platform, s.kernel) for s in ctx.series[n]}
        docs.append(zlib.compress(dash_pub.publish(run.time + dt.timedelta(hours=5), batch,
                                                   repo.read(run.sha, DISPATCH) or ""), 1))
        p_run_id = p_sha = None
        if run.day in pre_by_day:
            pi, prun = pre_by_day[run.day]
            pf = ctx.pfacts[pi]
            last_p = zlib.compress(pre_pub.publish(prun.time + dt.timedelta(hours=3),
                                                   [(prun.meta(), pretuned_artifacts(model, prun, pf))],
                                                   repo.read(prun.sha, P_DISPATCH) or ""), 1)
            p_run_id, p_sha = prun.run_id, prun.sha
            night_index[prun.run_id] = n - start
            for alias, _, _ in pf.pretuned_jobs:
                series_keys |= {("pretuned", alias, pk.name) for pk in pf.pretuned if alias in pk.hardware}
        pdocs.append(last_p)
        night_index[run.run_id] = n - start
        out_nights.append(Night(run.time, run.run_id, run.sha, p_run_id, p_sha, run.day, n - start))

    shutil.rmtree(scratch, ignore_errors=True)
    labels = []
    for r in resolved:
        spec = r["spec"]
        runs = nightly if spec.source == "dashboard" else pnightly
        first, end = r["first"], r["end"]
        if spec.kind == "scatter":   # a property of the whole series: anchor it inside the kept span
            if spec.source == "dashboard":
                first = max(first, start + 4)
            else:
                first = max(first, next((i for i, pr in enumerate(runs) if pr.night >= start + 4), first))
        fb, lg = runs[first], runs[first - 1]
        if spec.source == "dashboard":
            fb_n, lg_n = first, first - 1
        else:
            fb_n, lg_n = runs[first].night, runs[first - 1].night
        if lg_n < start or fb_n - start < 4:
            continue
        labels.append(Label(id=spec.id, source=spec.source, cause=spec.cause, kind=spec.kind,
                            direction=r["direction"], members=r["members"], metrics=tuple(spec.metrics),
                            first_bad_run_id=fb.run_id, last_good_run_id=lg.run_id,
                            end_run_id=runs[end].run_id if end is not None else None,
                            culprit_sha=spec.culprit_sha, change_sha=spec.change_sha,
                            honest_speedup=r["honest"], note=spec.note))
    world = World(seed, str(repo.path), out_nights, labels, docs, pdocs, night_index,
                  len({k for k in series_keys}))
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(dict(nights=out_nights, labels=labels, docs=docs, pdocs=pdocs,
                                      night_index=night_index, n_series=world._n_series)))
    tmp.replace(cache)
    return world
