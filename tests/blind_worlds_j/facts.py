"""What the nightly runs at one Helion sha, parsed (never imported) from the real files."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
RUN_PY = "benchmarks/run.py"
LINATTN = "benchmarks/run_linattn.py"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_BENCH = ".github/workflows/benchmark_pretuned.yml"
P_RUN = "pretuned_kernels/run.py"
P_BENCH_PY = "pretuned_kernels/_bench.py"
TB_PIN = ".github/ci_commit_pins/tritonbench.txt"

GPU_ALIASES = ("h100", "b200", "b200_cute", "mi325x", "mi350x")
HW_OF_COMPUTE = {"sm90": "h100", "sm100": "b200"}


@dataclass
class Facts:
    sha: str
    aliases: dict = field(default_factory=dict)      # alias -> {runner, image, runtime}
    kernels: dict = field(default_factory=dict)      # platform_short -> tuple of kernels (non-linattn)
    linattn: dict = field(default_factory=dict)      # platform_short -> tuple of linattn rows
    km: dict = field(default_factory=dict)           # kernel -> {cudagraph, num_inputs, baseline}
    lin_shapes: tuple = ()
    lin_varlen_shapes: tuple = ()
    autotune_env: tuple = ()                         # sorted (name, value) of HELION_AUTOTUNE_* in benchmark.yml
    timer: tuple = ()                                # (cudagraph flag count, latency mode)
    torch_pin: str | None = None
    tb_pin: str | None = None                        # tritonbench commit the GPU/bridge baselines come from
    tpu_native: tuple = ()                           # TPU kernels run by run_tpu.py (not the tritonbench bridge)
    p_bench_blob: str | None = None
    dispatch_text: str | None = None
    pretuned: dict | None = None                     # kernel -> {baselines, cudagraph, aot: {hw: blob}}
    p_aliases: dict = field(default_factory=dict)
    p_torch_pin: str | None = None


def _literal(text: str, name: str):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target = node.target.id
        if target == name and node.value is not None:
            try:
                return ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                return None
    return None


def parse_input_defaults(text: str) -> dict:
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s+(kernels\w*):\s*$", line)
        if m:
            current = m.group(1)
            continue
        if current:
            md = re.match(r'^\s+default:\s*"([^"]*)"\s*$', line)
            if md:
                out[current] = tuple(k.strip() for k in md.group(1).split(",") if k.strip())
                current = None
    return out


def parse_aliases(text: str) -> dict:
    """alias -> machine of the first job that declares it (runner/image/runtime-version)."""
    out, cur = {}, {}
    for line in text.splitlines():
        if re.match(r"^  [\w-]+:\s*$", line):
            cur = {}
        for key in ("runner", "image", "runtime-version"):
            m = re.match(rf"^\s+{key}:\s*(\S+)", line)
            if m:
                cur[key] = m.group(1).strip("'\"")
        m = re.match(r"^\s+alias:\s*(\S+)", line)
        if m:
            out.setdefault(m.group(1), {"runner": cur.get("runner"), "image": cur.get("image"),
                                        "runtime": cur.get("runtime-version")})
    return out


def parse_nightly_inputs(text: str) -> set:
    return {m.group(1) for m in re.finditer(r"run_(\w+):\s*'true'", text)}


def parse_km(run_py: str) -> dict:
    km = _literal(run_py, "KERNEL_MAPPINGS") or {}
    metric_maps = _literal(run_py, "KERNEL_METRIC_MAPPINGS") or {}
    max_inputs = _literal(run_py, "MAX_NUM_INPUTS") or 20
    out = {}
    for k, v in km.items():
        opts = {}
        if isinstance(v, tuple):
            for item in v:
                if isinstance(item, dict):
                    opts = item
        n = opts.get("num_inputs")
        base = next((m for m, role in (metric_maps.get(k) or {}).items() if role == "baseline"), None)
        out[k] = {"cudagraph": "--cudagraph" not in (opts.get("remove_flags") or []),
                  "num_inputs": min(n, max_inputs) if isinstance(n, int) else None,
                  "baseline": base}
    return out


def parse_bench_yml(text: str) -> tuple:
    env = tuple(sorted(set(re.findall(r"(HELION_AUTOTUNE_(?!LOG)\w+):\s*\"?([^\"\s]+)\"?", text))))
    modes = tuple(sorted(set(re.findall(r"--latency-measure-mode\s+(\w+)", text))))
    timer = (len(re.findall(r"--cudagraph\b", text)) > 0, modes)
    pins = re.findall(r"torch==([\d.*]+)", text)
    return env, timer, (pins[0] if pins else None)


def parse_linattn(text: str) -> tuple:
    shapes = _literal(text, "SHAPES") or []
    varlen = _literal(text, "VARLEN_SHAPES") or []
    fwd_only = set((_literal(text, "FUSED_PREAMBLE_VARIANTS") or {}).keys()) | \
        set((_literal(text, "VARLEN_VARIANTS") or {}).keys())
    return tuple(s[0] for s in shapes), tuple(s[0] for s in varlen), fwd_only


def parse_pretuned_kernel(text: str | None) -> dict:
    if text is None:
        return {"baselines": (), "cudagraph": False}
    names, cg = [], False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {"baselines": (), "cudagraph": False}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Tuple) and sub.elts and isinstance(sub.elts[0], ast.Constant) \
                        and isinstance(sub.elts[0].value, str):
                    names.append(sub.elts[0].value)
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    cg = bool(sub.value.value)
    return {"baselines": tuple(dict.fromkeys(names)), "cudagraph": cg}


class FactReader:
    def __init__(self, blobs):
        self.b = blobs
        self.cache: dict[str, Facts] = {}
        self.memo: dict = {}

    def parsed(self, sha: str, path: str, fn):
        """fn(text) of path at sha, memoized by blob id (most nights share most files)."""
        oid, text = self.b.get(sha, path)
        key = (path, fn.__name__, oid)
        if key not in self.memo:
            self.memo[key] = fn(text)
        return self.memo[key]

    def at(self, sha: str) -> Facts:
        if sha in self.cache:
            return self.cache[sha]
        b = self.b
        f = Facts(sha)
        disp = b.text(sha, DISPATCH) or ""
        f.dispatch_text = disp
        nightly = parse_nightly_inputs(b.text(sha, NIGHTLY) or "")
        machines = parse_aliases(disp)
        defaults = parse_input_defaults(disp)
        lin_shapes, lin_var, fwd_only = self.parsed(sha, LINATTN, lambda t: parse_linattn(t or ""))
        f.lin_shapes, f.lin_varlen_shapes = lin_shapes, lin_var
        f.km = self.parsed(sha, RUN_PY, lambda t: parse_km(t or ""))
        for alias, m in machines.items():
            if alias == "tpu_bridge" or alias not in nightly:
                continue
            f.aliases[alias] = m
            if alias == "b200_cute":
                ks = defaults.get("kernels_cute", ())
            elif alias == "tpu":
                ks = defaults.get("kernels_tpu", ()) + (defaults.get("kernels_tpu_bridge", ())
                                                       if "tpu_bridge" in machines else ())
            else:
                ks = defaults.get("kernels", ())
            f.kernels[alias] = tuple(dict.fromkeys(ks))
            if alias == "tpu":
                f.tpu_native = tuple(defaults.get("kernels_tpu", ()))
            if alias in ("h100", "b200") and f"{alias}_linattn" in nightly and "kernels_linattn" in defaults:
                rows = []
                for v in defaults["kernels_linattn"]:
                    rows.append(v)
                    if v not in fwd_only:
                        rows.append(f"{v}-bwd")
                f.linattn[alias] = tuple(rows)
        f.autotune_env, f.timer, f.torch_pin = parse_bench_yml(b.text(sha, BENCH) or "")
        pin = b.text(sha, TB_PIN)
        f.tb_pin = pin.strip() if pin else None
        if b.get(sha, P_NIGHTLY)[0] is not None:
            f.p_aliases = {a: m for a, m in parse_aliases(b.text(sha, P_DISPATCH) or "").items()}
            f.p_torch_pin = parse_bench_yml(b.text(sha, P_BENCH) or "")[2]
            f.p_bench_blob = b.get(sha, P_BENCH_PY)[0]
            kernels = self.parsed(sha, P_RUN, lambda t: _literal(t or "", "KERNELS") or [])
            tree = b.ls(sha, "pretuned_kernels")
            f.pretuned = {}
            for k in kernels:
                info = dict(self.parsed(sha, f"pretuned_kernels/{k}/{k}.py", parse_pretuned_kernel))
                aot = {}
                for path, oid in tree.items():
                    m = re.match(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_\w+_(sm\d+)\.py$", path)
                    if m and m.group(1) in HW_OF_COMPUTE:
                        aot.setdefault(HW_OF_COMPUTE[m.group(1)], []).append((path, oid))
                info["aot"] = {hw: tuple(sorted(v)) for hw, v in aot.items()}
                f.pretuned[k] = info
        self.cache[sha] = f
        return f

    def series(self, f: Facts) -> list[tuple[str, str]]:
        out = []
        for alias, ks in f.kernels.items():
            out += [(alias, k) for k in ks]
            out += [(alias, k) for k in f.linattn.get(alias, ())]
        return out

    def p_series(self, f: Facts) -> list[tuple[str, str]]:
        if not f.pretuned:
            return []
        return [(hw, k) for k, info in f.pretuned.items() for hw in info["aot"] if hw in f.p_aliases]
