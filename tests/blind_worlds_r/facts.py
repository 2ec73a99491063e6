"""What a nightly runs, read from the real Helion files at one commit (parsed; nothing here is
imported or executed from the repo).

`Facts.at(sha)` gives, per commit: the nightly's platform jobs (alias, runner, image, runtime,
suite, backend, kernels), the benchmark command (flags, HELION_* env, torch pin, number of
tritonbench passes), `benchmarks/run.py` KERNEL_MAPPINGS options and baselines, the TPU kernels
and toolchain, the linear-attention shapes/variants, and the pretuned suite."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import yaml

from .gitio import Blobs

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
TPU_WF = ".github/workflows/benchmark_tpu.yml"
BRIDGE_WF = ".github/workflows/benchmark_tpu_bridge.yml"
RUN_PY = "benchmarks/run.py"
RUN_TPU = "benchmarks/run_tpu.py"
RUN_LIN = "benchmarks/run_linattn.py"
TB_PIN = ".github/ci_commit_pins/tritonbench.txt"
TPU_PIN = ".github/ci_commit_pins/torch_tpu.txt"
TPU_ACTIONS = (".github/actions/build-torch-tpu/action.yml", ".github/actions/install-pytorch-for-torchtpu/action.yml")
P_RUN = "pretuned_kernels/run.py"
P_BENCH = "pretuned_kernels/_bench.py"
P_WF = ".github/workflows/benchmark_pretuned.yml"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"


@dataclass(frozen=True)
class Job:
    alias: str          # artifact alias (dashboard platform_short before any backend suffix)
    flag: str | None    # the run_* dispatch input gating it
    suite: str          # tritonbench | linattn | tpu | tpu_bridge
    backend: str
    runner: str
    image: str
    runtime: str
    copts: str
    kernels_input: str | None


def _load_yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return d if isinstance(d, dict) else {}


def _flag_of(cond) -> str | None:
    m = re.search(r"inputs\.(run_\w+)\s*==\s*'true'", str(cond or ""))
    return m.group(1) if m else None


def _input_of(val) -> str | None:
    m = re.search(r"inputs\.(kernels\w*)", str(val or ""))
    return m.group(1) if m else None


def parse_dispatch(text: str | None, tpu_runner: str, bridge_runner: str) -> tuple[list[Job], dict]:
    d = _load_yaml(text)
    on = d.get("on", d.get(True, {})) or {}
    inputs = ((on.get("workflow_dispatch") or {}).get("inputs") or {})
    defaults = {}
    for name, spec in inputs.items():
        if isinstance(spec, dict):
            defaults[name] = spec.get("default")
    jobs = d.get("jobs") or {}
    out = []
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        uses = str(job.get("uses", ""))
        w = job.get("with") or {}
        if not any(x in uses for x in ("benchmark.yml", "benchmark_tpu.yml", "benchmark_tpu_bridge.yml")):
            continue
        alias = str(w.get("alias", ""))
        if not alias:
            continue
        flag = _flag_of(job.get("if"))
        kin = _input_of(w.get("kernels"))
        needs = job.get("needs")
        needs = [needs] if isinstance(needs, str) else (needs or [])
        for n in needs:
            g = jobs.get(n) or {}
            flag = flag or _flag_of(g.get("if"))
            kin = kin or _input_of((g.get("with") or {}).get("kernels"))
        if "benchmark_tpu_bridge.yml" in uses:
            suite, runner, backend = "tpu_bridge", bridge_runner, "pallas"
        elif "benchmark_tpu.yml" in uses:
            suite, runner, backend = "tpu", tpu_runner, "pallas"
        else:
            suite = str(w.get("suite", "tritonbench"))
            runner = str(w.get("runner", ""))
            backend = str(w.get("backend", "triton"))
        out.append(Job(alias, flag, suite, backend, runner, str(w.get("image", "")),
                       str(w.get("runtime-version", "")), str(w.get("container-options", "")), kin))
    return out, defaults


def parse_nightly(text: str | None) -> tuple[set, str]:
    t = text or ""
    flags = set(re.findall(r"(run_\w+):\s*'true'", t))
    m = re.search(r"env_vars:\s*'([^']*)'", t)
    return flags, (m.group(1) if m else "")


def _env_pairs(s: str) -> dict:
    return dict(re.findall(r"\b(HELION_[A-Z_]+)=(\S+)", s or ""))


def parse_bench_yml(text: str | None) -> dict:
    d = _load_yaml(text)
    job = ((d.get("jobs") or {}).get("benchmark") or {})
    env = {k: str(v) for k, v in (job.get("env") or {}).items() if str(k).startswith("HELION_AUTOTUNE")
           or k in ("HELION_BENCHMARK_KERNEL_TIMEOUT",)}
    t = text or ""
    torch = re.findall(r'torch==([0-9][\w.*]*)', t)
    steps = job.get("steps") or []
    tb_cmd, lin_cmd, lin_install = "", "", ""
    for s in steps:
        if not isinstance(s, dict):
            continue
        name = str(s.get("name", ""))
        run = str(s.get("run", ""))
        if name.startswith("Run TritonBench") or (not tb_cmd and "benchmarks/run.py" in run and "--op" in run):
            tb_cmd += run
        elif "run_linattn" in run:
            lin_cmd += run
        elif "Linear-Attention" in name and "install" in name.lower():
            lin_install += run
    flags = tuple(sorted(set(re.findall(r"(--cudagraph|--measure-compile-time|--latency-measure-mode \S+|"
                                        r"--input-sample-mode \S+|--atol \S+|--rtol \S+)", tb_cmd))))
    aot_aliases = set()
    if "AOTAutotuneCache" in lin_cmd:
        gated = re.findall(r'inputs\.alias \}\}" == "(\w+)"', lin_cmd)
        aot_aliases = set(gated) if gated else {"*"}
    fla = re.findall(r"flash-linear-attention@([0-9a-fA-Fv.]+)", lin_install)
    return dict(env=env, torch=torch[0] if torch else None, flags=flags,
                tb_passes=len(re.findall(r"python benchmarks/run\.py\s*\\?\s*\n?\s*--op", tb_cmd)) or
                tb_cmd.count("python benchmarks/run.py"),
                lin_aot=frozenset(aot_aliases), fla=fla[0] if fla else None,
                lin_upload_ok="uv pip install pip" in lin_install)


def _const(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def parse_run_py(text: str | None) -> dict:
    maps, base, impls, maxn, mods = {}, {}, {}, None, {}
    if not text:
        return dict(maps=maps, base=base, impls=impls, maxn=maxn, mods=mods)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return dict(maps=maps, base=base, impls=impls, maxn=maxn, mods=mods)
    for node in tree.body:
        if isinstance(node, ast.AnnAssign):
            tgt, val = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            tgt, val = node.targets[0], node.value
        else:
            continue
        if not isinstance(tgt, ast.Name) or val is None:
            continue
        if tgt.id == "MAX_NUM_INPUTS":
            maxn = _const(val)
        elif tgt.id == "KERNEL_MAPPINGS" and isinstance(val, ast.Dict):
            for k, v in zip(val.keys, val.values):
                kk = _const(k)
                if not isinstance(kk, str):
                    continue
                opts = {}
                if isinstance(v, ast.Tuple) and len(v.elts) > 1 and isinstance(_const(v.elts[1]), str):
                    mods[kk] = _const(v.elts[1])
                if isinstance(v, ast.Tuple):
                    for e in v.elts:
                        if isinstance(e, ast.Dict):
                            for a, b in zip(e.keys, e.values):
                                ka = _const(a)
                                if isinstance(ka, str):
                                    opts[ka] = _const(b)
                maps[kk] = (opts.get("num_inputs"), tuple(opts.get("remove_flags") or ()))
        elif tgt.id == "KERNEL_METRIC_MAPPINGS" and isinstance(val, ast.Dict):
            for k, v in zip(val.keys, val.values):
                kk, dv = _const(k), _const(v)
                if not isinstance(kk, str) or not isinstance(dv, dict):
                    continue
                base[kk] = next((a for a, b in dv.items() if b == "baseline"), None)
                tri = next((a for a, b in dv.items() if b == "triton_speedup"), None)
                tc = next((a for a, b in dv.items() if b == "torch_compile_speedup"), None)
                impls[kk] = (tri, tc)
    return dict(maps=maps, base=base, impls=impls, maxn=maxn, mods=mods)


def parse_run_tpu(text: str | None) -> list:
    if not text:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in tree.body:
        tgt = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(tgt, ast.Name) and tgt.id == "KERNEL_MAPPINGS" and isinstance(node.value, ast.Dict):
            return [k for k in (_const(x) for x in node.value.keys) if isinstance(k, str)]
    return []


def parse_linattn(text: str | None) -> dict | None:
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    env: dict = {}
    for node in tree.body:
        tgt = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not isinstance(tgt, ast.Name) or node.value is None:
            continue
        v = node.value
        if isinstance(v, (ast.List, ast.Tuple)) and any(isinstance(e, ast.Starred) for e in v.elts):
            vals = []
            for e in v.elts:
                if isinstance(e, ast.Starred) and isinstance(e.value, ast.Name):
                    ref = env.get(e.value.id)
                    vals.extend(list(ref) if ref is not None else [])
                else:
                    c = _const(e)
                    if c is not None:
                        vals.append(c)
            env[tgt.id] = vals
        else:
            c = _const(v)
            if c is not None:
                env[tgt.id] = c
    variants = env.get("VARIANTS") or []
    if isinstance(variants, dict):
        variants = list(variants)
    fwd_only = set(env.get("FUSED_PREAMBLE_VARIANTS") or {}) | set(env.get("VARLEN_VARIANTS") or {})
    varlen = set(env.get("VARLEN_VARIANTS") or {})
    shapes, vshapes = _first_strings(tree, "SHAPES"), _first_strings(tree, "VARLEN_SHAPES")
    return dict(variants=list(variants), fwd_only=fwd_only, varlen=varlen, shapes=shapes, vshapes=vshapes)


def _first_strings(tree, name: str) -> list:
    """Names of the rows of a module-level list of tuples (first element of each tuple), read
    element by element so a row like ("x", [1024] * 8, 96, 128) still counts."""
    for node in tree.body:
        tgt = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(tgt, ast.Name) and tgt.id == name and isinstance(node.value, ast.List):
            out = []
            for e in node.value.elts:
                if isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant):
                    out.append(str(e.elts[0].value))
            return out
    return []


_PRETUNED_BASE = re.compile(r'\(\s*"([A-Za-z][A-Za-z0-9_]*)",\s*(?:\(?lambda|torch\.compile|_[A-Za-z]|'
                            r'[a-z][a-z_0-9]*(?:_call|_pytorch|_torch)\b)')


def parse_pretuned_kernel(src: str | None) -> dict:
    src = src or ""
    names = sorted(set(_PRETUNED_BASE.findall(src)))
    cg = re.search(r"def use_cudagraph\(\)[^:]*:\s*(?:\"\"\"(?:.|\n)*?\"\"\"\s*)?return (True|False)", src)
    return dict(baselines=tuple(names), cudagraph=(cg.group(1) == "True") if cg else False,
                nshapes=_count_shapes(src))


def _count_shapes(src: str) -> int:
    """Distinct integer tuples in lists bound to a name containing "shape" (0 when none)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return 0
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            tg = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(tg, ast.Name) and "shape" in tg.id.lower() and isinstance(node.value, (ast.List, ast.Tuple)):
                for e in node.value.elts:
                    v = _const(e)
                    if isinstance(v, tuple) and v and all(isinstance(x, int) for x in v):
                        seen.add(v)
    return len(seen)


