"""What runs each night, read (parsed, never imported or executed) from the real Helion files.

Everything here works on a clone of the bundle through plain ``git`` plumbing: ``ls-tree`` for the
blob ids at a commit, ``cat-file`` for their text, ``yaml.safe_load`` / ``ast`` / regular expressions
for the facts. Facts are memoised per blob id, so reading 150 nightlies costs a few seconds.
"""
from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

WF = ".github/workflows/"
DISPATCH = WF + "benchmark_dispatch.yml"
NIGHTLY = WF + "benchmark_nightly.yml"
BENCH_YML = WF + "benchmark.yml"
TPU_YML = WF + "benchmark_tpu.yml"
RUN_PY = "benchmarks/run.py"
LINATTN_PY = "benchmarks/run_linattn.py"
TPU_PY = "benchmarks/run_tpu.py"
P_DIR = "pretuned_kernels/"
P_RUN = "pretuned_kernels/run.py"
P_BENCH = "pretuned_kernels/_bench.py"
P_DISPATCH = WF + "benchmark_pretuned_dispatch.yml"
P_NIGHTLY = WF + "benchmark_pretuned_nightly.yml"
P_YML = WF + "benchmark_pretuned.yml"
WATCHED = [WF, "benchmarks/run.py", "benchmarks/run_linattn.py", "benchmarks/run_tpu.py", P_DIR]
HW_BY_SM = {"sm90": "h100", "sm100": "b200"}
GPU_ALIASES_TRITON = ("h100", "b200", "mi325x", "mi350x")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


@dataclass
class Commit:
    sha: str
    time: datetime
    subject: str
    files: list = field(default_factory=list)


class Repo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._blob: dict[str, str] = {}
        self._tree: dict[str, dict] = {}
        self._memo: dict = {}
        out = git(self.path, "log", "--first-parent", "--reverse", "--format=%x00%H%x01%ct%x01%s",
                  "--name-only", "main")
        self.commits: list[Commit] = []
        for chunk in out.split("\x00")[1:]:
            head, _, rest = chunk.partition("\n")
            sha, ct, subj = head.split("\x01", 2)
            files = [l for l in rest.splitlines() if l.strip()]
            self.commits.append(Commit(sha, datetime.fromtimestamp(int(ct), timezone.utc), subj, files))
        self.index = {c.sha: i for i, c in enumerate(self.commits)}

    def head_at(self, when: datetime) -> int:
        """Index of the first-parent commit that was HEAD of main at ``when``."""
        lo, hi = 0, len(self.commits) - 1
        best = 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.commits[mid].time <= when:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    def tree(self, sha: str) -> dict:
        t = self._tree.get(sha)
        if t is None:
            out = git(self.path, "ls-tree", "-r", sha, "--", *WATCHED)
            t = {}
            for line in out.splitlines():
                meta, path = line.split("\t", 1)
                t[path] = meta.split()[2]
            self._tree[sha] = t
        return t

    def blob(self, oid: str | None) -> str:
        if oid is None:
            return ""
        b = self._blob.get(oid)
        if b is None:
            b = subprocess.run(["git", "-C", str(self.path), "cat-file", "-p", oid], check=True,
                               capture_output=True).stdout.decode("utf-8", "replace")
            self._blob[oid] = b
        return b

    def text(self, sha: str, path: str) -> str:
        return self.blob(self.tree(sha).get(path))

    def memo(self, key, fn):
        if key not in self._memo:
            self._memo[key] = fn()
        return self._memo[key]

    def window(self, a: str, b: str) -> list[Commit]:
        """First-parent commits in (a, b], oldest first."""
        ia, ib = self.index[a], self.index[b]
        return self.commits[ia + 1:ib + 1]


# ---------------------------------------------------------------- parsers (pure, on text)

