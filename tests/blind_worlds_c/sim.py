"""Per-shape time simulation of one series (dashboard kernel or pretuned kernel) on one night.

Times, not speedups, are simulated: a baseline time, a Helion time, a Triton time and a torch.compile
time per shape, each measured by two timers (the CUDA-graph timer that makes the speedups, and the
do_bench timer that makes the latency). A baseline measurement is drawn once per shape and night and
divides all three implementation times, so baseline noise is shared by the three speedups.
"""
from __future__ import annotations

import hashlib
import math
import random

FAMILY = {}
for _k in ("softmax layer_norm rms_norm sum welford cross_entropy kl_div jsd layer_norm-bwd rms_norm-bwd "
           "softmax_two_pass").split():
    FAMILY[_k] = "reduction"
for _k in ("gemm int4_gemm grouped_gemm bmm fp8_gemm scaled_mm scale_mm_cute grouped_gemm_deepgemm nvfp4_gemv "
           "nvfp4_gemv_cute projection_rotary interleaved_swiglu").split():
    FAMILY[_k] = "matmul"
for _k in "flash_attention fp8_attention jagged_hstu_attention".split():
    FAMILY[_k] = "attention"
for _k in ("vector_add vector_exp rope exp add silu_mul_fp8 dynamic_per_token_scaled_fp8_quant per_token_group_fp8_quant "
           "rms_norm_dynamic_per_token_quant rms_norm_per_block_quant silu_and_mul_per_block_quant fused_qk_norm_rope "
           "causal_conv1d gdn_decode").split():
    FAMILY[_k] = "elementwise"
for _k in "mamba2_chunk_state mamba2_chunk_scan gdn_fwd_h".split():
    FAMILY[_k] = "ssm"
# pretuned kernels that are norms are reductions even when quantising
for _k in "rms_norm_dynamic_per_token_quant rms_norm_per_block_quant".split():
    FAMILY[_k] = "reduction"


def family(kernel: str) -> str:
    return FAMILY.get(kernel, "linattn" if any(x in kernel for x in ("gla", "retention", "delta", "kda", "linear_attn"))
                      else "other")