@dataclass
class NightFacts:
    sha: str
    jobs: list = field(default_factory=list)
    defaults: dict = field(default_factory=dict)
    nightly_flags: set = field(default_factory=set)
    nightly_env: str = ""
    bench: dict = field(default_factory=dict)
    runpy: dict = field(default_factory=dict)
    tpu_kernels: list = field(default_factory=list)
    tpu_runner: str = ""
    tpu_tool: tuple = ()
    tpu_env: dict = field(default_factory=dict)
    tpu_compile: bool = False
    bridge_fp32: frozenset = frozenset()
    tb_pin: str = ""
    linattn: dict | None = None
    pretuned: dict | None = None

    def nightly_jobs(self) -> list:
        return [j for j in self.jobs if j.flag is None or j.flag in self.nightly_flags]

    def kernels_for(self, job: Job) -> list:
        raw = self.defaults.get(job.kernels_input) if job.kernels_input else None
        if job.suite == "linattn":
            allv = (self.linattn or {}).get("variants", [])
            names = [k.strip() for k in (raw or "").split(",") if k.strip()] or list(allv)
            names = [k for k in names if k in allv]
            out = []
            fo = (self.linattn or {}).get("fwd_only", set())
            for v in names:
                out.append(v)
                if v not in fo:
                    out.append(f"{v}-bwd")
            return out
        if job.suite == "tpu":
            if raw in (None, "", "all"):
                return list(self.tpu_kernels)
            return [k.strip() for k in raw.split(",") if k.strip()]
        return [k.strip() for k in (raw or "").split(",") if k.strip()]