def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def parse_run_py(src: str) -> dict:
    """KERNEL_MAPPINGS -> {kernel: {"cudagraph": bool, "num_inputs": int}}."""
    out, max_inputs = {}, 20
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return {}
    for node in tree.body:
        tgt = val = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt == "MAX_NUM_INPUTS" and isinstance(val, ast.Constant) and isinstance(val.value, int):
            max_inputs = val.value
        if tgt == "KERNEL_MAPPINGS" and isinstance(val, ast.Dict):
            for k, v in zip(val.keys, val.values):
                if not isinstance(k, ast.Constant) or not isinstance(k.value, str):
                    continue
                opts = {}
                if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
                    opts = _literal(v.elts[-1]) or {}
                out[k.value] = opts
    res = {}
    for k, opts in out.items():
        rf = opts.get("remove_flags") or []
        n = opts.get("num_inputs", max_inputs)
        res[k] = {"cudagraph": "--cudagraph" not in rf,
                  "num_inputs": min(int(n) if isinstance(n, int) else max_inputs, max_inputs)}
    return res


def parse_module_literals(src: str) -> dict:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return {}
    env: dict = {}
    for node in tree.body:
        tgt = val = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt is None or val is None:
            continue
        lit = _literal(val)
        if lit is None and isinstance(val, ast.List) and val.elts and all(
                isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant) for e in val.elts):
            lit = [(e.elts[0].value,) for e in val.elts]  # rows with computed fields: keep their names
        if lit is None and isinstance(val, ast.List):  # [*A, *B] over known names
            items = []
            for e in val.elts:
                if isinstance(e, ast.Starred) and isinstance(e.value, ast.Name) and e.value.id in env:
                    items.extend(list(env[e.value.id]))
                elif isinstance(e, ast.Constant):
                    items.append(e.value)
            lit = items
        if lit is not None:
            env[tgt] = lit
    return env


def parse_linattn(src: str) -> dict:
    env = parse_module_literals(src)
    variants = list(env.get("VARIANTS") or [])
    dense = list(env.get("DENSE_VARIANTS") or variants)
    varlen = list((env.get("VARLEN_VARIANTS") or {}).keys())
    shapes = env.get("SHAPES") or []
    vshapes = env.get("VARLEN_SHAPES") or []
    return {"variants": variants, "dense": dense, "varlen": varlen,
            "shapes": [s[0] if isinstance(s, (tuple, list)) else str(s) for s in shapes],
            "varlen_shapes": [s[0] if isinstance(s, (tuple, list)) else str(s) for s in vshapes]}


def parse_tpu_py(src: str) -> list:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    for node in tree.body:
        tgt = val = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt == "KERNEL_MAPPINGS" and isinstance(val, ast.Dict):
            return [k.value for k in val.keys if isinstance(k, ast.Constant)]
    return []


def nightly_flags(src: str) -> set:
    return set(re.findall(r"\b(run_\w+):\s*'true'", src))


def _yaml(src: str) -> dict:
    try:
        d = yaml.safe_load(src) or {}
    except yaml.YAMLError:
        return {}
    return d if isinstance(d, dict) else {}


def parse_dispatch(src: str) -> dict:
    """{"inputs": {name: default}, "jobs": [{alias, flag, runner, image, runtime, kernels_input, suite, backend}]}"""
    d = _yaml(src)
    on = d.get("on", d.get(True, {})) or {}
    inputs = ((on.get("workflow_dispatch") or {}).get("inputs") or {}) if isinstance(on, dict) else {}
    defaults = {k: (v or {}).get("default") for k, v in inputs.items()}
    jobs = d.get("jobs") or {}
    out = []
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        w = job.get("with") or {}
        uses = str(job.get("uses", ""))
        if "alias" not in w or "compute-benchmark-matrix" in uses:
            continue
        cond = str(job.get("if", ""))
        kin = str(w.get("kernels", ""))
        needs = job.get("needs")
        needs = [needs] if isinstance(needs, str) else (needs or [])
        for n in needs:
            nj = jobs.get(n) or {}
            cond += " " + str(nj.get("if", ""))
            if "matrix.kernels" in kin:
                kin = str((nj.get("with") or {}).get("kernels", ""))
        m = re.search(r"inputs\.(run_\w+)", cond)
        k = re.search(r"inputs\.(kernels\w*)", kin)
        out.append(dict(job=name, alias=str(w["alias"]), flag=m.group(1) if m else None,
                        runner=str(w.get("runner", "")), image=str(w.get("image", "")),
                        runtime=str(w.get("runtime-version", "")), suite=str(w.get("suite", "")),
                        backend=str(w.get("backend", "")), uses=uses,
                        kernels_input=k.group(1) if k else None))
    return {"inputs": defaults, "jobs": out}


