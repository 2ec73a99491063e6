"""Read-only access to a clone of the real Helion bundle (git plumbing only, no Helion code runs)."""
from __future__ import annotations

import subprocess
import threading
from datetime import datetime, timezone
from pathlib import Path

from tests.shared_data import bundle_path


def clone(dest: Path) -> Path:
    dest = Path(dest)
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(dest)], check=True)
    return dest


class Repo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._cat = None
        self._lock = threading.Lock()
        out = self.git("log", "--first-parent", "--format=%H %ct %P%x09%s", "main")
        self.fp: list[str] = []  # oldest first
        self.ct: dict[str, int] = {}
        self.subject: dict[str, str] = {}
        for line in reversed(out.splitlines()):
            head, _, subj = line.partition("\t")
            parts = head.split()
            self.fp.append(parts[0])
            self.ct[parts[0]] = int(parts[1])
            self.subject[parts[0]] = subj
        self.pos = {s: i for i, s in enumerate(self.fp)}
        self._files: dict[str, list[str]] = {}
        self._tree: dict[str, dict[str, str]] = {}
        self._blob: dict[str, str] = {}

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                              text=True).stdout

    # ---- history
    def head_at(self, when: datetime) -> str:
        """HEAD of main at `when` (the first first-parent commit whose committer date is not later)."""
        t = when.timestamp()
        lo, hi = 0, len(self.fp)
        while lo < hi:  # committer dates are monotonic along the first-parent chain
            mid = (lo + hi) // 2
            if self.ct[self.fp[mid]] <= t:
                lo = mid + 1
            else:
                hi = mid
        return self.fp[lo - 1]

    def between(self, lo: str, hi: str) -> list[str]:
        """First-parent commits in lo..hi, oldest first."""
        return self.fp[self.pos[lo] + 1: self.pos[hi] + 1]

    def files(self, sha: str) -> list[str]:
        if sha not in self._files:
            out = self.git("diff-tree", "--no-commit-id", "-r", "--name-only", "-m", "--first-parent", sha)
            self._files[sha] = out.split()
        return self._files[sha]

    def date(self, sha: str) -> datetime:
        return datetime.fromtimestamp(self.ct[sha], tz=timezone.utc)

    # ---- contents
    def tree(self, sha: str, prefixes=(".github/workflows", "benchmarks", "pretuned_kernels", "examples/linear",
                                        ".github/ci_commit_pins")) -> dict[str, str]:
        if sha not in self._tree:
            out = self.git("ls-tree", "-r", sha, "--", *prefixes)
            t = {}
            for line in out.splitlines():
                meta, _, path = line.partition("\t")
                t[path] = meta.split()[2]
            self._tree[sha] = t
        return self._tree[sha]

    def blob(self, oid: str) -> str:
        if oid in self._blob:
            return self._blob[oid]
        with self._lock:
            if self._cat is None:
                self._cat = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._cat.stdin.write((oid + "\n").encode())
            self._cat.stdin.flush()
            header = self._cat.stdout.readline().decode().split()
            size = int(header[2])
            data = self._cat.stdout.read(size)
            self._cat.stdout.read(1)
        text = data.decode("utf-8", "replace")
        self._blob[oid] = text
        return text

    def read(self, sha: str, path: str) -> str | None:
        oid = self.tree(sha).get(path)
        return None if oid is None else self.blob(oid)

    def close(self):
        if self._cat is not None:
            try:
                self._cat.stdin.close()
                self._cat.wait(timeout=5)
            except Exception:
                self._cat.kill()
            self._cat = None
