"""Culprit ranking and harness/runner change commits, on real Helion subjects and paths.

The history is shared/datasets/helion-commits/commits.jsonl (2,270 first-parent commits
of pytorch/helion main); tests read it in place and pick real commits by sha prefix or tag.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from service.culprit.rank import find_change_commit, rank_commits, subject_tags
from service.culprit.rules import load_rules
from service.records import CommitInfo, CommitWindow
from tests.shared_data import commits_jsonl

COMMITS = commits_jsonl()
PLATFORMS = ("h100", "b200", "b200_cute", "mi350x", "tpu")

pytestmark = pytest.mark.skipif(not COMMITS.exists(), reason=f"{COMMITS} is not on this machine")


def _info(row: dict) -> CommitInfo:
    return CommitInfo(
        sha=row["sha"][:8], full_sha=row["sha"], subject=row["subject"],
        date=datetime.fromisoformat(row["commit_date"]).astimezone(timezone.utc), files=tuple(row["files"]),
    )


@pytest.fixture(scope="module")
def history() -> list[CommitInfo]:
    with COMMITS.open(encoding="utf-8") as fh:
        return [_info(json.loads(line)) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def _by_sha(history: list[CommitInfo], prefix: str) -> CommitInfo:
    found = [c for c in history if c.full_sha.startswith(prefix)]
    assert len(found) == 1, prefix
    return found[0]


def _window(commits: list[CommitInfo]) -> CommitWindow:
    commits = sorted(commits, key=lambda c: c.date)
    return CommitWindow(commits[0].full_sha, commits[-1].full_sha, tuple(commits))


def _score(c: CommitInfo, platform: str, rules, kernels: tuple[str, ...] = ("rms_norm",), source: str = "dashboard"):
    (r,) = rank_commits(CommitWindow(c.full_sha, c.full_sha, (c,)), platform, kernels, rules, source=source)
    return r


def _tagged(c: CommitInfo, tags: set[str]) -> bool:
    return bool(set(subject_tags(c.subject)) & tags)


def test_subject_tags_are_case_insensitive_and_split():
    assert subject_tags("[CuTe] Add SM103 flash primitives") == ["cute"]
    assert subject_tags("[Easy][Benchmark CI] Exit job") == ["easy", "benchmark ci", "benchmark", "ci"]
    assert subject_tags("[ROCm][CI] Revert ROCm 7.14 update") == ["rocm", "ci"]
    assert subject_tags("ci: pin libtpu to 0.0.43") == ["ci"]
    assert subject_tags("Add rms_norm example and test (#252)") == []
    assert subject_tags('Revert "fix: x" (#1)') == []


def test_real_cute_window_ranks_cute_first_for_b200_cute_and_discounts_it_for_tpu(history, rules):
    """A real contiguous stretch of main with both [CuTe] and [Pallas] work in it."""
    start = next(i for i, c in enumerate(history) if c.full_sha.startswith("a152d7525b"))  # [CuTe] Model flash ...
    window = _window(history[start - 10 : start + 20])
    cute = {c.full_sha for c in window.commits if _tagged(c, {"cute", "cutedsl"})}
    # (a [pallas] commit that only adds a pretuned kernel changes nothing the dashboard runs)
    pallas = {c.full_sha for c in window.commits if _tagged(c, {"pallas", "pallas-tpu", "tpu"})
              and not all(f.startswith(("pretuned_kernels/", "test/")) for f in c.files)}
    assert len(cute) >= 4 and len(pallas) >= 3

    ranked = rank_commits(window, "b200_cute", ("flash_attention",), rules)
    assert len(ranked) == len(window.commits)
    assert all(r.full_sha in cute for r in ranked[:4])
    assert "subject tag [cute] matches b200_cute" in [x.lower() for x in ranked[0].reasons]
    assert any(r.startswith("touches helion/_compiler/") and "cute" in r for r in ranked[0].reasons)

    tpu = rank_commits(window, "tpu", ("flash_attention",), rules)
    pos = {r.full_sha: i for i, r in enumerate(tpu)}
    assert max(pos[s] for s in pallas) < min(pos[s] for s in cute)
    for r in tpu:
        if r.full_sha in cute:
            assert "other slice [cute]: discounted" in [x.lower() for x in r.reasons]
            assert r.score < 0.2


def test_every_real_cute_commit_scores_higher_for_b200_cute_than_tpu(history, rules):
    cute = [c for c in history if _tagged(c, {"cute", "cutedsl"})]
    assert len(cute) > 200
    for c in cute:
        assert _score(c, "b200_cute", rules).score > _score(c, "tpu", rules).score, c.subject


def test_every_real_pallas_commit_scores_higher_for_tpu(history, rules):
    pallas = [c for c in history if _tagged(c, {"pallas", "pallas-tpu", "tpu"})]
    assert len(pallas) > 200
    for c in pallas:
        t = _score(c, "tpu", rules).score
        assert t > _score(c, "b200_cute", rules).score, c.subject
        assert t > _score(c, "h100", rules).score, c.subject


def test_real_rocm_commits_match_mi350x_over_h100(history, rules):
    amd = [c for c in history if _tagged(c, {"rocm", "amd"}) and any(f.startswith("helion/") for f in c.files)]
    assert amd
    for c in amd:
        assert _score(c, "mi350x", rules).score > _score(c, "h100", rules).score, c.subject


def test_real_docs_only_commits_are_discounted_everywhere(history, rules):
    docs = [c for c in history if c.files and all(f.startswith("docs/") or f.endswith((".md", ".rst")) for f in c.files)]
    assert len(docs) > 50
    code = _by_sha(history, "e39210794b")  # rms_norm: save inv_rms in fp32 to fix bf16 backward
    for c in docs[:60]:
        for p in PLATFORMS:
            r = _score(c, p, rules)
            assert "docs-only: discounted" in r.reasons
            assert r.score < _score(code, p, rules).score


def test_untagged_commit_matches_by_path(history, rules):
    c = next(
        c for c in history
        if not subject_tags(c.subject) and any(f.startswith("helion/_compiler/cute/") for f in c.files)
    )
    cute, tpu = _score(c, "b200_cute", rules), _score(c, "tpu", rules)
    assert "touches helion/_compiler/cute/" in cute.reasons
    assert cute.score > tpu.score
    assert any(r.startswith("other slice") for r in tpu.reasons)


def test_tag_and_paths_disagreeing_both_count(history, rules):
    """[cutedsl] Plan grouped-N matmuls ... touches cute paths and shared code: the tag wins for b200_cute,
    and the Pallas side still sees it (it touched shared code) but lower."""
    c = _by_sha(history, "08379cf877")
    cute, tpu, h100 = (_score(c, p, rules, ("gemm",)) for p in ("b200_cute", "tpu", "h100"))
    assert "subject tag [cutedsl] matches b200_cute" in cute.reasons
    assert cute.score > tpu.score and cute.score > h100.score
    # a subject tag naming another slice, on a commit touching only this slice's paths, is not discounted
    twisted = CommitInfo("0" * 8, "0" * 40, "[Pallas] move lowering helper", c.date,
                         ("helion/_compiler/cute/cute_mma.py",))
    r = _score(twisted, "b200_cute", rules)
    assert "touches helion/_compiler/cute/" in r.reasons
    assert not any(x.startswith("other slice") for x in r.reasons)
    assert r.score > _score(twisted, "h100", rules).score


def test_tags_are_case_insensitive_in_ranking(history, rules):
    base = _by_sha(history, "52f37b17d4")  # [CuTe] Add SM103 dense resident softmax
    lower = CommitInfo(base.sha, base.full_sha, base.subject.replace("[CuTe]", "[cute]"), base.date, base.files)
    a, b = _score(base, "b200_cute", rules), _score(lower, "b200_cute", rules)
    assert a.score == b.score and [r.lower() for r in a.reasons] == [r.lower() for r in b.reasons]
    assert "subject tag [CuTe] matches b200_cute" in a.reasons  # shown as the author wrote it
    assert "subject tag [cute] matches b200_cute" in b.reasons
    assert "other slice [CuTe]: discounted" in _score(base, "tpu", rules).reasons


def test_word_matching():
    from service.culprit.rank import mentions

    assert mentions("pin torch==2.9.0 for b200", "torch==")
    assert mentions("use cu129 wheels", "cu12") and mentions("move to gfx942.1 runner", "gfx9")
    assert mentions("fix sum kernel", "sum") and not mentions("add summary", "sum")
    assert not mentions("jagged_sum: fix", "sum")
    assert mentions("Fix RMS norm tolerance", "rms_norm") and mentions("rms-norm", "rms_norm")
    # code named in a subject: a word followed by an underscore is still that word (76ac690e)
    assert mentions("[cute] Rewrite online softmax_two_pass → 3-pass form", "softmax")
    assert mentions("speed up rms_norm_bwd", "rms_norm") and not mentions("add summary_stats", "sum")


def test_naming_the_moved_kernel_counts(history, rules):
    c = _by_sha(history, "e39210794b")  # rms_norm: save inv_rms in fp32 ... touches examples/rms_norm.py
    named = _score(c, "h100", rules, ("rms_norm-bwd",))
    other = _score(c, "h100", rules, ("vector_add",))
    assert "names kernel rms_norm" in named.reasons
    assert named.score > other.score
    fam = CommitInfo("1" * 8, "1" * 40, "Improve looped reduction codegen", c.date, ("helion/_compiler/reduction_strategy.py",))
    assert any(r.startswith("kernel family reductions") for r in _score(fam, "h100", rules, ("layer_norm",)).reasons)
    assert not any(r.startswith("kernel family") for r in _score(fam, "h100", rules, ("gemm",)).reasons)


def test_english_words_are_not_kernel_names(rules):
    c = CommitInfo("2" * 8, "2" * 40, "Add summary logging to the autotuner", datetime(2026, 1, 1, tzinfo=timezone.utc),
                   ("helion/autotuner/logger.py",))
    for k in ("vector_add", "sum", "vector_exp"):
        assert not any(r.startswith("names kernel") for r in _score(c, "b200", rules, (k,)).reasons), k


def test_scores_are_bounded_and_ties_go_newest_first(history, rules):
    window = _window(history[1500:1560])
    for p in PLATFORMS:
        ranked = rank_commits(window, p, ("softmax", "rms_norm"), rules)
        assert sorted(r.full_sha for r in ranked) == sorted(c.full_sha for c in window.commits)
        assert all(0.0 <= r.score <= 1.0 for r in ranked)
        assert all(r.reasons for r in ranked if r.score > 0)
        for a, b in zip(ranked, ranked[1:]):
            assert a.score >= b.score
    t = datetime(2026, 2, 1, tzinfo=timezone.utc)
    twins = [
        CommitInfo(f"{i}" * 8, f"{i}" * 40, "Fix indexing", t + timedelta(hours=i), ("helion/_compiler/indexing_strategy.py",))
        for i in range(3, 6)
    ]
    ranked = rank_commits(CommitWindow(twins[0].full_sha, twins[-1].full_sha, tuple(twins)), "h100", (), rules)
    assert [r.full_sha for r in ranked] == [c.full_sha for c in reversed(twins)]


def test_more_evidence_ranks_first_even_where_both_scores_read_one(rules):
    """Both commits reach the cap; the one that also names the moved kernel is checked first,
    though the other is newer."""
    t = datetime(2026, 2, 1, tzinfo=timezone.utc)
    files = ("helion/_compiler/cute/reduce.py", "helion/_compiler/reduction_strategy.py")
    named = CommitInfo("a" * 8, "a" * 40, "[cute] faster rms_norm on sm100", t, files)
    family = CommitInfo("b" * 8, "b" * 40, "[cute] faster reductions on sm100", t + timedelta(hours=1), files)
    ranked = rank_commits(CommitWindow(named.full_sha, family.full_sha, (named, family)), "b200_cute",
                          ("rms_norm",), rules)
    assert [r.score for r in ranked] == [1.0, 1.0]
    assert [r.full_sha for r in ranked] == [named.full_sha, family.full_sha]


def test_a_subject_that_says_nothing_runs_changed_is_discounted(history, rules):
    """A real lint/type-checker fix in compiler code ranks below a plain compiler change."""
    lint = _by_sha(history, "646b0e4ac4")  # [CI] Fix Pyrefly lint error in template_buffer.py
    plain = CommitInfo("c" * 8, "c" * 40, "Fix template buffer codegen", lint.date - timedelta(hours=1), lint.files)
    ranked = rank_commits(CommitWindow(plain.full_sha, lint.full_sha, (plain, lint)), "h100", ("gemm",), rules)
    assert [r.full_sha for r in ranked] == [plain.full_sha, lint.full_sha]
    assert ranked[1].score < ranked[0].score
    assert any("nothing that runs changed" in why for why in ranked[1].reasons)


def test_default_rules_are_loaded_when_none_given(history):
    c = _by_sha(history, "52f37b17d4")
    (r,) = rank_commits(CommitWindow(c.full_sha, c.full_sha, (c,)), "b200_cute", (), None)
    assert "subject tag [CuTe] matches b200_cute" in r.reasons


def test_empty_window_ranks_nothing(rules):
    assert rank_commits(CommitWindow("a" * 40, "a" * 40), "h100", ("sum",), rules) == []
    assert find_change_commit(CommitWindow("a" * 40, "a" * 40), "harness", rules) is None


# --- harness / runner change commits -------------------------------------------------------------


def _code_window(history: list[CommitInfo], extra: list[CommitInfo]) -> CommitWindow:
    code = [
        c for c in history[1400:1500]
        if c.files and all(f.startswith(("helion/", "test/")) for f in c.files)
        and not _tagged(c, {"benchmark", "benchmark ci", "ci", "benchmarking"})
    ][:25]
    return _window(code + extra)


def test_harness_commit_found_among_code_commits(history, rules):
    harness = _by_sha(history, "0ac95a8016")  # [Benchmarking] Disable cudagraph for layer_norm-bwd / rms_norm-bwd
    window = _code_window(history, [harness])
    found = find_change_commit(window, "harness", rules)
    assert found is not None and found.full_sha == harness.full_sha
    assert "changes benchmark harness file benchmarks/run.py" in found.reasons
    assert find_change_commit(window, "runner", rules) is None


@pytest.mark.parametrize(
    "sha, why",
    [
        ("8486cf3e00", "Adding AMD Mi350x machines to CI with new labels."),
        ("8690b5f177", "bump cublas for b200 benchmarks"),
        ("1c09e5329d", "Upgrade rocm CI to 7.0"),
    ],
)
def test_runner_commit_found_among_code_commits(history, rules, sha, why):
    runner = _by_sha(history, sha)
    assert runner.subject.startswith(why)
    window = _code_window(history, [runner])
    found = find_change_commit(window, "runner", rules)
    assert found is not None and found.full_sha == runner.full_sha
    assert any("benchmark_dispatch.yml" in r for r in found.reasons)


def test_pure_code_window_has_no_change_commits(history, rules):
    window = _code_window(history, [])
    assert len(window.commits) >= 10
    assert find_change_commit(window, "harness", rules) is None
    assert find_change_commit(window, "runner", rules) is None


def test_the_commit_that_says_it_changes_a_measurement_beats_a_later_tidy_up(history, rules):
    """Both touch benchmarks/run.py an hour apart; the tidy-up changes nothing else, but the fix is
    the one that changed how compile time is measured, and its subject says so."""
    fix = _by_sha(history, "22d88942")  # Fix compile time measurements (#2188): run.py + helion/_compile_time.py
    tidy = _by_sha(history, "b527a7e6")  # Remove redundant compile time env (#2191): run.py only
    found = find_change_commit(_code_window(history, [fix, tidy]), "harness", rules)
    assert found is not None and found.full_sha == fix.full_sha
    assert "subject mentions 'measurements'" in found.reasons


def test_harness_and_runner_commits_are_told_apart(history, rules):
    harness = _by_sha(history, "0ac95a8016")
    runner = _by_sha(history, "1c09e5329d")
    window = _window([harness, runner])
    assert find_change_commit(window, "harness", rules).full_sha == harness.full_sha
    assert find_change_commit(window, "runner", rules).full_sha == runner.full_sha


def test_harness_commits_rank_low_as_culprits(history, rules):
    harness = _by_sha(history, "0ac95a8016")
    r = _score(harness, "b200", rules, ("rms_norm-bwd",))
    assert any("harness/CI only" in x for x in r.reasons)
    code = _by_sha(history, "e39210794b")
    assert r.score < _score(code, "b200", rules, ("rms_norm-bwd",)).score


def test_bad_kind_is_refused(rules):
    with pytest.raises(ValueError):
        find_change_commit(CommitWindow("a" * 40, "b" * 40), "kernel", rules)  # type: ignore[arg-type]


def test_a_commit_that_touches_the_moved_kernels_own_files_is_not_another_slices(history, rules):
    """[cutedsl] 8379fd86 regenerates rms_norm_per_block_quant's checked-in sm100 config: for that
    pretuned kernel on b200 it is direct evidence, not a CuTe commit to discount; for another
    kernel the tag still says "another slice"."""
    c = _by_sha(history, "8379fd86")
    mine = _score(c, "b200", rules, ("rms_norm_per_block_quant",), "pretuned")
    other = _score(c, "b200", rules, ("softmax",), "pretuned")
    assert "names kernel rms_norm_per_block_quant" in mine.reasons
    assert not any(r.startswith("other slice") for r in mine.reasons)
    assert any(r.startswith("other slice") for r in other.reasons)
    assert mine.score > 2 * other.score


def test_a_commit_about_another_kernel_family_is_discounted(history, rules):
    """A matmul commit cannot explain a reduction-only move as well as it explains a gemm one."""
    c = next(c for c in history if "matmul" in c.subject.lower() and not subject_tags(c.subject)
             and any(f.startswith("helion/") for f in c.files))
    reduction = _score(c, "b200", rules, ("rms_norm", "layer_norm"))
    gemm = _score(c, "b200", rules, ("gemm",))
    assert any("not the moved ones: discounted" in r for r in reduction.reasons)
    assert reduction.score < gemm.score


def test_a_subject_that_names_another_device_is_discounted_even_on_shared_paths(history, rules):
    """[autotuner][sm100] ... B200 touches the Triton heuristics H100 shares: the author meant B200."""
    c = next(c for c in history if "sm100" in subject_tags(c.subject)
             and any(f.startswith("helion/_compiler/autotuner_heuristics/triton") for f in c.files))
    b200, h100 = _score(c, "b200", rules, ("jsd",)), _score(c, "h100", rules, ("jsd",))
    assert any("names another device" in r for r in h100.reasons)
    assert not any("another device" in r for r in b200.reasons)
    assert h100.score < b200.score / 2


def test_a_shared_tag_narrowed_to_another_platform_is_that_platforms(history, rules):
    """[triton][AMD]: Triton is H100's backend too, but the author meant the AMD machines."""
    amd = next(c for c in history if c.subject.startswith("[triton][AMD] Expand tunable values"))
    plain = CommitInfo("d" * 8, "d" * 40, "[triton] Expand tunable values", amd.date - timedelta(hours=1), amd.files)
    window = CommitWindow(plain.full_sha, amd.full_sha, (plain, amd))
    on_h100 = rank_commits(window, "h100", ("grouped_gemm",), rules)
    on_amd = rank_commits(window, "mi350x", ("grouped_gemm",), rules)
    assert [r.full_sha for r in on_h100] == [plain.full_sha, amd.full_sha]
    assert any("narrowed to another platform" in why for why in on_h100[1].reasons)
    assert on_amd[0].full_sha == amd.full_sha


