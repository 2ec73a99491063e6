"""What a Helion nightly ran, PARSED (never imported or executed) from the real files at a commit.

Read at each nightly's sha: the dispatch / nightly / benchmark workflows (platform jobs, runner,
image, runtime, kernel defaults, flags, HELION_* env, torch pins), `benchmarks/run.py`
(`KERNEL_MAPPINGS` options and `KERNEL_METRIC_MAPPINGS`), `benchmarks/run_linattn.py` (SHAPES,
VARIANTS), `benchmarks/run_tpu.py` (`KERNEL_MAPPINGS`) and the pretuned suite
(`pretuned_kernels/run.py` KERNELS, each kernel's baselines, `use_cudagraph()`, checked-in
`_helion_aot_*_smNN.py` configs, `_bench.py`). Python files go through `ast` only."""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

import yaml

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
BENCH_TPU = ".github/workflows/benchmark_tpu.yml"
BENCH_BRIDGE = ".github/workflows/benchmark_tpu_bridge.yml"
RUN_PY = "benchmarks/run.py"
RUN_LINATTN = "benchmarks/run_linattn.py"
RUN_TPU = "benchmarks/run_tpu.py"
TB_PIN = ".github/ci_commit_pins/tritonbench.txt"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_BENCH = ".github/workflows/benchmark_pretuned.yml"
P_RUN = "pretuned_kernels/run.py"
P_BENCH_PY = "pretuned_kernels/_bench.py"

DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7",
          "tpu_bridge": "TPU v7"}
P_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}


def _h(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:12]


# ---------------------------------------------------------------- python literals through ast


class _Opaque:
    def __init__(self, src):
        self.src = src

    def __repr__(self):
        return f"<{self.src}>"


