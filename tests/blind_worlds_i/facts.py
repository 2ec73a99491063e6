"""What the real Helion files say a nightly measured, parsed (never executed) at one sha.

Why: a world must run exactly what Helion's workflows and harness said at each nightly's sha,
and every change of measurement in the world must be one the files carry. So the world reads
the workflow YAML, the pins, and the harness sources (``ast`` on ``benchmarks/run.py``,
``run_linattn.py``, ``run_tpu.py``, the pretuned kernels) into a flat dict of facts whose keys
can be diffed commit by commit. Each parser is cached by the file text it read.
"""
from __future__ import annotations

import ast
import hashlib
import re
from functools import lru_cache

import yaml

WF = ".github/workflows/"
PINS = ".github/ci_commit_pins/"
# Files whose text can change what a nightly measures (the rest of the repo cannot).
WATCHED = (WF + "benchmark_nightly.yml", WF + "benchmark_dispatch.yml", WF + "benchmark.yml",
           WF + "benchmark_tpu.yml", WF + "benchmark_tpu_bridge.yml", WF + "benchmark_pretuned.yml",
           WF + "benchmark_pretuned_dispatch.yml", WF + "benchmark_pretuned_nightly.yml",
           PINS + "tritonbench.txt", PINS + "nvidia_cutlass_dsl.txt", PINS + "torch_tpu.txt",
           ".github/actions/build-torch-tpu/action.yml", ".github/actions/install-pytorch-for-torchtpu/action.yml",
           "benchmarks/run.py", "benchmarks/run_linattn.py", "benchmarks/run_tpu.py",
           "pretuned_kernels/run.py", "pretuned_kernels/_bench.py")
WATCHED_PREFIXES = ("pretuned_kernels/", "examples/linear/_helion_aot_")


def is_watched(path: str) -> bool:
    return path in WATCHED or path.startswith(WATCHED_PREFIXES)


def _h(text: str | None) -> str:
    return hashlib.sha1((text or "").encode()).hexdigest()[:12]


def _yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    return doc if isinstance(doc, dict) else {}


# --- workflows -----------------------------------------------------------------------------------

@lru_cache(maxsize=256)
def nightly_inputs(text: str | None) -> tuple:
    """The run_* inputs the cron dispatch sets to 'true', and its env_vars string."""
    if not text:
        return (), ""
    runs = tuple(sorted(set(re.findall(r"(run_\w+):\s*'true'", text))))
    env = re.search(r"env_vars:\s*'([^']*)'", text)
    return runs, env.group(1) if env else ""


_INPUT_REF = re.compile(r"inputs\.(\w+)")


@lru_cache(maxsize=256)
def dispatch(text: str | None) -> dict:
    """Jobs of Benchmark Dispatch that run a benchmark: per job its alias, suite, backend,
    runner, image, runtime, the kernels input it reads, and the run_* input gating it; plus the
    `default:` kernel list of every kernels* input."""
    doc = _yaml(text)
    trig = doc.get(True) or doc.get("on") or {}
    inputs = (trig.get("workflow_dispatch") or {}).get("inputs") or {} if isinstance(trig, dict) else {}
    defaults = {}
    for name, spec in inputs.items():
        if str(name).startswith("kernels") and isinstance(spec, dict):
            defaults[name] = tuple(k.strip() for k in str(spec.get("default") or "").split(",") if k.strip())
    jobs = doc.get("jobs") or {}
    out = {}
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        uses = str(job.get("uses") or "")
        wf = uses.rsplit("/", 1)[-1]
        if wf not in ("benchmark.yml", "benchmark_tpu.yml", "benchmark_tpu_bridge.yml"):
            continue
        w = job.get("with") or {}
        need = job.get("needs")
        need = need[0] if isinstance(need, list) and need else need
        gen = jobs.get(need) if isinstance(need, str) else None
        cond = str(job.get("if") or (gen or {}).get("if") or "")
        m = re.search(r"inputs\.(run_\w+)\s*==\s*'true'", cond)
        kexpr = str(w.get("kernels") or "")
        if "matrix.kernels" in kexpr and gen:
            kexpr = str((gen.get("with") or {}).get("kernels") or "")
        km = _INPUT_REF.search(kexpr)
        suite = {"benchmark_tpu.yml": "tpu", "benchmark_tpu_bridge.yml": "tpu_bridge"}.get(
            wf, str(w.get("suite") or "tritonbench"))
        out[name] = dict(alias=str(w.get("alias") or ""), suite=suite, backend=str(w.get("backend") or "triton"),
                         runner=str(w.get("runner") or ""), image=str(w.get("image") or ""),
                         runtime=str(w.get("runtime-version") or ""),
                         copts=str(w.get("container-options") or ""),
                         kernels_input=km.group(1) if km else "", run_input=m.group(1) if m else "")
    return {"jobs": out, "defaults": defaults}


