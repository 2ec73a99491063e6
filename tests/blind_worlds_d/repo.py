"""Reading the real Helion clone: first-parent history and, per sha, what the nightly runs.

Everything here parses files (ast / yaml / regex); no Helion code is imported or executed.
Parse results are memoised by blob id, so walking 150 nightlies costs a few hundred blob reads.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from tests.shared_data import bundle_path, commits_jsonl

import yaml

BUNDLE = bundle_path()  # the shared data folder, found by one rule (tests/shared_data.py)
COMMITS_JSONL = commits_jsonl()

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
BENCH = ".github/workflows/benchmark.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
RUN_PY = "benchmarks/run.py"
RUN_LINATTN = "benchmarks/run_linattn.py"
RUN_TPU = "benchmarks/run_tpu.py"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_BENCH_WF = ".github/workflows/benchmark_pretuned.yml"
P_RUN = "pretuned_kernels/run.py"
P_BENCH = "pretuned_kernels/_bench.py"

# device names as the runners report them (extra_info.device)
DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7x",
          "tpu_bridge": "TPU v7x"}
COMPUTE = {"h100": "sm90", "b200": "sm100"}


def clone(workdir: Path) -> Path:
    dest = workdir / "helion"
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(BUNDLE), str(dest)], check=True)
    return dest


class Repo:
    def __init__(self, path: Path):
        self.path = path
        out = subprocess.run(["git", "-C", str(path), "log", "--first-parent", "--reverse",
                              "--format=%H %ct", "main"], check=True, capture_output=True, text=True).stdout
        self.fp = []
        self.fp_time = []
        for line in out.split("\n"):
            if line.strip():
                h, t = line.split()
                self.fp.append(h)
                self.fp_time.append(int(t))
        self.index = {h: i for i, h in enumerate(self.fp)}
        self.meta = {}
        with open(COMMITS_JSONL) as f:
            for line in f:
                d = json.loads(line)
                self.meta[d["sha"]] = d
        self._cat = subprocess.Popen(["git", "-C", str(path), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self._blob_cache: dict[str, str | None] = {}
        self._tree_cache: dict[tuple, dict] = {}
        self._parse_cache: dict[tuple, object] = {}

    def close(self):
        if self._cat.poll() is None:
            self._cat.stdin.close()
            self._cat.wait()

    def sha_at(self, ts: float) -> int:
        """Index of main's head (first parent) at unix time ts."""
        return bisect_right(self.fp_time, ts) - 1

    def _read(self, spec: str) -> tuple[str | None, bytes | None]:
        self._cat.stdin.write((spec + "\n").encode())
        self._cat.stdin.flush()
        header = self._cat.stdout.readline().decode()
        if header.endswith("missing\n"):
            return None, None
        oid, _typ, size = header.split()
        data = self._cat.stdout.read(int(size))
        self._cat.stdout.read(1)
        return oid, data

    def tree(self, sha: str, folder: str) -> dict:
        """name -> blob id of files directly in folder (empty when missing)."""
        key = (sha, folder)
        if key not in self._tree_cache:
            out = subprocess.run(["git", "-C", str(self.path), "ls-tree", sha, folder.rstrip("/") + "/"],
                                 capture_output=True, text=True).stdout
            d = {}
            for line in out.split("\n"):
                if "\t" in line:
                    info, name = line.split("\t", 1)
                    d[name.rsplit("/", 1)[-1]] = info.split()[2]
            self._tree_cache[key] = d
        return self._tree_cache[key]

    def blob_id(self, sha: str, path: str) -> str | None:
        folder, name = path.rsplit("/", 1)
        return self.tree(sha, folder).get(name)

    def text(self, sha: str, path: str) -> tuple[str | None, str | None]:
        oid = self.blob_id(sha, path)
        if oid is None:
            return None, None
        if oid not in self._blob_cache:
            _, data = self._read(oid)
            self._blob_cache[oid] = data.decode("utf-8", "replace") if data is not None else None
        return oid, self._blob_cache[oid]

    def parsed(self, sha: str, path: str, fn):
        oid, txt = self.text(sha, path)
        key = (fn.__name__, oid)
        if key not in self._parse_cache:
            self._parse_cache[key] = fn(txt) if txt is not None else None
        return self._parse_cache[key]


# ---------------------------------------------------------------- parsers (pure functions of text)

def parse_yaml(txt: str) -> dict:
    try:
        d = yaml.safe_load(txt) or {}
    except yaml.YAMLError:
        return {}
    if True in d and "on" not in d:
        d["on"] = d.pop(True)
    return d


