"""Planted events per seed (the file-derived ones are found in the repository, see events.py).

Each entry names what happened and where; the night is the first nightly whose sha holds the
commit (real), or the first nightly on/after the date (thermal, outage, noise). ``d`` is the change
of Helion's true speedup (+0.10: 10% faster). ``sigma``: series made noisy (2.5-4% per timer) from
the start, so that modest steps sit on real scatter."""
from __future__ import annotations

from datetime import datetime, timezone

from . import events as E
from . import model as M

PLANS = {
    201: {
        "end": "2026-05-05", "nights": 152,
        "sigma": {("h100", "int4_gemm"): 0.032, ("b200", "int4_gemm"): 0.028, ("b200", "cross_entropy"): 0.03,
                  ("h100", "jsd"): 0.026},
        "events": [
            dict(t="real", culprit="73f5babe", kind="heuristics/config",
                 d={("h100", "softmax"): 0.10, ("h100", "layer_norm"): 0.11, ("b200", "layer_norm"): 0.09,
                    ("b200", "softmax"): 0.12},
                 note="LFBOPatternSearch becomes the default search: better configs for the norms/softmax"),
            dict(t="real", culprit="f63efd46", kind="code", d={("mi325x", "gemm"): -0.12, ("mi325x", "flash_attention"): -0.09},
                 note="no tensor descriptors / eviction policy on AMD: matmul-heavy kernels slower on MI325X"),
            dict(t="real", culprit="cbb8620a", kind="code", d={("h100", "int4_gemm"): -0.08, ("b200", "int4_gemm"): -0.085},
                 note="TMA disabled with int64 indexing: int4_gemm slower on NVIDIA (modest step on a noisy series)"),
            dict(t="real", culprit="1f6222a7", kind="heuristics/config",
                 d={("mi325x", "softmax"): 0.12, ("mi325x", "rms_norm"): 0.10, ("mi325x", "layer_norm"): 0.09},
                 note="AMD num_warps/num_stages ranges: the AMD reductions get better configs"),
            dict(t="real", culprit="99731ad3", kind="heuristics/config", d={("b200", "cross_entropy"): -0.075},
                 note="finishing rounds disabled by default: a slightly worse cross_entropy config on B200 (7.5% on 3% scatter)"),
            dict(t="real", culprit="ec27d559", revert="1e3d383e", kind="heuristics/config",
                 d={("h100", "welford"): -0.13, ("h100", "kl_div"): -0.10, ("b200", "welford"): -0.12},
                 note="num_warps cap prunes the good configs; reverted three days later (episode)"),
            dict(t="real", culprit="0d292da0", kind="heuristics/config",
                 d={("mi325x", "gemm"): -0.09, ("mi350x", "gemm"): -0.10, ("mi350x", "flash_attention"): -0.08},
                 note="matrix_instr_nonkdim restricted to 16 on AMD: matmuls slower (MI350X a week old)"),
            dict(t="real", culprit="9a8bfe76", kind="heuristics/config", d={("h100", "jsd"): -0.09, ("b200", "jsd"): -0.08},
                 note="config normalisation drops a tuned field: jsd slower; in the last nightlies"),
            dict(t="thermal", platform="b200", date="2026-01-14", nights=4,
                 kernels=("gemm", "flash_attention", "int4_gemm", "grouped_gemm"), note="B200 runner throttling for four nights"),
            dict(t="outage", platform="h100", date="2026-02-16", nights=3, note="no H100 runner for three nights"),
            dict(t="noise", key=("h100", "gemm"), date="2025-12-29", nights=1, timer="helion", f=1.18,
                 note="one stray night: the helion timer of h100/gemm 18% slow on every shape"),
            dict(t="noise", key=("mi325x", "softmax"), date="2026-02-24", nights=2, timer="base", f=0.87,
                 note="two-night blip: a fast baseline timer makes every softmax speedup drop, then back"),
            dict(t="scatter", key=("b200", "flash_attention"), date="2026-03-30", mult=3.2,
                 note="b200/flash_attention turns noisy (~6% per timer) for the rest of the window"),
            dict(t="noise", key=("b200", "rms_norm"), date="2026-04-08", nights=1, timer="lat", f=1.2,
                 note="latency timer alone 20% high one night"),
            dict(t="noise", key=("h100", "jsd"), date="2026-01-20", nights=1, timer="triton", f=1.18,
                 note="triton baseline timer slow one night (triton speedup dips, Helion flat)"),
        ],
    },
    202: {
        "end": "2026-07-25", "nights": 168,
        "sigma": {("h100", "gemm"): 0.03, ("mi350x", "layer_norm"): 0.032, ("b200_cute", "layer_norm"): 0.028},
        "events": [
            dict(t="real", culprit="149dec2d", kind="heuristics/config", d={("h100", "gemm"): 0.08, ("b200", "gemm"): 0.09},
                 note="larger minimum block sizes: matmul configs improve (8% on a 3% scatter series on H100)"),
            dict(t="real", culprit="31d096e8", kind="code", d={("mi350x", "gemm"): 0.10, ("mi350x", "int4_gemm"): 0.12},
                 note="AMD Triton backend for min_dot_size: MI350X matmuls faster ten nights after it appeared"),
            dict(t="real", culprit="e2c71314", kind="code", d={("mi350x", "softmax"): -0.09, ("mi350x", "layer_norm"): -0.08},
                 note="stale global memory read fix on AMD costs the reductions"),
            dict(t="real", culprit="551f70ca", kind="heuristics/config", d={("h100", "rms_norm"): 0.10, ("b200", "rms_norm"): 0.09},
                 note="autotuner heuristics seed better rms_norm configs"),
            dict(t="real", culprit="e2444e45", kind="code", d={("b200_cute", "rms_norm"): 0.15},
                 note="CuTe persistent reduction with >32 threads (untagged, helion/_compiler/cute): rms_norm on b200_cute"),
            dict(t="real", culprit="526100e7", kind="code", d={("b200_cute", "vector_add"): 0.10, ("b200_cute", "vector_exp"): 0.12},
                 note="[cute] software-pipelined vector loads: the memory-bound CuTe kernels"),
            dict(t="real", culprit="8d5cc261", kind="heuristics/config", d={("tpu", "gemm"): 0.18, ("tpu", "bmm"): 0.12},
                 note="TPU matmul candidates ranked by on-chip time"),
            dict(t="real", culprit="591c2990", kind="heuristics/config",
                 d={("b200_cute", "sum"): -0.09, ("b200_cute", "layer_norm"): -0.075},
                 note="[cute] L2 cleared in the autotune loop: the autotuner now picks configs tuned for cold L2"),
            dict(t="real", culprit="0731d885", kind="heuristics/config",
                 d={("mi350x", "gemm"): 0.09, ("mi350x", "flash_attention"): 0.11},
                 note="[triton][AMD] xcd_remap for CDNA L2 locality"),
            dict(t="real", culprit="7935fe6e", kind="heuristics/config", d={("b200", "softmax"): 0.08, ("b200", "layer_norm"): 0.09},
                 note="[autotuner][sm100] B200 reduction seeds"),
            dict(t="real", culprit="90bad434", kind="heuristics/config",
                 d={("h100", "softmax"): 0.08, ("h100", "cross_entropy"): 0.10, ("b200", "softmax"): 0.07},
                 note="reduction seed default on sm90+sm100: a second step on b200/softmax four nights after the first"),
            dict(t="real", culprit="4c7f684f", kind="code", d={("tpu", "rms_norm"): 0.12, ("tpu", "layer_norm"): 0.08},
                 note="[pallas] rsqrt lowered to lax.rsqrt: TPU norms faster on the last nightly"),
            dict(t="thermal", platform="mi350x", date="2026-06-15", nights=3,
                 kernels=("gemm", "flash_attention", "int4_gemm", "gdn_fwd_h"), note="MI350X thermal throttling, three nights"),
            dict(t="outage", platform="tpu", date="2026-06-22", nights=2, note="TPU runner pool down two nights"),
            dict(t="baseline_drop", hw="h100", baseline="vllm", date="2026-07-12", nights=1,
                 note="vLLM install failed on the H100 pretuned job one night (continue-on-error): vllm baseline missing"),
            dict(t="pnoise", key=("b200", "softmax"), date="2026-07-20", nights=1, f=1.17,
                 note="pretuned b200/softmax: helion timer off one night"),
            dict(t="noise", key=("b200", "gemm"), date="2026-02-20", nights=1, timer="helion", f=1.17,
                 note="one stray night on b200/gemm"),
            dict(t="noise", key=("h100", "cross_entropy"), date="2026-04-02", nights=2, timer="base", f=0.88,
                 note="two-night blip on the baseline timer"),
            dict(t="scatter", key=("mi350x", "welford"), date="2026-05-25", mult=3.0,
                 note="mi350x/welford turns noisy; its shapes change later (a labeled method change on a noisy series)"),
            dict(t="noise", key=("tpu", "softmax"), date="2026-07-05", nights=1, timer="helion", f=1.19,
                 note="one stray night on tpu/softmax"),
        ],
    },
    203: {
        "end": "2026-08-22", "nights": 128,
        "times": {"2026-06-05": (8, 9)},
        "sigma": {("b200", "gemm"): 0.03, ("h100", "layer_norm-bwd"): 0.027, ("tpu", "layer_norm"): 0.03},
        "events": [
            dict(t="real", culprit="0d292da0", kind="heuristics/config", d={("mi350x", "gemm"): -0.10},
                 note="matrix_instr_nonkdim restricted to 16: MI350X gemm, a few nightlies after MI350X appeared"),
            dict(t="real", culprit="d823d02c", kind="code", d={("b200_cute", "layer_norm"): 0.10, ("b200_cute", "rms_norm"): 0.09},
                 note="[cute] warp-per-row layout for softmax-shape reductions"),
            dict(t="real", culprit="bc8c6497", kind="heuristics/config", d={("mi350x", "kl_div"): 0.08, ("mi350x", "jsd"): 0.09},
                 note="[triton][AMD] load cache modifier autotuning"),
            dict(t="real", culprit="7ca0c7d2", revert="da289f7b", kind="code",
                 d={("tpu", "gemm"): -0.14, ("tpu", "flash_attention"): -0.10},
                 note="[pallas] bf16 matmuls through pl.dot; reverted the next night (one-night real episode)"),
            dict(t="real", culprit="8d5cc261", kind="heuristics/config", d={("tpu", "bmm"): 0.12},
                 note="TPU matmul ranking by on-chip time, same night as the pl.dot regression"),
            dict(t="real", culprit="16e57cbd", kind="code", d={("tpu", "softmax"): -0.09, ("tpu", "layer_norm"): -0.085},
                 note="[Pallas] standard launcher switched to pl.kernel + emit_pipeline: TPU reductions slower"),
            dict(t="real", culprit="47752ff4", kind="heuristics/config", d={("h100", "rope"): 0.09, ("b200", "rope"): 0.08},
                 note="pointwise seed default on sm90/sm100"),
            dict(t="real", culprit="90bad434", kind="heuristics/config", d={("h100", "softmax"): 0.08, ("b200", "cross_entropy"): 0.09},
                 note="reduction seed default on sm90+sm100"),
            dict(t="real", culprit="48971c7b", kind="heuristics/config", d={("mi350x", "gemm"): 0.08},
                 note="[triton][AMD] wider waves_per_eu/matrix_instr_nonkdim; same night as the MI350X welford shape cut"),
            dict(t="real", culprit="530ea26b", kind="heuristics/config", d={("h100", "gemm"): 0.09},
                 note="[autotuner] H100 matmul seed formula"),
            dict(t="real", culprit="5a9f540d", kind="heuristics/config", d={("b200", "gemm"): -0.08},
                 note="[autotuner][sm100] B200 matmul table replaced by the formula: 8% slower on a 3% scatter series"),
            dict(t="real", culprit="74b7b6a9", kind="heuristics/config", d={("b200", "rope"): 0.10},
                 note="pointwise seed tuned for sm100: a second rope step on B200"),
            dict(t="real", culprit="0082c703", kind="code",
                 d={("h100", "layer_norm-bwd"): 0.10, ("b200", "layer_norm-bwd"): 0.11, ("h100", "rms_norm-bwd"): 0.09},
                 note="runtime: eager launch performance restored; only the kernels timed without CUDA graphs move"),
            dict(t="real", culprit="41d4566d", kind="code",
                 d={("h100", "grouped_gemm"): 0.08, ("b200", "grouped_gemm"): 0.09, ("h100", "layer_norm-bwd"): 0.06},
                 note="runtime: late-specialized eager dispatch restored; h100/layer_norm-bwd moves again two nights later"),
            dict(t="real", culprit="a9d12c1e", kind="heuristics/config", d={("b200", "rms_norm"): -0.08, ("b200", "welford"): 0.07},
                 note="[autotuner] sm100 reduction num_warps ramp retuned: one kernel worse, one better"),
            dict(t="real", culprit="55243639", kind="code", d={("tpu", "softmax"): 0.12, ("tpu", "layer_norm"): 0.09},
                 note="[Pallas] aligned HBM windows staged: TPU bridge reductions faster on the last nightly"),
            dict(t="thermal", platform="h100", date="2026-07-08", nights=3,
                 kernels=("gemm", "flash_attention", "int4_gemm", "mamba2_chunk_scan", "gdn_fwd_h"),
                 note="H100 thermal throttling, three nights"),
            dict(t="outage", platform="tpu", date="2026-08-03", nights=2, note="TPU runners unavailable two nights"),
            dict(t="outage", platform="b200_cute", date="2026-06-27", nights=1, note="b200_cute job lost one night"),
            dict(t="baseline_drop", hw="b200", baseline="vllm", date="2026-08-15", nights=2,
                 note="vLLM install failed on the B200 pretuned job two nights"),
            dict(t="pnoise", key=("h100", "rms_norm"), date="2026-07-26", nights=1, f=1.18,
                 note="pretuned h100/rms_norm: one stray night"),
            dict(t="pscatter", key=("b200", "nvfp4_gemv_cute"), date="2026-08-05", mult=3.0,
                 note="pretuned b200/nvfp4_gemv_cute turns noisy"),
            dict(t="scatter", key=("h100", "flash_attention"), date="2026-05-20", mult=3.0,
                 note="h100/flash_attention turns noisy"),
            dict(t="noise", key=("b200", "gemm"), date="2026-04-25", nights=1, timer="helion", f=1.17,
                 note="one stray night on b200/gemm"),
            dict(t="noise", key=("h100", "kl_div"), date="2026-06-20", nights=2, timer="base", f=0.87,
                 note="two-night baseline blip on h100/kl_div"),
            dict(t="noise", key=("mi350x", "softmax"), date="2026-07-02", nights=1, timer="lat", f=1.2,
                 note="latency timer alone 20% high one night"),
            dict(t="noise", key=("b200", "jsd"), date="2026-08-21", nights=1, timer="helion", f=1.16,
                 note="a one-night dip on the second-to-last nightly that is gone on the last"),
        ],
    },
}


