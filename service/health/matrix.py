"""Read the workflow expectations of a nightly from the local Helion clone, and find the commit
that took a kernel out of a platform's matrix (so "removed from the matrix in <sha>" names it).

Git access goes through service.culprit.git (validated shas and paths, timeouts); a commit or
file the clone lacks means "not known", never an error: the checks then fall back to what ran.
"""

from __future__ import annotations

from pathlib import Path

from service.culprit import git
from service.errors import BenchwatchError
from service.health import workflow
from service.health.records import Expected

MAX_COMMITS = 500


def _show(repo: Path, sha: str, path: str) -> str | None:
    try:
        return git.show_file(repo, sha, path)
    except BenchwatchError:
        return None


def expected_at(repo: Path | None, full_sha: str) -> Expected | None:
    if repo is None:
        return None
    try:
        if not git.has_commit(repo, full_sha):
            return None
    except BenchwatchError:
        return None
    return workflow.expected(full_sha, _show(repo, full_sha, workflow.DISPATCH),
                            _show(repo, full_sha, workflow.NIGHTLY))


def removal_commit(repo: Path | None, since_sha: str, until_sha: str, platform: str, kernel: str) -> str | None:
    """The first commit in (since, until] on the first-parent line after which the dispatch
    defaults of ``platform`` no longer list ``kernel``."""
    if repo is None:
        return None
    try:
        git.validate_sha(since_sha)
        git.validate_sha(until_sha)
        out = git.run_git(repo, "log", "--first-parent", "--reverse", f"--max-count={MAX_COMMITS}",
                          "--format=%H", f"{since_sha}..{until_sha}", "--", workflow.DISPATCH)
    except BenchwatchError:
        return None
    for sha in out.split():
        if workflow.runs_kernel(_show(repo, sha, workflow.DISPATCH), platform, kernel) is False:
            return sha
    return None
