"""What runs at a sha, parsed from the real Helion files (ast / regex only; nothing is executed)."""
from __future__ import annotations

import ast
import hashlib
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
RUN = "benchmarks/run.py"
LINATTN = "benchmarks/run_linattn.py"
TPU = "benchmarks/run_tpu.py"
P_RUN = "pretuned_kernels/run.py"
P_BENCH = "pretuned_kernels/_bench.py"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_WORKFLOW = ".github/workflows/benchmark_pretuned.yml"
PRETUNED_BUILDER_PATH = ".github/dashboard/build_pretuned_dashboard_data.py"

# which `kernels*` inputs a platform runs (helion-dashboard.md)
PLATFORM_INPUTS = {
    "h100": ("kernels",),
    "b200": ("kernels",),
    "b200_cute": ("kernels_cute",),
    "mi350x": ("kernels",),
    "tpu": ("kernels_tpu", "kernels_tpu_bridge"),
}
LINATTN_PLATFORMS = ("h100", "b200")
SM_OF = {"h100": "sm90", "b200": "sm100"}


class Repo:
    """Read-only access to a clone, with caches."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._cat = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._cache: dict = {}

    def git(self, *args) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True,
                              capture_output=True, text=True).stdout

    def read(self, sha: str, path: str) -> str | None:
        key = (sha, path)
        if key in self._cache:
            return self._cache[key]
        self._cat.stdin.write(f"{sha}:{path}\n".encode())
        self._cat.stdin.flush()
        head = self._cat.stdout.readline().decode().split()
        if len(head) < 3 or head[1] == "missing" or head[-1] == "missing":
            out = None
        else:
            size = int(head[2])
            data = self._cat.stdout.read(size)
            self._cat.stdout.read(1)
            out = data.decode("utf-8", "replace")
        self._cache[key] = out
        return out

    def ls(self, sha: str, under: str) -> dict:
        key = ("ls", sha, under)
        if key not in self._cache:
            out = self.git("ls-tree", "-r", sha, "--", under)
            d = {}
            for line in out.splitlines():
                meta, path = line.split("\t", 1)
                d[path] = meta.split()[2]
            self._cache[key] = d
        return self._cache[key]

    def close(self):
        try:
            self._cat.stdin.close()
            self._cat.wait(timeout=5)
        except Exception:  # pragma: no cover
            self._cat.kill()


def _kernel_defaults(text: str) -> dict:
    header = re.compile(r"^\s+(kernels\w*):\s*$")
    default = re.compile(r'^\s+default:\s*"([^"]*)"\s*$')
    out, cur = {}, None
    for line in text.splitlines():
        m = header.match(line)
        if m:
            cur = m.group(1)
            continue
        if cur is None:
            continue
        md = default.match(line)
        if md:
            out[cur] = [k.strip() for k in md.group(1).split(",") if k.strip()]
            cur = None
    return out


def _literal(v):
    """A workflow value, or None when it is an expression (`${{ ... }}`) and not a literal."""
    if v is None or isinstance(v, (dict, list)):
        return None
    v = str(v).strip()
    return None if not v or "${{" in v else v


@lru_cache(maxsize=None)
def _yaml(text: str | None) -> dict:
    """Parsed once per distinct file content (callers only read it)."""
    if not text:
        return {}
    try:
        y = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return {}
    return y if isinstance(y, dict) else {}


def _called_machine(repo, sha: str, uses: str) -> tuple:
    """(runner, image) fixed inside a called workflow (e.g. benchmark_tpu.yml's `runs-on`)."""
    if not uses.startswith("./"):
        return None, None
    runner = image = None
    for job in (_yaml(repo.read(sha, uses[2:].split("@")[0])).get("jobs") or {}).values():
        if not isinstance(job, dict):
            continue
        runner = runner or _literal(job.get("runs-on"))
        c = job.get("container")
        image = image or _literal(c.get("image") if isinstance(c, dict) else c)
    return runner, image


def machines(repo, sha: str, path: str) -> dict:
    """alias -> {job name: (runner, image, runtime-version)} for every job of a dispatch workflow
    that names an alias. The runner / image come from the job's `with:` (the dispatch passes them
    to benchmark.yml) or, when the called workflow fixes them (benchmark_tpu.yml: `runs-on:`),
    from that workflow at the same sha."""
    out: dict = {}
    for name, job in (_yaml(repo.read(sha, path)).get("jobs") or {}).items():
        if not isinstance(job, dict):
            continue
        w = job.get("with") or {}
        alias = _literal(w.get("alias")) if isinstance(w, dict) else None
        if not alias:
            continue
        runner, image = _literal(w.get("runner")), _literal(w.get("image"))
        if runner is None or image is None:
            r2, i2 = _called_machine(repo, sha, str(job.get("uses") or ""))
            runner, image = runner or r2, image or i2
        out.setdefault(alias, {})[str(name)] = (runner, image, _literal(w.get("runtime-version")))
    return out


# the aliases whose jobs benchmark a platform's dashboard series (the TPU bridge's results land in
# the `tpu` column once folded in; before that it was artifact-only, on the same runner)
JOB_ALIASES = {"tpu": ("tpu", "tpu_bridge")}


def platform_machine(mach: dict, p: str) -> tuple:
    """The distinct (runner, image, runtime) of the jobs that benchmark platform p, sorted: adding
    a job on the same machine (the linear-attention job, the TPU bridge) is no machine change."""
    ms = set()
    for a in JOB_ALIASES.get(p, (p,)):
        ms |= set(mach.get(a, {}).values())
    return tuple(sorted(ms, key=repr))


@lru_cache(maxsize=None)
def _mappings(text: str | None) -> dict:
    """KERNEL_MAPPINGS name -> options dict (literal parts only)."""
    if not text:
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    for node in tree.body:
        tgt = None
        if isinstance(node, ast.Assign) and node.targets and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt != "KERNEL_MAPPINGS" or not isinstance(val, ast.Dict):
            continue
        out = {}
        for k, v in zip(val.keys, val.values):
            if not isinstance(k, ast.Constant) or not isinstance(k.value, str):
                continue
            opts = {}
            elts = v.elts if isinstance(v, ast.Tuple) else []
            for e in elts:
                if isinstance(e, ast.Dict):
                    for kk, vv in zip(e.keys, e.values):
                        if isinstance(kk, ast.Constant):
                            try:
                                opts[kk.value] = ast.literal_eval(vv)
                            except Exception:
                                opts[kk.value] = ast.unparse(vv)
            out[k.value] = opts
        return out
    return {}


SHAPE_LISTS = ("configs", "shapes", "sizes")
TPU_WF = ".github/workflows/benchmark_tpu.yml"


@lru_cache(maxsize=None)
def _tpu_shapes(text: str | None, num_shapes: int | None) -> dict:
    """benchmarks/run_tpu.py: kernel -> the input shapes its nightly runs, as source text (the first
    literal `configs` / `shapes` / `sizes` list of the shape function its KERNEL_MAPPINGS tuple
    names, cut to the workflow's `--num-shapes`)."""
    if not text:
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def shapes_of(fn):
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and node.targets[0].id in SHAPE_LISTS and \
                    isinstance(node.value, ast.List):
                return tuple(ast.unparse(e) for e in node.value.elts)[:num_shapes]
        return None

    out = {}
    for node in tree.body:
        tgt = val = None
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt != "KERNEL_MAPPINGS" or not isinstance(val, ast.Dict):
            continue
        for k, v in zip(val.keys, val.values):
            if not (isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and len(v.elts) > 3):
                continue
            fn = v.elts[3]
            if isinstance(fn, ast.Name) and fn.id in funcs:
                sh = shapes_of(funcs[fn.id])
                if sh:
                    out[k.value] = sh
    return out


def _num_shapes(text: str | None) -> int | None:
    m = re.search(r"--num-shapes\s+(\d+)", text or "")
    return int(m.group(1)) if m else None


@lru_cache(maxsize=None)
def _list_names(text: str | None, name: str) -> tuple:
    if not text:
        return ()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ()
    for node in tree.body:
        tgt = val = None
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        if tgt == name and isinstance(val, (ast.List, ast.Tuple)):
            names = []
            for e in val.elts:
                if isinstance(e, ast.Constant):
                    names.append(str(e.value))
                elif isinstance(e, (ast.Tuple, ast.List)) and e.elts and isinstance(e.elts[0], ast.Constant):
                    names.append(str(e.elts[0].value))
            return tuple(names)
    return ()


def _bench_yml(text: str | None) -> dict:
    text = text or ""
    torch = re.findall(r'torch==([\w.*+]+)', text)
    nightly = "nightly" if re.search(r"--pre\s+torch|whl/nightly", text) else ""
    env = tuple(sorted(set(re.findall(r'(HELION_AUTOTUNE_(?!LOG)\w+)[:=]\s*"?([\w.]+)', text))))
    lat = re.findall(r"--latency-measure-mode\s+(\S+)", text)
    return {"pin": (tuple(torch[:1]), nightly), "autotune": env, "timer": tuple(lat),
            "cudagraph_flag": "--cudagraph" in text}


def _py_func_return(text: str, func: str):
    m = re.search(rf"def {func}\([^)]*\)[^:]*:\s*\n((?:[ \t]+.*\n|\s*\n)+)", text)
    if not m:
        return None
    r = re.search(r"return\s+(True|False)", m.group(1))
    return r.group(1) == "True" if r else None


def _baseline_names(text: str) -> tuple:
    m = re.search(r"def _baselines\([^)]*\)[^:]*:\s*\n((?:[ \t]+.*\n|\s*\n)+)", text)
    if not m:
        return ()
    return tuple(sorted(set(re.findall(r'\(\s*"([^"]+)"\s*,', m.group(1)))))


def shapes_differ(oa: dict | None, ob: dict | None) -> bool:
    """The inputs a series is measured on changed: `num_inputs`, the linattn SHAPES, or the shapes
    run_tpu.py's nightly runs (compared only while run_tpu.py runs the kernel at both ends)."""
    if oa is None or ob is None:
        return False
    if (oa.get("num_inputs"), oa.get("lin_shapes")) != (ob.get("num_inputs"), ob.get("lin_shapes")):
        return True
    ta, tb = oa.get("tpu_shapes"), ob.get("tpu_shapes")
    return ta is not None and tb is not None and ta != tb


def dashboard_facts(repo: Repo, sha: str) -> dict:
    """What the dashboard nightly runs at sha (memoised per repo; callers only read it)."""
    key = ("dfacts", sha)
    if key not in repo._cache:
        repo._cache[key] = _dashboard_facts(repo, sha)
    return repo._cache[key]


def _dashboard_facts(repo: Repo, sha: str) -> dict:
    disp = repo.read(sha, DISPATCH) or ""
    defaults = _kernel_defaults(disp)
    mach = machines(repo, sha, DISPATCH)
    nightly = repo.read(sha, NIGHTLY) or ""
    runs_flags = dict(re.findall(r"run_(\w+):\s*'?(true|false)'?", nightly))
    aliases = set(mach) | ({"tpu"} if "tpu_bridge" in mach else set())
    mappings = _mappings(repo.read(sha, RUN))
    tpu_text = repo.read(sha, TPU)
    tpu_map = _mappings(tpu_text)
    tpu_shapes = _tpu_shapes(tpu_text, _num_shapes(repo.read(sha, TPU_WF)))
    tpu_own = set(defaults.get("kernels_tpu", []))
    lin = repo.read(sha, LINATTN)
    lin_shapes = _list_names(lin, "SHAPES")
    lin_varlen = _list_names(lin, "VARLEN_SHAPES")
    plats = {}
    for p, inputs in PLATFORM_INPUTS.items():
        if p not in aliases or runs_flags.get(p, "true") != "true":
            continue
        ks = []
        for inp in inputs:
            ks += defaults.get(inp, [])
        if not ks:
            continue
        lin_ks = []
        if p in LINATTN_PLATFORMS and runs_flags.get(f"{p}_linattn", "true") == "true":
            for v in defaults.get("kernels_linattn", []):
                lin_ks += [v, f"{v}-bwd"]
        plats[p] = {"kernels": tuple(dict.fromkeys(ks)), "linattn": tuple(lin_ks)}
    hw = {p: platform_machine(mach, p) for p in plats}
    opts = {}
    for p, d in plats.items():
        src = tpu_map if p == "tpu" else mappings
        for k in d["kernels"]:
            o = src.get(k, {})
            opts[(p, k)] = {
                "cudagraph": p != "tpu" and "--cudagraph" not in (o.get("remove_flags") or []),
                "num_inputs": o.get("num_inputs"),
                "other": tuple(sorted((kk, repr(vv)) for kk, vv in o.items()
                                      if kk not in ("remove_flags", "num_inputs"))),
            }
            if p == "tpu" and k in tpu_own:   # run by benchmarks/run_tpu.py (not the tritonbench bridge)
                opts[(p, k)]["tpu_shapes"] = tpu_shapes.get(k)
        for k in d["linattn"]:
            shapes = lin_varlen if k.startswith("kda_varlen") else lin_shapes
            opts[(p, k)] = {"cudagraph": True, "num_inputs": None, "lin_shapes": shapes, "other": ()}
    return {"platforms": plats, "hw": hw, "opts": opts, "bench": _bench_yml(repo.read(sha, BENCH))}


def pretuned_facts(repo: Repo, sha: str) -> dict | None:
    """What the pretuned nightly runs at sha (None before it existed; memoised per repo)."""
    key = ("pfacts", sha)
    if key not in repo._cache:
        repo._cache[key] = _pretuned_facts(repo, sha)
    return repo._cache[key]


def _pretuned_facts(repo: Repo, sha: str) -> dict | None:
    if repo.read(sha, P_NIGHTLY) is None:
        return None
    run = repo.read(sha, P_RUN)
    kernels = _list_names(run, "KERNELS")
    mach = machines(repo, sha, P_DISPATCH)
    files = repo.ls(sha, "pretuned_kernels")
    series = {}
    for k in kernels:
        main = repo.read(sha, f"pretuned_kernels/{k}/{k}.py")
        if not main:
            continue
        cg = _py_func_return(main, "use_cudagraph")
        bl = _baseline_names(main) or ("baseline",)
        for p, sm in SM_OF.items():
            if p not in mach:
                continue
            aot = tuple(sorted((f, b) for f, b in files.items()
                               if f.startswith(f"pretuned_kernels/{k}/_helion_aot_") and f.endswith(f"_{sm}.py")))
            if not aot:
                continue
            series[(p, k)] = {"cudagraph": bool(cg), "baselines": bl, "aot": aot}
    bench = repo.read(sha, P_BENCH) or ""
    timer_lines = "\n".join(l for l in bench.splitlines()
                            if re.search(r"l2|cache|warmup|rep\b|graph|flush", l, re.I))
    timer = hashlib.sha1(timer_lines.encode()).hexdigest()[:10]
    pn = repo.read(sha, P_NIGHTLY) or ""
    pw = pn + (repo.read(sha, P_WORKFLOW) or "")
    # `pin` also matches the comment that quotes vLLM's torch pin; it always moved with the install
    # line in the real history, so it is kept as is (the world's numbers are keyed on it) and
    # `pin_install` (the install lines only) is what notes and tests read
    pins = tuple(re.findall(r"torch==([\w.*+]+)", pw))
    install = tuple(re.findall(r"torch==([\w.*+]+)", "\n".join(
        l for l in pw.splitlines() if not l.lstrip().startswith("#"))))
    return {"series": series, "hw": {p: platform_machine(mach, p) or () for p in SM_OF}, "timer": timer, "pin": pins,
            "pin_install": install}
