"""What a nightly runs, read from the real Helion files at its commit.

Nothing here imports or executes Helion code: workflows are parsed with PyYAML, Python sources
with ``ast`` (literals only) and a few regular expressions. Every parse is cached per git blob,
so a world reads each distinct version of a file once.

Two kinds of facts come out:

* ``DashFacts`` for the main "Benchmark Dispatch" nightly: which platform jobs the cron runs
  (alias, suite, backend, runner label, container image, runtime), the kernel lists, the
  benchmark command of ``benchmark.yml`` (``--cudagraph``, ``--latency-measure-mode``,
  ``--metrics``, ``--measure-compile-time``, two passes or one), the ``HELION_AUTOTUNE_*``
  environment, the torch / tritonbench / FLA / CuTe DSL / TPU pins, ``KERNEL_MAPPINGS`` options
  of ``benchmarks/run.py`` and the shapes of ``benchmarks/run_linattn.py``.
* ``PreFacts`` for the pretuned suite: its runners, ``KERNELS``, each kernel's baselines,
  ``use_cudagraph()``, shape count and checked-in config blobs per compute capability, and a
  fingerprint of the ``_bench.py`` timer.

``series_facts`` flattens them to the facts that can move one (platform, kernel) series, the
unit the world diffs night to night.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import yaml

from .repo import Repo

WF = ".github/workflows/"
DISPATCH = WF + "benchmark_dispatch.yml"
NIGHTLY = WF + "benchmark_nightly.yml"
BENCH = WF + "benchmark.yml"
TPU_WF = WF + "benchmark_tpu.yml"
BRIDGE_WF = WF + "benchmark_tpu_bridge.yml"
PINS = ".github/ci_commit_pins/"
RUN_PY = "benchmarks/run.py"
LINATTN_PY = "benchmarks/run_linattn.py"
RUN_TPU_PY = "benchmarks/run_tpu.py"
INSTALL_CUTE = "scripts/install_cute.sh"
SETTINGS_PY = "helion/runtime/settings.py"
P_DISPATCH = WF + "benchmark_pretuned_dispatch.yml"
P_NIGHTLY = WF + "benchmark_pretuned_nightly.yml"
P_BENCH = WF + "benchmark_pretuned.yml"
P_DIR = "pretuned_kernels"

# The files whose content decides what the main nightly runs, and the pretuned one.
DASH_PATHS = (DISPATCH, NIGHTLY, BENCH, TPU_WF, BRIDGE_WF, PINS, RUN_PY, LINATTN_PY, RUN_TPU_PY,
              INSTALL_CUTE, ".github/actions/")
PRE_PATHS = (P_DISPATCH, P_NIGHTLY, P_BENCH, P_DIR + "/", PINS)


@dataclass(frozen=True)
class Job:
    """One platform job the nightly cron runs."""
    alias: str  # artifact alias: h100, b200, b200_cute, mi350x, mi325x, tpu, tpu_bridge
    platform: str  # the dashboard column it lands in (tpu_bridge folds into tpu)
    suite: str  # tritonbench | linattn | tpu | tpu_bridge
    backend: str
    runner: str
    image: str
    runtime: str
    kernels: tuple
    max_runners: int | None  # shard count of compute-benchmark-matrix (None: one job)


@dataclass(frozen=True)
class KernelOpt:
    """A ``KERNEL_MAPPINGS`` entry's benchmark options."""
    num_inputs: int | None
    no_cudagraph: bool
    extra: tuple  # other options, sorted (key, repr(value)) pairs


@dataclass(frozen=True)
class DashFacts:
    jobs: tuple
    cudagraph: bool
    latency_mode: str | None
    metrics: tuple
    compile_time: bool
    two_pass: bool
    autotune_env: tuple  # effective autotuner search settings of the GPU command
    nightly_env: tuple  # the cron's env_vars (all jobs get them)
    torch_pin: str
    tritonbench_pin: str
    kernel_opts: dict = field(hash=False)
    latency_mapped: bool  # run.py maps tritonbench's -latency column to helion_latency_ms
    backend_field: bool  # run.py writes the backend into extra_info
    linattn_shapes: tuple
    linattn_varlen_shapes: tuple
    linattn_pins: tuple  # (torch pin of the linattn job, FLA commit)
    linattn_aot: tuple  # aliases whose linattn job takes checked-in configs ("*" = all)
    tpu_toolchain: tuple
    tpu_kernels: tuple  # kernels run_tpu.py knows
    cute_pin: str