def test_a_harness_commit_about_another_platform_is_not_this_ones(history, rules):
    """"[benchmarks] Limit unstable MI350 input sweeps" changed how MI350 is measured: for an H100
    move it is no harness change of the window; for an MI350X move it is."""
    mi350 = next(c for c in history if c.subject.startswith("[benchmarks] Limit unstable MI350 input sweeps"))
    window = CommitWindow(mi350.full_sha, mi350.full_sha, (mi350,))
    assert find_change_commit(window, "harness", rules, "h100") is None
    found = find_change_commit(window, "harness", rules, "mi350x")
    assert found is not None and found.full_sha == mi350.full_sha
    assert find_change_commit(window, "harness", rules).full_sha == mi350.full_sha  # unscoped: as before


def test_equal_evidence_goes_to_the_commit_that_changed_more_helion_code(rules):
    """Two commits alike in every rule: the bigger change to Helion code is read first, though
    the other is newer; lines in docs or tests do not count."""
    t = datetime(2026, 2, 1, tzinfo=timezone.utc)
    files = ("helion/_compiler/indexing_strategy.py", "docs/api.md")
    big = CommitInfo("a" * 8, "a" * 40, "Fix indexing", t, files, lines=(120, 0))
    small = CommitInfo("b" * 8, "b" * 40, "Fix indexing", t + timedelta(hours=1), files, lines=(3, 900))
    ranked = rank_commits(CommitWindow(big.full_sha, small.full_sha, (big, small)), "h100", ("gemm",), rules)
    assert ranked[0].score == ranked[1].score
    assert [r.full_sha for r in ranked] == [big.full_sha, small.full_sha]
    unknown = CommitInfo("c" * 8, "c" * 40, "Fix indexing", t + timedelta(hours=2), files)
    ranked = rank_commits(CommitWindow(big.full_sha, unknown.full_sha, (big, unknown)), "h100", ("gemm",), rules)
    assert ranked[0].full_sha == big.full_sha


