"""How fast things are: the priors a world's numbers are drawn around.

These are judgement, not measurements: orders of magnitude for each benchmarked kernel's eager
baseline time, the speedups Helion, Triton (tritonbench's reference, often Liger) and
torch.compile reach over it, how many launches each issues (what launch overhead does to a
timer that is not CUDA-graphed), and how long autotuning a shape takes. Every (platform, kernel,
shape) draws its own values around these with a seeded RNG, so two worlds differ in detail.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KSpec:
    family: str  # norm | elementwise | matmul | attention | ssm | linattn
    n_avail: int  # inputs tritonbench has for the op (equally-spaced-k samples from them)
    base_us: float  # eager baseline time at the middle input on H100 (us)
    sp_h: float  # Helion speedup over the baseline, typical
    sp_t: float  # Triton reference speedup (0: none)
    sp_c: float  # torch.compile speedup (0: none)
    launches: tuple  # kernel launches per call: (baseline, helion, triton, torch.compile)
    autotune_s: float  # autotune wall-clock per input on H100 (s)
    shape: str  # how tritonbench labels an input


def _k(family, n_avail, base_us, sp_h, sp_t, sp_c, launches, autotune_s, shape):
    return KSpec(family, n_avail, base_us, sp_h, sp_t, sp_c, launches, autotune_s, shape)


KERNELS = {
    "vector_add": _k("elementwise", 16, 30, 1.00, 1.00, 0.99, (1, 1, 1, 1), 40, "pow2"),
    "vector_exp": _k("elementwise", 16, 28, 1.01, 1.00, 0.99, (1, 1, 1, 1), 40, "pow2"),
    "sum": _k("norm", 16, 45, 1.06, 1.00, 1.02, (1, 1, 1, 1), 80, "mn"),
    "softmax": _k("norm", 24, 60, 1.65, 1.55, 1.58, (5, 1, 1, 1), 120, "softmax"),
    "softmax-bwd": _k("norm", 24, 90, 1.5, 1.4, 1.45, (4, 1, 1, 1), 160, "softmax"),
    "layer_norm": _k("norm", 16, 50, 1.30, 1.25, 1.20, (1, 1, 1, 1), 150, "ln"),
    "layer_norm-bwd": _k("norm", 16, 150, 1.50, 1.42, 1.30, (3, 2, 2, 2), 400, "ln"),
    "rms_norm": _k("norm", 6, 40, 2.50, 2.30, 2.40, (5, 1, 1, 1), 100, "rms"),
    "rms_norm-bwd": _k("norm", 6, 120, 2.00, 1.90, 1.70, (8, 2, 2, 2), 300, "rms"),
    "cross_entropy": _k("norm", 8, 400, 1.60, 1.50, 1.40, (3, 1, 1, 1), 250, "vocab"),
    "kl_div": _k("norm", 10, 300, 2.20, 2.00, 2.10, (4, 1, 1, 1), 200, "vocab"),
    "jsd": _k("norm", 10, 350, 2.50, 2.30, 2.20, (6, 1, 1, 1), 200, "vocab"),
    "welford": _k("norm", 12, 200, 1.30, 1.20, 1.25, (3, 1, 1, 1), 300, "welford"),
    "rope": _k("elementwise", 10, 80, 2.00, 1.90, 2.10, (6, 1, 1, 1), 600, "rope"),
    "rope-bwd": _k("elementwise", 10, 160, 1.80, 1.70, 1.50, (8, 2, 2, 2), 800, "rope"),
    "geglu": _k("elementwise", 8, 60, 1.40, 1.40, 1.35, (3, 1, 1, 1), 100, "mn"),
    "swiglu": _k("elementwise", 8, 60, 1.40, 1.38, 1.35, (3, 1, 1, 1), 100, "mn"),
    "jagged_mean": _k("norm", 8, 100, 1.50, 1.30, 1.10, (4, 1, 1, 1), 150, "jagged"),
    "gemm": _k("matmul", 20, 400, 0.95, 0.85, 0.98, (1, 1, 1, 1), 900, "mnk"),
    "int4_gemm": _k("matmul", 15, 300, 3.00, 2.80, 2.50, (3, 1, 1, 1), 1200, "mnk"),
    "grouped_gemm": _k("matmul", 10, 500, 1.10, 1.00, 0.90, (2, 1, 1, 1), 1500, "gmnk"),
    "flash_attention": _k("attention", 12, 800, 1.05, 1.10, 0.80, (1, 1, 1, 1), 2400, "attn"),
    "mamba2_chunk_scan": _k("ssm", 6, 2000, 4.0, 4.5, 2.0, (12, 1, 1, 3), 1500, "mamba"),
    "mamba2_chunk_state": _k("ssm", 6, 1500, 3.5, 3.8, 1.8, (10, 1, 1, 3), 1500, "mamba"),
    "gdn_fwd_h": _k("ssm", 6, 3000, 6.0, 7.0, 0.0, (16, 1, 1, 1), 2000, "gdn"),
    "bmm": _k("matmul", 8, 300, 0.90, 0.0, 0.95, (1, 1, 1, 1), 600, "bmnk"),
}

# Linear attention (benchmarks/run_linattn.py): Helion against FLA, one timer for both.
LINATTN = {
    "vanilla_linear_attn": (1.15, 0.95), "simple_gla": (1.05, 0.90), "retention": (1.10, 0.92),
    "full_gla": (0.90, 0.80), "delta_rule": (0.95, 0.85), "gated_delta_rule": (0.92, 0.82),
    "kda": (0.88, 0.78), "kda_fused": (1.08, 0.0), "kda_varlen": (0.97, 0.0),
}


@dataclass(frozen=True)
class PSpec:
    device: str  # what the runner reports (extra_info.device)
    time: float  # kernel time relative to H100
    overhead: float  # host launch overhead relative to H100
    bias: dict  # Helion speedup factor per family on this platform
    autotune: float  # autotune time relative to H100


PLATFORMS = {
    "h100": PSpec("NVIDIA H100", 1.0, 1.0, {}, 1.0),
    "b200": PSpec("NVIDIA B200", 0.62, 0.95, {"attention": 1.05, "matmul": 1.03}, 0.9),
    "b200_cute": PSpec("NVIDIA B200", 0.62, 0.95,
                       {"norm": 0.78, "elementwise": 0.95, "matmul": 0.8}, 0.5),
    "mi350x": PSpec("AMD Instinct MI350X gfx950:sramecc+:xnack-", 0.75, 1.35,
                    {"norm": 0.9, "matmul": 0.85, "attention": 0.8, "ssm": 0.85}, 1.6),
    "mi325x": PSpec("AMD Instinct MI325X gfx942:sramecc+:xnack-", 0.9, 1.4,
                    {"norm": 0.88, "matmul": 0.82, "attention": 0.78}, 1.7),
    "tpu": PSpec("TPU v7", 1.1, 2.0, {"norm": 0.75, "matmul": 0.9, "attention": 0.7,
                                      "elementwise": 0.85}, 0.4),
}

# The device name the linear-attention job reports (it calls torch.cuda.get_device_name()
# directly, which keeps the H100 suffix that Helion's own helper strips).
LINATTN_DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200"}

# Host launch overhead per launch (us) on H100, by implementation, when not CUDA-graphed.
OVERHEAD_US = {"b": 5.0, "h": 11.0, "t": 7.0, "c": 13.0}
GRAPH_US = 0.3  # per launch inside a CUDA graph replay


def shape_labels(kind: str, n: int) -> list[str]:
    """The labels tritonbench gives a kernel's inputs, smallest to largest."""
    out = []
    for i in range(n):
        if kind == "pow2":
            out.append(str(2 ** (12 + i)))
        elif kind == "softmax":
            out.append(f"(4096, {256 + 384 * i})")
        elif kind == "ln":
            out.append(f"(4096, {1024 * (i + 1)})")
        elif kind == "rms":
            out.append(f"(2048, {1024 * 2 ** i})")
        elif kind == "vocab":
            out.append(f"(8192, {4096 * (i + 1) * 2})")
        elif kind == "welford":
            out.append(f"(262144, {256 * (i + 1)})")
        elif kind == "rope":
            out.append(f"({8 + 4 * (i % 4)}, {1024 * (1 + i)})")
        elif kind == "mnk":
            m = 256 * (i + 1)
            out.append(f"({m}, {m * 2 if i % 2 else m}, {4096 if i % 3 else 1024})")
        elif kind == "gmnk":
            out.append(f"({4 + 2 * (i % 4)}, {512 * (i + 1)}, 4096, 4096)")
        elif kind == "bmnk":
            out.append(f"({8 * (i + 1)}, 512, 512, 512)")
        elif kind == "attn":
            out.append(f"(8, 16, {512 * (i + 1)}, 128)")
        elif kind == "mamba":
            out.append(f"(8, 80, {1024 * (i + 1)}, 64)")
        elif kind == "gdn":
            out.append(f"(4, 16, {2048 * (i + 1)}, 128)")
        elif kind == "jagged":
            out.append(f"(512, {128 * (i + 1)})")
        else:  # mn
            out.append(f"({1024 * (i + 1)}, 4096)")
    return out


