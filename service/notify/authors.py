"""Who wrote a commit, read from the local Helion clone when a page or message names it.

The triage stores a culprit's sha and subject, not its author; the clone knows. A person pings
the author, so the group page and Slack show the name. No clone, or a sha it lacks: None (the
page says nothing rather than guessing). Answers are remembered: a commit's author never changes.
"""

from __future__ import annotations

import functools
from pathlib import Path


@functools.lru_cache(maxsize=1024)
def author_of(repo: str, full_sha: str) -> str | None:
    if not repo or not full_sha:
        return None
    from service.culprit.git import run_git, validate_sha
    from service.errors import BenchwatchError

    try:
        validate_sha(full_sha)
        name = run_git(Path(repo), "log", "-1", "--format=%an", full_sha, "--").strip()
    except (BenchwatchError, OSError):
        return None
    return name[:255] or None