def _steps(doc: dict) -> list:
    jobs = doc.get("jobs") or {}
    job = next(iter(jobs.values()), {}) if jobs else {}
    return [s for s in (job.get("steps") or []) if isinstance(s, dict)], job


@lru_cache(maxsize=256)
def bench_yml(text: str | None) -> dict:
    """benchmark.yml: the torch pin, job env, and the flags of the command that records results
    (the last run.py call writing --output), whether an unrecorded autotune pass precedes it,
    and the linear-attention step's own pins and --num-shapes."""
    doc = _yaml(text)
    steps, job = _steps(doc)
    env = {str(k): str(v) for k, v in (job.get("env") or {}).items()}
    torch_pin, la_torch, fla, la_shapes, flags, two_pass = "", "", "", "", (), False
    for s in steps:
        name, run = str(s.get("name") or ""), str(s.get("run") or "")
        if name.startswith("Install PyTorch"):
            m = re.search(r'torch==([\w.*+-]+)', run)
            torch_pin = m.group(1) if m else torch_pin
        if "Linear-Attention Requirements" in name:
            m = re.search(r'torch==([\w.*+-]+)', run)
            la_torch = m.group(1) if m else ""
            m = re.search(r"flash-linear-attention@(\w+)", run)
            fla = m.group(1) if m else ""
        if "Linear-Attention Benchmark" in name:
            m = re.search(r"--num-shapes\s+(\d+)", run)
            la_shapes = m.group(1) if m else ""
        if "benchmarks/run.py" in run and "--op $kernel" in run and "Linear-Attention" not in name:
            calls = re.split(r"python benchmarks/run\.py", run)[1:]
            rec = [c for c in calls if "--output" in c] or calls
            if rec:
                body = rec[-1].split("echo", 1)[0]
                flags = tuple(sorted(set(re.findall(r"--[\w-]+(?:\s+[^\s\\-][^\s\\]*)?", body)) -
                                     {"--op $kernel", "--only $IMPLS", "--baseline $BASELINE"}))
                flags = tuple(f for f in flags if not f.startswith(("--output", "--autotune-metrics-json",
                                                                     "--helion-backend")))
            two_pass = len([c for c in calls if "--list-impls" not in c.split("\n", 1)[0]]) > 1
    return dict(torch=torch_pin, la_torch=la_torch or torch_pin, fla=fla, la_shapes=la_shapes, env=env,
                flags=flags, two_pass=two_pass, text=_h(text))


@lru_cache(maxsize=256)
def tpu_yml(text: str | None) -> dict:
    doc = _yaml(text)
    steps, job = _steps(doc)
    env = {str(k): str(v) for k, v in (job.get("env") or {}).items()}
    run = "\n".join(str(s.get("run") or "") for s in steps)
    m = re.search(r"--num-(?:shapes|inputs)\s+(\d+)", run)
    # input precision: a literal --precision, or PRECISION=<default> with per-kernel `a|b) PRECISION=x`
    prec = {}
    d = re.search(r"^\s*PRECISION=(\w+)", run, re.M) or re.search(r"--precision\s+(\w+)", run)
    if d:
        prec["*"] = d.group(1)
    for ks, v in re.findall(r"^\s*([\w|-]+)\)\s*PRECISION=(\w+)", run, re.M):
        for k in ks.split("|"):
            prec[k] = v
    return dict(runner=str(job.get("runs-on") or ""), env=env, num_shapes=m.group(1) if m else "",
                precision=tuple(sorted(prec.items())), text=_h(text))


# --- harness sources -----------------------------------------------------------------------------

