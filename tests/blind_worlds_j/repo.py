"""Read-only access to a clone of the real Helion repository (the shared bundle)."""
from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.shared_data import bundle_path


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple
    date: datetime  # committer date (aware)
    subject: str
    files: tuple


_BASE: list = []


def _base_clone() -> Path:
    """One clone of the bundle per process (removed at exit); worlds clone it locally (hard links)."""
    if not _BASE:
        root = Path(tempfile.mkdtemp(prefix="bwj-base-"))
        atexit.register(shutil.rmtree, root, True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(root / "helion")], check=True)
        _BASE.append(root / "helion")
    return _BASE[0]


def clone_repo(dest_root: Path | None = None) -> Path:
    """A fresh clone of the bundle's main for one world (never touches the bundle)."""
    root = Path(tempfile.mkdtemp(prefix="bwj-helion-", dir=str(dest_root) if dest_root else None))
    dest = root / "helion"
    subprocess.run(["git", "clone", "-q", "--local", "-b", "main", str(_base_clone()), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "remote", "remove", "origin"], check=True)
    return dest


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def first_parent(repo: Path) -> list[Commit]:
    """Oldest-first first-parent history of HEAD with the files each commit touched."""
    out = git(repo, "log", "--first-parent", "--name-only", "--no-renames",
              "--format=%x00%H%x09%P%x09%cI%x09%s", "HEAD")
    commits = []
    for chunk in out.split("\x00")[1:]:
        lines = chunk.strip("\n").split("\n")
        sha, parents, date, subject = lines[0].split("\t", 3)
        files = tuple(l for l in lines[1:] if l.strip())
        commits.append(Commit(sha, tuple(parents.split()), datetime.fromisoformat(date), subject, files))
    commits.reverse()
    return commits


class Blobs:
    """`git cat-file --batch` reader: text of path at sha (None if absent), cached by object id."""

    def __init__(self, repo: Path):
        self.repo = repo
        self.proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.cache: dict[str, tuple[str | None, str | None]] = {}
        self.trees: dict[str, dict[str, str]] = {}

    def get(self, sha: str, path: str) -> tuple[str | None, str | None]:
        """(object id, text) of path at sha; (None, None) when missing."""
        key = f"{sha}:{path}"
        if key in self.cache:
            return self.cache[key]
        self.proc.stdin.write((key + "\n").encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().decode().split()
        if len(header) < 3 or header[1] == "missing":
            res = (None, None)
        else:
            size = int(header[2])
            data = self.proc.stdout.read(size)
            self.proc.stdout.read(1)
            res = (header[0], data.decode("utf-8", "replace"))
        self.cache[key] = res
        return res

    def text(self, sha: str, path: str) -> str | None:
        return self.get(sha, path)[1]

    def ls(self, sha: str, prefix: str) -> dict[str, str]:
        """path -> blob id for every file under prefix at sha."""
        key = f"{sha}:{prefix}"
        if key not in self.trees:
            out = git(self.repo, "ls-tree", "-r", sha, "--", prefix)
            d = {}
            for line in out.splitlines():
                meta, path = line.split("\t", 1)
                d[path] = meta.split()[2]
            self.trees[key] = d
        return self.trees[key]

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
