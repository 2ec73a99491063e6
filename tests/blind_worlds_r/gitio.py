"""Small git helpers for the R worlds: a clone of the Helion bundle, the first-parent chain of
`main`, and fast reads of file contents at any commit (one `git cat-file --batch` process)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=check, capture_output=True,
                          text=True).stdout


def clone_bundle(bundle: Path, dest: Path) -> Path:
    """A fresh clone of the bundle at ``dest`` with a local ``main`` checked out."""
    if (dest / ".git").is_dir():
        head = git(dest, "rev-parse", "--abbrev-ref", "HEAD", check=False).strip()
        if head == "main":
            return dest
        subprocess.run(["rm", "-rf", str(dest)], check=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(bundle), str(dest)], check=True,
                   capture_output=True)
    git(dest, "checkout", "-q", "-B", "main", "origin/main")
    return dest


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple
    ct: int  # committer timestamp (what `git rev-list --before` compares)
    subject: str

    @property
    def date(self) -> datetime:
        return datetime.fromtimestamp(self.ct, tz=timezone.utc)


def first_parent_chain(repo: Path) -> list[Commit]:
    """Oldest first."""
    out = git(repo, "log", "--first-parent", "--format=%H%x1f%P%x1f%ct%x1f%s", "main")
    chain = []
    for line in out.splitlines():
        sha, parents, ct, subject = line.split("\x1f", 3)
        chain.append(Commit(sha, tuple(parents.split()), int(ct), subject))
    chain.reverse()
    return chain


def touched_files(repo: Path, shas: list[str]) -> dict[str, list[str]]:
    """Paths each first-parent commit touched (against its first parent)."""
    if not shas:
        return {}
    out = subprocess.run(["git", "-C", str(repo), "diff-tree", "--stdin", "-r", "-m", "--first-parent",
                          "--name-only"], input="\n".join(shas) + "\n", capture_output=True, text=True,
                         check=True).stdout
    res: dict[str, list[str]] = {s: [] for s in shas}
    cur = None
    for line in out.splitlines():
        if len(line) == 40 and all(c in "0123456789abcdef" for c in line):
            cur = line
            continue
        if cur is not None and line:
            res.setdefault(cur, []).append(line)
    return res


class Blobs:
    """Reads `<rev>:<path>` contents through one long-lived `git cat-file --batch`."""

    def __init__(self, repo: Path):
        self.repo = repo
        self.p = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        self._cache: dict[str, bytes | None] = {}
        self._ids: dict[str, str | None] = {}

    def _query(self, spec: str) -> tuple[str | None, bytes | None]:
        self.p.stdin.write(spec.encode() + b"\n")
        self.p.stdin.flush()
        header = self.p.stdout.readline().decode().strip()
        if header.endswith("missing") or not header:
            return None, None
        oid, kind, size = header.split()
        data = self.p.stdout.read(int(size))
        self.p.stdout.read(1)
        return oid, data if kind == "blob" else None

    def oid(self, sha: str, path: str) -> str | None:
        key = f"{sha}:{path}"
        if key not in self._ids:
            oid, data = self._query(key)
            self._ids[key] = oid
            if oid is not None and oid not in self._cache:
                self._cache[oid] = data
        return self._ids[key]

    def text(self, sha: str, path: str) -> str | None:
        oid = self.oid(sha, path)
        if oid is None:
            return None
        data = self._cache.get(oid)
        return None if data is None else data.decode("utf-8", "replace")

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            self.p.wait(timeout=10)


def ls_tree(repo: Path, sha: str, path: str) -> list[str]:
    return [l for l in git(repo, "ls-tree", "-r", "--name-only", sha, "--", path).splitlines() if l]
