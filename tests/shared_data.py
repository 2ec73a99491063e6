"""Where the shared data folder is (the Helion bundle, the commit list, TCPD): one rule for every test.

``BENCHWATCH_SHARED_DIR`` if set; else ``shared/`` beside this checkout (the workspace layout);
else ``shared/`` beside the checkout this one was cloned from, so a fresh ``git clone . /tmp/x``
still finds the data its tests need instead of skipping them.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _origin_checkout() -> Path | None:
    """The local folder this checkout was cloned from, when its origin is one."""
    try:
        url = subprocess.run(["git", "-C", str(ROOT), "config", "--get", "remote.origin.url"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if url.startswith("file://"):
        url = url[len("file://"):]
    path = Path(url)
    return path.resolve() if url and path.is_absolute() and path.is_dir() else None


@lru_cache(maxsize=1)
def shared_dir() -> Path:
    env = os.environ.get("BENCHWATCH_SHARED_DIR")
    if env:
        return Path(env)
    beside = ROOT.parent / "shared"
    if beside.is_dir():
        return beside
    origin = _origin_checkout()
    if origin is not None and (origin.parent / "shared").is_dir():
        return origin.parent / "shared"
    return beside


def bundle_path() -> Path:
    return shared_dir() / "datasets" / "helion-repo" / "helion-main.bundle"


def commits_jsonl() -> Path:
    return shared_dir() / "datasets" / "helion-commits" / "commits.jsonl"
