"""Blind labeled evaluation worlds for benchwatch, on the REAL Helion history.

Built without reading how benchwatch decides; only from helion-dashboard.md, the bundle and
commits.jsonl. `build_world(seed, workdir, nights=None)` clones the bundle (once per process),
picks a window ending at the last nightly of the bundle (2026-08-22; length 120–180 days from
the seed, or `nights` days), and puts one main nightly per day at 08:00–09:30 UTC on the last
first-parent commit before it (two seeded days skipped), plus manual dispatches (`is_nightly`
false) and side-branch runs, and a pretuned nightly at ~10:00 UTC once `benchmark_pretuned_nightly.yml`
exists. What runs is parsed at each nightly's sha from the real files (dispatch `kernels*`
defaults and aliases, nightly `run_*` inputs, run.py `KERNEL_MAPPINGS` `remove_flags`/`num_inputs`,
run_linattn.py SHAPES/variants, run_tpu.py, benchmark.yml torch pin / `HELION_AUTOTUNE_BUDGET_SECONDS` /
`--measure-compile-time`, pretuned_kernels/run.py KERNELS, each kernel's `_baselines()` and
`use_cudagraph()`, its `_helion_aot_*_smNN.py` files). Times (not speedups) are simulated per
shape: baseline, helion under cudagraph, triton, torch.compile, helion do_bench latency (its own
timer, launch overhead, own scatter), compile time; per-platform-night factors, per-kernel scatter
0.5–3%, ~1% single-timer 15–20% outliers, crashes, failed shapes, accuracy failures, missing
platform nights. Raw artifacts (`benchmark-results-<alias>-<kernels>/helionbench.json`,
`pretuned-results-<alias>/pretuned-bench.json`) are fed night by night to Helion's own builders
(imported from the clone at run time) incrementally with the previous document as `existing`,
exactly like the live site; documents are cached zlib-compressed per night.

Labels (see `Label`): causes real / method_change / hardware / noise.
 - method changes found by parsing the files (every change is labeled, on the commit that made it):
   cudagraph (remove_flags flip), shapes (num_inputs / linattn SHAPES / MI350 input limit),
   autotune (budget cap: compile drops, speedup -4% on capped shapes), baseline (torch pin:
   baseline and triton/compile times move, helion latency flat; pretuned baseline-set change);
   plus catalog commits: timer (22d88942 compile-time fix; 52326a08 pretuned L2 clearing),
   harness (c42fc318 subprocess default, h100 launch-bound kernels, cudagraph timer only).
 - hardware: runner b33ae6b9 (h100), driver 35b19fd4 → reverted 5033b49a (mi350x episode),
   driver e5cc383d (tpu libtpu pin, improvement), thermal episodes (b200 7 nights, b200_cute 4
   nights, no commit), outage (2 nights of zeros on one platform).
 - real: helion/ commits of the window mapped by tag and paths ([cute]/cute paths → b200_cute,
   [Pallas] → tpu, [ROCm] → mi350x, autotuner/heuristic → heuristics on b200/h100; kernel named in
   the subject, or family by words reduction/norm → norm kernels, matmul/tma/tcgen → gemm family);
   7–30% steps, improvements, a modest 7–10% step on a 2.5–4% scatter series, one in the last 3
   nightlies, a second step a week later in one series, pretuned config regenerations.
 - noise: outliers (one night, cudagraph timer only), blips of 1 and 2 nights, a 7% scatter series.
Mechanisms that a window does not contain are simply absent (e.g. pretuned only after 2026-06-30).

honest_speedup (headline: helion_speedup_geomean / pretuned geomean, noise-free level):
 real → after the step; hardware → before the move (the healthy side; for a persistent
 improvement, after); cudagraph → the cudagraph-timed side; shapes/baseline/autotune/timer/harness
 → after (the benchmark as it now is); noise → the normal level.

score(world, alerts) rules: alerts with state 'retracted' are ignored. An alert matches a label
when source equal, (platform_short, kernel) among its members, and its first_bad nightly within ±2
nightlies of the label's (scatter labels: any alert on the series); it counts for every label it
matches (`own_label=True`: only for those that list its metric, if any does, then the nearest
first-bad nightly). Kinds are compared through one spelling each (driver/toolchain = driver,
heuristics/config = heuristics). Per label: got cause = majority
cause of matched alerts, got kind = majority kind among those; first_bad_ok = majority first_bad
exact; culprit_ok = majority culprit equals; change_ok = any matched alert names the change sha;
honest: share of matched headline-metric alerts within 3%; ended_ok = an 'ended' alert whose
end_run_id is within ±1 nightly of the label's. Recall and accuracies are over non-noise labels;
noise_cases_alerted counts noise labels whose majority matched cause is not noise; false alerts =
non-noise alerts matching no label, per 10,000 series×nightlies; lag = first_posted_night −
first-bad night.
"""
from .world import BlindWorld, Label, Night, build_world
from .score import perfect_alerts, score

__all__ = ["BlindWorld", "Label", "Night", "build_world", "score", "perfect_alerts"]
