"""Which series a real Helion code commit can move, read from its paths and subject tag.

Why: a real regression must sit on a commit whose diff could plausibly cause it on those
series, decided the way a Helion engineer would: the CuTe backend (`helion/_compiler/cute/`,
`[cute]`) moves the b200_cute rows and the CuTe pretuned kernels; Pallas moves the tpu rows;
an example file moves its own kernel; the autotuner moves what it picks (heuristics); generic
Triton codegen moves a few Triton-platform kernels; ROCm-tagged work moves the AMD rows.
"""
from __future__ import annotations

import re

TRITON_PLATFORMS = ("h100", "b200", "mi325x", "mi350x")
CUTE_PRETUNED = ("scale_mm_cute", "nvfp4_gemv_cute", "projection_rotary", "interleaved_swiglu", "grouped_gemm",
                 "grouped_gemm_deepgemm")
HEURISTIC_WORDS = ("heuristic", "default config", "autotun", "config", "search", "tune", "num_warps", "warps",
                   "block size", "occupancy")
IMPROVE_WORDS = ("optimiz", "speed", "faster", "perf", "improve", "fuse", "overlap", "persistent", "vectoriz",
                 "reduce overhead", "tma", "pipelin", "enable")


# an op the subject names -> substrings of the kernel names it can touch
OPS = {"attention": ("attention",), "flash": ("attention",), "softmax": ("softmax",), "rms": ("rms_norm",),
       "layer_norm": ("layer_norm",), "layernorm": ("layer_norm",), "gemm": ("gemm", "mm"), "matmul": ("gemm", "mm"),
       "mma": ("gemm", "mm", "gemv"), "gemv": ("gemv",), "topk": ("topk",), "rope": ("rope",), "rotary": ("rope", "rotary"),
       "swiglu": ("swiglu",), "fp8": ("fp8", "scaled_mm", "quant"), "nvfp4": ("nvfp4",), "welford": ("welford",),
       "cross_entropy": ("cross_entropy",), "mamba": ("mamba",), "gdn": ("gdn", "delta"), "jagged": ("jagged",),
       "kl_div": ("kl_div",), "jsd": ("jsd",), "grouped": ("grouped",), "argmax": ("argmax",), "argmin": ("argmin",),
       "reduction": ("sum", "norm", "softmax", "cross_entropy", "welford", "kl_div", "jsd"),
       "reductions": ("sum", "norm", "softmax", "cross_entropy", "welford", "kl_div", "jsd"),
       "kda": ("kda",), "gla": ("gla",), "retention": ("retention",), "varlen": ("varlen",)}


def _op_filter(low: str, cands: list) -> list:
    """Keep only the series whose kernel is the op the subject names (none if it names an op
    no nightly runs on that slice); no op named keeps them all."""
    words = set(re.findall(r"[a-z0-9_]+", low)) | ({"layer_norm"} if "layer norm" in low else set())
    subs = [x for w in words if w in OPS for x in OPS[w]]
    if not subs:
        return cands
    return [c for c in cands if any(x in c[2] for x in subs)]


def _tags(subject: str) -> set:
    return {t.lower() for t in re.findall(r"\[([^\]]+)\]", subject)}


def code_files(files) -> list:
    return [f for f in files if f.startswith("helion/") or
            (f.startswith("examples/") and f.endswith(".py")) or
            (f.startswith("pretuned_kernels/") and "_helion_aot_" in f)]


def classify(subject: str, files, series: list, modules: dict, tpu_modules: dict) -> tuple[list, str, str]:
    """(candidate series keys, kind, slice name) for a commit; [] when it is not code that runs
    in the benchmark. ``series`` are (source, platform, kernel) keys present that night;
    ``modules`` maps a tritonbench kernel to its Helion example module, ``tpu_modules`` the same
    for run_tpu.py."""
    code = code_files(files)
    if not code:
        return [], "", ""
    tags = _tags(subject)
    low = subject.lower()
    if tags & {"metal", "mps", "xpu", "intel", "cpu"} or any(("/metal/" in f or "/xpu/" in f) for f in code):
        return [], "", ""  # a backend no nightly runs
    heur = any(w in low for w in HEURISTIC_WORDS) or any(
        f.startswith(("helion/autotuner/", "helion/_compiler/autotuner_heuristics/")) for f in code)
    kind = "heuristics/config" if heur else "code"
    words = set(re.findall(r"[a-z0-9_]+", low))
    cute = any("/cute/" in f for f in code) or tags & {"cute", "cutedsl"} or words & {"cute", "cutedsl"}
    pallas = any("/pallas/" in f for f in code) or tags & {"pallas", "pallas-tpu", "tpu"} or words & {"pallas", "tpu"}
    rocm = "rocm" in tags or any(w in low for w in ("rocm", "amd", "mi350", "gfx9"))
    # device-specific heuristics (named sm90 / sm100 / gfx950) touch that device only
    device = ("b200" if words & {"sm100", "b200", "blackwell"} else
              "h100" if words & {"sm90", "h100", "hopper"} else None)
    examples = {f[:-3].replace("/", ".") for f in code if f.startswith("examples/") and "/linear/" not in f}
    linear = any(f.startswith("examples/linear/") for f in code)
    out = []
    if examples:
        for (src, p, k) in series:
            if src != "dashboard":
                continue
            if p == "tpu" and tpu_modules.get(k) in examples:
                out.append((src, p, k))
            elif p != "tpu" and modules.get(k) in examples:
                out.append((src, p, k))
        return out, "code", "examples"
    out, kind, sl = _slice(code, tags, low, series, kind, linear, words, cute, pallas, rocm, device)
    return (_op_filter(low, out), kind, sl) if out else ([], "", "")


