"""The real Helion history, and the benchmark facts read from its files at a sha.

Nothing here imports or runs repository code: files are read with `git cat-file` and parsed with
ast / regular expressions. Facts are cached per blob id, so reading them at every nightly is cheap.
"""
from __future__ import annotations

import ast
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tests.shared_data import bundle_path

BUNDLE = bundle_path()  # the shared data folder, found by one rule (tests/shared_data.py)

WATCHED = (
    ".github/workflows/benchmark.yml",
    ".github/workflows/benchmark_dispatch.yml",
    ".github/workflows/benchmark_nightly.yml",
    ".github/workflows/benchmark_tpu.yml",
    ".github/workflows/benchmark_tpu_bridge.yml",
    ".github/workflows/benchmark_pretuned.yml",
    ".github/workflows/benchmark_pretuned_dispatch.yml",
    ".github/workflows/benchmark_pretuned_nightly.yml",
    "benchmarks/run.py",
    "benchmarks/run_linattn.py",
    "benchmarks/run_tpu.py",
    "pretuned_kernels/run.py",
    "pretuned_kernels/_bench.py",
)


@dataclass(frozen=True)
class Commit:
    sha: str
    date: datetime
    subject: str
    files: tuple


def git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, input=input).stdout


def clone(dest: Path) -> Path:
    dest = Path(dest)
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(BUNDLE), str(dest)], check=True)
    return dest


def first_parent(repo: Path) -> list[Commit]:
    out = git(repo, "log", "--first-parent", "--reverse", "-m", "--name-only",
              "--format=\x1e%H\x1f%cI\x1f%s").decode("utf-8", "replace")
    commits = []
    for rec in out.split("\x1e")[1:]:
        head, _, rest = rec.partition("\n")
        sha, date, subject = head.split("\x1f", 2)
        files = tuple(sorted({f for f in rest.split("\n") if f.strip()}))
        commits.append(Commit(sha, datetime.fromisoformat(date).astimezone(timezone.utc), subject, files))
    return commits


class Reader:
    """Blob-cached file reader at a sha."""

    def __init__(self, repo: Path):
        self.repo = repo
        self._tree: dict[str, dict[str, str]] = {}
        self._blob: dict[str, str] = {}
        self._facts: dict[tuple, object] = {}

    def tree(self, sha: str) -> dict[str, str]:
        if sha not in self._tree:
            out = git(self.repo, "ls-tree", "-r", sha, "--", *WATCHED, "pretuned_kernels/").decode()
            t = {}
            for line in out.splitlines():
                meta, path = line.split("\t", 1)
                t[path] = meta.split()[2]
            self._tree[sha] = t
        return self._tree[sha]

    def blob(self, bid: str) -> str:
        if bid not in self._blob:
            self._blob[bid] = git(self.repo, "cat-file", "blob", bid).decode("utf-8", "replace")
        return self._blob[bid]

    def text(self, sha: str, path: str) -> str | None:
        bid = self.tree(sha).get(path)
        return None if bid is None else self.blob(bid)

    def parsed(self, sha: str, path: str, fn):
        bid = self.tree(sha).get(path)
        key = (fn.__name__, bid)
        if key not in self._facts:
            self._facts[key] = fn(self.blob(bid)) if bid else None
        return self._facts[key]


# ---------------------------------------------------------------- parsers (pure functions of a file text)

def parse_nightly(text: str) -> dict:
    env = re.findall(r"env_vars:\s*'([^']*)'", text)
    return dict(flags=frozenset(re.findall(r"(run_\w+):\s*'true'", text)), env=tuple(env))


def parse_dispatch(text: str) -> dict:
    """kernel defaults per input, and per job: alias, suite, backend, runner, image, runtime-version."""
    defaults = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^\s+(kernels\w*):\s*$", line)
        if m:
            cur = m.group(1)
            continue
        if cur:
            md = re.match(r'^\s+default:\s*"([^"]*)"', line)
            if md:
                defaults[cur] = tuple(k.strip() for k in md.group(1).split(",") if k.strip())
                cur = None
    jobs = {}
    body = text.split("\njobs:", 1)[-1]
    for block in re.split(r"\n  (?=[\w-]+:\s*\n)", body):
        name = block.split(":", 1)[0].strip()
        g = lambda key: (re.search(rf"^\s+{key}:\s*(\S+)", block, re.M) or [None, None])[1]
        alias = g("alias")
        if not alias:
            continue
        jobs[name] = dict(alias=alias, suite=g("suite") or "tritonbench", backend=g("backend"),
                          runner=g("runner") or g("runs-on"), image=g("image"), runtime=g("runtime-version"),
                          uses=g("uses"))
    return dict(defaults=defaults, jobs=jobs)


