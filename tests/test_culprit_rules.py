"""config/slices.toml: the shipped rules load, and a bad file is a one-line error naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.culprit.rules import default_rules_path, load_rules
from service.errors import BenchwatchError

PLATFORMS = ("h100", "b200", "b200_cute", "mi350x", "tpu")  # what the real dashboard shows


def test_shipped_rules_cover_every_dashboard_platform():
    rules = load_rules()
    assert default_rules_path().name == "slices.toml"
    assert set(PLATFORMS) <= set(rules.platforms)
    for name in PLATFORMS:
        pr = rules.platform(name)
        assert pr.tags and pr.paths and pr.hints, name
        assert all(t == t.lower() for t in pr.tags), name
    assert "helion/_compiler/cute/" in rules.platform("b200_cute").paths
    assert "helion/_compiler/pallas/" in rules.platform("tpu").paths
    assert {"sm100"} <= set(rules.platform("b200").hints) and "gfx950" in rules.platform("mi350x").hints
    assert any(p.startswith("benchmarks/") for p in rules.harness.paths)
    assert ".github/workflows/" in rules.runner.paths
    assert "rms_norm" in rules.families["reductions"].kernels
    assert 0 < rules.weights.change_threshold < 1
    assert rules.platform("unknown_gpu").tags == ()


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "slices.toml"
    p.write_text(text)
    return p


MINIMAL = '[platforms.h100]\ntags = ["triton"]\npaths = ["helion/_compiler/triton/"]\nhints = ["h100"]\n'


def test_minimal_file_uses_default_weights(tmp_path):
    rules = load_rules(_write(tmp_path, MINIMAL))
    assert rules.weights.tag == pytest.approx(0.35)
    assert rules.platform("h100").tags == ("triton",)


@pytest.mark.parametrize(
    "text, key",
    [
        (MINIMAL + '[weights]\ntag = "high"\n', "weights.tag"),
        (MINIMAL + "[weights]\ntag = 3.0\n", "weights.tag"),
        (MINIMAL + "[harness]\nbogus = 1\n", "harness.bogus"),
        ('[platforms.h100]\ntags = "triton"\n', "platforms.h100.tags"),
        ("[weights]\ntag = 0.1\n", "platforms"),
        ('[platforms."B200!"]\ntags = []\n', "platforms"),
        (MINIMAL + 'toolchain_files = ["../etc/passwd"]\n', "platforms.h100.toolchain_files"),
        (MINIMAL + 'toolchain_files = ["-p HEAD"]\n', "platforms.h100.toolchain_files"),
    ],
)
def test_bad_values_name_the_key(tmp_path, text, key):
    with pytest.raises(BenchwatchError) as exc:
        load_rules(_write(tmp_path, text))
    assert key in exc.value.message and "\n" not in exc.value.message


def test_unreadable_files(tmp_path):
    with pytest.raises(BenchwatchError, match="not valid TOML"):
        load_rules(_write(tmp_path, "[platforms.h100\n"))
    with pytest.raises(BenchwatchError, match="does not exist"):
        load_rules(tmp_path / "nope.toml")


def test_edited_file_is_reread(tmp_path):
    p = _write(tmp_path, MINIMAL)
    assert load_rules(p).platform("h100").tags == ("triton",)
    import os

    p.write_text(MINIMAL.replace('["triton"]', '["triton", "hopper"]'))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert load_rules(p).platform("h100").tags == ("triton", "hopper")


def test_a_suite_name_that_cannot_be_a_group_part_is_refused():
    from pydantic import ValidationError

    from service.culprit.rules import SliceRules

    with pytest.raises(ValidationError, match="suite names"):
        SliceRules(platforms={"h100": {}}, suites={"a very long suite label": {}})
