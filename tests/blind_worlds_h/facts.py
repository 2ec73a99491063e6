"""What the nightly ran at a given sha, read from the real Helion files (never imported).

Why it exists: a world's nightlies must run exactly what the repository said at that commit:
which platforms the cron turns on (`benchmark_nightly.yml`), their runner / image / runtime and
kernel lists (`benchmark_dispatch.yml` inputs and jobs), the benchmark command
(`benchmark.yml`: metrics, compile-time, cudagraph, torch pins, autotune env), per-kernel
options (`benchmarks/run.py` KERNEL_MAPPINGS `remove_flags` / `num_inputs`), the linear-attention
shapes and variants (`run_linattn.py`), the TPU harness (`run_tpu.py`, TPU workflows and pins),
and the pretuned suite (`pretuned_kernels/`). Everything is parsed with yaml / ast / regex; the
result is a plain frozen `NightFacts` that the simulator and the labeler both read, so a change
between two nightlies' facts is exactly a change in the real files.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import yaml

from .repo import Repo

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
TPU_WF = ".github/workflows/benchmark_tpu.yml"
TPU_BRIDGE_WF = ".github/workflows/benchmark_tpu_bridge.yml"
RUN_PY = "benchmarks/run.py"
LINATTN = "benchmarks/run_linattn.py"
RUN_TPU = "benchmarks/run_tpu.py"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_BENCH = ".github/workflows/benchmark_pretuned.yml"
P_RUN = "pretuned_kernels/run.py"
P_BENCH_PY = "pretuned_kernels/_bench.py"
TPU_ACTIONS = (".github/actions/install-pytorch-for-torchtpu/action.yml",
               ".github/actions/build-torch-tpu/action.yml")


@dataclass(frozen=True)
class Job:
    """One dashboard-producing job family of a nightly (sharded into artifacts)."""
    alias: str          # artifact alias (h100, b200, b200_cute, mi350x, tpu, tpu_bridge)
    platform: str       # dashboard platform_short (alias + backend suffix; tpu_bridge -> tpu)
    suite: str          # tritonbench | linattn | tpu | tpu_bridge
    backend: str        # triton | cute | pallas
    runner: str
    image: str
    runtime: str
    kernels: tuple      # kernel list as the job runs it (linattn: variants)
    max_runners: int    # shards (compute-benchmark-matrix); 1 for TPU jobs


@dataclass(frozen=True)
class PretunedKernel:
    name: str
    hardware: tuple          # aliases with a checked-in config (sm90 -> h100, sm100 -> b200)
    baselines: tuple         # baseline names main() compares with
    cudagraph: bool
    configs: tuple           # ((alias, blob oid), ...) of the _helion_aot_*_smNN.py files


@dataclass(frozen=True)
class NightFacts:
    sha: str
    jobs: tuple = ()
    kernel_opts: tuple = ()      # ((kernel, remove_cudagraph, num_inputs), ...) from run.py
    torch_pin: str = ""
    linattn_torch_pin: str = ""
    has_latency: bool = False
    has_compile_time: bool = False
    two_pass: bool = False       # autotune pass, then a cache-hit measuring pass (pre single-pass)
    cudagraph_flag: bool = True
    budget_s: int | None = None  # HELION_AUTOTUNE_BUDGET_SECONDS
    nightly_env: str = ""
    linattn_aot: tuple = ()      # aliases whose linattn job takes checked-in AOT configs ("*" = all)
    subprocess_env: bool = False # HELION_AUTOTUNE_BENCHMARK_SUBPROCESS=1 in benchmark.yml
    subprocess_default: bool = False  # helion/runtime/settings.py defaults it on
    amd_arch_in_name: bool = False    # get_device_name() appends gcnArchName on ROCm
    json_shape: bool = False          # run.py writes "shape" into helionbench.json records
    json_backend: bool = False        # run.py writes extra_info.backend
    linattn_shapes: tuple = ()
    linattn_varlen_shapes: tuple = ()
    linattn_fwd_only: tuple = ()
    tpu_num_shapes: int = 2
    tpu_pins: tuple = ()         # (libtpu, jax) pins as written
    pretuned: tuple = ()         # PretunedKernel...
    pretuned_jobs: tuple = ()    # ((alias, runner, image), ...)
    pretuned_torch_pin: str = ""
    pretuned_bench_oid: str = ""

    def opts(self, kernel: str) -> tuple[bool, int | None]:
        for k, rc, n in self.kernel_opts:
            if k == kernel:
                return rc, n
        return False, None

    def job_for(self, platform: str, suite: str | None = None) -> Job | None:
        for j in self.jobs:
            if j.platform == platform and (suite is None or j.suite == suite):
                return j
        return None

    def platforms(self) -> list[str]:
        return sorted({j.platform for j in self.jobs})

    def pretuned_kernel(self, name: str) -> PretunedKernel | None:
        for p in self.pretuned:
            if p.name == name:
                return p
        return None


# ---------------------------------------------------------------------------------------------
def _yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _on(doc: dict) -> dict:
    on = doc.get("on", doc.get(True, {}))
    return on if isinstance(on, dict) else {}


def _inputs(doc: dict) -> dict:
    wd = _on(doc).get("workflow_dispatch") or {}
    return (wd.get("inputs") or {}) if isinstance(wd, dict) else {}


_RUN_IF = re.compile(r"inputs\.(run_\w+)\s*==\s*'true'")
_INPUT_REF = re.compile(r"github\.event\.inputs\.(\w+)")


def _nightly_inputs(text: str | None) -> tuple[dict, str]:
    """run_* inputs the cron passes, and its env_vars."""
    if not text:
        return {}, ""
    block = text.split("inputs:", 1)[1] if "inputs:" in text else ""
    runs = dict(re.findall(r"(run_\w+)\s*:\s*'(true|false)'", block))
    env = re.search(r"env_vars\s*:\s*'([^']*)'", block)
    return runs, (env.group(1) if env else "")


def _csv(s) -> tuple:
    return tuple(k.strip() for k in str(s or "").split(",") if k.strip())


def _dispatch_jobs(repo: Repo, sha: str, nightly_runs: dict) -> tuple:
    doc = _yaml(repo.read(sha, DISPATCH))
    inputs = _inputs(doc)
    eff = {}
    for name, spec in inputs.items():
        d = spec.get("default") if isinstance(spec, dict) else None
        eff[name] = "true" if d is True else "false" if d is False else ("" if d is None else str(d))
    eff.update(nightly_runs)
    jobs_doc = doc.get("jobs") or {}
    out = []
    for jname, job in jobs_doc.items():
        if not isinstance(job, dict):
            continue
        uses = str(job.get("uses", ""))
        wf = uses.rsplit("/", 1)[-1]
        if wf not in ("benchmark.yml", "benchmark_tpu.yml", "benchmark_tpu_bridge.yml"):
            continue
        cond = str(job.get("if", ""))
        gen = None
        needs = job.get("needs")
        if isinstance(needs, str) and isinstance(jobs_doc.get(needs), dict):
            gen = jobs_doc[needs]
            cond = cond or str(gen.get("if", ""))
        m = _RUN_IF.search(cond)
        if not m or eff.get(m.group(1)) != "true":
            continue
        w = job.get("with") or {}
        alias = str(w.get("alias", ""))
        kexpr = str(w.get("kernels", ""))
        max_runners = 1
        if "matrix.kernels" in kexpr and gen is not None:
            gw = gen.get("with") or {}
            kexpr = str(gw.get("kernels", ""))
            max_runners = int(str(gw.get("max-runners", "1")))
        ref = _INPUT_REF.search(kexpr)
        kernels = _csv(eff.get(ref.group(1), "")) if ref else _csv(kexpr)
        if wf == "benchmark_tpu.yml":
            suite, backend = "tpu", "pallas"
            runner = _runs_on(repo, sha, TPU_WF)
        elif wf == "benchmark_tpu_bridge.yml":
            suite, backend = "tpu_bridge", "pallas"
            runner = _runs_on(repo, sha, TPU_BRIDGE_WF)
        else:
            suite = str(w.get("suite", "tritonbench"))
            backend = str(w.get("backend", "triton"))
            runner = str(w.get("runner", ""))
        platform = alias
        if alias == "tpu_bridge":
            platform = "tpu"
        elif backend not in ("triton", "pallas") and not alias.endswith("_" + backend):
            platform = f"{alias}_{backend}"
        if not kernels:
            continue
        out.append(Job(alias, platform, suite, backend, runner, str(w.get("image", "")),
                       str(w.get("runtime-version", "")), kernels, max_runners))
    out.sort(key=lambda j: (j.platform, j.suite))
    return tuple(out)


def _runs_on(repo: Repo, sha: str, path: str) -> str:
    text = repo.read(sha, path) or ""
    m = re.search(r"runs-on:\s*(\S+)", text)
    return m.group(1) if m else ""


def _literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def _assigned(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def _parse(text: str | None) -> ast.Module | None:
    if not text:
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _kernel_opts(text: str | None) -> tuple:
    tree = _parse(text)
    if tree is None:
        return ()
    node = _assigned(tree, "KERNEL_MAPPINGS")
    if not isinstance(node, ast.Dict):
        return ()
    out = []
    for k, v in zip(node.keys, node.values):
        key = _literal(k)
        if not isinstance(key, str) or not isinstance(v, ast.Tuple) or not v.elts:
            continue
        opts = v.elts[-1]
        rc, n = False, None
        if isinstance(opts, ast.Dict):
            for ok, ov in zip(opts.keys, opts.values):
                name = _literal(ok)
                val = _literal(ov)
                if name == "remove_flags" and isinstance(val, (list, tuple)):
                    rc = "--cudagraph" in val
                elif name == "num_inputs" and isinstance(val, int):
                    n = val
        out.append((key, rc, n))
    return tuple(sorted(out))


def _names(node) -> tuple:
    """First string of each tuple in a list literal (entries may hold expressions like [1024] * 8)."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return ()
    out = []
    for e in node.elts:
        if isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant) \
                and isinstance(e.elts[0].value, str):
            out.append(e.elts[0].value)
    return tuple(out)