@dataclass(frozen=True)
class PreKernel:
    name: str
    hardware: tuple  # compute capabilities with a checked-in config (sm90, sm100, ...)
    configs: tuple  # ((sm, blob), ...)
    cudagraph: bool
    baselines: tuple
    per_baseline: bool  # the record carries a per-baseline breakdown
    n_shapes: int
    cute: bool  # compiled with Helion's CuTe backend (needs the CuTe DSL installed)
    source: str  # blob of the kernel module


@dataclass(frozen=True)
class PreFacts:
    jobs: tuple  # Job (suite "pretuned")
    kernels: tuple  # PreKernel, in KERNELS order
    timer: str  # fingerprint of _bench.py's timing functions
    torch_pin: str
    cute_setup: bool  # the pretuned workflow installs the CuTe DSL
    tritonbench: bool  # ... and tritonbench (needed by the L2-clearing cudagraph timer)


# ----------------------------------------------------------------------------------------
# small parsers (cached per blob)

_CACHE: dict = {}


def _cached(kind: str, blob: str | None, fn, repo: Repo):
    key = (kind, blob)
    if key not in _CACHE:
        _CACHE[key] = fn(repo.blob_text(blob) if blob else None)
    return _CACHE[key]


def _yaml(text: str | None):
    if not text:
        return None
    return yaml.safe_load(text)


def _inputs(doc) -> dict:
    on = doc.get(True) or doc.get("on") or {}
    return (on.get("workflow_dispatch") or {}).get("inputs") or {}


def _flag_of(expr) -> str | None:
    m = re.search(r"inputs\.(run_\w+)\s*==", str(expr or ""))
    return m.group(1) if m else None


def _input_of(expr) -> str | None:
    m = re.search(r"inputs\.(kernels\w*)", str(expr or ""))
    return m.group(1) if m else None


def parse_dispatch(text: str | None) -> dict:
    """Platform jobs of a dispatch workflow: alias, runner, image, kernels input, run flag."""
    doc = _yaml(text)
    if not doc:
        return {"inputs": {}, "jobs": []}
    inputs = {}
    for name, spec in _inputs(doc).items():
        spec = spec or {}
        inputs[name] = spec.get("default")
    jobs = []
    all_jobs = doc.get("jobs") or {}
    for jid, job in all_jobs.items():
        w = job.get("with") or {}
        if "alias" not in w:
            continue
        needs = job.get("needs")
        gen = all_jobs.get(needs) if isinstance(needs, str) else None
        flag = _flag_of(job.get("if")) or _flag_of((gen or {}).get("if"))
        kin = _input_of(w.get("kernels"))
        max_runners = None
        if kin is None and gen is not None:
            kin = _input_of((gen.get("with") or {}).get("kernels"))
            max_runners = int((gen.get("with") or {}).get("max-runners") or 1)
        uses = str(job.get("uses") or "")
        suite = w.get("suite") or ("tpu_bridge" if "tpu_bridge" in uses else
                                   "tpu" if "tpu" in uses else
                                   "pretuned" if "pretuned" in uses else "tritonbench")
        jobs.append(dict(id=jid, alias=str(w["alias"]), flag=flag, kernels_input=kin,
                         max_runners=max_runners, suite=suite,
                         backend=str(w.get("backend") or ""), runner=str(w.get("runner") or ""),
                         image=str(w.get("image") or ""),
                         runtime=str(w.get("runtime-version") or "")))
    return {"inputs": inputs, "jobs": jobs}


def parse_nightly(text: str | None) -> dict:
    """The inputs the cron passes to the dispatch (run_* flags, env_vars)."""
    if not text:
        return {"flags": {}, "env": ""}
    flags = dict(re.findall(r"(run_\w+):\s*'(\w+)'", text))
    env = re.findall(r"env_vars:\s*'([^']*)'", text)
    return {"flags": flags, "env": env[0] if env else ""}


def _steps(doc, job="benchmark") -> list:
    return ((doc.get("jobs") or {}).get(job) or {}).get("steps") or []