def _lit(node, src: str):
    """ast.literal_eval, tolerant: a non-literal sub-expression becomes an _Opaque."""
    try:
        return ast.literal_eval(node)
    except Exception:
        pass
    if isinstance(node, ast.Tuple):
        return tuple(_lit(e, src) for e in node.elts)
    if isinstance(node, ast.List):
        return [_lit(e, src) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                continue
            kk = _lit(k, src)
            if isinstance(kk, _Opaque):
                continue
            out[kk] = _lit(v, src)
        return out
    return _Opaque(ast.get_source_segment(src, node) or type(node).__name__)


def _module_assign(src: str, name: str):
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return _lit(node.value, src)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name \
                and node.value is not None:
            return _lit(node.value, src)
    return None


def _func(src: str, name: str):
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


# ---------------------------------------------------------------- workflows


def _yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return d if isinstance(d, dict) else {}


def _on(d: dict) -> dict:
    on = d.get("on", d.get(True, {}))
    return on if isinstance(on, dict) else {}


_EXPR_INPUT = re.compile(r"inputs\.(\w+)")


@dataclass(frozen=True)
class Job:
    name: str
    alias: str            # the artifact alias (platform_short before folding)
    suite: str            # tritonbench | linattn | tpu | tpu_bridge | pretuned
    runner: str
    image: str
    runtime: str
    backend: str
    kernel_input: str | None
    toggle: str | None
    scheduled: bool       # runs on the schedule event (the era before benchmark_nightly.yml)


def parse_jobs(text: str | None, suite_default="tritonbench") -> tuple[list[Job], dict, bool]:
    """(platform jobs, {input: default}, has a schedule trigger) of a dispatch workflow."""
    d = _yaml(text)
    on = _on(d)
    inputs = {}
    wd = on.get("workflow_dispatch") or {}
    for k, v in ((wd.get("inputs") or {}) if isinstance(wd, dict) else {}).items():
        if isinstance(v, dict):
            inputs[k] = v.get("default")
    has_schedule = "schedule" in on
    jobs = d.get("jobs") or {}
    out = []
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        w = job.get("with") or {}
        alias = w.get("alias")
        if not alias:
            continue
        uses = str(job.get("uses", ""))
        if "benchmark_tpu_bridge" in uses:
            suite = "tpu_bridge"
        elif "benchmark_tpu" in uses:
            suite = "tpu"
        elif "pretuned" in uses:
            suite = "pretuned"
        else:
            suite = w.get("suite") or suite_default
        cond = str(job.get("if", ""))
        kin = None
        kexpr = str(w.get("kernels", ""))
        m = _EXPR_INPUT.search(kexpr)
        if m:
            kin = m.group(1)
        elif "matrix.kernels" in kexpr:
            for need in ([job.get("needs")] if isinstance(job.get("needs"), str) else job.get("needs") or []):
                nj = jobs.get(need) or {}
                m = _EXPR_INPUT.search(str((nj.get("with") or {}).get("kernels", "")))
                if m:
                    kin = m.group(1)
                if not cond:
                    cond = str(nj.get("if", ""))
        if not cond:
            for need in ([job.get("needs")] if isinstance(job.get("needs"), str) else job.get("needs") or []):
                cond = cond or str((jobs.get(need) or {}).get("if", ""))
        mt = re.search(r"inputs\.(run_\w+)\s*==\s*'true'", cond)
        out.append(Job(name=name, alias=str(alias), suite=suite, runner=str(w.get("runner", "")),
                       image=str(w.get("image", "")), runtime=str(w.get("runtime-version", "")),
                       backend=str(w.get("backend", "triton")), kernel_input=kin,
                       toggle=mt.group(1) if mt else None,
                       scheduled="schedule" in cond))
    return out, inputs, has_schedule


def nightly_toggles(text: str | None) -> dict:
    if not text:
        return {}
    return {k: v == "true" for k, v in re.findall(r"(run_\w+):\s*'(true|false)'", text)}


def _step_text(d: dict, needle: str) -> str:
    for job in (d.get("jobs") or {}).values():
        for step in (job.get("steps") or []) if isinstance(job, dict) else []:
            if isinstance(step, dict) and needle in str(step.get("run", "")):
                return str(step.get("run", ""))
    return ""


def _job_env(d: dict) -> dict:
    for job in (d.get("jobs") or {}).values():
        if isinstance(job, dict) and job.get("env"):
            return {str(k): str(v) for k, v in job["env"].items()}
    return {}


def _torch_pin(text: str) -> str:
    m = re.search(r'torch==([0-9][\w.*+]*)', text or "")
    if m:
        return m.group(1)
    if re.search(r"--pre torch|whl/nightly", text or ""):
        return "nightly"
    return "unpinned"


@dataclass(frozen=True)
class BenchCmd:
    """The recorded benchmark command of benchmark.yml (tritonbench suite)."""
    cudagraph: bool
    latency_mode: str
    metrics: str
    compile_time: bool
    sample_mode: str
    passes: int
    env: tuple
    torch_pin: str
    linattn_torch_pin: str
    aot_h100_linattn: bool
    linattn_uploads: bool   # the linattn job got as far as uploading (its install step works)
    kernels_inline: tuple  # the KERNELS=(...) array of the era before dispatch inputs
    harness: str           # hash of the run step (any change of the command text)


def parse_bench(text: str | None) -> BenchCmd:
    d = _yaml(text)
    run = _step_text(d, "benchmarks/run.py")
    # the recorded invocation is the one writing --output (older files ran twice: autotune, then record)
    chunks = [c for c in run.split("python benchmarks/run.py")[1:] if not c.lstrip().startswith("--list-impls")]
    rec = next((c for c in chunks if "--output" in c), chunks[-1] if chunks else "")
    env = _job_env(d)
    inline = re.search(r"KERNELS=\(([^)]*)\)", run)
    lin = _step_text(d, "flash-linear-attention")
    linrun = _step_text(d, "run_linattn")
    return BenchCmd(
        cudagraph="--cudagraph" in rec,
        latency_mode=(re.search(r"--latency-measure-mode\s+(\S+)", rec) or [None, ""])[1],
        metrics=(re.search(r"--metrics\s+(\S+)", rec) or [None, ""])[1],
        compile_time="--measure-compile-time" in rec,
        sample_mode=(re.search(r"--input-sample-mode\s+(\S+)", rec) or [None, ""])[1],
        passes=max(1, len(chunks)),
        env=tuple(sorted((k, v) for k, v in env.items() if k.startswith("HELION_AUTOTUNE")
                         and k != "HELION_AUTOTUNE_LOG_LEVEL")),
        torch_pin=_torch_pin(_step_text(d, "torch")),
        linattn_torch_pin=_torch_pin(lin),
        aot_h100_linattn="AOTAutotuneCache" in linrun,
        # until 5205859c the linattn install step lacked `uv pip install pip` and the job died
        # before uploading ("Fix linear-attention nightly upload")
        linattn_uploads=bool(lin) and "uv pip install pip" in lin,
        kernels_inline=tuple(re.findall(r'"([^"]+)"', inline.group(1))) if inline else (),
        harness=_h(re.sub(r"#.*", "", rec)),
    )


@dataclass(frozen=True)
class TpuCmd:
    num_shapes: int
    env: tuple
    torch_pin: str
    harness: str


def parse_tpu_bench(text: str | None, bridge: bool) -> TpuCmd | None:
    if not text:
        return None
    d = _yaml(text)
    run = _step_text(d, "benchmarks/run.py" if bridge else "run_tpu.py")
    m = re.search(r"--num-(?:shapes|inputs)\s+(\d+)", run)
    env = _job_env(d)
    return TpuCmd(num_shapes=int(m.group(1)) if m else 4,
                  env=tuple(sorted((k, v) for k, v in env.items() if k.startswith("HELION_AUTOTUNE")
                                   and k != "HELION_AUTOTUNE_LOG_LEVEL")),
                  torch_pin=_torch_pin(_step_text(d, "torch")), harness=_h(re.sub(r"#.*", "", run)))


# ---------------------------------------------------------------- benchmarks/*.py


@dataclass(frozen=True)
class RunPy:
    mappings: dict          # kernel -> options dict (num_inputs, remove_flags, ...)
    metric_maps: dict       # kernel -> {tritonbench column: our metric}
    backend_in_extra: bool
    shape_in_json: bool = True
    amd_arch: bool = False


def parse_run_py(src: str | None) -> RunPy:
    if not src:
        return RunPy({}, {}, False)
    km = _module_assign(src, "KERNEL_MAPPINGS") or {}
    mm = _module_assign(src, "KERNEL_METRIC_MAPPINGS") or {}
    maps = {}
    for k, v in km.items() if isinstance(km, dict) else []:
        opts = {}
        if isinstance(v, tuple):
            for e in v:
                if isinstance(e, dict):
                    opts = {kk: vv for kk, vv in e.items() if not isinstance(vv, _Opaque)}
        maps[k] = opts
    metric_maps = {k: v for k, v in mm.items()} if isinstance(mm, dict) else {}
    return RunPy(maps, metric_maps, '"backend": _get_backend' in src, '"shape": result.shape' in src,
                 "gcnArchName" in src)


@dataclass(frozen=True)
class Linattn:
    shapes: tuple
    varlen_shapes: tuple
    variants: tuple
    fwd_only: frozenset


def parse_linattn(src: str | None) -> Linattn | None:
    if not src:
        return None
    shapes = _module_assign(src, "SHAPES") or []
    vshapes = _module_assign(src, "VARLEN_SHAPES") or []
    dense = _module_assign(src, "DENSE_VARIANTS")
    fused = _module_assign(src, "FUSED_PREAMBLE_VARIANTS") or {}
    varlen = _module_assign(src, "VARLEN_VARIANTS") or {}
    variants = _module_assign(src, "VARIANTS")
    if not isinstance(variants, (list, tuple)) or any(isinstance(v, _Opaque) for v in variants):
        variants = list(dense or []) + list(fused) + list(varlen)
    if not variants:
        vmap = _module_assign(src, "VARIANT_MODULES") or _module_assign(src, "VARIANTS") or {}
        variants = list(vmap) if isinstance(vmap, dict) else []
    return Linattn(shapes=tuple(s[0] for s in shapes if isinstance(s, tuple)),
                   varlen_shapes=tuple(s[0] for s in vshapes if isinstance(s, tuple)),
                   variants=tuple(v for v in variants if isinstance(v, str)),
                   fwd_only=frozenset(list(fused) + list(varlen)))


def parse_run_tpu(src: str | None) -> dict:
    """kernel -> (harness entry repr) of run_tpu.py's KERNEL_MAPPINGS."""
    if not src:
        return {}
    km = _module_assign(src, "KERNEL_MAPPINGS") or {}
    return {k: _h(repr(v)) for k, v in km.items()} if isinstance(km, dict) else {}


# ---------------------------------------------------------------- pretuned suite


@dataclass(frozen=True)
class PretunedKernel:
    name: str
    baselines: tuple
    cudagraph: bool
    n_shapes: int
    hardware: frozenset     # aliases with a checked-in config
    configs: tuple          # (path, blob) of the checked-in configs (a regenerated config is real)
    source: str             # blob of the kernel file


def _count_shapes(fn: ast.FunctionDef | None) -> int:
    if fn is None:
        return 0
    n = 0
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and "shape" in t.id.lower()
                                                for t in node.targets):
            if isinstance(node.value, ast.List) and node.value.elts and \
                    all(isinstance(e, (ast.Tuple, ast.Constant, ast.List)) for e in node.value.elts):
                n += len(node.value.elts)
    return n


