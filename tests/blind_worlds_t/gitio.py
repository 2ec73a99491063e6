"""Git access for set T: a local clone of the Helion bundle, its first-parent history and file
contents at any commit (read as text; nothing from the repository is executed here)."""
from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tests.shared_data import bundle_path


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          input=input).stdout


def clone_bundle(dest: Path) -> Path:
    """Clone the bundle to ``dest`` with branch ``main`` checked out (tracking origin/main)."""
    dest = Path(dest)
    if (dest / ".git").is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(bundle_path()), str(dest)], check=True,
                   capture_output=True, text=True)
    git(dest, "checkout", "-q", "-B", "main", "origin/main")
    return dest


@dataclass(frozen=True)
class Commit:
    sha: str
    date: datetime  # committer date, UTC
    subject: str
    files: tuple


class History:
    """First-parent history of main (oldest first) with touched files per commit."""

    def __init__(self, repo: Path):
        self.repo = repo
        out = git(repo, "log", "--first-parent", "--reverse", "-m", "--name-only",
                  "--format=%x00%H%x09%ct%x09%s", "main")
        commits = []
        for block in out.split("\x00")[1:]:
            head, _, rest = block.partition("\n")
            sha, ct, subject = head.split("\t", 2)
            files = tuple(f for f in rest.split("\n") if f.strip())
            commits.append(Commit(sha, datetime.fromtimestamp(int(ct), tz=timezone.utc), subject, files))
        self.commits = commits
        self.pos = {c.sha: i for i, c in enumerate(commits)}

    def head_at(self, when: datetime) -> int:
        """Index of HEAD of main at ``when``: the newest first-parent commit (walking from the tip)
        whose committer date is not after ``when`` (what `git rev-list -1 --first-parent --before`
        answers)."""
        for i in range(len(self.commits) - 1, -1, -1):
            if self.commits[i].date <= when:
                return i
        raise ValueError(f"no commit before {when}")

    def between(self, lo_sha: str, hi_sha: str) -> list[Commit]:
        """Commits in lo..hi (first parent), oldest first."""
        a, b = self.pos[lo_sha], self.pos[hi_sha]
        return self.commits[a + 1:b + 1]


class Blobs:
    """Reads files at a commit through `git ls-tree` (object ids) and `git cat-file --batch`,
    caching texts by object id so unchanged files are read once."""

    def __init__(self, repo: Path):
        self.repo = repo
        self.proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.texts: dict[str, str] = {}
        self.trees: dict[str, dict[str, str]] = {}
        self.lock = threading.Lock()

    def tree(self, sha: str) -> dict[str, str]:
        if sha not in self.trees:
            out = git(self.repo, "ls-tree", "-r", "--full-tree", sha)
            t = {}
            for line in out.split("\n"):
                if not line:
                    continue
                meta, _, path = line.partition("\t")
                parts = meta.split()
                if len(parts) == 3 and parts[1] == "blob":
                    t[path] = parts[2]
            self.trees[sha] = t
        return self.trees[sha]

    def oid(self, sha: str, path: str) -> str | None:
        return self.tree(sha).get(path)

    def read_oid(self, oid: str) -> str:
        if oid not in self.texts:
            with self.lock:
                self.proc.stdin.write(f"{oid}\n".encode())
                self.proc.stdin.flush()
                header = self.proc.stdout.readline().decode().split()
                size = int(header[2])
                data = self.proc.stdout.read(size)
                self.proc.stdout.read(1)
            self.texts[oid] = data.decode("utf-8", errors="replace")
        return self.texts[oid]

    def read(self, sha: str, path: str) -> str | None:
        oid = self.oid(sha, path)
        return None if oid is None else self.read_oid(oid)

    def ls(self, sha: str, prefix: str) -> list[str]:
        return [p for p in self.tree(sha) if p.startswith(prefix)]

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
