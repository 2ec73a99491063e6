"""What a nightly at a given sha runs, read from the real files at that sha (parsed, never imported).

`setup_at(repo, sha)` gives the dashboard series (platform_short, kernel) with the facts that shape
their numbers (shape list, cudagraph timing, baselines available, compile time measured), the machine
of each platform (runner, image, runtime) and the benchmark settings (torch pin, autotune env); and
`pretuned_at(repo, sha)` the pretuned suite (None before its nightly workflow existed)."""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

from . import repo as R

WF = ".github/workflows/"
DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi350x": "AMD Instinct MI350X gfx950", "mi325x": "AMD Instinct MI325X gfx942:sramecc+:xnack-",
          "tpu": "TPU v7"}
LINATTN_DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200"}
GPU_ALIASES = ("h100", "b200", "mi325x", "mi350x")
PRETUNED_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}
# the first commit after which the linear-attention nightly uploads its results (its install step
# failed before: "[benchmark] Fix linear-attention nightly upload and trim to two shapes")
LINATTN_UPLOAD_FIX = "Fix linear-attention nightly upload"


@dataclass(frozen=True)
class Series:
    platform: str          # platform_short as the dashboard shows it
    kernel: str
    alias: str             # artifact alias (benchmark-results-<alias>-...)
    suite: str             # tritonbench | linattn | tpu | tpu_bridge
    device: str
    backend: str | None
    shapes: tuple
    cudagraph: bool
    has_triton: bool
    has_tc: bool
    compile_measured: bool
    baseline_label: str | None = None


@dataclass
class Setup:
    sha: str
    series: dict = field(default_factory=dict)      # (platform, kernel) -> Series
    machine: dict = field(default_factory=dict)     # platform -> (runner, image, runtime)
    torch: str | None = None
    autotune_env: tuple = ()
    latency_mode: str | None = None
    tpu_pins: tuple = ()
    tritonbench_pin: str | None = None
    compile_factor: float = 1.0
    torch_tpu: str | None = None


def torch_tpu_pin(repo: R.Repo, sha: str) -> str | None:
    return (repo.read(sha, ".github/ci_commit_pins/torch_tpu.txt") or "").strip() or None


def compile_factor_at(repo: R.Repo, sha: str) -> float:
    """How much of Helion's real compile (autotune included) the recorded compile time covers: the
    two-pass workflow recorded a cache-hit run (HELION_ASSERT_CACHE_HIT=1), and until run.py enabled
    the tracker explicitly (``enable_compile_time()``) part of it went unrecorded."""
    bench = repo.read(sha, WF + "benchmark.yml") or ""
    run_py = repo.read(sha, "benchmarks/run.py") or ""
    f = 1.0
    if "HELION_ASSERT_CACHE_HIT=1" in bench:
        f *= 0.035
    if "--measure-compile-time" in bench and "enable_compile_time()" not in run_py:
        f *= 0.6
    return f


def _shape_labels(kernel: str, n: int, total: int | None = None) -> tuple:
    """Deterministic tritonbench-like shape labels; the first n of the kernel's sweep."""
    h = int(hashlib.md5(kernel.encode()).hexdigest()[:8], 16)
    total = max(n, total or 0)
    out = []
    for i in range(total):
        if "gemm" in kernel or kernel in ("bmm",):
            m = 256 * (1 + (i * 3 + h) % 16)
            out.append(f"({m}, {m * 2 if i % 2 else m}, {512 * (1 + i % 8)})")
        elif "attention" in kernel:
            out.append(f"({4 if i % 2 else 8}, {16 + 16 * (i % 3)}, {512 * (1 + i)}, 128)")
        elif kernel.startswith(("mamba", "gdn")):
            out.append(f"({2 + i % 3}, {1024 * (1 + i)}, {8 * (1 + i % 4)}, 64)")
        else:
            out.append(f"({4096 if i % 3 else 2048}, {256 * (i + 2 + h % 4)})")
    return tuple(out[:n])


_DEFAULT_N = {}


def default_num_inputs(kernel: str) -> int:
    if kernel not in _DEFAULT_N:
        h = int(hashlib.md5(("n" + kernel).encode()).hexdigest()[:4], 16)
        _DEFAULT_N[kernel] = 8 + h % 9  # 8..16
    return _DEFAULT_N[kernel]


