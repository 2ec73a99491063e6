"""The raw artifacts of one run, in the formats Helion's builders read.

Main suite: one artifact per platform job shard, ``benchmark-results-<alias>-<kernels>`` (the
shards of ``compute-benchmark-matrix.yml``: kernels dealt round-robin over ``max-runners``
jobs), each holding the ``helionbench.json`` that ``benchmarks/run.py`` (or ``run_linattn.py``,
``run_tpu.py``) writes: one record per (kernel, metric) with parallel ``shape`` and
``benchmark_values`` lists. A shard whose job died uploads nothing.

Pretuned suite: ``pretuned-results-<alias>/pretuned-bench.json``, the record list of
``pretuned_kernels/run.py`` (metrics, an error, or "skipped" for kernels without a config for
the GPU).
"""
from __future__ import annotations

from . import catalog as C
from . import facts as F
from .sim import rng

SHARD_FAIL_P = 0.004  # a benchmark job dies (OOM, runner lost) and uploads nothing

ORDER = ("triton_speedup", "triton_accuracy", "torch_compile_speedup", "torch_compile_accuracy",
         "helion_speedup", "helion_accuracy", "helion_latency_ms")


def _round(name: str, v: float) -> float:
    if name.endswith("compile_time_s"):
        return round(float(v), 3)
    if name.endswith("latency_ms"):
        return round(float(v), 6)
    return round(float(v), 5)


def shards(kernels: tuple, max_runners: int | None) -> list:
    if not max_runners:
        return [list(kernels)] if kernels else []
    jobs = min(len(kernels), max_runners)
    out = [[] for _ in range(jobs)]
    for i, k in enumerate(kernels):
        out[i % jobs].append(k)
    return out


class Emitter:
    def __init__(self, builder):
        self.b = builder
        self.last_series: set = set()

    def artifacts(self, run, n: int) -> dict:
        self.last_series = set()
        if run.source == "dashboard":
            return self._dashboard(run, n)
        return self._pretuned(run, n)

    def _outage(self, plat: str, n: int) -> bool:
        b = self.b
        return any(p.outage == plat and b.model.effects[p.effect].active(n)
                   for p in b.planted if p.outage)

    def _dashboard(self, run, n: int) -> dict:
        b = self.b
        f = F.dash_facts(b.repo, run.facts_sha)
        at = b.repo.index(run.facts_sha)
        night = n if run.is_nightly and run.branch == "main" else max(n - 1, 0)
        out = {}
        for job in f.jobs:
            if run.platforms and job.platform not in run.platforms:
                continue
            if self._outage(job.platform, night):
                continue
            kernels = tuple(k for k in job.kernels if not run.kernels or k in run.kernels)
            if job.suite == "tritonbench":
                kernels = tuple(k for k in kernels if k in f.kernel_opts)
            if job.suite == "tpu" and f.tpu_kernels:
                kernels = tuple(k for k in kernels if k in f.tpu_kernels)
            for shard in shards(kernels, job.max_runners):
                if rng(b.seed, "shard", run.run_id, job.alias, ",".join(shard)).uniform() < SHARD_FAIL_P:
                    continue
                records = []
                for k in shard:
                    rows = [k]
                    if job.suite == "linattn" and k not in ("kda_fused", "kda_varlen"):
                        rows = [k, f"{k}-bwd"]
                    for row in rows:
                        sf = F.series_facts(f, job, row)
                        meas = b.meas.dashboard(night, run.run_id, job.platform, row, sf,
                                                extra={"h": run.skew[k]} if k in run.skew else None,
                                                at=at)
                        if meas is None:
                            continue
                        records += self._records(f, job, row, meas)
                        self.last_series.add(("dashboard", job.platform, row))
                if not records:
                    continue
                name = f"benchmark-results-{job.alias}"
                if job.suite not in ("tpu", "tpu_bridge"):
                    name += "-" + ",".join(shard)
                out[name] = ("helionbench.json", records)
        return out

    @staticmethod
    def _records(f, job, kernel: str, meas: dict) -> list:
        if job.suite == "linattn":
            name = "Helion Linear-Attention Benchmark"
            info = {"device": C.LINATTN_DEVICE.get(job.platform, "NVIDIA B200"),
                    "backend": "triton", "baseline_label": "FLA"}
        elif job.suite == "tpu":
            name, info = "Helion TPU Benchmark", {"device": "TPU v7"}
        else:
            name = "Helion Benchmark"
            info = {"device": C.PLATFORMS[job.platform].device}
            if f.backend_field:
                info["backend"] = job.backend
        n = len(meas["shapes"])
        values = {}
        if meas.get("triton_speedup") is not None:
            values["triton_speedup"] = meas["triton_speedup"]
            values["triton_accuracy"] = [1.0] * n
        if meas.get("torch_compile_speedup") is not None:
            values["torch_compile_speedup"] = meas["torch_compile_speedup"]
            values["torch_compile_accuracy"] = [1.0] * n
        values["helion_speedup"] = meas["helion_speedup"]
        values["helion_accuracy"] = meas["helion_accuracy"]
        if meas.get("helion_latency_ms") is not None:
            values["helion_latency_ms"] = meas["helion_latency_ms"]
        out = []
        if job.suite == "linattn":
            order = ("helion_accuracy", "helion_latency_ms", "helion_speedup")
        else:
            order = ORDER
        for metric in order:
            if metric in values:
                out.append({"benchmark": {"name": name, "extra_info": dict(info)},
                            "model": {"name": kernel},
                            "metric": {"name": metric,
                                       "benchmark_values": [_round(metric, v) for v in values[metric]]},
                            "shape": list(meas["shapes"])})
        if meas.get("helion_compile_time_s") is not None:
            out.append({"benchmark": {"name": name, "extra_info": dict(info)},
                        "model": {"name": kernel},
                        "metric": {"name": "helion_compile_time_s",
                                   "benchmark_values": [_round("helion_compile_time_s", v)
                                                        for v in meas["helion_compile_time_s"]]},
                        "shape": list(meas["shapes"])})
        return out

    def _pretuned(self, run, n: int) -> dict:
        b = self.b
        pf = F.pre_facts(b.repo, run.facts_sha)
        if pf is None:
            return {}
        at = b.repo.index(run.facts_sha)
        night = n if run.is_nightly else max(n - 1, 0)
        out = {}
        for job in pf.jobs:
            device, compute = C.PRETUNED_DEVICE.get(job.alias, ("NVIDIA B200", "sm100"))
            sm = F.SM_OF.get(job.alias, compute)
            records = []
            for pk in pf.kernels:
                hw = sorted({F.HW_OF.get(s, s) for s in pk.hardware})
                rec = {"kernel": pk.name, "pretuned_hardware": hw}
                if sm not in pk.hardware:
                    rec["skipped"] = f"pretuned for {hw}; current hardware is {job.alias}"
                else:
                    sf = F.pre_series_facts(pf, job, pk)
                    rec.update(b.meas.pretuned(night, run.run_id, job.alias, pk.name, sf, pk.cute,
                                               at=at))
                    self.last_series.add(("pretuned", job.alias, pk.name))
                rec["device"] = device
                rec["compute_capability"] = compute
                records.append(rec)
            out[f"pretuned-results-{job.alias}"] = ("pretuned-bench.json", records)
        return out