def parse_bench(text: str | None) -> dict:
    """The tritonbench command of benchmark.yml: its flags, env and pins."""
    doc = _yaml(text)
    out = dict(cudagraph=True, latency_mode=None, metrics=("speedup", "accuracy"),
               compile_time=False, two_pass=False, env=(), torch="", linattn_torch="",
               fla="", tritonbench_inline="", linattn_aot=())
    if not doc:
        return out
    jobs = doc.get("jobs") or {}
    job = jobs.get("benchmark") or next(iter(jobs.values()), {})
    env = {k: str(v) for k, v in (job.get("env") or {}).items() if _search_setting(k)}
    for step in job.get("steps") or []:
        name = str(step.get("name") or "")
        run = str(step.get("run") or "")
        if name.startswith("Install PyTorch"):
            m = re.search(r"torch==([\w.*+]+)", run)
            out["torch"] = m.group(1) if m else out["torch"]
        if "Run Linear-Attention" in name:
            m = re.search(r"HELION_AUTOTUNE_CACHE=(\w+)", run)
            gate = re.findall(r'inputs\.alias \}\}"\s*==\s*"(\w+)"', run)
            out["linattn_aot"] = (tuple(sorted(gate)) or ("*",)) if m else ()
        if "Linear-Attention Requirements" in name:
            m = re.search(r"torch==([\w.*+]+)", run)
            out["linattn_torch"] = m.group(1) if m else ""
            m = re.search(r"flash-linear-attention@([0-9a-f]+)", run)
            out["fla"] = m.group(1) if m else ""
        if "TritonBench Requirements" in name:
            m = re.search(r"git checkout ([0-9a-f]{7,40})", run)
            out["tritonbench_inline"] = m.group(1) if m else ""
        if "Run TritonBench" in name or ("benchmarks/run.py" in run and "--op" in run):
            calls = [c for c in re.split(r"python benchmarks/run\.py", run)[1:]
                     if "--list-impls" not in c.split("\n", 1)[0]]
            if not calls:
                continue
            rec = next((c for c in calls if "--output" in c), calls[-1])
            out["two_pass"] = len(calls) > 1 or "HELION_ASSERT_CACHE_HIT=1" in run
            out["cudagraph"] = "--cudagraph" in rec
            m = re.search(r"--latency-measure-mode\s+(\S+)", rec)
            out["latency_mode"] = m.group(1) if m else None
            m = re.search(r"--metrics\s+(\S+)", rec)
            out["metrics"] = tuple(m.group(1).split(",")) if m else ()
            out["compile_time"] = "--measure-compile-time" in rec
            pre = run[:run.find(rec)]
            for k, v in re.findall(r"(HELION_AUTOTUNE_\w+)=(\S+)", pre.rsplit("\n\n", 1)[-1]):
                if _search_setting(k):
                    env[k] = v.rstrip(";")
    out["env"] = tuple(sorted(env.items()))
    return out


def _search_setting(name: str) -> bool:
    """Autotuner settings that change what the search does (not where it logs)."""
    return name.startswith("HELION_AUTOTUNE_") and "LOG" not in name


# The autotuner settings whose value changes the search (and so the compile time or the
# config found); their code defaults are read from helion/runtime/settings.py.
SEARCH_SETTINGS = ("HELION_AUTOTUNE_BENCHMARK_SUBPROCESS", "HELION_AUTOTUNE_BUDGET_SECONDS",
                   "HELION_AUTOTUNE_RANDOM_SEED", "HELION_AUTOTUNE_EFFORT",
                   "HELION_AUTOTUNE_CACHE")


def parse_settings(text: str | None) -> dict:
    out = {}
    for k, v in re.findall(r'_env_get_\w+,\s*"(HELION_AUTOTUNE_\w+)",\s*([^\n),]+)', text or ""):
        if k == "HELION_AUTOTUNE_BENCHMARK_SUBPROCESS":  # the one default that moved
            out[k] = v.strip().strip('"')
    return out


def _truthy(v: str) -> str:
    return {"true": "1", "false": "0", "none": ""}.get(str(v).lower(), str(v))


