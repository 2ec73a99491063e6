"""Read-only access to the real Helion history (the shared bundle).

Why a module of its own: every fact a world holds (which sha a nightly ran, what the workflow
files said at that sha, which commit changed them) comes from git, and a world of ~150 nightlies
reads a few thousand blobs. One persistent ``git cat-file --batch`` process and a clone made
once per process keep that to about a second; nothing here writes to the bundle.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_LOCK = threading.Lock()


def git(repo: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=_ENV, check=False)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {out.stderr.decode(errors='replace')[:400]}")
    return out.stdout.decode("utf-8", errors="replace")


def bundle_path() -> Path:
    from tests.shared_data import bundle_path as bp

    return bp()


_MASTER: list[Path] = []


def master_clone() -> Path:
    """A bare clone of the bundle, made once per process (clones for worlds hard-link from it)."""
    with _LOCK:
        if _MASTER and _MASTER[0].exists():
            return _MASTER[0]
        bundle = bundle_path()
        if not bundle.exists():
            raise FileNotFoundError(f"the Helion bundle {bundle} is not on this machine")
        top = Path(tempfile.mkdtemp(prefix="bw-i-helion-"))
        atexit.register(shutil.rmtree, top, True)
        dest = top / "helion.git"
        subprocess.run(["git", "clone", "--bare", "-q", str(bundle), str(dest)], check=True,
                       env=_ENV, capture_output=True)
        _MASTER[:] = [dest]
        return dest


def world_clone(workdir: Path) -> Path:
    """A full clone (work tree on main, ``origin/main`` present) for the world's ``repo``."""
    dest = Path(workdir) / "helion"
    if (dest / ".git").exists():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "-b", "main", str(master_clone()), str(dest)], check=True,
                   env=_ENV, capture_output=True)
    git(dest, "remote", "set-url", "origin", str(bundle_path()))
    return dest


@dataclass(frozen=True)
class Commit:
    idx: int
    sha: str
    time: datetime
    subject: str
    files: tuple


@lru_cache(maxsize=2)
def first_parent(repo: str) -> tuple:
    """Every first-parent commit of main, oldest first (the history is linear: squash merges)."""
    out = git(Path(repo), "log", "--first-parent", "--reverse", "--name-only",
              "--format=%x1e%H%x1f%ct%x1f%s", "main")
    commits = []
    for block in out.split("\x1e")[1:]:
        head, _, rest = block.partition("\n")
        sha, ct, subject = head.split("\x1f", 2)
        files = tuple(f for f in rest.split("\n") if f.strip())
        commits.append(Commit(len(commits), sha, datetime.fromtimestamp(int(ct), timezone.utc),
                              subject, files))
    return tuple(commits)


class Blobs:
    """``git cat-file --batch`` behind a cache: file text at a sha (None when absent)."""

    def __init__(self, repo: Path):
        self.repo = repo
        self._proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=_ENV)
        self._cache: dict[str, str | None] = {}

    def read(self, spec: str) -> str | None:
        if spec in self._cache:
            return self._cache[spec]
        self._proc.stdin.write(spec.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode()
        if header.endswith("missing\n") or not header.strip():
            self._cache[spec] = None
            return None
        size = int(header.split()[2])
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        text = data.decode("utf-8", errors="replace")
        self._cache[spec] = text
        return text

    def at(self, sha: str, path: str) -> str | None:
        return self.read(f"{sha}:{path}")

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tree_blobs(repo: Path, sha: str, *paths: str) -> dict[str, str]:
    """path -> blob id for every file under ``paths`` at ``sha`` (one ls-tree call)."""
    out = git(repo, "ls-tree", "-r", sha, "--", *paths)
    res = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            res[path] = parts[2]
    return res


def commit_diff(repo: Path, sha: str, *paths: str) -> str:
    return git(repo, "show", "--format=", "--unified=2", sha, "--", *paths)