def _linattn(text: str | None) -> tuple[tuple, tuple, tuple]:
    tree = _parse(text)
    if tree is None:
        return (), (), ()
    fwd_only = []
    for name in ("FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS"):
        v = _literal(_assigned(tree, name)) or {}
        fwd_only.extend(v if isinstance(v, (dict, list, tuple)) else [])
    return (_names(_assigned(tree, "SHAPES")), _names(_assigned(tree, "VARLEN_SHAPES")),
            tuple(sorted(fwd_only)))


def _bench_facts(text: str | None) -> dict:
    text = text or ""
    tb = text.split("Install Linear-Attention", 1)
    pin = re.search(r'torch==([0-9][0-9.*]*)', tb[0])
    lpin = re.search(r'torch==([0-9][0-9.*]*)', tb[1]) if len(tb) > 1 else None
    metrics = re.findall(r"--metrics\s+([a-z_,]+)", text)
    budget = re.search(r'HELION_AUTOTUNE_BUDGET_SECONDS:\s*"?(\d+)', text)
    aot = ()
    if "AOTAutotuneCache" in text:
        gate = re.search(r'inputs\.alias\s*\}\}"?\s*==\s*"(\w+)"[^\n]*\n[^\n]*AOTAutotuneCache', text)
        aot = (gate.group(1),) if gate else ("*",)
    return dict(
        torch_pin=pin.group(1) if pin else "",
        linattn_torch_pin=lpin.group(1) if lpin else "",
        has_latency=bool(metrics) and "latency" in metrics[-1],
        has_compile_time="--measure-compile-time" in text,
        two_pass="HELION_ASSERT_CACHE_HIT" in text,
        cudagraph_flag=bool(re.search(r"^\s*--cudagraph\b", text, re.M)),
        budget_s=int(budget.group(1)) if budget else None,
        linattn_aot=aot,
        subprocess_env=bool(re.search(r'HELION_AUTOTUNE_BENCHMARK_SUBPROCESS:\s*"?1', text)),
    )


