"""Reading the real Helion files at a commit (set P): git plumbing and parsers (ast / regex only)."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path


class Git:
    """One `git cat-file --batch` process for reading blobs, plus first-parent history."""

    def __init__(self, repo: Path):
        self.repo = Path(repo)
        self._p = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
        self._cache: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        out = self.run("log", "--first-parent", "--format=%H %ct", "main")
        self.fp = [(s, int(t)) for s, t in (l.split() for l in out.splitlines())]  # newest first
        self.pos = {s: i for i, (s, _) in enumerate(reversed(self.fp))}  # oldest = 0
        self._files: dict[str, list[str]] = {}
        self._subj: dict[str, str] = {}
        log = self.run("log", "--first-parent", "-m", "--name-only", "--format=%x00%H%x01%s", "main")
        for chunk in log.split("\x00")[1:]:
            head, _, rest = chunk.partition("\n")
            sha, _, subj = head.partition("\x01")
            self._subj[sha] = subj
            self._files[sha] = [f for f in rest.split("\n") if f.strip()]

    def run(self, *args) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True,
                              text=True).stdout

    def blob(self, sha: str, path: str) -> tuple[str | None, str | None]:
        """(object id, text) of path at sha, (None, None) when absent."""
        key = (sha, path)
        if key in self._cache:
            return self._cache[key]
        self._p.stdin.write(f"{sha}:{path}\n".encode())
        self._p.stdin.flush()
        head = self._p.stdout.readline().decode().split()
        if len(head) < 3 or head[1] != "blob":
            res = (None, None)
        else:
            n = int(head[2])
            data = self._p.stdout.read(n)
            self._p.stdout.read(1)
            res = (head[0], data.decode("utf-8", "replace"))
        self._cache[key] = res
        return res

    def text(self, sha: str, path: str) -> str | None:
        return self.blob(sha, path)[1]

    def head_at(self, ts: float) -> str:
        """Like `git rev-list -1 --first-parent --before=<ts> main`."""
        for s, t in self.fp:
            if t <= ts:
                return s
        return self.fp[-1][0]

    def between(self, lo: str, hi: str) -> list[str]:
        """First-parent commits in lo..hi, oldest first."""
        a, b = self.pos[lo], self.pos[hi]
        order = [s for s, _ in reversed(self.fp)]
        return order[a + 1:b + 1]

    def files(self, sha: str) -> list[str]:
        return self._files.get(sha, [])

    def subject(self, sha: str) -> str:
        return self._subj.get(sha, "")

    def close(self):
        try:
            self._p.stdin.close()
            self._p.wait(timeout=5)
        except Exception:
            self._p.kill()


# ---------------------------------------------------------------- parsers (pure functions of text)

_parse_cache: dict = {}


def _cached(kind, oid, fn, text):
    if oid is None:
        return fn(None)
    key = (kind, oid)
    if key not in _parse_cache:
        _parse_cache[key] = fn(text)
    return _parse_cache[key]


def cron_of(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    m = re.search(r"cron:\s*['\"](\d+)\s+(\d+)\s+\*\s+\*\s+\*['\"]", text)
    return (int(m.group(2)), int(m.group(1))) if m else None


def dispatch_info(text: str | None) -> dict:
    """alias -> {runner, image, runtime}; input name -> kernel default list."""
    out = {"aliases": {}, "inputs": {}, "run_defaults": {}}
    if not text:
        return out
    cur: dict = {}
    cur_input = None
    for line in text.splitlines():
        if re.match(r"^  [\w-]+:\s*$", line):  # a new job
            cur = {}
        m = re.match(r"^\s+(runner|image|runtime-version|runs-on):\s*(\S+)", line)
        if m:
            cur[m.group(1)] = m.group(2)
        m = re.match(r"^\s+alias:\s*(\S+)", line)
        if m and m.group(1) not in out["aliases"]:
            out["aliases"][m.group(1)] = {"runner": cur.get("runner") or cur.get("runs-on"),
                                          "image": cur.get("image"), "runtime": cur.get("runtime-version")}
        m = re.match(r"^\s+(kernels\w*|run_\w+):\s*$", line)
        if m:
            cur_input = m.group(1)
            continue
        m = re.match(r"^\s+default:\s*\"?([^\"]*)\"?\s*$", line)
        if m and cur_input:
            if cur_input.startswith("kernels"):
                out["inputs"][cur_input] = [k.strip() for k in m.group(1).split(",") if k.strip()]
            else:
                out["run_defaults"][cur_input] = m.group(1).strip().lower() == "true"
            cur_input = None
    return out


def nightly_inputs(text: str | None) -> tuple[set, str]:
    if not text:
        return set(), ""
    runs = set(re.findall(r"\b(run_\w+):\s*'true'", text))
    env = " ".join(sorted(re.findall(r"HELION_AUTOTUNE_\w+=\S+?(?=['\s,])", text)))
    return runs, env


def bench_yml(text: str | None) -> dict:
    if not text:
        return {"latency_mode": None, "cudagraph": False, "compile": False, "autotune": "", "pins": "",
                "kernels": []}
    lat = re.search(r"--latency-measure-mode\s+(\w+)", text)
    env = sorted(set(re.findall(r"(HELION_AUTOTUNE_(?!LOG)\w+)[:=]\s*\"?([\w.]+)", text)))
    pins = []
    for line in text.splitlines():
        s = line.strip()
        if "install" in s and re.search(r"\btorch\b|triton|index-url", s) and "requirements" not in s:
            pins.append(re.sub(r"\s+", " ", s))
    km = re.search(r"KERNELS=\(([^)]*)\)", text)
    kernels = re.findall(r'"([\w-]+)"', km.group(1)) if km else []
    return {"latency_mode": lat.group(1) if lat else None, "cudagraph": "--cudagraph" in text,
            "compile": "--measure-compile-time" in text,
            "autotune": " ".join(f"{a}={b}" for a, b in env), "pins": "\n".join(pins), "kernels": kernels}


def kernel_mappings(text: str | None) -> dict:
    """kernel -> (cudagraph removed, num_inputs or None) from benchmarks/run.py."""
    if not text:
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        tgt = None
        if isinstance(node, ast.AnnAssign):
            tgt = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            tgt = node.targets[0]
        if not (isinstance(tgt, ast.Name) and tgt.id == "KERNEL_MAPPINGS" and isinstance(node.value, ast.Dict)):
            continue
        for k, v in zip(node.value.keys, node.value.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            rm, n = False, None
            for d in ast.walk(v):
                if not isinstance(d, ast.Dict):
                    continue
                for dk, dv in zip(d.keys, d.values):
                    if not isinstance(dk, ast.Constant):
                        continue
                    if dk.value == "remove_flags":
                        try:
                            rm = "--cudagraph" in ast.literal_eval(dv)
                        except ValueError:
                            pass
                    elif dk.value == "num_inputs":
                        try:
                            n = int(ast.literal_eval(dv))
                        except (ValueError, TypeError):
                            pass
            out[k.value] = (rm, n)
    return out


def linattn_shapes(text: str | None) -> str:
    if not text:
        return ""
    parts = []
    for name in ("SHAPES", "VARLEN_SHAPES"):
        m = re.search(rf"^{name}\b[^=]*=\s*\[(.*?)^\]", text, re.S | re.M)
        if m:
            parts.append(re.sub(r"#.*", "", m.group(1)))
    return re.sub(r"\s+", "", "|".join(parts))


def pretuned_kernels(text: str | None) -> list[str]:
    if not text:
        return []
    m = re.search(r"^KERNELS\s*=\s*\[(.*?)^\]", text, re.S | re.M)
    return re.findall(r'^\s*"(\w+)"', m.group(1), re.M) if m else []


def pretuned_kernel_file(text: str | None) -> tuple[tuple, bool]:
    """(baseline names, use_cudagraph) of pretuned_kernels/<k>/<k>.py."""
    if not text:
        return (), False
    names = ()
    m = re.search(r"def _baselines\(.*?\n(.*?)(?=\ndef |\Z)", text, re.S)
    if m:
        names = tuple(dict.fromkeys(re.findall(r'\(\s*"(\w+)"\s*,', m.group(1))))
    cg = re.search(r"def use_cudagraph\(.*?return\s+(True|False)", text, re.S)
    return names, bool(cg and cg.group(1) == "True")
