"""Workflow runs and their artifacts: what each job of each run uploaded.

Why: the builders read GitHub artifacts (`benchmark-results-<alias>-<shard kernels>/helionbench.json`,
`pretuned-results-<alias>/pretuned-bench.json`), so the world writes exactly those, job by job
as the dispatch workflow at the run's sha lays them out (shards of `compute-benchmark-matrix`,
the linear-attention suite as extra h100/b200 jobs, the TPU jobs). Besides the cron nightlies
there are manual dispatches on main and side-branch runs: they are published too and must not
read as the trend. Failures (a crashed kernel, a failed or inaccurate shape, a pretuned error)
and outages (a platform that uploaded nothing) are drawn here.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from . import model as M
from .rand import rng, unit
from .specs import all_specs, nightly_jobs
from .timeline import DEVICE, LINATTN_DEVICE, P_COMPUTE
from .window import run_id_at

SHARDS = {"tritonbench": 13, "cute": 6, "linattn": 9}
ERRORS = ("RuntimeError: CUDA error: an illegal memory access was encountered",
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
          "helion.exc.AutotuneError: no config passed the accuracy check")


@dataclass
class Run:
    run_id: str
    full_sha: str
    cidx: int
    date: datetime
    branch: str
    is_nightly: bool
    night: int  # the nightly whose conditions it ran in
    publish: int  # the nightly after which it is first published
    source: str
    kind: str  # nightly | manual | branch
    platforms: tuple | None = None
    kernels: tuple | None = None
    skew: float = 1.0

    def meta(self) -> dict:
        return {"run_id": self.run_id, "sha": self.full_sha[:8], "full_sha": self.full_sha,
                "date": self.date.strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": self.branch,
                "is_nightly": self.is_nightly}


def schedule(ctx) -> tuple[list, list]:
    """Every dashboard and pretuned run of the window, in date order."""
    commits = ctx.hist.commits
    dash, pre = [], []
    N = len(ctx.nidx)
    for n in range(N):
        t = ctx.ntimes[n]
        dash.append(Run(run_id_at(t, n), commits[ctx.nidx[n]].sha, ctx.nidx[n], t, "main", True, n, n,
                        "dashboard", "nightly"))
        if ctx.pidx[n] is not None:
            tp = ctx.ptimes[n]
            pre.append(Run(run_id_at(tp, n + 7), commits[ctx.pidx[n]].sha, ctx.pidx[n], tp, "main", True, n, n,
                           "pretuned", "nightly"))
        if n + 1 >= N:
            continue
        r = rng(ctx.seed, "manual", n)
        if r.random() < 0.05:  # someone dispatches Benchmark Dispatch by hand later that day
            tm = t + timedelta(hours=float(r.uniform(3, 20)))
            ci = ctx.hist.idx_before(tm)
            plats = sorted({k[1] for k in ctx.specs[n] if k[0] == "dashboard" and k[1] != "tpu"})
            if plats:
                p = plats[int(r.integers(len(plats)))]
                ks = sorted(k[2] for k in ctx.specs[n] if k[0] == "dashboard" and k[1] == p)
                pick = tuple(sorted(r.choice(ks, size=min(len(ks), int(r.integers(1, 5))), replace=False)))
                dash.append(Run(run_id_at(tm, n + 3), commits[ci].sha, ci, tm, "main", False, n, n + 1, "dashboard",
                                "manual", (p,), pick))
        if r.random() < 0.025:  # a side-branch run (a TPU nightly on someone's branch, or a PR test)
            tm = t + timedelta(hours=float(r.uniform(2, 22)))
            ci = ctx.hist.idx_before(tm)
            tpu = any(k[1] == "tpu" for k in ctx.specs[n])
            br, nightly = ("yifeixu/tpu-nightly-benchmark", True) if tpu and r.random() < 0.6 else \
                (f"gh/{'jansel' if r.random() < 0.5 else 'oulgen'}/{int(r.integers(100, 999))}/head", False)
            plats = ("tpu",) if br.startswith("yifeixu") else None
            dash.append(Run(run_id_at(tm, n + 5), commits[ci].sha, ci, tm, br, nightly, n, n + 1, "dashboard",
                            "branch", plats, None, float(np.exp(r.normal(0, 0.12)))))
    dash.sort(key=lambda x: x.date)
    return dash, pre


def _shards(kernels: list, n: int) -> list:
    jobs = min(len(kernels), n)
    buckets = [[] for _ in range(jobs)]
    for i, k in enumerate(kernels):
        buckets[i % jobs].append(k)
    return buckets


def _failures(ctx, run: Run, key, m: dict) -> None:
    u = unit(ctx.seed, "fail", run.run_id, *key)
    hs = m.get("helion_speedup", [])
    if not hs:
        return
    j = int(unit(ctx.seed, "failshape", run.run_id, *key) * len(hs))
    if u < 0.004:  # the Helion implementation failed on one shape: tritonbench writes ""
        for name in ("helion_speedup", "helion_accuracy", "helion_latency_ms"):
            if name in m:
                m[name][j] = 0.0
    elif u < 0.007:  # ran, but outside tolerance
        m["helion_accuracy"][j] = 0.0


def _records(bench: str, extra: dict, model: str, shapes: list, m: dict, order: tuple) -> list:
    out = []
    for name in order:
        if name in m and m[name]:
            out.append({"benchmark": {"name": bench, "extra_info": dict(extra)}, "model": {"name": model},
                        "metric": {"name": name, "benchmark_values": m[name]}, "shape": list(shapes)})
    return out


TB_ORDER = ("triton_speedup", "triton_accuracy", "torch_compile_speedup", "torch_compile_accuracy", "helion_speedup",
            "helion_accuracy", "helion_latency_ms", "helion_compile_time_s")
TPU_ORDER = ("helion_accuracy", "helion_latency_ms", "helion_speedup", "torch_compile_speedup", "helion_compile_time_s")
LA_ORDER = ("helion_accuracy", "helion_latency_ms", "helion_speedup")


def dashboard_artifacts(ctx, run: Run) -> dict:
    st = ctx.hist.state_at(run.cidx)
    specs = {k: v for k, v in ctx.specs[run.night].items() if k[0] == "dashboard"} if run.kind == "nightly" else \
        {k: v for k, v in all_specs(st).items() if k[0] == "dashboard"}
    arts = {}
    plat_noise = {}
    for j in nightly_jobs(st):
        p, suite = j["platform"], j["suite"]
        if run.platforms and p not in run.platforms:
            continue
        if run.kind == "nightly" and run.night in ctx.outages.get(("dashboard", p), ()):
            continue
        if p not in plat_noise:
            plat_noise[p] = float(np.exp(rng(ctx.seed, "plat", run.run_id, p).normal(0, 0.004)))
        kernels = list(j["kernels"])
        if suite in ("tritonbench", "linattn"):
            buckets = _shards(kernels, SHARDS["cute" if j["backend"] == "cute" else suite]) if kernels else []
            names = [f"benchmark-results-{j['alias']}-{','.join(b)}" for b in buckets]
        else:
            buckets, names = [kernels], [f"benchmark-results-{j['alias']}"]
        for bucket, name in zip(buckets, names):
            recs = []
            for k in bucket:
                rows = [k] if suite != "linattn" else [k, f"{k}-bwd"]
                for row in rows:
                    key = ("dashboard", p, row)
                    spec = specs.get(key)
                    if spec is None or (run.kernels and row not in run.kernels):
                        continue
                    if run.kind == "nightly" and unit(ctx.seed, "crash", run.run_id, *key) < 0.004:
                        continue  # the kernel crashed: nothing recorded
                    recs += _series_records(ctx, run, key, spec, suite, j, plat_noise[p])
            if recs:
                arts[name] = recs
    return arts


def _series_records(ctx, run: Run, key, spec: dict, suite: str, job: dict, plat: float) -> list:
    pr = ctx.prof(key, spec)
    s = ctx.setting(key, spec, run.night, run.cidx, run.kind == "nightly")
    if run.skew != 1.0:
        s.f["h"] = s.f.get("h", 1.0) * float(np.exp(rng(ctx.seed, "skew", run.run_id, *key).normal(0, 0.08))) * run.skew
    nz = M.Noise(rng(ctx.seed, "nz", run.run_id, *key), plat)
    m = M.measure(ctx.seed, pr, s, nz)
    if "triton_speedup" in m:
        m["triton_accuracy"] = [1.0] * len(m["triton_speedup"])
    if "torch_compile_speedup" in m:
        m["torch_compile_accuracy"] = [1.0] * len(m["torch_compile_speedup"])
    _failures(ctx, run, key, m)
    p = key[1]
    if suite == "linattn":
        extra = {"device": LINATTN_DEVICE.get(p, DEVICE.get(p)), "backend": "triton", "baseline_label": "FLA"}
        return _records("Helion Linear-Attention Benchmark", extra, key[2], s.shapes, m, LA_ORDER)
    if suite == "tpu":
        return _records("Helion TPU Benchmark", {"device": DEVICE["tpu"]}, key[2], s.shapes, m, TPU_ORDER)
    if suite == "tpu_bridge":
        return _records("Helion Benchmark", {"device": DEVICE["tpu"], "backend": "pallas"}, key[2], s.shapes, m, TB_ORDER)
    dev = DEVICE.get(job["alias"].removesuffix("_cute"), DEVICE.get(p))
    return _records("Helion Benchmark", {"device": dev, "backend": job["backend"]}, key[2], s.shapes, m, TB_ORDER)


def pretuned_artifacts(ctx, run: Run) -> dict:
    st = ctx.hist.state_at(run.cidx)
    runs = set(st.p_nightly[0])
    arts = {}
    for alias, j in st.p_jobs.items():
        if j["run_input"] not in runs or run.night in ctx.outages.get(("pretuned", alias), ()):
            continue
        recs = []
        for k in st.p_kernels:
            info = st.p_info.get(k) or {}
            hw = list(info.get("hw", ()))
            rec = {"kernel": k, "pretuned_hardware": hw}
            key = ("pretuned", alias, k)
            spec = ctx.specs[run.night].get(key)
            if alias not in hw or spec is None:
                rec["skipped"] = f"pretuned for {hw}; current hardware is {alias}"
            elif unit(ctx.seed, "perr", run.run_id, *key) < 0.005:
                rec["error"] = ERRORS[int(unit(ctx.seed, "perrk", run.run_id, *key) * len(ERRORS))]
            else:
                pp = ctx.prof(key, spec)
                f = ctx.factors(key, spec, run.night, run.cidx, True)
                nz = M.Noise(rng(ctx.seed, "pnz", run.run_id, *key))
                res = M.pretuned_measure(ctx.seed, pp, spec["pbase"], spec["cg"], spec["l2"], f, nz, spec["pshapes"])
                rec.update(helion_wins=res["helion_wins"], total=res["total"], geomean=float(res["geomean"]),
                           best_speedup=float(res["best_speedup"]), cudagraph=bool(spec["cg"]))
                rec["baselines"] = res["baselines"]
            rec["device"] = LINATTN_DEVICE[alias]  # torch.cuda.get_device_name(), unabridged
            rec["compute_capability"] = P_COMPUTE[alias]
            recs.append(rec)
        if recs:
            arts[f"pretuned-results-{alias}"] = recs
    return arts
