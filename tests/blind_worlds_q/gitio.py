"""Git access for world Q: a clone of the Helion bundle, its first-parent history and a blob reader.

Everything the world knows about Helion is read from this clone (never imported or executed,
except the two dashboard builders, which `docs.py` loads from the clone at build time)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tests.shared_data import bundle_path


@dataclass(frozen=True)
class Commit:
    sha: str
    when: datetime  # committer date (what `git rev-list --before` compares)
    subject: str
    files: tuple


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def clone(dest: Path) -> Path:
    """A fresh clone of the bundle with `main` checked out."""
    if (dest / ".git").is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(bundle_path()), str(dest)], check=True,
                   capture_output=True)
    git(dest, "checkout", "-q", "-B", "main", "origin/main")
    return dest


def first_parent(repo: Path) -> list[Commit]:
    """Oldest first: every first-parent commit of main with its touched paths."""
    out = git(repo, "log", "--first-parent", "--name-only", "--format=%x01%H%x00%ct%x00%s", "main")
    commits = []
    for chunk in out.split("\x01")[1:]:
        head, _, rest = chunk.partition("\n")
        sha, ct, subject = head.split("\x00", 2)
        files = tuple(f for f in rest.split("\n") if f.strip())
        commits.append(Commit(sha, datetime.fromtimestamp(int(ct), tz=timezone.utc), subject, files))
    commits.reverse()
    return commits


class Blobs:
    """Files of the commits a world reads: one `git ls-tree` per commit for the paths that matter,
    contents through one long-lived `git cat-file --batch`, cached by object id."""

    PREFIXES = (".github", "benchmarks", "pretuned_kernels")

    def __init__(self, repo: Path):
        self.repo = repo
        self._p = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
        self._by_oid: dict[str, str] = {}
        self._maps: dict[str, dict] = {}

    def paths(self, sha: str) -> dict[str, str]:
        """{path: blob id} of every file under the watched prefixes at ``sha``."""
        m = self._maps.get(sha)
        if m is None:
            out = git(self.repo, "ls-tree", "-r", sha, "--", *self.PREFIXES)
            m = {}
            for line in out.splitlines():
                meta, _, path = line.partition("\t")
                parts = meta.split()
                if len(parts) == 3 and parts[1] == "blob":
                    m[path] = parts[2]
            self._maps[sha] = m
        return m

    def oid(self, sha: str, path: str) -> str | None:
        return self.paths(sha).get(path)

    def read_oid(self, oid: str) -> str:
        if oid not in self._by_oid:
            self._p.stdin.write(oid.encode() + b"\n")
            self._p.stdin.flush()
            header = self._p.stdout.readline().decode().split()
            size = int(header[2])
            data = self._p.stdout.read(size)
            self._p.stdout.read(1)
            self._by_oid[oid] = data.decode("utf-8", "replace")
        return self._by_oid[oid]

    def read(self, sha: str, path: str) -> str | None:
        oid = self.oid(sha, path)
        return self.read_oid(oid) if oid else None

    def tree(self, sha: str, prefix: str) -> dict[str, str]:
        return {p: o for p, o in self.paths(sha).items() if p.startswith(prefix)}

    def close(self):
        if self._p.poll() is None:
            self._p.stdin.close()
            self._p.wait(timeout=10)