def _night_on(ctx, date: str) -> int | None:
    t = datetime.fromisoformat(date).replace(tzinfo=timezone.utc)
    for i, n in enumerate(ctx.nights):
        if n.date >= t:
            return i
    return None


def _full(ctx, prefix: str) -> str:
    return next(c.sha for c in ctx.hist.commits if c.sha.startswith(prefix))


def _first_night(ctx, sha: str, source: str) -> int | None:
    runs = ctx.nights if source == "dashboard" else ctx.pnights
    i = ctx.hist.index[sha]
    for n, r in enumerate(runs):
        if r is not None and ctx.hist.index[r.full_sha] >= i:
            return n
    return None


def planted(ctx, plan) -> list:
    out = []
    seed = ctx.seed
    # noisy series: scale their per-timer scatter from the first night
    for key, target in plan.get("sigma", {}).items():
        for n, s in enumerate(ctx.setups):
            if key in s.series:
                p = M.series_params(seed, key[0], key[1], s.series[key].suite)
                out.append(E.Plant(id=f"sigma-{key[0]}-{key[1]}", source="dashboard", cause="noise", kind="scatter",
                                   start=0, factors={key: {"sigma": target / p.sigma}}, label=False))
                break
    for i, ev in enumerate(plan["events"]):
        t = ev["t"]
        if t == "real":
            sha = _full(ctx, ev["culprit"])
            src = ev.get("source", "dashboard")
            a = _first_night(ctx, sha, src)
            end = _first_night(ctx, _full(ctx, ev["revert"]), src) if ev.get("revert") else None
            if a is None or a == 0 or (end is not None and end <= a):
                continue
            factors = {}
            for key, d in ev["d"].items():
                f = 1.0 / (1.0 + d)
                factors[key] = {"helion": f, "lat": f} if src == "dashboard" else {"helion": f}
            out.append(E.Plant(id=f"real-{sha[:8]}", source=src, cause="real", kind=ev["kind"], start=a, end=end,
                               factors=factors, culprit=sha, note=ev["note"]))
        elif t == "thermal":
            a = _night_on(ctx, ev["date"])
            factors = {}
            for key in ctx.setups[a].series:
                if key[0] != ev["platform"]:
                    continue
                rng = M.rng_for(seed, "thermal", i, *key)
                env = float(rng.uniform(1.09, 1.14))
                d = {"base": env, "helion": env, "triton": env, "tc": env, "lat": env}
                if key[1] in ev["kernels"]:
                    extra = float(rng.uniform(1.07, 1.11))
                    d["helion"] *= extra
                    d["lat"] *= extra
                    d["base"] *= float(rng.uniform(1.0, 1.03))
                factors[key] = d
            out.append(E.Plant(id=f"thermal-{ev['platform']}-{a}", source="dashboard", cause="hardware", kind="thermal",
                               start=a, end=a + ev["nights"], factors=factors, note=ev["note"]))
        elif t == "outage":
            a = _night_on(ctx, ev["date"])
            keys = [k for k in ctx.setups[a].series if k[0] == ev["platform"]]
            out.append(E.Plant(id=f"outage-{ev['platform']}-{a}", source="dashboard", cause="hardware", kind="outage",
                               start=a, end=a + ev["nights"], factors={k: {"missing": True} for k in keys},
                               fixed_members=True, note=ev["note"], direction="missing"))
        elif t == "noise":
            a = _night_on(ctx, ev["date"])
            metric = {"helion": ("helion_speedup_geomean",), "base": ("helion_speedup_geomean", "triton_speedup_geomean",
                                                                     "torch_compile_speedup_geomean"),
                      "lat": ("helion_latency_avg_ms",), "triton": ("triton_speedup_geomean",)}[ev["timer"]]
            f = {ev["timer"]: ev["f"]}
            up = (ev["timer"] == "base" and ev["f"] > 1) or (ev["timer"] not in ("base",) and ev["f"] < 1)
            out.append(E.Plant(id=f"noise-{ev['key'][0]}-{ev['key'][1]}-{a}", source="dashboard", cause="noise",
                               kind="outlier", start=a, end=a + ev["nights"], factors={ev["key"]: f}, fixed_members=True,
                               metrics=metric, note=ev["note"], direction="improvement" if up else "regression"))
        elif t == "scatter":
            a = _night_on(ctx, ev["date"])
            out.append(E.Plant(id=f"scatter-{ev['key'][0]}-{ev['key'][1]}", source="dashboard", cause="noise", kind="scatter",
                               start=a, factors={ev["key"]: {"sigma": ev["mult"]}}, fixed_members=True,
                               metrics=("helion_speedup_geomean",), note=ev["note"], direction="both"))
        elif t == "pscatter":
            a = _night_on(ctx, ev["date"])
            out.append(E.Plant(id=f"pscatter-{ev['key'][0]}-{ev['key'][1]}", source="pretuned", cause="noise", kind="scatter",
                               start=a, factors={ev["key"]: {"sigma": ev["mult"]}}, fixed_members=True,
                               metrics=("geomean",), note=ev["note"], direction="both"))
        elif t == "pnoise":
            a = _night_on(ctx, ev["date"])
            out.append(E.Plant(id=f"pnoise-{ev['key'][0]}-{ev['key'][1]}-{a}", source="pretuned", cause="noise",
                               kind="outlier", start=a, end=a + ev["nights"], factors={ev["key"]: {"helion": ev["f"]}},
                               fixed_members=True, metrics=("geomean",), note=ev["note"], direction="regression"))
        elif t == "baseline_drop":
            a = _night_on(ctx, ev["date"])
            ps = ctx.psetups[a]
            keys = [(ev["hw"], k) for k, pk in ps.kernels.items() if ev["hw"] in pk.hardware and ev["baseline"] in pk.baselines]
            out.append(E.Plant(id=f"pdrop-{ev['hw']}-{a}", source="pretuned", cause="method_change", kind="baseline",
                               start=a, end=a + ev["nights"], factors={k: {"drop": (ev["baseline"],)} for k in keys},
                               note=ev["note"], honest="pre"))
    return out