def parse_bench_yml(text: str) -> dict:
    env = tuple(sorted(set(e for e in re.findall(r"(HELION_AUTOTUNE_\w+):\s*\"?([^\s\"]+)", text)
                           if "LOG" not in e[0])))
    torch_pins = tuple(re.findall(r"torch==[\w.*+]+", text)[:1])
    triton_pins = tuple(sorted(set(re.findall(r"triton==[\w.*+]+|pytorch-triton[\w.=*+-]*", text))))
    mode = re.findall(r"--latency-measure-mode\s+(\S+)", text)
    return dict(env=env, torch=torch_pins, triton=triton_pins, cudagraph="--cudagraph" in text,
                latency_mode=tuple(sorted(set(mode))))


def _kernel_options(node) -> dict:
    opts = {}
    if isinstance(node, ast.Tuple):
        for elt in node.elts:
            if isinstance(elt, ast.Dict):
                for k, v in zip(elt.keys, elt.values):
                    if isinstance(k, ast.Constant):
                        try:
                            opts[k.value] = ast.literal_eval(v)
                        except Exception:
                            opts[k.value] = ast.dump(v)
    return opts


def parse_run_py(text: str) -> dict:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return dict(max_inputs=20, kernels={})
    max_inputs, kernels = 20, {}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target == "MAX_NUM_INPUTS" and isinstance(value, ast.Constant):
            max_inputs = value.value
        if target == "KERNEL_MAPPINGS" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant):
                    o = _kernel_options(v)
                    kernels[k.value] = dict(
                        cudagraph="--cudagraph" not in (o.get("remove_flags") or []),
                        num_inputs=o.get("num_inputs") if isinstance(o.get("num_inputs"), int) else None)
    return dict(max_inputs=max_inputs, kernels=kernels)


def parse_linattn(text: str) -> dict:
    out = {}
    for name in ("SHAPES", "VARLEN_SHAPES"):
        m = re.search(rf"^{name}\b[^=]*=\s*\[(.*?)^\]", text, re.M | re.S)
        out[name] = tuple(re.findall(r'\(\s*"([^"]+)"', m.group(1))) if m else ()
    return out


def parse_run_tpu(text: str) -> dict:
    m = re.search(r"^KERNEL_MAPPINGS\b.*?=\s*\{(.*?)^\}", text, re.M | re.S)
    if not m:
        return {}
    body = m.group(1)
    entries = {}
    for km in re.finditer(r'^    "([\w-]+)":\s*(.*?)(?=^    "[\w-]+":|\Z)', body, re.M | re.S):
        entries[km.group(1)] = text_hash(re.sub(r"#.*|\s+", "", km.group(2)))
    return entries


def parse_pretuned_kernels(text: str) -> tuple:
    m = re.search(r"^KERNELS\s*=\s*\[(.*?)^\]", text, re.M | re.S)
    return tuple(re.findall(r'"([\w-]+)"', re.sub(r"#.*", "", m.group(1)))) if m else ()


def parse_pretuned_module(text: str) -> dict:
    cg = None
    m = re.search(r"def use_cudagraph\(\)[^:]*:\s*(?:\"\"\".*?\"\"\"\s*)?return\s+(True|False)", text, re.S)
    if m:
        cg = m.group(1) == "True"
    baselines = ()
    try:
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in ("_baselines", "baselines"):
                names = []
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Tuple) and sub.elts and isinstance(sub.elts[0], ast.Constant) \
                            and isinstance(sub.elts[0].value, str):
                        names.append(sub.elts[0].value)
                baselines = tuple(dict.fromkeys(names))
    except SyntaxError:
        pass
    return dict(cudagraph=bool(cg) if cg is not None else True, baselines=baselines or ("torch",))


def text_hash(text: str) -> str:
    import hashlib
    return hashlib.sha1(text.encode()).hexdigest()[:12]


# ---------------------------------------------------------------- the facts at one sha

DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi350x": "AMD Instinct MI350X", "mi325x": "AMD Instinct MI325X", "tpu": "TPU v7"}
NIGHTLY_FLAG = {"mi325x": "run_mi325x", "h100": "run_h100", "b200": "run_b200", "b200_cute": "run_b200_cute", "mi350x": "run_mi350x",
                "tpu": "run_tpu"}


