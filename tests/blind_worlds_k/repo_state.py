"""Read what ran each night from the real Helion files at a sha (parsed with ast / yaml, never imported)."""
from __future__ import annotations

import ast
import json
import re
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

WATCHED = [
    "benchmarks/run.py", "benchmarks/run_linattn.py", "benchmarks/run_tpu.py",
    ".github/workflows/benchmark.yml", ".github/workflows/benchmark_dispatch.yml",
    ".github/workflows/benchmark_nightly.yml", ".github/workflows/benchmark_tpu.yml",
    ".github/workflows/benchmark_tpu_bridge.yml", ".github/workflows/benchmark_pretuned.yml",
    ".github/workflows/benchmark_pretuned_dispatch.yml", ".github/workflows/benchmark_pretuned_nightly.yml",
    ".github/ci_commit_pins/tritonbench.txt", "pretuned_kernels",
]


class Repo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._blob: dict[str, str] = {}
        self._cat = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def git(self, *args) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                              text=True).stdout

    def tree(self, sha: str) -> dict[str, str]:
        out = self.git("ls-tree", "-r", sha, "--", *WATCHED)
        res = {}
        for line in out.splitlines():
            meta, path = line.split("\t", 1)
            res[path] = meta.split()[2]
        return res

    def blob(self, oid: str | None) -> str | None:
        if oid is None:
            return None
        if oid not in self._blob:
            self._cat.stdin.write((oid + "\n").encode())
            self._cat.stdin.flush()
            header = self._cat.stdout.readline().split()
            size = int(header[2])
            data = self._cat.stdout.read(size + 1)[:-1]
            self._blob[oid] = data.decode("utf-8", "replace")
        return self._blob[oid]

    def close(self):
        try:
            self._cat.stdin.close()
            self._cat.wait(timeout=5)
        except Exception:
            self._cat.kill()


