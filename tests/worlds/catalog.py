"""Platforms and kernels of a generated world, shaped like Helion's nightly today.

The names and counts follow the real dashboard (about 90 kernel x platform rows, 12 pretuned
rows) so that ingest and detect benchmarks run at today's size.
"""

from __future__ import annotations

PLATFORM_NAMES = {
    "h100": "NVIDIA H100",
    "b200": "NVIDIA B200",
    "b200_cute": "NVIDIA B200 (CuTe)",
    "mi350x": "AMD Instinct MI350X",
    "tpu": "Google TPU v6e",
}

COMMON_KERNELS = (
    "vector_add", "vector_exp", "sum", "softmax", "softmax_two_pass", "rms_norm", "rms_norm-bwd",
    "layer_norm", "layer_norm-bwd", "cross_entropy", "jagged_mean", "jagged_softmax",
    "jagged_layer_norm", "gemm", "fp8_gemm", "grouped_gemm", "attention", "flash_attention",
    "fp8_attention", "geglu", "swiglu", "rope", "rope-bwd", "embedding", "kl_div", "jsd",
)
LINATTN_KERNELS = ("simple_gla", "simple_gla-bwd")
CUTE_KERNELS = ("vector_add", "layer_norm", "rms_norm", "vector_exp", "sum")
MI350_KERNELS = COMMON_KERNELS[:20]
TPU_KERNELS = ("vector_add", "vector_exp", "sum", "softmax", "rms_norm", "layer_norm", "gemm",
               "attention", "geglu", "swiglu", "cross_entropy", "embedding")

# Kernels whose KERNEL_MAPPINGS entry drops --cudagraph upstream.
NO_CUDAGRAPH = frozenset({"rms_norm-bwd", "layer_norm-bwd", "grouped_gemm", "rope-bwd"})


def platform_kernels(platform_short: str) -> tuple[str, ...]:
    if platform_short in ("h100", "b200"):
        return COMMON_KERNELS + LINATTN_KERNELS
    if platform_short == "b200_cute":
        return CUTE_KERNELS
    if platform_short == "mi350x":
        return MI350_KERNELS
    if platform_short == "tpu":
        return TPU_KERNELS
    raise ValueError(platform_short)


PRETUNED_ROWS = (
    ("b200", "sm100", "gemm"), ("b200", "sm100", "fp8_gemm"), ("b200", "sm100", "attention"),
    ("b200", "sm100", "rms_norm"), ("b200", "sm100", "layer_norm"), ("b200", "sm100", "softmax"),
    ("h100", "sm90", "gemm"), ("h100", "sm90", "fp8_gemm"), ("h100", "sm90", "attention"),
    ("h100", "sm90", "rms_norm"), ("h100", "sm90", "layer_norm"), ("h100", "sm90", "softmax"),
)
PRETUNED_BASELINES = ("triton", "torch_compile", "quack")

# What the culprit subject of a real regression looks like, per platform slice.
SLICE_TAG = {"b200_cute": "[cute]", "tpu": "[Pallas]", "mi350x": "[ROCm]", "h100": "", "b200": ""}
SLICE_PATH = {
    "b200_cute": "helion/_compiler/cute/{family}.py",
    "tpu": "helion/_compiler/pallas/{family}.py",
    "mi350x": "helion/runtime/rocm/{family}.py",
    "h100": "helion/_compiler/{family}_codegen.py",
    "b200": "helion/_compiler/{family}_codegen.py",
}
DEVICE_HINT = {"b200": "sm100", "h100": "sm90", "mi350x": "gfx950", "b200_cute": "sm100", "tpu": "tpu"}


def family(kernel: str) -> str:
    k = kernel.replace("-bwd", "")
    if any(w in k for w in ("gemm", "matmul", "addmm", "bmm")):
        return "matmul"
    if "attention" in k or "gla" in k:
        return "attention"
    if any(w in k for w in ("norm", "sum", "softmax", "mean", "cross_entropy", "kl_div", "jsd")):
        return "reduction"
    return "pointwise"
