"""The planted events of each seed, on real commits whose diffs carry them (read with git show).

Changes are fractions: for `real` the change of Helion's speedup (-0.12 = 12% slower); for
`method` the change of a timer stream's measured time (+0.10 = reads 10% slower: on "helion" the
speedup drops, on "base" every speedup rises)."""
from __future__ import annotations

from . import plant as P

ALL = "*"


def plan_181(w):
    """2025-09-27 .. 2026-02-25: h100, b200, mi325x (from 09-30). No latency metric and no compile
    time were published in this era (run.py mapped neither); shapes enter the JSON on 12-17."""
    # ---------------- real
    P.real(w, "s181-r-autotune-gens", "4ff63d1f", [(ALL, "layer_norm-bwd"), (ALL, "rms_norm-bwd")], -0.13,
           kind="heuristics/config",
           note="PatternSearch max_generations 100 -> 20: the CI autotune stops early on the bwd norms, every platform")
    P.real(w, "s181-r-warpspec", "b416d4fa", [("b200", "flash_attention")], -0.16, kind="heuristics/config",
           note="warp specialization dropped from the config space: B200 attention loses its best configs")
    P.real(w, "s181-r-store-idx", "c5dbbbec", [("h100", "softmax"), ("h100", "layer_norm")], 0.09,
           kind="heuristics/config", note="store indexing tunable per store: better configs for H100 norms")
    P.real(w, "s181-r-int64-pid", "99820412", [("h100", "cross_entropy"), ("b200", "cross_entropy"),
                                                ("mi325x", "cross_entropy")], -0.10,
           note="int64 pid arithmetic in every program id: cross_entropy (many programs) slower on all platforms")
    P.real(w, "s181-r-lfbo", "73f5babe", [("h100", "rms_norm-bwd"), ("b200", "rms_norm-bwd"), ("b200", "softmax")],
           0.11, kind="heuristics/config", note="LFBOPatternSearch becomes the default autotuner")
    P.real(w, "s181-r-l2group", "d2f7a010", [("h100", "gemm"), ("b200", "gemm")], 0.10,
           note="XYZ/L2-grouping program-id fix: matmul tiles reuse L2 again")
    P.real(w, "s181-r-persistent", "bd646022", [("b200", "gemm"), ("b200", "grouped_gemm")], 0.08,
           kind="heuristics/config", note="persistent kernels autotuned for multi-occupancy")
    P.real(w, "s181-r-amd-td", "f63efd46", [("mi325x", "layer_norm"), ("mi325x", "rms_norm")], 0.12,
           kind="heuristics/config", note="tensor descriptors/eviction policy no longer searched on AMD")
    P.real(w, "s181-r-tma-int64", "cbb8620a", [("h100", "cross_entropy"), ("b200", "cross_entropy")], -0.09,
           note="TMA disabled with int64 indexing: cross_entropy (int64 since 12-04) loses TMA loads")
    P.real(w, "s181-r-amd-warps", "1f6222a7", [("mi325x", "softmax"), ("mi325x", "welford")], 0.14,
           kind="heuristics/config", note="num_warps/num_stages ranges for AMD")
    P.real(w, "s181-r-default-bs", "934a61e1", [("h100", "flash_attention")], -0.09, kind="heuristics/config",
           note="hard: step in the last three nightlies; default block size 8 for 3-D tiling with a "
                "reduction moves the autotune starting point of attention")
    # ---------------- benchmark method
    P.method(w, "s181-m-fa-shapes", "05fb47de", "shapes", [(ALL, "flash_attention")], {"helion": -0.08},
             honest="new", note="num_inputs for flash_attention cut: the dropped long-sequence shapes were "
                                "Helion's weakest; the kernel is unchanged (honest: the shapes measured now)")
    P.method(w, "s181-m-torch29", "dc53ff93", "baseline", [("h100", "softmax"), ("b200", "softmax"),
                                                          ("h100", "layer_norm"), ("b200", "jsd")],
             {"base": -0.09}, honest="new",
             note="torch nightly -> 2.9 pin: eager baselines faster, all three speedups drop together")
    P.method(w, "s181-m-gemm-nonsquare", "b77301f9", "shapes", [(ALL, "gemm")], {"helion": 0.07}, honest="new",
             shape_salt="nonsquare", note="--non-square gemm inputs (same count, other shapes)")
    P.method(w, "s181-m-gemm-inputs", "63e022f4", "shapes", [(ALL, "gemm")], {"helion": -0.06}, honest="new",
             note="hard: a week after the previous gemm step; num_inputs 6 -> 8 (+ more reps)")
    P.method(w, "s181-m-cache-hit", "c3c962d3", "harness", [("h100", "kl_div"), ("b200", "kl_div"), ("mi325x", "jsd")],
             {"helion": -0.08}, honest="new",
             note="HELION_ASSERT_CACHE_HIT=1 on the recorded run: it reuses the first pass's full-autotune config "
                  "instead of re-tuning; baselines flat")
    P.method(w, "s181-m-int4-baseline", "c953df98", "baseline", [(ALL, "int4_gemm")], {"base": -0.24},
             honest="new", note="int4_gemm baseline becomes the preprocessed eager op (accurate baseline)")
    P.method(w, "s181-m-welford-inputs", "09b9b45e", "shapes", [(ALL, "welford")], {"helion": 0.10},
             honest="new", note="welford num_inputs 6: only the small shapes remain")
    # ---------------- hardware
    P.hardware(w, "s181-h-h100-cu128", "driver/toolchain", [("h100", ALL)], "4ba2fe59", change="4ba2fe59",
               common=0.07, speed=(-0.09, 0.03), honest="new",
               note="H100 image cuda 12.9.1 -> 12.8.1 (runtime cu129 -> cu128)")
    P.hardware(w, "s181-h-b200-cu130", "driver/toolchain", [("b200", ALL)], "4ba2fe59", change="4ba2fe59",
               common=-0.06, speed=(-0.02, 0.09), honest="new",
               note="B200 image cuda 12.9.1 -> 13.0.1 (cu130)")
    P.hardware(w, "s181-h-rocm644", "driver/toolchain", [("mi325x", ALL)], "d588560b", change="d588560b",
               common=-0.10, speed=(-0.03, 0.10), honest="new", note="MI325X pinned back to ROCm 6.4.4")
    P.hardware(w, "s181-h-b200-thermal", "thermal", [("b200", ALL)], "2025-11-18", end="2025-11-22",
               common=0.17, speed=(-0.12, -0.03), honest="old", note="B200 throttling for four nights, then fine")
    P.outage(w, "s181-h-h100-outage", "h100", "2025-12-24", "2025-12-28", note="H100 runners offline over the holidays")
    P.hardware(w, "s181-h-mi-thermal", "thermal", [("mi325x", ALL)], "2026-01-06", end="2026-01-09",
               common=0.14, speed=(-0.10, 0.0), honest="old", note="MI325X hot node, three nights")
    P.hardware(w, "s181-h-h100-runner", "runner", [("h100", ALL)], "2026-01-20", common=-0.08,
               speed=(-0.06, 0.07), honest="new",
               note="the linux.aws.h100 pool moved to other hosts (same label, no commit): permanent")
    P.outage(w, "s181-h-mi-outage", "mi325x", "2026-02-03", "2026-02-05", note="MI325X queue stuck two nights")
    P.hardware(w, "s181-h-b200-driver", "driver/toolchain", [("b200", ALL)], "2026-02-10", end="2026-02-16",
               common=0.12, speed=(-0.11, -0.02), honest="old",
               note="host driver update on the B200 node, rolled back six nights later (no repo commit); "
                    "b200/cross_entropy had a real step a week before (hard: two events in one series)")
    # ---------------- noise
    P.outlier(w, "s181-n-h100-softmax", ("h100", "softmax"), "2025-11-05", -0.19, note="one-night helion-timer blip")
    P.outlier(w, "s181-n-b200-jsd", ("b200", "jsd"), "2025-12-09", 0.20, streams=("base",),
              note="one-night baseline-timer blip: every speedup up for one night")
    P.scatter(w, "s181-n-mi-kldiv", ("mi325x", "kl_div"), "2025-11-25", sig=0.07, note="kl_div on MI325X turns noisy")
    P.outlier(w, "s181-n-mi-rms", ("mi325x", "rms_norm"), "2026-01-22", -0.22)
    P.scatter(w, "s181-n-b200-lnbwd", ("b200", "layer_norm-bwd"), "2026-01-27", sig=0.06)
    P.outlier(w, "s181-n-h100-ggemm", ("h100", "grouped_gemm"), "2026-02-12", 0.16, note="one-night improvement blip")
    P.outlier(w, "s181-n-b200-welford", ("b200", "welford"), "2025-10-19", -0.15)