def test_line_counts_are_asked_for_only_where_they_decide_the_order(rules):
    """A window read with names only: `rank_commits` asks for the counts of the commits that tie
    with another and touch code (not of a lone commit, nor of a docs-only one), and orders as it
    would with every count known."""
    t = datetime(2026, 2, 1, tzinfo=timezone.utc)
    code = ("helion/_compiler/indexing_strategy.py", "docs/api.md")
    full = [
        CommitInfo("a" * 8, "a" * 40, "Fix indexing", t, code, lines=(120, 0)),
        CommitInfo("b" * 8, "b" * 40, "Fix indexing", t + timedelta(hours=1), code, lines=(3, 900)),
        CommitInfo("c" * 8, "c" * 40, "Docs: typo", t + timedelta(hours=2), ("docs/api.md",), lines=(1,)),
        CommitInfo("d" * 8, "d" * 40, "[Pallas] Improve VMEM tiling on TPU", t + timedelta(hours=3),
                   ("helion/_compiler/pallas/tiling.py",), lines=(40,)),
    ]
    named = tuple(dataclasses.replace(c, lines=()) for c in full)
    window = CommitWindow(full[0].full_sha, full[-1].full_sha, named)
    asked: list[set[str]] = []

    def lines_for(shas: set[str]) -> CommitWindow:
        asked.append(set(shas))
        return CommitWindow(window.last_good, window.first_bad,
                            tuple(f if f.full_sha in shas else n for f, n in zip(full, named)))

    got = rank_commits(window, "h100", ("gemm",), rules, lines_for=lines_for)
    want = rank_commits(CommitWindow(window.last_good, window.first_bad, tuple(full)), "h100", ("gemm",), rules)
    assert asked == [{"a" * 40, "b" * 40}]
    assert [r.full_sha for r in got] == [r.full_sha for r in want] and got[0].full_sha == "a" * 40
    assert [r.score for r in got] == [r.score for r in want]