def parse_dispatch(txt: str) -> dict:
    """jobs that benchmark: alias, suite, backend, runner, image, runtime, kernels input, run_ flag."""
    d = parse_yaml(txt)
    inputs = ((d.get("on") or {}).get("workflow_dispatch") or {}).get("inputs") or {}
    defaults = {k: v.get("default") for k, v in inputs.items() if isinstance(v, dict)}
    jobs = d.get("jobs") or {}
    out = []
    for name, job in jobs.items():
        w = job.get("with") or {}
        if "alias" not in w:
            continue
        chain = [job]
        needs = job.get("needs")
        for nd in ([needs] if isinstance(needs, str) else needs or []):
            if nd in jobs:
                chain.append(jobs[nd])
        flag = None
        kin = None
        for j in chain:
            m = re.search(r"inputs\.(run_\w+)", str(j.get("if", "")))
            if m and flag is None:
                flag = m.group(1)
            m = re.search(r"inputs\.(kernels\w*)", str((j.get("with") or {}).get("kernels", "")))
            if m and kin is None:
                kin = m.group(1)
        out.append(dict(job=name, alias=str(w["alias"]), suite=str(w.get("suite", "tritonbench")),
                        backend=w.get("backend"), runner=w.get("runner"), image=w.get("image"),
                        runtime=w.get("runtime-version"), flag=flag, kernels_input=kin,
                        uses=str(job.get("uses", ""))))
    return dict(defaults=defaults, jobs=out)


def parse_nightly(txt: str) -> dict:
    flags = dict(re.findall(r"(run_\w+)\s*:\s*'(true|false)'", txt))
    env = re.search(r"env_vars\s*:\s*'([^']*)'", txt)
    return dict(flags=flags, env=env.group(1) if env else "")


def _steps_by_suite(txt: str) -> dict:
    parts = re.split(r"\n\s*- name:", txt)
    out = {"common": [], "tritonbench": [], "linattn": []}
    for p in parts:
        m = re.search(r"inputs\.suite\s*==\s*'(\w+)'", p)
        out.get(m.group(1) if m else "common", out["common"]).append(p)
    return {k: "\n".join(v) for k, v in out.items()}


def parse_bench_wf(txt: str) -> dict:
    s = _steps_by_suite(txt)
    pins = {}
    for suite in ("tritonbench", "linattn"):
        body = s["common"] + "\n" + s[suite]
        pin = sorted(set(re.findall(r"\btorch(?:==|>=|~=)[^\s\"']+|--pre torch|whl/nightly\S*", body)))
        base = sorted(set(re.findall(r"flash-linear-attention@\w+|tritonbench\.txt|quack-kernels\S*", s[suite])))
        pins[suite] = (tuple(pin), tuple(base))
    env = dict(re.findall(r"(HELION_AUTOTUNE(?!_LOG)\w*)\s*[:=]\s*\"?([^\s\"\\$]+)", txt))
    cmd = ""
    runs = 0
    for m in re.finditer(r"python benchmarks/run\.py(.*?)(?:\n\s*\n|echo |\$\(|\n\s*done)", txt, re.S):
        if "--metrics" in m.group(1):
            runs += 1
            if not cmd or "--output" in m.group(1):
                cmd = m.group(1)
    flags = dict()
    for fm in re.finditer(r"(--[a-z][a-z0-9-]*)(?:[ \t]+([^\s\\-][^\s\\]*))?", cmd):
        flags[fm.group(1)] = fm.group(2) or ""
    timer = tuple(sorted((k, v) for k, v in flags.items() if k in ("--latency-measure-mode", "--cudagraph")))
    harness = tuple(sorted((k, v) for k, v in flags.items() if k in ("--input-sample-mode", "--only-match-mode"))) \
        + (("invocations", runs),)
    metrics = flags.get("--metrics", "speedup,accuracy,latency").split(",")
    return dict(pins=pins, autotune=tuple(sorted(env.items())), timer=timer, harness=harness,
                cudagraph="--cudagraph" in flags, latency="latency" in metrics,
                compile="--measure-compile-time" in flags)


def parse_runs_on(txt: str) -> tuple:
    return tuple(sorted(set(re.findall(r"runs-on:\s*(\S+)", txt)) | set(re.findall(r"image:\s*(\S+)", txt))))


