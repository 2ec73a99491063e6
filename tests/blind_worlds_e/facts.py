"""Read what runs at a sha from the real Helion files (ast / yaml / regex; no repo code is run)."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import yaml

from .repo import Repo

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
BENCH_TPU = ".github/workflows/benchmark_tpu.yml"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_BENCH = ".github/workflows/benchmark_pretuned.yml"


@dataclass
class Lane:
    alias: str           # platform_short the rows land on
    lane: str            # gpu | linattn | tpu
    runner: str
    image: str
    runtime: str
    kernels: tuple
    job: str


@dataclass
class Facts:
    sha: str
    lanes: list = field(default_factory=list)
    dispatch_text: str = ""
    has_latency: bool = False
    has_compile: bool = False
    global_cudagraph: bool = True
    latency_mode: str = ""
    torch_pin: str = ""
    autotune_env: dict = field(default_factory=dict)       # GPU lanes
    autotune_env_tpu: dict = field(default_factory=dict)
    kmap: dict = field(default_factory=dict)                # kernel -> {"cg": bool, "n": int|None}
    max_inputs: int | None = None
    amd_arch: bool = False
    linattn_shapes: tuple = ()
    linattn_varlen: tuple = ()
    pretuned: bool = False
    p_dispatch_text: str = ""
    p_aliases: dict = field(default_factory=dict)          # alias -> (runner, image)
    p_torch_pin: str = ""
    p_kernels: dict = field(default_factory=dict)          # kernel -> {"baselines", "cg", "hw": {alias: blob}}


def _yaml(text):
    try:
        return yaml.safe_load(text) or {}
    except Exception:
        return {}


def _inputs(doc):
    on = doc.get("on", doc.get(True, {})) or {}
    wd = (on.get("workflow_dispatch") or {}) if isinstance(on, dict) else {}
    return (wd.get("inputs") or {}) if isinstance(wd, dict) else {}


def parse_dispatch(text: str, nightly_text: str):
    doc = _yaml(text)
    inputs = _inputs(doc)
    defaults = {k: [x.strip() for x in str(v.get("default", "")).split(",") if x.strip()]
                for k, v in inputs.items() if k.startswith("kernels") and isinstance(v, dict)}
    nightly_on = set(re.findall(r"(run_\w+):\s*'true'", nightly_text or ""))
    jobs = doc.get("jobs") or {}
    lanes = []
    for name, job in jobs.items():
        w = job.get("with") or {}
        if "alias" not in w:
            continue
        related = [job] + [jobs.get(n) or {} for n in ([job.get("needs")] if isinstance(job.get("needs"), str) else (job.get("needs") or []))]
        blob = " ".join(str(r.get("if", "")) + " " + str((r.get("with") or {}).get("kernels", "")) for r in related)
        runs = re.findall(r"(run_\w+)", blob)
        if runs and not any(r in nightly_on for r in runs):
            continue
        kin = re.findall(r"inputs\.(kernels\w*)", blob)
        kin = kin[0] if kin else "kernels"
        alias = str(w["alias"])
        if alias == "tpu_bridge":
            alias = "tpu"
        lane = "tpu" if alias == "tpu" else ("linattn" if kin == "kernels_linattn" else "gpu")
        ks = list(defaults.get(kin, []))
        if lane == "linattn":
            ks = ks + [f"{k}-bwd" for k in ks if not k.endswith(("_fused", "_varlen"))]
        lanes.append(Lane(alias, lane, str(w.get("runner", "")), str(w.get("image", "")),
                          str(w.get("runtime-version", "")), tuple(ks), name))
    return lanes


def _autotune_env(*texts):
    env = {}
    for t in texts:
        for k, v in re.findall(r"(HELION_AUTOTUNE_[A-Z_]+)\s*[:=]\s*['\"]?([^'\"\s,}]+)", t or ""):
            if "LOG" in k or "CACHE" in k:
                continue
            env[k] = v
    return env


def parse_kernel_mappings(text: str):
    kmap, max_inputs = {}, None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return kmap, max_inputs
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        if target == "MAX_NUM_INPUTS":
            try:
                max_inputs = int(ast.literal_eval(value))
            except Exception:
                pass
        if target != "KERNEL_MAPPINGS" or not isinstance(value, ast.Dict):
            continue
        for k, v in zip(value.keys, value.values):
            try:
                name = ast.literal_eval(k)
            except Exception:
                continue
            opts = {}
            if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
                d = v.elts[-1]
                for dk, dv in zip(d.keys, d.values):
                    try:
                        opts[ast.literal_eval(dk)] = ast.literal_eval(dv)
                    except Exception:
                        pass
            kmap[name] = {"cg": "--cudagraph" not in (opts.get("remove_flags") or []),
                          "n": opts.get("num_inputs")}
    return kmap, max_inputs


def _literal_assign(text, name):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        tgt = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tgt = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt = node.target.id
        if tgt == name:
            try:
                return ast.literal_eval(node.value)
            except Exception:
                return None
    return None


def parse_pretuned_kernel(text: str):
    baselines, cg = [], False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ("torch",), False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Tuple) and sub.elts and isinstance(sub.elts[0], ast.Constant) \
                        and isinstance(sub.elts[0].value, str):
                    baselines.append(sub.elts[0].value)
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    cg = bool(sub.value.value)
    return tuple(dict.fromkeys(baselines)) or ("torch",), cg


class FactReader:
    def __init__(self, repo: Repo):
        self.repo = repo
        self._cache = {}

    def facts(self, sha: str) -> Facts:
        tr = self.repo.tree(sha)
        key = tuple(sorted((p, b) for p, b in tr.items()
                           if not p.startswith("pretuned_kernels/") or p.endswith(".py")))
        if key in self._cache:
            f = self._cache[key]
            return Facts(**{**f.__dict__, "sha": sha})
        f = self._parse(sha)
        self._cache[key] = f
        return f

    def _parse(self, sha: str) -> Facts:
        show = lambda p: self.repo.show(sha, p) or ""
        f = Facts(sha=sha)
        f.dispatch_text = show(DISPATCH)
        nightly = show(NIGHTLY)
        f.lanes = parse_dispatch(f.dispatch_text, nightly)
        bench = show(BENCH)
        m = re.findall(r"--metrics\s+(\S+)", bench)
        f.has_latency = bool(m) and "latency" in m[-1]
        f.has_compile = "--measure-compile-time" in bench
        f.global_cudagraph = "--cudagraph" in bench
        lm = re.findall(r"--latency-measure-mode\s+(\S+)", bench)
        f.latency_mode = lm[-1] if lm else ""
        tp = re.findall(r"torch==([0-9][0-9.*]*)", bench)
        f.torch_pin = tp[0] if tp else ("bundled" if "torch" in bench else "")
        f.autotune_env = _autotune_env(bench, nightly)
        f.autotune_env_tpu = _autotune_env(show(BENCH_TPU), nightly)
        f.kmap, f.max_inputs = parse_kernel_mappings(show("benchmarks/run.py"))
        f.amd_arch = "gcnArchName" in show("helion/_compat.py") or "gcnArchName" in show("benchmarks/run.py")
        la = show("benchmarks/run_linattn.py")
        if la:
            sh = _literal_assign(la, "SHAPES") or []
            f.linattn_shapes = tuple(s[0] for s in sh)
            vs = _literal_assign(la, "VARLEN_SHAPES") or []
            f.linattn_varlen = tuple(s[0] for s in vs)
        tr = self.repo.tree(sha)
        pn = show(P_NIGHTLY)
        if pn:
            f.pretuned = True
            f.p_dispatch_text = show(P_DISPATCH)
            pdoc = _yaml(f.p_dispatch_text)
            for name, job in (pdoc.get("jobs") or {}).items():
                w = job.get("with") or {}
                if "alias" in w:
                    f.p_aliases[str(w["alias"])] = (str(w.get("runner", "")), str(w.get("image", "")))
            pt = re.findall(r"torch==([0-9][0-9.*]*)", show(P_BENCH))
            f.p_torch_pin = pt[0] if pt else ""
            run = show("pretuned_kernels/run.py")
            kernels = _literal_assign(run, "KERNELS") or []
            hwmap = _literal_assign(run, "_HARDWARE_BY_COMPUTE") or {"sm90": "h100", "sm100": "b200"}
            for k in kernels:
                src = show(f"pretuned_kernels/{k}/{k}.py")
                if not src:
                    continue
                bl, cg = parse_pretuned_kernel(src)
                hw = {}
                for p, b in tr.items():
                    mm = re.match(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py$", p)
                    if mm and mm.group(1) in hwmap:
                        hw[hwmap[mm.group(1)]] = b
                f.p_kernels[k] = {"baselines": bl, "cg": cg, "hw": hw}
        return f
