"""What the real Helion files at a commit say a nightly runs, read as text (never imported or run).

Everything here is parsed from the blobs of the bundle clone: the workflow YAML, the Python
sources through `ast` (no execution), and file listings."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import yaml

from .hrepo import Repo

WF = ".github/workflows/"


@dataclass(frozen=True)
class Lane:
    alias: str            # the alias the artifact is uploaded under
    suite: str            # tritonbench | linattn | tpu | tpu_bridge
    backend: str          # triton | cute | pallas
    runner: str
    image: str
    runtime: str
    run_input: str        # run_* input of benchmark_dispatch that turns it on
    kernels_input: str    # kernels* input whose default it runs

    @property
    def platform_short(self) -> str:
        if self.alias == "tpu_bridge":
            return "tpu"
        if self.backend not in ("triton", "pallas") and not self.alias.endswith("_" + self.backend):
            return f"{self.alias}_{self.backend}"
        return self.alias


@dataclass
class DashFacts:
    sha: str
    lanes: list            # Lane
    defaults: dict         # kernels* input -> [kernel]
    nightly: dict          # run_* / env_vars given by benchmark_nightly.yml
    bench_env: dict        # job-level env of benchmark.yml
    bench_flags: tuple     # flags of the tritonbench run.py command
    torch_pin: str
    tritonbench_pin: str
    tpu_env: dict
    tpu_flags: tuple
    tpu_pins: str
    bridge_flags: tuple
    mappings: dict         # run.py KERNEL_MAPPINGS: kernel -> options dict (num_inputs, remove_flags, ...)
    max_inputs: int
    linattn_shapes: tuple
    linattn_varlen_shapes: tuple
    linattn_variants: tuple
    linattn_fwd_only: tuple
    linattn_aot: dict      # sm -> blob id of examples/linear/_helion_aot_* (the checked-in configs)
    tpu_kernels: tuple     # run_tpu.py KERNEL_MAPPINGS keys
    linattn_flags: tuple = ()

    def nightly_lanes(self) -> list:
        return [l for l in self.lanes if str(self.nightly.get(l.run_input, "")).lower() == "true"]

    def kernels_of(self, lane: Lane) -> list:
        ks = self.defaults.get(lane.kernels_input, [])
        if lane.suite == "tpu" and ks == ["all"]:
            ks = list(self.tpu_kernels)
        return ks


@dataclass
class PreFacts:
    sha: str
    kernels: tuple                       # pretuned_kernels/run.py KERNELS
    lanes: dict                          # alias -> (runner, image, runtime)
    run_inputs: dict                     # run_h100/run_b200 of the pretuned nightly
    bench_blob: str                      # pretuned_kernels/_bench.py
    torch_pin: str
    per_kernel: dict = field(default_factory=dict)  # kernel -> dict(baselines, cudagraph, aot{sm: blob}, src blob)


def _load_yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}


def _on(doc: dict) -> dict:
    return doc.get("on") or doc.get(True) or {}


def _input_defaults(doc: dict) -> dict:
    ins = (_on(doc).get("workflow_dispatch") or {}).get("inputs") or {}
    return {k: v.get("default") for k, v in ins.items() if isinstance(v, dict)}


_RUN_IF = re.compile(r"inputs\.(run_\w+)\s*==\s*'true'")
_KIN = re.compile(r"inputs\.(kernels\w*)")


def parse_dispatch(repo: Repo, sha: str) -> tuple[list, dict]:
    cache = repo.__dict__.setdefault("_dispatch", {})
    key = tuple(repo.tree(sha).get(WF + n, "") for n in ("benchmark_dispatch.yml", "benchmark_tpu.yml",
                                                            "benchmark_tpu_bridge.yml"))
    if key not in cache:
        cache[key] = _parse_dispatch(repo, sha)
    return cache[key]


def _parse_dispatch(repo: Repo, sha: str) -> tuple[list, dict]:
    text = repo.read(sha, WF + "benchmark_dispatch.yml")
    doc = _load_yaml(text)
    defaults = {k: [x.strip() for x in str(v).split(",") if x.strip()]
                for k, v in _input_defaults(doc).items() if k.startswith("kernels")}
    jobs = doc.get("jobs") or {}
    lanes = []
    for name, job in jobs.items():
        uses = str(job.get("uses", ""))
        if not uses.endswith(("/benchmark.yml", "/benchmark_tpu.yml", "/benchmark_tpu_bridge.yml")):
            continue
        w = job.get("with") or {}
        cond = str(job.get("if", ""))
        kexpr = str(w.get("kernels", ""))
        needs = job.get("needs")
        needs = [needs] if isinstance(needs, str) else list(needs or [])
        for n in needs:
            nj = jobs.get(n) or {}
            cond += " " + str(nj.get("if", ""))
            if "matrix." in kexpr:
                kexpr = str((nj.get("with") or {}).get("kernels", ""))
        m = _RUN_IF.search(cond)
        km = _KIN.search(kexpr)
        if uses.endswith("/benchmark.yml"):
            suite = str(w.get("suite", "tritonbench"))
            backend = str(w.get("backend", "triton"))
            runner, image, runtime = str(w.get("runner", "")), str(w.get("image", "")), str(w.get("runtime-version", ""))
        else:
            wf = uses.rsplit("/", 1)[1]
            suite = "tpu" if wf == "benchmark_tpu.yml" else "tpu_bridge"
            backend = "pallas"
            tdoc = _load_yaml(repo.read(sha, WF + wf))
            tjob = next(iter((tdoc.get("jobs") or {}).values()), {}) or {}
            runner, image, runtime = str(tjob.get("runs-on", "")), "", ""
        lanes.append(Lane(alias=str(w.get("alias", "")), suite=suite, backend=backend, runner=runner, image=image,
                          runtime=runtime, run_input=m.group(1) if m else "", kernels_input=km.group(1) if km else ""))
    return lanes, defaults


def _nightly_inputs(repo: Repo, sha: str, name: str) -> dict:
    text = repo.read(sha, WF + name) or ""
    out = {}
    m = re.search(r"inputs:\s*\{(.*?)\}", text, re.S)
    if m:
        body = re.sub(r"//[^\n]*", "", m.group(1))
        for k, v in re.findall(r"(\w+)\s*:\s*'([^']*)'", body):
            out[k] = v
    return out


def _job_env_and_flags(text: str | None, script_marker: str) -> tuple[dict, tuple]:
    doc = _load_yaml(text)
    env, flags = {}, set()
    for job in (doc.get("jobs") or {}).values():
        env.update({str(k): str(v) for k, v in (job.get("env") or {}).items()})
        for st in job.get("steps") or []:
            run = str(st.get("run", ""))
            if script_marker in run:
                # the command's flags (the env prefix of the command is part of the fingerprint too)
                for tok in re.findall(r"(?<![\w-])(--[a-z][\w-]*(?:[ =](?!--)[^\s\\]+)?)", run):
                    flags.add(tok.strip())
                for kv in re.findall(r"\b(HELION_[A-Z_]+)=(\S+)", run):
                    env.setdefault("cmd:" + kv[0], kv[1])
    return env, tuple(sorted(flags))


def _torch_pin(text: str | None) -> str:
    """The torch version the benchmark job installs (its 'Install PyTorch' step)."""
    doc = _load_yaml(text)
    pins = []
    for job in (doc.get("jobs") or {}).values():
        for st in job.get("steps") or []:
            name = str(st.get("name", ""))
            if "pytorch" in name.lower() or "torch" in name.lower():
                run = str(st.get("run", ""))
                pins += re.findall(r"torch==[0-9][\w.*+]*|--pre torch\b|whl/nightly", run)
    return " ".join(dict.fromkeys(pins))


def _literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def parse_mappings(text: str | None) -> tuple[dict, int]:
    """KERNEL_MAPPINGS of benchmarks/run.py: kernel -> options (the dict element of the tuple, if any)."""
    out, max_inputs = {}, 20
    if not text:
        return out, max_inputs
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out, max_inputs
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.Assign) and node.targets and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        if target == "MAX_NUM_INPUTS":
            v = _literal(value)
            if isinstance(v, int):
                max_inputs = v
        if target != "KERNEL_MAPPINGS" or not isinstance(value, ast.Dict):
            continue
        for k, v in zip(value.keys, value.values):
            key = _literal(k)
            if not isinstance(key, str):
                continue
            opts = {}
            if isinstance(v, ast.Tuple):
                for el in v.elts:
                    if isinstance(el, ast.Dict):
                        for kk, vv in zip(el.keys, el.values):
                            name = _literal(kk)
                            if isinstance(name, str):
                                val = _literal(vv)
                                opts[name] = val if val is not None else ast.unparse(vv)
            out[key] = opts
    return out, max_inputs


def _assign_value(tree, name):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def parse_linattn(text: str | None):
    if not text:
        return (), (), (), ()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return (), (), (), ()

    def names(var):
        v = _assign_value(tree, var)
        if isinstance(v, (ast.List, ast.Tuple)):
            out = []
            for el in v.elts:
                if isinstance(el, (ast.Tuple, ast.List)) and el.elts:
                    out.append(str(_literal(el.elts[0])))
            return tuple(out)
        return ()

    shapes = names("SHAPES")
    varlen = names("VARLEN_SHAPES")
    variants, fwd_only = [], []
    for var in ("DENSE_VARIANTS", "VARIANTS"):
        v = _assign_value(tree, var)
        if isinstance(v, ast.List):
            for el in v.elts:
                s = _literal(el)
                if isinstance(s, str) and s not in variants:
                    variants.append(s)
    for var in ("FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS"):
        v = _assign_value(tree, var)
        if isinstance(v, ast.Dict):
            for kk in v.keys:
                s = _literal(kk)
                if isinstance(s, str):
                    fwd_only.append(s)
                    if s not in variants:
                        variants.append(s)
    return shapes, varlen, tuple(variants), tuple(fwd_only)


def parse_tpu_kernels(text: str | None) -> tuple:
    if not text:
        return ()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ()
    v = _assign_value(tree, "KERNEL_MAPPINGS")
    if isinstance(v, ast.Dict):
        return tuple(k for k in (_literal(x) for x in v.keys) if isinstance(k, str))
    return ()


def dash_facts(repo: Repo, sha: str) -> DashFacts:
    cache = repo.__dict__.setdefault("_dash_facts", {})
    if sha not in cache:
        cache[sha] = _dash_facts(repo, sha)
    return cache[sha]


def _dash_facts(repo: Repo, sha: str) -> DashFacts:
    lanes, defaults = parse_dispatch(repo, sha)
    bench = repo.read(sha, WF + "benchmark.yml")
    env, flags = _job_env_and_flags(bench, "benchmarks/run.py")
    _, lflags = _job_env_and_flags(bench, "run_linattn")
    tpu = repo.read(sha, WF + "benchmark_tpu.yml")
    tenv, tflags = _job_env_and_flags(tpu, "run_tpu.py")
    _, bflags = _job_env_and_flags(repo.read(sha, WF + "benchmark_tpu_bridge.yml"), "benchmarks/run.py")
    mappings, max_inputs = parse_mappings(repo.read(sha, "benchmarks/run.py"))
    shapes, varlen, variants, fwd_only = parse_linattn(repo.read(sha, "benchmarks/run_linattn.py"))
    aot = {}
    for path, oid in repo.tree(sha).items():
        m = re.match(r"examples/linear/_helion_aot_.*_(sm\d+)\.py$", path)
        if m:
            aot[m.group(1)] = aot.get(m.group(1), "") + oid[:12]
    pin = (repo.read(sha, ".github/ci_commit_pins/tritonbench.txt") or "").strip()
    tpu_pins = " ".join(re.findall(r"'(?:jax|jaxlib|libtpu)==[^']*'|torch_tpu\.txt", tpu or "")) + " " + \
        (repo.read(sha, ".github/ci_commit_pins/torch_tpu.txt") or "").strip()
    return DashFacts(sha=sha, lanes=lanes, defaults=defaults, nightly=_nightly_inputs(repo, sha, "benchmark_nightly.yml"),
                     bench_env=env, bench_flags=flags, torch_pin=_torch_pin(bench), tritonbench_pin=pin,
                     tpu_env=tenv, tpu_flags=tflags, tpu_pins=tpu_pins + " " + _torch_pin(tpu), bridge_flags=bflags,
                     mappings=mappings, max_inputs=max_inputs, linattn_shapes=shapes, linattn_varlen_shapes=varlen,
                     linattn_variants=variants, linattn_fwd_only=fwd_only, linattn_aot=aot,
                     tpu_kernels=parse_tpu_kernels(repo.read(sha, "benchmarks/run_tpu.py")), linattn_flags=lflags)


def _pretuned_kernel(repo: Repo, sha: str, name: str) -> dict:
    tree = repo.tree(sha)
    src_path = f"pretuned_kernels/{name}/{name}.py"
    text = repo.read(sha, src_path) or ""
    baselines = []
    cudagraph = False
    try:
        mod = ast.parse(text)
    except SyntaxError:
        mod = None
    if mod is not None:
        for node in ast.walk(mod):
            if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
                for r in ast.walk(node):
                    if isinstance(r, ast.Return):
                        cudagraph = bool(_literal(r.value)) if _literal(r.value) is not None else True
            if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
                for t in ast.walk(node):
                    if isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(t.elts[0], ast.Constant) \
                            and isinstance(t.elts[0].value, str):
                        if t.elts[0].value not in baselines:
                            baselines.append(t.elts[0].value)
    aot = {}
    for path, oid in tree.items():
        m = re.match(rf"pretuned_kernels/{re.escape(name)}/_helion_aot_{re.escape(name)}_cuda_(sm\d+)\.py$", path)
        if m:
            aot[m.group(1)] = oid
    return dict(baselines=tuple(baselines), cudagraph=cudagraph, aot=aot, src=tree.get(src_path, ""))


def pre_facts(repo: Repo, sha: str) -> PreFacts | None:
    cache = repo.__dict__.setdefault("_pre_facts", {})
    if sha not in cache:
        cache[sha] = _pre_facts(repo, sha)
    return cache[sha]


def _pre_facts(repo: Repo, sha: str) -> PreFacts | None:
    text = repo.read(sha, "pretuned_kernels/run.py")
    if not text or repo.read(sha, WF + "benchmark_pretuned_nightly.yml") is None:
        return None
    try:
        v = _assign_value(ast.parse(text), "KERNELS")
        kernels = tuple(x for x in (_literal(e) for e in v.elts) if isinstance(x, str)) if v is not None else ()
    except SyntaxError:
        kernels = ()
    doc = _load_yaml(repo.read(sha, WF + "benchmark_pretuned_dispatch.yml"))
    lanes = {}
    for job in (doc.get("jobs") or {}).values():
        w = job.get("with") or {}
        if "alias" in w:
            lanes[str(w["alias"])] = (str(w.get("runner", "")), str(w.get("image", "")), str(w.get("runtime-version", "")))
    pf = PreFacts(sha=sha, kernels=kernels, lanes=lanes,
                  run_inputs=_nightly_inputs(repo, sha, "benchmark_pretuned_nightly.yml"),
                  bench_blob=repo.tree(sha).get("pretuned_kernels/_bench.py", ""),
                  torch_pin=_torch_pin(repo.read(sha, WF + "benchmark_pretuned.yml")))
    for k in kernels:
        pf.per_kernel[k] = _pretuned_kernel(repo, sha, k)
    return pf
