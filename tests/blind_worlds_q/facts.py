"""What the nightly measured, read from the real Helion files at one commit (parsed, never run).

`dash_facts(blobs, sha)` -> DashFacts: which jobs the nightly cron runs (alias, runner, image,
runtime, backend, suite), the kernels each runs, the benchmark command's flags and env, the
torch / tritonbench / CuTe DSL / FLA / TPU pins, and per kernel the `benchmarks/run.py` options
(`num_inputs`, `remove_flags`, the baseline implementation, which comparison columns exist),
the linear-attention shapes and variants.

`pre_facts(blobs, sha)` -> PreFacts (None before the pretuned suite existed): its platforms
(runner, image), the suite's kernels, each kernel's baselines, `use_cudagraph()`, shape count,
the checked-in config blobs per compute capability, and the `_bench.py` timer traits.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

import yaml

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
TPU_WF = ".github/workflows/benchmark_tpu.yml"
TPU_BRIDGE_WF = ".github/workflows/benchmark_tpu_bridge.yml"
RUN_PY = "benchmarks/run.py"
RUN_LINATTN = "benchmarks/run_linattn.py"
RUN_TPU = "benchmarks/run_tpu.py"
PINS = ".github/ci_commit_pins/"
P_RUN = "pretuned_kernels/run.py"
P_BENCH = "pretuned_kernels/_bench.py"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_WF = ".github/workflows/benchmark_pretuned.yml"


def digest(*parts) -> str:
    return hashlib.sha1("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Job:
    key: str  # alias/suite, e.g. "b200/tritonbench", "b200_cute/tritonbench", "h100/linattn", "tpu/tpu"
    alias: str  # platform_short the builder files the rows under
    suite: str  # tritonbench | linattn | tpu | tpu_bridge
    backend: str
    runner: str
    image: str
    runtime: str
    kernels: tuple
    num_shapes: int | None = None


@dataclass(frozen=True)
class KernelOpts:
    num_inputs: int | None
    no_cudagraph: bool
    baseline: str
    has_triton: bool
    has_tc: bool


@dataclass
class DashFacts:
    sha: str
    jobs: dict = field(default_factory=dict)  # key -> Job (only those the nightly cron runs)
    torch_pin: str = ""
    la_torch_pin: str = ""  # what the linear-attention suite installs (its own pin, else torch_pin)
    metrics: str = ""
    cudagraph: bool = True
    latency_mode: str = ""
    compile_time: bool = False
    sample_mode: str = ""
    autotune_env: tuple = ()
    nightly_env: str = ""
    harness: str = ""  # digest of what the tritonbench pin and run.py's timing path give
    tritonbench_pin: str = ""
    cute_pin: str = ""
    fla_pin: str = ""
    tpu_pins: str = ""
    tpu_env: tuple = ()
    kernel_opts: dict = field(default_factory=dict)
    linattn_shapes: tuple = ()
    linattn_varlen_shapes: tuple = ()
    linattn_dense: tuple = ()
    linattn_forward_only: tuple = ()
    tpu_kernels: tuple = ()

    def series(self) -> list[tuple[str, str, Job]]:
        """(platform_short, kernel, job) of every row the nightly produces."""
        out = []
        seen = set()
        for job in self.jobs.values():
            for k in job.kernels:
                names = [k]
                if job.suite == "linattn":
                    if k not in self.linattn_dense and k not in self.linattn_forward_only:
                        continue
                    if k in self.linattn_dense:
                        names.append(f"{k}-bwd")
                elif job.suite in ("tritonbench", "tpu_bridge"):
                    if k not in self.kernel_opts:
                        continue
                elif job.suite == "tpu" and k not in self.tpu_kernels:
                    continue
                for n in names:
                    if (job.alias, n) not in seen:
                        seen.add((job.alias, n))
                        out.append((job.alias, n, job))
        return out


@dataclass(frozen=True)
class PreKernel:
    name: str
    baselines: tuple
    cudagraph: bool
    pre_captured: bool
    n_shapes: int
    configs: tuple  # ((smNN, blob id), ...)


@dataclass
class PreFacts:
    sha: str
    platforms: dict = field(default_factory=dict)  # alias -> (runner, image, runtime)
    torch_pin: str = ""
    kernels: dict = field(default_factory=dict)  # name -> PreKernel
    l2_clear: bool = False
    timer: str = ""  # digest of _bench.py's timing path
    tritonbench_pin: str = ""
    cute_pin: str = ""

    def series(self) -> list[tuple[str, str, str]]:
        out = []
        sm_of = {"h100": "sm90", "b200": "sm100"}
        for alias in sorted(self.platforms):
            sm = sm_of.get(alias)
            for k in self.kernels.values():
                if sm in dict(k.configs):
                    out.append((alias, k.name, sm))
        return out


# ----------------------------------------------------------------------------- helpers
_YAML: dict = {}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(text: str | None) -> dict:
    if not text:
        return {}
    key = hashlib.sha1(text.encode()).digest()
    if key not in _YAML:
        try:
            d = yaml.load(text, Loader=_LOADER)
        except yaml.YAMLError:
            d = {}
        _YAML[key] = d if isinstance(d, dict) else {}
    return _YAML[key]


def _block(text: str, name: str) -> str | None:
    """Source of a top-level `NAME ... = {` / `[` assignment up to its closing bracket at column 0."""
    m = re.search(rf"^{name}\b[^\n=]*=\s*([\[{{])", text, re.M)
    if not m:
        return None
    close = "}" if m.group(1) == "{" else "]"
    end = re.compile(rf"^\{close}", re.M).search(text, m.end())
    if not end:
        return None
    return text[m.start(): end.end()]


def _assign_value(src: str):
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    if isinstance(node, ast.AnnAssign):
        return node.value
    if isinstance(node, ast.Assign):
        return node.value
    return None


def _lit(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _inputs_ref(s) -> str | None:
    m = re.search(r"inputs\.(\w+)", str(s or ""))
    return m.group(1) if m else None


def kernel_defaults(text: str) -> dict[str, tuple]:
    header = re.compile(r"^\s+(kernels\w*):\s*$")
    default = re.compile(r'^\s+default:\s*"([^"]*)"\s*$')
    out, cur = {}, None
    for line in (text or "").splitlines():
        m = header.match(line)
        if m:
            cur = m.group(1)
            continue
        if cur is None:
            continue
        d = default.match(line)
        if d:
            out[cur] = tuple(k.strip() for k in d.group(1).split(",") if k.strip())
            cur = None
    return out


# ----------------------------------------------------------------------------- dashboard facts
_CACHE: dict = {}


def _cached(kind, oid, fn):
    key = (kind, oid)
    if key not in _CACHE:
        _CACHE[key] = fn()
    return _CACHE[key]


def parse_run_py(text: str) -> dict[str, KernelOpts]:
    maps = _assign_value(_block(text, "KERNEL_MAPPINGS") or "")
    metrics = _assign_value(_block(text, "KERNEL_METRIC_MAPPINGS") or "")
    opts: dict[str, dict] = {}
    if isinstance(maps, ast.Dict):
        for k, v in zip(maps.keys, maps.values):
            name = _lit(k)
            if not isinstance(name, str):
                continue
            o = {}
            if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
                for ok, ov in zip(v.elts[-1].keys, v.elts[-1].values):
                    okey = _lit(ok)
                    if okey in ("num_inputs", "remove_flags"):
                        o[okey] = _lit(ov)
            opts[name] = o
    mm: dict[str, dict] = {}
    if isinstance(metrics, ast.Dict):
        for k, v in zip(metrics.keys, metrics.values):
            name, val = _lit(k), _lit(v)
            if isinstance(name, str) and isinstance(val, dict):
                mm[name] = val
    out = {}
    for name, o in opts.items():
        m = mm.get(name)
        if m is None:
            continue
        base = next((k for k, v in m.items() if v == "baseline"), "")
        n = o.get("num_inputs")
        out[name] = KernelOpts(n if isinstance(n, int) else None,
                               "--cudagraph" in (o.get("remove_flags") or []), base,
                               "triton_speedup" in m.values(), "torch_compile_speedup" in m.values())
    return out


def parse_linattn(text: str) -> tuple:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return (), (), (), ()
    vals = {}
    for node in tree.body:
        tgt = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(tgt, ast.Name) and getattr(node, "value", None) is not None:
            vals[tgt.id] = node.value

    def names_of(node):
        out = []
        if isinstance(node, ast.List):
            for e in node.elts:
                if isinstance(e, ast.Tuple) and e.elts and isinstance(_lit(e.elts[0]), str):
                    out.append(_lit(e.elts[0]))
        return tuple(out)

    def strs(node):
        if isinstance(node, ast.List):
            return tuple(x for x in (_lit(e) for e in node.elts) if isinstance(x, str))
        if isinstance(node, ast.Dict):
            return tuple(x for x in (_lit(e) for e in node.keys) if isinstance(x, str))
        return ()

    shapes = names_of(vals.get("SHAPES"))
    varlen = names_of(vals.get("VARLEN_SHAPES"))
    dense = strs(vals.get("DENSE_VARIANTS"))
    fwd_only = strs(vals.get("FUSED_PREAMBLE_VARIANTS")) + strs(vals.get("VARLEN_VARIANTS"))
    if not dense:
        v = vals.get("VARIANTS")
        if isinstance(v, ast.List):
            dense = strs(v)
        elif isinstance(v, ast.Dict):
            dense = strs(v)
    return shapes, varlen, dense, fwd_only


def parse_tpu_kernels(text: str) -> tuple:
    node = _assign_value(_block(text, "KERNEL_MAPPINGS") or "")
    if isinstance(node, ast.Dict):
        return tuple(k for k in (_lit(x) for x in node.keys) if isinstance(k, str))
    return tuple(re.findall(r'^\s{4}"(\w[\w-]*)":\s*\(', text or "", re.M))


def _run_step(text: str, needle: str) -> str:
    """The `run:` script of the step that invokes ``needle`` and writes the output file."""
    wf = _yaml(text)
    for job in (wf.get("jobs") or {}).values():
        for step in (job or {}).get("steps") or []:
            run = str((step or {}).get("run") or "")
            if needle in run and "--output" in run:
                return run
    return ""


def _job_env(text: str) -> dict:
    wf = _yaml(text)
    for job in (wf.get("jobs") or {}).values():
        env = (job or {}).get("env") or {}
        if env:
            return {str(k): str(v) for k, v in env.items()}
    return {}


def _runs_on(text: str) -> str:
    wf = _yaml(text)
    for job in (wf.get("jobs") or {}).values():
        r = (job or {}).get("runs-on")
        if r:
            return str(r)
    return ""


DASH_PATHS = (DISPATCH, NIGHTLY, BENCH, TPU_WF, TPU_BRIDGE_WF, RUN_PY, RUN_LINATTN, RUN_TPU,
              PINS + "tritonbench.txt", PINS + "nvidia_cutlass_dsl.txt", PINS + "torch_tpu.txt",
              ".github/actions/build-torch-tpu/action.yml",
              ".github/actions/install-pytorch-for-torchtpu/action.yml")


def dash_facts(blobs, sha: str) -> DashFacts:
    key = ("dash", tuple(blobs.oid(sha, p) for p in DASH_PATHS))
    if key not in _CACHE:
        _CACHE[key] = _dash_facts(blobs, sha)
    return _CACHE[key]


def _dash_facts(blobs, sha: str) -> DashFacts:
    f = DashFacts(sha)
    disp = blobs.read(sha, DISPATCH) or ""
    nightly = blobs.read(sha, NIGHTLY) or ""
    bench = blobs.read(sha, BENCH) or ""
    defaults = kernel_defaults(disp)
    on = set(re.findall(r"(run_\w+):\s*'true'", nightly))
    m = re.search(r"env_vars:\s*'([^']*)'", nightly)
    f.nightly_env = m.group(1) if m else ""
    wf = _yaml(disp)
    jobs = wf.get("jobs") or {}
    tpu_text = blobs.read(sha, TPU_WF) or ""
    bridge_text = blobs.read(sha, TPU_BRIDGE_WF) or ""
    la_step = _run_step(bench, "run_linattn")
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        uses = str(job.get("uses") or "")
        w = job.get("with") or {}
        if not w.get("alias"):
            continue
        need = job.get("needs")
        need = need[0] if isinstance(need, list) and need else need
        gate_src = job.get("if") or (jobs.get(need) or {}).get("if") if need else job.get("if")
        gate = _inputs_ref(gate_src)
        if gate not in on:
            continue
        kin = _inputs_ref(w.get("kernels"))
        if kin is None and need:
            kin = _inputs_ref(((jobs.get(need) or {}).get("with") or {}).get("kernels"))
        kernels = defaults.get(kin or "kernels", ())
        alias = str(w["alias"])
        if uses.endswith("benchmark_tpu.yml"):
            suite, backend, runner = "tpu", "pallas", _runs_on(tpu_text)
            num = re.search(r"--num-shapes\s+(\d+)", tpu_text)
        elif uses.endswith("benchmark_tpu_bridge.yml"):
            suite, backend, runner = "tpu_bridge", "pallas", _runs_on(bridge_text)
            num = re.search(r"--num-shapes\s+(\d+)", bridge_text)
            alias = "tpu"
        elif uses.endswith("benchmark.yml"):
            suite = str(w.get("suite") or "tritonbench")
            backend = str(w.get("backend") or "triton")
            runner = str(w.get("runner") or "")
            num = re.search(r"--num-shapes\s+(\d+)", la_step) if suite == "linattn" else None
            if backend not in ("triton", "pallas") and not alias.endswith(f"_{backend}"):
                alias = f"{alias}_{backend}"
        else:
            continue
        key = f"{alias}/{suite}"
        f.jobs[key] = Job(key, alias, suite, backend, runner, str(w.get("image") or ""),
                          str(w.get("runtime-version") or ""), kernels, int(num.group(1)) if num else None)
    # the benchmark command
    pins = {"main": "", "la": ""}
    for job in (_yaml(bench).get("jobs") or {}).values():
        for st in (job or {}).get("steps") or []:
            run = str((st or {}).get("run") or "")
            name = str((st or {}).get("name") or "")
            m = re.search(r"torch==([\w.*+]+)", run)
            if m:
                pins["la" if "linear" in name.lower() or "linattn" in name.lower() else "main"] = m.group(1)
    f.torch_pin = pins["main"]
    f.la_torch_pin = pins["la"] or pins["main"]
    step = _run_step(bench, "benchmarks/run.py")
    m = re.search(r"--metrics\s+(\S+)", step)
    f.metrics = m.group(1) if m else "speedup,accuracy"
    f.cudagraph = "--cudagraph" in step
    m = re.search(r"--latency-measure-mode\s+(\S+)", step)
    f.latency_mode = m.group(1) if m else ""
    f.compile_time = "--measure-compile-time" in step
    m = re.search(r"--input-sample-mode\s+(\S+)", step)
    f.sample_mode = m.group(1) if m else ""
    env = _job_env(bench)
    f.autotune_env = tuple(sorted((k, v) for k, v in env.items()
                                  if k.startswith("HELION_AUTOTUNE") and k != "HELION_AUTOTUNE_LOG_LEVEL"))
    tenv = _job_env(tpu_text)
    f.tpu_env = tuple(sorted((k, v) for k, v in tenv.items() if k.startswith("HELION_AUTOTUNE_EFFORT")))
    f.tritonbench_pin = (blobs.read(sha, PINS + "tritonbench.txt") or "").strip()
    f.cute_pin = (blobs.read(sha, PINS + "nvidia_cutlass_dsl.txt") or "").strip()
    m = re.search(r"fla-org/flash-linear-attention@([\w.]+)", bench)
    f.fla_pin = m.group(1) if m else ""
    tpu_bits = [(blobs.read(sha, PINS + "torch_tpu.txt") or "").strip()]
    for p in (TPU_WF, TPU_BRIDGE_WF, ".github/actions/build-torch-tpu/action.yml",
              ".github/actions/install-pytorch-for-torchtpu/action.yml"):
        t = blobs.read(sha, p) or ""
        tpu_bits += re.findall(r"(?:jax|jaxlib|libtpu|torch)(?:\[\w+\])?==[\w.+*-]+", t)
    f.tpu_pins = ",".join(tpu_bits)
    run_oid = blobs.oid(sha, RUN_PY)
    if run_oid:
        f.kernel_opts = _cached("run", run_oid, lambda: parse_run_py(blobs.read(sha, RUN_PY)))
    la_oid = blobs.oid(sha, RUN_LINATTN)
    if la_oid:
        (f.linattn_shapes, f.linattn_varlen_shapes, f.linattn_dense,
         f.linattn_forward_only) = _cached("la", la_oid, lambda: parse_linattn(blobs.read(sha, RUN_LINATTN)))
    tpu_oid = blobs.oid(sha, RUN_TPU)
    if tpu_oid:
        f.tpu_kernels = _cached("tpu", tpu_oid, lambda: parse_tpu_kernels(blobs.read(sha, RUN_TPU)))
    return f


# ----------------------------------------------------------------------------- pretuned facts
def parse_pre_kernel(name: str, text: str, configs: tuple) -> PreKernel:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return PreKernel(name, ("torch",), False, False, 12, configs)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    where = funcs.get("_baselines") or funcs.get("main") or tree
    names = []
    for node in ast.walk(where):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            first = _lit(node.elts[0])
            if isinstance(first, str) and re.fullmatch(r"[a-z][a-z0-9_]*", first) and \
                    not isinstance(node.elts[1], ast.Constant):
                if first not in names:
                    names.append(first)
    cg = False
    f = funcs.get("use_cudagraph")
    if f is not None:
        for node in ast.walk(f):
            if isinstance(node, ast.Return):
                cg = bool(_lit(node.value))
    pre = "pre_captured_cudagraph=True" in text
    n = 0
    main = funcs.get("main")
    if main is not None:
        for node in ast.walk(main):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and any(
                    isinstance(t, ast.Name) and "shape" in t.id.lower() for t in node.targets):
                n += sum(1 for e in node.value.elts if isinstance(e, ast.Tuple))
    return PreKernel(name, tuple(names) or ("torch",), cg, pre, max(4, min(n or 12, 40)), configs)


def pre_facts(blobs, sha: str) -> PreFacts | None:
    tree = blobs.tree(sha, "pretuned_kernels/")
    key = ("pre", tuple(sorted(tree.items())),
           tuple(blobs.oid(sha, p) for p in (P_DISPATCH, P_NIGHTLY, P_WF, PINS + "tritonbench.txt",
                                              PINS + "nvidia_cutlass_dsl.txt")))
    if key not in _CACHE:
        _CACHE[key] = _pre_facts(blobs, sha)
    return _CACHE[key]


def _pre_facts(blobs, sha: str) -> PreFacts | None:
    run = blobs.read(sha, P_RUN)
    if not run or blobs.oid(sha, P_NIGHTLY) is None:
        return None
    f = PreFacts(sha)
    node = _assign_value(_block(run, "KERNELS") or "")
    kernels = [k for k in (_lit(e) for e in getattr(node, "elts", [])) if isinstance(k, str)]
    disp = _yaml(blobs.read(sha, P_DISPATCH))
    nightly = blobs.read(sha, P_NIGHTLY) or ""
    on = set(re.findall(r"(run_\w+):\s*'true'", nightly))
    for job in (disp.get("jobs") or {}).values():
        if not isinstance(job, dict):
            continue
        w = job.get("with") or {}
        if w.get("alias") and _inputs_ref(job.get("if")) in on:
            f.platforms[str(w["alias"])] = (str(w.get("runner") or ""), str(w.get("image") or ""),
                                            str(w.get("runtime-version") or ""))
    wf = blobs.read(sha, P_WF) or ""
    f.torch_pin = ",".join(sorted(set(re.findall(r"torch==([\w.*+]+)", wf))))
    f.tritonbench_pin = (blobs.read(sha, PINS + "tritonbench.txt") or "").strip()
    f.cute_pin = (blobs.read(sha, PINS + "nvidia_cutlass_dsl.txt") or "").strip()
    bench = blobs.read(sha, P_BENCH) or ""
    f.l2_clear = "cache_clear" in bench or "clear_cache" in bench
    tree = blobs.tree(sha, "pretuned_kernels/")
    for k in kernels:
        path = f"pretuned_kernels/{k}/{k}.py"
        oid = tree.get(path)
        if not oid:
            continue
        configs = []
        for p, o in sorted(tree.items()):
            m = re.fullmatch(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py", p)
            if m:
                configs.append((m.group(1), o))
        configs = tuple(configs)
        f.kernels[k] = _cached("pk", (oid, configs), lambda: parse_pre_kernel(k, blobs.read(sha, path), configs))
    return f
