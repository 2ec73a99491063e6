"""Read-only access to a clone of the real Helion bundle.

Why: every world must sit on real first-parent commits of `main` and read what a nightly ran from
the files at that commit. One long-lived `git cat-file --batch` process keeps the thousands of
file reads per world fast; nothing here imports or executes Helion code.
"""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path


def clone(bundle: Path, dest: Path) -> Path:
    dest = Path(dest)
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle), str(dest)], check=True)
    return dest


class Repo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._cat = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._cache: dict[tuple[str, str], str | None] = {}
        self._touched: dict[str, tuple[str, ...]] = {}

    def close(self):
        if self._cat.poll() is None:
            self._cat.stdin.close()
            self._cat.wait()

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True,
                              capture_output=True, text=True).stdout

    def first_parent(self) -> list[dict]:
        """Oldest-first first-parent commits of main: sha, commit time (UTC), subject."""
        out = self.git("log", "--first-parent", "--format=%H%x09%ct%x09%s", "main")
        rows = []
        for line in out.splitlines():
            sha, ct, subj = line.split("\t", 2)
            rows.append(dict(sha=sha, time=datetime.fromtimestamp(int(ct), tz=timezone.utc), subject=subj))
        rows.reverse()
        return rows

    def show(self, sha: str, path: str) -> str | None:
        key = (sha, path)
        if key in self._cache:
            return self._cache[key]
        self._cat.stdin.write(f"{sha}:{path}\n".encode())
        self._cat.stdin.flush()
        header = self._cat.stdout.readline().decode().split()
        if len(header) < 3 or header[1] == "missing" or header[-1] == "missing":
            text = None
        else:
            size = int(header[2])
            data = self._cat.stdout.read(size)
            self._cat.stdout.read(1)
            text = data.decode("utf-8", "replace") if header[1] == "blob" else None
        self._cache[key] = text
        return text

    def ls(self, sha: str, folder: str) -> list[str]:
        out = self.git("ls-tree", "--name-only", f"{sha}", f"{folder.rstrip('/')}/")
        return [l for l in out.splitlines() if l]

    def blob_id(self, sha: str, path: str) -> str | None:
        r = subprocess.run(["git", "-C", str(self.path), "rev-parse", "-q", "--verify", f"{sha}:{path}"],
                           capture_output=True, text=True)
        return r.stdout.strip() or None

    def touched(self, sha: str) -> tuple[str, ...]:
        """Paths a commit changed against its first parent."""
        if sha not in self._touched:
            out = self.git("diff-tree", "--no-commit-id", "-r", "--name-only", "-m", "--first-parent", sha)
            self._touched[sha] = tuple(sorted(set(l for l in out.splitlines() if l)))
        return self._touched[sha]

    def all_touched(self) -> dict[str, tuple[str, ...]]:
        """Touched paths for every first-parent commit in one git call."""
        out = self.git("log", "--first-parent", "-m", "--name-only", "--format=@@%H", "main")
        cur = None
        acc: dict[str, list[str]] = {}
        for line in out.splitlines():
            if line.startswith("@@"):
                cur = line[2:]
                acc.setdefault(cur, [])
            elif line and cur:
                acc[cur].append(line)
        for k, v in acc.items():
            self._touched[k] = tuple(sorted(set(v)))
        return self._touched

    def all_numstat(self) -> dict:
        """sha -> {path: lines added + deleted} for every first-parent commit (one git call)."""
        out = self.git("log", "--first-parent", "-m", "--numstat", "--format=@@%H", "main")
        acc: dict = {}
        cur = None
        for line in out.splitlines():
            if line.startswith("@@"):
                cur = line[2:]
                acc.setdefault(cur, {})
            elif line and cur:
                parts = line.split("\t")
                if len(parts) == 3:
                    a, d, path = parts
                    acc[cur][path] = (int(a) if a.isdigit() else 0) + (int(d) if d.isdigit() else 0)
        return acc

    def diff_text(self, sha: str, *paths: str) -> str:
        return self.git("show", "--first-parent", "--format=", sha, "--", *paths)
