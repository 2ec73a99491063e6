"""What a Helion nightly runs at one sha, read from the real files (parsed, never imported)."""
from __future__ import annotations

import ast
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import yaml

FILES = [
    ".github/workflows/benchmark_dispatch.yml",
    ".github/workflows/benchmark_nightly.yml",
    ".github/workflows/benchmark.yml",
    ".github/workflows/benchmark_tpu.yml",
    ".github/workflows/benchmark_pretuned.yml",
    ".github/workflows/benchmark_pretuned_dispatch.yml",
    ".github/workflows/benchmark_pretuned_nightly.yml",
    "benchmarks/run.py",
    "benchmarks/run_linattn.py",
    "benchmarks/run_tpu.py",
    "pretuned_kernels/run.py",
    "pretuned_kernels/_bench.py",
]

RUN_FLAG_ALIAS = {"run_h100": "h100", "run_b200": "b200", "run_b200_cute": "b200_cute",
                  "run_mi350x": "mi350x", "run_mi325x": "mi325x", "run_tpu": "tpu"}


class Repo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._blob_cache: dict[str, str] = {}

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True,
                              check=True).stdout

    def tree(self, sha: str, paths: list[str]) -> dict[str, str]:
        out = self.git("ls-tree", "-r", sha, "--", *paths)
        res = {}
        for line in out.splitlines():
            meta, p = line.split("\t", 1)
            res[p] = meta.split()[2]
        return res

    def blob(self, blob_id: str) -> str:
        if blob_id not in self._blob_cache:
            self._blob_cache[blob_id] = self.git("cat-file", "blob", blob_id)
        return self._blob_cache[blob_id]


def _yaml(text: str) -> dict:
    try:
        d = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    return d if isinstance(d, dict) else {}


def _inputs(d: dict) -> dict:
    on = d.get("on", d.get(True, {})) or {}
    wd = (on.get("workflow_dispatch") or {}) if isinstance(on, dict) else {}
    return (wd.get("inputs") or {}) if isinstance(wd, dict) else {}


@lru_cache(maxsize=256)
def parse_dispatch(text: str) -> dict:
    d = _yaml(text)
    inputs = _inputs(d)
    kernels = {}
    run_defaults = {}
    for name, spec in inputs.items():
        spec = spec or {}
        if name.startswith("kernels"):
            kernels[name] = [k.strip() for k in str(spec.get("default", "")).split(",") if k.strip()]
        if name.startswith("run_"):
            run_defaults[name] = str(spec.get("default", "")).lower() == "true"
    aliases = {}
    for job in (d.get("jobs") or {}).values():
        w = (job or {}).get("with") or {}
        alias = w.get("alias")
        if alias and alias not in aliases:
            aliases[str(alias)] = {"runner": str(w.get("runner", "")), "image": str(w.get("image", "")),
                                   "runtime": str(w.get("runtime-version", "")),
                                   "backend": str(w.get("backend", ""))}
    return {"kernels": kernels, "run_defaults": run_defaults, "aliases": aliases}


@lru_cache(maxsize=256)
def parse_nightly(text: str) -> dict:
    runs = dict(re.findall(r"(run_\w+):\s*'(true|false)'", text))
    env = re.search(r"env_vars:\s*'([^']*)'", text)
    return {"runs": {k: v == "true" for k, v in runs.items()}, "env": env.group(1) if env else ""}


@lru_cache(maxsize=256)
def parse_bench_yml(text: str) -> dict:
    autotune = tuple(sorted(set(re.findall(r"(HELION_AUTOTUNE_(?:BUDGET|EFFORT|MAX|PRECOMPILE|COMPILE_TIMEOUT|RANDOM_SEED|ACCURACY|REBENCHMARK)\w*)\s*[:=]\s*\"?([\w.]+)", text))))
    pins = tuple(sorted(set(re.findall(r"torch==[\w.*+]+|whl/nightly|--pre torch|triton==[\w.*+]+|pytorch-triton|torch-nightly", text))))
    latency_mode = tuple(sorted(set(re.findall(r"--latency-measure-mode\s+(\w+)", text))))
    cudagraph = "--cudagraph" in text
    return {"autotune": autotune, "pins": pins, "latency_mode": latency_mode, "cudagraph_flag": cudagraph}


