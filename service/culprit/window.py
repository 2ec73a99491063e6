"""The commits a move could blame: ``git log --first-parent last_good..first_bad`` in the clone.

A window that cannot be read is evidence, not a crash: it comes back ``complete=False`` with a
``problem`` a person can act on (configure a clone, fetch it), and the classifier says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from service.culprit import git
from service.errors import BenchwatchError
from service.records import CommitInfo, CommitWindow

NO_CLONE = "no local Helion clone configured (helion.repo)"
NOT_IN_CLONE = "window not in the local clone; fetch it"

_REC = "\x1e"  # record separator: starts each commit's header line
_FLD = "\x1f"  # field separator inside the header


def _numstat_path(path: str) -> str:
    """The path a numstat line names after a rename: ``a/{old => new}/f`` or ``old => new``."""
    if " => " not in path:
        return path
    if "{" in path and "}" in path:
        head, _, rest = path.partition("{")
        inner, _, tail = rest.partition("}")
        new = inner.split(" => ", 1)[1]
        return (head + new + tail).replace("//", "/")
    return path.split(" => ", 1)[1]


def _numstat(line: str) -> tuple[str, int | None] | None:
    """``added<TAB>deleted<TAB>path`` -> (path, added + deleted); binary files (``-``) give None."""
    parts = line.split("\t", 2)
    if len(parts) != 3 or not parts[2].strip():
        return None
    added, deleted, path = parts
    n = int(added) + int(deleted) if added.isdigit() and deleted.isdigit() else None
    return _numstat_path(path.strip()), n


def _name_status(line: str) -> tuple[str, bool] | None:
    """``A<TAB>path``, ``M<TAB>path``, ``R100<TAB>old<TAB>new`` -> (path, the commit created it)."""
    parts = line.strip().split("\t")
    if len(parts) < 2 or not parts[0][:1].isalpha() or not parts[-1]:
        return None
    return parts[-1], parts[0].startswith("A")


def _parse_log(text: str) -> tuple[list[CommitInfo], str | None]:
    """Parse ``--format=%x1e%H%x1f%P%x1f%cI%x1f%s`` with ``--numstat`` (lines known) or
    ``--name-status`` (lines unknown; which files the commit created) output, newest first; and
    the first parent of the oldest commit (where the first-parent line the window walked came
    from)."""
    out: list[CommitInfo] = []
    came_from = None
    for chunk in text.split(_REC):
        if not chunk.strip():
            continue
        header, _, rest = chunk.partition("\n")
        parts = header.split(_FLD)
        if len(parts) != 4:
            continue
        full, parents, date_s, subject = parts
        came_from = (parents.split() or [None])[0]
        try:
            full = git.validate_sha(full.strip())
            date = datetime.fromisoformat(date_s.strip()).astimezone(timezone.utc)
        except (BenchwatchError, ValueError):
            continue
        lines = [line for line in rest.splitlines() if line.strip()]
        if lines and all(line[:1].isalpha() for line in lines):  # --name-status: a file a line
            named = [ns for line in lines if (ns := _name_status(line))]
            out.append(CommitInfo(sha=full[:8], full_sha=full, subject=subject.strip(), date=date,
                                  files=tuple(f for f, _ in named),
                                  new_files=tuple(f for f, new in named if new)))
            continue
        stats = [st for line in lines if (st := _numstat(line))]
        out.append(CommitInfo(sha=full[:8], full_sha=full, subject=subject.strip(), date=date,
                              files=tuple(f for f, _ in stats), lines=tuple(n for _, n in stats)))
    return out, came_from


_WINDOWS: dict[tuple[str, str, str, int], CommitWindow] = {}  # windows read from history never change


def commit_window(
    repo: Path | None, last_good_full: str, first_bad_full: str, max_commits: int = 500
) -> CommitWindow:
    """First-parent commits in (last_good, first_bad] (see `_commit_window`).

    The one cache of windows in the process. A window read from the clone's history (complete,
    over the cap, or between commits that are not ancestors) never changes, so it is kept: each
    nightly pass re-examines the same few hundred windows. One that could not be read (no clone,
    a commit missing, git failing) is asked again; that is cheap, since `git.has_commit`
    remembers missing commits until the next fetch.
    """
    key = (str(repo), last_good_full, first_bad_full, max_commits)
    hit = _WINDOWS.get(key)
    if hit is not None:
        return hit
    found, from_history = _commit_window(repo, last_good_full, first_bad_full, max_commits)
    if from_history and repo is not None and len(last_good_full) == len(first_bad_full) == 40:
        if len(_WINDOWS) > 4096:
            _WINDOWS.clear()
        _WINDOWS[key] = found
    return found


def _commit_window(
    repo: Path | None, last_good_full: str, first_bad_full: str, max_commits: int = 500
) -> tuple[CommitWindow, bool]:
    """First-parent commits in (last_good, first_bad], oldest first, at most ``max_commits``.

    Over the cap the newest ``max_commits`` are kept (the window is marked incomplete): the
    commits closest to the first bad nightly are the ones a person checks first. The flag says
    whether the answer was read from history (and so never changes).
    """
    lg, fb = git.validate_sha(last_good_full), git.validate_sha(first_bad_full)
    if max_commits <= 0:
        raise BenchwatchError("helion.max_window_commits must be positive")
    if repo is None:
        return CommitWindow(lg, fb, (), complete=False, problem=NO_CLONE), False
    if lg == fb:
        return CommitWindow(lg, fb, (), complete=True), True
    try:
        if not (git.has_commit(repo, lg) and git.has_commit(repo, fb)):
            return CommitWindow(lg, fb, (), complete=False, problem=NOT_IN_CLONE), False
        text = git.run_git(
            repo, "log", "--first-parent", f"--max-count={max_commits + 1}",
            f"--format={_REC}%H{_FLD}%P{_FLD}%cI{_FLD}%s", "--name-status", f"{lg}..{fb}", "--",
        )
        commits, came_from = _parse_log(text)
        # the walk from first bad reached last good: an ancestor, no second git process to ask
        ancestor = (came_from is not None and came_from.startswith(lg)) or git.is_ancestor(repo, lg, fb)
    except BenchwatchError as exc:
        return CommitWindow(lg, fb, (), complete=False, problem=exc.message), False
    problem = None
    if len(commits) > max_commits:
        commits = commits[:max_commits]
        problem = f"window has more than {max_commits} commits; showing the newest {max_commits}"
    elif not ancestor:
        problem = f"last good {lg[:8]} is not an ancestor of first bad {fb[:8]} in the clone"
    return CommitWindow(lg, fb, tuple(reversed(commits)), complete=problem is None, problem=problem), True


_LINES: dict[tuple[str, str, tuple[str, ...]], dict[str, int | None]] = {}  # (repo, sha, paths) -> lines a file


def with_lines(repo: Path | None, window: CommitWindow, shas: Iterable[str],
               paths: tuple[str, ...] = ()) -> CommitWindow:
    """``window`` with the lines changed per file filled in for the commits ``shas`` (one
    ``git log --no-walk --numstat`` for those not read before). A window is read with file names
    only: the line counts (a diff of every file, ~3 ms a commit, most of a cold pass's git time)
    only order commits of equal evidence, so `rank` asks for them where there is a tie.
    ``paths``: count only files under these folders (the caller reads no other counts; the
    tests' expected outputs are most of the diff otherwise); the others count 0. Prefixes that
    are not folders (``helion`` would also mean ``helion_x.py``) count every file. A commit git
    cannot count keeps no counts (ordered as before: by date)."""
    wanted = set(shas)
    if repo is None or not wanted:
        return window
    if not all(p.endswith("/") for p in paths):
        paths = ()
    key = str(repo)
    todo = [c.full_sha for c in window.commits if c.full_sha in wanted and (key, c.full_sha, paths) not in _LINES]
    if todo:
        try:
            text: str | None = git.run_git(repo, "log", "--no-walk=unsorted", "--diff-merges=first-parent",
                                           f"--format={_REC}%H{_FLD}%P{_FLD}%cI{_FLD}%s", "--numstat",
                                           *(git.validate_sha(s) for s in todo), "--",
                                           *(f":(literal){p}" for p in paths))
        except BenchwatchError:
            text = None
        if len(_LINES) > 50_000:
            _LINES.clear()
        if text is not None and paths:  # a commit that touched none of ``paths`` is not listed: 0 of their lines
            _LINES.update({(key, s, paths): {} for s in todo})
        for c in _parse_log(text or "")[0]:
            _LINES[(key, c.full_sha, paths)] = dict(zip(c.files, c.lines))
    commits = tuple(
        dataclasses.replace(c, lines=tuple(got.get(f) for f in c.files))
        if c.full_sha in wanted and (got := _LINES.get((key, c.full_sha, paths))) is not None else c
        for c in window.commits
    )
    return dataclasses.replace(window, commits=commits)
