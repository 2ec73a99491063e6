"""Per-seed event lists (helpers and rules in plans.py; the reasoning for each pick is in the notes).

Each planted real event names the commit whose diff would move exactly those kernels; the
other commits of the same window stay in the history as decoys (refactors, tests, other
backends, commits whose tag and paths disagree).
"""
from __future__ import annotations

from . import rng, sim
from .plans import (default_methods, find, hardware_span, machine_response, noise, on, outage,
                    pin_response, pretuned_responses, real, scatter, varied, crash_until)
from .events import SPEED, Effect, LabelSpec

NORM = ["layer_norm", "layer_norm-bwd", "rms_norm", "rms_norm-bwd", "welford"]
RED = ["softmax", "cross_entropy", "kl_div", "jsd"]
GEMM = ["gemm", "int4_gemm", "grouped_gemm"]


def capped(ctx, n, key, budget=5400) -> bool:
    """Does the autotune budget cap any shape of this series (so the cap moves it)?"""
    s = next(x for x in ctx.series[n] if (x.platform, x.kernel) == key)
    p = sim.profile(s.platform, s.suite, s.kernel)
    m = ctx.model.method(ctx.nightly[n], ctx.facts[n], s)
    return any(t.autotune_s * 1.25 > budget for t in sim.shape_truth(p, m.labels, m.full_n))


def _group_machines(changes, sha_prefix):
    return [c for c in changes if c.kind == "machine" and c.change_sha.startswith(sha_prefix)]


def _hw(ctx, changes, sha_prefix, lid, kind, make, note, end=None, honest="before", plats=None):
    chs = _group_machines(changes, sha_prefix)
    assert chs, sha_prefix
    ch = chs[0]
    members = sorted({m for c in chs for m in c.members if plats is None or m[0] in plats})
    members = [m for m in members if m not in ctx.reserved]
    factors = {m: make(m) for m in members}
    factors = {m: f for m, f in factors.items() if f}
    machine_response(ctx, ch, lid, kind, factors, note, end=end, honest=honest)


def _u(ctx, lid, m, lo, hi, tag=""):
    return rng.uniform(lo, hi, ctx.seed, lid, tag, *m)


