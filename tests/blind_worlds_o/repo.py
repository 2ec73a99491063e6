"""Reading the real Helion checkout: first-parent history and what each nightly ran.

Everything is parsed (git cat-file, yaml, ast, regex); nothing from the repository is executed here."""
from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
TPU_WF = ".github/workflows/benchmark_tpu.yml"
TPU_BRIDGE_WF = ".github/workflows/benchmark_tpu_bridge.yml"
RUNPY = "benchmarks/run.py"
RUN_TPU = "benchmarks/run_tpu.py"
RUN_LINATTN = "benchmarks/run_linattn.py"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_BENCH_WF = ".github/workflows/benchmark_pretuned.yml"
P_RUN = "pretuned_kernels/run.py"
P_BENCH = "pretuned_kernels/_bench.py"


class Git:
    """One `git cat-file --batch` process; file texts cached by (commit, path), parses by blob id."""

    def __init__(self, repo: Path):
        self.repo = Path(repo)
        self._p = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
        self._cache: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        self.parsed: dict[tuple[str, str], object] = {}

    def blob(self, sha: str, path: str) -> tuple[str | None, str | None]:
        key = (sha, path)
        if key not in self._cache:
            self._p.stdin.write(f"{sha}:{path}\n".encode())
            self._p.stdin.flush()
            head = self._p.stdout.readline().decode().split()
            if len(head) < 3 or head[1] == "missing":
                self._cache[key] = (None, None)
            else:
                size = int(head[2])
                data = self._p.stdout.read(size)
                self._p.stdout.read(1)
                self._cache[key] = (head[0], data.decode("utf-8", "replace") if head[1] == "blob" else None)
        return self._cache[key]

    def text(self, sha: str, path: str) -> str | None:
        return self.blob(sha, path)[1]

    def parse(self, sha: str, path: str, fn):
        oid, text = self.blob(sha, path)
        if oid is None:
            return None
        key = (fn.__name__, oid)
        if key not in self.parsed:
            self.parsed[key] = fn(text)
        return self.parsed[key]

    def run(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True,
                              text=True).stdout

    def close(self):
        try:
            self._p.stdin.close()
            self._p.wait(timeout=5)
        except Exception:  # noqa: BLE001
            self._p.kill()


@dataclass
class Commit:
    sha: str
    ct: int
    subject: str
    files: list = field(default_factory=list)


def first_parent(git: Git, since: str) -> list[Commit]:
    """First-parent commits of main (oldest first) with the paths each changed against its first parent."""
    out = git.run("log", "--first-parent", "-m", "--name-only", f"--since={since}",
                  "--format=\x01%H\t%ct\t%s", "main")
    commits = []
    for chunk in out.split("\x01")[1:]:
        lines = chunk.strip("\n").split("\n")
        sha, ct, subject = lines[0].split("\t", 2)
        commits.append(Commit(sha, int(ct), subject, [l for l in lines[1:] if l.strip()]))
    commits.reverse()
    # -m shows a merge once per parent; --first-parent keeps the first only, but dedupe anyway
    seen, uniq = set(), []
    for c in commits:
        if c.sha not in seen:
            seen.add(c.sha)
            uniq.append(c)
    return uniq


# ---------------------------------------------------------------- parsers (text -> facts)

def _yaml(text: str) -> dict:
    try:
        d = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        return d if isinstance(d, dict) else {}
    except yaml.YAMLError:
        return {}


def parse_cron(text: str) -> str | None:
    m = re.search(r"cron:\s*['\"]([^'\"]+)['\"]", text)
    return m.group(1) if m else None


def parse_nightly(text: str) -> dict:
    flags = set(re.findall(r"(run_\w+):\s*'true'", text))
    env = re.search(r"env_vars:\s*'([^']*)'", text)
    return {"cron": parse_cron(text), "flags": flags, "env_vars": env.group(1) if env else ""}


