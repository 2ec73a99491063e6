"""commit_window: first-parent commits between two nightlies, read from a real repository."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from service.culprit import git
from service.culprit.window import NO_CLONE, NOT_IN_CLONE, commit_window, with_lines
from service.errors import BenchwatchError
from tests.gitrepo import CommitSpec, build_repo
from tests.shared_data import commits_jsonl

T0 = datetime(2026, 4, 2, 8, 0, tzinfo=timezone.utc)

SPECS = [
    CommitSpec("Initial", T0, {"helion/__init__.py": "", "README.md": "hi\n"}),
    CommitSpec("[cute] Support rms_norm reductions", T0 + timedelta(hours=3), {"helion/_compiler/cute/reduce.py": "a\n"}),
    CommitSpec("[Pallas] Fix VMEM spills", T0 + timedelta(hours=5), {"helion/_compiler/pallas/spill.py": "b\n"}),
    CommitSpec("Update docs", T0 + timedelta(hours=7), {"docs/index.md": "c\n"}),
    CommitSpec("[Benchmark CI] num_inputs 5 for rope", T0 + timedelta(hours=9), {"benchmarks/run.py": "d\n"}),
    CommitSpec("Remove old file", T0 + timedelta(hours=11), {"README.md": None, "helion/exc.py": "e\n"}),
    CommitSpec("[autotuner] Seed tweak", T0 + timedelta(days=1), {"helion/autotuner/base_search.py": "f\n"}),
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("win") / "helion"
    return path, build_repo(path, SPECS)


def test_window_lists_first_parent_commits_oldest_first(repo):
    path, shas = repo
    w = commit_window(path, shas[1], shas[5])
    assert w.complete and w.problem is None
    assert (w.last_good, w.first_bad) == (shas[1], shas[5])
    assert [c.full_sha for c in w.commits] == shas[2:6]
    assert [c.subject for c in w.commits] == [s.subject for s in SPECS[2:6]]
    first = w.commits[0]
    assert first.sha == shas[2][:8]
    assert first.date == SPECS[2].date and first.date.tzinfo is not None
    assert first.files == ("helion/_compiler/pallas/spill.py",)
    assert set(w.commits[-1].files) == {"README.md", "helion/exc.py"}  # deletions count as touched


def test_no_clone_is_evidence_not_a_crash():
    w = commit_window(None, "a" * 40, "b" * 40)
    assert not w.complete and w.problem == NO_CLONE and w.commits == ()


def test_sha_missing_from_the_clone(repo):
    path, shas = repo
    w = commit_window(path, shas[1], "f" * 40)
    assert not w.complete and w.problem == NOT_IN_CLONE and w.commits == ()
    w = commit_window(path, "e" * 40, shas[3])
    assert w.problem == NOT_IN_CLONE


def test_same_sha_both_ends_is_an_empty_complete_window(repo):
    path, shas = repo
    w = commit_window(path, shas[3], shas[3])
    assert w.complete and w.commits == ()


def test_invalid_sha_is_refused_before_any_git_call(repo, monkeypatch):
    path, shas = repo

    def boom(*a, **k):
        raise AssertionError("git ran")

    monkeypatch.setattr(git.subprocess, "run", boom)
    with pytest.raises(BenchwatchError):
        commit_window(path, "abc; rm -rf /", shas[3])
    with pytest.raises(BenchwatchError):
        commit_window(path, shas[1], "$(id)")


def test_window_is_capped_keeping_the_newest(repo):
    path, shas = repo
    w = commit_window(path, shas[0], shas[6], max_commits=3)
    assert not w.complete and "more than 3" in (w.problem or "")
    assert [c.full_sha for c in w.commits] == shas[4:7]
    assert commit_window(path, shas[0], shas[6], max_commits=6).complete


def test_reversed_ends_are_flagged(repo):
    path, shas = repo
    w = commit_window(path, shas[5], shas[2])
    assert not w.complete and "not an ancestor" in (w.problem or "")
    assert w.commits == ()


def test_broken_repo_path_gives_a_problem_not_an_exception(tmp_path):
    (tmp_path / "plain").mkdir()
    w = commit_window(tmp_path / "plain", "a" * 40, "b" * 40)
    assert not w.complete and "not a git clone" in (w.problem or "")


def _git(path: Path, *args: str, date: datetime | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "d@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "d@example.com"}
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date.isoformat()
    return subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True, text=True).stdout.strip()


def test_side_branch_commits_of_a_merge_are_not_in_the_window(tmp_path):
    """A merged PR branch shows up once, as the merge commit on main (first parent)."""
    path = tmp_path / "helion"
    shas = build_repo(path, SPECS[:3])
    base_tree = _git(path, "rev-parse", f"{shas[1]}^{{tree}}")
    side = _git(path, "commit-tree", base_tree, "-p", shas[1], "-m", "wip on a branch", date=T0 + timedelta(hours=4))
    main_tree = _git(path, "rev-parse", f"{shas[2]}^{{tree}}")
    merge = _git(path, "commit-tree", main_tree, "-p", shas[2], "-p", side, "-m", "Merge PR #1",
                 date=T0 + timedelta(hours=6))
    w = commit_window(path, shas[1], merge)
    assert w.complete
    assert [c.subject for c in w.commits] == ["[Pallas] Fix VMEM spills", "Merge PR #1"]
    assert "wip on a branch" not in {c.subject for c in w.commits}


COMMITS = commits_jsonl()


@pytest.mark.skipif(not COMMITS.exists(), reason=f"{COMMITS} is not on this machine")
def test_window_over_a_replay_of_real_helion_history(tmp_path):
    """300 real first-parent commits (subjects, dates, touched paths) replayed into a repo."""
    import json

    with COMMITS.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(1500), fh)][-300:]
    specs = [
        CommitSpec(r["subject"], datetime.fromisoformat(r["commit_date"]),
                   {f: f"{r['sha']}\n" for f in r["files"]})
        for r in rows
    ]
    path = tmp_path / "helion"
    shas = build_repo(path, specs)
    w = commit_window(path, shas[100], shas[160])
    assert w.complete
    assert [c.subject for c in w.commits] == [r["subject"].strip() for r in rows[101:161]]  # git strips
    assert [set(c.files) for c in w.commits] == [set(r["files"]) for r in rows[101:161]]
    assert [c.date for c in w.commits] == [
        datetime.fromisoformat(r["commit_date"]).astimezone(timezone.utc) for r in rows[101:161]
    ]


def test_window_counts_lines_per_file_through_renames_and_binaries(tmp_path):
    """`git log --numstat`, asked for only where a ranking needs it (`with_lines`): lines added +
    deleted per touched file; a renamed file is named by its new path (the one a person opens), a
    binary file has no line count."""
    path = tmp_path / "helion"
    body = "".join(f"line {i}\n" for i in range(40))
    shas = build_repo(path, [
        CommitSpec("Initial", T0, {"helion/_compiler/old_name.py": body, "README.md": "hi\n"}),
        CommitSpec("Grow it", T0 + timedelta(hours=1),
                   {"helion/_compiler/old_name.py": body + "extra 1\nextra 2\n", "README.md": "hello\n"}),
    ])
    _git(path, "mv", "helion/_compiler/old_name.py", "helion/_compiler/new_name.py")
    (path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x01")
    _git(path, "add", "logo.png")
    _git(path, "commit", "-q", "-m", "Rename and add a logo", date=T0 + timedelta(hours=2))
    head = _git(path, "rev-parse", "HEAD")
    named = commit_window(path, shas[0], head)  # read with file names only: counts are asked for
    assert [c.lines for c in named.commits] == [(), ()]
    w = with_lines(path, named, {c.full_sha for c in named.commits})
    assert [c.files for c in w.commits] == [c.files for c in named.commits]  # the same names both ways
    grow, rename = w.commits
    assert dict(zip(grow.files, grow.lines)) == {"helion/_compiler/old_name.py": 2, "README.md": 2}
    assert grow.lines_in(["helion/_compiler/old_name.py"]) == 2
    assert dict(zip(rename.files, rename.lines)) == {"helion/_compiler/new_name.py": 0, "logo.png": None}
    assert rename.lines_in(rename.files) == 0


@pytest.mark.parametrize("line, expected", [
    ("3\t1\thelion/a.py", ("helion/a.py", 4)),
    ("-\t-\tdocs/logo.png", ("docs/logo.png", None)),
    ("0\t0\thelion/{old => new}/x.py", ("helion/new/x.py", 0)),
    ("5\t2\thelion/{ => sub}/y.py", ("helion/sub/y.py", 7)),
    ("1\t1\told.py => new.py", ("new.py", 2)),
    ("garbage", None),
])
def test_numstat_lines_are_parsed_or_skipped(line, expected):
    from service.culprit.window import _numstat

    assert _numstat(line) == expected


def test_window_records_which_files_each_commit_created(tmp_path):
    """A commit's new files are told from the ones it changed (``--name-status``): a commit that
    only adds an example kernel ran nothing an existing kernel runs. A deleted file is touched
    but not new; a renamed one is touched under its new name and is not new either; line counts
    read later keep the record."""
    specs = [
        CommitSpec("Initial", T0, {"helion/__init__.py": "", "examples/gemm.py": "g\n" * 20}),
        CommitSpec("Add softmax example", T0 + timedelta(hours=1),
                   {"examples/softmax.py": "s\n", "test/test_examples.py": "t\n"}),
        CommitSpec("Tune gemm, drop init", T0 + timedelta(hours=2), {"examples/gemm.py": "g\n" * 19 + "h\n",
                                                                     "helion/__init__.py": None}),
        CommitSpec("Rename gemm example", T0 + timedelta(hours=3),
                   {"examples/gemm.py": None, "examples/matmul.py": "g\n" * 19 + "h\n"}),
    ]
    path = tmp_path / "helion"
    shas = build_repo(path, specs)
    head = shas[-1]
    w = commit_window(path, shas[0], head)
    added, tuned, renamed = w.commits
    assert set(added.files) == {"examples/softmax.py", "test/test_examples.py"}
    assert set(added.new_files) == {"examples/softmax.py", "test/test_examples.py"}
    assert set(tuned.files) == {"examples/gemm.py", "helion/__init__.py"} and tuned.new_files == ()
    assert renamed.files == ("examples/matmul.py",) and renamed.new_files == ()
    counted = with_lines(path, w, [added.full_sha]).commits[0]
    assert counted.lines and set(counted.new_files) == set(added.new_files)


def test_line_counts_asked_under_folders_count_only_those_files(tmp_path):
    """A ranking reads only the lines of Helion code (`with_lines(..., paths)`): a commit's other
    files count 0 (their diff is not asked), its file list stays whole, a commit that touched no
    such folder counts 0, and a prefix that is not a folder (``helion`` is also ``helion_x.py``)
    counts everything rather than miss a file. A path with pathspec magic is read literally."""
    path = tmp_path / "helion"
    shas = build_repo(path, [
        CommitSpec("Initial", T0, {"helion/a.py": "a\n", "test/t.expected": "x\n", ":(glob)odd/b.py": "b\n"}),
        CommitSpec("Both", T0 + timedelta(hours=1),
                   {"helion/a.py": "a\nb\nc\n", "test/t.expected": "x\n" * 50, ":(glob)odd/b.py": "b\nb\n"}),
        CommitSpec("Tests only", T0 + timedelta(hours=2), {"test/t.expected": "y\n" * 50}),
    ])
    w = commit_window(path, shas[0], shas[-1])
    both, tests_only = w.commits
    counted = with_lines(path, w, {both.full_sha, tests_only.full_sha}, ("helion/", ":(glob)odd/"))
    c_both, c_tests = counted.commits
    assert c_both.files == both.files and c_tests.files == tests_only.files
    assert dict(zip(c_both.files, c_both.lines)) == {"helion/a.py": 2, "test/t.expected": None,
                                                     ":(glob)odd/b.py": 1}
    assert c_tests.lines == (None,) and c_tests.lines_in(c_tests.files) == 0
    every = with_lines(path, w, {both.full_sha}, ("helion",)).commits[0]
    assert dict(zip(every.files, every.lines))["test/t.expected"] == 49