@lru_cache(maxsize=256)
def parse_tpu_yml(text: str) -> dict:
    pins = tuple(sorted(set(re.findall(r"jax(?:lib)?(?:\[tpu\])?==[\w.]+|libtpu[\w-]*==[\w.]+|libtpu.*?0\.0\.\d+|torch_tpu\w*[:=@ ]+[0-9a-f]{12,40}|torch==[\w.*+]+", text))))
    return {"pins": pins}


def _literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


@lru_cache(maxsize=256)
def parse_run_py(text: str) -> dict:
    out = {"max_num_inputs": 20, "kernels": {}}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        if target == "MAX_NUM_INPUTS":
            v = _literal(value)
            if isinstance(v, int):
                out["max_num_inputs"] = v
        if target == "KERNEL_MAPPINGS" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                name = _literal(k)
                if not isinstance(name, str):
                    continue
                opts = {}
                module = None
                if isinstance(v, ast.Tuple):
                    if len(v.elts) >= 2:
                        module = _literal(v.elts[1])
                    if v.elts and isinstance(v.elts[-1], ast.Dict):
                        opts = _literal(v.elts[-1]) or {}
                out["kernels"][name] = {
                    "module": module if isinstance(module, str) else None,
                    "no_cudagraph": "--cudagraph" in (opts.get("remove_flags") or []),
                    "num_inputs": opts.get("num_inputs") if isinstance(opts.get("num_inputs"), int) else None,
                }
    return out


@lru_cache(maxsize=64)
def parse_linattn(text: str) -> dict:
    vals = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {"shapes": [], "varlen_shapes": [], "variants": [], "fwd_only": []}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            t = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(t, ast.Name) and node.value is not None:
                v = _literal(node.value)
                if v is not None:
                    vals[t.id] = v
    shapes = [s[0] for s in vals.get("SHAPES", []) if isinstance(s, (tuple, list))]
    varlen = [s[0] for s in vals.get("VARLEN_SHAPES", []) if isinstance(s, (tuple, list))]
    fwd_only = list(vals.get("FUSED_PREAMBLE_VARIANTS", {})) + list(vals.get("VARLEN_VARIANTS", {}))
    variants = list(vals.get("DENSE_VARIANTS", [])) + fwd_only
    if not variants and isinstance(vals.get("VARIANTS"), list):
        variants = vals["VARIANTS"]
    return {"shapes": shapes, "varlen_shapes": varlen, "variants": variants, "fwd_only": fwd_only,
            "varlen_variants": list(vals.get("VARLEN_VARIANTS", {}))}


@lru_cache(maxsize=64)
def parse_run_tpu(text: str) -> list:
    m = re.search(r"^KERNEL_MAPPINGS[^=]*=\s*\{(.*?)^\}", text, re.S | re.M)
    if not m:
        return []
    return re.findall(r'^    "([\w-]+)":', m.group(1), re.M)


@lru_cache(maxsize=64)
def parse_pretuned_kernels(text: str) -> list:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNELS" for t in node.targets):
            v = _literal(node.value)
            return list(v) if isinstance(v, list) else []
    return []


@lru_cache(maxsize=512)
def parse_pretuned_module(text: str) -> dict:
    m = re.search(r"def _baselines\(.*?\n(.*?)(?=\ndef |\Z)", text, re.S)
    names = re.findall(r'\(\s*"(\w+)",', m.group(1)) if m else []
    if not names:
        names = sorted(set(re.findall(r'"(torch_compile|torch|cutlass|deepgemm|flashinfer|vllm|quack|liger|triton|cublas|tilegym\w*)"', text)))[:3] or ["torch"]
    cg = re.search(r"def use_cudagraph\(.*?\n(?:.*\n)*?\s+return (True|False)", text)
    nshapes = len(re.findall(r"^\s+\(\d+,\s*\d+", text, re.M))
    return {"baselines": tuple(dict.fromkeys(names)), "cudagraph": bool(cg and cg.group(1) == "True"),
            "nshapes": max(4, min(nshapes, 24)) if nshapes else 8}