def test_line_counts_are_not_asked_for_ties_below_the_places_a_person_is_shown(rules):
    """Twelve commits that name the moved kernel, then a tie of three plain code commits: the
    plain ones start at place 13, past the `CANDIDATES_SHOWN` a move keeps, so their order is
    never read and their diffs are not asked for; the twelve's tie is."""
    from service.records import CANDIDATES_SHOWN

    t = datetime(2026, 2, 1, tzinfo=timezone.utc)
    code = ("helion/_compiler/indexing_strategy.py",)
    top = [CommitInfo(f"{i:08x}", f"{i:040x}", "Speed up gemm tiles", t + timedelta(hours=i), code)
           for i in range(1, CANDIDATES_SHOWN + 3)]
    low = [CommitInfo(f"{i:08x}", f"{i:040x}", "Fix indexing", t + timedelta(hours=i), code)
           for i in range(100, 103)]
    window = CommitWindow(top[0].full_sha, low[-1].full_sha, (*top, *low))
    asked: list[set[str]] = []

    def lines_for(shas: set[str]) -> CommitWindow:
        asked.append(set(shas))
        return window

    ranked = rank_commits(window, "h100", ("gemm",), rules, lines_for=lines_for)
    assert {r.full_sha for r in ranked[:len(top)]} == {c.full_sha for c in top}
    assert asked == [{c.full_sha for c in top}]


