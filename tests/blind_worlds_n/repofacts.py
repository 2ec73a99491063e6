"""What the real Helion files say at a commit: parsed (ast / yaml / regex), never imported or run.

Everything the simulation needs to know about "what runs each night" comes from here:
the nightly cron and inputs, the dispatch jobs (alias, runner, image, runtime, backend, suite,
kernel defaults, shard count), the benchmark command (flags, env, torch pin, passes), the
per-kernel options of benchmarks/run.py (num_inputs, remove_flags, ...) and its metric
mappings (which impl is the baseline), the linear-attention shapes and variants, the TPU
kernels and their shape tables, and the pretuned suite (kernels, baselines, cudagraph,
checked-in configs, timer).
"""
from __future__ import annotations

import ast
import copy
import hashlib
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import yaml

WF = ".github/workflows/"
DASH_FILES = (WF + "benchmark.yml", WF + "benchmark_dispatch.yml", WF + "benchmark_nightly.yml",
              WF + "benchmark_tpu.yml", WF + "benchmark_tpu_bridge.yml", WF + "compute-benchmark-matrix.yml",
              "benchmarks/run.py", "benchmarks/run_linattn.py", "benchmarks/run_tpu.py",
              ".github/ci_commit_pins/tritonbench.txt")
PRE_PREFIXES = ("pretuned_kernels/", WF + "benchmark_pretuned")


@dataclass
class Commit:
    idx: int
    sha: str
    time: datetime
    subject: str
    files: tuple


