"""What the Helion repository says runs each night, read from the real files at a commit.

Everything is parsed as text (ast / yaml / regex); no file of the repository is imported or run.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

import yaml

from .gitio import Blobs

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
BENCH_TPU = ".github/workflows/benchmark_tpu.yml"
BENCH_TPU_BRIDGE = ".github/workflows/benchmark_tpu_bridge.yml"
PRE_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
PRE_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
PRE_BENCH = ".github/workflows/benchmark_pretuned.yml"
TB_PIN = ".github/ci_commit_pins/tritonbench.txt"


def _h(text: str | None) -> str:
    return hashlib.sha1((text or "").encode()).hexdigest()[:12]


@dataclass
class Alias:
    """One benchmark job of the dispatch workflow."""
    alias: str
    suite: str  # tritonbench | linattn | tpu | tpu_bridge
    toggle: str | None  # the run_* input that gates it
    kernels_input: str | None
    runner: str
    image: str
    runtime: str
    backend: str = "triton"


@dataclass
class Facts:
    sha: str
    kernel_defaults: dict = field(default_factory=dict)  # input name -> list of kernels
    aliases: list = field(default_factory=list)  # Alias
    toggles: dict = field(default_factory=dict)  # run_* -> bool as the nightly dispatches it
    nightly_env: str = ""
    gpu_map: dict = field(default_factory=dict)  # kernel -> options dict (KERNEL_MAPPINGS)
    max_inputs: int = 20
    emits_shapes: bool = True
    bench: dict = field(default_factory=dict)  # facts of benchmark.yml
    tpu_map: dict = field(default_factory=dict)  # TPU kernel -> hash of its shapes function text
    tpu_num_shapes: int = 2
    tpu_runner: str = ""
    tpu_env: str = ""
    linattn: dict | None = None
    tb_pin: str = ""
    pretuned: dict | None = None

    def enabled(self, a: Alias) -> bool:
        return bool(a.toggle and self.toggles.get(a.toggle))


# ---------------------------------------------------------------------------------------------
def parse_kernel_defaults(text: str) -> dict:
    """`<indent>kernels*:` input header, then its `default: "csv"` line."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s+(kernels\w*):\s*$", line)
        if m:
            cur = m.group(1)
            continue
        if cur is None:
            continue
        md = re.match(r'^\s+default:\s*"([^"]*)"\s*$', line)
        if md:
            out[cur] = [k.strip() for k in md.group(1).split(",") if k.strip()]
            cur = None
        elif re.match(r"^\s{0,6}\w+:\s*$", line) and not line.startswith(" " * 8):
            cur = None
    return out


def _expr_name(expr: str | None, prefix: str) -> str | None:
    if not expr:
        return None
    m = re.search(prefix + r"\.(\w+)", str(expr))
    return m.group(1) if m else None


def parse_dispatch(text: str, tpu_runner: str) -> tuple[dict, list, dict]:
    doc = yaml.safe_load(text) or {}
    on = doc.get("on") or doc.get(True) or {}
    inputs = ((on.get("workflow_dispatch") or {}).get("inputs")) or {}
    defaults = {k: str(v.get("default")).lower() == "true" for k, v in inputs.items()
                if isinstance(v, dict) and k.startswith("run_")}
    jobs = doc.get("jobs") or {}
    aliases = []
    for name, job in jobs.items():
        uses = str(job.get("uses", ""))
        w = job.get("with") or {}
        if "alias" not in w:
            continue
        gate = _expr_name(job.get("if"), r"inputs")
        kernels_expr = str(w.get("kernels", ""))
        kin = _expr_name(kernels_expr, r"inputs")
        for need in ([job.get("needs")] if isinstance(job.get("needs"), str) else job.get("needs") or []):
            nj = jobs.get(need) or {}
            gate = gate or _expr_name(nj.get("if"), r"inputs")
            kin = kin or _expr_name((nj.get("with") or {}).get("kernels"), r"inputs")
        if "benchmark_tpu_bridge" in uses:
            suite = "tpu_bridge"
        elif "benchmark_tpu" in uses:
            suite = "tpu"
        else:
            suite = str(w.get("suite", "tritonbench"))
        aliases.append(Alias(alias=str(w["alias"]), suite=suite, toggle=gate, kernels_input=kin,
                             runner=str(w.get("runner", tpu_runner if suite.startswith("tpu") else "")),
                             image=str(w.get("image", "")), runtime=str(w.get("runtime-version", "")),
                             backend=str(w.get("backend", "triton"))))
    return defaults, aliases, inputs


def parse_nightly(text: str) -> tuple[dict, str]:
    m = re.search(r"inputs:\s*\{(.*?)\}", text or "", re.S)
    toggles, env = {}, ""
    if m:
        for k, v in re.findall(r"(run_\w+):\s*'(\w+)'", m.group(1)):
            toggles[k] = v == "true"
        me = re.search(r"env_vars:\s*'([^']*)'", m.group(1))
        env = me.group(1) if me else ""
    return toggles, env


