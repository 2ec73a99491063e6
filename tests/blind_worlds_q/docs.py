"""The two published documents of world Q, made the way CI makes them.

Each nightly's runs become artifact folders (`benchmark-results-<alias>-<kernels>/helionbench.json`,
`pretuned-results-<alias>/pretuned-bench.json`) in the format `benchmarks/run.py`,
`benchmarks/run_linattn.py`, `benchmarks/run_tpu.py` and `pretuned_kernels/run.py` write. Helion's
own builders (`.github/dashboard/build_dashboard_data.py`, `build_pretuned_dashboard_data.py`),
loaded from the world's clone at build time, then turn them into the published JSON incrementally:
each document is built from the previous one plus the artifacts of the runs it has not seen, with
the builder's clock set to the publication time and the active platforms / expected kernels read
from the dispatch workflow at that nightly's commit."""
from __future__ import annotations

import gzip
import importlib.util
import json
import shutil
import tempfile
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from . import facts as F
from .model import DEVICE, PRE_DEVICE, rng
from .world import XRun, iso


def _load_builder(repo: Path, name: str, tag: str):
    path = repo / ".github" / "dashboard" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bwq_{name}_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Clock:
    """Replaces a builder module's `datetime` so its retention cutoff counts from publication time."""

    def __init__(self):
        clock = self
        self.now = datetime.now(timezone.utc)

        class _DT(datetime):
            @classmethod
            def now(cls, tz=None):
                return clock.now

        self.ns = types.SimpleNamespace(datetime=_DT, timedelta=timedelta, timezone=timezone)


MAX_RUNNERS = {"tritonbench": 2, "linattn": 1, "tpu": 1, "tpu_bridge": 1}  # (CI shards wider; fewer folders here)