def _effective(defaults: dict, env: dict) -> tuple:
    eff = {k: _truthy(v) for k, v in defaults.items()}
    eff.update({k: _truthy(v) for k, v in env.items() if k in SEARCH_SETTINGS})
    return tuple(sorted((k, v) for k, v in eff.items() if v not in ("", "0")))


def _literal_assign(tree: ast.Module, name: str):
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and target.id == name:
            return value
    return None


def parse_run_py(text: str | None) -> dict:
    """``KERNEL_MAPPINGS`` options per kernel, and whether latency is mapped."""
    out = {"opts": {}, "latency": False, "backend_field": False}
    if not text:
        return out
    out["latency"] = '"helion_latency_ms"' in text
    out["backend_field"] = '"backend": _get_backend()' in text
    node = _literal_assign(ast.parse(text), "KERNEL_MAPPINGS")
    if not isinstance(node, ast.Dict):
        return out
    for k, v in zip(node.keys, node.values, strict=True):
        try:
            key = ast.literal_eval(k)
        except ValueError:
            continue
        opts = {}
        if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
            try:
                opts = ast.literal_eval(v.elts[-1])
            except ValueError:
                opts = {}
        extra = tuple(sorted((str(a), repr(b)) for a, b in opts.items()
                             if a not in ("num_inputs", "remove_flags")))
        out["opts"][key] = KernelOpt(
            num_inputs=opts.get("num_inputs"),
            no_cudagraph="--cudagraph" in (opts.get("remove_flags") or ()),
            extra=extra)
    return out


def parse_linattn(text: str | None) -> dict:
    out = {"shapes": (), "varlen": ()}
    if not text:
        return out
    tree = ast.parse(text)
    for name, key in (("SHAPES", "shapes"), ("VARLEN_SHAPES", "varlen")):
        node = _literal_assign(tree, name)
        if isinstance(node, ast.List):  # entries may hold expressions ([1024] * 8): names only
            out[key] = tuple(e.elts[0].value for e in node.elts if isinstance(e, ast.Tuple)
                             and e.elts and isinstance(e.elts[0], ast.Constant))
    return out


def parse_run_tpu(text: str | None) -> tuple:
    if not text:
        return ()
    node = _literal_assign(ast.parse(text), "KERNEL_MAPPINGS")
    if not isinstance(node, ast.Dict):
        return ()
    return tuple(sorted(k.value for k in node.keys if isinstance(k, ast.Constant)))


_TPU_PIN = re.compile(r"\b(jax|jaxlib|libtpu|torch_tpu|torch-tpu)\b[^\n]{0,40}?[=@:]\s*\"?"
                      r"([0-9a-f]{7,40}|\d+(?:\.\d+)+)")


def _pins(text: str | None) -> tuple:
    if not text:
        return ()
    return tuple(sorted(set(_TPU_PIN.findall(text))))


# ----------------------------------------------------------------------------------------
# the main nightly