def _tpu_pins(repo: Repo, sha: str) -> tuple:
    text = "\n".join((repo.read(sha, p) or "") for p in (TPU_WF, TPU_BRIDGE_WF, *TPU_ACTIONS))
    lib = sorted(set(re.findall(r"libtpu==([0-9][0-9.]*)", text)))
    jax = sorted(set(re.findall(r"jax==([0-9][0-9.]*)", text)))
    return (",".join(lib), ",".join(jax))


def _tpu_num_shapes(repo: Repo, sha: str) -> int:
    m = re.search(r"--num-shapes\s+(\d+)", repo.read(sha, TPU_WF) or "")
    return int(m.group(1)) if m else 2


_SM = {"sm90": "h100", "sm100": "b200"}


def _func_src(text: str, name: str) -> str:
    m = re.search(rf"^def {name}\(.*?(?=^def |\Z)", text, re.S | re.M)
    return m.group(0) if m else ""


def _pretuned(repo: Repo, sha: str) -> tuple:
    if repo.oid(sha, P_NIGHTLY) is None:
        return (), (), "", ""
    tree = _parse(repo.read(sha, P_RUN))
    kernels = _literal(_assigned(tree, "KERNELS")) if tree is not None else None
    files = repo.ls(sha, "pretuned_kernels")
    out = []
    for k in kernels or []:
        cfgs = []
        for f in files:
            m = re.fullmatch(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py", f)
            if m:
                cfgs.append((_SM.get(m.group(1), m.group(1)), repo.oid(sha, f)))
        src = repo.read(sha, f"pretuned_kernels/{k}/{k}.py") or ""
        bsrc = _func_src(src, "_baselines")
        names = sorted(set(re.findall(r'\(\s*"([A-Za-z0-9_]+)"\s*,\s*[A-Za-z_]', bsrc))) or ["torch"]
        cg = re.search(r"return\s+(True|False)", _func_src(src, "use_cudagraph"))
        out.append(PretunedKernel(k, tuple(sorted({a for a, _ in cfgs})), tuple(names),
                                  bool(cg and cg.group(1) == "True"), tuple(sorted(cfgs))))
    doc = _yaml(repo.read(sha, P_DISPATCH))
    inputs = _inputs(doc)
    runs, _ = _nightly_inputs(repo.read(sha, P_NIGHTLY))
    eff = {n: ("true" if (s or {}).get("default") is True else "false") for n, s in inputs.items()
           if isinstance(s, dict) and isinstance(s.get("default"), bool)}
    eff.update(runs)
    jobs = []
    for jname, job in (doc.get("jobs") or {}).items():
        if not isinstance(job, dict) or "benchmark_pretuned.yml" not in str(job.get("uses", "")):
            continue
        m = _RUN_IF.search(str(job.get("if", "")))
        if m and eff.get(m.group(1)) != "true":
            continue
        w = job.get("with") or {}
        jobs.append((str(w.get("alias", "")), str(w.get("runner", "")), str(w.get("image", ""))))
    pin = re.search(r'torch==([0-9][0-9.*]*)', repo.read(sha, P_BENCH) or "")
    return tuple(out), tuple(sorted(jobs)), (pin.group(1) if pin else ""), (repo.oid(sha, P_BENCH_PY) or "")


_CACHE: dict[tuple[str, str], NightFacts] = {}
_MEMO: dict[tuple, object] = {}


def _memo(repo: Repo, sha: str, paths: tuple, fn):
    """fn() cached by the blob/tree ids of the files it reads (unchanged files parse once)."""
    key = (fn.__name__ if hasattr(fn, "__name__") else "", paths,
           tuple(repo.oid(sha, p) for p in paths))
    if key not in _MEMO:
        _MEMO[key] = fn()
    return _MEMO[key]


def facts_at(repo: Repo, sha: str) -> NightFacts:
    key = (str(repo.path), sha)
    if key in _CACHE:
        return _CACHE[key]
    runs, env = _nightly_inputs(repo.read(sha, NIGHTLY))
    jobs = _memo(repo, sha, (NIGHTLY, DISPATCH, TPU_WF, TPU_BRIDGE_WF),
                 lambda: _dispatch_jobs(repo, sha, runs))
    bf = _memo(repo, sha, (BENCH,), lambda: _bench_facts(repo.read(sha, BENCH)))
    shapes, varlen, fwd_only = _memo(repo, sha, (LINATTN,), lambda: _linattn(repo.read(sha, LINATTN)))
    pre, pjobs, ppin, pbench = _memo(repo, sha, (P_NIGHTLY, P_DISPATCH, P_BENCH, "pretuned_kernels"),
                                     lambda: _pretuned(repo, sha))
    kopts = _memo(repo, sha, (RUN_PY,), lambda: _kernel_opts(repo.read(sha, RUN_PY)))
    run_py = repo.read(sha, RUN_PY) or ""
    pins = _memo(repo, sha, (TPU_WF, TPU_BRIDGE_WF, *TPU_ACTIONS), lambda: _tpu_pins(repo, sha))
    nshapes = _tpu_num_shapes(repo, sha)
    settings = repo.read(sha, "helion/runtime/settings.py") or ""
    sub_default = bool(re.search(r'"HELION_AUTOTUNE_BENCHMARK_SUBPROCESS",\s*True', settings))
    arch = any("gcnArchName" in (repo.read(sha, p) or "") for p in (RUN_PY, "helion/_compat.py"))
    f = NightFacts(sha=sha, jobs=jobs, subprocess_default=sub_default, amd_arch_in_name=arch,
                   json_shape='"shape": result.shape' in run_py,
                   json_backend='"backend": _get_backend()' in run_py,
                   kernel_opts=kopts, nightly_env=env, linattn_shapes=shapes,
                   linattn_varlen_shapes=varlen, linattn_fwd_only=fwd_only, tpu_num_shapes=nshapes,
                   tpu_pins=pins, pretuned=pre, pretuned_jobs=pjobs, pretuned_torch_pin=ppin,
                   pretuned_bench_oid=pbench, **bf)
    _CACHE[key] = f
    return f