def _assigned(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def _lit(node, default=None):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return default


@lru_cache(maxsize=256)
def run_py(text: str | None) -> dict:
    """benchmarks/run.py: per kernel its options (num_inputs, whether --cudagraph is removed) and
    its baseline column; whether latency columns are mapped at all."""
    if not text:
        return dict(kernels={}, baselines={}, latency=False)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return dict(kernels={}, baselines={}, latency=False)
    kernels, baselines = {}, {}
    km = _assigned(tree, "KERNEL_MAPPINGS")
    if isinstance(km, ast.Dict):
        for k, v in zip(km.keys, km.values):
            key = _lit(k)
            if not isinstance(key, str):
                continue
            opts = {}
            if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
                d = v.elts[-1]
                for ok, ov in zip(d.keys, d.values):
                    okey = _lit(ok)
                    if isinstance(okey, str):
                        opts[okey] = _lit(ov, default=ast.unparse(ov))
            mod = ""
            if isinstance(v, ast.Tuple) and len(v.elts) > 1:
                m1 = v.elts[1]
                if isinstance(m1, ast.Constant) and isinstance(m1.value, str):
                    mod = m1.value
                elif isinstance(m1, ast.List) and m1.elts and isinstance(m1.elts[0], ast.Tuple):
                    mod = str(_lit(m1.elts[0].elts[0], ""))
            ni = opts.get("num_inputs")
            rf = opts.get("remove_flags") or []
            kernels[key] = dict(num_inputs=int(ni) if isinstance(ni, int) else None,
                                no_cudagraph="--cudagraph" in (rf if isinstance(rf, list) else []), module=mod,
                                other=tuple(sorted((a, str(b)) for a, b in opts.items()
                                                   if a not in ("num_inputs", "remove_flags"))))
    mm = _assigned(tree, "KERNEL_METRIC_MAPPINGS")
    if isinstance(mm, ast.Dict):
        for k, v in zip(mm.keys, mm.values):
            key = _lit(k)
            if isinstance(key, str) and isinstance(v, ast.Dict):
                for ck, cv in zip(v.keys, v.values):
                    if _lit(cv) == "baseline":
                        baselines[key] = str(_lit(ck))
    return dict(kernels=kernels, baselines=baselines, latency="helion_latency_ms" in text)


@lru_cache(maxsize=64)
def run_linattn(text: str | None) -> dict:
    if not text:
        return dict(shapes=(), varlen=(), variants=(), fwd_only=())
    tree = ast.parse(text)

    def names(node) -> tuple:  # the label of each (name, ...) row; rows may hold expressions
        if not isinstance(node, ast.List):
            return ()
        return tuple(e.elts[0].value for e in node.elts if isinstance(e, ast.Tuple) and e.elts and
                     isinstance(e.elts[0], ast.Constant) and isinstance(e.elts[0].value, str))

    shapes = names(_assigned(tree, "SHAPES"))
    varlen = names(_assigned(tree, "VARLEN_SHAPES"))
    dense = _lit(_assigned(tree, "DENSE_VARIANTS"), None)
    fused = _lit(_assigned(tree, "FUSED_PREAMBLE_VARIANTS"), {}) or {}
    var = _lit(_assigned(tree, "VARLEN_VARIANTS"), {}) or {}
    if dense is None:
        dense = _lit(_assigned(tree, "VARIANTS"), []) or []
    variants = tuple(dense) + tuple(fused) + tuple(var)
    return dict(shapes=shapes, varlen=varlen, variants=variants, fwd_only=tuple(fused) + tuple(var),
                varlen_variants=tuple(var))


@lru_cache(maxsize=64)
def run_tpu(text: str | None) -> dict:
    if not text:
        return dict(kernels=(), modules={})
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return dict(kernels=(), modules={})
    km = _assigned(tree, "KERNEL_MAPPINGS")
    kernels, modules = [], {}
    if isinstance(km, ast.Dict):
        for k, v in zip(km.keys, km.values):
            key = _lit(k)
            if isinstance(key, str):
                kernels.append(key)
                if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[0], ast.Constant):
                    modules[key] = "examples." + str(v.elts[0].value)
    return dict(kernels=tuple(kernels), modules=modules)