def parse_pretuned_kernel(git, sha: str, name: str) -> PretunedKernel | None:
    path = f"pretuned_kernels/{name}/{name}.py"
    src = git.show(sha, path)
    if src is None:
        return None
    baselines: list[str] = []
    fn = _func(src, "_baselines")
    if fn is not None:
        for node in ast.walk(fn):
            if isinstance(node, ast.Tuple) and node.elts and isinstance(node.elts[0], ast.Constant) \
                    and isinstance(node.elts[0].value, str):
                baselines.append(node.elts[0].value)
    if not baselines:
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[0], ast.Constant) \
                    and isinstance(node.elts[0].value, str) and node.elts[0].value in (
                        "torch", "torch_compile", "vllm", "eager", "cutlass", "triton", "cublas", "quack"):
                baselines.append(node.elts[0].value)
    baselines = list(dict.fromkeys(baselines)) or ["torch"]
    cg = False
    ug = _func(src, "use_cudagraph")
    if ug is not None:
        for node in ast.walk(ug):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
                cg = bool(node.value.value)
    n = _count_shapes(_func(src, "main"))
    if n < 4:
        n = 12
    files = [p for p in git.ls(sha, f"pretuned_kernels/{name}/") if re.search(r"_cuda_sm\d+\.py$", p)]
    hw = set()
    for p in files:
        m = re.search(r"_cuda_(sm\d+)\.py$", p)
        hw.add({"sm90": "h100", "sm100": "b200"}.get(m.group(1), m.group(1)))
    return PretunedKernel(name=name, baselines=tuple(baselines), cudagraph=cg, n_shapes=min(n, 40),
                          hardware=frozenset(hw), configs=tuple((p, git.oid(sha, p)) for p in sorted(files)),
                          source=git.oid(sha, path))