def _lit(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


@lru_cache(maxsize=None)
def parse_run_py(text: str) -> tuple[dict, int]:
    """KERNEL_MAPPINGS -> {kernel: {"nocg": bool, "num_inputs": int|None}}, MAX_NUM_INPUTS."""
    tree = ast.parse(text)
    maps, max_n = {}, 20
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target == "MAX_NUM_INPUTS" and isinstance(value, ast.Constant):
            max_n = int(value.value)
        if target == "KERNEL_MAPPINGS" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                name = _lit(k)
                if not isinstance(name, str) or not isinstance(v, ast.Tuple):
                    continue
                opts = {}
                last = v.elts[-1] if v.elts else None
                if isinstance(last, ast.Dict):
                    opts = {(_lit(a)): b for a, b in zip(last.keys, last.values)}
                rf = _lit(opts["remove_flags"]) if "remove_flags" in opts else []
                ni = _lit(opts["num_inputs"]) if "num_inputs" in opts else None
                maps[name] = {"nocg": "--cudagraph" in (rf or []), "num_inputs": ni}
    return maps, max_n


@lru_cache(maxsize=None)
def parse_linattn(text: str) -> tuple[tuple, tuple, int, int]:
    tree = ast.parse(text)
    env = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            t = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(t, ast.Name) and node.value is not None:
                env[t.id] = node.value
    def names(n):
        v = env.get(n)
        if v is None:
            return []
        if isinstance(v, ast.Dict):
            return [_lit(k) for k in v.keys]
        if isinstance(v, ast.List):
            out = []
            for e in v.elts:
                if isinstance(e, ast.Constant):
                    out.append(e.value)
                elif isinstance(e, ast.Starred) and isinstance(e.value, ast.Name):
                    out.extend(names(e.value.id))
            return out
        return []
    dense = tuple(names("DENSE_VARIANTS") or names("VARIANTS"))
    fwd_only = tuple(x for x in names("VARIANTS") if x not in dense)
    shapes = env.get("SHAPES")
    vshapes = env.get("VARLEN_SHAPES")
    ns = len(shapes.elts) if isinstance(shapes, ast.List) else 0
    nv = len(vshapes.elts) if isinstance(vshapes, ast.List) else 0
    return dense, fwd_only, ns, nv


@lru_cache(maxsize=None)
def parse_run_tpu(text: str) -> tuple:
    tree = ast.parse(text)
    for node in tree.body:
        t = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(t, ast.Name) and t.id == "KERNEL_MAPPINGS" and isinstance(node.value, ast.Dict):
            return tuple(k for k in (_lit(x) for x in node.value.keys) if isinstance(k, str))
    return ()


def _yaml(text):
    if not text:
        return {}
    try:
        d = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    if True in d and "on" not in d:
        d["on"] = d.pop(True)
    return d


_INPUT_REF = re.compile(r"inputs\.(\w+)")
_RUN_TRUE = re.compile(r"(run_\w+)\s*:\s*'true'")


@lru_cache(maxsize=None)
def parse_dispatch(text: str, nightly_text: str, tpu_text: str, bridge_text: str) -> dict:
    """alias -> {runner, image, runtime, suites: {suite: [kernels]}} for the jobs the nightly cron enables."""
    d = _yaml(text)
    inputs = ((d.get("on") or {}).get("workflow_dispatch") or {}).get("inputs") or {}
    defaults = {k: [x.strip() for x in str((v or {}).get("default", "")).split(",") if x.strip()]
                for k, v in inputs.items() if k.startswith("kernels")}
    enabled = set(_RUN_TRUE.findall(nightly_text or ""))
    jobs = d.get("jobs") or {}
    out: dict[str, dict] = {}
    for name, job in jobs.items():
        w = (job or {}).get("with") or {}
        alias = w.get("alias")
        if not alias:
            continue
        gates = _INPUT_REF.findall(str(job.get("if", "")))
        kin = _INPUT_REF.findall(str(w.get("kernels", "")))
        needs = job.get("needs")
        for nd in ([needs] if isinstance(needs, str) else (needs or [])):
            nj = jobs.get(nd) or {}
            gates += _INPUT_REF.findall(str(nj.get("if", "")))
            kin += _INPUT_REF.findall(str((nj.get("with") or {}).get("kernels", "")))
        gate = next((g for g in gates if g.startswith("run_")), None)
        if gate is None or gate not in enabled:
            continue
        uses = str(job.get("uses", ""))
        runner, image, runtime = w.get("runner"), w.get("image"), w.get("runtime-version")
        if "tpu" in uses:
            wf = _yaml(tpu_text if uses.endswith("benchmark_tpu.yml") else bridge_text)
            for j in (wf.get("jobs") or {}).values():
                runner = runner or j.get("runs-on")
            image = image or "tpu"
            runtime = runtime or "tpu"
        suite = w.get("suite") or ("tpu" if uses.endswith("benchmark_tpu.yml") else
                                   "tpu_bridge" if "tpu_bridge" in uses else "tritonbench")
        kernels = defaults.get(kin[0], []) if kin else []
        key = "tpu" if alias == "tpu_bridge" else alias
        ent = out.setdefault(key, {"runner": runner, "image": image, "runtime": runtime, "backend":
                                   w.get("backend", "triton"), "suites": {}})
        if suite in ("tritonbench", "tpu") and alias == key:
            ent.update(runner=runner, image=image, runtime=runtime)
        ent["suites"][suite] = kernels
    return out


@lru_cache(maxsize=None)
def parse_bench_yml(text: str) -> dict:
    """What benchmark.yml does to the numbers: autotune env, torch pin, run.py flags."""
    text = text or ""
    env = {}
    d = _yaml(text)
    for j in (d.get("jobs") or {}).values():
        for k, v in ((j or {}).get("env") or {}).items():
            if k.startswith("HELION_AUTOTUNE") and "LOG" not in k:
                env[k] = str(v)
    pin = re.findall(r"(torch[=<>~]=?[^\"'\s]+|--pre torch[^\n]*|whl/nightly[^\s\"']*)", text)
    m = re.search(r"python benchmarks/run\.py \\\s*\n(.*?)(?:\n\s*\n|echo)", text, re.S)
    flags = tuple(sorted(set(re.findall(r"(--[a-z][a-z0-9-]*)", m.group(1))))) if m else ()
    lat_mode = re.search(r"--latency-measure-mode\s+(\S+)", text)
    return {"autotune_env": tuple(sorted(env.items())), "torch_pin": tuple(pin[:1]),
            "flags": flags, "latency_mode": lat_mode.group(1) if lat_mode else None,
            "compile_time": "--measure-compile-time" in flags}


@lru_cache(maxsize=None)
def parse_pretuned_kernel(text: str) -> tuple[tuple, bool]:
    """(baseline names, use_cudagraph()) from pretuned_kernels/<k>/<k>.py."""
    names, cg = [], False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return (), False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Tuple) and sub.elts and isinstance(sub.elts[0], ast.Constant) \
                        and isinstance(sub.elts[0].value, str):
                    names.append(sub.elts[0].value)
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    cg = bool(sub.value.value)
    if not names:
        names = re.findall(r'"([A-Za-z][\w .+-]*)",\s*(?:lambda|functools|partial|_)', text)[:4] or ["torch"]
    return tuple(dict.fromkeys(names)), cg