class Git:
    """A clone of the bundle; one `git cat-file --batch` process for file contents."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._cat = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._cache: dict = {}

    def close(self):
        if self._cat.poll() is None:
            self._cat.stdin.close()
            self._cat.wait(timeout=10)

    def run(self, *args) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                              text=True).stdout

    def show(self, sha: str, path: str) -> str | None:
        key = (sha, path)
        if key in self._cache:
            return self._cache[key]
        self._cat.stdin.write(f"{sha}:{path}\n".encode())
        self._cat.stdin.flush()
        head = self._cat.stdout.readline().decode().split()
        if len(head) < 3 or head[1] == "missing":
            out = None
        else:
            n = int(head[2])
            data = self._cat.stdout.read(n)
            self._cat.stdout.read(1)
            out = data.decode("utf-8", "replace") if head[1] == "blob" else None
        self._cache[key] = out
        return out

    def commits(self) -> list[Commit]:
        raw = self.run("log", "--first-parent", "--reverse", "--diff-merges=first-parent", "--name-only",
                       "--format=%x1e%H%x1f%ct%x1f%s", "main")
        out = []
        for chunk in raw.split("\x1e")[1:]:
            head, _, rest = chunk.partition("\n")
            sha, ct, subject = head.split("\x1f", 2)
            files = tuple(f for f in rest.split("\n") if f.strip())
            out.append(Commit(len(out), sha, datetime.fromtimestamp(int(ct), tz=timezone.utc), subject, files))
        return out

    def ls(self, sha: str, prefix: str) -> list[str]:
        return [l for l in self.run("ls-tree", "-r", "--name-only", sha, prefix).split("\n") if l]


def h(text: str | None) -> str:
    return hashlib.sha1((text or "").encode()).hexdigest()[:10]


_MEMO: dict = {}


def memo_text(fn):
    """Parse each distinct file content once (snapshots share most files)."""
    def wrapper(text):
        key = (fn.__name__, text)
        if key not in _MEMO:
            _MEMO[key] = fn(text)
        return copy.deepcopy(_MEMO[key])
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ----------------------------------------------------------------------------------- workflows


def _yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        d = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    return d if isinstance(d, dict) else {}


def _on(d: dict) -> dict:
    return d.get("on") or d.get(True) or {}


@memo_text
def nightly_facts(text: str | None) -> dict | None:
    """cron and the inputs the nightly dispatches with (None: no nightly workflow)."""
    if not text:
        return None
    m = re.search(r"cron:\s*'([^']+)'", text)
    cron = m.group(1) if m else "0 8 * * *"
    blk = re.search(r"inputs:\s*\{(.*?)\}", text, re.S)
    inputs = dict(re.findall(r"(\w+):\s*'([^']*)'", blk.group(1))) if blk else {}
    return {"cron": cron, "inputs": inputs}


@memo_text
def dispatch_facts(text: str | None) -> dict:
    """Inputs' defaults and the benchmark jobs of benchmark_dispatch.yml."""
    d = _yaml(text)
    wd = (_on(d).get("workflow_dispatch") or {}) if isinstance(_on(d), dict) else {}
    inputs = {k: (v or {}).get("default") for k, v in (wd.get("inputs") or {}).items()}
    jobs = d.get("jobs") or {}
    out = []
    for name, job in jobs.items():
        uses = str(job.get("uses", ""))
        if not any(x in uses for x in ("benchmark.yml", "benchmark_tpu.yml", "benchmark_tpu_bridge.yml")):
            continue
        w = job.get("with") or {}
        conds = [str(job.get("if", ""))]
        needs = job.get("needs")
        needs = [needs] if isinstance(needs, str) else (needs or [])
        shards, kin = 1, None
        for n in needs:
            nj = jobs.get(n) or {}
            conds.append(str(nj.get("if", "")))
            nw = nj.get("with") or {}
            if "max-runners" in nw:
                shards = int(str(nw["max-runners"]))
            m = re.search(r"inputs\.(\w+)", str(nw.get("kernels", "")))
            if m:
                kin = m.group(1)
        toggle = None
        for c in conds:
            m = re.search(r"inputs\.(run_\w+)\s*==\s*'true'", c)
            if m:
                toggle = m.group(1)
        if kin is None:
            m = re.search(r"inputs\.(\w+)", str(w.get("kernels", "")))
            kin = m.group(1) if m else None
        kind = "tpu" if "benchmark_tpu.yml" in uses else "tpu_bridge" if "tpu_bridge" in uses else "gpu"
        out.append({"job": name, "kind": kind, "toggle": toggle, "alias": str(w.get("alias", "")),
                    "runner": str(w.get("runner", "")), "image": str(w.get("image", "")),
                    "runtime": str(w.get("runtime-version", "")), "backend": str(w.get("backend", "triton")),
                    "suite": str(w.get("suite", "tritonbench")), "kernels_input": kin, "shards": shards,
                    "container": str(w.get("container-options", ""))})
    return {"inputs": inputs, "jobs": out}


def _run_cmds(text: str) -> list[str]:
    """The `python benchmarks/run.py ...` command lines (continuations joined)."""
    joined = re.sub(r"\\\s*\n\s*", " ", text)
    return [l.strip() for l in joined.split("\n") if "benchmarks/run.py" in l and "--list-impls" not in l
            and "--op" in l or ("benchmarks/run.py" in l and "--kernel" in l and "--list" not in l)]


