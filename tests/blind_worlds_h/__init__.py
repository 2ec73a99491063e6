"""Blind labeled worlds (set H) for benchwatch on the real Helion history; see README.md."""
from __future__ import annotations

SEEDS = (71, 72, 73)

WINDOWS = {
    71: dict(start="2025-11-21", end="2026-03-20",
             about="h100/b200/mi325x, no latency or compile time yet; torch 2.10, ROCm 7.1 and runner "
                   "moves, b200 CUDA image, grouped_gemm cudagraph; autotuner and reduction changes"),
    72: dict(start="2026-02-10", end="2026-06-12",
             about="mi325x -> mi350x, TPU and b200_cute arrive; compile time, latency, single-pass "
                   "harness, torch 2.11, cudagraph flags, budget cap, H100 OSDC image episode"),
    73: dict(start="2026-04-10", end="2026-08-14",
             about="pretuned suite, linear attention, TPU bridge; heuristics, CuTe, Pallas and "
                   "launcher events; last nightlies carry a launch-overhead episode"),
}


def build_world(seed: int, workdir, nights: int | None = None):
    from .world import build_world as _build

    return _build(seed, workdir, nights)