def dash_facts(repo: Repo, sha: str) -> DashFacts:
    """Everything the main nightly at ``sha`` runs, and how."""
    def blob(path):
        return repo.blob_id(sha, path)

    key = ("dash", tuple(blob(p) for p in (DISPATCH, NIGHTLY, BENCH, TPU_WF, BRIDGE_WF, RUN_PY,
                                           LINATTN_PY, RUN_TPU_PY, INSTALL_CUTE, SETTINGS_PY,
                                           PINS + "tritonbench.txt", PINS + "torch_tpu.txt",
                                           PINS + "nvidia_cutlass_dsl.txt")),
           tuple(sorted(repo.tree(sha, ".github/actions").items())))
    if key in _CACHE:
        return _CACHE[key]
    disp = _cached("dispatch", blob(DISPATCH), parse_dispatch, repo)
    night = _cached("nightly", blob(NIGHTLY), parse_nightly, repo)
    bench = _cached("bench", blob(BENCH), parse_bench, repo)
    runpy = _cached("runpy", blob(RUN_PY), parse_run_py, repo)
    lin = _cached("linattn", blob(LINATTN_PY), parse_linattn, repo)
    tpu_k = _cached("runtpu", blob(RUN_TPU_PY), parse_run_tpu, repo)
    defaults = _cached("settings", blob(SETTINGS_PY), parse_settings, repo)

    jobs = []
    for j in disp["jobs"]:
        flag = j["flag"]
        on = night["flags"].get(flag) if flag else "true"
        if on is None:  # the cron leaves it to the input's default
            on = str(disp["inputs"].get(flag, False)).lower()
        if on != "true":
            continue
        names = str(disp["inputs"].get(j["kernels_input"]) or "")
        kernels = tuple(dict.fromkeys(k.strip() for k in names.split(",") if k.strip()))
        if j["suite"] == "linattn":
            kernels = tuple(dict.fromkeys(k.removesuffix("-bwd") for k in kernels))
        alias = j["alias"]
        platform = "tpu" if alias == "tpu_bridge" else alias
        backend = j["backend"] or ("pallas" if j["suite"].startswith("tpu") else "triton")
        if backend == "cute" and not platform.endswith("_cute"):
            platform += "_cute"
        jobs.append(Job(alias=alias, platform=platform, suite=j["suite"], backend=backend,
                        runner=j["runner"] or _tpu_runner(repo, sha, j["suite"]),
                        image=j["image"], runtime=j["runtime"], kernels=kernels,
                        max_runners=j["max_runners"]))
    cron = {k: v for k, v in re.findall(r"(HELION_AUTOTUNE_\w+)=(\S+)", night["env"])
            if _search_setting(k)}
    nenv = _effective({}, cron)
    genv = _effective(defaults, {**dict(bench["env"]), **cron})
    tb = (repo.text(sha, PINS + "tritonbench.txt") or "").strip() or bench["tritonbench_inline"]
    tpu_tool = _pins(repo.text(sha, PINS + "torch_tpu.txt") and
                     "torch_tpu=" + repo.text(sha, PINS + "torch_tpu.txt").strip())
    tpu_tool += _pins(repo.text(sha, TPU_WF))
    for path, b in sorted(repo.tree(sha, ".github/actions").items()):
        if "tpu" in path:
            tpu_tool += _pins(repo.blob_text(b))
    cute = (repo.text(sha, PINS + "nvidia_cutlass_dsl.txt") or "").strip()
    if not cute:
        m = re.search(r"nvidia-cutlass-dsl\S*?([\d]+\.[\d.]+)", repo.text(sha, INSTALL_CUTE) or "")
        cute = m.group(1) if m else ""
    facts = DashFacts(
        jobs=tuple(jobs), cudagraph=bench["cudagraph"], latency_mode=bench["latency_mode"],
        metrics=bench["metrics"], compile_time=bench["compile_time"],
        two_pass=bench["two_pass"], autotune_env=genv, nightly_env=nenv,
        torch_pin=bench["torch"], tritonbench_pin=tb or "unpinned",
        kernel_opts=runpy["opts"], latency_mapped=runpy["latency"],
        backend_field=runpy["backend_field"],
        linattn_shapes=lin["shapes"], linattn_varlen_shapes=lin["varlen"],
        linattn_pins=(bench["linattn_torch"], bench["fla"]), linattn_aot=bench["linattn_aot"],
        tpu_toolchain=tuple(sorted(set(tpu_tool))), tpu_kernels=tpu_k, cute_pin=cute)
    _CACHE[key] = facts
    return facts


def _tpu_runner(repo: Repo, sha: str, suite: str) -> str:
    text = repo.text(sha, BRIDGE_WF if suite == "tpu_bridge" else TPU_WF) or ""
    m = re.search(r"runs-on:\s*(\S+)", text)
    return m.group(1) if m else ""


def series_facts(f: DashFacts, job: Job, kernel: str) -> dict:
    """The facts that can move one dashboard series (the world diffs these night to night)."""
    out = {"runner": job.runner, "image": job.image, "runtime": job.runtime, "suite": job.suite}
    if job.suite == "tritonbench":
        opt = f.kernel_opts.get(kernel)
        out.update(cudagraph=f.cudagraph and not (opt and opt.no_cudagraph),
                   num_inputs=opt.num_inputs if opt else None,
                   options=opt.extra if opt else (),
                   latency=(f.latency_mapped and "latency" in f.metrics),
                   latency_mode=f.latency_mode, compile_time=f.compile_time,
                   passes=2 if f.two_pass else 1, autotune_env=f.autotune_env,
                   torch=f.torch_pin,
                   tritonbench=f.tritonbench_pin)
        if job.backend == "cute":
            out["cute_pin"] = f.cute_pin
    elif job.suite == "linattn":
        out.update(shapes=f.linattn_varlen_shapes if kernel.endswith("varlen") else
                   f.linattn_shapes, linattn_pins=f.linattn_pins,
                   aot=bool(f.linattn_aot) and ("*" in f.linattn_aot or job.alias in f.linattn_aot),
                   nightly_env=f.nightly_env)
    else:  # tpu (run_tpu.py) or the tritonbench bridge on tpu
        out.update(tpu_toolchain=f.tpu_toolchain, nightly_env=f.nightly_env)
        if job.suite == "tpu_bridge":
            opt = f.kernel_opts.get(kernel)
            out.update(num_inputs=opt.num_inputs if opt else None,
                       options=opt.extra if opt else (), tritonbench=f.tritonbench_pin)
    return out