@dataclass(frozen=True)
class Pretuned:
    kernels: tuple                   # PretunedKernel
    jobs: tuple                      # Job (aliases h100/b200)
    toggles: dict
    torch_pin: str
    bench_timer: str                 # blob hash of _bench.py (the pretuned timer)
    cute_setup: bool = True          # the workflow installs Helion's CuTe DSL pin (6bf6fe86)


def parse_pretuned(git, sha: str) -> Pretuned | None:
    src = git.show(sha, P_RUN)
    if src is None:
        return None
    names = _module_assign(src, "KERNELS") or []
    ks = []
    for n in names:
        if isinstance(n, str):
            k = parse_pretuned_kernel(git, sha, n)
            if k is not None:
                ks.append(k)
    jobs, _, _ = parse_jobs(git.show(sha, P_DISPATCH), suite_default="pretuned")
    bench = _yaml(git.show(sha, P_BENCH))
    return Pretuned(kernels=tuple(ks), jobs=tuple(jobs), toggles=nightly_toggles(git.show(sha, P_NIGHTLY)),
                    torch_pin=_torch_pin(_step_text(bench, "torch")),
                    bench_timer=git.oid(sha, P_BENCH_PY) or "",
                    cute_setup="Install CuTe DSL" in (git.show(sha, P_BENCH) or ""))


# ---------------------------------------------------------------- one nightly


@dataclass(frozen=True)
class SeriesMethod:
    """How one (platform_short, kernel) dashboard series was measured at a commit."""
    platform: str
    kernel: str
    suite: str
    job_alias: str
    device: str
    backend: str | None       # extra_info backend (None before run.py wrote it)
    baseline_label: str | None
    shapes: tuple
    cudagraph: bool
    baseline_impl: str
    has_triton: bool
    has_tc: bool
    has_latency: bool
    has_compile: bool
    autotune: tuple
    torch_pin: str
    runner: str
    image: str
    runtime: str
    harness: str
    shard: int                # which matrix bucket of its job (a failed runner loses its bucket)
    shape_in_json: bool = True


# tritonbench ops' shape counts when run.py does not cap them (num_inputs); deterministic stand-ins
def _default_shapes(kernel: str) -> int:
    return 6 + int(hashlib.md5(kernel.encode()).hexdigest(), 16) % 9


_SHAPE_FORMS = {
    "gemm": lambda i: f"({256 * (i + 1)}, {256 * (i + 1)}, {256 * (i + 1)})",
    "attn": lambda i: f"(4, 48, {512 * (i + 1)}, 128)",
    "norm": lambda i: f"({4096}, {1024 + 512 * i})",
    "vec": lambda i: f"({2 ** (12 + i)},)",
}


