"""The real Helion history: one clone of the bundle per workdir, its first-parent commits, and
fast reads of any file at any commit.

Why it exists: every other module asks "what did file X say at sha Y" hundreds of times per
world (once per nightly for a dozen files). A persistent `git cat-file --batch` answers that in
microseconds, and parsed results are cached by blob id so an unchanged file is parsed once.
The clone itself is what `World.repo` hands to benchwatch: a real clone with `.git`.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests.shared_data import bundle_path


@dataclass(frozen=True)
class Commit:
    sha: str
    when: dt.datetime  # commit date (the moment it landed on main), tz-aware UTC
    subject: str
    files: tuple = field(default=())


def _git(repo: str | Path, *args: str, text: bool = True) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=text).stdout


def ensure_clone(workdir: str | Path) -> Path:
    """A clone of the bundle's `main` inside workdir (made once, reused after)."""
    workdir = Path(workdir)
    dest = workdir / "helion"
    head_file = dest / ".git" / "HEAD"
    if head_file.exists():
        try:
            _git(dest, "rev-parse", "--verify", "main")
            return dest
        except subprocess.CalledProcessError:
            shutil.rmtree(dest, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    tmp = workdir / f"helion.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(tmp)], check=True,
                   capture_output=True)
    _git(tmp, "config", "core.autocrlf", "false")
    try:
        tmp.rename(dest)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


class Repo:
    """Read-only view of the clone: first-parent commits and file contents at a sha."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._proc = None
        self._blob_cache: dict[str, bytes | None] = {}
        self._oid_cache: dict[tuple[str, str], str | None] = {}
        self.commits = self._load_commits()
        self.by_sha = {c.sha: i for i, c in enumerate(self.commits)}

    # ---- history -------------------------------------------------------------------------
    def _load_commits(self) -> list[Commit]:
        out = _git(self.path, "log", "--first-parent", "--reverse", "--name-only",
                   "--format=%x01%H%x00%cI%x00%s", "main")
        commits = []
        for block in out.split("\x01")[1:]:
            head, _, rest = block.partition("\n")
            sha, when, subject = head.split("\x00", 2)
            files = tuple(sorted(f for f in rest.split("\n") if f.strip()))
            t = dt.datetime.fromisoformat(when).astimezone(dt.timezone.utc)
            commits.append(Commit(sha, t, subject, files))
        return commits

    def sha_at(self, when: dt.datetime) -> str:
        """The commit on main at `when` (the newest first-parent commit that landed by then)."""
        lo, hi = 0, len(self.commits)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.commits[mid].when <= when:
                lo = mid + 1
            else:
                hi = mid
        return self.commits[max(lo - 1, 0)].sha

    def between(self, old: str, new: str) -> list[Commit]:
        """Commits in old..new (first-parent), oldest first."""
        a, b = self.by_sha[old], self.by_sha[new]
        return self.commits[a + 1:b + 1]

    def commit(self, sha: str) -> Commit:
        return self.commits[self.by_sha[sha]]

    # ---- file contents -------------------------------------------------------------------
    def _batch(self):
        if self._proc is None:
            self._proc = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._proc

    def _ask(self, spec: str) -> tuple[str | None, bytes | None]:
        p = self._batch()
        p.stdin.write(spec.encode() + b"\n")
        p.stdin.flush()
        header = p.stdout.readline().decode().rstrip("\n")
        if header.endswith("missing") or " " not in header:
            return None, None
        oid, typ, size = header.split(" ")
        data = p.stdout.read(int(size))
        p.stdout.read(1)
        return oid, (data if typ == "blob" else None)

    def oid(self, sha: str, path: str) -> str | None:
        key = (sha, path)
        if key not in self._oid_cache:
            with self._lock:
                oid, data = self._ask(f"{sha}:{path}")
            self._oid_cache[key] = oid
            if oid is not None and oid not in self._blob_cache:
                self._blob_cache[oid] = data
        return self._oid_cache[key]

    def read(self, sha: str, path: str) -> str | None:
        oid = self.oid(sha, path)
        if oid is None:
            return None
        data = self._blob_cache.get(oid)
        return None if data is None else data.decode("utf-8", "replace")

    def ls(self, sha: str, folder: str) -> list[str]:
        """File paths under folder at sha (recursive), sorted; cached by the folder's tree id."""
        tree = self.oid(sha, folder)
        if tree is None:
            return []
        key = ("ls", tree)
        if key not in self._oid_cache:
            out = _git(self.path, "ls-tree", "-r", "--name-only", sha, "--", folder)
            self._oid_cache[key] = tuple(sorted(x for x in out.split("\n") if x))
        return list(self._oid_cache[key])

    def diff_files(self, sha: str) -> tuple:
        return self.commit(sha).files

    def close(self):
        if self._proc is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except Exception:
                self._proc.kill()
            self._proc = None


_REPOS: dict[str, Repo] = {}


def open_repo(workdir: str | Path) -> Repo:
    path = ensure_clone(workdir)
    key = str(path.resolve())
    if key not in _REPOS:
        _REPOS[key] = Repo(path)
    return _REPOS[key]