def parse_dispatch(text: str) -> dict:
    d = _yaml(text)
    on = d.get("on", d.get(True, {})) or {}
    wd = (on.get("workflow_dispatch") or {}) if isinstance(on, dict) else {}
    inputs = (wd.get("inputs") or {}) if isinstance(wd, dict) else {}
    defaults = {k: str(v.get("default", "")) for k, v in inputs.items() if isinstance(v, dict)}
    sched = bool(isinstance(on, dict) and on.get("schedule"))
    jobs_raw = d.get("jobs") or {}
    jobs = []
    for name, job in jobs_raw.items():
        w = job.get("with") or {}
        if "alias" not in w:
            continue
        conds = str(job.get("if", ""))
        needs = job.get("needs")
        for nd in ([needs] if isinstance(needs, str) else (needs or [])):
            nj = jobs_raw.get(nd) or {}
            conds += " " + str(nj.get("if", ""))
            kw = (nj.get("with") or {}).get("kernels")
            if kw and "matrix" in str(w.get("kernels", "")):
                w = {**w, "kernels_expr": kw}
        m = re.search(r"inputs\.(run_\w+)", conds)
        kexpr = str(w.get("kernels_expr", w.get("kernels", "")))
        km = re.search(r"inputs\.(kernels\w*)", kexpr)
        jobs.append({
            "job": name, "alias": str(w["alias"]), "runner": str(w.get("runner", job.get("runs-on", ""))),
            "image": str(w.get("image", "")), "runtime": str(w.get("runtime-version", "")),
            "backend": str(w.get("backend", "")), "suite": str(w.get("suite", "")),
            "flag": m.group(1) if m else None, "on_schedule": "schedule" in conds,
            "kernels_input": km.group(1) if km else None, "uses": str(job.get("uses", "")),
        })
    return {"cron": parse_cron(text) if sched else None, "defaults": defaults, "jobs": jobs}


def _torch_pin(text: str) -> str:
    m = re.search(r"torch==([0-9][\w.*+]*)", text)
    if m:
        return m.group(1)
    if re.search(r"--pre\s+torch|whl/nightly", text):
        return "nightly"
    m = re.search(r"torch-version[^\n]*?['\"]?([0-9]+\.[0-9]+)", text)
    return m.group(1) if m else "default"


def parse_bench(text: str) -> dict:
    runstep = text.split("Run Benchmark", 1)[-1] if "Run Benchmark" in text else text
    lat = re.findall(r"--latency-measure-mode\s+(\S+)", runstep)
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", runstep)))
    auto = sorted(set(re.findall(r"(HELION_AUTOTUNE_\w+)\s*[:=]\s*['\"]?([^\s'\"]+)", text)))
    auto = [f"{k}={v}" for k, v in auto if k not in ("HELION_AUTOTUNE_LOG_LEVEL", "HELION_AUTOTUNE_LOG_DETAILS")]
    km = re.search(r"KERNELS=\(([^)]*)\)", text)
    return {
        "latency_mode": lat[0] if lat else "default",
        "cudagraph": "--cudagraph" in runstep,
        "flags": tuple(f for f in flags if f not in ("--op", "--kernel", "--output", "--only")),
        "runs": len(re.findall(r"python\s+benchmarks/run\.py", runstep)),
        "torch": _torch_pin(text),
        "autotune": tuple(auto),
        "kernels": [k.strip().strip('"') for k in km.group(1).split()] if km else None,
    }


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def parse_runpy(text: str) -> dict:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {"max_inputs": None, "kernels": {}, "baselines": {}}
    out = {"max_inputs": None, "kernels": {}, "baselines": {}}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        if target == "MAX_NUM_INPUTS":
            out["max_inputs"] = _literal(value)
        elif target == "KERNEL_MAPPINGS" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                name = _literal(k)
                if not isinstance(name, str):
                    continue
                opts = {}
                if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
                    o = _literal(v.elts[-1])
                    opts = o if isinstance(o, dict) else {}
                out["kernels"][name] = {"num_inputs": opts.get("num_inputs"),
                                        "no_cudagraph": "--cudagraph" in (opts.get("remove_flags") or [])}
        elif target == "KERNEL_METRIC_MAPPINGS" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                name, m = _literal(k), _literal(v)
                if isinstance(name, str) and isinstance(m, dict):
                    base = [impl for impl, role in m.items() if role == "baseline"]
                    out["baselines"][name] = base[0] if base else None
    return out


