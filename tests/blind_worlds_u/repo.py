"""The real Helion repository: a clone of the shared bundle, first-parent history, and the benchmark
facts parsed (never imported, never executed) from the real files at any sha."""
from __future__ import annotations

import ast
import hashlib
import re
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import yaml


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          input=input).stdout


def clone_bundle(bundle: Path, dest: Path, head_sha: str | None = None) -> Path:
    """A clone of the bundle with ``main`` checked out (at ``head_sha`` when given: a world's
    repository ends where its window ends, so nothing after it can leak in)."""
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        if tmp.exists():
            subprocess.run(["rm", "-rf", str(tmp)], check=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle), str(tmp)], check=True)
        tmp.rename(dest)
    if head_sha:
        cur = git(dest, "rev-parse", "HEAD").strip()
        if cur != head_sha:
            git(dest, "checkout", "-q", "-B", "main", head_sha)
    return dest


@dataclass(frozen=True)
class Commit:
    sha: str
    date: datetime  # committer date, UTC (what `git rev-list --before` compares)
    subject: str
    files: tuple


class Repo:
    """Reads files at shas through one `git cat-file --batch` process (fast, thread-safe)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._proc = None
        self._lock = threading.Lock()
        self._first_parent: list[Commit] | None = None

    # -- history -------------------------------------------------------------------------------
    def first_parent(self, ref: str = "main") -> list[Commit]:
        """Oldest first, with touched files (diff against the first parent)."""
        if self._first_parent is None:
            out = git(self.path, "log", "--first-parent", "--reverse", "-m", "--name-only",
                      "--format=\x1e%H\x1f%ct\x1f%s", ref)
            commits = []
            for block in out.split("\x1e")[1:]:
                head, _, rest = block.partition("\n")
                sha, ct, subject = head.split("\x1f", 2)
                files = tuple(l for l in rest.splitlines() if l.strip())
                commits.append(Commit(sha, datetime.fromtimestamp(int(ct), tz=timezone.utc), subject, files))
            self._first_parent = commits
        return self._first_parent

    # -- files ---------------------------------------------------------------------------------
    def _cat(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._proc

    def read(self, sha: str, path: str) -> str | None:
        with self._lock:
            p = self._cat()
            p.stdin.write(f"{sha}:{path}\n".encode())
            p.stdin.flush()
            header = p.stdout.readline().decode()
            if header.endswith("missing\n") or not header.strip():
                return None
            size = int(header.split()[2])
            data = p.stdout.read(size)
            p.stdout.read(1)
            return data.decode("utf-8", "replace")

    def ls(self, sha: str, prefix: str) -> dict[str, str]:
        """path -> blob id under ``prefix`` at ``sha``."""
        out = git(self.path, "ls-tree", "-r", sha, "--", prefix)
        res = {}
        for line in out.splitlines():
            meta, _, p = line.partition("\t")
            res[p] = meta.split()[2]
        return res

    def close(self) -> None:
        if self._proc is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except Exception:
                self._proc.kill()
            self._proc = None


# ------------------------------------------------------------------------------------------------
# Parsers (text in, facts out). Memoized on the text itself.
# ------------------------------------------------------------------------------------------------

def _key(text: str | None) -> str:
    return hashlib.sha1((text or "").encode()).hexdigest()


_memo: dict = {}


def _memoize(kind, text, fn):
    k = (kind, _key(text))
    if k not in _memo:
        _memo[k] = fn(text)
    return _memo[k]


def parse_kernel_mappings(text: str | None) -> dict:
    """benchmarks/run.py KERNEL_MAPPINGS -> {kernel: {"num_inputs": int|None, "cudagraph": bool,
    "module": str}} (the options dict is the trailing dict of each entry)."""
    def go(text):
        if not text:
            return {}
        tree = ast.parse(text)
        for node in tree.body:
            target = None
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target, value = node.target.id, node.value
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            if target != "KERNEL_MAPPINGS" or not isinstance(value, ast.Dict):
                continue
            res = {}
            for k, v in zip(value.keys, value.values):
                if not isinstance(k, ast.Constant) or not isinstance(v, ast.Tuple):
                    continue
                opts = {"num_inputs": None, "cudagraph": True, "module": None}
                elts = v.elts
                if len(elts) > 1 and isinstance(elts[1], ast.Constant):
                    opts["module"] = elts[1].value
                if elts and isinstance(elts[-1], ast.Dict):
                    for ok, ov in zip(elts[-1].keys, elts[-1].values):
                        if not isinstance(ok, ast.Constant):
                            continue
                        if ok.value == "num_inputs" and isinstance(ov, ast.Constant):
                            opts["num_inputs"] = int(ov.value)
                        if ok.value == "remove_flags" and isinstance(ov, ast.List):
                            flags = [e.value for e in ov.elts if isinstance(e, ast.Constant)]
                            if "--cudagraph" in flags:
                                opts["cudagraph"] = False
                res[k.value] = opts
            return res
        return {}
    return _memoize("km", text, go)


def parse_names(text: str | None, var: str) -> list:
    """A module-level list of names/tuples (first element) or a dict's keys, e.g. run_tpu.py
    KERNEL_MAPPINGS, run_linattn.py SHAPES / VARIANTS."""
    def go(text):
        if not text:
            return {}
        tree = ast.parse(text)
        env: dict[str, list] = {}
        for node in tree.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                name, value = node.target.id, node.value
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            else:
                continue
            if value is None:
                continue
            env[name] = _names_of(value, env)
        return env
    return _memoize("names", text, go).get(var, [])


def _names_of(value, env) -> list:
    if isinstance(value, ast.Dict):
        return [k.value for k in value.keys if isinstance(k, ast.Constant)]
    if isinstance(value, (ast.List, ast.Tuple)):
        out = []
        for e in value.elts:
            if isinstance(e, ast.Constant):
                out.append(e.value)
            elif isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant):
                out.append(e.elts[0].value)
            elif isinstance(e, ast.Starred) and isinstance(e.value, ast.Name):
                out.extend(env.get(e.value.id, []))
        return out
    return []


def _load_yaml(text: str | None) -> dict:
    if not text:
        return {}
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return d if isinstance(d, dict) else {}


def parse_dispatch(text: str | None) -> dict:
    """benchmark_dispatch.yml -> {"defaults": {input: [kernels]}, "jobs": {(alias, suite): {...}}}."""
    def go(text):
        d = _load_yaml(text)
        on = d.get("on") or d.get(True) or {}
        inputs = ((on or {}).get("workflow_dispatch") or {}).get("inputs") or {}
        defaults = {}
        for name, spec in inputs.items():
            if name.startswith("kernels") and isinstance(spec, dict):
                csv = str(spec.get("default") or "")
                defaults[name] = [k.strip() for k in csv.split(",") if k.strip()]
        jobs = {}
        all_jobs = d.get("jobs") or {}
        for jname, job in all_jobs.items():
            w = (job or {}).get("with") or {}
            if "alias" not in w:
                continue
            conds, kexprs = [str(job.get("if", ""))], [str(w.get("kernels", ""))]
            needs = job.get("needs") or []
            for n in ([needs] if isinstance(needs, str) else needs):
                nj = all_jobs.get(n) or {}
                conds.append(str(nj.get("if", "")))
                kexprs.append(str((nj.get("with") or {}).get("kernels", "")))
            m = re.search(r"inputs\.(run_\w+)", " ".join(conds))
            jobs[(w["alias"], w.get("suite", "tritonbench"))] = {
                "job": jname, "uses": job.get("uses", ""), "toggle": m.group(1) if m else None,
                "runner": w.get("runner"), "image": w.get("image"), "runtime": w.get("runtime-version"),
                "backend": w.get("backend", "triton"),
                "kernels_input": next((x for x in map(_kernels_input, kexprs) if x), None),
            }
        return {"defaults": defaults, "jobs": jobs}
    return _memoize("dispatch", text, go)


def _kernels_input(expr: str) -> str | None:
    m = re.search(r"inputs\.(kernels\w*)", expr)
    return m.group(1) if m else None


def parse_nightly(text: str | None) -> dict:
    """benchmark_nightly.yml -> {"cron": (h, m), "runs": {run_x: bool}, "env": str}."""
    def go(text):
        text = text or ""
        m = re.search(r"cron:\s*'(\d+)\s+(\d+)", text)
        cron = (int(m.group(2)), int(m.group(1))) if m else (8, 0)
        runs = {k: v == "true" for k, v in re.findall(r"(run_\w+):\s*'(true|false)'", text)}
        env = re.search(r"env_vars:\s*'([^']*)'", text)
        return {"cron": cron, "runs": runs, "env": env.group(1) if env else ""}
    return _memoize("nightly", text, go)


def parse_benchmark_yml(text: str | None) -> dict:
    """benchmark.yml (or benchmark_pretuned.yml) -> torch pin, HELION_* env, timer flags."""
    def go(text):
        text = text or ""
        d = _load_yaml(text)
        env = {}
        for job in (d.get("jobs") or {}).values():
            for k, v in ((job or {}).get("env") or {}).items():
                if str(k).startswith("HELION_AUTOTUNE") and k != "HELION_AUTOTUNE_LOG_LEVEL":
                    env[k] = str(v)
        torch = re.search(r'torch==([\d.]+)', text)
        lat = re.search(r"--latency-measure-mode\s+(\S+)", text)
        return {"torch": torch.group(1).rstrip(".") if torch else None, "env": env,
                "cudagraph": "--cudagraph" in text, "latency_mode": lat.group(1) if lat else None,
                "compile_time": "--measure-compile-time" in text}
    return _memoize("bench", text, go)


def parse_tpu_workflow(text: str | None) -> dict:
    def go(text):
        d = _load_yaml(text)
        runner = None
        for job in (d.get("jobs") or {}).values():
            r = (job or {}).get("runs-on")
            if r:
                runner = str(r)
                break
        pins = dict(re.findall(r"(jax|libtpu|jaxlib)[=~]=([\w.]+)", text or ""))
        return {"runner": runner, "pins": tuple(sorted(pins.items()))}
    return _memoize("tpuwf", text, go)


def parse_pretuned_kernel(text: str | None) -> dict:
    """pretuned_kernels/<k>/<k>.py -> {"baselines": [names], "cudagraph": bool, "shapes": int}."""
    def go(text):
        text = text or ""
        res = {"baselines": [], "cudagraph": False, "shapes": 0, "implicit": False}
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return res
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Constant):
                        res["cudagraph"] = bool(sub.value.value)
            if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
                names = []
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Tuple) and len(sub.elts) == 2 and isinstance(sub.elts[0], ast.Constant) \
                            and isinstance(sub.elts[0].value, str):
                        names.append(sub.elts[0].value)
                res["baselines"] = list(dict.fromkeys(names))
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                n = 0
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.List,)) and sub.elts and all(isinstance(e, ast.Tuple) for e in sub.elts):
                        n += len(sub.elts)
                res["shapes"] = n
        if not res["baselines"]:  # the first versions timed one torch reference inline, no breakdown
            res["baselines"], res["implicit"] = ["torch"], True
        return res
    return _memoize("pk", text, go)


def parse_pretuned_kernel_list(text: str | None) -> list:
    return parse_names(text, "KERNELS")
