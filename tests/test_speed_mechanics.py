"""The mechanical speedups give the answers the slow paths gave: the batch file reader against
`git show`."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from service.culprit import git
from tests.gitrepo import CommitSpec, build_repo

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "helion"
    shas = build_repo(path, [
        CommitSpec("one", T0, {"helion/a.py": "x = 1\n", "benchmarks/run.py": "K = {}\n"}),
        CommitSpec("two", T0 + timedelta(hours=1), {"helion/a.py": "x = 2\n\u00e9\n", "docs/b.md": "b\n"}),
    ])
    return path, shas


def _git_show(path: Path, sha: str, file: str) -> str | None:
    proc = git._run(path, ("show", f"{sha}:{file}"), 60)
    return None if proc.returncode else proc.stdout.decode("utf-8", "replace")


def test_batch_reader_answers_as_git_show(repo):
    path, shas = repo
    asks = [(s, f) for s in shas for f in ("helion/a.py", "benchmarks/run.py", "docs/b.md", "docs", "nope.py")]
    asks.append(("1" * 40, "helion/a.py"))
    got = [git.show_file(path, s, f) for s, f in asks]
    assert got == [_git_show(path, s, f) for s, f in asks]
    assert got[0] == "x = 1\n" and got[5] == "x = 2\n\u00e9\n" and got[4] is None
    assert got[8] is not None and "b.md" in got[8]  # a folder: what `git show` prints (asked of git show)
    git.close_readers(path)


def test_a_dead_reader_is_replaced_and_a_fetch_closes_it(repo):
    path, shas = repo
    assert git.show_file(path, shas[0], "helion/a.py") == "x = 1\n"
    reader = git._BATCH[str(path)]
    reader.proc.kill()
    reader.proc.wait()
    assert git.show_file(path, shas[1], "helion/a.py") == "x = 2\n\u00e9\n"  # a new reader (or git show)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", str(path)], check=True, capture_output=True)
    assert git.fetch(path, "origin") is None
    assert str(path) not in git._BATCH  # a reader started before a fetch may not see its packs
    assert git.show_file(path, shas[0], "helion/a.py") == "x = 1\n"
    git.close_readers(path)


def test_every_command_runs_with_the_young_generation_collected_less_often(tmp_path):
    """The CLI's start-up sets the collector's young threshold (what the detect pass's speed
    rests on); the older generations keep theirs."""
    import gc

    from typer.testing import CliRunner

    from service.cli.context import GC_YOUNG_THRESHOLD
    from service.cli.main import app

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, before[1], before[2])
        res = CliRunner().invoke(app, ["status"], env={"BENCHWATCH_DATABASE_URL": f"sqlite:///{tmp_path / 'bw.db'}"})
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, before[1], before[2]), res.output
    finally:
        gc.set_threshold(*before)


def test_a_present_commit_and_a_first_parent_window_cost_one_git_process(repo, monkeypatch):
    """`has_commit` asks the batch reader (a commit present needs no process; anything else is
    still asked of git), and a window whose first-parent walk reaches its last good nightly
    knows it is an ancestor without a second process. The answers are the slow paths'."""
    from service.culprit import window

    path, shas = repo
    spawned: list[tuple[str, ...]] = []
    real_run = git._run

    def counting(repo_, args, timeout):
        spawned.append(args)
        return real_run(repo_, args, timeout)

    monkeypatch.setattr(git, "_run", counting)
    git._KNOWN_COMMITS.clear()
    git.forget_missing(path)
    assert git.has_commit(path, shas[0]) and git.has_commit(path, shas[1][:8])
    assert spawned == []
    assert not git.has_commit(path, "1" * 40) and not git.has_commit(path, "2" * 40)
    assert [a[0] for a in spawned] == ["cat-file", "cat-file"]  # a missing one is asked of git too
    spawned.clear()
    w = window._commit_window(path, shas[0], shas[1])[0]
    assert w.complete and [c.full_sha for c in w.commits] == [shas[1]]
    assert [a[0] for a in spawned] == ["log"]
    assert git.is_ancestor(path, shas[0], shas[1])
    spawned.clear()
    back = window._commit_window(path, shas[1], shas[0])[0]  # reversed: not an ancestor, git says so
    assert not back.complete and "not an ancestor" in back.problem and [a[0] for a in spawned] == ["log", "merge-base"]
    git.close_readers(path)


def test_a_whole_windows_ranking_is_kept_across_passes_while_the_rules_are_the_same(repo, monkeypatch):
    """The next night's pass (a new `Stages`) reuses the ranking and change commits of a window
    read whole; a new rules object (slices.toml edited) and a window not read whole rank again."""
    from service.config import load_settings
    from service.culprit import rank
    from service.pipeline import detect_pass
    from service.records import Move, RunRef, SeriesKey

    path, shas = repo
    calls: list[str] = []
    real_rank, real_change = rank.rank_commits, rank.find_change_commit
    monkeypatch.setattr(rank, "rank_commits", lambda *a, **k: calls.append("rank") or real_rank(*a, **k))
    monkeypatch.setattr(rank, "find_change_commit", lambda *a, **k: calls.append("change") or real_change(*a, **k))
    monkeypatch.setattr(detect_pass, "_RANKINGS", {})
    when = datetime(2026, 3, 1, tzinfo=timezone.utc)

    def move(lg: str, fb: str) -> Move:
        return Move(SeriesKey("dashboard", "h100", "softmax", "helion_speedup_geomean"),
                    RunRef("1", lg[:8], lg, when, 1.0), RunRef("2", fb[:8], fb, when, 0.8), 1.0, 0.8, -20.0,
                    "regression", 20.0, "confirmed", 5, 0.01)

    whole = move(shas[0], shas[1])
    first = detect_pass.Stages(load_settings(), path)
    answer = (first.ranked(whole, ("softmax",)), first.change_commits(whole))
    assert answer[0][0].full_sha == shas[1] and calls == ["rank", "change", "change"]
    second = detect_pass.Stages(load_settings(), path)  # the next nightly's pass
    assert (second.ranked(whole, ("softmax",)), second.change_commits(whole)) == answer
    assert calls == ["rank", "change", "change"]
    edited = detect_pass.Stages(load_settings(), path)
    edited.rules = edited.rules.model_copy()
    edited.ranked(whole, ("softmax",))
    assert calls[-1] == "rank" and len(calls) == 4
    missing = move("1" * 40, shas[1])  # not in the clone: not read whole, ranked again next pass
    for _ in range(2):
        detect_pass.Stages(load_settings(), path).ranked(missing, ("softmax",))
    assert calls[-2:] == ["rank", "rank"]
    git.close_readers(path)