def srng(*parts) -> random.Random:
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def geo(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


class Series:
    """Static parameters of one series, drawn from (seed, key)."""

    def __init__(self, seed, source, plat, kernel):
        r = srng(seed, source, plat, kernel)
        self.key = (source, plat, kernel)
        self.source = source
        self.h_speed = math.exp(r.gauss(0.15, 0.35))          # helion speedup level
        self.t_speed = math.exp(r.gauss(0.0, 0.25))
        self.c_speed = math.exp(r.gauss(0.05, 0.25))
        self.slope = r.choice((-1, 1)) * r.uniform(0.9, 1.6)  # speedup trend over the shape pool
        self.t0 = math.exp(r.uniform(math.log(0.004), math.log(0.4)))  # ms, smallest shape baseline time
        self.growth = r.uniform(3.0, 5.5)                      # log range of times over the pool
        self.sig_cg = r.uniform(0.005, 0.035)
        self.sig_lat = r.uniform(0.005, 0.035)
        self.compile0 = r.uniform(4, 45)
        # launch overhead seen by the non-cudagraph timer (relative): helion vs baseline differ
        self.ov_h = r.uniform(0.25, 0.6)
        self.ov_b = self.ov_h * r.choice((r.uniform(0.45, 0.75), r.uniform(1.35, 1.7)))
        self.ov_t = self.ov_h * r.uniform(0.8, 1.2)
        self.ov_c = self.ov_h * r.uniform(0.8, 1.2)
        self.baseline_speed = {}  # pretuned: name -> factor vs helion
        self.noisy = False

    def shape_offset(self, name: str) -> float:
        return srng(self.key, "shape", name).gauss(0, 0.12)

    def baseline_rel(self, name: str) -> float:
        """pretuned: baseline time relative to helion time (>1 = helion faster)."""
        if name not in self.baseline_speed:
            r = srng(self.key, "bl", name)
            self.baseline_speed[name] = math.exp(r.gauss(0.25, 0.3))
        return self.baseline_speed[name]


def shape_pool(kind):
    """(labels, normalised positions) for a fact's shape spec."""
    if kind[0] == "gpu":
        n = kind[1]
        labels = [f"[{2 ** (10 + i // 4)}, {512 * (1 + i % 4)}]" for i in range(n)]
        return labels, [i / 20.0 for i in range(n)]
    if kind[0] == "lin":
        names = list(kind[1])
        return names, [srng("linpos", nm).random() for nm in names]
    if kind[0] == "tpu":
        r = srng("tpu", kind[1])
        n = kind[2]
        labels = [f"tpu_{kind[1][:4]}_{i}" for i in range(n)]
        return labels, [(i + r.random() * 3) / 11.0 for i in range(n)]
    n = kind[1] if len(kind) > 1 else 8
    return [f"s{i}" for i in range(n)], [i / max(n - 1, 1) for i in range(n)]


def mult(effects, night, what):
    m = 1.0
    for e in effects:
        if e.start <= night and (e.end is None or night < e.end):
            m *= e.f.get(what, 1.0)
    return m


def run_dashboard(s: Series, spec, night, effects, pf, rng):
    """One kernel's per-shape metrics on one night. rng=None gives the noise-free expectation.

    spec: dict(cudagraph, shapes); pf: platform-night factor (shared by every kernel there).
    Returns dict of per-shape lists (metric name -> list) and the shape labels.
    """
    labels, pos = shape_pool(spec["shapes"])
    cg = spec["cudagraph"]
    fh = mult(effects, night, "h")
    fb = mult(effects, night, "b")
    ft = mult(effects, night, "t")
    fc = mult(effects, night, "c")
    fcg = mult(effects, night, "cg")        # speedup timer only (helion impl)
    fcgb = mult(effects, night, "cgb")      # speedup timer only (baseline)
    flat = mult(effects, night, "lat")      # latency timer only
    fct = mult(effects, night, "ct")        # compile time
    g = lambda sig: math.exp(rng.gauss(0, sig)) if rng else 1.0
    out_cg_h = out_cg_b = 1.0
    out_lat = 1.0
    if rng is not None and rng.random() < 0.012:          # stray single-timer outlier
        if rng.random() < 0.5:
            out_cg_h = rng.choice((1, -1)) * rng.uniform(0.15, 0.2) + 1
        else:
            out_lat = rng.choice((1, -1)) * rng.uniform(0.15, 0.2) + 1
    sig_cg = s.sig_cg * (3 if s.noisy else 1)
    sig_lat = s.sig_lat * (3 if s.noisy else 1)
    res = {k: [] for k in ("helion_speedup", "triton_speedup", "torch_compile_speedup", "helion_accuracy",
                           "helion_compile_time_s", "helion_latency_ms")}
    for lab, x in zip(labels, pos):
        tb = s.t0 * math.exp(s.growth * x) * pf * fb
        sp = s.h_speed * math.exp(s.slope * (x - 0.5) + s.shape_offset(lab))
        th = s.t0 * math.exp(s.growth * x) / sp * pf * fh
        tt = s.t0 * math.exp(s.growth * x) / (s.t_speed * math.exp(0.3 * s.shape_offset(lab + "t"))) * pf * ft
        tc = s.t0 * math.exp(s.growth * x) / (s.c_speed * math.exp(0.3 * s.shape_offset(lab + "c"))) * pf * fc
        if not cg:   # without CUDA graphs the speedup timer sees the launch overhead
            tiny = s.t0 * 8
            tb_m, th_m = tb + tiny * s.ov_b, th + tiny * s.ov_h
            tt_m, tc_m = tt + tiny * s.ov_t, tc + tiny * s.ov_c
        else:
            tb_m, th_m, tt_m, tc_m = tb, th, tt, tc
        mb = tb_m * fcgb * g(sig_cg) * out_cg_b
        mh = th_m * fcg * g(sig_cg) * out_cg_h
        mt = tt_m * g(sig_cg)
        mc = tc_m * g(sig_cg)
        lat = th * flat * g(sig_lat) * out_lat
        fail = rng is not None and rng.random() < 0.003
        res["helion_speedup"].append(0.0 if fail else round(mb / mh, 4))
        res["triton_speedup"].append(round(mb / mt, 4))
        res["torch_compile_speedup"].append(round(mb / mc, 4))
        res["helion_accuracy"].append(0.0 if fail else 1.0)
        res["helion_compile_time_s"].append(round(s.compile0 * math.exp(0.8 * x) * fct * g(0.08), 2))
        res["helion_latency_ms"].append(0.0 if fail else round(lat, 5))
    return labels, res


def dash_summary(res) -> dict:
    lat = [v for v in res["helion_latency_ms"] if v]
    return dict(helion_speedup_geomean=geo(res["helion_speedup"]), triton_speedup_geomean=geo(res["triton_speedup"]),
                torch_compile_speedup_geomean=geo(res["torch_compile_speedup"]),
                compile_time_geomean_s=geo(res["helion_compile_time_s"]),
                helion_latency_avg_ms=sum(lat) / len(lat) if lat else 0.0)


def run_pretuned(s: Series, spec, night, effects, pf, rng):
    """Record in pretuned-bench.json shape (without kernel/device fields)."""
    n = 10
    fh = mult(effects, night, "h")
    fb = mult(effects, night, "b")
    fcg = mult(effects, night, "cg")
    cg = spec["cudagraph"]
    sig = s.sig_cg * (3 if s.noisy else 1)
    g = lambda: math.exp(rng.gauss(0, sig)) if rng else 1.0
    outl = 1.0
    if rng is not None and rng.random() < 0.012:
        outl = 1 + rng.choice((1, -1)) * rng.uniform(0.15, 0.2)
    per_bl = {b: [] for b in spec["baselines"]}
    best = []
    for i in range(n):
        x = i / (n - 1)
        th = math.exp(s.slope * 0.3 * (x - 0.5)) * pf * fh * fcg * outl
        if not cg:
            th += 0.3 * s.ov_h
        hm = th * g()
        row = []
        for b in spec["baselines"]:
            tb = s.baseline_rel(b) * math.exp(s.shape_offset(f"{b}{i}")) * pf * fb
            if not cg:
                tb += 0.3 * s.ov_b
            bm = tb * g()
            per_bl[b].append(bm / hm)
            row.append(bm)
        best.append(min(row) / hm)
    rec = dict(geomean=geo(best), helion_wins=sum(1 for v in best if v > 1.0), total=n, best_speedup=max(best))
    if len(per_bl) > 1:
        rec["baselines"] = {b: dict(wins=sum(1 for v in vs if v > 1.0), total=n, geomean=round(geo(vs), 4),
                                    best_speedup=round(max(vs), 4)) for b, vs in per_bl.items()}
    else:
        rec["baselines"] = None
    rec["cudagraph"] = cg
    return rec
