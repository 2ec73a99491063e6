"""Access to the real Helion repo (the bundle): clone, first-parent history, file reads,
and the benchmark matrix parsed from the real files at a sha (text/YAML/ast only —
nothing from the repo is imported or executed here)."""
from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml


from tests.shared_data import bundle_path, shared_dir  # noqa: E402,F401 (one rule for every test)


_CLONE_LOCK = threading.Lock()
_CLONE: Path | None = None


def clone_repo(dest: Path | None = None) -> Path:
    """Clone the bundle once per process (or into dest when given)."""
    global _CLONE
    if dest is not None:
        dest = Path(dest)
        if not (dest / ".git").exists():
            subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(dest)], check=True)
        return dest
    with _CLONE_LOCK:
        if _CLONE is None or not (_CLONE / ".git").exists():
            d = Path(tempfile.mkdtemp(prefix="blindworld-helion-")) / "helion"
            subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(d)], check=True)
            _CLONE = d
        return _CLONE


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@dataclass(frozen=True)
class Commit:
    sha: str
    date: datetime  # commit date, UTC
    subject: str
    files: tuple[str, ...]


def first_parent(repo: Path) -> list[Commit]:
    """Oldest-first list of main's first-parent commits with touched files."""
    out = git(repo, "log", "--first-parent", "--reverse", "-m", "--name-only",
              "--format=\x01%H\x02%cI\x02%s")
    commits = []
    for chunk in out.split("\x01")[1:]:
        head, _, rest = chunk.partition("\n")
        sha, date, subject = head.split("\x02", 2)
        files = tuple(sorted({f for f in rest.splitlines() if f.strip()}))
        dt = datetime.fromisoformat(date).astimezone(timezone.utc)
        commits.append(Commit(sha, dt, subject, files))
    return commits


class Blobs:
    """git cat-file --batch reader with a cache keyed by sha:path."""

    def __init__(self, repo: Path):
        self.repo = repo
        self._p = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._cache: dict[str, str | None] = {}
        self._ls: dict = {}

    def read(self, sha: str, path: str) -> str | None:
        key = f"{sha}:{path}"
        if key in self._cache:
            return self._cache[key]
        self._p.stdin.write((key + "\n").encode())
        self._p.stdin.flush()
        header = self._p.stdout.readline().decode()
        if header.endswith("missing\n") or not header.strip():
            self._cache[key] = None
            return None
        size = int(header.split()[2])
        data = self._p.stdout.read(size)
        self._p.stdout.read(1)
        txt = data.decode("utf-8", "replace")
        self._cache[key] = txt
        return txt

    def ls(self, sha: str, path: str) -> list[str]:
        """Names directly under path (one ls-tree -r of the parent per sha, cached)."""
        parent, _, leaf = path.rstrip("/").rpartition("/")
        key = (sha, parent)
        if key not in self._ls:
            try:
                out = git(self.repo, "ls-tree", "-r", "--name-only", sha, "--", parent + "/")
            except subprocess.CalledProcessError:
                out = ""
            tree: dict[str, list[str]] = {}
            for f in out.split():
                rest = f[len(parent) + 1:]
                d, _, name = rest.partition("/")
                if name:
                    tree.setdefault(d, []).append(name.split("/")[0])
            self._ls[key] = tree
        return self._ls[key].get(leaf, [])

    def close(self):
        try:
            self._p.stdin.close()
            self._p.wait(timeout=5)
        except Exception:
            self._p.kill()


# ----------------------------------------------------------------------------- parsing
_INPUT_HEADER = re.compile(r"^\s+(kernels\w*):\s*$")
_INPUT_DEFAULT = re.compile(r'^\s+default:\s*"([^"]*)"\s*$')