def parse_bench_yml(src: str) -> dict:
    env = sorted((k, v.strip()) for k, v in re.findall(
        r'^\s+(HELION_AUTOTUNE_[A-Z_]+):\s*"?([^"\n#]*)"?', src, re.M) if "LOG" not in k)
    pins = sorted(set(re.findall(r"\b(?:torch|triton)\s*[=~<>!]=\s*[^\s\"']+", src)))
    if "whl/nightly" in src:
        pins.append("nightly-index")
    m = re.search(r"--latency-measure-mode\s+(\S+)", src)
    return {"autotune_env": tuple(env), "pins": tuple(pins),
            "cudagraph": bool(re.search(r"^\s*--cudagraph\b", src, re.M)),
            "latency_mode": m.group(1) if m else None}


def _function_return(src: str, fn: str):
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and sub.value is not None:
                    return sub.value
    return None


def pretuned_baselines(src: str) -> tuple:
    ret = _function_return(src, "_baselines")
    names = []
    if ret is not None:
        for sub in ast.walk(ret):
            if isinstance(sub, ast.Tuple) and sub.elts and isinstance(sub.elts[0], ast.Constant) \
                    and isinstance(sub.elts[0].value, str):
                names.append(sub.elts[0].value)
    if not names:  # kernels that name baselines some other way: quoted keys of a "baselines" dict
        names = sorted(set(re.findall(r'\(\s*"([a-z][a-z0-9_]*)"\s*,\s*(?:_|lambda|torch|functools)', src)))[:4]
    return tuple(names) or ("torch",)


def pretuned_cudagraph(src: str) -> bool:
    ret = _function_return(src, "use_cudagraph")
    return bool(ret.value) if isinstance(ret, ast.Constant) else False


# ---------------------------------------------------------------- facts at a commit

def gpu_facts(repo: Repo, sha: str) -> dict:
    t = repo.tree(sha)
    key = ("gpu", t.get(DISPATCH), t.get(NIGHTLY), t.get(BENCH_YML), t.get(RUN_PY), t.get(LINATTN_PY),
           t.get(TPU_PY), t.get(TPU_YML), t.get(WF + "benchmark_tpu_bridge.yml"))
    return repo.memo(key, lambda: _gpu_facts(repo, sha))


