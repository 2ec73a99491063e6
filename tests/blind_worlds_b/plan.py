"""Night planning on real Helion shas (first-parent history of the bundle)."""
from __future__ import annotations

import random
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.blind_worlds.world import Night

BUNDLE = Path("/work/shared/datasets/helion-repo/helion-main.bundle")


def clone(dest: Path) -> Path:
    if not (dest / ".git").exists():
        subprocess.run(["git", "clone", "-q", "-b", "main", str(BUNDLE), str(dest)], check=True)
    return dest


def first_parent(repo: Path):
    out = subprocess.run(["git", "-C", str(repo), "log", "--first-parent", "--reverse",
                          "--format=%H %cI"], check=True, capture_output=True, text=True).stdout
    res = []
    for line in out.splitlines():
        sha, d = line.split()
        res.append((sha, datetime.fromisoformat(d).astimezone(timezone.utc)))
    return res


def plan_nights(seed: int, repo: Path, nights: int | None = None):
    rng = random.Random(seed)
    commits = first_parent(repo)
    last = commits[-1][1]
    end = datetime(2026, rng.randint(3, 8), rng.randint(1, 28), 8, 0, tzinfo=timezone.utc)
    end = min(end, last.replace(hour=8, minute=0) + timedelta(days=1))
    n = nights or rng.randint(90, 160)
    start = end - timedelta(days=n - 1)
    skipped = set(rng.sample(range(1, n - 1), 2)) if n > 4 else set()
    out = []
    j = 0
    for k in range(n):
        if k in skipped:
            continue
        t = start + timedelta(days=k, minutes=rng.randint(0, 9), seconds=rng.randint(0, 59))
        while j + 1 < len(commits) and commits[j + 1][1] <= t:
            j += 1
        sha = commits[j][0]
        out.append(Night(run_id=str(20_000_000_000 + seed * 1_000_000 + k), full_sha=sha,
                         sha=sha[:7], date=t))
    return out


def build_world(seed: int, workdir, nights: int | None = None):
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = clone(workdir / "helion")
    plan_nights(seed, repo, nights)
    raise NotImplementedError("blind_worlds_b: simulation/documents/labels not implemented yet")