# =============================================================================================
def plan71(ctx, changes):
    ctx.reserved = {("mi325x", "int4_gemm")}
    gg = on(ctx, 0, kernels=["grouped_gemm"])
    crash_until(ctx, "gg-crash", gg, "9a61a903")
    default_methods(ctx, changes)
    pin = find(changes, "pin")
    pin_response(ctx, pin, "m71-torch-2.10", exclude=set(gg) | set(on(ctx, pin.night, ["mi325x"])) | ctx.reserved)

    _hw(ctx, changes, "3f63f311", "h71-rocm71", "driver/toolchain",
        lambda m: {"machine": 0.96, "helion": _u(ctx, "rocm", m, 0.9, 1.03), "baseline": _u(ctx, "rocmb", m, 0.95, 1.03)},
        "ROCm 6.4 -> 7.1 image/runtime for the MI325X lane only (3f63f311); kernels and baselines re-timed "
        "on the new stack, other platforms flat.", honest="before")
    _hw(ctx, changes, "9eefa499", "h71-gfx942-1", "runner",
        lambda m: {"machine": 1.05, "helion": _u(ctx, "r1", m, 1.02, 1.08)} if _u(ctx, "r1p", m, 0, 1) < 0.75 else None,
        "MI325X jobs moved to the linux.rocm.gpu.gfx942.1 pool (9eefa499): a different host/GPU pool; "
        "most MI325X kernels a few percent slower, baselines too.")
    _hw(ctx, changes, "8690b5f1", "h71-b200-cublas", "driver/toolchain",
        lambda m: {"baseline": _u(ctx, "cublas", m, 0.87, 0.92)} if m[1] in ("gemm", "int4_gemm", "flash_attention") else None,
        "B200 image bumped to CUDA 13.1 for a newer cuBLAS (8690b5f1): torch's GEMM/attention baselines got "
        "faster, so Helion's speedups on gemm-like kernels drop while Helion itself is unchanged.")

    n0 = ctx.night_of_commit("73f5babe")
    r1 = [("h100", "softmax"), ("h100", "layer_norm"), ("h100", "cross_entropy"), ("b200", "softmax"),
          ("b200", "layer_norm"), ("b200", "rms_norm"), ("mi325x", "layer_norm")]
    real(ctx, "r71-lfbo-default", "73f5babe", varied(ctx, "r1", r1, 0.89, 0.94), "heuristics/config",
         "LFBOPatternSearch became the default search (73f5babe): better configs found for these "
         "reduction/norm kernels on every GPU; the rest unchanged.")
    real(ctx, "r71-persistent-occupancy", "bd646022",
         varied(ctx, "r2", [("h100", "gemm"), ("b200", "gemm")], 0.87, 0.91), "heuristics/config",
         "Autotune persistent kernels for multi occupancy (bd646022): new persistent-occupancy tunable "
         "lets the search find faster matmul configs on NVIDIA.")
    ctx.noise_scale[("mi325x", "kl_div")] = 2.4
    real(ctx, "r71-amd-eviction", "f63efd46", {("mi325x", "kl_div"): {"helion": 1.085}}, "heuristics/config",
         "AMD: tensor_descriptor/eviction-policy knobs dropped from the AMD config space (f63efd46); "
         "kl_div (a noisy 3% series) loses its best eviction config: a modest ~8% step.")
    ce = on(ctx, ctx.night_of_commit("cbb8620a"), kernels=["cross_entropy"])
    real(ctx, "r71-int64-blockptr", "cbb8620a",
         {m: {"shapes": {lab: 1.35 for lab in sim.shape_labels("cross_entropy", 9)[-2:]}} for m in ce}, "code",
         "block_ptr disabled under int64 indexing (cbb8620a): only the two largest cross_entropy shapes "
         "(> 2^31 elements, int64 indices) fall back to pointer loads and slow down; geomean ~7% lower.")
    real(ctx, "r71-finishing-phase", "c990c751",
         varied(ctx, "r5", [("h100", "softmax"), ("b200", "kl_div"), ("b200", "jsd")], 1.08, 1.11),
         "heuristics/config", "Autotuner finishing phase minimizes configs (c990c751) and drops knobs these "
         "reductions needed; ended when finishing rounds were disabled by default (99731ad3).",
         revert="99731ad3")
    amd = [m for m in on(ctx, ctx.night_of_commit("1f6222a7"), ["mi325x"]) if m[1] not in ("grouped_gemm",)
           and m not in ctx.reserved]
    real(ctx, "r71-amd-warps-stages", "1f6222a7", varied(ctx, "r6", amd, 0.9, 0.95), "heuristics/config",
         "AMD num_warps/num_stages ranges updated (1f6222a7): the whole MI325X column gets better configs.")
    fa = on(ctx, ctx.night_of_commit("9fac4ad7"), kernels=["flash_attention"])
    real(ctx, "r71-roll-reduction", "9fac4ad7", varied(ctx, "r7", fa, 1.09, 1.13), "code",
         "roll_reduction now treats untiled matmul dims as reduction-carrying (9fac4ad7), so attention's "
         "inner reduction is no longer rolled: flash_attention slower on every GPU.")
    r8 = [("h100", "softmax"), ("b200", "softmax"), ("b200", "layer_norm"), ("mi325x", "softmax")]
    real(ctx, "r71-layout-planning", "b2bcbf8f", varied(ctx, "r8", r8, 1.08, 1.12), "code",
         "[cutedsl]-tagged layout planning (b2bcbf8f) also rewrites shared tile_strategy/config_spec "
         "paths; Triton softmax/layer_norm block choices regress. Tag says CuTe, paths say everyone.")

    b200 = [m for m in on(ctx, ctx.night_on("2026-01-08"), ["b200"]) if m not in gg]
    hardware_span(ctx, "h71-b200-thermal", "thermal", "2026-01-08", "2026-01-14",
                  {m: {"machine": 1.1, "helion": _u(ctx, "th", m, 0.95, 1.08),
                       "baseline": _u(ctx, "thb", m, 0.97, 1.03)} for m in b200},
                  "B200 host throttling for a week (no commit): every B200 kernel and baseline re-timed, "
                  "speedups wobble, then back.", jitter=0.3)
    outage(ctx, "h71-h100-outage", "h100", ["2026-02-24", "2026-02-25"],
           "H100 runner reported cudaDeviceUnavailable two nights: every shape 0 (run failures); the health "
           "check in de2e9e3d came a week later.")
    noise(ctx, "n71-outlier-jsd", "outlier", ("h100", "jsd"), ["2025-12-09"], {"cg_only": 1.18},
          "one-night cudagraph-timer outlier on h100/jsd.")
    noise(ctx, "n71-outlier-baseline", "outlier", ("b200", "rms_norm-bwd"), ["2026-02-05"], {"baseline": 0.85},
          "one night the eager baseline ran fast: all three speedups dip together, then back.",
          metrics=SPEED)
    noise(ctx, "n71-blip-welford", "blip", ("b200", "welford"), ["2026-01-21", "2026-01-22"], {"helion": 1.12},
          "two-night blip on b200/welford, no commit, reverts by itself.",
          metrics=("helion_speedup_geomean",))
    noise(ctx, "n71-blip-int4", "blip", ("h100", "int4_gemm"), ["2026-03-12"], {"helion": 0.9},
          "one-night upward blip on h100/int4_gemm.")
    scatter(ctx, "n71-scatter-int4", ("mi325x", "int4_gemm"), 0.042,
            "mi325x/int4_gemm is a ~6-7% scatter series throughout; no step.")


