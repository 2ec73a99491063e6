"""The two JSON documents, built night by night with Helion's own dashboard builders.

The builders (``.github/dashboard/build_dashboard_data.py`` and ``build_pretuned_dashboard_data.py``)
are extracted from the bundle's newest commit into a temporary folder under the workdir at build
time and imported from there (never copied into the project). Each night the new runs' artifacts
(``benchmark-results-<alias>-<kernels>/helionbench.json``, ``pretuned-results-<alias>/
pretuned-bench.json``, in the schema ``benchmarks/run.py``, ``run_linattn.py``, ``run_tpu.py`` and
``pretuned_kernels/run.py`` write) are written to a cache folder and the builder folds them into the
previous night's document, as the live docs-deploy job does. ``datetime.now`` inside the builders is
the time of that night's deploy, so the 365-day retention is the live one."""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import math
import shutil
import subprocess
import sys
import tarfile
import io
import types
from pathlib import Path

import numpy as np

from . import events as E
from . import facts as F
from . import model as M

_builders: dict = {}


def load_builders(repo_path: Path, sha: str, dest: Path) -> tuple:
    key = (str(dest), sha)
    if key in _builders:
        return _builders[key]
    dest.mkdir(parents=True, exist_ok=True)
    raw = subprocess.run(["git", "-C", str(repo_path), "archive", sha, ".github/dashboard"],
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        tf.extractall(dest)
    mods = []
    for name in ("build_dashboard_data", "build_pretuned_dashboard_data"):
        path = dest / ".github" / "dashboard" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"_helion_u_{name}_{sha[:8]}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append(mod)
    _builders[key] = tuple(mods)
    return _builders[key]


def _clock(now: _dt.datetime):
    class _DT(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return now if tz is not None else now.replace(tzinfo=None)
    return types.SimpleNamespace(datetime=_DT, timezone=_dt.timezone, timedelta=_dt.timedelta)


def run_builder(mod, now: _dt.datetime, *args, **kw):
    saved = mod.datetime
    mod.datetime = _clock(now)
    try:
        return mod.build_dashboard_data(*args, **kw)
    finally:
        mod.datetime = saved


def shard(kernels: list, max_runners: int) -> list:
    """compute-benchmark-matrix.yml's round robin."""
    jobs = min(len(kernels), max_runners)
    buckets = [[] for _ in range(jobs)]
    for i, k in enumerate(kernels):
        buckets[i % jobs].append(k)
    return buckets


def _records(series: F.Series, metrics: dict) -> list:
    recs = []
    if series.suite == "linattn":
        info = {"device": series.device, "backend": "triton", "baseline_label": series.baseline_label}
        name = "Helion Linear-Attention Benchmark"
        keep = ("helion_accuracy", "helion_latency_ms", "helion_speedup")
    elif series.suite == "tpu":
        info = {"device": series.device}
        name = "Helion TPU Benchmark"
        keep = ("helion_accuracy", "helion_latency_ms", "helion_speedup", "torch_compile_speedup") + \
            (("helion_compile_time_s",) if series.compile_measured else ())
    else:
        info = {"device": series.device, "backend": series.backend}
        name = "Helion Benchmark"
        keep = ["helion_speedup", "helion_accuracy", "helion_latency_ms"]
        if series.has_triton:
            keep.append("triton_speedup")
        if series.has_tc:
            keep.append("torch_compile_speedup")
        if series.compile_measured:
            keep.append("helion_compile_time_s")
    for m in keep:
        vals = metrics.get(m) or []
        if not vals:
            continue
        recs.append({"benchmark": {"name": name, "extra_info": dict(info)}, "model": {"name": series.kernel},
                     "metric": {"name": m, "benchmark_values": vals}, "shape": list(series.shapes)})
    return recs


MAX_RUNNERS = {"tritonbench": 13, "linattn": 9}


def write_dashboard_run(world, run, run_dir: Path, n_ref: int) -> None:
    """Artifacts of one dashboard run. ``n_ref``: the nightly whose effects hold at this run."""
    setup = F.setup_at(world.repo, run.full_sha if run.branch == "main" else world.nights[n_ref].full_sha,
                       linattn_live=world.linattn_live(run.full_sha if run.branch == "main" else world.nights[n_ref].full_sha))
    groups: dict = {}
    for key, s in setup.series.items():
        if run.night is None:
            if key[0] not in run.platforms or (run.kernels and key[1] not in run.kernels):
                continue
        groups.setdefault((s.alias, s.suite), []).append((key, s))
    eps = {}
    for (alias, suite), items in groups.items():
        per_kernel = {}
        for key, s in items:
            if run.night is None and run.branch == "main":
                mult = E.mult_for_run(world, "dashboard", key, n_ref, n_ref + 1 if n_ref + 1 < len(world.nights) else None,
                                      run.full_sha)
            else:
                mult = world.effects.mult("dashboard", key, n_ref)
            if mult.get("missing"):
                continue
            rng = M.rng_for(world.seed, run.run_id, *key)
            guard = (key, n_ref) in world.quiet
            if run.night is not None and not guard and rng.random() < 0.003:
                continue  # this kernel's job died tonight
            if key[0] not in eps:
                eps[key[0]] = math.exp(M.rng_for(world.seed, run.run_id, key[0]).normal(0, 0.004))
            m = dict(mult)
            m["compile"] = m.get("compile", 1.0) * setup.compile_factor
            if run.side_effect != 1.0:
                m["helion"] = m.get("helion", 1.0) * run.side_effect
                m["lat"] = m.get("lat", 1.0) * run.side_effect
            outlier = m.pop("outlier", None)
            if outlier is None and not guard and rng.random() < 0.008:
                outlier = (str(rng.choice(["helion", "base", "triton", "tc", "lat"])), float(rng.uniform(1.15, 1.2)))
            fail = int(rng.integers(len(s.shapes))) if (not guard and rng.random() < 0.004 and len(s.shapes) > 2) else None
            accf = int(rng.integers(len(s.shapes))) if (not guard and rng.random() < 0.003) else None
            p = M.series_params(world.seed, key[0], key[1], s.suite)
            vals = M.measure(p, s.shapes, s.cudagraph, m, rng, eps[key[0]], sigma_mult=m.pop("sigma", 1.0),
                             outlier=outlier, fail_shape=fail, acc_fail_shape=accf, same_timer_lat=(s.suite == "tpu"))
            per_kernel[s.kernel] = (s, vals)
        if not per_kernel:
            continue
        names = list(per_kernel)
        if suite == "linattn":
            variants = list(dict.fromkeys(k.removesuffix("-bwd") for k in names))
            buckets = shard(variants, MAX_RUNNERS["linattn"])
            buckets = [[k for k in names if k.removesuffix("-bwd") in b] for b in buckets]
            labels = [[v for v in dict.fromkeys(k.removesuffix("-bwd") for k in b)] for b in buckets]
        elif suite in ("tpu", "tpu_bridge"):
            buckets, labels = [names], [names]
        else:
            buckets = shard(names, MAX_RUNNERS["tritonbench"] if alias != "b200_cute" else 6)
            labels = buckets
        for bucket, lab in zip(buckets, labels):
            d = run_dir / f"benchmark-results-{alias}-{','.join(lab)}"
            d.mkdir(parents=True, exist_ok=True)
            recs = []
            for k in bucket:
                s, vals = per_kernel[k]
                recs.extend(_records(s, vals))
            (d / "helionbench.json").write_text(json.dumps(recs))


ERRORS = ("RuntimeError: CUDA error: an illegal memory access was encountered",
          "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
          "TimeoutError: benchmark exceeded 1800s")


def write_pretuned_run(world, run, run_dir: Path, n_ref: int) -> None:
    ps = F.pretuned_at(world.repo, run.full_sha)
    if ps is None:
        return
    for alias in sorted(ps.machine):
        device, compute = F.PRETUNED_DEVICE[alias]
        recs = []
        for k, pk in ps.kernels.items():
            if run.night is None and run.kernels and k not in run.kernels:
                continue
            rec = {"kernel": k, "pretuned_hardware": list(pk.hardware)}
            if alias not in pk.hardware:
                rec["skipped"] = f"pretuned for {list(pk.hardware)}; current hardware is {alias}"
            else:
                key = (alias, k)
                mult = world.effects.mult("pretuned", key, n_ref)
                if mult.get("missing"):
                    continue
                rng = M.rng_for(world.seed, run.run_id, *key)
                guard = (("pre",) + key, n_ref) in world.quiet
                if mult.get("error") or (not guard and rng.random() < 0.004):
                    rec["error"] = mult.get("error") or ERRORS[int(rng.integers(len(ERRORS)))]
                else:
                    eps = math.exp(M.rng_for(world.seed, run.run_id, alias).normal(0, 0.004))
                    baselines = [b for b in pk.baselines if b not in mult.get("drop", ())]
                    outlier = mult.get("outlier")
                    if outlier is None and not guard and rng.random() < 0.008:
                        outlier = float(rng.uniform(1.15, 1.2))
                    summ = M.pretuned_measure(M.pretuned_params(world.seed, alias, k), pk.shapes, baselines,
                                              pk.cudagraph, mult, rng, eps, sigma_mult=mult.get("sigma", 1.0),
                                              outlier=outlier)
                    rec.update(helion_wins=summ["helion_wins"], total=summ["total"], geomean=summ["geomean"],
                               best_speedup=summ["best_speedup"], cudagraph=pk.cudagraph)
                    if summ["baselines"] and not pk.implicit:
                        rec["baselines"] = summ["baselines"]
            rec["device"] = device
            rec["compute_capability"] = compute
            recs.append(rec)
        d = run_dir / f"pretuned-results-{alias}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "pretuned-bench.json").write_text(json.dumps(recs))


def active_platforms(mod, repo, sha: str, name: str, tmp: Path):
    text = repo.read(sha, f".github/workflows/{name}") or ""
    p = tmp / f"{sha[:12]}-{name}"
    if not p.exists():
        p.write_text(text)
    return p