def _lit(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def parse_run_py(txt: str) -> dict:
    """KERNEL_MAPPINGS -> {kernel: {"no_cudagraph": bool, "num_inputs": int|None}}."""
    try:
        tree = ast.parse(txt)
    except SyntaxError:
        return {}
    out = {}
    for node in ast.walk(tree):
        tg = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(tg, ast.Name)
                and tg.id == "KERNEL_MAPPINGS" and isinstance(node.value, ast.Dict)):
            continue
        for k, v in zip(node.value.keys, node.value.values):
            name = _lit(k)
            if not isinstance(name, str):
                continue
            opts = {"no_cudagraph": False, "num_inputs": None}
            elts = v.elts if isinstance(v, ast.Tuple) else [v]
            for e in elts:
                if isinstance(e, ast.Dict):
                    for dk, dv in zip(e.keys, e.values):
                        key = _lit(dk)
                        if key == "remove_flags":
                            val = _lit(dv) or []
                            opts["no_cudagraph"] = "--cudagraph" in val
                        elif key == "num_inputs":
                            val = _lit(dv)
                            opts["num_inputs"] = val if isinstance(val, int) else None
            out[name] = opts
    return out


def _names_of(node) -> list:
    out = []
    if isinstance(node, (ast.List, ast.Tuple)):
        for e in node.elts:
            if isinstance(e, (ast.Tuple, ast.List)) and e.elts and isinstance(e.elts[0], ast.Constant):
                out.append(e.elts[0].value)
            elif isinstance(e, ast.Constant):
                out.append(e.value)
    return out


def parse_linattn(txt: str) -> dict:
    tree = ast.parse(txt)
    vals = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            tg = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(tg, ast.Name):
                vals[tg.id] = node.value
    fwd_only = set()
    for nm in ("FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS"):
        if isinstance(vals.get(nm), ast.Dict):
            fwd_only |= {_lit(k) for k in vals[nm].keys}
    varlen = {_lit(k) for k in vals["VARLEN_VARIANTS"].keys} if isinstance(vals.get("VARLEN_VARIANTS"), ast.Dict) else set()
    return dict(shapes=tuple(_names_of(vals.get("SHAPES"))), varlen_shapes=tuple(_names_of(vals.get("VARLEN_SHAPES"))),
                fwd_only=frozenset(fwd_only), varlen=frozenset(varlen))


def parse_run_tpu(txt: str) -> tuple:
    tree = ast.parse(txt)
    for node in tree.body:
        tg = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(tg, ast.Name) and tg.id == "KERNEL_MAPPINGS" \
                and isinstance(node.value, ast.Dict):
            return tuple(k for k in (_lit(x) for x in node.value.keys) if isinstance(k, str))
    return ()


def parse_p_run(txt: str) -> tuple:
    tree = ast.parse(txt)
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "KERNELS":
            return tuple(_names_of(node.value))
    return ()


def parse_p_kernel(txt: str) -> dict:
    """baseline names returned by _baselines() (or a BASELINES list) and use_cudagraph()'s constant."""
    try:
        tree = ast.parse(txt)
    except SyntaxError:
        return dict(baselines=("torch",), cudagraph=False)
    names, cg = [], False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ("_baselines", "baselines", "_get_baselines"):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return):
                    names += [n for n in _names_of(sub.value) if isinstance(n, str)]
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    cg = bool(sub.value.value)
    if not names:
        names = sorted(set(re.findall(r"\(\s*\"([a-z][a-z0-9_]*)\"\s*,\s*(?:_|torch|lambda|partial|functools)", txt)))[:4] \
            or ["torch"]
    return dict(baselines=tuple(dict.fromkeys(names)), cudagraph=cg)


def h64(*parts) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class SeriesCfg:
    suite: str          # tritonbench | linattn | tpu
    shapes: tuple       # shape labels
    cudagraph: bool
    baseline_label: str | None
    has_triton: bool
    has_tc: bool


