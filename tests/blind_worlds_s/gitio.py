"""Git access to a clone of the real Helion bundle: first-parent history and file contents at any
commit (read through one long-lived `git cat-file --batch`)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


def clone_bundle(bundle: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle), str(dest)], check=True)
    return dest


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple
    date: datetime  # commit date, UTC
    subject: str


class Git:
    def __init__(self, repo: Path):
        self.repo = Path(repo)
        self._cat = None
        self._check = None
        self._files_cache: dict[str, list[str]] = {}

    def run(self, *args) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True,
                              text=True).stdout

    def first_parent(self) -> list[Commit]:
        """Oldest first."""
        out = self.run("log", "--first-parent", "main", "--format=%H%x09%P%x09%ct%x09%s")
        commits = []
        for line in out.splitlines():
            sha, parents, ct, subject = line.split("\t", 3)
            commits.append(Commit(sha, tuple(parents.split()), datetime.fromtimestamp(int(ct), timezone.utc),
                                  subject))
        commits.reverse()
        return commits

    def _proc(self, mode: str):
        attr = "_cat" if mode == "--batch" else "_check"
        p = getattr(self, attr)
        if p is None:
            p = subprocess.Popen(["git", "-C", str(self.repo), "cat-file", mode], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)
            setattr(self, attr, p)
        return p

    def show(self, sha: str, path: str) -> str | None:
        p = self._proc("--batch")
        p.stdin.write(f"{sha}:{path}\n".encode())
        p.stdin.flush()
        header = p.stdout.readline().decode()
        if header.endswith("missing\n") or " " not in header:
            return None
        parts = header.split()
        if len(parts) < 3 or parts[1] != "blob":
            if len(parts) >= 3:
                p.stdout.read(int(parts[2]) + 1)
            return None
        size = int(parts[2])
        data = p.stdout.read(size)
        p.stdout.read(1)
        return data.decode("utf-8", "replace")

    def oid(self, sha: str, path: str) -> str | None:
        p = self._proc("--batch-check")
        p.stdin.write(f"{sha}:{path}\n".encode())
        p.stdin.flush()
        header = p.stdout.readline().decode()
        if header.endswith("missing\n"):
            return None
        return header.split()[0]

    def ls(self, sha: str, path: str) -> list[str]:
        out = self.run("ls-tree", "-r", "--name-only", sha, "--", path)
        return out.split()

    def files(self, sha: str) -> list[str]:
        """Paths a first-parent commit touched (vs its first parent)."""
        if sha not in self._files_cache:
            out = self.run("diff-tree", "--no-commit-id", "-r", "--name-only", "-m", "--first-parent", sha)
            self._files_cache[sha] = out.split()
        return self._files_cache[sha]

    def close(self):
        for attr in ("_cat", "_check"):
            p = getattr(self, attr)
            if p is not None:
                try:
                    p.stdin.close()
                    p.wait(timeout=5)
                except Exception:
                    p.kill()
                setattr(self, attr, None)