def nightly_series(f: DashFacts) -> list:
    """(platform, kernel, job) of every dashboard row the nightly produces, in job order.
    Kernels a suite cannot run are left out the way the workflow skips them."""
    out = []
    seen = set()
    for job in f.jobs:
        for k in job.kernels:
            rows = [k]
            if job.suite == "tritonbench" and k not in f.kernel_opts:
                continue  # "No implementations found for kernel ..., skipping"
            if job.suite == "tpu" and f.tpu_kernels and k not in f.tpu_kernels:
                continue
            if job.suite == "linattn":
                rows = [k] if k in ("kda_fused", "kda_varlen") else [k, f"{k}-bwd"]
            for r in rows:
                if (job.platform, r) not in seen:
                    seen.add((job.platform, r))
                    out.append((job.platform, r, job))
    return out


# ----------------------------------------------------------------------------------------
# the pretuned nightly

def _use_cudagraph(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    return bool(sub.value.value)
    return False


def _baseline_names(tree: ast.Module) -> tuple:
    """Names of the baselines a pretuned module benchmarks against: the string heads of the
    (name, callable) pairs built in ``_baselines()`` or in ``make_calls``."""
    names = []
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
              and n.name in ("_baselines", "make_calls", "_captured_calls")]
    for scope in scopes:
        for sub in ast.walk(scope):
            if (isinstance(sub, ast.Tuple) and len(sub.elts) == 2
                    and isinstance(sub.elts[0], ast.Constant) and isinstance(sub.elts[0].value, str)
                    and not isinstance(sub.elts[1], ast.Constant)
                    and re.fullmatch(r"[a-z][a-z0-9_]*", sub.elts[0].value)):
                names.append(sub.elts[0].value)
    return tuple(dict.fromkeys(names)) or ("torch",)


def _n_shapes(tree: ast.Module) -> int:
    n = 0
    for sub in ast.walk(tree):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            if any(isinstance(t, ast.Name) and "shape" in t.id.lower() for t in targets) \
                    and isinstance(sub.value, ast.List):
                n += sum(1 for e in sub.value.elts if isinstance(e, ast.Tuple))
    return n or 12


def parse_pre_kernel(text: str | None) -> dict:
    if not text:
        return {}
    tree = ast.parse(text)
    return {"cudagraph": _use_cudagraph(tree), "baselines": _baseline_names(tree),
            "per_baseline": "run_sweep(" in text or '"baselines"' in text,
            "n_shapes": _n_shapes(tree),
            "cute": bool(re.search(r"""backend\s*=\s*["']cute["']|HELION_BACKEND.{0,20}cute""", text))}


def _timer_print(text: str | None) -> str:
    """Which timers a pretuned sweep calls (cudagraph with or without L2 clearing, do_bench),
    and run_sweep's warmup/rep defaults: what moves the numbers, not how the code reads."""
    if not text:
        return ""
    tree = ast.parse(text)
    called = set()
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in ("_bench", "bench_cudagraph"):
            for sub in ast.walk(fn):
                if isinstance(sub, ast.Call):
                    f = sub.func
                    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                    if "bench" in name and name != "bench_cudagraph":
                        called.add(name)
        if isinstance(fn, ast.FunctionDef) and fn.name == "run_sweep":
            for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
                if arg.arg in ("warmup", "rep") and isinstance(default, ast.Constant):
                    called.add(f"{arg.arg}={default.value}")
    return ",".join(sorted(called))