def shape_labels(kernel: str, n: int, salt: str = "") -> tuple:
    k = kernel.replace("-bwd", "")
    if "gemm" in k or k in ("bmm", "addmm"):
        form = _SHAPE_FORMS["gemm"]
    elif "attention" in k or k.startswith(("gdn", "mamba")):
        form = _SHAPE_FORMS["attn"]
    elif k.startswith("vector") or k in ("sum", "exp", "add", "embedding"):
        form = _SHAPE_FORMS["vec"]
    else:
        form = _SHAPE_FORMS["norm"]
    off = 1 + int(hashlib.md5(salt.encode()).hexdigest(), 16) % 3 if salt else 0
    return tuple(form(i + off) for i in range(n))


@dataclass
class NightFacts:
    sha: str
    series: dict = field(default_factory=dict)   # (platform, kernel) -> SeriesMethod
    active_platforms: tuple = ()
    dispatch_text: str = ""
    pretuned: Pretuned | None = None
    pretuned_dispatch_text: str = ""


def _kernel_list(inputs: dict, name: str | None, inline: tuple) -> list[str]:
    if name is None:
        return list(inline)
    v = inputs.get(name)
    if v is None:
        return []
    return [k.strip() for k in str(v).split(",") if k.strip()]


def _buckets(kernels: list[str], max_runners: int = 13) -> dict:
    n = max(1, min(len(kernels), max_runners))
    return {k: i % n for i, k in enumerate(kernels)}


