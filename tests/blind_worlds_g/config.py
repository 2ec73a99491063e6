"""What a nightly ran, read from the real Helion files at the commit it benchmarked.

Why: the platforms, kernels, shape counts, cudagraph flags, runners/images, compile-time flag,
autotune env and the pretuned suite all change over Helion's history; a world is only realistic
if each simulated night runs exactly what the workflow files and `benchmarks/run.py` said that
day. Everything is parsed (YAML, AST, regex); no Helion code is imported or executed.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache

import yaml

DEVICE = {
    "h100": "NVIDIA H100 80GB HBM3",
    "b200": "NVIDIA B200",
    "mi325x": "AMD Instinct MI325X",
    "mi350x": "AMD Instinct MI350X",
    "tpu": "TPU v6 lite",
}
COMPUTE = {"h100": "sm90", "b200": "sm100"}


@dataclass(frozen=True)
class Job:
    alias: str            # CI alias (artifact prefix)
    platform_short: str   # dashboard column
    runner: str
    image: str
    runtime: str
    backend: str | None
    suite: str            # "gpu" | "linattn" | "tpu"
    kernels: tuple


@dataclass
class NightConfig:
    sha: str
    jobs: list = field(default_factory=list)
    options: dict = field(default_factory=dict)      # kernel -> (no_cudagraph: bool, num_inputs: int|None)
    linattn_shapes: tuple = ()
    varlen_shapes: tuple = ()
    varlen_variants: frozenset = frozenset()
    measure_compile: bool = False
    emits_latency: bool = False
    emits_shapes: bool = False
    bench_blob: str = ""
    pretuned_bench_blob: str = ""
    tpu_pins: tuple = ()                             # jax/jaxlib/libtpu pins of benchmark_tpu.yml
    autotune_env: tuple = ()
    torch_pin: str | None = None
    pretuned: dict | None = None                     # alias -> {kernel: (baselines tuple, cudagraph, aot blob)}

    def platforms(self) -> dict:
        """platform_short -> {kernel: Job}."""
        out: dict = {}
        for j in self.jobs:
            for k in j.kernels:
                out.setdefault(j.platform_short, {})[k] = j
        return out


def _yaml(text: str | None):
    if not text:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


@lru_cache(maxsize=None)
def parse_nightly_flags(text: str | None) -> frozenset:
    if not text:
        return frozenset()
    return frozenset(re.findall(r"(run_\w+):\s*'true'", text))


@lru_cache(maxsize=None)
def parse_dispatch(text: str | None, linattn_text: str | None) -> tuple:
    """-> (input defaults {name: tuple}, jobs [(run_flag, kernels_input, with-dict)])."""
    doc = _yaml(text)
    if not isinstance(doc, dict):
        return {}, []
    on = doc.get(True) or doc.get("on") or {}
    inputs = ((on or {}).get("workflow_dispatch") or {}).get("inputs") or {}
    defaults = {}
    for name, spec in inputs.items():
        if str(name).startswith("kernels") and isinstance(spec, dict) and isinstance(spec.get("default"), str):
            defaults[name] = tuple(k.strip() for k in spec["default"].split(",") if k.strip())
    jobs = doc.get("jobs") or {}
    out = []
    for name, job in jobs.items():
        w = (job or {}).get("with") or {}
        if "alias" not in w:
            continue
        needs = job.get("needs")
        needs = [needs] if isinstance(needs, str) else (needs or [])
        texts = [str(job.get("if", "")), str(w.get("kernels", ""))]
        for n in needs:
            nj = jobs.get(n) or {}
            texts += [str(nj.get("if", "")), str(((nj.get("with") or {}).get("kernels", "")))]
        blob = " ".join(texts)
        flag = re.search(r"inputs\.(run_\w+)", blob)
        kin = re.search(r"inputs\.(kernels\w*)", blob)
        out.append((flag.group(1) if flag else None, kin.group(1) if kin else "kernels",
                    tuple(sorted((str(k), str(v)) for k, v in w.items()))))
    return defaults, out


@lru_cache(maxsize=None)
def parse_linattn(text: str | None) -> tuple:
    """-> (SHAPES names, VARLEN_SHAPES names, dense variants, varlen/fused variants)."""
    if not text:
        return (), (), (), (), ()
    tree = ast.parse(text)
    vals = {}
    for node in tree.body:
        tgt = None
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt in ("SHAPES", "VARLEN_SHAPES") and isinstance(val, ast.List):
            vals[tgt] = tuple(e.elts[0].value for e in val.elts
                              if isinstance(e, ast.Tuple) and isinstance(e.elts[0], ast.Constant))
        elif tgt == "DENSE_VARIANTS" and isinstance(val, ast.List):
            vals[tgt] = tuple(e.value for e in val.elts if isinstance(e, ast.Constant))
        elif tgt in ("FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS") and isinstance(val, ast.Dict):
            vals[tgt] = tuple(k.value for k in val.keys if isinstance(k, ast.Constant))
    return (vals.get("SHAPES", ()), vals.get("VARLEN_SHAPES", ()), vals.get("DENSE_VARIANTS", ()),
            vals.get("FUSED_PREAMBLE_VARIANTS", ()) + vals.get("VARLEN_VARIANTS", ()),
            vals.get("VARLEN_VARIANTS", ()))


@lru_cache(maxsize=None)
def parse_kernel_mappings(text: str | None) -> dict:
    """benchmarks/run.py KERNEL_MAPPINGS -> {kernel: (no_cudagraph, num_inputs)} (AST only)."""
    if not text:
        return {}
    tree = ast.parse(text)
    mapping = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNEL_MAPPINGS" for t in node.targets):
            mapping = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "KERNEL_MAPPINGS":
            mapping = node.value
        if mapping is not None:
            break
    out = {}
    if not isinstance(mapping, ast.Dict):
        return out
    for k, v in zip(mapping.keys, mapping.values):
        if not isinstance(k, ast.Constant):
            continue
        no_cg, num = False, None
        opts = v.elts[-1] if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict) else None
        if opts is not None:
            for ok, ov in zip(opts.keys, opts.values):
                if not isinstance(ok, ast.Constant):
                    continue
                if ok.value == "num_inputs" and isinstance(ov, ast.Constant):
                    num = int(ov.value)
                if ok.value == "remove_flags" and isinstance(ov, ast.List):
                    no_cg = any(isinstance(e, ast.Constant) and e.value == "--cudagraph" for e in ov.elts)
        out[str(k.value)] = (no_cg, num)
    return out


@lru_cache(maxsize=None)
def parse_pretuned_module(text: str | None) -> tuple:
    """<k>/<k>.py -> (baseline names, use_cudagraph())."""
    if not text:
        return ("torch",), False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ("torch",), False
    names, cg = (), False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.List):
                    names = tuple(e.elts[0].value for e in sub.value.elts
                                  if isinstance(e, ast.Tuple) and isinstance(e.elts[0], ast.Constant))
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    cg = bool(sub.value.value)
    return names or ("torch",), cg


@lru_cache(maxsize=None)
def parse_pretuned_kernels(text: str | None) -> tuple:
    if not text:
        return ()
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNELS" for t in node.targets):
            if isinstance(node.value, ast.List):
                return tuple(e.value for e in node.value.elts if isinstance(e, ast.Constant))
    return ()


def read_config(repo, sha: str) -> NightConfig:
    wf = ".github/workflows/"
    flags = parse_nightly_flags(repo.show(sha, wf + "benchmark_nightly.yml"))
    la = parse_linattn(repo.show(sha, "benchmarks/run_linattn.py"))
    defaults, jobs = parse_dispatch(repo.show(sha, wf + "benchmark_dispatch.yml"), None)
    cfg = NightConfig(sha=sha)
    cfg.linattn_shapes, cfg.varlen_shapes = la[0], la[1]
    cfg.varlen_variants = frozenset(la[4])
    dense = set(la[2])
    for flag, kin, items in jobs:
        w = dict(items)
        if flag is None or flag not in flags:
            continue
        alias = w["alias"]
        backend = w.get("backend")
        suite = "linattn" if w.get("suite") == "linattn" else ("tpu" if alias.startswith("tpu") else "gpu")
        ps = "tpu" if alias == "tpu_bridge" else alias
        if backend and backend not in ("triton", "pallas") and not ps.endswith("_" + backend):
            ps = f"{ps}_{backend}"
        names = list(defaults.get(kin, ()))
        if suite == "linattn":
            names = names + [f"{n}-bwd" for n in names if n in dense]
        if not names:
            continue
        cfg.jobs.append(Job(alias=alias, platform_short=ps, runner=w.get("runner", alias),
                            image=w.get("image", ""), runtime=w.get("runtime-version", ""),
                            backend=backend, suite=suite, kernels=tuple(names)))
    runpy = repo.show(sha, "benchmarks/run.py") or ""
    cfg.options = parse_kernel_mappings(runpy)
    cfg.emits_shapes = '"shape": result.shape' in runpy
    bench = repo.show(sha, wf + "benchmark.yml") or ""
    cfg.bench_blob = bench
    cfg.measure_compile = "--measure-compile-time" in bench
    cfg.emits_latency = any("latency" in m for m in re.findall(r"--metrics\s+(\S+)", bench))
    cfg.pretuned_bench_blob = repo.show(sha, "pretuned_kernels/_bench.py") or ""
    cfg.tpu_pins = tpu_pins(repo.show(sha, wf + "benchmark_tpu.yml"))
    cfg.autotune_env = tuple(sorted(set(re.findall(r"(HELION_AUTOTUNE_\w+)[:=]\s*\"?([\w.]+)", bench))))
    m = re.search(r"torch==([\d.*]+)", bench)
    cfg.torch_pin = m.group(1) if m else None
    cfg.pretuned = read_pretuned(repo, sha)
    return cfg


@lru_cache(maxsize=None)
def tpu_pins(text: str | None) -> tuple:
    """The TPU toolchain the TPU job installs: jax/jaxlib/libtpu pins ("latest" when upgraded)."""
    if not text:
        return ()
    pins = dict(re.findall(r"'(jax|jaxlib|libtpu)==([\w.]+)'", text))
    pins.update(re.findall(r"\b(libtpu)==([\w.]+)", text))
    if "--upgrade libtpu" in text:
        pins["libtpu"] = "latest"
    return tuple(sorted(pins.items()))


def read_pretuned(repo, sha: str) -> dict | None:
    wf = ".github/workflows/"
    nightly = repo.show(sha, wf + "benchmark_pretuned_nightly.yml")
    kernels = parse_pretuned_kernels(repo.show(sha, "pretuned_kernels/run.py"))
    if not nightly or not kernels:
        return None
    flags = parse_nightly_flags(nightly)
    aliases = sorted(f[len("run_"):] for f in flags)
    tree = repo.git("ls-tree", "-r", sha, "pretuned_kernels/")
    blobs = {}
    for line in tree.splitlines():
        meta, path = line.split("\t", 1)
        blobs[path] = meta.split()[2]
    out = {}
    for alias in aliases:
        sm = COMPUTE.get(alias)
        if sm is None:
            continue
        per = {}
        for k in kernels:
            aot = [p for p in blobs if p.startswith(f"pretuned_kernels/{k}/_helion_aot_{k}_cuda_{sm}")
                   and p.endswith(".py")]
            if not aot:
                continue
            names, cg = parse_pretuned_module(repo.show(sha, f"pretuned_kernels/{k}/{k}.py"))
            per[k] = (names, cg, tuple(blobs[p] for p in sorted(aot)))
        out[alias] = per
    return out