def pre_facts(repo: Repo, sha: str) -> PreFacts | None:
    """The pretuned nightly at ``sha`` (None before its workflow exists)."""
    if repo.blob_id(sha, P_NIGHTLY) is None:
        return None
    tree = repo.tree(sha, P_DIR)
    key = ("pre", repo.blob_id(sha, P_DISPATCH), repo.blob_id(sha, P_NIGHTLY),
           repo.blob_id(sha, P_BENCH), tuple(sorted(tree.items())))
    if key in _CACHE:
        return _CACHE[key]
    disp = _cached("dispatch", repo.blob_id(sha, P_DISPATCH), parse_dispatch, repo)
    night = _cached("nightly", repo.blob_id(sha, P_NIGHTLY), parse_nightly, repo)
    jobs = []
    for j in disp["jobs"]:
        flag = j["flag"]
        on = night["flags"].get(flag) if flag else "true"
        if on is None:
            on = str(disp["inputs"].get(flag, False)).lower()
        if on == "true":
            jobs.append(Job(alias=j["alias"], platform=j["alias"], suite="pretuned",
                            backend="triton", runner=j["runner"], image=j["image"],
                            runtime=j["runtime"], kernels=(), max_runners=None))
    run_py = tree.get(P_DIR + "/run.py")
    names = ()
    if run_py:
        node = _literal_assign(ast.parse(repo.blob_text(run_py)), "KERNELS")
        if node is not None:
            names = tuple(ast.literal_eval(node))
    kernels = []
    for name in names:
        src = tree.get(f"{P_DIR}/{name}/{name}.py")
        info = _cached("prekernel", src, parse_pre_kernel, repo) if src else {}
        configs = []
        for path, b in sorted(tree.items()):
            pat = rf"{P_DIR}/{re.escape(name)}/_helion_aot_{re.escape(name)}_cuda_(sm\d+)\.py"
            m = re.fullmatch(pat, path)
            if m:
                configs.append((m.group(1), b))
        kernels.append(PreKernel(name=name, hardware=tuple(sm for sm, _ in configs),
                                 configs=tuple(configs), cudagraph=info.get("cudagraph", False),
                                 baselines=info.get("baselines", ("torch",)),
                                 per_baseline=info.get("per_baseline", False),
                                 n_shapes=info.get("n_shapes", 12),
                                 cute=info.get("cute", False) or name.endswith("_cute"),
                                 source=src or ""))
    bench_text = repo.text(sha, P_BENCH) or ""
    m = re.search(r"torch==([\w.*+]+)", bench_text)
    facts = PreFacts(jobs=tuple(jobs), kernels=tuple(kernels),
                     timer=_cached("timer", tree.get(P_DIR + "/_bench.py"), _timer_print, repo),
                     torch_pin=m.group(1) if m else "",
                     cute_setup="install_cute" in bench_text,
                     tritonbench="tritonbench" in bench_text)
    _CACHE[key] = facts
    return facts


SM_OF = {"h100": "sm90", "b200": "sm100"}
HW_OF = {"sm90": "h100", "sm100": "b200"}  # pretuned_kernels/run.py _HARDWARE_BY_COMPUTE


def pre_series_facts(f: PreFacts, job: Job, k: PreKernel) -> dict:
    """The facts that can move one pretuned series."""
    sm = SM_OF.get(job.alias, "")
    return {"runner": job.runner, "image": job.image, "runtime": job.runtime,
            "torch": f.torch_pin, "timer": f.timer if k.cudagraph else "do_bench",
            "cudagraph": k.cudagraph, "baselines": k.baselines, "n_shapes": k.n_shapes,
            "per_baseline": k.per_baseline,
            "config": dict(k.configs).get(sm, ""),
            "cute_setup": f.cute_setup if k.cute else True,
            "tritonbench": f.tritonbench if k.cudagraph else True}


def pretuned_series(f: PreFacts) -> list:
    """(platform, kernel, job, PreKernel) of every pretuned row (kernels with a config for
    the job's compute capability; the rest are skipped by run.py)."""
    out = []
    for job in f.jobs:
        sm = SM_OF.get(job.alias)
        for k in f.kernels:
            if sm in k.hardware:
                out.append((job.alias, k.name, job, k))
    return out
