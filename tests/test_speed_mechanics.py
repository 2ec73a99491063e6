"""The mechanical speedups give the answers the slow paths gave: the batch file reader against
`git show`, the pooled detector's medians against `np.nanmedian`, ruptures imported without SciPy."""

from __future__ import annotations

import subprocess
import sys
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

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


def test_row_nanmedian_is_np_nanmedian_bit_for_bit():
    from service.detect.pooled import _row_nanmedian

    rng = np.random.default_rng(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all-NaN rows warn in np.nanmedian
        for trial in range(2000):
            w, m = int(rng.integers(1, 12)), int(rng.integers(1, 50))
            v = rng.normal(size=m) * 10 ** rng.uniform(-3, 3)
            if trial % 3 == 0:
                v = np.round(v, 1)  # ties, and zeros of both signs
            if trial % 5 == 0:
                v[rng.random(m) < 0.2] = np.nan
            if trial % 7 == 0:
                v[rng.random(m) < 0.3] = rng.choice([0.0, -0.0, np.inf, -np.inf])
            a = sliding_window_view(np.concatenate((np.full(w, np.nan), v, np.full(w, np.nan))), w)
            ref, got = np.nanmedian(a, axis=1), _row_nanmedian(a)
            same = (ref.view(np.int64) == got.view(np.int64)) | (np.isnan(ref) & np.isnan(got))
            assert same.all(), (trial, w, m)


def test_ruptures_loads_without_scipy_and_leaves_no_stand_in():
    code = (
        "import sys\n"
        "import service.detect.core as c\n"
        "assert not any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules), sorted(sys.modules)\n"
        "import numpy as np, ruptures\n"
        "y = np.r_[np.zeros(30), np.ones(30)]\n"
        "assert ruptures.Pelt(model='rbf').fit(y).predict(pen=3) == [30, 60]\n"  # a SciPy-backed cost works
        "import scipy.spatial.distance as d\n"
        "assert d.__file__ and hasattr(d, 'cdist')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)