def parse_metric_mappings(text: str | None) -> dict:
    """run.py KERNEL_METRIC_MAPPINGS -> {kernel: set(metric names)}."""
    def go(text):
        if not text:
            return {}
        tree = ast.parse(text)
        for node in tree.body:
            name = value = None
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                name, value = node.target.id, node.value
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            if name != "KERNEL_METRIC_MAPPINGS" or not isinstance(value, ast.Dict):
                continue
            res = {}
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Dict):
                    res[k.value] = {x.value for x in v.values if isinstance(x, ast.Constant)}
            return res
        return {}
    return R._memoize("kmm", text, go)


_setup_cache: dict = {}


def setup_at(repo: R.Repo, sha: str, linattn_live: bool = True) -> Setup:
    key = (sha, linattn_live)
    if key in _setup_cache:
        return _setup_cache[key]
    disp = R.parse_dispatch(repo.read(sha, WF + "benchmark_dispatch.yml"))
    night = R.parse_nightly(repo.read(sha, WF + "benchmark_nightly.yml"))
    bench = R.parse_benchmark_yml(repo.read(sha, WF + "benchmark.yml"))
    run_py = repo.read(sha, "benchmarks/run.py")
    km = R.parse_kernel_mappings(run_py)
    kmm = parse_metric_mappings(run_py)
    mi350_gdn = None
    if run_py:
        m = re.search(r"limit_mi350_inputs and input_id >= (\d+)", run_py)
        mi350_gdn = int(m.group(1)) if m else None
    s = Setup(sha=sha, torch=bench["torch"], autotune_env=tuple(sorted(bench["env"].items())),
              latency_mode=bench["latency_mode"])
    s.tritonbench_pin = (repo.read(sha, ".github/ci_commit_pins/tritonbench.txt") or "").strip() or None
    s.compile_factor = compile_factor_at(repo, sha)
    s.torch_tpu = torch_tpu_pin(repo, sha)
    compile_gpu = bench["compile_time"]
    runs = night["runs"]
    defaults = disp["defaults"]
    for (alias, suite), job in disp["jobs"].items():
        toggle = job["toggle"]
        if toggle is None or not runs.get(toggle, False):
            continue
        if alias in GPU_ALIASES or alias == "b200_cute":
            platform = alias
            s.machine.setdefault(platform, (job["runner"], job["image"], job["runtime"]))
            kernels = defaults.get(job["kernels_input"] or "kernels", [])
            if suite == "linattn":
                if not linattn_live:
                    continue
                lin = repo.read(sha, "benchmarks/run_linattn.py")
                shapes = R.parse_names(lin, "SHAPES")
                varlen = R.parse_names(lin, "VARLEN_SHAPES")
                variants = R.parse_names(lin, "VARIANTS")
                fwd_only = set(R.parse_names(lin, "FUSED_PREAMBLE_VARIANTS")) | set(R.parse_names(lin, "VARLEN_VARIANTS"))
                varlen_v = set(R.parse_names(lin, "VARLEN_VARIANTS"))
                for v in kernels:
                    if v not in variants:
                        continue
                    shp = tuple(varlen if v in varlen_v else shapes)
                    names = [v] if v in fwd_only else [v, f"{v}-bwd"]
                    for k in names:
                        s.series[(platform, k)] = Series(platform, k, alias, "linattn", LINATTN_DEVICE.get(platform, DEVICE[platform]),
                                                         "triton", shp, False, False, False, False, "FLA")
                continue
            backend = job["backend"] or "triton"
            for k in kernels:
                if k not in km:
                    continue
                opts = km[k]
                n = opts["num_inputs"] or default_num_inputs(k)
                if k == "gdn_fwd_h" and platform == "mi350x" and mi350_gdn:
                    n = min(n, mi350_gdn)
                metrics = kmm.get(k, set())
                s.series[(platform, k)] = Series(
                    platform, k, alias, "tritonbench", DEVICE[platform], backend if backend != "triton" else "triton",
                    _shape_labels(k, n, 16), bool(opts["cudagraph"] and bench["cudagraph"]),
                    "triton_speedup" in metrics or not metrics, "torch_compile_speedup" in metrics or not metrics,
                    compile_gpu)
        elif alias == "tpu":
            wf = R.parse_tpu_workflow(repo.read(sha, WF + "benchmark_tpu.yml"))
            s.machine.setdefault("tpu", (wf["runner"], None, None))
            s.tpu_pins = wf["pins"]
            tpu_text = repo.read(sha, "benchmarks/run_tpu.py")
            names = R.parse_names(tpu_text, "KERNEL_MAPPINGS")
            wanted = defaults.get("kernels_tpu", [])
            if wanted == ["all"]:
                wanted = names
            tpu_wf_text = repo.read(sha, WF + "benchmark_tpu.yml") or ""
            ct = "HELION_MEASURE_COMPILE_TIME=1" in tpu_wf_text
            for k in wanted:
                if k not in names:
                    continue
                n = _tpu_shape_count(tpu_text, k)
                s.series[("tpu", k)] = Series("tpu", k, "tpu", "tpu", DEVICE["tpu"], None,
                                              _shape_labels("tpu_" + k, n, 8), False, False, True, ct)
        elif alias == "tpu_bridge":
            wf_text = repo.read(sha, WF + "benchmark_tpu_bridge.yml") or ""
            for k in defaults.get("kernels_tpu_bridge", []):
                if k not in km or ("tpu", k) in s.series:
                    continue
                opts = km[k]
                n = min(opts["num_inputs"] or default_num_inputs(k), 6)
                s.series[("tpu", k)] = Series("tpu", k, "tpu_bridge", "tpu_bridge", DEVICE["tpu"], "pallas",
                                              _shape_labels("tpu_" + k, n, 8), False, False, True,
                                              "HELION_MEASURE_COMPILE_TIME=1" in wf_text)
    _setup_cache[key] = s
    return s