def test_a_commit_naming_the_moved_kernel_outranks_a_louder_tag(history, rules):
    """A plain commit about softmax ranks above a [Pallas] commit touching pallas paths for a TPU
    softmax move; the score shown keeps its own scale (the order bonus is not in it)."""
    t = datetime(2026, 2, 1, tzinfo=timezone.utc)
    loud = CommitInfo("d" * 8, "d" * 40, "[Pallas] Improve VMEM tiling on TPU", t + timedelta(hours=1),
                      ("helion/_compiler/pallas/tiling.py",))
    named = CommitInfo("e" * 8, "e" * 40, "Speed up softmax", t, ("helion/_compiler/reduction_strategy.py",))
    ranked = rank_commits(CommitWindow(named.full_sha, loud.full_sha, (named, loud)), "tpu", ("softmax",), rules)
    assert [r.full_sha for r in ranked] == [named.full_sha, loud.full_sha]
    assert any("names kernel softmax" in why for why in ranked[0].reasons)
    alone = _score(named, "tpu", rules, ("softmax",))
    assert alone.score == ranked[0].score <= 1.0



def test_naming_the_kernel_on_another_machine_puts_no_commit_first(history, rules):
    """8d5cc261 ranks TPU matmul candidates ("matmul" names gemm): for a B200 gemm move it is that
    kernel on another machine, so naming it lifts it above nothing. 59ab304e (autotuner config
    priors, backend-neutral) leads the window; for a TPU gemm move 8d5cc261 leads."""
    tpu_matmul, priors = _by_sha(history, "8d5cc261"), _by_sha(history, "59ab304e")
    window = _window([tpu_matmul, priors])
    on_b200 = rank_commits(window, "b200", ("gemm", "jsd"), rules)
    assert on_b200[0].full_sha == priors.full_sha
    assert any("subject names tpu" in why for why in on_b200[1].reasons)
    assert rank_commits(window, "tpu", ("gemm", "jsd"), rules)[0].full_sha == tpu_matmul.full_sha

