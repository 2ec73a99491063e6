"""`make test`'s last line says what was skipped and why; under CI=true a skip fails the run.

The real tests/conftest.py runs inside a throw-away pytest session (pytester) with tests that skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parent / "conftest.py").read_text()
TESTS = """
import pytest

def test_ok():
    pass

@pytest.mark.parametrize("n", [1, 2])
def test_gpu(n):
    pytest.skip("needs a GPU")

def test_browser():
    pytest.skip("needs chromium")
"""


@pytest.fixture
def suite(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_things=TESTS)
    return pytester


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_last_line_counts_skips_by_reason(suite, monkeypatch, xdist):
    monkeypatch.delenv("CI", raising=False)
    res = suite.runpytest_subprocess("-q", *xdist)
    assert res.ret == 0
    assert res.outlines[-1] == "skipped 3: 2 because needs a GPU; 1 because needs chromium"


def test_ci_fails_a_run_that_skipped_anything(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    res = suite.runpytest_subprocess("-q")
    assert res.ret == 1
    assert res.outlines[-1] == ("skipped 3: 2 because needs a GPU; 1 because needs chromium "
                                "(CI=true: a skip fails the run)")
    res = suite.runpytest_subprocess("-q", "-k", "ok")
    assert res.ret == 0 and res.outlines[-1] == "skipped: none"
