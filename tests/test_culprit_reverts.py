"""find_revert: which commit of a move's window a later commit undid, and what it changed."""

from __future__ import annotations

from datetime import datetime, timezone

from service.culprit.reverts import find_revert
from service.culprit.rules import load_rules
from service.records import CommitInfo

WHEN = datetime(2026, 7, 1, tzinfo=timezone.utc)


def _c(n: int, subject: str, *files: str) -> CommitInfo:
    sha = f"{n:040x}"
    return CommitInfo(sha[:8], sha, subject, WHEN, tuple(files))


WINDOW = (
    _c(1, "[pallas] use torch.accelerator.synchronize() (#3013)", "helion/runtime/pallas/sync.py"),
    _c(2, "[Benchmarking] Disable cudagraph for layer_norm-bwd (#2402)", "benchmarks/run.py"),
    _c(3, "CI: pin B200 jobs to mt-l-x86iamx-22-225-b200 runner (#3050)", ".github/workflows/benchmark_dispatch.yml"),
    _c(4, "Update docs (#3051)", "docs/index.md"),
)


def test_a_revert_named_by_subject_and_what_it_undid():
    rules = load_rules()
    got = find_revert(WINDOW, [_c(9, 'Revert "CI: pin B200 jobs to mt-l-x86iamx-22-225-b200 runner" (#3064)',
                                  ".github/workflows/benchmark_dispatch.yml")], rules)
    assert got is not None and got.reverted.sha == WINDOW[2].sha and got.kind == "runner"


def test_a_revert_in_other_words_is_found_by_the_files_both_change():
    rules = load_rules()
    later = [_c(8, "Fix flaky test (#3020)", "test/test_x.py"),
             _c(9, "[Pallas] Finish reverting TPU-specific device sync (#3026)", "helion/runtime/pallas/sync.py",
                "test/test_pallas.py")]
    got = find_revert(WINDOW, later, rules)
    assert got is not None and got.revert.sha == later[1].sha and got.reverted.sha == WINDOW[0].sha
    assert got.kind == "code"


def test_no_revert_or_one_of_a_commit_outside_the_window_is_none():
    rules = load_rules()
    assert find_revert(WINDOW, [_c(9, "[pallas] faster sync (#3030)", "helion/runtime/pallas/sync.py")], rules) is None
    assert find_revert(WINDOW, [_c(9, 'Revert "[cute] one-shot role schedulers" (#3336)',
                                   "helion/_compiler/cute/x.py")], rules) is None
    # a revert touching only tests shares no file that runs with the window
    assert find_revert(WINDOW, [_c(9, "Revert flaky test change (#3031)", "test/test_x.py")], rules) is None
