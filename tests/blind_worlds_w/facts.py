"""What the real Helion files say at a given sha (read from a clone of the bundle).

Everything the simulation needs to know about the benchmark set-up of a nightly comes from here:
which platforms the nightly cron dispatches, which kernels each platform runs, their input counts
and cudagraph flags, the linear-attention shapes and variants, the TPU kernel list, the benchmark
command flags and env, and the pretuned suite (kernels, hardware, baselines, cudagraph, configs).
"""
from __future__ import annotations

import ast
import re
import subprocess
import threading
from datetime import datetime, timezone

import yaml


class Git:
    """A thin reader over one repository: blobs and trees through one `git cat-file --batch`."""

    def __init__(self, repo: str):
        self.repo = str(repo)
        self._proc = subprocess.Popen(["git", "-C", self.repo, "cat-file", "--batch"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._lock = threading.Lock()
        self._cache: dict[str, bytes | None] = {}

    def run(self, *args: str) -> str:
        return subprocess.run(["git", "-C", self.repo, *args], check=True, capture_output=True, text=True).stdout

    def _obj(self, spec: str) -> tuple[str, bytes] | None:
        with self._lock:
            self._proc.stdin.write((spec + "\n").encode())
            self._proc.stdin.flush()
            header = self._proc.stdout.readline().decode().split()
            if len(header) < 3:
                return None
            size = int(header[2])
            data = self._proc.stdout.read(size)
            self._proc.stdout.read(1)
            return header[1], data

    def show(self, sha: str, path: str) -> str | None:
        key = f"{sha}:{path}"
        if key not in self._cache:
            o = self._obj(key)
            self._cache[key] = o[1] if o and o[0] == "blob" else None
        v = self._cache[key]
        return v.decode("utf-8", "replace") if v is not None else None

    def ls(self, sha: str, path: str) -> dict[str, str]:
        """{name: object id} of a tree (empty when absent)."""
        o = self._obj(f"{sha}:{path}")
        if not o or o[0] != "tree":
            return {}
        data, out, i = o[1], {}, 0
        while i < len(data):
            sp = data.index(b" ", i)
            nul = data.index(b"\0", sp)
            name = data[sp + 1:nul].decode()
            out[name] = data[nul + 1:nul + 21].hex()
            i = nul + 21
        return out

    def blob_id(self, sha: str, path: str) -> str | None:
        d, _, name = path.rpartition("/")
        return self.ls(sha, d).get(name)

    def close(self):
        try:
            self._proc.stdin.close()
            self._proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            self._proc.kill()


class History:
    """The first-parent history of main: order, dates, subjects, touched files."""

    def __init__(self, git: Git):
        self.git = git
        out = git.run("log", "--first-parent", "--reverse", "--format=%H %ct", "main")
        self.shas: list[str] = []
        self.times: list[int] = []
        for line in out.splitlines():
            sha, ct = line.split()
            self.shas.append(sha)
            self.times.append(int(ct))
        self.pos = {s: i for i, s in enumerate(self.shas)}

    def head_at(self, t: datetime) -> str:
        """HEAD of main at time t: the newest first-parent commit (walking back from the tip) whose
        commit time is not after t (commit times are not strictly monotonic along first-parent)."""
        ts = t.timestamp()
        best = None
        for i in range(len(self.shas) - 1, -1, -1):
            if self.times[i] <= ts:
                best = i
                break
        assert best is not None
        return self.shas[best]

    def between(self, lo: str, hi: str) -> list[str]:
        """First-parent commits in (lo, hi], oldest first."""
        return self.shas[self.pos[lo] + 1:self.pos[hi] + 1]

    def included(self, sha: str, night_sha: str) -> bool:
        return self.pos[sha] <= self.pos[night_sha]

    def date(self, sha: str) -> datetime:
        return datetime.fromtimestamp(self.times[self.pos[sha]], tz=timezone.utc)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:  # noqa: BLE001
        return None


def _find_assign(tree: ast.AST, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


class Facts:
    """Parsed facts per sha, memoised on the blob ids of the files they come from."""

    def __init__(self, git: Git):
        self.git = git
        self._memo: dict[tuple, object] = {}

    def _cached(self, kind: str, sha: str, paths: tuple[str, ...], fn):
        key = (kind,) + tuple(self.git.blob_id(sha, p) for p in paths)
        if key not in self._memo:
            self._memo[key] = fn(*(self.git.show(sha, p) for p in paths))
        return self._memo[key]

    # ---- the nightly: which platforms, which kernels, which machine -------------------------
    def nightly(self, sha: str) -> dict:
        return self._cached("nightly", sha, (".github/workflows/benchmark_nightly.yml",
                                             ".github/workflows/benchmark_dispatch.yml"), _parse_nightly)

    def bench_cmd(self, sha: str) -> dict:
        return self._cached("bench", sha, (".github/workflows/benchmark.yml", "benchmarks/run.py",
                                           ".github/ci_commit_pins/tritonbench.txt"), _parse_bench)

    def kernel_mappings(self, sha: str) -> dict:
        return self._cached("km", sha, ("benchmarks/run.py",), _parse_km)

    def linattn(self, sha: str) -> dict | None:
        return self._cached("linattn", sha, ("benchmarks/run_linattn.py",), _parse_linattn)

    def tpu(self, sha: str) -> dict:
        return self._cached("tpu", sha, ("benchmarks/run_tpu.py", ".github/workflows/benchmark_tpu.yml"), _parse_tpu)

    # ---- the pretuned suite -----------------------------------------------------------------
    def pretuned(self, sha: str) -> dict | None:
        disp = self.git.show(sha, ".github/workflows/benchmark_pretuned_dispatch.yml")
        nightly = self.git.show(sha, ".github/workflows/benchmark_pretuned_nightly.yml")
        runpy = self.git.show(sha, "pretuned_kernels/run.py")
        if not (disp and nightly and runpy):
            return None
        key = ("pretuned", self.git.blob_id(sha, "pretuned_kernels/run.py"),
               self.git.blob_id(sha, ".github/workflows/benchmark_pretuned_dispatch.yml"),
               self.git.blob_id(sha, ".github/workflows/benchmark_pretuned.yml"),
               self.git.blob_id(sha, "pretuned_kernels/_bench.py"),
               tuple(sorted(self.git.ls(sha, "pretuned_kernels").items())))
        if key in self._memo:
            return self._memo[key]
        aliases = {}
        for job in (yaml.safe_load(disp) or {}).get("jobs", {}).values():
            w = (job or {}).get("with") or {}
            if "alias" in w:
                aliases[w["alias"]] = {"runner": w.get("runner"), "image": w.get("image"),
                                       "runtime": w.get("runtime-version")}
        tree = ast.parse(runpy)
        kernels = _literal(_find_assign(tree, "KERNELS")) or []
        by_compute = _literal(_find_assign(tree, "_HARDWARE_BY_COMPUTE")) or {"sm90": "h100", "sm100": "b200"}
        bench = self.git.show(sha, "pretuned_kernels/_bench.py") or ""
        wf = self.git.show(sha, ".github/workflows/benchmark_pretuned.yml") or ""
        info = {}
        for k in kernels:
            files = self.git.ls(sha, f"pretuned_kernels/{k}")
            src = self.git.show(sha, f"pretuned_kernels/{k}/{k}.py") or ""
            hw, cfg = set(), {}
            for name, oid in files.items():
                m = re.match(rf"_helion_aot_{re.escape(k)}_cuda_(sm\d+)\.py$", name)
                if m:
                    hw.add(by_compute.get(m.group(1), m.group(1)))
                    cfg[by_compute.get(m.group(1), m.group(1))] = oid
            m = re.search(r"def use_cudagraph\(\)[^:]*:\s*(?:\"\"\".*?\"\"\"\s*)?return (True|False)", src, re.S)
            cg = m.group(1) == "True" if m else False
            names = []
            for n in re.findall(r"\(\s*\"([A-Za-z_0-9]+)\",\s*(?:\(?lambda|torch\.compile|_[A-Za-z_0-9]+|[a-z_]+\b)", src):
                if n in _BASELINE_NAMES and n not in names:
                    names.append(n)
            if not names:
                names = ["deepgemm"] if "deepgemm" in k else ["cutlass"] if "grouped" in k else ["torch"]
            info[k] = {"hardware": hw, "cudagraph": cg, "baselines": names, "configs": cfg,
                       "pre_captured": "pre_captured_cudagraph=True" in src, "src_id": files.get(f"{k}.py")}
        out = {"aliases": aliases, "kernels": kernels, "info": info,
               "l2_clear": "_do_bench_cudagraph_with_cache_clear" in bench,
               "torch": tuple(sorted(set(re.findall(r"torch==([\w.*]+)", wf))))}
        self._memo[key] = out
        return out


_BASELINE_NAMES = {"torch", "torch_compile", "vllm", "cutlass", "eager", "deepgemm", "flashinfer",
                   "cublas", "triton", "flashkda", "fla"}


def _parse_nightly(nightly_src: str | None, dispatch_src: str | None) -> dict:
    nightly_src = nightly_src or ""
    runs = {k: v == "true" for k, v in re.findall(r"(run_\w+):\s*'(\w+)'", nightly_src)}
    env = re.findall(r"env_vars:\s*'([^']*)'", nightly_src)
    d = yaml.safe_load(dispatch_src or "") or {}
    on = d.get(True) or d.get("on") or {}
    inputs = ((on.get("workflow_dispatch") or {}).get("inputs")) or {}
    defaults = {k: [x.strip() for x in str(v.get("default") or "").split(",") if x.strip()]
                for k, v in inputs.items() if k.startswith("kernels")}
    jobs = []
    for name, job in (d.get("jobs") or {}).items():
        w = (job or {}).get("with") or {}
        if "alias" not in w:
            continue
        cond = str(job.get("if") or "")
        m = re.search(r"inputs\.(run_\w+)\s*==", cond)
        gate = m.group(1) if m else None
        if gate is None:  # gated through its gen-matrix job
            need = job.get("needs")
            need = need[0] if isinstance(need, list) else need
            if need and need in d["jobs"]:
                m = re.search(r"inputs\.(run_\w+)\s*==", str(d["jobs"][need].get("if") or ""))
                gate = m.group(1) if m else None
        kin = re.search(r"inputs\.(kernels\w*)", str(w.get("kernels") or ""))
        if kin is None and need_kernels(d, job):
            kin = re.search(r"inputs\.(kernels\w*)", need_kernels(d, job))
        jobs.append({"job": name, "alias": w["alias"], "runner": w.get("runner"), "image": w.get("image"),
                     "runtime": w.get("runtime-version"), "suite": w.get("suite") or "tritonbench",
                     "backend": w.get("backend") or "triton", "gate": gate,
                     "kernels_input": kin.group(1) if kin else None,
                     "container": w.get("container-options")})
    return {"runs": runs, "env": env[0] if env else "", "defaults": defaults, "jobs": jobs}


def need_kernels(d: dict, job: dict) -> str:
    need = job.get("needs")
    need = need[0] if isinstance(need, list) else need
    if need and need in d.get("jobs", {}):
        return str(((d["jobs"][need] or {}).get("with") or {}).get("kernels") or "")
    return ""


def _parse_bench(wf: str | None, runpy: str | None, pin: str | None) -> dict:
    wf, runpy = wf or "", runpy or ""
    tb = wf.split("Run TritonBench Benchmark")[-1].split("- name:")[0] if "Run TritonBench Benchmark" in wf else wf
    metrics = re.findall(r"--metrics (\S+)", tb)
    env = dict(re.findall(r"^\s+(HELION_\w+):\s*\"?([^\"\n]+)\"?", wf, re.M))
    return {
        "cudagraph": "--cudagraph" in tb,
        "latency": bool(metrics) and "latency" in metrics[-1],
        "measure_ct": "--measure-compile-time" in tb,
        "ct_enabled": "enable_compile_time()" in runpy,
        "two_pass": "HELION_ASSERT_CACHE_HIT=1" in tb,
        "budget": int(env["HELION_AUTOTUNE_BUDGET_SECONDS"]) if "HELION_AUTOTUNE_BUDGET_SECONDS" in env else None,
        "subprocess_env": env.get("HELION_AUTOTUNE_BENCHMARK_SUBPROCESS"),
        "torch": tuple(sorted(set(re.findall(r"torch==([\w.*]+)", _step(wf, "Install PyTorch"))))),
        "tritonbench": (pin or "").strip(),
        "gdn_mi350_limit": "limit_mi350_inputs" in runpy,
        "linattn_aot": "AOTAutotuneCache" in wf,
    }


def _step(wf: str, name: str) -> str:
    if name not in wf:
        return ""
    return wf.split(name, 1)[1].split("- name:", 1)[0]


def _parse_km(src: str | None) -> dict:
    if not src:
        return {"kernels": {}, "max_inputs": 20}
    tree = ast.parse(src)
    node = _find_assign(tree, "KERNEL_MAPPINGS")
    mx = _literal(_find_assign(tree, "MAX_NUM_INPUTS")) or 20
    out = {}
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            name = _literal(k)
            if not isinstance(name, str):
                continue
            opts = {}
            if isinstance(v, ast.Tuple):
                for elt in v.elts:
                    if isinstance(elt, ast.Dict):
                        for kk, vv in zip(elt.keys, elt.values):
                            kn = _literal(kk)
                            if kn in ("num_inputs", "remove_flags"):
                                opts[kn] = _literal(vv)
            out[name] = opts
    return {"kernels": out, "max_inputs": mx}


def _parse_linattn(src: str | None) -> dict | None:
    if not src:
        return None
    tree = ast.parse(src)
    shapes = _literal(_find_assign(tree, "SHAPES")) or []
    varlen = _literal(_find_assign(tree, "VARLEN_SHAPES")) or []
    dense = _literal(_find_assign(tree, "DENSE_VARIANTS"))
    fused = _literal(_find_assign(tree, "FUSED_PREAMBLE_VARIANTS")) or {}
    vl = _literal(_find_assign(tree, "VARLEN_VARIANTS")) or {}
    if dense is None:  # older layouts: a dict or list named VARIANTS
        v = _literal(_find_assign(tree, "VARIANTS"))
        dense = list(v) if v else []
    return {"shapes": [s[0] for s in shapes], "varlen_shapes": [s[0] for s in varlen],
            "variants": list(dense) + list(fused) + list(vl), "fwd_only": set(fused) | set(vl),
            "varlen": set(vl)}


def _parse_tpu(src: str | None, wf: str | None) -> dict:
    if not src:
        return {"kernels": set(), "num_shapes": 2, "runner": None}
    tree = ast.parse(src)
    node = _find_assign(tree, "KERNEL_MAPPINGS")
    ks = set()
    if isinstance(node, ast.Dict):
        ks = {_literal(k) for k in node.keys if isinstance(_literal(k), str)}
    m = re.search(r"--num-shapes (\d+)", wf or "")
    r = re.search(r"runs-on:\s*(\S+)", wf or "")
    per_shape = "_run_one_shape_via_subprocess" in src
    return {"kernels": ks, "num_shapes": int(m.group(1)) if m else 2, "runner": r.group(1) if r else None,
            "per_shape_subprocess": per_shape}


def platform_plan(facts: Facts, sha: str) -> dict:
    """{alias: {"jobs": [...], "tritonbench": [kernels], "linattn": [variants], "tpu": [...], "tpu_bridge": [...]}}
    for the nightly cron at `sha` (the dispatch inputs the nightly sets, the defaults of the kernel lists)."""
    n = facts.nightly(sha)
    runs, defaults = n["runs"], n["defaults"]
    plan: dict[str, dict] = {}
    for job in n["jobs"]:
        gate = job["gate"]
        if gate is None or not runs.get(gate, False):
            continue
        kernels = list(dict.fromkeys(defaults.get(job["kernels_input"] or "", [])))
        alias = job["alias"]
        if alias == "tpu_bridge":
            plan.setdefault("tpu", {"jobs": []})["bridge"] = kernels
            plan["tpu"]["jobs"].append(job)
            continue
        p = plan.setdefault(alias, {"jobs": []})
        p["jobs"].append(job)
        if job["suite"] == "linattn":
            p["linattn"] = list(dict.fromkeys(k.removesuffix("-bwd") for k in kernels))
        elif alias == "tpu":
            p["tpu"] = kernels
        else:
            p["tritonbench"] = kernels
            p["runner"], p["image"], p["runtime"], p["backend"] = job["runner"], job["image"], job["runtime"], job["backend"]
    return plan