def shape_pool(kernel: str) -> list:
    r = h64("pool", kernel)
    dims = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    out = []
    for i in range(40):
        a = dims[(r >> (i % 7)) % 3 + i // 8]
        b = dims[(i * 3 + (r >> 11)) % 8]
        out.append(f"[{a}, {b}]" if (r >> 5) % 2 else f"({a}, {b})")
    return out


def night_config(repo: Repo, sha: str) -> dict:
    """What the main nightly runs at sha: {(plat, kernel): SeriesCfg}, env dims, and the dispatch facts."""
    disp = repo.parsed(sha, DISPATCH, parse_dispatch) or dict(defaults={}, jobs=[])
    nightly = repo.parsed(sha, NIGHTLY, parse_nightly) or dict(flags={}, env="")
    bench = repo.parsed(sha, BENCH, parse_bench_wf) or dict(pins={}, autotune=(), timer=(), harness=(), cudagraph=True)
    maps = repo.parsed(sha, RUN_PY, parse_run_py) or {}
    lin = repo.parsed(sha, RUN_LINATTN, parse_linattn)
    tpu_keys = repo.parsed(sha, RUN_TPU, parse_run_tpu) or ()
    series = {}
    dims = {("autotune",): (bench["autotune"], nightly["env"]), ("timer",): bench["timer"],
            ("harness",): bench["harness"]}
    for suite, pin in bench["pins"].items():
        dims[("pin", suite)] = pin
    for job in disp["jobs"]:
        flag = job["flag"]
        on = nightly["flags"].get(flag, str(disp["defaults"].get(flag, False)).lower()) == "true" if flag else True
        if not on:
            continue
        alias = job["alias"]
        plat = "tpu" if alias == "tpu_bridge" else alias
        if job["backend"] and job["backend"] not in ("triton", "pallas") and not plat.endswith("_" + job["backend"]):
            plat = f"{plat}_{job['backend']}"
        kin = job["kernels_input"]
        names = [k.strip() for k in str(disp["defaults"].get(kin) or "").split(",") if k.strip()]
        if names == ["all"]:
            names = list(tpu_keys)
        hw = (job["runner"], job["image"], job["runtime"])
        if "tpu" in job["uses"]:
            wf = job["uses"].split("/")[-1]
            hw = hw + (repo.parsed(sha, f".github/workflows/{wf}", parse_runs_on) or (),)
        dims[("hw", plat, job["suite"])] = hw
        for k in names:
            if job["suite"] == "linattn":
                if lin is None:
                    continue
                shp = lin["varlen_shapes"] if k in lin["varlen"] else lin["shapes"]
                rows = [k] if (k in lin["fwd_only"] or k.endswith("-bwd")) else [k, f"{k}-bwd"]
                for r in rows:
                    series[(plat, r)] = SeriesCfg("linattn", shp, True, "FLA", False, False)
            elif plat == "tpu":
                n = 4 + h64("tpu", k) % 4
                series[(plat, k)] = SeriesCfg("tpu", tuple(shape_pool(k)[:n]), False, None, False, True)
            else:
                o = maps.get(k, {"no_cudagraph": False, "num_inputs": None})
                n = o["num_inputs"] or (6 + h64("n", k) % 7)
                series[(plat, k)] = SeriesCfg("tritonbench", tuple(shape_pool(k)[:n]),
                                              bench["cudagraph"] and not o["no_cudagraph"], None, True, True)
    return dict(series=series, dims=dims, dispatch_text=repo.text(sha, DISPATCH)[1])


def pretuned_config(repo: Repo, sha: str) -> dict | None:
    if repo.blob_id(sha, P_NIGHTLY) is None:
        return None
    nightly = repo.parsed(sha, P_NIGHTLY, parse_nightly) or dict(flags={})
    disp = repo.parsed(sha, P_DISPATCH, parse_dispatch) or dict(defaults={}, jobs=[])
    kernels = repo.parsed(sha, P_RUN, parse_p_run) or ()
    plats = []
    dims = {("ptimer",): repo.blob_id(sha, P_BENCH),
            ("ppin",): repo.parsed(sha, P_BENCH_WF, parse_bench_wf)["pins"].get("tritonbench")
            if repo.blob_id(sha, P_BENCH_WF) else None}
    for job in disp["jobs"]:
        flag = job["flag"]
        on = nightly["flags"].get(flag, str(disp["defaults"].get(flag, False)).lower()) == "true" if flag else True
        if on and job["alias"] in COMPUTE:
            plats.append(job["alias"])
            dims[("phw", job["alias"])] = (job["runner"], job["image"], job["runtime"])
    series = {}
    for k in kernels:
        files = repo.tree(sha, f"pretuned_kernels/{k}")
        kinfo = repo.parsed(sha, f"pretuned_kernels/{k}/{k}.py", parse_p_kernel)
        if kinfo is None:
            continue
        for p in plats:
            sm = COMPUTE[p]
            aot = [v for n, v in sorted(files.items()) if n.startswith(f"_helion_aot_{k}_") and n.endswith(f"_{sm}.py")]
            if not aot:
                continue
            series[(p, k)] = dict(baselines=kinfo["baselines"], cudagraph=kinfo["cudagraph"], aot=tuple(aot))
    return dict(series=series, dims=dims, dispatch_text=repo.text(sha, P_DISPATCH)[1])