def plan_182(w):
    """2026-01-25 .. 2026-06-25: h100, b200, mi325x (until 04-23), mi350x (04-11), tpu (05-07),
    b200_cute (05-17). Compile time from 04-07, latency from 04-21. No pretuned suite yet."""
    # ---------------- real
    P.real(w, "s182-r-finishing", "c990c751", [("h100", "softmax"), ("b200", "softmax"), ("h100", "kl_div")], -0.10,
           kind="heuristics/config", end_commit="99731ad3",
           note="finishing phase minimizes the winning config (drops knobs that mattered); ended when 99731ad3 "
                "disabled finishing rounds by default a week later")
    P.real(w, "s182-r-warpcap", "ec27d559", [("h100", "layer_norm"), ("b200", "layer_norm"), ("b200", "rms_norm")],
           -0.12, kind="heuristics/config", end_commit="1e3d383e",
           note="num_warps capped in the config space; reverted three nightlies later (1e3d383e)")
    P.real(w, "s182-r-maxnreg", "6e0c8651", [("h100", "flash_attention")], -0.11, kind="heuristics/config",
           note="maxnreg capped to the register budget: attention loses its high-register configs")
    P.real(w, "s182-r-amd-nonkdim", "0d292da0", [("mi350x", "gemm"), ("mi350x", "int4_gemm")], -0.13,
           kind="heuristics/config", note="matrix_instr_nonkdim restricted to 16 on AMD")
    P.real(w, "s182-r-seeds", "1cfc7fa0", [("h100", "gemm"), ("b200", "gemm"), ("b200", "grouped_gemm")], 0.09,
           kind="heuristics/config", note="autotuner seed configs enabled: matmuls start from good configs")
    P.real(w, "s182-r-cute-rms", "e2444e45", [("b200_cute", "rms_norm")], 0.24,
           note="CuTe persistent reduction with >32 threads for rms_norm")
    P.real(w, "s182-r-cute-vec", "1f2274a6", [("b200_cute", "layer_norm"), ("b200_cute", "sum")], 0.13,
           note="hard: the night after the rms_norm step, other CuTe series; 128-bit vector loads")
    P.real(w, "s182-r-tpu-launcher", "09e30fac", [("tpu", "softmax"), ("tpu", "layer_norm"), ("tpu", "rms_norm")],
           0.16, note="Pallas host-side fast-path launcher: small TPU kernels lose launch overhead")
    P.real(w, "s182-r-cute-cap", "a1f53a20", [("b200_cute", "layer_norm")], -0.12,
           note="synthetic-lane reductions capped to one warp (second event on b200_cute/layer_norm)")
    P.real(w, "s182-r-tpu-rank", "8d5cc261", [("tpu", "gemm"), ("tpu", "bmm")], 0.30, kind="heuristics/config",
           note="TPU matmul candidates ranked by on-chip time (the big win)")
    P.real(w, "s182-r-amd-store", "bc1b3c80", [("mi350x", "softmax"), ("mi350x", "layer_norm"), ("mi350x", "rms_norm")],
           0.11, kind="heuristics/config", note="hard: step in the last two nightlies; AMD store cache modifiers tuned")
    # ---------------- benchmark method
    P.method(w, "s182-m-torch210", "9a61a903", "baseline", [("h100", "cross_entropy"), ("b200", "cross_entropy"),
                                                          ("mi325x", "jsd")], {"base": -0.10}, honest="new",
             note="torch 2.9 -> 2.10 pin: faster eager baselines, all three speedups drop together")
    P.method(w, "s182-m-ggemm-cg", "91b2f93c", "cudagraph", [(ALL, "grouped_gemm")],
             {"helion": 0.16, "triton": 0.12, "tc": 0.10}, honest="old",
             note="--cudagraph removed for grouped_gemm: launch overhead enters every impl's time; the kernel "
                  "is unchanged (honest: the cudagraph-timed speedup)")
    P.method(w, "s182-m-once", "ea484a38", "harness", [("h100", "flash_attention"), ("b200", "flash_attention"),
                                                       ("h100", "int4_gemm"), ("b200", "gemm")],
             {"helion": 0.08}, honest="old",
             note="tritonbench runs once (autotune and timing in one process): Helion is timed right after its "
                  "autotune on a hot GPU; the latency timer runs later and stays")
    P.method(w, "s182-m-bwd-cg", "0ac95a80", "cudagraph", [(ALL, "layer_norm-bwd"), (ALL, "rms_norm-bwd")],
             {"helion": 0.12, "triton": 0.09, "tc": 0.08}, honest="old",
             note="--cudagraph removed for the bwd norms; do_bench latency unchanged")
    P.method(w, "s182-m-fa-sdpa", "31495c8b", "baseline", [(ALL, "flash_attention")], {"base": -0.22},
             honest="new", note="flash_attention baseline aten -> sdpa (a real attention baseline)")
    P.method(w, "s182-m-budget", "9f461a21", "autotune", [("h100", "gdn_fwd_h"), ("b200", "mamba2_chunk_scan"),
                                                          ("h100", "mamba2_chunk_state")],
             {"helion": 0.10, "lat": 0.10, "compile": -0.45}, honest="old",
             note="HELION_AUTOTUNE_BUDGET_SECONDS=5400: the long searches stop early (compile time drops, "
                  "configs worse); a user's full autotune still gets the old speed")
    P.method(w, "s182-m-rope-inputs", "6ad99e29", "shapes", [(ALL, "rope")], {"helion": -0.10, "lat": -0.35},
             honest="new", note="hard: the last nightly; rope num_inputs 5 (the big inputs dropped)")
    # ---------------- hardware
    P.hardware(w, "s182-h-b200-thermal", "thermal", [("b200", ALL)], "2026-02-17", end="2026-02-20", common=0.16,
               speed=(-0.12, -0.02), honest="old", note="B200 throttling for three nights")
    P.hardware(w, "s182-h-rocm711", "driver/toolchain", [("mi325x", ALL)], "3f63f311", change="3f63f311",
               common=-0.09, speed=(-0.04, 0.10), honest="new", note="MI325X image ROCm 6.4.4 -> 7.1.1")
    P.hardware(w, "s182-h-gfx942-1", "runner", [("mi325x", ALL)], "9eefa499", change="9eefa499", common=0.06,
               speed=(-0.09, 0.03), honest="new", note="MI325X runner label gfx942.2 -> gfx942.1")
    P.hardware(w, "s182-h-cublas", "driver/toolchain", [("b200", "gemm"), ("b200", "int4_gemm")], "8690b5f1",
               change="8690b5f1", streams={"base": -0.14}, honest="new",
               note="B200 image cuda 13.0.1 -> 13.1.0 for a newer cuBLAS: the gemm baselines get faster")
    P.outage(w, "s182-h-h100-outage", "h100", "2026-04-04", "2026-04-07", note="H100 pool drained three nights")
    P.hardware(w, "s182-h-mi350-thermal", "thermal", [("mi350x", ALL)], "2026-05-08", end="2026-05-11",
               common=0.18, speed=(-0.12, -0.01), honest="old")
    P.outage(w, "s182-h-tpu-outage", "tpu", "2026-05-26", "2026-05-28", note="TPU v7 quota exhausted two nights")
    P.hardware(w, "s182-h-osdc", "runner", [("h100", ALL)], "b33ae6b9", change="b33ae6b9", common=-0.09,
               speed=(-0.07, 0.06), honest="new", note="H100 moved to OSDC runners (pytorch/pytorch base image)")
    P.hardware(w, "s182-h-b200-driver", "driver/toolchain", [("b200", ALL), ("b200_cute", ALL)], "2026-06-09",
               end="2026-06-13", common=0.13, speed=(-0.10, -0.02), honest="old",
               note="B200 host driver regression (both b200 and b200_cute run on linux.dgx.b200), fixed after four nights")
    P.hardware(w, "s182-h-cu130", "driver/toolchain", [("h100", ALL)], "ed36077d", change="ed36077d", common=-0.05,
               speed=(-0.06, 0.06), honest="new", note="H100 nightly lane cu128 -> cu130")
    # ---------------- noise
    P.outlier(w, "s182-n-h100-jsd", ("h100", "jsd"), "2026-02-05", -0.18)
    P.scatter(w, "s182-n-b200-welford", ("b200", "welford"), "2026-03-20", sig=0.07)
    P.outlier(w, "s182-n-mi325-gemm", ("mi325x", "gemm"), "2026-04-14", 0.19, streams=("base",))
    P.outlier(w, "s182-n-tpu-ce", ("tpu", "cross_entropy"), "2026-05-19", -0.21)
    P.scatter(w, "s182-n-mi350-kldiv", ("mi350x", "kl_div"), "2026-05-20", sig=0.08)
    P.outlier(w, "s182-n-cute-vexp", ("b200_cute", "vector_exp"), "2026-06-01", -0.17, streams=("helion", "lat"))
    P.outlier(w, "s182-n-h100-ce", ("h100", "cross_entropy"), "2026-06-16", 0.16)