@pytest.mark.parametrize("prefix, timer", [
    ("22d88942", True),   # Fix compile time measurements
    ("52326a08", True),   # [pretuned_kernels] clear L2 cache in cudagraph timing
    ("ffaa8a61", True),   # Use profiler instead of inductor_benchmarker
    ("c42fc318", False),  # [Bechmarking] Default to benchmark subprocess
    ("ea484a38", False),  # Benchmark: Reduce running Tritonbench for each kernel from twice to once
    ("1f6ae317", False),  # [benchmark] Shard the linear-attention benchmark across parallel jobs
])
def test_a_harness_commit_says_in_its_subject_whether_it_changed_a_timer(history, rules, prefix, timer):
    from service.culprit.rank import names_timer

    assert names_timer(_by_sha(history, prefix), rules) is timer


def test_the_pretuned_suites_own_files_are_no_culprit_of_a_dashboard_move(history, rules):
    """df7ebeab added a torch.compile baseline to every pretuned kernel (pretuned_kernels/rms_norm/
    rms_norm.py, ...): it names the pretuned rms_norm, and the dashboard's rms_norm never runs
    it. For a dashboard move the autotuner commit of the same window leads and df7ebeab is
    neither culprit nor harness change; for the pretuned rms_norm it is still its kernel's file."""
    suite, tuner = _by_sha(history, "df7ebeab"), _by_sha(history, "e26d4df5")
    window = _window([suite, tuner])
    dash = rank_commits(window, "h100", ("rms_norm", "welford"), rules)
    assert dash[0].full_sha == tuner.full_sha
    low = next(r for r in dash if r.full_sha == suite.full_sha)
    assert low.score < 0.1 and any("only the pretuned suite" in why for why in low.reasons)
    pret = rank_commits(window, "h100", ("rms_norm",), rules, source="pretuned")
    assert any("names kernel rms_norm" in why for why in next(r for r in pret if r.full_sha == suite.full_sha).reasons)
    # the pretuned timer (52326a08's L2 clearing) changed how the pretuned suite measures, not the dashboard
    timer = _by_sha(history, "52326a08")
    bench = dataclasses.replace(timer, files=("pretuned_kernels/_bench.py", ".github/workflows/benchmark_pretuned.yml"))
    only = _window([bench])
    assert find_change_commit(only, "harness", rules, "h100") is None
    assert find_change_commit(only, "harness", rules, "h100", source="pretuned").full_sha == timer.full_sha


