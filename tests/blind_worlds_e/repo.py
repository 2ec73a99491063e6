"""Git access to the real Helion clone: commits, nightly shas, file contents at a sha."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

from tests.shared_data import bundle_path, commits_jsonl

BUNDLE = bundle_path()  # the shared data folder, found by one rule (tests/shared_data.py)
COMMITS = commits_jsonl()
HEAD = "ef091f416a50c443b38e4c8bff2980777f5ff225"


def clone(workdir: Path) -> Path:
    dest = Path(workdir) / "helion"
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(BUNDLE), str(dest)], check=True)
    return dest


def _parse_date(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s).astimezone(dt.timezone.utc)


class Repo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.commits = []  # oldest first, first-parent
        with open(COMMITS) as f:
            for line in f:
                c = json.loads(line)
                c["cdate"] = _parse_date(c["commit_date"])
                self.commits.append(c)
        self.by_sha = {c["sha"]: c for c in self.commits}
        self.index = {c["sha"]: i for i, c in enumerate(self.commits)}
        self._blob_cache: dict[str, str | None] = {}
        self._tree_cache: dict[str, dict[str, str]] = {}
        self._cat = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.path,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def close(self):
        try:
            self._cat.stdin.close()
            self._cat.wait(timeout=5)
        except Exception:
            pass

    def head_at(self, when: dt.datetime) -> str:
        """Last first-parent commit with commit time before `when`."""
        best = None
        for c in self.commits:
            if c["cdate"] < when:
                best = c["sha"]
            else:
                break
        return best

    def between(self, a: str, b: str) -> list[dict]:
        """First-parent commits in (a, b], oldest first."""
        return self.commits[self.index[a] + 1: self.index[b] + 1]

    def _read(self, obj: str) -> str | None:
        if obj in self._blob_cache:
            return self._blob_cache[obj]
        self._cat.stdin.write((obj + "\n").encode())
        self._cat.stdin.flush()
        header = self._cat.stdout.readline().decode().split()
        if len(header) < 2 or header[1] == "missing":
            self._blob_cache[obj] = None
            return None
        size = int(header[2])
        data = self._cat.stdout.read(size)
        self._cat.stdout.read(1)
        text = data.decode("utf-8", "replace")
        self._blob_cache[obj] = text
        return text

    def tree(self, sha: str) -> dict[str, str]:
        """path -> blob id for the paths this generator reads."""
        if sha in self._tree_cache:
            return self._tree_cache[sha]
        out = subprocess.run(
            ["git", "ls-tree", "-r", sha, "--", ".github/workflows", "benchmarks/run.py",
             "benchmarks/run_linattn.py", "benchmarks/run_tpu.py", "pretuned_kernels",
             "helion/_compat.py"],
            cwd=self.path, capture_output=True, text=True, check=True).stdout
        t = {}
        for line in out.splitlines():
            meta, path = line.split("\t", 1)
            t[path] = meta.split()[2]
        self._tree_cache[sha] = t
        return t

    def show(self, sha: str, path: str) -> str | None:
        blob = self.tree(sha).get(path)
        return self._read(blob) if blob else None

    def blob(self, sha: str, path: str) -> str | None:
        return self.tree(sha).get(path)