def _slice(code, tags, low, series, kind, linear, words, cute, pallas, rocm, device):
    if linear:
        return [s for s in series if s[0] == "dashboard" and any(s[2].startswith(v) for v in (
            "vanilla_linear_attn", "simple_gla", "retention", "full_gla", "delta_rule", "gated_delta_rule", "kda"))], \
            kind, "linattn"
    if cute:
        return [s for s in series if (s[0] == "dashboard" and s[1] == "b200_cute") or
                (s[0] == "pretuned" and s[1] == "b200" and s[2] in CUTE_PRETUNED)], kind, "cute"
    if pallas:
        return [s for s in series if s[0] == "dashboard" and s[1] == "tpu"], kind, "pallas"
    if rocm:
        return [s for s in series if s[0] == "dashboard" and s[1] in ("mi325x", "mi350x")], kind, "rocm"
    if all(f.startswith("helion/") for f in code):
        # generic Triton-path code: the Triton-backend rows (and the pretuned ones, which compile
        # checked-in configs through the same codegen)
        out = [s for s in series if (s[0] == "dashboard" and s[1] in TRITON_PLATFORMS) or
               (s[0] == "pretuned" and s[2] not in CUTE_PRETUNED)]
        if device:
            out = [s for s in out if s[1] == device]
        return out, kind, "triton"
    return [], "", ""


def looks_like_improvement(subject: str) -> bool:
    low = subject.lower()
    return any(w in low for w in IMPROVE_WORDS) and "revert" not in low


_HARD_NEG = ("peak memory", "diagnostic", "configurable", "backend class", "cache directory", "llm", "accommodate",
             "registration", "test", "flaky", "lint", "typo", "doc", "readme", "logging", "pyrefly", "ruff", "mypy", "type hint",
             "typing", "license", "without changing", "accuracy", "dashboard", "benchmark", "ci:", "[ci]", "print",
             "debug", "error message", "warning", "metrics", "telemetry", "log level", "remote", "pluggable", "abc ",
             "protocol", "from_cache", "warm-start", "cache size", "message", "tolerance", "fbcode", " ci ")
_STRONG = ("optimiz", "perf", "speed", "faster", "fuse", "fusion", "heuristic", "default", "overhead", "persistent",
           "tma", "pipelin", "vectoriz", "occupancy", "warps", "tile size", "block size", "schedul", "seed config",
           "unroll", "swizzl", "epilogue", "tcgen05", "config", "avoid redundant", "pattern search")
_MEDIUM = ("lower", "codegen", "reduction", "loop", "layout", "register", "indexing", "load", "store", "dot", "scan",
           "specializ", "cache", "launch", "grid", "split", "memory", "barrier", "matmul", "gemm", "softmax", "norm",
           "attention", "mma", "stride", "broadcast")
_SOFT_NEG = ("support", "refactor", "rename", "crash", "catch", "assert", "skip", "error", "handle", "allow",
             "expose", "api", "feat", "guard", "validate", "check")


def hard_negative(subject: str) -> bool:
    """Subjects no triager would blame for a speed change (tests, docs, logging, new APIs)."""
    low = subject.lower()
    return any(w in low for w in _HARD_NEG)


def plausible(subject: str) -> bool:
    """Whether a Helion engineer would suspect this commit of moving kernel speed: it names a
    performance mechanism, or a codegen path without being a feature, refactor or fix-up."""
    low = subject.lower()
    if any(w in low for w in _HARD_NEG):
        return False
    return any(w in low for w in _STRONG) or (any(w in low for w in _MEDIUM) and not any(w in low for w in _SOFT_NEG))