class DocBuilder:
    def __init__(self, world):
        self.w = world
        self.dir = world.workdir / "docs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cache = world.workdir / "cache"
        tag = f"{world.seed}_{id(self)}"
        self.dmod = _load_builder(world.repo, "build_dashboard_data", tag)
        self.pmod = _load_builder(world.repo, "build_pretuned_dashboard_data", tag)
        self.dclock, self.pclock = _Clock(), _Clock()
        self.dmod.datetime = self.dclock.ns
        self.pmod.datetime = self.pclock.ns
        self._tmp = Path(tempfile.mkdtemp(prefix="wf_", dir=world.workdir))

    # ------------------------------------------------------------------ runs
    def _dash_runs(self, n: int) -> list[XRun]:
        w = self.w
        lo = w.all_nights[w.start - 1].date if w.start > 0 else None
        hi = w.all_nights[n].date
        runs = [XRun(x.run_id, x.full_sha, x.date, "main", True, i, "nightly")
                for i, x in enumerate(w.all_nights[w.start: n + 1], start=w.start)]
        runs += [r for r in w.extra if r.date < hi and (lo is None or r.date > lo)]
        return sorted(runs, key=lambda r: r.date)

    def _pre_runs(self, n: int) -> list[XRun]:
        w = self.w
        lo = w.p_date(w.start - 1) if w.start > 0 else None
        hi = w.p_date(n)
        runs = [XRun(x.p_run_id, x.p_full_sha, w.p_date(i), "main", True, i, "nightly", source="pretuned")
                for i, x in enumerate(w.all_nights[w.start: n + 1], start=w.start) if x.p_run_id]
        runs += [r for r in w.pextra if r.date < hi and (lo is None or r.date > lo)]
        return sorted(runs, key=lambda r: r.date)

    @staticmethod
    def _meta(r: XRun) -> dict:
        return {"run_id": r.run_id, "sha": r.sha[:8], "full_sha": r.sha, "date": iso(r.date), "branch": r.branch,
                "is_nightly": r.is_nightly}

    # ------------------------------------------------------------------ artifacts
    def _dash_artifacts(self, run: XRun, dest: Path):
        w = self.w
        i = run.night
        f = w.dfacts[i]
        nightly = run.kind == "nightly"
        for job in f.jobs.values():
            if job.alias in w.missing and i in w.missing[job.alias] and nightly:
                continue
            if run.platforms is not None and job.alias not in run.platforms:
                continue
            rows = [(p, k) for p, k, j in f.series() if j.key == job.key]
            kernels = [k for k in job.kernels if any(k == kk.removesuffix("-bwd") or k == kk for _, kk in rows)]
            if run.kernels is not None:
                kernels = [k for k in kernels if k in run.kernels]
            if not kernels:
                continue
            nshard = max(1, min(MAX_RUNNERS.get(job.suite, 4), len(kernels)))
            shards = [kernels[s::nshard] for s in range(nshard)] if job.suite != "tpu" else [kernels]
            for si, shard in enumerate(shards):
                g = rng(w.seed, "shard", run.run_id, job.key, si)
                if nightly and g.random() < 0.004:
                    continue  # the shard's runner died: no artifact
                art_alias = "tpu_bridge" if job.suite == "tpu_bridge" else job.alias
                name = f"benchmark-results-{art_alias}" + ("" if job.suite == "tpu" else "-" + ",".join(shard))
                recs = []
                for k in shard:
                    names = [k, f"{k}-bwd"] if job.suite == "linattn" and k in f.linattn_dense else [k]
                    for kn in names:
                        m = w.measure(i, job.alias, kn, noise=True, run=None if nightly else run)
                        if m is None:
                            continue
                        _, shapes, res = m
                        if run.kind == "branch":
                            gb = rng(w.seed, "branch", run.run_id, kn)
                            fac = float(np.exp(gb.normal(0, 0.07)))
                            res["helion_speedup"] = [v * fac for v in res["helion_speedup"]]
                        recs += self._records(job, kn, shapes, res)
                if recs:
                    d = dest / name
                    d.mkdir(parents=True, exist_ok=True)
                    (d / "helionbench.json").write_text(json.dumps(recs))

    @staticmethod
    def _records(job, kernel, shapes, res) -> list[dict]:
        if job.suite == "linattn":
            info = {"device": DEVICE[job.alias], "backend": "triton", "baseline_label": "FLA"}
            bench = "Helion Linear-Attention Benchmark"
            order = ("helion_accuracy", "helion_latency_ms", "helion_speedup")
        elif job.suite == "tpu":
            info = {"device": "TPU v7"}
            bench = "Helion TPU Benchmark"
            order = ("helion_accuracy", "helion_latency_ms", "helion_speedup", "torch_compile_speedup",
                     "helion_compile_time_s")
        else:
            info = {"device": DEVICE[job.alias], "backend": job.backend}
            bench = "Helion Benchmark"
            order = ("triton_speedup", "torch_compile_speedup", "helion_speedup", "helion_accuracy",
                     "helion_latency_ms", "helion_compile_time_s")
        out = []
        for metric in order:
            vals = res.get(metric)
            if vals is None:
                continue
            out.append({"benchmark": {"name": bench, "extra_info": dict(info)}, "model": {"name": kernel},
                        "metric": {"name": metric, "benchmark_values": [round(v, 6) for v in vals]},
                        "shape": list(shapes)})
            if metric in ("triton_speedup", "torch_compile_speedup") and job.suite != "tpu":
                out.append({"benchmark": {"name": bench, "extra_info": dict(info)}, "model": {"name": kernel},
                            "metric": {"name": metric.replace("speedup", "accuracy"),
                                       "benchmark_values": [1.0] * len(vals)}, "shape": list(shapes)})
        return out

    def _pre_artifacts(self, run: XRun, dest: Path):
        w = self.w
        i = run.night
        f = w.pfacts[i]
        if f is None:
            return
        for plat in sorted(f.platforms):
            if plat in w.pmissing and i in w.pmissing[plat] and run.kind == "nightly":
                continue
            if run.platforms is not None and plat not in run.platforms:
                continue
            device, compute = PRE_DEVICE.get(plat, (plat, ""))
            recs = []
            for k, pk in f.kernels.items():
                hw = sorted({{"sm90": "h100", "sm100": "b200"}.get(sm, sm) for sm, _ in pk.configs})
                rec = {"kernel": k, "pretuned_hardware": hw}
                if plat not in hw:
                    rec["skipped"] = f"pretuned for {hw}; current hardware is {plat}"
                else:
                    m = w.pmeasure(i, plat, k, noise=True, run=None if run.kind == "nightly" else run)
                    if m is None:
                        continue
                    rec.update(m)
                    if "baselines" in rec and len(rec["baselines"]) < 2:
                        rec.pop("baselines")
                rec["device"] = device
                rec["compute_capability"] = compute
                recs.append(rec)
            d = dest / f"pretuned-results-{plat}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    # ------------------------------------------------------------------ builds
    def _workflow_file(self, sha: str, path: str) -> str:
        text = self.w.blobs.read(sha, path) or ""
        p = self._tmp / (path.replace("/", "_") + sha[:10])
        p.write_text(text)
        return str(p)

    def build_all(self):
        w = self.w
        prev_d = prev_p = None
        for n in range(w.start, len(w.all_nights)):
            if n == w.start:
                w.ensure_manual_before(n)
            prev_d = self._build_dash(n, prev_d)
            if w.all_nights[n].p_run_id:
                prev_p = self._build_pre(n, prev_p)
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _build_dash(self, n: int, prev: bytes | None) -> bytes:
        w = self.w
        runs = self._dash_runs(n)
        existing = json.loads(prev) if prev else {}
        seen = {r["run_id"] for r in existing.get("runs", [])}
        cache = self.cache / "d" / str(n)
        cache.mkdir(parents=True, exist_ok=True)
        for r in runs:
            if r.run_id not in seen:
                self._dash_artifacts(r, cache / r.run_id)
        wf = self._workflow_file(w.all_nights[n].full_sha, F.DISPATCH)
        active = self.dmod.get_active_platforms(wf)
        expected = self.dmod.get_expected_kernels_per_platform(wf)
        self.dclock.now = w.all_nights[n].date + timedelta(hours=3, minutes=10)
        data = self.dmod.build_dashboard_data(str(cache), [self._meta(r) for r in runs], existing, active, expected)
        out = json.dumps(data).encode()
        (self.dir / f"dashboard_{n - w.start}.json.gz").write_bytes(gzip.compress(out, 3))
        return out

    def _build_pre(self, n: int, prev: bytes | None) -> bytes:
        w = self.w
        runs = self._pre_runs(n)
        existing = json.loads(prev) if prev else {}
        seen = {r["run_id"] for r in existing.get("runs", [])}
        cache = self.cache / "p" / str(n)
        cache.mkdir(parents=True, exist_ok=True)
        latest = w.all_nights[n].p_run_id
        for r in runs:
            if r.run_id not in seen or r.run_id == latest:
                self._pre_artifacts(r, cache / r.run_id)
        wf = self._workflow_file(w.all_nights[n].p_full_sha, F.P_DISPATCH)
        active = self.pmod.get_active_platforms(wf)
        self.pclock.now = w.p_date(n) + timedelta(hours=2, minutes=20)
        data = self.pmod.build_dashboard_data(str(cache), [self._meta(r) for r in runs], existing, active)
        out = json.dumps(data).encode()
        (self.dir / f"pretuned_{n - w.start}.json.gz").write_bytes(gzip.compress(out, 3))
        return out

    def get(self, source: str, n: int) -> bytes | None:
        p = self.dir / f"{source}_{n}.json.gz"
        if not p.exists():
            if source == "pretuned":
                return None
            raise IndexError(n)
        return gzip.decompress(p.read_bytes())