def test_a_commit_named_for_one_kernel_speaks_only_for_its_share_of_a_wider_move(history, rules):
    """db064094 "Use backend worker count for grouped GEMM" explains a grouped_gemm move, and a
    gemm-family move (grouped_gemm with gemm), whole. Where grouped_gemm moved with jsd, layer_norm
    and flash attention it explains a quarter of the kernels: its naming them counts for a quarter,
    and the reason says so."""
    c = _by_sha(history, "db064094")
    alone = _score(c, "h100", rules, ("grouped_gemm",))
    family = _score(c, "h100", rules, ("gemm", "grouped_gemm"))
    wide = _score(c, "h100", rules, ("flash_attention", "grouped_gemm", "jsd", "layer_norm"))
    assert "names kernel grouped_gemm" in alone.reasons
    assert any(r in ("names kernel gemm", "names kernel grouped_gemm") for r in family.reasons)
    assert alone.score == family.score
    assert any(r.startswith("names kernel grouped_gemm (its kind of kernel is 1 of the 4") for r in wide.reasons)
    assert wide.score < alone.score - 0.25


def test_an_autotuner_commit_leads_where_compile_time_moved_with_the_speed(history, rules):
    """ec27d559 caps num_warps in the autotuner's config space (helion/autotuner/config_spec.py);
    c87bedbc changes code generation over more files. For a move whose compile time stayed put
    the bigger code change leads; where most kernels' compile (autotuning) time moved with their
    speed, the autotuner commit does, its reason says why, and the other commit's score is
    untouched."""
    tuner, codegen = _by_sha(history, "ec27d559"), _by_sha(history, "c87bedbc")
    window = _window([tuner, codegen])
    kernels = ("gemm", "jsd", "layer_norm")
    plain = rank_commits(window, "h100", kernels, rules)
    tuned = rank_commits(window, "h100", kernels, rules, autotune=True)
    assert plain[0].full_sha == codegen.full_sha
    assert tuned[0].full_sha == tuner.full_sha
    assert any(r.startswith("changes the autotuner (helion/autotuner/)") for r in tuned[0].reasons)
    assert next(r.score for r in tuned if r.full_sha == codegen.full_sha) == \
        next(r.score for r in plain if r.full_sha == codegen.full_sha)