def _tpu_shape_count(text: str | None, kernel: str) -> int:
    h = int(hashlib.md5(("tpu" + kernel).encode()).hexdigest()[:4], 16)
    return 3 + h % 4


@dataclass
class PretunedKernel:
    kernel: str
    hardware: tuple        # ("b200", "h100") subset
    baselines: tuple
    cudagraph: bool
    shapes: int
    configs: dict          # hardware -> blob id(s) of the checked-in config file(s)
    implicit: bool = False  # a single inline torch reference, no per-baseline breakdown


@dataclass
class PretunedSetup:
    sha: str
    kernels: dict          # name -> PretunedKernel
    bench_blob: str | None
    machine: dict          # alias -> (runner, image, runtime)
    torch: str | None


_pre_cache: dict = {}


def pretuned_at(repo: R.Repo, sha: str) -> PretunedSetup | None:
    if sha in _pre_cache:
        return _pre_cache[sha]
    nightly = repo.read(sha, WF + "benchmark_pretuned_nightly.yml")
    if nightly is None:
        _pre_cache[sha] = None
        return None
    runs = R.parse_nightly(nightly)["runs"]
    disp = R.parse_dispatch(repo.read(sha, WF + "benchmark_pretuned_dispatch.yml"))
    machine = {}
    for (alias, _), job in disp["jobs"].items():
        if runs.get(f"run_{alias}", False):
            machine[alias] = (job["runner"], job["image"], job["runtime"])
    torch = R.parse_benchmark_yml(repo.read(sha, WF + "benchmark_pretuned.yml"))["torch"]
    files = repo.ls(sha, "pretuned_kernels")
    names = R.parse_pretuned_kernel_list(repo.read(sha, "pretuned_kernels/run.py"))
    kernels = {}
    for k in names:
        hw = {}
        for p, blob in files.items():
            m = re.fullmatch(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py", p)
            if m:
                alias = {"sm90": "h100", "sm100": "b200"}.get(m.group(1))
                if alias:
                    hw[alias] = blob
        if not hw:
            continue
        info = R.parse_pretuned_kernel(repo.read(sha, f"pretuned_kernels/{k}/{k}.py"))
        kernels[k] = PretunedKernel(k, tuple(sorted(hw)), tuple(info["baselines"]), info["cudagraph"],
                                    max(info["shapes"], 4), hw, info["implicit"])
    ps = PretunedSetup(sha, kernels, files.get("pretuned_kernels/_bench.py"), machine, torch)
    _pre_cache[sha] = ps
    return ps