def plan_183(w):
    """2026-03-12 .. 2026-08-10: adds linear attention (07-30), the TPU bridge (07-29) and the
    pretuned suite (07-01)."""
    w.planted_tc = {("b200", "rms_norm"), ("h100", "layer_norm"), ("h100", "softmax"), ("b200", "cross_entropy")}
    # ---------------- real (dashboard)
    P.real(w, "s183-r-blocksize", "149dec2d", [("h100", "welford"), ("b200", "welford"), ("mi325x", "welford")], 0.10,
           kind="heuristics/config", note="larger minimum block sizes prune slow welford configs, every platform")
    P.real(w, "s183-r-amd-stale", "e2c71314", [("mi350x", "layer_norm"), ("mi350x", "softmax")], -0.09,
           note="stale global memory read fix for AMD adds synchronization")
    P.real(w, "s183-r-cute-rms", "e2444e45", [("b200_cute", "rms_norm")], 0.22,
           note="CuTe persistent reduction with >32 threads for rms_norm")
    P.real(w, "s183-r-tmadesc", "b46d557c", [("h100", "int4_gemm")], -0.08,
           note="tensor descriptors rejected when the block exceeds the tensor dim (int4_gemm small-K shapes)")
    P.real(w, "s183-r-mm-seeds", "a05dde83", [("h100", "gemm"), ("b200", "gemm"), ("mi350x", "gemm")], 0.10,
           kind="heuristics/config", note="matmul heuristics used as default autotune seeds, every GPU")
    P.real(w, "s183-r-amd-load", "bc8c6497", [("mi350x", "rms_norm"), ("mi350x", "welford")], 0.11,
           kind="heuristics/config", note="AMD load cache modifiers autotuned")
    P.real(w, "s183-r-xcd", "0731d885", [("mi350x", "gemm"), ("mi350x", "grouped_gemm")], 0.12,
           note="xcd_remap for CDNA L2 locality (second event on mi350x/gemm)")
    P.real(w, "s183-r-redseed", "90bad434", [("h100", "softmax"), ("b200", "softmax"), ("h100", "rms_norm"),
                                             ("b200", "layer_norm")], 0.10, kind="heuristics/config",
           note="reduction seed promoted to default on sm90 and sm100")
    P.real(w, "s183-r-h100-mm", "530ea26b", [("h100", "gemm")], -0.09, kind="heuristics/config",
           note="H100 matmul seed replaced by a budget formula")
    P.real(w, "s183-r-b200-mm", "5a9f540d", [("b200", "gemm"), ("b200", "grouped_gemm")], -0.10,
           kind="heuristics/config", note="B200 matmul seed table subsumed by the general formula")
    # ---------------- benchmark method (dashboard)
    P.method(w, "s183-m-once", "ea484a38", "harness", [("h100", "gemm"), ("b200", "flash_attention"),
                                                       ("mi350x", "flash_attention")], {"helion": 0.09},
             honest="old", note="tritonbench runs once: Helion timed right after autotune on a hot GPU; latency flat")
    P.method(w, "s183-m-bwd-cg", "0ac95a80", "cudagraph", [("h100", "layer_norm-bwd"), ("b200", "layer_norm-bwd"),
                                                           ("b200", "rms_norm-bwd"), ("mi350x", "rms_norm-bwd")],
             {"helion": 0.13, "triton": 0.10, "tc": 0.09}, honest="old",
             note="--cudagraph removed for the bwd norms; do_bench latency unchanged")
    P.method(w, "s183-m-fa-sdpa", "31495c8b", "baseline", [("h100", "flash_attention"), ("b200", "flash_attention")],
             {"base": -0.20}, honest="new", note="flash_attention baseline aten -> sdpa")
    P.method(w, "s183-m-budget", "9f461a21", "autotune", [("h100", "flash_attention"), ("b200", "gdn_fwd_h"),
                                                          ("b200", "mamba2_chunk_state")],
             {"helion": 0.09, "lat": 0.09, "compile": -0.40}, honest="old",
             note="per-shape autotune budget cap in nightly CI")
    P.method(w, "s183-m-tpu-bridge", "78f0b64a", "harness", [("tpu", "softmax"), ("tpu", "layer_norm"),
                                                             ("tpu", "rms_norm"), ("tpu", "gemm")],
             {"base": 0.14, "helion": 0.02}, honest="new",
             note="TPU kernels move from run_tpu.py to the tritonbench bridge (other baseline and harness)")
    P.method(w, "s183-m-tpu-fp32", "142d00ce", "harness", [("tpu", "kl_div"), ("tpu", "welford")],
             {"helion": -0.12, "lat": 0.30}, honest="new",
             note="kl_div and welford run at fp32 on the bridge (as the examples do)")
    P.method(w, "s183-m-welford-mi350", "cabf93d5", "shapes", [("mi350x", "welford")], {"helion": 0.09, "lat": -0.3},
             honest="new", note="unstable MI350 welford inputs dropped")
    P.method(w, "s183-m-linattn-aot", "70ec581a", "shapes", [("h100", "suite:linattn")], {"helion": -0.15, "lat": 0.6},
             honest="new",
             note="hard: step in the last three nightlies; h100 linear-attention rows go from two to six shapes "
                  "and take checked-in AOT configs (HELION_AUTOTUNE_CACHE=AOTAutotuneCache)")
    # ---------------- hardware
    P.hardware(w, "s183-h-b200-thermal", "thermal", [("b200", ALL)], "2026-04-08", end="2026-04-11", common=0.15,
               speed=(-0.11, -0.02), honest="old")
    P.hardware(w, "s183-h-mi350-runner", "runner", [("mi350x", ALL)], "2026-05-11", common=0.08, speed=(-0.08, 0.05),
               honest="new", note="MI350X jobs land on a second gfx950 host (same label, no commit)")
    P.hardware(w, "s183-h-osdc", "runner", [("h100", ALL)], "b33ae6b9", change="b33ae6b9", common=-0.10,
               speed=(-0.06, 0.07), honest="new", note="H100 moved to OSDC runners")
    P.hardware(w, "s183-h-nvcuda", "driver/toolchain", [("h100", ALL)], "82bee2fa", change="82bee2fa",
               common=-0.06, speed=(-0.05, 0.07), honest="new", note="H100 image back to nvidia/cuda 13.1")
    P.outage(w, "s183-h-tpu-outage", "tpu", "2026-06-14", "2026-06-17")
    P.hardware(w, "s183-h-tpu-runner", "runner", [("tpu", ALL)], "2026-07-05", common=-0.12, speed=(-0.06, 0.08),
               honest="new", note="TPU v7 pool re-provisioned (no commit)")
    P.outage(w, "s183-h-mi350-outage", "mi350x", "2026-07-10", "2026-07-12")
    P.hardware(w, "s183-h-b200-driver", "driver/toolchain", [("b200", ALL), ("b200_cute", ALL)], "2026-07-24",
               end="2026-07-28", common=0.14, speed=(-0.11, -0.03), honest="old",
               note="B200 host driver regression hits b200 and b200_cute (same runner), rolled back")
    P.hardware(w, "s183-h-mi350-thermal", "thermal", [("mi350x", ALL)], "2026-08-02", end="2026-08-05",
               common=0.16, speed=(-0.12, -0.02), honest="old")
    # ---------------- noise (dashboard)
    P.outlier(w, "s183-n-h100-kldiv", ("h100", "kl_div"), "2026-03-30", -0.17)
    P.scatter(w, "s183-n-b200-jsd", ("b200", "jsd"), "2026-05-05", sig=0.07)
    P.outlier(w, "s183-n-tpu-fa", ("tpu", "flash_attention"), "2026-06-22", 0.2, streams=("base",))
    P.outlier(w, "s183-n-cute-sum", ("b200_cute", "sum"), "2026-07-14", -0.19)
    P.outlier(w, "s183-n-h100-sgla", ("h100", "simple_gla-bwd"), "2026-08-03", -0.2)
    P.scatter(w, "s183-n-mi350-jsd", ("mi350x", "jsd"), "2026-06-20", sig=0.08)
    # ---------------- pretuned
    P.p_method(w, "s183-p-tc-baseline", "df7ebeab", "baseline", sorted(w.planted_tc), None, honest="new", auto=True,
               direction="regression",
               note="torch.compile added as a baseline to every kernel: where it beats eager the headline "
                    "(vs the fastest baseline) drops")
    P.p_method(w, "s183-p-l2", "52326a08", "timer",
               [(ALL, k) for k in ("scaled_mm", "dynamic_per_token_scaled_fp8_quant", "per_token_group_fp8_quant",
                                   "rms_norm_per_block_quant", "fused_qk_norm_rope")],
               {"helion": 0.22, "base": 0.10}, honest="new",
               note="the cudagraph timer clears L2 each replay (tritonbench's timer): cudagraph kernels read HBM now")
    P.p_real(w, "s183-p-barrier", "3f0134cc", [(ALL, "silu_and_mul_per_block_quant"), ("h100", "rms_norm_per_block_quant")],
             -0.10, note="tl.debug_barrier inserted for intra-loop store->load hazards")
    P.p_real(w, "s183-p-b200-rmsq", "8379fd86", [("b200", "rms_norm_per_block_quant")], 0.12,
             kind="heuristics/config", note="checked-in sm100 config regenerated")
    P.p_method(w, "s183-p-qkrope", "22a8377e", "baseline", [(ALL, "fused_qk_norm_rope")], {"base:vllm": -0.42},
               honest="new", note="fused QK RoPE compared against vLLM's fused op (the vllm baseline redefined)")
    P.p_real(w, "s183-p-nvfp4", "76df68c9", [("b200", "nvfp4_gemv")], -0.12, kind="heuristics/config",
             note="warp-specialized NVFP4 GEMV config disabled")
    P.p_method(w, "s183-p-torch213", "76df68c9", "baseline", [("h100", "rms_norm"), ("b200", "layer_norm"),
                                                            ("b200", "softmax")], {"base:torch": -0.13}, honest="new",
               note="pretuned torch pin 2.11 -> 2.13: eager baselines faster")
    P.p_hardware(w, "s183-p-h-b200-driver", "driver/toolchain", [("b200", ALL)], "2026-07-24", end="2026-07-28",
                 common=0.14, speed=(-0.10, -0.03), honest="old",
                 note="the B200 host driver episode seen by the pretuned suite (same runner pool)")
    P.p_outlier(w, "s183-p-n-ce", ("h100", "cross_entropy"), "2026-07-12", -0.18)
    P.p_outlier(w, "s183-p-n-vadd", ("b200", "vector_add"), "2026-07-25", 0.17)


PLANS = {181: plan_181, 182: plan_182, 183: plan_183}