class Facts:
    def __init__(self, blobs: Blobs, repo):
        self.b = blobs
        self.repo = repo
        self._memo: dict = {}
        self._parsed: dict = {}

    def _p(self, fn, sha, path, *extra):
        oid = self.b.oid(sha, path)
        key = (fn.__name__, oid, extra)
        if key not in self._parsed:
            self._parsed[key] = fn(self.b.text(sha, path) if oid else None, *extra)
        return self._parsed[key]

    def at(self, sha: str) -> NightFacts:
        if sha in self._memo:
            return self._memo[sha]
        f = NightFacts(sha)
        tpu_txt = self.b.text(sha, TPU_WF) or ""
        m = re.search(r"runs-on:\s*(\S+)", tpu_txt)
        f.tpu_runner = m.group(1) if m else ""
        br = self.b.text(sha, BRIDGE_WF) or ""
        m = re.search(r"runs-on:\s*(\S+)", br)
        bridge_runner = m.group(1) if m else f.tpu_runner
        m = re.search(r"case \"\$kernel\" in\s*\n\s*([\w|]+)\)\s*PRECISION=fp32", br)
        f.bridge_fp32 = frozenset(m.group(1).split("|")) if m else frozenset()
        dkey = ("dispatch", self.b.oid(sha, DISPATCH), f.tpu_runner, bridge_runner)
        if dkey not in self._parsed:
            self._parsed[dkey] = parse_dispatch(self.b.text(sha, DISPATCH), f.tpu_runner, bridge_runner)
        f.jobs, f.defaults = self._parsed[dkey]
        f.nightly_flags, f.nightly_env = self._p(parse_nightly, sha, NIGHTLY)
        f.bench = self._p(parse_bench_yml, sha, BENCH)
        f.runpy = self._p(parse_run_py, sha, RUN_PY)
        f.tpu_kernels = self._p(parse_run_tpu, sha, RUN_TPU)
        f.linattn = self._p(parse_linattn, sha, RUN_LIN)
        tool = []
        for path in (TPU_WF, *TPU_ACTIONS):
            t = self.b.text(sha, path) or ""
            tool += re.findall(r"'((?:jax|jaxlib|libtpu)==[^']+)'", t)
            tool += [f"torch=={x}" for x in re.findall(r'torch==([0-9][\w.]*)', t)]
            tool += [f"torch_tpu@{x[:10]}" for x in re.findall(r"torch_tpu[^\n]*?([0-9a-f]{40})", t)]
        pin = (self.b.text(sha, TPU_PIN) or "").strip()
        if pin:
            tool.append(f"torch_tpu@{pin[:10]}")
        f.tpu_tool = tuple(sorted(set(tool)))
        d = _load_yaml(tpu_txt)
        f.tpu_env = {k: str(v) for k, v in (((d.get("jobs") or {}).get("benchmark") or {}).get("env") or {}).items()
                     if str(k).startswith("HELION_AUTOTUNE")}
        f.tb_pin = (self.b.text(sha, TB_PIN) or "").strip()[:10]
        f.tpu_compile = "HELION_MEASURE_COMPILE_TIME=1" in tpu_txt
        f.pretuned = self._pretuned(sha)
        self._memo[sha] = f
        return f

    def _pretuned(self, sha: str) -> dict | None:
        run = self.b.text(sha, P_RUN)
        if not run:
            return None
        m = re.search(r"^KERNELS\s*=\s*\[(.*?)^\]", run, re.S | re.M)
        kernels = re.findall(r'^\s*"([a-z0-9_]+)"', m.group(1), re.M) if m else []
        from .gitio import ls_tree
        key = ("pt_tree", self.b.oid(sha, "pretuned_kernels"))
        if key not in self._parsed:
            self._parsed[key] = ls_tree(self.repo, sha, "pretuned_kernels")
        files = self._parsed[key]
        out = {}
        for k in kernels:
            info = dict(self._p(parse_pretuned_kernel, sha, f"pretuned_kernels/{k}/{k}.py"))
            cfg = {}
            for p in files:
                mm = re.match(rf"pretuned_kernels/{k}/_helion_aot_{k}_cuda_(sm\d+)\.py$", p)
                if mm:
                    cfg[mm.group(1)] = self.b.oid(sha, p)
            info["cfg"] = cfg
            info["src"] = self.b.oid(sha, f"pretuned_kernels/{k}/{k}.py")
            out[k] = info
        bench = self.b.text(sha, P_BENCH) or ""
        wf = self.b.text(sha, P_WF) or ""
        disp = _load_yaml(self.b.text(sha, P_DISPATCH))
        runners = {}
        for job in (disp.get("jobs") or {}).values():
            w = (job or {}).get("with") or {}
            if w.get("alias"):
                runners[str(w["alias"])] = (str(w.get("runner", "")), str(w.get("image", "")),
                                            str(w.get("runtime-version", "")))
        torch = re.findall(r'torch==([0-9][\w.*]*)', wf)
        return dict(kernels=out, order=kernels, l2clear=("cache_clear" in bench or "clear_l2" in bench.lower()),
                    bench_oid=self.b.oid(sha, P_BENCH), torch=torch[0] if torch else None,
                    vllm="vllm" in wf.lower(), runners=runners,
                    flags=set(re.findall(r"(run_\w+):\s*'true'", self.b.text(sha, P_NIGHTLY) or "")))