def night_facts(git, sha: str, cache: dict) -> NightFacts:
    paths = (DISPATCH, NIGHTLY, BENCH, BENCH_TPU, BENCH_BRIDGE, RUN_PY, RUN_LINATTN, RUN_TPU, TB_PIN,
             "helion/_compat.py")
    key = tuple(git.oid(sha, p) for p in paths)
    if key in cache:
        nf = cache[key]
        return NightFacts(sha=sha, series=nf.series, active_platforms=nf.active_platforms,
                          dispatch_text=nf.dispatch_text, pretuned=parse_pretuned_cached(git, sha, cache),
                          pretuned_dispatch_text=git.show(sha, P_DISPATCH) or "")
    dtext = git.show(sha, DISPATCH) or ""
    jobs, inputs, has_schedule = parse_jobs(dtext)
    toggles = nightly_toggles(git.show(sha, NIGHTLY))
    bench = parse_bench(git.show(sha, BENCH))
    tpu = parse_tpu_bench(git.show(sha, BENCH_TPU), bridge=False)
    bridge = parse_tpu_bench(git.show(sha, BENCH_BRIDGE), bridge=True)
    runpy = parse_run_py(git.show(sha, RUN_PY))
    lin = parse_linattn(git.show(sha, RUN_LINATTN))
    tpu_k = parse_run_tpu(git.show(sha, RUN_TPU))
    tb_pin = (git.show(sha, TB_PIN) or "").strip()
    amd_arch = "gcnArchName" in (git.show(sha, "helion/_compat.py") or "")
    series = {}
    for job in jobs:
        nightly = job.scheduled or (toggles.get(job.toggle, False) if job.toggle else False)
        if not nightly:
            continue
        if job.suite == "linattn" and lin is not None:
            if not bench.linattn_uploads:
                continue
            ks = _kernel_list(inputs, job.kernel_input, ())
            base = [k.removesuffix("-bwd") for k in ks]
            base = [b for b in dict.fromkeys(base) if b in lin.variants]
            rows = []
            for b in base:
                rows.append(b)
                if b not in lin.fwd_only:
                    rows.append(f"{b}-bwd")
            buckets = _buckets(base, 9)
            aot = bench.aot_h100_linattn and job.alias == "h100"
            for r in rows:
                b = r.removesuffix("-bwd")
                shp = lin.varlen_shapes if b in lin.fwd_only and "varlen" in b else lin.shapes
                series[(job.alias, r)] = SeriesMethod(
                    platform=job.alias, kernel=r, suite="linattn", job_alias=job.alias,
                    device=DEVICE.get(job.alias, job.alias), backend="triton", baseline_label="FLA",
                    shapes=tuple(shp), cudagraph=False, baseline_impl="fla", has_triton=False, has_tc=False,
                    has_latency=True, has_compile=False, autotune=(("aot", aot),) + bench.env,
                    torch_pin=bench.linattn_torch_pin, runner=job.runner, image=job.image, runtime=job.runtime,
                    harness=_h("linattn", lin.shapes), shard=buckets.get(b, 0))
            continue
        if job.suite in ("tpu", "tpu_bridge"):
            cmd = tpu if job.suite == "tpu" else bridge
            if cmd is None:
                continue
            ks = _kernel_list(inputs, job.kernel_input, ())
            if ks == ["all"] or (job.suite == "tpu" and not ks):
                ks = list(tpu_k)
            if job.suite == "tpu":
                ks = [k for k in ks if k in tpu_k]
            else:
                ks = [k for k in ks if k in runpy.mappings]
            for k in ks:
                plat = "tpu"
                if (plat, k) in series:
                    continue
                series[(plat, k)] = SeriesMethod(
                    platform=plat, kernel=k, suite=job.suite, job_alias=job.alias, device="TPU v7",
                    backend="pallas" if job.suite == "tpu_bridge" else None, baseline_label=None,
                    shapes=shape_labels(k, cmd.num_shapes, salt=job.suite), cudagraph=False,
                    baseline_impl=("tritonbench" if job.suite == "tpu_bridge" else "run_tpu") + ":" +
                    (tpu_k.get(k, "") if job.suite == "tpu" else ""),
                    has_triton=False, has_tc=True, has_latency=True, has_compile=True, autotune=cmd.env,
                    torch_pin=cmd.torch_pin, runner="linux.google.tpuv7x.1", image="", runtime="tpu",
                    harness=cmd.harness, shard=0)
            continue
        if job.suite != "tritonbench":
            continue
        ks = _kernel_list(inputs, job.kernel_input, bench.kernels_inline)
        ks = [k for k in ks if k in runpy.mappings and k in runpy.metric_maps]
        buckets = _buckets(ks, 13 if job.alias != "b200_cute" else 6)
        metrics = set(bench.metrics.split(","))
        for k in ks:
            opts = runpy.mappings.get(k, {})
            mm = runpy.metric_maps.get(k, {})
            outs = set(v for v in mm.values() if isinstance(v, str))
            base_impl = next((c for c, v in mm.items() if v == "baseline"), "")
            n = opts.get("num_inputs") if isinstance(opts.get("num_inputs"), int) else _default_shapes(k)
            cg = bench.cudagraph and "--cudagraph" not in (opts.get("remove_flags") or [])
            plat = job.alias
            dev = DEVICE.get(job.alias, job.alias)
            if job.alias.startswith("mi") and (runpy.amd_arch or amd_arch):
                dev += " gfx942:sramecc+:xnack-" if job.alias == "mi325x" else " gfx950:sramecc+:xnack-"
            if job.backend and job.backend != "triton" and not plat.endswith(f"_{job.backend}"):
                plat = f"{plat}_{job.backend}"
            series[(plat, k)] = SeriesMethod(
                platform=plat, kernel=k, suite="tritonbench", job_alias=job.alias,
                device=dev, shape_in_json=runpy.shape_in_json,
                backend=(job.backend if runpy.backend_in_extra else None), baseline_label=None,
                shapes=shape_labels(k, n), cudagraph=cg, baseline_impl=base_impl,
                has_triton="triton_speedup" in outs, has_tc="torch_compile_speedup" in outs,
                has_latency="helion_latency_ms" in outs and "latency" in metrics,
                has_compile=bench.compile_time, autotune=bench.env, torch_pin=bench.torch_pin + "|" + tb_pin[:8],
                runner=job.runner, image=job.image, runtime=job.runtime,
                harness=_h(bench.harness, bench.latency_mode, bench.passes, bench.sample_mode), shard=buckets[k])
    nf = NightFacts(sha=sha, series=series, active_platforms=tuple(sorted({j.alias for j in jobs})),
                    dispatch_text=dtext)
    cache[key] = nf
    return NightFacts(sha=sha, series=series, active_platforms=nf.active_platforms, dispatch_text=dtext,
                      pretuned=parse_pretuned_cached(git, sha, cache),
                      pretuned_dispatch_text=git.show(sha, P_DISPATCH) or "")


def parse_pretuned_cached(git, sha: str, cache: dict) -> Pretuned | None:
    tree = git.oid(sha, "pretuned_kernels")
    if tree is None:
        return None
    key = ("pretuned", tree, git.oid(sha, P_DISPATCH), git.oid(sha, P_NIGHTLY), git.oid(sha, P_BENCH))
    if key not in cache:
        cache[key] = parse_pretuned(git, sha)
    return cache[key]