class Facts:
    """Everything one nightly at ``sha`` would run, parsed from the real files."""

    def __init__(self, repo: Repo, sha: str):
        self.sha = sha
        t = repo.tree(sha, FILES + ["pretuned_kernels"])
        self.blobs = {p: b for p, b in t.items() if p in FILES}
        get = lambda p: repo.blob(t[p]) if p in t else ""
        self.dispatch = parse_dispatch(get(FILES[0]))
        self.has_nightly_file = FILES[1] in t
        self.nightly = parse_nightly(get(FILES[1]))
        self.bench = parse_bench_yml(get(FILES[2]))
        self.tpu = parse_tpu_yml(get(FILES[3]))
        self.run = parse_run_py(get("benchmarks/run.py"))
        self.linattn = parse_linattn(get("benchmarks/run_linattn.py")) if "benchmarks/run_linattn.py" in t else None
        self.tpu_kernels = parse_run_tpu(get("benchmarks/run_tpu.py"))
        self.pretuned_active = FILES[6] in t and "pretuned_kernels/run.py" in t
        self.pretuned_bench_blob = t.get("pretuned_kernels/_bench.py")
        pd = parse_dispatch(get(FILES[5])) if FILES[5] in t else {"aliases": {}}
        self.pretuned_aliases = pd["aliases"]
        self.pretuned = {}
        if self.pretuned_active:
            names = parse_pretuned_kernels(get("pretuned_kernels/run.py"))
            for name in names:
                mod = t.get(f"pretuned_kernels/{name}/{name}.py")
                if not mod:
                    continue
                aot = {}
                for p, b in t.items():
                    mm = re.match(rf"pretuned_kernels/{re.escape(name)}/_helion_aot_{re.escape(name)}_cuda_(sm\d+)\.py$", p)
                    if mm:
                        aot[{"sm90": "h100", "sm100": "b200"}.get(mm.group(1), mm.group(1))] = b
                info = parse_pretuned_module(repo.blob(mod))
                self.pretuned[name] = {**info, "aot": aot}

    # which platforms the nightly cron runs
    def platforms(self) -> list[str]:
        aliases = self.dispatch["aliases"]
        runs = self.nightly["runs"] if self.has_nightly_file else self.dispatch["run_defaults"]
        out = []
        for flag, alias in RUN_FLAG_ALIAS.items():
            if runs.get(flag) and alias in aliases:
                out.append(alias)
        return out

    def linattn_on(self, plat: str) -> bool:
        runs = self.nightly["runs"] if self.has_nightly_file else {}
        return bool(self.linattn) and bool(runs.get(f"run_{plat}_linattn")) and "kernels_linattn" in self.dispatch["kernels"]

    def kernels_for(self, plat: str) -> list[tuple[str, str]]:
        """(kernel, suite) pairs: suite is 'gpu', 'linattn' or 'tpu'."""
        k = self.dispatch["kernels"]
        if plat == "b200_cute":
            return [(x, "gpu") for x in k.get("kernels_cute", [])]
        if plat == "tpu":
            names = []
            for inp in ("kernels_tpu", "kernels_tpu_bridge"):
                v = k.get(inp, [])
                names += self.tpu_kernels if v == ["all"] else v
            return [(x, "tpu") for x in dict.fromkeys(names)]
        out = [(x, "gpu") for x in k.get("kernels", []) if x in self.run["kernels"]]
        if plat in ("h100", "b200") and self.linattn_on(plat):
            la = self.linattn
            for v in k.get("kernels_linattn", []):
                if v not in la["variants"]:
                    continue
                out.append((v, "linattn"))
                if v not in la["fwd_only"]:
                    out.append((v + "-bwd", "linattn"))
        return out

    def gpu_opts(self, kernel: str) -> dict:
        base = kernel
        o = self.run["kernels"].get(base) or {"no_cudagraph": False, "num_inputs": None, "module": None}
        n = min(o["num_inputs"] or self.run["max_num_inputs"], self.run["max_num_inputs"])
        return {"no_cudagraph": o["no_cudagraph"], "num_inputs": n, "module": o["module"]}

    def linattn_shapes(self, kernel: str) -> list[str]:
        la = self.linattn
        v = kernel[:-4] if kernel.endswith("-bwd") else kernel
        return list(la["varlen_shapes"] if v in la.get("varlen_variants", []) else la["shapes"])