@lru_cache(maxsize=None)
def parse_pretuned_list(text: str) -> tuple:
    tree = ast.parse(text)
    for node in tree.body:
        t = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(t, ast.Name) and t.id == "KERNELS":
            v = _lit(node.value)
            return tuple(v or ())
    return ()


PRETUNED_SM = {"sm90": "h100", "sm100": "b200"}


@dataclass
class State:
    sha: str
    tree: dict
    platforms: dict = field(default_factory=dict)  # alias -> {runner,image,runtime,backend,suites}
    mappings: dict = field(default_factory=dict)
    max_inputs: int = 20
    linattn: tuple = ((), (), 0, 0)
    bench: dict = field(default_factory=dict)
    nightly_env: str = ""
    tb_pin: str | None = None
    pretuned: dict = field(default_factory=dict)  # (alias, kernel) -> {baselines, cg, aot}
    pretuned_bench: str | None = None
    pretuned_env: str | None = None
    pretuned_aliases: tuple = ()
    dispatch_text: str = ""
    pretuned_dispatch_text: str = ""

    def kernels(self, alias: str) -> dict[str, str]:
        """kernel -> suite for what this alias runs nightly."""
        p = self.platforms.get(alias)
        if not p:
            return {}
        out = {}
        for suite, ks in p["suites"].items():
            if suite == "linattn":
                dense, fwd_only, _, _ = self.linattn
                for v in ks:
                    if v in dense or v in fwd_only:
                        out[v] = "linattn"
                        if v in dense:
                            out[v + "-bwd"] = "linattn"
            elif suite == "tritonbench":
                for k in ks:
                    if k in self.mappings:
                        out[k] = suite
            else:
                for k in ks:
                    out[k] = suite
        return out


def read_state(repo: Repo, sha: str) -> State:
    tree = repo.tree(sha)
    b = lambda p: repo.blob(tree.get(p))
    st = State(sha=sha, tree=tree)
    st.dispatch_text = b(".github/workflows/benchmark_dispatch.yml") or ""
    st.nightly_env = " ".join(re.findall(r"env_vars:\s*'([^']*)'", b(".github/workflows/benchmark_nightly.yml") or ""))
    st.platforms = parse_dispatch(st.dispatch_text, b(".github/workflows/benchmark_nightly.yml") or "",
                                  b(".github/workflows/benchmark_tpu.yml") or "",
                                  b(".github/workflows/benchmark_tpu_bridge.yml") or "")
    if b("benchmarks/run.py"):
        st.mappings, st.max_inputs = parse_run_py(b("benchmarks/run.py"))
    if b("benchmarks/run_linattn.py"):
        st.linattn = parse_linattn(b("benchmarks/run_linattn.py"))
    st.bench = parse_bench_yml(b(".github/workflows/benchmark.yml") or "")
    st.tb_pin = tree.get(".github/ci_commit_pins/tritonbench.txt")
    if ".github/workflows/benchmark_pretuned_nightly.yml" in tree and "pretuned_kernels/run.py" in tree:
        st.pretuned_dispatch_text = b(".github/workflows/benchmark_pretuned_dispatch.yml") or ""
        st.pretuned_aliases = tuple(sorted(set(re.findall(r"alias:\s*(\S+)", st.pretuned_dispatch_text))))
        st.pretuned_bench = tree.get("pretuned_kernels/_bench.py")
        st.pretuned_env = str(parse_bench_yml(b(".github/workflows/benchmark_pretuned.yml") or "")["torch_pin"])
        for k in parse_pretuned_list(b("pretuned_kernels/run.py")):
            src = b(f"pretuned_kernels/{k}/{k}.py")
            if src is None:
                continue
            baselines, cg = parse_pretuned_kernel(src)
            for path, oid in tree.items():
                m = re.fullmatch(rf"pretuned_kernels/{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py", path)
                if m and PRETUNED_SM.get(m.group(1)) in st.pretuned_aliases:
                    st.pretuned[(PRETUNED_SM[m.group(1)], k)] = {"baselines": baselines, "cg": cg, "aot": oid}
    return st


def first_parent(repo: Repo) -> list[dict]:
    out = repo.git("log", "--first-parent", "--reverse", "--format=%H%x09%ct%x09%s", "main")
    res = []
    for line in out.splitlines():
        sha, ct, subj = line.split("\t", 2)
        res.append({"sha": sha, "ts": int(ct), "subject": subj})
    return res


def files_of(repo: Repo, sha: str) -> list[str]:
    return [f for f in repo.git("show", "--first-parent", "--format=", "--name-only", sha).splitlines() if f]
