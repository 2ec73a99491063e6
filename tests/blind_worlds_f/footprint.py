"""Which series a real Helion commit can move, from what it touches and what its subject says.

A code change only moves the kernels its code path serves, on the platforms its backend runs:
the slice comes from the subject tag and the touched paths (``helion/_compiler/cute/`` is the
CuTe backend of ``b200_cute``; ``helion/_compiler/pallas/`` is the TPU; ``helion/autotuner/``
changes which config gets picked, a heuristics/config change), the kernel family from the
subject's words (reduction, matmul, attention, ...), and device words narrow the platforms
(sm90/Hopper is H100, sm100/Blackwell is B200, ROCm/gfx9 is MI3xx). Commits that also touch the
benchmark harness or workflows are not used as culprits: their window would carry a method
change too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .repo import Commit

NORM = ("softmax", "layer_norm", "layer_norm-bwd", "rms_norm", "rms_norm-bwd", "cross_entropy",
        "kl_div", "jsd", "welford", "sum")
MATMUL = ("gemm", "int4_gemm", "grouped_gemm", "bmm")
ATTN = ("flash_attention",)
SSM = ("mamba2_chunk_scan", "mamba2_chunk_state", "gdn_fwd_h")
ELEM = ("vector_add", "vector_exp", "rope", "rope-bwd")
PRE_NORM = ("rms_norm", "layer_norm", "softmax", "cross_entropy", "rms_norm_dynamic_per_token_quant",
            "rms_norm_per_block_quant", "fused_qk_norm_rope", "dynamic_per_token_scaled_fp8_quant",
            "per_token_group_fp8_quant")
PRE_CUTE_MM = ("scale_mm_cute", "nvfp4_gemv_cute", "projection_rotary", "interleaved_swiglu",
               "grouped_gemm", "grouped_gemm_deepgemm")
PRE_TRITON_MM = ("scaled_mm", "nvfp4_gemv")

# A subject word naming one benchmarked kernel.
SINGLE = {r"\bwelford\b": ("welford",), r"\brope\b": ("rope", "rope-bwd"),
          r"cross.?entropy": ("cross_entropy",), r"\bjsd\b": ("jsd",), r"kl.?div": ("kl_div",),
          r"rms.?norm": ("rms_norm", "rms_norm-bwd"), r"layer.?norm": ("layer_norm", "layer_norm-bwd"),
          r"\bsoftmax\b": ("softmax",), r"grouped.gemm": ("grouped_gemm",), r"\bbmm\b": ("bmm",),
          r"\bgdn\b": ("gdn_fwd_h",), r"\bmamba": ("mamba2_chunk_scan", "mamba2_chunk_state"),
          r"int4": ("int4_gemm",)}


# Subjects that say the generated code does not change (tests, refactors, diagnostics, lint,
# plumbing, support for new cases) ...
NOT_PERF = re.compile(r"refactor|\btests?\b|lint|typo|\bdocs?\b|docstring|cleanup|clean up|rename|"
                      r"diagnostic|\bunused\b|comment|typing|pyrefly|\bxfail|un-skip|skip\b|"
                      r"\blog(ging)?\b|error message|assert|extract .* helper|data model|"
                      r"without changing|crash|robust|bookkeeping|debug|dump|interpret|metal|"
                      r"\bllm\b|invalid python|message|warning|deprecat|\bmove\b|migrate|"
                      r"centraliz|consolidat|simplif|unif(y|ied)|plumb|thread .* through|"
                      r"introduce|infrastructure|\bsupport\b|\bmtia\b|\b0d\b|guard|callable|"
                      r"hooks?\b|matching|\brng\b|clone|eager|dispatch|runtime:|canonical|"
                      r"\branks?\b")
# ... and words that say it may (a culprit has to be a plausible performance change).
PERF = re.compile(r"perf|optimi|faster|speed|\btun(e|ed|ing)\b|retune|heuristic|seed|vectori|"
                  r"\bvec\b|fus(e|ion|ing)|hoist|persistent|schedul|pipelin|layout|improve|"
                  r"specializ|overlap|\bcap\b|warps|unroll|prefetch|swizzle|\btma\b|cluster|"
                  r"split-k|occupancy|\bdma\b|priors|population|eviction|coalesc|fast path|"
                  r"\blower(s|ing)?\b.*\b(through|via|to|into)\b|emit_pipeline|worklist|"
                  r"block.?size|num_stages|reduction (path|strategy|seed)|launch")

@dataclass(frozen=True)
class Footprint:
    slice: str  # triton | cute | tpu | rocm
    kind: str  # code | heuristics/config
    family: str  # norm | matmul | attention | ssm | elementwise | memory | all | single
    platforms: tuple
    kernels: tuple  # dashboard kernels (empty: none)
    pretuned: tuple  # pretuned kernels (empty: none)
    pre_platforms: tuple


def _tags(subject: str) -> set:
    return {t.lower() for t in re.findall(r"\[([^\]]+)\]", subject)}


def classify(c: Commit) -> Footprint | None:
    """The slice a commit can move, or None when it is not a clean code change."""
    if not any(f.startswith("helion/") for f in c.files):
        return None
    if any(f.startswith((".github/", "benchmarks/", "pretuned_kernels/", "examples/"))
           for f in c.files):
        return None
    s = c.subject.lower()
    if s.startswith("revert") or "[reland]" in s or NOT_PERF.search(s):
        return None
    if not PERF.search(s):
        return None
    tags = _tags(c.subject)
    paths = " ".join(c.files)
    if tags & {"docs", "ci", "dashboard", "benchmark", "benchmark ci", "test", "tests"}:
        return None
    kind = "heuristics/config" if ("autotuner" in tags or "heuristic" in s or " seed" in s
                                   or all(f.startswith(("helion/autotuner/", "test/", "docs/"))
                                          for f in c.files)) else "code"
    if tags & {"cute", "cutedsl"} or "helion/_compiler/cute/" in paths or re.search(r"\bcute\b", s):
        sl = "cute"
    elif tags & {"pallas", "pallas-tpu", "tpu"} or "helion/_compiler/pallas/" in paths \
            or "pallas" in s or "tpu" in s:
        sl = "tpu"
    elif tags & {"rocm", "amd"} or re.search(r"\b(rocm|amd|gfx9\d+|mi3\d0x?)\b", s):
        sl = "rocm"
    else:
        sl = "triton"
    single = next((ks for pat, ks in SINGLE.items() if re.search(pat, s)), None)
    if single:
        family = "single"
    elif re.search(r"reduction|welford|norm\b|softmax|rsqrt|row-reduction", s) or \
            re.search(r"reduction_strategy|roll_reduction", paths):
        family = "norm"
    elif re.search(r"attention|flash|sdpa|\bfa\d\b", s):
        family = "attention"
    elif re.search(r"matmul|\bdot\b|\bmma\b|gemm|tcgen05|wgmma|\btma\b|epilogue|split-k|bmm", s) \
            or re.search(r"matmul_ops|matmul_utils", paths):
        family = "matmul"
    elif re.search(r"pointwise|elementwise|\bexp\b|activation|gelu|vectoriz|\bvec\b", s):
        family = "elementwise"
    elif re.search(r"load|store|mask|indexing|broadcast|coalesc|eviction", s) or \
            re.search(r"indexing_strategy|memory_ops|tile_strategy", paths):
        family = "memory"
    elif kind == "heuristics/config" or ("helion/_compiler/pallas/" in paths and re.search(
            r"pipelin|worklist|dma|vmem|loop|launcher|schedul", s)):
        family = "all"  # a search or backend-wide change: some of everything the slice runs
    else:
        return None
    if sl == "cute":
        plats = ("b200_cute",)
        kernels = {"norm": ("layer_norm", "rms_norm", "sum"), "elementwise": ("vector_add", "vector_exp"),
                   "memory": ("vector_add", "vector_exp", "layer_norm", "rms_norm", "sum"),
                   "all": ("vector_add", "vector_exp", "layer_norm", "rms_norm", "sum"),
                   "single": single or ()}.get(family, ())
        kernels = tuple(k for k in kernels if k in ("vector_add", "layer_norm", "rms_norm",
                                                    "vector_exp", "sum"))
        pre = PRE_CUTE_MM if family == "matmul" else ()
        return Footprint(sl, kind, family, plats, kernels, pre, ("b200",))
    if sl == "tpu":
        tpu_all = ("softmax", "layer_norm", "rms_norm", "rms_norm-bwd", "welford", "cross_entropy",
                   "kl_div", "gemm", "bmm", "flash_attention")
        kernels = {"norm": tpu_all[:7], "matmul": ("gemm", "bmm", "flash_attention"),
                   "attention": ATTN, "elementwise": ("softmax", "layer_norm", "rms_norm", "kl_div"),
                   "memory": tpu_all, "all": tpu_all, "single": single or ()}.get(family, ())
        return Footprint(sl, kind, family, ("tpu",), kernels, (), ())
    plats = ("h100", "b200", "mi350x", "mi325x")
    if sl == "rocm":
        plats = ("mi350x", "mi325x")
    if re.search(r"sm90|hopper|h100|wgmma", s):
        plats = ("h100",)
    elif re.search(r"sm100|blackwell|b200", s):
        plats = ("b200",)
    kernels = {"norm": NORM, "matmul": MATMUL[:3], "attention": ATTN, "elementwise": ELEM,
               "single": single or (), "ssm": SSM, "memory": NORM + ELEM,
               "all": NORM + MATMUL[:3] + ATTN + ELEM + SSM}[family]
    pre = ()
    pre_plats = tuple(p for p in plats if p in ("h100", "b200"))
    if family in ("norm", "memory", "all"):
        pre = PRE_NORM
    elif family == "matmul":
        pre = PRE_TRITON_MM
    elif family == "single":
        pre = tuple(k for k in single if k in PRE_NORM)
    return Footprint(sl, kind, family, plats, tuple(kernels), pre, pre_plats)


def overlaps(a: Footprint, b: Footprint) -> bool:
    """Two footprints that a reader could not tell apart in one window."""
    if a.slice != b.slice:
        return False
    shared = set(a.kernels) & set(b.kernels) or set(a.pretuned) & set(b.pretuned)
    return bool(shared) and bool(set(a.platforms) & set(b.platforms) or
                                 set(a.pre_platforms) & set(b.pre_platforms))
