"""service.culprit.git against real repositories built with git fast-import."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from service.culprit import git
from service.errors import BenchwatchError
from tests.gitrepo import CommitSpec, build_repo

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)


def _specs(n: int, start: int = 0) -> list[CommitSpec]:
    return [
        CommitSpec(f"commit {i}", T0 + timedelta(hours=i), {f"helion/f{i}.py": f"x = {i}\n"})
        for i in range(start, start + n)
    ]


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "helion"
    shas = build_repo(path, [*_specs(3), CommitSpec("docs", T0 + timedelta(days=1), {"docs/a.md": "hello\n"})])
    return path, shas


@pytest.fixture
def no_subprocess(monkeypatch):
    """Fail the test if anything reaches subprocess.run."""
    calls: list = []

    def boom(*a, **k):
        calls.append(a)
        raise AssertionError(f"subprocess ran: {a}")

    monkeypatch.setattr(git.subprocess, "run", boom)
    return calls


@pytest.mark.parametrize("good", ["abcdef0", "0123456789abcdef0123456789abcdef01234567", "deadbeef"])
def test_validate_sha_accepts_7_to_40_lowercase_hex(good):
    assert git.validate_sha(good) == good


@pytest.mark.parametrize(
    "bad",
    ["abc; rm -rf /", "abcdef", "ABCDEF01", "a" * 41, "HEAD", "--help", "deadbeef\n", "", "g123456", "abcdef0^", None, 123],
)
def test_validate_sha_refuses_everything_else(bad):
    with pytest.raises(BenchwatchError) as exc:
        git.validate_sha(bad)
    assert "\n" not in str(exc.value)


def test_invalid_sha_is_refused_before_git_runs(repo, no_subprocess):
    path, _ = repo
    for call in (
        lambda: git.has_commit(path, "abc; rm -rf /"),
        lambda: git.show_file(path, "abc; rm -rf /", "README.md"),
        lambda: git.show_file(path, "--output=/tmp/x", "README.md"),
        lambda: git.is_ancestor(path, "abcdef0", "$(reboot)"),
    ):
        with pytest.raises(BenchwatchError):
            call()
    assert no_subprocess == []


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "-rf", "a/../../b", "a//b", "a:b", ""])
def test_show_file_refuses_unsafe_paths(repo, bad, no_subprocess):
    path, shas = repo
    with pytest.raises(BenchwatchError):
        git.show_file(path, shas[0], bad)
    assert no_subprocess == []


def test_run_git_returns_stdout(repo):
    path, shas = repo
    assert git.run_git(path, "rev-parse", "HEAD").strip() == shas[-1]


def test_run_git_failure_is_one_line_error_with_exit_code_1(repo):
    path, _ = repo
    with pytest.raises(BenchwatchError) as exc:
        git.run_git(path, "log", "no-such-ref-anywhere")
    assert exc.value.exit_code == 1
    assert "\n" not in exc.value.message and "git log failed" in exc.value.message


def test_repo_must_be_an_existing_git_directory(tmp_path):
    with pytest.raises(BenchwatchError, match="not a directory") as exc:
        git.run_git(tmp_path / "missing", "status")
    assert exc.value.exit_code == 1
    (tmp_path / "plain").mkdir()
    with pytest.raises(BenchwatchError, match="not a git clone"):
        git.has_commit(tmp_path / "plain", "abcdef0")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BenchwatchError):
        git.show_file(tmp_path / "file", "abcdef0", "a.py")


def test_user_config_and_git_env_are_ignored(repo, tmp_path, monkeypatch):
    path, shas = repo
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[format]\n\tpretty = "USERCONFIG %H"\n[core]\n\tpager = false\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'format.pretty'='ENVCONFIG'")
    out = git.run_git(path, "log", "-1")
    assert shas[-1] in out
    assert "USERCONFIG" not in out and "ENVCONFIG" not in out


def test_has_commit(repo):
    path, shas = repo
    assert git.has_commit(path, shas[0])
    assert git.has_commit(path, shas[1][:8])
    assert not git.has_commit(path, "0" * 40)
    tree = git.run_git(path, "rev-parse", f"{shas[0]}^{{tree}}").strip()
    assert not git.has_commit(path, tree)  # a tree is not a commit


def test_show_file(repo):
    path, shas = repo
    assert git.show_file(path, shas[1], "helion/f1.py") == "x = 1\n"
    assert git.show_file(path, shas[0], "helion/f1.py") is None  # not yet there
    assert git.show_file(path, "1" * 40, "helion/f1.py") is None  # no such commit
    assert git.list_dir(path, shas[-1], "docs") == ["docs/a.md"]
    assert git.list_dir(path, shas[0], "docs") == []


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_fetch_brings_new_commits_from_a_local_remote(tmp_path):
    upstream = tmp_path / "upstream"
    up_shas = build_repo(upstream, _specs(4))
    clone = tmp_path / "clone"
    build_repo(clone, _specs(1))
    _git("remote", "add", "origin", str(upstream), cwd=clone)
    assert not git.has_commit(clone, up_shas[-1])
    assert git.fetch(clone, "origin") is None
    assert git.has_commit(clone, up_shas[-1])


def test_fetch_without_that_remote_does_nothing(repo, monkeypatch):
    path, _ = repo
    seen: list[tuple] = []
    real = git.run_git

    def spy(repo, *args, **kw):
        seen.append(args)
        return real(repo, *args, **kw)

    monkeypatch.setattr(git, "run_git", spy)
    assert git.fetch(path, "origin") is None
    assert all(a[0] != "fetch" for a in seen)


def test_fetch_failure_is_a_warning_not_an_exception(repo, tmp_path):
    path, _ = repo
    _git("remote", "add", "origin", str(tmp_path / "gone"), cwd=path)
    warning = git.fetch(path, "origin")
    assert warning is not None and warning.startswith("git fetch origin failed")
    assert "\n" not in warning


@pytest.mark.parametrize("bad", ["-u", "origin; rm -rf /", "", "a b", "--upload-pack=touch"])
def test_fetch_refuses_bad_remote_names(repo, bad, no_subprocess):
    path, _ = repo
    with pytest.raises(BenchwatchError):
        git.fetch(path, bad)
    assert no_subprocess == []


def test_timeout_is_a_one_line_error(repo, monkeypatch):
    path, _ = repo

    def slow(*a, **k):
        raise subprocess.TimeoutExpired(cmd=a[0], timeout=k.get("timeout", 1))

    monkeypatch.setattr(git.subprocess, "run", slow)
    with pytest.raises(BenchwatchError, match="timed out") as exc:
        git.run_git(path, "log")
    assert exc.value.exit_code == 1


def test_a_missing_commit_is_remembered_until_a_fetch_brings_it(tmp_path, monkeypatch):
    """The one memory of "does the clone have this commit": a no is not asked of git again within
    minutes, and a fetch forgets it, so the commit the fetch brought is seen at once."""
    upstream = tmp_path / "upstream"
    shas = build_repo(upstream, _specs(2))
    clone = tmp_path / "clone"
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True, env=env)
    # one more commit upstream, made with plain git so the clone does not have it yet
    (upstream / "helion" / "g.py").write_text("y = 1\n")
    subprocess.run(["git", "-C", str(upstream), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(upstream), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "g"],
                   check=True, env=env)
    new = subprocess.run(["git", "-C", str(upstream), "rev-parse", "HEAD"], check=True, env=env,
                         capture_output=True, text=True).stdout.strip()
    assert git.has_commit(clone, shas[0]) and not git.has_commit(clone, new)
    asked: list = []
    real_run = git.subprocess.run
    monkeypatch.setattr(git.subprocess, "run", lambda *a, **k: asked.append(a) or real_run(*a, **k))
    assert not git.has_commit(clone, new) and asked == []  # remembered: git is not asked again
    assert git.fetch(clone, "origin") is None
    assert git.has_commit(clone, new)


def test_a_folder_is_listed_as_ls_tree_lists_it_at_real_helion_commits(helion_clone):
    """`list_dir` reads the folder's tree from the batch reader: the same entries, in the same
    order, as `git ls-tree --name-only` at the real commits (workflows folders of a year of
    history, a folder with subfolders), nothing for a folder that is not there or is a file,
    and a short sha (no batch answer: `ls-tree` itself) the same."""
    shas = git.run_git(helion_clone, "rev-list", "--first-parent", "--max-count=400", "main").split()[::40]
    assert len(shas) >= 8
    for sha in shas:
        for folder in (".github/workflows", "helion", "benchmarks"):
            want = git.run_git(helion_clone, "ls-tree", "--name-only", sha, f"{folder}/").splitlines()
            assert git.list_dir(helion_clone, sha, folder) == want and want
        assert git.list_dir(helion_clone, sha, "no/such/folder") == []
        assert git.list_dir(helion_clone, sha, "README.md") == []
    short = shas[0][:10]
    assert git.list_dir(helion_clone, short, ".github/workflows") == git.list_dir(helion_clone, shas[0],
                                                                                 ".github/workflows")


def test_a_tree_object_that_does_not_parse_is_left_to_git():
    """Two entries parse; a cut-off id or a missing name end gives None (`list_dir` then runs
    `git ls-tree` rather than return a partial list)."""
    entry = b"100644 a.yml\0" + b"\x01" * 20 + b"40000 sub dir\0" + b"\x02" * 20
    assert git._tree_names(entry, 20) == ["a.yml", "sub dir"]
    assert git._tree_names(entry[:-1], 20) is None
    assert git._tree_names(b"100644 a.yml", 20) is None
    assert git._tree_names(b"", 20) == []