def parse_kernel_mappings(text: str, name: str = "KERNEL_MAPPINGS") -> dict:
    """kernel -> options dict of a `KERNEL_MAPPINGS = {...}` literal (tuples with an optional
    trailing dict). Values that are not literals are kept as their source text."""
    tree = ast.parse(text)
    for node in tree.body:
        target = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target != name or not isinstance(value, ast.Dict):
            continue
        out = {}
        for k, v in zip(value.keys, value.values):
            if not isinstance(k, ast.Constant):
                continue
            opts = {}
            elts = v.elts if isinstance(v, ast.Tuple) else []
            if elts and isinstance(elts[-1], ast.Dict):
                for ok, ov in zip(elts[-1].keys, elts[-1].values):
                    if isinstance(ok, ast.Constant):
                        try:
                            opts[ok.value] = ast.literal_eval(ov)
                        except ValueError:
                            opts[ok.value] = ast.get_source_segment(text, ov)
            out[k.value] = {"opts": opts, "src": ast.get_source_segment(text, v) or ""}
        return out
    return {}


def _int_const(text: str, name: str, default: int) -> int:
    m = re.search(rf"^{name}\s*=\s*(\d+)", text or "", re.M)
    return int(m.group(1)) if m else default


def parse_bench(text: str) -> dict:
    text = text or ""
    pins = re.findall(r'torch==([0-9][0-9.*]*)', text)
    metrics = re.findall(r"--metrics\s+(\S+)", text)
    env = dict(re.findall(r"^\s+(HELION_AUTOTUNE_\w+):\s*\"?([^\"\n]*)\"?\s*$", text, re.M))
    env.pop("HELION_AUTOTUNE_LOG_LEVEL", None)
    m = re.search(r"--num-shapes\s+(\d+)", text.split("Linear-Attention Benchmark")[-1]) \
        if "Linear-Attention Benchmark" in text else None
    runs = len(re.findall(r"python benchmarks/run\.py\s*\\?\s*\n?\s*--op", text)) or 1
    return {
        "torch_pin": pins[0] if pins else "",
        "linattn_torch_pin": pins[1] if len(pins) > 1 else (pins[0] if pins else ""),
        "metrics": metrics[0] if metrics else "",
        "compile_time": "--measure-compile-time" in text,
        "cudagraph": "--cudagraph" in text,
        "latency_mode": (re.findall(r"--latency-measure-mode\s+(\S+)", text) or [""])[0],
        "autotune_env": tuple(sorted(env.items())),
        "linattn_num_shapes": int(m.group(1)) if m else None,
        "tritonbench_passes": runs,
    }


def parse_tpu(run_tpu: str | None, tpu_yml: str | None) -> tuple[dict, int, str, str]:
    if not run_tpu:
        return {}, 2, "", ""
    tree = ast.parse(run_tpu)
    funcs = {n.name: ast.get_source_segment(run_tpu, n) or "" for n in tree.body if isinstance(n, ast.FunctionDef)}
    kmap = {}
    for node in tree.body:
        tgt = node.target.id if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) else None
        if tgt != "KERNEL_MAPPINGS" or not isinstance(node.value, ast.Dict):
            continue
        for k, v in zip(node.value.keys, node.value.values):
            if not isinstance(k, ast.Constant):
                continue
            shapes_fn = ""
            if isinstance(v, ast.Tuple) and len(v.elts) >= 4 and isinstance(v.elts[3], ast.Name):
                shapes_fn = v.elts[3].id
            kmap[k.value] = _h((ast.get_source_segment(run_tpu, v) or "") + funcs.get(shapes_fn, ""))
    yml = tpu_yml or ""
    m = re.search(r"--num-shapes\s+(\d+)", yml)
    runner = (re.findall(r"runs-on:\s*(\S+)", yml) or [""])[0]
    env = ";".join(sorted(re.findall(r"^\s+(HELION_\w+:\s*\S+)", yml, re.M)))
    return kmap, int(m.group(1)) if m else 2, runner, env


def parse_linattn(text: str | None) -> dict | None:
    if not text:
        return None
    tree = ast.parse(text)
    vals = {}
    for node in tree.body:
        tgt = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt = node.target.id
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            tgt = node.targets[0].id
        if tgt in ("SHAPES", "VARLEN_SHAPES", "DENSE_VARIANTS", "FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS",
                   "VARIANTS"):
            try:
                vals[tgt] = ast.literal_eval(node.value)
            except ValueError:
                vals[tgt] = None
    shapes = [s[0] for s in vals.get("SHAPES") or []]
    varlen = [s[0] for s in vals.get("VARLEN_SHAPES") or []]
    fwd_only = set(vals.get("FUSED_PREAMBLE_VARIANTS") or {}) | set(vals.get("VARLEN_VARIANTS") or {})
    variants = vals.get("VARIANTS")
    if not isinstance(variants, list):
        variants = list(vals.get("DENSE_VARIANTS") or []) + sorted(fwd_only)
    return {"shapes": shapes, "varlen_shapes": varlen, "fwd_only": sorted(fwd_only),
            "varlen_variants": sorted(vals.get("VARLEN_VARIANTS") or {}), "variants": variants,
            "num_shapes_default": None}


