"""Build real small git repositories for tests, in one `git fast-import` call.

Why fast-import: a world with hundreds of commits must build in about a second, and every
culprit test must run `git` against a real repository rather than a mock.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence


@dataclass(frozen=True)
class CommitSpec:
    subject: str
    date: datetime  # tz-aware; naive is taken as UTC
    files: dict[str, str | None] = field(default_factory=dict)  # path -> content; None deletes
    author: str = "Helion Dev <dev@example.com>"


def _stamp(dt: datetime) -> str:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return f"{int(dt.timestamp())} +0000"


def _data(text: str) -> bytes:
    raw = text.encode("utf-8")
    return b"data %d\n" % len(raw) + raw + b"\n"


def build_repo(path: Path, commits: Sequence[CommitSpec], branch: str = "main") -> list[str]:
    """Create a repository at ``path`` whose first-parent history is ``commits``; return full shas."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True, env=env)
    stream = bytearray()
    for i, c in enumerate(commits, start=1):
        stream += f"commit refs/heads/{branch}\nmark :{i}\n".encode()
        who = f"{c.author} {_stamp(c.date)}\n".encode()
        stream += b"author " + who + b"committer " + who
        stream += _data(c.subject)
        if i > 1:
            stream += f"from :{i - 1}\n".encode()
        for p, content in sorted(c.files.items()):
            if content is None:
                stream += f"D {p}\n".encode()
            else:
                stream += f"M 100644 inline {p}\n".encode() + _data(content)
        stream += b"\n"
    stream += b"done\n"
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"], input=bytes(stream), cwd=path, check=True, env=env
    )
    subprocess.run(["git", "checkout", "-q", "-f", branch], cwd=path, check=True, env=env)
    out = subprocess.run(
        ["git", "rev-list", "--reverse", "--first-parent", branch],
        cwd=path, check=True, capture_output=True, text=True, env=env,
    ).stdout.split()
    return out