@memo_text
def bench_facts(text: str | None) -> dict:
    """benchmark.yml: the recording command's flags, env, torch pin, passes, linattn upload."""
    text = text or ""
    d = _yaml(text)
    env = {}
    for job in (d.get("jobs") or {}).values():
        env.update({str(k): str(v) for k, v in (job.get("env") or {}).items()})
    cmds = _run_cmds(text)
    rec = [c for c in cmds if "--output" in c] or cmds
    cmd = rec[-1] if rec else ""
    flags = {}
    toks = cmd.split()
    for i, t in enumerate(toks):
        if t.startswith("--"):
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            flags[t] = nxt if nxt and not nxt.startswith("--") and not nxt.startswith("$") else True
    cmd_env = dict(re.findall(r"\b(HELION_\w+)=(\S+)", cmd.split("python", 1)[0]))
    m = re.search(r'torch==([0-9.*]+)', text)
    pin = m.group(1) if m else ("nightly" if "--pre torch" in text else "unpinned")
    m = re.search(r"download\.pytorch\.org/whl/(test|nightly)/", text)
    channel = m.group(1) if m else "stable"
    triton_src = "source" if "git clone https://github.com/triton-lang/triton" in text else "bundled"
    lin = re.search(r"Install Linear-Attention Requirements(.*?)- name:", text, re.S)
    return {"env": env, "cmd_env": cmd_env, "flags": flags, "torch": pin, "channel": channel,
            "triton": triton_src, "passes": max(1, len([c for c in cmds if "--op" in c])),
            "cooldown": "sleep 2m" in text, "tb_pinned": "ci_commit_pins/tritonbench.txt" in text,
            "linattn_upload_ok": bool(lin and "uv pip install pip" in lin.group(1))}


# ----------------------------------------------------------------------------------- run.py


