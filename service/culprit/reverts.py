"""Which commit of a move's window a commit of the nights that followed reverted.

Why: a step that comes back a few nightlies later is a machine that recovered, or a change that
was undone. A revert among the commits of the excursion names the change, and with it the
cause: a reverted code commit was a real regression, a reverted harness edit a method change,
a reverted runner, image or pin change the machine's. Pure: commits in, a finding out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from service.culprit.rank import change_score, classify_file
from service.culprit.rules import SliceRules
from service.records import CommitInfo, Revert

_REVERT_WORD = re.compile(r"\brevert(?:s|ed|ing)?\b", re.IGNORECASE)
_QUOTED = re.compile(r"\brevert(?:s|ed)?\s+[\"'](.+)[\"']", re.IGNORECASE)
_PR = re.compile(r"\s*\(#\d+\)\s*$")


def _norm(subject: str) -> str:
    return _PR.sub("", subject).strip().lower()


def find_revert(window: Sequence[CommitInfo], later: Sequence[CommitInfo], rules: SliceRules) -> Revert | None:
    """The first commit of ``later`` that reverts one of ``window``: by subject (`Revert "<its
    subject>"`), or, for a subject that only says it reverts, by the files both change (docs and
    tests aside). A revert of a commit outside the window is not this move's."""
    for r in later:
        if not _REVERT_WORD.search(r.subject):
            continue
        quoted = _QUOTED.search(r.subject)
        if quoted:
            target = _norm(quoted.group(1))
            hit = next((c for c in window if _norm(c.subject) == target), None)
        else:
            mine = {f for f in r.files if classify_file(f, rules) not in ("docs", "tests")}
            overlap = [(len(mine & set(c.files)), i) for i, c in enumerate(window) if mine & set(c.files)]
            hit = window[max(overlap)[1]] if overlap else None
        if hit is None:
            continue
        kind = _what_it_changed(hit, rules)
        if kind is not None:
            return Revert(r, hit, kind)
    return None


def _what_it_changed(c: CommitInfo, rules: SliceRules) -> str | None:
    """code, harness or runner. A benchmark workflow holds both the command and the machine
    (benchmark_dispatch.yml: runner labels beside the kernel lists): there the commit's words
    decide, as they do for a change commit (`rank.change_score`)."""
    kinds = {classify_file(f, rules) for f in c.files}
    if "code" in kinds:
        return "code"
    if not kinds & {"harness", "runner"}:
        return None
    runner, harness = change_score(c, "runner", rules)[0], change_score(c, "harness", rules)[0]
    return "runner" if runner > harness else "harness"