# --- pretuned suite ------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def pretuned_run(text: str | None) -> tuple:
    if not text:
        return ()
    try:
        return tuple(_lit(_assigned(ast.parse(text), "KERNELS"), []) or [])
    except SyntaxError:
        return ()


KNOWN_BASELINES = ("torch", "torch_compile", "vllm", "cutlass", "deepgemm", "flashinfer", "triton", "quack", "liger")


def _pairs(node) -> list:
    """String names of ("name", callable) pairs under ``node`` (a baseline list)."""
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Tuple) and len(sub.elts) == 2 and isinstance(sub.elts[0], ast.Constant) \
                and isinstance(sub.elts[0].value, str) and not isinstance(sub.elts[1], ast.Constant):
            names.append(sub.elts[0].value)
    return names


@lru_cache(maxsize=512)
def pretuned_kernel(text: str | None) -> dict:
    """One pretuned kernel module: its baseline names, use_cudagraph(), and how many shapes its
    sweep lists (tuples of ints in main()'s list literals, deduplicated)."""
    if not text:
        return dict(baselines=(), cudagraph=False, shapes=0)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return dict(baselines=(), cudagraph=False, shapes=0)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    base = []
    if "_baselines" in funcs:
        base = _pairs(funcs["_baselines"])
    else:
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "append" \
                    and isinstance(sub.func.value, ast.Name) and "base" in sub.func.value.id:
                base += _pairs(sub)
    cg = False
    if "use_cudagraph" in funcs:
        rets = [n.value for n in ast.walk(funcs["use_cudagraph"]) if isinstance(n, ast.Return)]
        cg = any(isinstance(r, ast.Constant) and r.value is True for r in rets)
    shapes = set()
    if "main" in funcs:
        for sub in ast.walk(funcs["main"]):
            if isinstance(sub, ast.List):
                for e in sub.elts:
                    v = _lit(e)
                    if isinstance(v, tuple) and v and all(isinstance(x, int) for x in v):
                        shapes.add(v)
    if not base:  # an older sweep written out by hand: the reference names it compares against
        consts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        base = [b for b in KNOWN_BASELINES if b in consts]
    return dict(baselines=tuple(dict.fromkeys(base)) or ("reference",), cudagraph=cg, shapes=len(shapes))


@lru_cache(maxsize=64)
def pretuned_bench(text: str | None) -> dict:
    """_bench.py: which cudagraph timer (L2-clearing tritonbench one or not) and the defaults."""
    if not text:
        return dict(l2_clear=False, warmup="", rep="")
    w = re.search(r"warmup:\s*int\s*=\s*(\d+)", text)
    r = re.search(r"\brep:\s*int\s*=\s*(\d+)", text)
    return dict(l2_clear="cache_clear" in text, warmup=w.group(1) if w else "", rep=r.group(1) if r else "")


@lru_cache(maxsize=64)
def dispatch_generic(text: str | None) -> dict:
    """Pretuned dispatch: alias -> runner/image/runtime for jobs calling benchmark_pretuned.yml."""
    doc = _yaml(text)
    out = {}
    for name, job in (doc.get("jobs") or {}).items():
        if isinstance(job, dict) and str(job.get("uses") or "").endswith("benchmark_pretuned.yml"):
            w = job.get("with") or {}
            m = re.search(r"inputs\.(run_\w+)\s*==\s*'true'", str(job.get("if") or ""))
            out[str(w.get("alias") or name)] = dict(runner=str(w.get("runner") or ""), image=str(w.get("image") or ""),
                                                    runtime=str(w.get("runtime-version") or ""),
                                                    run_input=m.group(1) if m else "")
    return out


@lru_cache(maxsize=64)
def pretuned_yml(text: str | None) -> dict:
    doc = _yaml(text)
    steps, _ = _steps(doc)
    torch_pin, vllm = "", False
    for s in steps:
        run = str(s.get("run") or "")
        if str(s.get("name") or "").startswith("Install PyTorch"):
            m = re.search(r'torch==([\w.*+-]+)', run)
            torch_pin = m.group(1) if m else torch_pin
        if "vllm" in run.lower() and "pip install" in run:
            vllm = True
    return dict(torch=torch_pin, vllm=vllm)