def _assign(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def _lit(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


@memo_text
def runpy_facts(text: str | None) -> dict:
    """KERNEL_MAPPINGS options, metric-mapping impl names, MAX_NUM_INPUTS."""
    out = {"kernels": {}, "metric_map": {}, "max_inputs": 20}
    if not text:
        return out
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    mx = _assign(tree, "MAX_NUM_INPUTS")
    if mx is not None and isinstance(_lit(mx), int):
        out["max_inputs"] = _lit(mx)
    km = _assign(tree, "KERNEL_MAPPINGS")
    if isinstance(km, ast.Dict):
        for k, v in zip(km.keys, km.values):
            name = _lit(k)
            if not isinstance(name, str):
                continue
            opts, helion_mod = {}, None
            if isinstance(v, ast.Tuple):
                for el in v.elts:
                    if isinstance(el, ast.Dict):
                        o = {}
                        for kk, vv in zip(el.keys, el.values):
                            kn = _lit(kk)
                            if isinstance(kn, str):
                                lv = _lit(vv)
                                o[kn] = lv if lv is not None else ast.unparse(vv)
                        opts = o
                if len(v.elts) > 1:
                    second = v.elts[1]
                    helion_mod = _lit(second) if isinstance(second, ast.Constant) else ast.unparse(second)
            out["kernels"][name] = {"opts": opts, "impl": str(helion_mod)}
    mm = _assign(tree, "KERNEL_METRIC_MAPPINGS")
    if isinstance(mm, ast.Dict):
        for k, v in zip(mm.keys, mm.values):
            name = _lit(k)
            d = _lit(v)
            if not isinstance(name, str) or not isinstance(d, dict):
                continue
            roles = {}
            for impl, role in d.items():
                if role == "baseline":
                    roles["baseline"] = impl
                elif role in ("triton_speedup", "torch_compile_speedup", "helion_speedup"):
                    roles[role] = impl.rsplit("-", 1)[0]
            out["metric_map"][name] = roles
    return out


@memo_text
def linattn_facts(text: str | None) -> dict | None:
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    names = {}
    for node in tree.body:
        tgt = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(tgt, ast.Name) and getattr(node, "value", None) is not None:
            names[tgt.id] = node.value

    def resolve(node):
        if node is None:
            return []
        if isinstance(node, ast.Name):
            return resolve(names.get(node.id))
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for el in node.elts:
                if isinstance(el, ast.Starred):
                    out += resolve(el.value)
                else:
                    lv = _lit(el)
                    out.append(lv)
            return out
        if isinstance(node, ast.Dict):
            return [_lit(k) for k in node.keys]
        return []

    shapes = [s[0] for s in resolve(names.get("SHAPES")) if isinstance(s, tuple)]
    varlen = [s[0] for s in resolve(names.get("VARLEN_SHAPES")) if isinstance(s, tuple)]
    variants = [v for v in resolve(names.get("VARIANTS")) if isinstance(v, str)]
    fwd_only = set()
    for nm in ("FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS"):
        fwd_only |= {v for v in resolve(names.get(nm)) if isinstance(v, str)}
    varlen_v = {v for v in resolve(names.get("VARLEN_VARIANTS")) if isinstance(v, str)}
    return {"shapes": shapes, "varlen_shapes": varlen, "variants": variants, "fwd_only": sorted(fwd_only),
            "varlen_variants": sorted(varlen_v)}


@memo_text
def tpu_facts(text: str | None) -> dict | None:
    """run_tpu.py: kernel -> its shape labels (tuple literals of its shapes function)."""
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    km = _assign(tree, "KERNEL_MAPPINGS")
    out = {}
    if not isinstance(km, ast.Dict):
        return {"kernels": out}
    for k, v in zip(km.keys, km.values):
        name = _lit(k)
        if not isinstance(name, str) or not isinstance(v, ast.Tuple):
            continue
        shapes, src = [], ""
        for el in v.elts:
            if isinstance(el, ast.Name) and el.id in funcs and "shape" in el.id:
                fn = funcs[el.id]
                src = ast.unparse(fn)
                for node in ast.walk(fn):
                    if isinstance(node, ast.Tuple) and node.elts and all(
                            isinstance(e, ast.Constant) and isinstance(e.value, int) for e in node.elts):
                        shapes.append(str(tuple(e.value for e in node.elts)))
        out[name] = {"shapes": list(dict.fromkeys(shapes)), "src": h(src + ast.unparse(v))}
    return {"kernels": out}


def tb_pin(text: str | None) -> str:
    return (text or "").strip()[:12] or "none"


# ----------------------------------------------------------------------------------- pretuned


@memo_text
def _pretuned_module(mod: str):
    """A pretuned kernel module: its baseline names, use_cudagraph(), shape count."""
    baselines, cg, nshapes = [], False, 0
    try:
        mt = ast.parse(mod)
        for node in ast.walk(mt):
            # ("name", fn) pairs in _baselines() or in a base_calls list / append
            scope = None
            if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
                scope = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                tgt = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(tgt, ast.Name) and tgt.id in ("base_calls", "baselines", "out") and \
                        isinstance(node.value, (ast.List, ast.ListComp)):
                    scope = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "append" and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id in ("base_calls", "baselines", "out") and node.args:
                scope = node.args[0]
            if scope is None:
                continue
            for t in ast.walk(scope):
                if isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(t.elts[0], ast.Constant) \
                        and isinstance(t.elts[0].value, str) and re.fullmatch(r"[a-z][a-z0-9_]*", t.elts[0].value):
                    baselines.append(t.elts[0].value)
        for fn in mt.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "use_cudagraph":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
                        cg = bool(node.value.value)
            if isinstance(fn, ast.FunctionDef) and fn.name == "main":
                nshapes = sum(1 for node in ast.walk(fn) if isinstance(node, ast.Tuple) and len(node.elts) >= 2
                              and all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in node.elts))
    except SyntaxError:
        pass
    if not baselines:
        baselines = re.findall(r'\(\s*"(\w+)"\s*,', mod)[:3] or ["torch"]
    return list(dict.fromkeys(baselines)), cg, nshapes


def pretuned_facts(git: Git, sha: str) -> dict | None:
    run = git.show(sha, "pretuned_kernels/run.py")
    nightly = git.show(sha, WF + "benchmark_pretuned_nightly.yml")
    if not run or not nightly:
        return None
    try:
        tree = ast.parse(run)
    except SyntaxError:
        return None
    kl = _lit(_assign(tree, "KERNELS")) or []
    hw_map = _lit(_assign(tree, "_HARDWARE_BY_COMPUTE")) or {"sm90": "h100", "sm100": "b200"}
    files = git.ls(sha, "pretuned_kernels/")
    bench = git.show(sha, "pretuned_kernels/_bench.py")
    disp = git.show(sha, WF + "benchmark_pretuned_dispatch.yml") or ""
    wf = git.show(sha, WF + "benchmark_pretuned.yml") or ""
    dd = _yaml(disp)
    aliases = {}
    for job in (dd.get("jobs") or {}).values():
        w = job.get("with") or {}
        if w.get("alias"):
            aliases[str(w["alias"])] = {"runner": str(w.get("runner", "")), "image": str(w.get("image", "")),
                                        "runtime": str(w.get("runtime-version", ""))}
    m = re.search(r'torch==([0-9.*]+)', wf)
    kernels = {}
    for k in kl:
        mod = git.show(sha, f"pretuned_kernels/{k}/{k}.py")
        if mod is None:
            continue
        baselines, cg, nshapes = _pretuned_module(mod)
        hw = {}
        for f in files:
            mm = re.match(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py$", f)
            if mm:
                hw[hw_map.get(mm.group(1), mm.group(1))] = (mm.group(1), h(git.show(sha, f)))
        kernels[k] = {"baselines": baselines, "cudagraph": cg, "nshapes": nshapes,
                      "module": h(mod), "hw": hw}
    return {"kernels": kernels, "order": [k for k in kl if k in kernels], "bench": h(bench),
            "bench_l2": "cache_clear" in (bench or "") or "clear_cache" in (bench or ""),
            "aliases": aliases, "torch": m.group(1) if m else "unpinned", "cute_ok": "install_cute" in wf,
            "vllm": "vllm" in wf.lower(),
            "cron": (re.search(r"cron:\s*'([^']+)'", nightly) or [None, "0 10 * * *"])[1]}


def tpu_wf_facts(git: Git, sha: str) -> dict:
    """The TPU jobs' machine and toolchain (runner label, jax/libtpu pins, torch_tpu pin)."""
    out = {}
    for name in ("benchmark_tpu.yml", "benchmark_tpu_bridge.yml"):
        t = git.show(sha, WF + name) or ""
        m = re.search(r"runs-on:\s*(\S+)", t)
        jx = re.search(r"jax==([0-9.]+)", t)
        lt = re.search(r"libtpu==([0-9.]+)", t)
        out[name] = {"runner": m.group(1) if m else "", "jax": jx.group(1) if jx else "",
                     "libtpu": lt.group(1) if lt else "", "torch": "nightly" if "--pre torch" in t else "pinned"}
    act = (git.show(sha, ".github/actions/install-pytorch-for-torchtpu/action.yml") or "") + \
          (git.show(sha, ".github/actions/build-torch-tpu/action.yml") or "")
    jx = re.search(r"jax==([0-9.]+)", act)
    lt = re.search(r"libtpu==([0-9.]+)", act)
    tool = out["benchmark_tpu.yml"]
    return {"runner": tool["runner"] or "linux.google.tpuv7x.1",
            "toolchain": "|".join([tool["jax"] or (jx.group(1) if jx else ""),
                                   tool["libtpu"] or (lt.group(1) if lt else ""), tool["torch"],
                                   tb_pin(git.show(sha, ".github/ci_commit_pins/torch_tpu.txt"))])}


@memo_text
def settings_facts(text: str | None) -> dict:
    """helion/runtime/settings.py: the autotune-in-subprocess default."""
    m = re.search(r'"HELION_AUTOTUNE_BENCHMARK_SUBPROCESS",\s*(True|False)', text or "")
    return {"subprocess_default": bool(m and m.group(1) == "True")}


@memo_text
def device_naming(runpy_text: str | None) -> dict:
    t = runpy_text or ""
    moved = "from helion._compat import get_device_name" in t  # the same naming, moved to helion/_compat.py
    return {"h100_short": 'return "NVIDIA H100"' in t or moved, "amd_arch": "gcnArchName" in t or moved,
            "shapes_in_json": '"shape": result.shape' in t}