def parse_tpu(text: str) -> list[str]:
    m = re.search(r"^KERNEL_MAPPINGS[^=]*=\s*\{", text, re.M)
    if not m:
        return []
    names, depth = [], 0
    for line in text[m.end():].split("\n"):
        if depth == 0:
            km = re.match(r'\s{4}"([\w-]+)":', line)
            if km:
                names.append(km.group(1))
            if line.startswith("}"):
                break
        depth += line.count("(") + line.count("[") + line.count("{") - line.count(")") - line.count("]") - line.count("}")
        depth = max(depth, 0)
    return names


def parse_linattn(text: str) -> dict:
    out = {"shapes": [], "varlen_shapes": [], "dense": [], "fwd_only": []}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            t = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if not isinstance(t, ast.Name):
                continue
            v = _literal(node.value) if node.value is not None else None
            if t.id == "SHAPES" and isinstance(v, list):
                out["shapes"] = [s[0] for s in v]
            elif t.id == "VARLEN_SHAPES" and isinstance(v, list):
                out["varlen_shapes"] = [s[0] for s in v]
            elif t.id == "DENSE_VARIANTS" and isinstance(v, list):
                out["dense"] = list(v)
            elif t.id in ("FUSED_PREAMBLE_VARIANTS", "VARLEN_VARIANTS") and isinstance(v, dict):
                out["fwd_only"] += list(v)
    return out


def parse_runs_on(text: str) -> str:
    m = re.search(r"runs-on:\s*(\S+)", text)
    return m.group(1) if m else ""


def parse_pretuned_run(text: str) -> list[str]:
    m = re.search(r"^KERNELS\s*(?::[^=]*)?=\s*(\[.*?\])", text, re.M | re.S)
    v = _literal(ast.parse(m.group(1), mode="eval").body) if m else None
    return list(v) if isinstance(v, list) else []


def parse_pretuned_kernel(text: str) -> dict:
    out = {"baselines": None, "cudagraph": False}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
            names = []
            for sub in ast.walk(node):
                if isinstance(sub, ast.Tuple) and sub.elts and isinstance(sub.elts[0], ast.Constant) \
                        and isinstance(sub.elts[0].value, str):
                    names.append(sub.elts[0].value)
            out["baselines"] = names or None
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                    out["cudagraph"] = bool(sub.value.value)
    return out


def parse_pretuned_bench(text: str) -> dict:
    return {"l2_clear": bool(re.search(r"cache_clear|clear.{0,20}L2|L2.{0,30}clear", text, re.I)),
            "rep": tuple(sorted(set(re.findall(r"rep\s*:\s*int\s*=\s*(\d+)", text))))}


DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "mi300x": "AMD Instinct MI300X",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}


def _csv(s: str) -> list[str]:
    return [k.strip() for k in (s or "").split(",") if k.strip()]