def facts_at(r: Reader, sha: str) -> dict:
    """Everything that governs the numbers of a nightly at `sha`, keyed so two nights can be diffed."""
    nd = r.parsed(sha, ".github/workflows/benchmark_nightly.yml", parse_nightly) or dict(flags=frozenset(), env=())
    nightly = nd["flags"]
    disp = r.parsed(sha, ".github/workflows/benchmark_dispatch.yml", parse_dispatch) or dict(defaults={}, jobs={})
    bench = r.parsed(sha, ".github/workflows/benchmark.yml", parse_bench_yml) or parse_bench_yml("")
    runpy = r.parsed(sha, "benchmarks/run.py", parse_run_py) or dict(max_inputs=20, kernels={})
    lin = r.parsed(sha, "benchmarks/run_linattn.py", parse_linattn)
    tpu_map = r.parsed(sha, "benchmarks/run_tpu.py", parse_run_tpu) or {}
    d = disp["defaults"]
    jobs = disp["jobs"].values()
    plats = {}
    for alias, flag in NIGHTLY_FLAG.items():
        if flag not in nightly:
            continue
        job = next((j for j in jobs if j["alias"] == alias and j["suite"] == "tritonbench"), None)
        if job is None:
            continue
        if alias == "tpu":
            ks = list(d.get("kernels_tpu", ())) + [k for k in d.get("kernels_tpu_bridge", ())
                                                   if any(j["alias"] == "tpu_bridge" for j in jobs)]
        elif alias == "b200_cute":
            ks = list(d.get("kernels_cute", ()))
        else:
            ks = list(d.get("kernels", ()))
        kern = {}
        for k in ks:
            if alias == "tpu" and k in tpu_map:
                kern[k] = dict(cudagraph=False, shapes=("tpu", tpu_map[k], 8), suite="tpu")
            else:
                o = runpy["kernels"].get(k)
                if o is None:
                    continue
                n = min(o["num_inputs"] or runpy["max_inputs"], runpy["max_inputs"])
                kern[k] = dict(cudagraph=o["cudagraph"] and bench["cudagraph"] and alias != "tpu",
                               shapes=("gpu", n), suite="tritonbench")
        env = dict(runner=job["runner"], image=job["image"], runtime=job["runtime"])
        plats[alias] = dict(kernels=kern, env=env)
        lflag = f"run_{alias}_linattn"
        ljob = next((j for j in jobs if j["alias"] == alias and j["suite"] == "linattn"), None)
        if lflag in nightly and ljob and lin:
            for v in d.get("kernels_linattn", ()):
                shapes = ("lin", lin["VARLEN_SHAPES"] if "varlen" in v else lin["SHAPES"])
                kern[v] = dict(cudagraph=bench["cudagraph"], shapes=shapes, suite="linattn")
                if v not in ("kda_varlen",):
                    kern[f"{v}-bwd"] = dict(cudagraph=bench["cudagraph"], shapes=shapes, suite="linattn")
    out = dict(platforms=plats, bench=bench, nightly_flags=nightly, nightly_env=nd["env"])
    # pretuned
    pt = None
    if r.text(sha, ".github/workflows/benchmark_pretuned_nightly.yml") is not None:
        pdisp = r.parsed(sha, ".github/workflows/benchmark_pretuned_dispatch.yml", parse_dispatch) or dict(jobs={})
        pbench = r.parsed(sha, ".github/workflows/benchmark_pretuned.yml", parse_bench_yml) or parse_bench_yml("")
        bench_py = r.parsed(sha, "pretuned_kernels/_bench.py", text_hash)
        kernels = r.parsed(sha, "pretuned_kernels/run.py", parse_pretuned_kernels) or ()
        tree = r.tree(sha)
        pplats = {}
        for j in pdisp["jobs"].values():
            alias = j["alias"]
            sm = {"h100": "sm90", "b200": "sm100"}.get(alias)
            if sm is None:
                continue
            kern = {}
            for k in kernels:
                cfgs = sorted(p for p in tree if p.startswith(f"pretuned_kernels/{k}/_helion_aot_")
                              and p.endswith(f"_{sm}.py"))
                if not cfgs:
                    continue
                mod = r.parsed(sha, f"pretuned_kernels/{k}/{k}.py", parse_pretuned_module)
                if mod is None:
                    continue
                kern[k] = dict(cudagraph=mod["cudagraph"], baselines=mod["baselines"],
                               config=tuple(tree[c] for c in cfgs), compute=sm)
            pplats[alias] = dict(kernels=kern, env=dict(runner=j["runner"], image=j["image"], runtime=j["runtime"]))
        pt = dict(platforms=pplats, bench_py=bench_py, torch=pbench["torch"], env=pbench["env"])
    out["pretuned"] = pt
    out["dispatch_text"] = r.text(sha, ".github/workflows/benchmark_dispatch.yml") or ""
    out["pdispatch_text"] = r.text(sha, ".github/workflows/benchmark_pretuned_dispatch.yml") or ""
    return out