def _gpu_facts(repo: Repo, sha: str) -> dict:
    disp = parse_dispatch(repo.text(sha, DISPATCH))
    flags = nightly_flags(repo.text(sha, NIGHTLY))
    run = parse_run_py(repo.text(sha, RUN_PY))
    lin = parse_linattn(repo.text(sha, LINATTN_PY))
    tpu_k = parse_tpu_py(repo.text(sha, TPU_PY))
    bench = parse_bench_yml(repo.text(sha, BENCH_YML))
    tpu_yml = repo.text(sha, TPU_YML)
    m = re.search(r"runs-on:\s*(\S+)", tpu_yml)
    tpu_runner = m.group(1) if m else ""
    inputs = disp["inputs"]

    def listed(name):
        v = inputs.get(name) or ""
        return [k.strip() for k in str(v).split(",") if k.strip()]

    platforms: dict = {}
    for j in disp["jobs"]:
        if j["flag"] is None or j["flag"] not in flags:
            continue
        alias = j["alias"]
        if alias == "tpu_bridge":
            alias = "tpu"
        p = platforms.setdefault(alias, dict(series={}, runner="", image="", runtime=""))
        if j["suite"] == "linattn":
            rows = {}
            for v in listed(j["kernels_input"] or "kernels_linattn"):
                if v not in lin["variants"]:
                    continue
                shapes = lin["varlen_shapes"] if v in lin["varlen"] else lin["shapes"]
                rows[v] = dict(fam="linattn", shapes=len(shapes), cudagraph=False, shape_names=tuple(shapes))
                if v in lin["dense"]:
                    rows[v + "-bwd"] = dict(fam="linattn", shapes=len(shapes), cudagraph=False,
                                            shape_names=tuple(shapes))
            p["series"].update(rows)
            p.setdefault("runner", j["runner"])
            continue
        if "benchmark_tpu" in j["uses"]:
            names = listed(j["kernels_input"] or "kernels_tpu")
            names = list(tpu_k) if names == ["all"] else names
            for k in names:
                if k in tpu_k:
                    p["series"][k] = dict(fam="tpu", shapes=6, cudagraph=False)
            for k in listed("kernels_tpu_bridge"):
                if k in run:
                    p["series"][k] = dict(fam="tpu", shapes=min(run[k]["num_inputs"], 12), cudagraph=False)
            p["runner"], p["image"], p["runtime"] = tpu_runner, "", ""
            continue
        for k in listed(j["kernels_input"] or "kernels"):
            if k in run:
                p["series"][k] = dict(fam="gpu", shapes=run[k]["num_inputs"],
                                      cudagraph=run[k]["cudagraph"] and bench["cudagraph"])
        p["runner"], p["image"], p["runtime"] = j["runner"], j["image"], j["runtime"]
    return {"platforms": platforms, "bench": bench, "run": run, "lin": lin}


def pretuned_facts(repo: Repo, sha: str) -> dict | None:
    t = repo.tree(sha)
    if P_RUN not in t:
        return None
    key = ("pre",) + tuple(sorted((p, o) for p, o in t.items() if p.startswith(P_DIR) or p in (P_DISPATCH, P_NIGHTLY, P_YML)))
    return repo.memo(key, lambda: _pretuned_facts(repo, sha))


def _pretuned_facts(repo: Repo, sha: str) -> dict:
    t = repo.tree(sha)
    env = parse_module_literals(repo.text(sha, P_RUN))
    kernels = [k for k in env.get("KERNELS") or [] if isinstance(k, str)]
    disp = parse_dispatch(repo.text(sha, P_DISPATCH))
    flags = nightly_flags(repo.text(sha, P_NIGHTLY))
    aliases = {j["alias"]: j for j in disp["jobs"] if j["flag"] in flags or not flags}
    ymlf = parse_bench_yml(repo.text(sha, P_YML))
    series = {}
    for k in kernels:
        main_src = repo.text(sha, f"{P_DIR}{k}/{k}.py")
        base = pretuned_baselines(main_src)
        cg = pretuned_cudagraph(main_src)
        for path, oid in t.items():
            m = re.fullmatch(rf"{re.escape(P_DIR)}{re.escape(k)}/_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py", path)
            if not m:
                continue
            hw = HW_BY_SM.get(m.group(1), m.group(1))
            if hw in aliases:
                series[(hw, k)] = dict(baselines=base, cudagraph=cg, config=oid, sm=m.group(1))
    return {"series": series, "bench": t.get(P_BENCH), "pins": ymlf["pins"],
            "runners": {a: (j["runner"], j["image"]) for a, j in aliases.items()}}


def find_change(repo: Repo, a: str, b: str, paths: tuple, fn) -> str | None:
    """The first commit in (a, b] touching ``paths`` at which ``fn(sha)`` differs from ``fn(a)``."""
    v0 = fn(a)
    for c in repo.window(a, b):
        if any(f.startswith(p) for f in c.files for p in paths) and fn(c.sha) != v0:
            return c.sha
    return None