def nightly_config(git: Git, sha: str) -> dict | None:
    """What the cron nightly at `sha` runs: {cron, env, platforms: {platform_short: {...}}, series: {(p, k): fp}}.
    None when no nightly cron exists at that commit."""
    disp = git.parse(sha, DISPATCH, parse_dispatch)
    if disp is None:
        return None
    night = git.parse(sha, NIGHTLY, parse_nightly)
    if night is not None and night["cron"]:
        cron, flags, env = night["cron"], night["flags"], night["env_vars"]
        jobs = [j for j in disp["jobs"] if j["flag"] in flags]
    elif disp["cron"]:
        cron, env = disp["cron"], ""
        jobs = [j for j in disp["jobs"] if j["on_schedule"] or j["flag"] is None]
    else:
        return None
    bench = git.parse(sha, BENCH, parse_bench) or {}
    runpy = git.parse(sha, RUNPY, parse_runpy) or {"kernels": {}, "max_inputs": None, "baselines": {}}
    env_auto = tuple(sorted(e for e in env.split() if e.startswith("HELION_AUTOTUNE")))
    platforms: dict[str, dict] = {}
    series: dict[tuple[str, str], dict] = {}
    for j in jobs:
        alias = j["alias"]
        p = "tpu" if alias == "tpu_bridge" else alias
        if j["backend"] and j["backend"] not in ("triton", "pallas") and not p.endswith("_" + j["backend"]):
            p = f"{p}_{j['backend']}"
        runner = j["runner"]
        if "benchmark_tpu" in j["uses"]:
            wf = TPU_BRIDGE_WF if alias == "tpu_bridge" else TPU_WF
            runner = git.parse(sha, wf, parse_runs_on) or runner
        env_fp = (runner, j["image"], j["runtime"])
        pl = platforms.setdefault(p, {"env": {}, "device": DEVICE.get(alias.split("_")[0], alias)})
        pl["env"][j["job"]] = env_fp
        if j["kernels_input"]:
            kernels = _csv(disp["defaults"].get(j["kernels_input"], ""))
        else:
            kernels = list(bench.get("kernels") or [])
        if j["suite"] == "linattn":
            la = git.parse(sha, RUN_LINATTN, parse_linattn) or {"shapes": [], "varlen_shapes": [], "fwd_only": []}
            for v in dict.fromkeys(k.removesuffix("-bwd") for k in kernels):
                rows = [v] if v in la["fwd_only"] else [v, f"{v}-bwd"]
                shapes = la["varlen_shapes"] if v in ("kda_varlen",) or "varlen" in v else la["shapes"]
                for r in rows:
                    series[(p, r)] = {"suite": "linattn", "shapes": tuple(shapes), "baseline_label": "fla",
                                      "cudagraph": False, "method": ("linattn", env_auto), "env": env_fp}
            continue
        if "benchmark_tpu" in j["uses"] and alias != "tpu_bridge":
            tk = git.parse(sha, RUN_TPU, parse_tpu) or []
            if kernels == ["all"]:
                kernels = tk
            for k in kernels:
                series[(p, k)] = {"suite": "tpu", "shapes": None, "n_inputs": 6, "baseline_label": None,
                                  "cudagraph": False, "method": ("run_tpu", env_auto), "env": env_fp}
            continue
        for k in kernels:
            km = runpy["kernels"].get(k, {})
            mx = runpy["max_inputs"] or 20
            n = km.get("num_inputs") or None
            series[(p, k)] = {
                "suite": "tritonbench", "shapes": None,
                "n_inputs": min(n, mx) if n else None, "max_inputs": mx,
                "baseline_label": None,
                "cudagraph": bool(bench.get("cudagraph", True)) and not km.get("no_cudagraph", False),
                "baseline": runpy["baselines"].get(k),
                "method": (bench.get("latency_mode"), bench.get("flags"), bench.get("runs"), env_auto,
                           bench.get("autotune")),
                "torch": bench.get("torch"),
                "env": env_fp,
            }
    return {"cron": cron, "platforms": platforms, "series": series, "env_auto": env_auto}


def pretuned_config(git: Git, sha: str) -> dict | None:
    night = git.text(sha, P_NIGHTLY)
    if night is None or not parse_cron(night):
        return None
    disp = git.parse(sha, P_DISPATCH, parse_dispatch) or {"jobs": []}
    kernels = git.parse(sha, P_RUN, parse_pretuned_run) or []
    bench = git.parse(sha, P_BENCH, parse_pretuned_bench) or {}
    wf = git.text(sha, P_BENCH_WF) or ""
    torch = _torch_pin(wf)
    toid = git.blob(sha, "pretuned_kernels")[0]
    if ("ls-tree", toid) not in git.parsed:
        git.parsed[("ls-tree", toid)] = git.run("ls-tree", "-r", "--name-only", sha, "pretuned_kernels/").split()
    tree = git.parsed[("ls-tree", toid)]
    hw = {}
    for path in tree:
        m = re.match(r"pretuned_kernels/(\w+)/_helion_aot_\1_cuda_(sm\d+)\.py$", path)
        if m:
            hw.setdefault(m.group(1), {})[m.group(2)] = path
    plat = {"sm90": "h100", "sm100": "b200"}
    aliases = {j["alias"]: j for j in disp["jobs"]}
    series = {}
    for k in kernels:
        info = git.parse(sha, f"pretuned_kernels/{k}/{k}.py", parse_pretuned_kernel) or {}
        for sm, path in sorted(hw.get(k, {}).items()):
            p = plat.get(sm, sm)
            if p not in aliases:
                continue
            j = aliases[p]
            series[(p, k)] = {"compute": sm, "cudagraph": info.get("cudagraph", False),
                              "baselines": tuple(info.get("baselines") or ()), "config": git.blob(sha, path)[0],
                              "timer": (bench.get("l2_clear"), bench.get("rep")), "torch": torch,
                              "env": (j["runner"], j["image"], j["runtime"])}
    return {"cron": parse_cron(night), "series": series}
