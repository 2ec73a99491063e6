"""The real Helion repository, read through git (never imported, never executed).

A world's nightlies sit on real first-parent commits of the bundle's ``main``, and everything a
nightly runs is read from the real files at that commit. This module clones the bundle once per
work directory and answers the few questions the rest of the package asks of it: the
first-parent history with dates and touched paths, a file's text at a commit, which blob a path
has at a commit (so parsed facts can be cached per blob), and which commits in a window touched
some paths.
"""
from __future__ import annotations

import bisect
import subprocess
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

BUNDLE = Path("/work/shared/datasets/helion-repo/helion-main.bundle")


@dataclass(frozen=True)
class Commit:
    sha: str
    date: datetime  # commit date (when it landed on main), UTC
    subject: str
    files: tuple


def _git(repo: Path, *args: str, text: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True, text=text)
    return out.stdout


def clone(workdir: Path) -> Path:
    """A clone of the bundle's ``main`` under ``workdir`` (made once, reused after)."""
    dest = Path(workdir) / "helion"
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name("helion.partial")
        if tmp.exists():
            subprocess.run(["rm", "-rf", str(tmp)], check=True)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(BUNDLE), str(tmp)], check=True)
        tmp.rename(dest)
    return dest


class Repo:
    """Read-only questions about one clone. File reads go through one long-lived
    ``git cat-file --batch`` process (thousands of reads per world)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._cat = None
        self._check = None
        self._blobs: dict = {}
        self._texts: dict = {}
        self._trees: dict = {}
        self.commits = self._first_parent()
        self._times = [c.date.timestamp() for c in self.commits]
        self._index = {c.sha: i for i, c in enumerate(self.commits)}

    # -- history ---------------------------------------------------------------------------
    def _first_parent(self) -> list[Commit]:
        """Oldest-first first-parent history of main, with the paths each commit touched
        (against its first parent, so merge commits list their whole change)."""
        raw = _git(self.path, "log", "--first-parent", "-m", "--format=%x00%H%x09%ct%x09%s",
                   "--name-only", "main")
        out = []
        for block in raw.split("\x00")[1:]:
            head, _, rest = block.partition("\n")
            sha, ct, subject = head.split("\t", 2)
            files = tuple(sorted({f for f in rest.split("\n") if f.strip()}))
            out.append(Commit(sha, datetime.fromtimestamp(int(ct), timezone.utc), subject, files))
        out.reverse()
        return out

    def at(self, when: datetime) -> Commit:
        """The last main commit that landed at or before ``when``."""
        i = bisect.bisect_right(self._times, when.timestamp()) - 1
        if i < 0:
            raise ValueError(f"no main commit before {when}")
        return self.commits[i]

    def index(self, sha: str) -> int:
        return self._index[sha]

    def between(self, old: str, new: str) -> list[Commit]:
        """First-parent commits in (old, new], oldest first: the window a nightly step sits in."""
        return self.commits[self._index[old] + 1:self._index[new] + 1]

    def touching(self, old: str, new: str, prefixes: tuple) -> list[Commit]:
        """Commits in (old, new] that touched a path under one of ``prefixes``."""
        return [c for c in self.between(old, new)
                if any(f.startswith(p) for f in c.files for p in prefixes)]

    # -- file contents ---------------------------------------------------------------------
    def _batch(self):
        if self._cat is None:
            self._cat = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.path,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._cat

    def _object(self, spec: str) -> tuple[str, bytes] | None:
        with self._lock:
            p = self._batch()
            p.stdin.write(spec.encode() + b"\n")
            p.stdin.flush()
            header = p.stdout.readline().decode().split()
            if len(header) < 3 or header[1] == "missing":
                return None
            size = int(header[2])
            data = p.stdout.read(size)
            p.stdout.read(1)
            return header[0], data

    def blob_id(self, sha: str, path: str) -> str | None:
        """The blob a path has at a commit (None when absent): the cache key for parsed facts."""
        key = (sha, path)
        if key not in self._blobs:
            with self._lock:
                if self._check is None:
                    self._check = subprocess.Popen(["git", "cat-file", "--batch-check"],
                                                   cwd=self.path, stdin=subprocess.PIPE,
                                                   stdout=subprocess.PIPE)
                self._check.stdin.write(f"{sha}:{path}\n".encode())
                self._check.stdin.flush()
                header = self._check.stdout.readline().decode().split()
            self._blobs[key] = header[0] if len(header) == 3 and header[1] == "blob" else None
        return self._blobs[key]

    def text(self, sha: str, path: str) -> str | None:
        blob = self.blob_id(sha, path)
        return None if blob is None else self.blob_text(blob)

    def blob_text(self, blob: str) -> str:
        if blob not in self._texts:
            obj = self._object(blob)
            self._texts[blob] = "" if obj is None else obj[1].decode("utf-8", "replace")
        return self._texts[blob]

    def tree(self, sha: str, prefix: str) -> dict:
        """{path: blob} of every file under ``prefix`` at a commit (one ``ls-tree`` per call)."""
        key = (sha, prefix)
        if key not in self._trees:
            out = _git(self.path, "ls-tree", "-r", sha, "--", prefix)
            files = {}
            for line in out.split("\n"):
                if line:
                    meta, _, path = line.partition("\t")
                    files[path] = meta.split()[2]
            self._trees[key] = files
        return self._trees[key]

    def close(self):
        for name in ("_cat", "_check"):
            proc = getattr(self, name)
            if proc is not None:
                proc.stdin.close()
                proc.wait()
                setattr(self, name, None)