def parse_pretuned(blobs: Blobs, sha: str) -> dict | None:
    run = blobs.read(sha, "pretuned_kernels/run.py")
    if run is None:
        return None
    tree = ast.parse(run)
    kernels = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "KERNELS":
            kernels = list(ast.literal_eval(node.value))
    files = blobs.ls(sha, "pretuned_kernels")
    out = {}
    for k in kernels:
        hw = {}
        for f in files:
            m = re.match(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py$", f)
            if m:
                plat = {"sm90": "h100", "sm100": "b200"}.get(m.group(1))
                if plat:
                    hw[plat] = blobs.oid(sha, f)[:12]
        src = blobs.read(sha, f"pretuned_kernels/{k}/{k}.py") or ""
        body = re.search(r"def _baselines\(.*?(?=\ndef |\Z)", src, re.S)
        bases = re.findall(r'\(\s*"(\w+)",', body.group(0)) if body else []
        if not bases:
            bases = sorted(set(re.findall(r'baselines?\[?\s*"(\w+)"', src))) or ["torch"]
        cg = re.search(r"def use_cudagraph\(\)[^:]*:.*?return\s+(True|False)", src, re.S)
        out[k] = {"hw": hw, "baselines": tuple(dict.fromkeys(bases)), "cudagraph": bool(cg and cg.group(1) == "True")}
    pre_disp = blobs.read(sha, PRE_DISPATCH) or ""
    runners = {}
    if pre_disp:
        for job in (yaml.safe_load(pre_disp) or {}).get("jobs", {}).values():
            w = job.get("with") or {}
            if "alias" in w:
                runners[str(w["alias"])] = (str(w.get("runner", "")), str(w.get("image", "")),
                                            str(w.get("runtime-version", "")))
    pre_bench = blobs.read(sha, PRE_BENCH) or ""
    pins = re.findall(r'torch==([0-9][0-9.*]*)', pre_bench)
    return {"kernels": out, "order": kernels, "bench_hash": _h(blobs.read(sha, "pretuned_kernels/_bench.py")),
            "runners": runners, "torch_pin": pins[0] if pins else "",
            "nightly": blobs.read(sha, PRE_NIGHTLY) is not None}


_FILES = (DISPATCH, NIGHTLY, BENCH, BENCH_TPU, BENCH_TPU_BRIDGE, TB_PIN, "benchmarks/run.py",
          "benchmarks/run_tpu.py", "benchmarks/run_linattn.py")
_CACHE: dict = {}


def read_facts(blobs: Blobs, sha: str) -> Facts:
    """Facts at ``sha``; parsed once per distinct set of file contents."""
    key = tuple(blobs.oid(sha, p) for p in _FILES)
    pre_key = tuple(sorted((p, o) for p, o in blobs.tree(sha).items()
                           if p.startswith("pretuned_kernels/") or p.startswith(".github/workflows/benchmark_pretuned")))
    base = _CACHE.get(("f", key))
    if base is None:
        base = _read_facts(blobs, sha)
        _CACHE[("f", key)] = base
    pre = _CACHE.get(("p", pre_key), "missing")
    if pre == "missing":
        pre = parse_pretuned(blobs, sha)
        _CACHE[("p", pre_key)] = pre
    f = Facts(**{**base.__dict__, "sha": sha, "pretuned": pre})
    return f


def _read_facts(blobs: Blobs, sha: str) -> Facts:
    f = Facts(sha=sha)
    disp = blobs.read(sha, DISPATCH) or ""
    tpu_kmap, tpu_ns, tpu_runner, tpu_env = parse_tpu(blobs.read(sha, "benchmarks/run_tpu.py"), blobs.read(sha, BENCH_TPU))
    bridge = blobs.read(sha, BENCH_TPU_BRIDGE) or ""
    bridge_runner = (re.findall(r"runs-on:\s*(\S+)", bridge) or [tpu_runner])[0]
    f.kernel_defaults = parse_kernel_defaults(disp)
    defaults, f.aliases, _ = parse_dispatch(disp, tpu_runner)
    for a in f.aliases:
        if a.suite == "tpu_bridge":
            a.runner = bridge_runner
    toggles, f.nightly_env = parse_nightly(blobs.read(sha, NIGHTLY) or "")
    f.toggles = {**defaults, **toggles}
    run_py = blobs.read(sha, "benchmarks/run.py") or ""
    f.gpu_map = parse_kernel_mappings(run_py)
    f.max_inputs = _int_const(run_py, "MAX_NUM_INPUTS", 20)
    f.emits_shapes = bool(re.search(r'"shape":\s*result\.shape', run_py))
    f.bench = parse_bench(blobs.read(sha, BENCH))
    f.tpu_map, f.tpu_num_shapes, f.tpu_runner, f.tpu_env = tpu_kmap, tpu_ns, tpu_runner, tpu_env
    f.linattn = parse_linattn(blobs.read(sha, "benchmarks/run_linattn.py"))
    f.tb_pin = (blobs.read(sha, TB_PIN) or "").strip()
    return f