# =============================================================================================
def plan72(ctx, changes):
    ctx.reserved = {("b200_cute", "vector_exp")}
    gg = on(ctx, 0, kernels=["grouped_gemm"])
    crash_until(ctx, "gg-crash", gg, "9a61a903")
    rb = sorted({m for n in range(len(ctx.nightly)) for m in on(ctx, n, kernels=["rope-bwd"])})
    crash_until(ctx, "ropebwd-crash", rb, "2e418571")
    default_methods(ctx, changes, skip_members=rb)
    pin = find(changes, "pin", day="2026-03-03", ctx=ctx)
    pin_response(ctx, pin, "m72-torch-2.10", exclude=set(gg) | set(on(ctx, pin.night, ["mi325x"])) | ctx.reserved)
    pin2 = find(changes, "pin", day="2026-04-19", ctx=ctx)
    pin_response(ctx, pin2, "m72-torch-2.11", exclude=ctx.reserved, p_b=0.3, p_tc=0.3)

    _hw(ctx, changes, "3f63f311", "h72-rocm71", "driver/toolchain",
        lambda m: {"machine": 0.95, "helion": _u(ctx, "rocm", m, 0.91, 1.02), "baseline": _u(ctx, "rocmb", m, 0.96, 1.04)},
        "ROCm 6.4 -> 7.1 image/runtime on the MI325X lane only (3f63f311).", honest="before")
    _hw(ctx, changes, "9eefa499", "h72-gfx942-1", "runner",
        lambda m: {"machine": 1.04, "helion": _u(ctx, "r1", m, 1.02, 1.07)} if _u(ctx, "r1p", m, 0, 1) < 0.7 else None,
        "MI325X moved to the gfx942.1 runner pool (9eefa499).")
    _hw(ctx, changes, "8690b5f1", "h72-b200-cublas", "driver/toolchain",
        lambda m: {"baseline": _u(ctx, "cublas", m, 0.87, 0.92)} if m[1] in ("gemm", "int4_gemm", "flash_attention") and m not in ctx.reserved else None,
        "B200 image to CUDA 13.1 / newer cuBLAS (8690b5f1): gemm-like baselines faster, Helion unchanged.")
    tpu = find(changes, "tpu_pins", day="2026-05-29", ctx=ctx)
    machine_response(ctx, tpu, "h72-jax-0101", "driver/toolchain",
                     {m: {"machine": 0.95, "helion": _u(ctx, "jax", m, 0.9, 0.97)} for m in tpu.members},
                     "jax/jaxlib 0.10.0 -> 0.10.1 on the TPU job (22db8716): the XLA/Mosaic toolchain got faster "
                     "on every TPU kernel; a persistent improvement.", honest="after")
    _hw(ctx, changes, "b33ae6b9", "h72-h100-osdc-image", "driver/toolchain",
        lambda m: {"machine": 1.07, "helion": _u(ctx, "osdc", m, 1.02, 1.07)},
        "H100 lane migrated to OSDC runners on the pytorch/pytorch base image (b33ae6b9): every H100 kernel "
        "and baseline slower, latency up; recovers when the image is switched back to nvidia/cuda (82bee2fa).",
        end="82bee2fa", honest="before")
    _hw(ctx, changes, "ed36077d", "h72-h100-cu130", "driver/toolchain",
        lambda m: {"baseline": _u(ctx, "cu130", m, 0.88, 0.93)} if m[1] in ("gemm", "int4_gemm", "grouped_gemm") else None,
        "H100 lane cu128 -> cu130 (ed36077d): torch's CUDA-13 cuBLAS speeds up the GEMM baselines; Helion's "
        "own kernels unchanged, so its speedups drop.")

    r1 = [("h100", "softmax"), ("b200", "softmax"), ("mi325x", "softmax"), ("mi325x", "layer_norm"),
          ("b200", "cross_entropy")]
    real(ctx, "r72-warp-cap", "ec27d559", varied(ctx, "r1", r1, 1.08, 1.13), "heuristics/config",
         "num_warps capped to the grid tile element count (ec27d559): long-row reductions lose their "
         "many-warp configs; reverted three days later (1e3d383e).", revert="1e3d383e")
    liger = [m for m in on(ctx, ctx.night_on("2026-04-02"), ["h100", "b200"])
             if m[1] in ("layer_norm", "rms_norm", "cross_entropy")]
    e = Effect("m72-liger", "dashboard", {m: {"triton": _u(ctx, "liger", m, 0.86, 0.9)} for m in liger},
               start_t=ctx.nightly[ctx.night_on("2026-04-02")].time.replace(hour=0, minute=0, second=0))
    ctx.effects.append(e)
    ctx.labels.append(LabelSpec("m72-liger", "dashboard", "method_change", "baseline", tuple(liger),
                                ("triton_speedup_geomean",),
                                "unpinned Liger (installed fresh by tritonbench's install.py --liger) released a faster "
                                "layer_norm/rms_norm/cross_entropy: only the Triton(Liger) speedup moves; no commit.",
                                effect=e))
    fa = [m for m in on(ctx, ctx.night_of_commit("97acc416"), kernels=["flash_attention"]) if m[0] in ("h100", "b200")]
    real(ctx, "r72-attn-prescale", "97acc416", varied(ctx, "r3", fa, 0.9, 0.93), "code",
         "attention example pre-scales the q tile with qk_scale (97acc416): fewer multiplies in the loop.")
    real(ctx, "r72-attn-bmm-dtype", "502c3bf8", varied(ctx, "r4", fa, 0.91, 0.94), "code",
         "torch.bmm(..., dtype=) lowering used by attention (502c3bf8) drops a redundant cast: second "
         "flash_attention step a week after the first.")
    ctx.noise_scale[("h100", "kl_div")] = 2.3
    real(ctx, "r72-reduction-strategy", "2956f460", {("h100", "kl_div"): {"helion": 1.085}}, "code",
         "create_reduction_strategy()/adjust_reduction_thread_count moved to Backend (2956f460) changes the "
         "thread count picked for kl_div's reduction on H100: a modest 8% step on a ~3% scatter series.")
    red = [m for m in on(ctx, ctx.night_of_commit("551f70ca"), ["h100", "b200", "mi350x"], kernels=NORM + RED)]
    real(ctx, "r72-autotune-heuristic-seeds", "551f70ca",
         {m: {"compile": _u(ctx, "seeds", m, 0.68, 0.8)} for m in red}, "heuristics/config",
         "Autotuner heuristics seed the search (551f70ca): norm/reduction searches converge much sooner; "
         "compile time drops, chosen configs (and speedups) unchanged.", metrics=("compile_time_geomean_s",))
    cute = on(ctx, ctx.night_of_commit("1f2274a6"), ["b200_cute"], kernels=["layer_norm", "rms_norm", "sum"])
    real(ctx, "r72-cute-vec-loads", "1f2274a6", varied(ctx, "r6", cute, 0.86, 0.9), "code",
         "128-bit vectorized loads for CuTe inner reductions (1f2274a6): the CuTe column's reduction kernels "
         "all faster; vector_add/vector_exp unaffected.")
    real(ctx, "r72-tpu-matmul-ranking", "8d5cc261",
         varied(ctx, "r7", on(ctx, ctx.night_of_commit("8d5cc261"), ["tpu"], kernels=["gemm", "bmm"]), 0.76, 0.82),
         "heuristics/config", "TPU matmul autotune candidates ranked by true on-chip time (8d5cc261, 'the big "
         "win'): gemm/bmm on TPU much faster.")
    real(ctx, "r72-tpu-pl-dot", "7ca0c7d2", {("tpu", "flash_attention"): {"helion": 1.16}}, "code",
         "bf16/fp16 matmuls lowered through pl.dot on TPU (7ca0c7d2) slow attention's inner matmuls; "
         "reverted the next morning (da289f7b): a one-night real regression.", revert="da289f7b")
    n_amd = ctx.night_of_commit("bc8c6497")
    amd = [m for m in on(ctx, n_amd, ["mi350x"], kernels=NORM + RED + ["rope"]) if not capped(ctx, n_amd, m)]
    real(ctx, "r72-amd-load-cache", "bc8c6497", varied(ctx, "r9", amd, 0.9, 0.95), "heuristics/config",
         "[triton][AMD] load cache modifier autotuning (bc8c6497): memory-bound MI350X kernels all faster.")
    real(ctx, "r72-tpu-pad-skip", "e0cf1393",
         varied(ctx, "r10", on(ctx, ctx.night_of_commit("e0cf1393"), ["tpu"], kernels=["softmax", "layer_norm", "rms_norm"]),
                0.88, 0.92), "code",
         "Pallas skips the inner-loop pad when its begin is block-aligned (e0cf1393): TPU row kernels faster, "
         "in the last two nightlies of the window.")

    mi = [m for m in on(ctx, ctx.night_on("2026-05-24"), ["mi350x"])]
    hardware_span(ctx, "h72-mi350x-thermal", "thermal", "2026-05-24", "2026-05-27",
                  {m: {"machine": 1.09, "helion": _u(ctx, "th", m, 0.96, 1.07)} for m in mi},
                  "MI350X node ran hot for four nights (no commit): all MI350X timers up, speedups wobble.",
                  jitter=0.25)
    outage(ctx, "h72-tpu-outage", "tpu", ["2026-05-16"], "TPU job: device unavailable one night, all shapes failed.")
    noise(ctx, "n72-outlier-jsd", "outlier", ("b200", "jsd"), ["2026-03-11"], {"cg_only": 1.17},
          "one-night cudagraph-timer outlier.")
    noise(ctx, "n72-blip-welford", "blip", ("h100", "welford"), ["2026-05-05", "2026-05-06"], {"helion": 1.1},
          "two-night blip, reverts without a commit.", metrics=("helion_speedup_geomean", "helion_latency_avg_ms"))
    noise(ctx, "n72-blip-gemm", "blip", ("mi350x", "gemm"), ["2026-05-04"], {"helion": 0.9}, "one-night upward blip.")
    noise(ctx, "n72-latency-outlier", "outlier", ("tpu", "rms_norm"), ["2026-05-20"], {"db_only": 1.2},
          "latency-only outlier (the speedup timer did not see it).", metrics=("helion_latency_avg_ms",))
    scatter(ctx, "n72-scatter-cute-exp", ("b200_cute", "vector_exp"), 0.042,
            "b200_cute/vector_exp scatters ~6-7% night to night since the CuTe column started; no step.")