def pick_inputs(n_avail: int, k: int | None) -> list[int]:
    """``--input-sample-mode equally-spaced-k``: k equally spaced inputs of the n available."""
    k = min(n_avail, 20 if k is None else k)
    if k >= n_avail:
        return list(range(n_avail))
    if k == 1:
        return [0]
    return sorted({round(i * (n_avail - 1) / (k - 1)) for i in range(k)})


# Pretuned kernels (pretuned_kernels/): Helion's checked-in configs against named baselines.
# (family, typical speedup over the first baseline, spread across shapes)
PRETUNED = {
    "vector_add": ("elementwise", 1.02, 0.05), "rope": ("elementwise", 1.6, 0.2),
    "rms_norm": ("norm", 1.3, 0.15), "layer_norm": ("norm", 1.15, 0.12),
    "softmax": ("norm", 1.1, 0.12), "scaled_mm": ("matmul", 1.05, 0.12),
    "scale_mm_cute": ("matmul", 1.1, 0.15), "nvfp4_gemv": ("matmul", 1.2, 0.2),
    "nvfp4_gemv_cute": ("matmul", 1.25, 0.2), "projection_rotary": ("matmul", 1.3, 0.1),
    "interleaved_swiglu": ("matmul", 1.2, 0.1), "cross_entropy": ("norm", 1.4, 0.2),
    "silu_mul_fp8": ("elementwise", 1.8, 0.25),
    "dynamic_per_token_scaled_fp8_quant": ("norm", 1.9, 0.25),
    "per_token_group_fp8_quant": ("norm", 2.1, 0.3),
    "rms_norm_dynamic_per_token_quant": ("norm", 2.4, 0.3),
    "rms_norm_per_block_quant": ("norm", 2.2, 0.3),
    "silu_and_mul_per_block_quant": ("elementwise", 2.0, 0.3),
    "fused_qk_norm_rope": ("norm", 1.5, 0.2), "grouped_gemm": ("matmul", 1.2, 0.08),
    "grouped_gemm_deepgemm": ("matmul", 0.95, 0.08),
}
PRETUNED_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}