def dispatch_kernel_defaults(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        m = _INPUT_HEADER.match(line)
        if m:
            cur = m.group(1)
            continue
        if cur is None:
            continue
        md = _INPUT_DEFAULT.match(line)
        if md:
            out[cur] = [k.strip() for k in md.group(1).split(",") if k.strip()]
            cur = None
    return out


def dispatch_jobs(text: str) -> dict[str, dict]:
    """alias(+suite) -> {runner, image, runtime, backend, suite} from benchmark_dispatch.yml."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    jobs = {}
    for name, job in (doc.get("jobs") or {}).items():
        w = (job or {}).get("with") or {}
        alias = w.get("alias")
        if not alias:
            continue
        key = f"{alias}:{w.get('suite', 'tritonbench')}"
        jobs[key] = {"job": name, "runner": w.get("runner"), "image": w.get("image"),
                     "runtime": w.get("runtime-version"), "backend": w.get("backend", "triton"),
                     "suite": w.get("suite", "tritonbench"), "kernels_expr": str(w.get("kernels", ""))}
    return jobs


def nightly_flags(text: str) -> set[str]:
    return set(re.findall(r"(run_\w+):\s*'true'", text or ""))


@functools.lru_cache(maxsize=256)
def _parse(text: str):
    return ast.parse(text)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


@functools.lru_cache(maxsize=256)
def kernel_mappings(text: str | None, var: str = "KERNEL_MAPPINGS") -> dict[str, dict]:
    """kernel -> options dict (last tuple element when it is a dict literal)."""
    if not text:
        return {}
    try:
        tree = _parse(text)
    except SyntaxError:
        return {}
    for node in tree.body:
        tgt = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            tgt, val = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
        if tgt != var or not isinstance(val, ast.Dict):
            continue
        out = {}
        for k, v in zip(val.keys, val.values):
            name = _literal(k)
            if not isinstance(name, str):
                continue
            opts = {}
            if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[-1], ast.Dict):
                o = _literal(v.elts[-1])
                if isinstance(o, dict):
                    opts = o
            out[name] = opts
        return out
    return {}


@functools.lru_cache(maxsize=1024)
def module_constant(text: str | None, var: str):
    if not text:
        return None
    try:
        tree = _parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == var:
            return _literal(node.value)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == var for t in node.targets):
            v = _literal(node.value)
            if v is None and isinstance(node.value, (ast.List, ast.Tuple)):
                # e.g. VARIANTS = [*DENSE, *FUSED]: resolve starred names
                out = []
                for e in node.value.elts:
                    if isinstance(e, ast.Starred) and isinstance(e.value, ast.Name):
                        sub = module_constant(text, e.value.id)
                        out.extend(list(sub or []))
                    else:
                        out.append(_literal(e))
                return out
            return v
    return None


@functools.lru_cache(maxsize=1024)
def pretuned_kernel_info(text: str | None) -> tuple[list[str], bool]:
    """(baseline names, use_cudagraph) parsed from pretuned_kernels/<k>/<k>.py."""
    if not text:
        return ["torch"], False
    names: list[str] = []
    cg = False
    try:
        tree = _parse(text)
    except SyntaxError:
        return ["torch"], False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "use_cudagraph":
            for r in ast.walk(node):
                if isinstance(r, ast.Return) and isinstance(r.value, ast.Constant):
                    cg = bool(r.value.value)
        if isinstance(node, ast.FunctionDef) and node.name == "_baselines":
            seg = ast.get_source_segment(text, node) or ""
            names += re.findall(r'\(\s*"([A-Za-z0-9_]+)"\s*,', seg)
    names += re.findall(r'base_calls\.append\(\(\s*"([A-Za-z0-9_]+)"', text)
    if not names:
        names = re.findall(r'\(\s*"(torch|torch_compile|vllm|cutlass|deepgemm|quack|liger|flashinfer)"\s*,', text)
    seen = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen or ["torch"], cg


def git_show(repo: Path, sha: str, path: str) -> str | None:
    r = subprocess.run(["git", "-C", str(repo), "show", f"{sha}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None