# =============================================================================================
def plan73(ctx, changes):
    ctx.reserved = {("h100", "vector_add")}
    rb = sorted({m for n in range(len(ctx.nightly)) for m in on(ctx, n, kernels=["rope-bwd"])})
    crash_until(ctx, "ropebwd-crash", rb, "2e418571")
    default_methods(ctx, changes, skip_members=rb)
    pin = find(changes, "pin", day="2026-04-19", ctx=ctx)
    pin_response(ctx, pin, "m73-torch-2.11", exclude=ctx.reserved, p_b=0.35, p_tc=0.25)
    _hw(ctx, changes, "b33ae6b9", "h73-h100-osdc", "runner",
        lambda m: {"machine": 1.02, "helion": _u(ctx, "osdc", m, 1.03, 1.07), "db_add": -0.004},
        "H100 lane moved to OSDC runners (b33ae6b9): faster hosts cut launch overhead (do_bench latency of "
        "small kernels drops) while the pool's GPUs run slightly slower Helion kernels (cudagraph speedup "
        "drops): the two timers move in opposite directions. Persistent; the later image switch (82bee2fa) "
        "changes nothing.", honest="before")
    _hw(ctx, changes, "ed36077d", "h73-h100-cu130", "driver/toolchain",
        lambda m: {"baseline": _u(ctx, "cu130", m, 0.88, 0.93)} if m[1] in ("gemm", "int4_gemm", "grouped_gemm") else None,
        "H100 lane cu128 -> cu130 (ed36077d): CUDA-13 cuBLAS speeds up torch's GEMM baselines only.")
    tpu = find(changes, "tpu_pins", day="2026-08-07", ctx=ctx)
    machine_response(ctx, tpu, "h73-libtpu-045", "driver/toolchain",
                     {m: {"machine": 0.96, "helion": _u(ctx, "ltpu", m, 0.9, 0.96)} for m in tpu.members},
                     "libtpu 0.0.45 / jax 0.11.0 on both TPU jobs (via the torch_tpu pin update): every TPU kernel "
                     "faster; persistent improvement.", honest="after")

    fa = [m for m in on(ctx, ctx.night_of_commit("97acc416"), kernels=["flash_attention"]) if m[0] in ("h100", "mi350x")]
    real(ctx, "r73-attn-prescale", "97acc416", varied(ctx, "r1", fa, 0.9, 0.93), "code",
         "attention pre-scales q with qk_scale (97acc416).")
    real(ctx, "r73-attn-bmm-dtype", "502c3bf8", varied(ctx, "r2", fa, 0.9, 0.94), "code",
         "bmm(dtype=) lowering for attention (502c3bf8): a second flash_attention step one week later.")
    red = [m for m in on(ctx, ctx.night_of_commit("551f70ca"), ["h100", "b200", "mi350x"], kernels=NORM + RED)]
    real(ctx, "r73-autotune-heuristic-seeds", "551f70ca",
         {m: {"compile": _u(ctx, "seeds", m, 0.66, 0.8)} for m in red if m not in ctx.reserved}, "heuristics/config",
         "Autotuner heuristics seed the search (551f70ca): compile time drops for norm/reduction kernels, "
         "speedups unchanged.", metrics=("compile_time_geomean_s",))
    cute = on(ctx, ctx.night_of_commit("1f2274a6"), ["b200_cute"], kernels=["layer_norm", "rms_norm", "sum"])
    real(ctx, "r73-cute-vec-loads", "1f2274a6", varied(ctx, "r3", cute, 0.85, 0.9), "code",
         "128-bit vectorized loads for CuTe inner reductions (1f2274a6).")
    ctx.noise_scale[("h100", "kl_div")] = 2.3
    real(ctx, "r73-no-roll-arange", "841709dc", {("h100", "kl_div"): {"helion": 1.08}}, "code",
         "reductions over hl.arange dims are no longer rolled into loops (841709dc): kl_div on H100 a modest "
         "8% slower on a ~3% scatter series.")
    real(ctx, "r73-tpu-matmul-ranking", "8d5cc261",
         varied(ctx, "r4", on(ctx, ctx.night_of_commit("8d5cc261"), ["tpu"], kernels=["gemm", "bmm"]), 0.75, 0.82),
         "heuristics/config", "TPU matmul candidates ranked by on-chip time (8d5cc261).")
    real(ctx, "r73-tpu-pl-dot", "7ca0c7d2", {("tpu", "flash_attention"): {"helion": 1.15}}, "code",
         "pl.dot lowering for bf16 matmuls on TPU (7ca0c7d2), reverted next morning (da289f7b).", revert="da289f7b")
    n_amd = ctx.night_of_commit("bc8c6497")
    amd = [m for m in on(ctx, n_amd, ["mi350x"], kernels=NORM + RED + ["rope"]) if not capped(ctx, n_amd, m)
           and m not in ctx.reserved]
    real(ctx, "r73-amd-load-cache", "bc8c6497", varied(ctx, "r5", amd, 0.9, 0.95), "heuristics/config",
         "[triton][AMD] load cache modifier autotuning (bc8c6497): the memory-bound MI350X kernels.")
    real(ctx, "r73-amd-store-cache", "bc1b3c80", varied(ctx, "r6", amd, 0.92, 0.96), "heuristics/config",
         "[triton][AMD] store cache modifier autotuning (bc1b3c80): a second step on the same MI350X kernels.")
    amdg = on(ctx, ctx.night_of_commit("0731d885"), ["mi350x"], kernels=["gemm", "int4_gemm", "grouped_gemm", "flash_attention"])
    real(ctx, "r73-amd-xcd-remap", "0731d885", varied(ctx, "r7", amdg, 0.88, 0.93), "heuristics/config",
         "xcd_remap tunable for AMD CDNA L2 locality (0731d885): MI350X GEMM/attention faster.")
    tpu_mb = on(ctx, ctx.night_of_commit("16e57cbd"), ["tpu"], kernels=NORM + RED)
    real(ctx, "r73-pallas-launcher", "16e57cbd", varied(ctx, "r8", tpu_mb, 1.08, 1.15), "code",
         "[Pallas] standard launcher switched to pl.kernel + emit_pipeline (16e57cbd): the TPU column's "
         "memory-bound kernels all slower.")
    real(ctx, "r73-pointwise-seed", "47752ff4",
         varied(ctx, "r9", on(ctx, ctx.night_of_commit("47752ff4"), ["h100", "b200"], kernels=["rope"]), 0.86, 0.9),
         "heuristics/config", "pointwise seed heuristic promoted to default on sm90/sm100 (47752ff4): rope faster.")
    nred = ctx.night_of_commit("90bad434")
    red2 = on(ctx, nred, ["h100", "b200"], kernels=["softmax", "cross_entropy", "kl_div", "jsd", "layer_norm", "rms_norm"],
              exclude={("h100", "kl_div")})
    real(ctx, "r73-reduction-seed-default", "90bad434", varied(ctx, "r10", red2, 0.9, 0.95), "heuristics/config",
         "reduction seed heuristic promoted to default on sm90+sm100 (90bad434; the B200-specific seeds of "
         "7935fe6e only take effect now).")
    nl = ctx.night_of_commit("b0af5845")
    launch = on(ctx, nl, ["h100", "b200", "mi350x"], suite="tritonbench")
    real(ctx, "r73-prepared-launch", "b0af5845",
         {m: {"db_add": 0.011, "launch_add": 0.011} for m in launch if m not in ctx.reserved}, "code",
         "cached native launches (b0af5845) add host overhead per call: do_bench latency of small kernels "
         "jumps and the non-cudagraph speedups (layer_norm-bwd, rms_norm-bwd, grouped_gemm) drop, while "
         "cudagraph speedups stay flat; fixed two nights later by 0082c703.",
         revert="0082c703", metrics=("helion_latency_avg_ms", "helion_speedup_geomean"))

    b200 = on(ctx, ctx.night_on("2026-06-20"), ["b200"])
    hardware_span(ctx, "h73-b200-thermal", "thermal", "2026-06-20", "2026-06-24",
                  {m: {"machine": 1.1, "helion": _u(ctx, "th", m, 0.95, 1.08)} for m in b200},
                  "B200 host throttling for five nights (no commit).", jitter=0.3)
    outage(ctx, "h73-cute-outage", "b200_cute", ["2026-07-05", "2026-07-06"],
           "b200_cute job: CuTe DSL install broke on the runner two nights; every kernel failed.")
    noise(ctx, "n73-outlier-gemm", "outlier", ("b200", "gemm"), ["2026-05-15"], {"cg_only": 0.84},
          "one-night cudagraph outlier (upward).")
    noise(ctx, "n73-blip-la", "blip", ("h100", "simple_gla"), ["2026-08-03", "2026-08-04"], {"helion": 1.12},
          "two-night blip on a linear-attention row.", metrics=("helion_speedup_geomean", "helion_latency_avg_ms"))
    noise(ctx, "n73-blip-tpu", "blip", ("tpu", "cross_entropy"), ["2026-06-16"], {"helion": 1.1}, "one-night blip.")
    noise(ctx, "n73-latency-outlier", "outlier", ("mi350x", "softmax"), ["2026-07-13"], {"db_only": 1.19},
          "latency-only outlier.", metrics=("helion_latency_avg_ms",))
    scatter(ctx, "n73-scatter-pre-add", ("h100", "vector_add"), 0.035,
            "pretuned h100/vector_add scatters ~5% night to night; no step.", source="pretuned")

    # pretuned suite
    def pin_moves(m):
        k = (ctx.seed, "ppin", *m)
        if m[1] == "nvfp4_gemv" or m in ctx.reserved or not rng.chance(0.35, *k):
            return None
        return {"torch": rng.uniform(0.86, 0.93, *k, "t"), "torch_compile": rng.uniform(0.84, 0.93, *k, "c")}
    pretuned_responses(ctx, changes, {("b200", "rms_norm_per_block_quant", "8379fd86"): 1.09,
                                      ("b200", "nvfp4_gemv", "76df68c9"): 1.12,
                                      ("b200", "scale_mm_cute", "eb6eb8b0"): 0.9}, pin_moves)
    # (52326a08 also regenerated silu_mul_fp8's sm90 config: no speed change of its own, the L2
    # timer label owns that move)
    pb200 = sorted({(al, pk.name) for pk in ctx.pfacts[0].pretuned for al, _, _ in ctx.pfacts[0].pretuned_jobs
                    if al == "b200" and al in pk.hardware})
    n1 = next(i for i, r in enumerate(ctx.pnightly) if r.day == "2026-07-24")
    e = Effect("hp73-b200-thermal", "pretuned",
               {m: {"machine": 1.08, "helion": _u(ctx, "pth", m, 1.04, 1.08)} for m in pb200},
               start_t=ctx.pnightly[n1].time.replace(hour=0, minute=0, second=0),
               end_t=ctx.pnightly[n1 + 3].time.replace(hour=0, minute=0, second=0), transient=True)
    ctx.effects.append(e)
    ctx.labels.append(LabelSpec("hp73-b200-thermal", "pretuned", "hardware", "thermal", tuple(pb200), ("geomean",),
                                "pretuned B200 runner throttled three nights (no commit).", effect=e, honest="before"))
    e2 = Effect("np73-outlier", "pretuned", {("h100", "softmax"): {"helion": 1.2}}, dates=("2026-07-28",),
                transient=True)
    ctx.effects.append(e2)
    ctx.labels.append(LabelSpec("np73-outlier", "pretuned", "noise", "outlier", (("h100", "softmax"),), ("geomean",),
                                "one-night pretuned outlier.", effect=e2, honest="normal", direction="none"))