def test_a_commit_that_only_adds_example_kernels_ran_nothing_that_moved(helion_clone, rules):
    """9d451d72 adds examples/broadcast_matmul.py and batch_softmax.py (new files, read from the
    real clone with their status) and names matmul; 7ef15d20 constrains the batch block size in
    helion/language/matmul_ops.py. For a gemm-family move the commit that changed code the gemm
    kernels run leads; the new examples are discounted with the reason a person reads."""
    from service.culprit.window import commit_window
    from service.records import CommitWindow

    def one(short: str):
        full = subprocess.run(["git", "-C", str(helion_clone), "rev-parse", short], capture_output=True, text=True,
                              check=True).stdout.strip()
        (c,) = commit_window(helion_clone, _parent(helion_clone, full), full).commits
        return c

    added, constrained = one("9d451d72"), one("7ef15d20")
    assert set(added.new_files) >= {"examples/broadcast_matmul.py", "examples/batch_softmax.py"}
    window = CommitWindow(_parent(helion_clone, constrained.full_sha), added.full_sha, (constrained, added))
    ranked = rank_commits(window, "h100", ("gemm", "grouped_gemm", "int4_gemm"), rules)
    assert ranked[0].full_sha == constrained.full_sha
    low = next(r for r in ranked if r.full_sha == added.full_sha)
    assert any(r.startswith("only adds new example kernels (examples/b") for r in low.reasons)


def _parent(repo, full: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", full + "^"], capture_output=True, text=True,
                          check=True).stdout.strip()
