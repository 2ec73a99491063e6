"""Each method/hardware mechanism read from the REAL Helion files at both ends of a real window,
scoped to the platform and kernel it is about, and attributed to the commit that made it."""

from __future__ import annotations

import dataclasses
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from service.config import load_settings
from service.culprit.facts import repo_fact_changes
from service.records import Move, RunRef, SeriesKey
from service.pipeline.detect_pass import Stages


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _full(repo: Path, short: str) -> str:
    return _git(repo, "rev-parse", f"{short}^{{commit}}")


def _around(repo: Path, short: str, before: int = 1, after: int = 0) -> tuple[str, str]:
    """(last good, first bad): ``before`` first-parent commits before ``short`` and ``after`` after it."""
    full = _full(repo, short)
    chain = _git(repo, "rev-list", "--first-parent", "--reverse", "main").split()
    i = chain.index(full)
    return chain[i - before], chain[i + after]


def _kinds(facts) -> set[str]:
    return {f.kind for f in facts}


@pytest.mark.parametrize("sha, platform, kernel, want, not_on", [
    # Migrate H100 CI to OSDC runners: a runner label and an image, for h100 only
    ("b33ae6b9", "h100", "softmax", {"runner_label", "toolchain"}, "b200"),
    # ROCm 7.14 image and runtime for the MI350X alias only
    ("35b19fd4", "mi350x", "softmax", {"toolchain"}, "h100"),
    # libtpu pinned on the TPU job: the TPU runtime (hardware), not a baseline
    ("e5cc383d", "tpu", "sum", {"toolchain"}, "b200"),
])
def test_machine_changes_are_scoped_to_their_platform(helion_clone, sha, platform, kernel, want, not_on):
    lg, fb = _around(helion_clone, sha)
    facts = repo_fact_changes(helion_clone, lg, fb, platform, kernel)
    assert want <= _kinds(facts), [f.detail for f in facts]
    assert all(f.suggests == "hardware" for f in facts if f.kind in want)
    other = repo_fact_changes(helion_clone, lg, fb, not_on, kernel)
    assert not _kinds(other) & {"runner_label", "toolchain"}, [f.detail for f in other]


@pytest.mark.parametrize("sha, platform, not_on, path", [
    # Upgrade CuTe DSL to 4.7.0: the cute backend's compiler, b200_cute's only
    ("deead0c8", "b200_cute", "b200", ".github/ci_commit_pins/nvidia_cutlass_dsl.txt"),
    # torch_tpu: update pin: the TPU runtime
    ("e17f38ee", "tpu", "h100", ".github/ci_commit_pins/torch_tpu.txt"),
])
def test_a_platforms_own_toolchain_pin_is_a_machine_change_and_names_its_commit(helion_clone, sha, platform,
                                                                                not_on, path):
    """A pin file of the platform's compiler DSL or runtime changes the machine's stack, not
    Helion's code: a toolchain fact for that platform (and no other), attributed to its commit,
    and the pin commit is no code culprit."""
    lg, fb = _around(helion_clone, sha, before=2, after=1)
    facts = [f for f in repo_fact_changes(helion_clone, lg, fb, platform, "softmax") if f.path == path]
    assert [f.kind for f in facts] == ["toolchain_pin"] and facts[0].suggests == "hardware", facts
    assert not [f for f in repo_fact_changes(helion_clone, lg, fb, not_on, "softmax") if f.kind.startswith("toolchain")]
    move = _move(lg, fb, platform, "softmax")
    stages = Stages(load_settings(), helion_clone)
    commit = stages.attribute(move, facts[0])
    assert commit is not None and commit.full_sha == _full(helion_clone, sha)
    ranked = stages.ranked(move, ("softmax",))
    assert all(c.full_sha != _full(helion_clone, sha) or c.score < 0.35 for c in ranked), ranked[:3]


def test_autotune_cap_in_the_benchmark_workflow_is_a_method_fact(helion_clone):
    lg, fb = _around(helion_clone, "9f461a21")
    facts = [f for f in repo_fact_changes(helion_clone, lg, fb, "b200", "softmax") if f.kind == "autotune"]
    assert facts and facts[0].suggests == "method_change" and "HELION_AUTOTUNE" in (facts[0].new or "")


def test_autotune_seed_set_inside_the_nightlys_env_string_is_a_method_fact(helion_clone):
    """27b93292 sets HELION_AUTOTUNE_RANDOM_SEED in benchmark_nightly.yml's `env_vars` string (no
    YAML key holds it); 863a7cbf's HELION_AUTOTUNE_LOG_DETAILS is logging, and 70ec581a's AOT cache
    belongs to the linear-attention step alone: neither is a setting of every kernel."""
    lg, fb = _around(helion_clone, "27b93292")
    facts = [f for f in repo_fact_changes(helion_clone, lg, fb, "h100", "softmax") if f.kind == "autotune"]
    assert [f.new for f in facts] == ["HELION_AUTOTUNE_RANDOM_SEED=123456"]
    assert facts[0].path.endswith("benchmark_nightly.yml") and facts[0].suggests == "method_change"
    assert facts[0].suite is None
    lg, fb = _around(helion_clone, "863a7cbf")
    assert "autotune" not in _kinds(repo_fact_changes(helion_clone, lg, fb, "h100", "softmax"))
    lg, fb = _around(helion_clone, "70ec581a")
    tuning = [f for f in repo_fact_changes(helion_clone, lg, fb, "h100", "softmax") if f.kind == "autotune"]
    assert [(f.suite, f.new) for f in tuning] == [("FLA", "HELION_AUTOTUNE_CACHE=AOTAutotuneCache")]


def _move(lg: str, fb: str, platform: str, kernel: str) -> Move:
    when = datetime(2026, 6, 1, tzinfo=timezone.utc)
    key = SeriesKey("dashboard", platform, kernel, "helion_speedup_geomean")
    return Move(key, RunRef("1", lg[:8], lg, when, 1.0), RunRef("2", fb[:8], fb, when, 0.9), 1.0, 0.9, -10.0,
                "regression", 20.0, "confirmed", 5, 0.01)


def test_a_suites_own_steps_set_that_suites_measurement_only(helion_clone):
    """e848ca15 installs torch 2.12.1 in a step that runs only for the linear-attention suite
    (`if: inputs.suite == 'linattn'`), and 70ec581a puts the AOT cache on the step that runs
    `python -m benchmarks.run_linattn`: facts of the FLA suite's kernels, not of softmax's."""
    from service.pipeline.detect_pass import Stages

    lg, fb = _around(helion_clone, "e848ca15")
    pins = [f for f in repo_fact_changes(helion_clone, lg, fb, "h100", "softmax") if f.kind == "baseline_pin"]
    assert pins and {f.suite for f in pins} == {"FLA"} and "torch==2.12.1" in pins[0].new
    stages = Stages(load_settings(), helion_clone)
    for sha, kind in (("e848ca15", "baseline_pin"), ("70ec581a", "autotune")):
        lg, fb = _around(helion_clone, sha)
        move = _move(lg, fb, "h100", "softmax")
        assert kind not in _kinds(stages.facts(move)), sha
        assert kind in _kinds(stages.facts(move, "FLA")), sha


def test_running_each_kernel_once_instead_of_twice_is_a_change_of_the_benchmark_command(helion_clone):
    """ea484a38 dropped the unrecorded autotune pass: no flag changed, the invocations did. Adding
    a workflow input's value (a0fae23b's --helion-backend) or tolerances changes nothing measured."""
    lg, fb = _around(helion_clone, "ea484a38")
    facts = [f for f in repo_fact_changes(helion_clone, lg, fb, "b200", "softmax") if f.kind == "bench_command"]
    assert len(facts) == 1 and facts[0].suggests == "method_change" and facts[0].new == "(none)"
    assert "--only-match-mode prefix-with-baseline" in facts[0].old
    for sha in ("a0fae23b", "944e7a87", "d93889bf"):  # backend input, --atol/--rtol, a timer flag only
        lg, fb = _around(helion_clone, sha)
        assert "bench_command" not in _kinds(repo_fact_changes(helion_clone, lg, fb, "b200", "softmax")), sha


def test_torch_pin_is_a_baseline_change(helion_clone):
    lg, fb = _around(helion_clone, "e35ec3bd")
    facts = repo_fact_changes(helion_clone, lg, fb, "h100", "softmax")
    pins = [f for f in facts if f.kind == "baseline_pin"]
    assert pins and all(f.suggests == "method_change" for f in pins)
    assert any("torch" in (f.new or "") for f in pins)


def test_a_workflow_counts_only_for_the_platforms_whose_dispatch_job_calls_it(helion_clone):
    # c42fc318 drops HELION_AUTOTUNE_BENCHMARK_SUBPROCESS from benchmark.yml, which the dispatch
    # calls for h100/b200/mi350x; the TPU job calls benchmark_tpu.yml and never read it
    lg, fb = _around(helion_clone, "c42fc318")
    assert "autotune" in _kinds(repo_fact_changes(helion_clone, lg, fb, "h100", "layer_norm"))
    assert "autotune" not in _kinds(repo_fact_changes(helion_clone, lg, fb, "tpu", "layer_norm"))


def test_a_pin_in_the_tpu_workflow_is_neither_h100s_nor_the_pretuned_suites(helion_clone):
    # 83f4c235 moves the torch_tpu nightly pin in benchmark_tpu.yml: TPU's job only
    lg, fb = _around(helion_clone, "83f4c235")
    tpu = [f for f in repo_fact_changes(helion_clone, lg, fb, "tpu", "flash_attention") if f.kind == "baseline_pin"]
    assert tpu and tpu[0].path.endswith("benchmark_tpu.yml")
    for platform, source in (("h100", "dashboard"), ("h100", "pretuned")):
        kernel = "vector_add" if source == "pretuned" else "softmax"
        facts = repo_fact_changes(helion_clone, lg, fb, platform, kernel, source=source)
        assert not [f for f in facts if f.path and f.path.endswith("benchmark_tpu.yml")], [f.detail for f in facts]


def test_the_pretuned_suites_pin_is_not_the_dashboards(helion_clone):
    # 76df68c9 edits benchmark_pretuned.yml: a pretuned fact, never a dashboard one
    lg, fb = _around(helion_clone, "76df68c9")
    pre = repo_fact_changes(helion_clone, lg, fb, "h100", "vector_add", source="pretuned")
    dash = repo_fact_changes(helion_clone, lg, fb, "h100", "softmax")
    assert any(f.path and "benchmark_pretuned" in f.path for f in pre), [f.detail for f in pre]
    assert not any(f.path and "benchmark_pretuned" in f.path for f in dash), [f.detail for f in dash]


@pytest.mark.parametrize("sha, kernel, other, kind", [
    ("0ac95a80", "layer_norm-bwd", "layer_norm", "cudagraph_flag"),  # remove_flags --cudagraph added
    ("6ad99e29", "rope", "softmax", "num_inputs"),  # fewer rope inputs
])
def test_kernel_measurement_facts_name_only_their_kernel(helion_clone, sha, kernel, other, kind):
    lg, fb = _around(helion_clone, sha)
    facts = [f for f in repo_fact_changes(helion_clone, lg, fb, "h100", kernel) if f.kind == kind]
    assert len(facts) == 1 and facts[0].kernels == (kernel,)
    assert not [f for f in repo_fact_changes(helion_clone, lg, fb, "h100", other) if f.kind == kind]


@pytest.mark.parametrize("sha, platform, kernel, other, kind, needle", [
    # run_tpu.py's KERNEL_MAPPINGS names functions (not a literal): _attention_shapes gained a shape
    ("7c5664e8", "tpu", "flash_attention", "exp", "num_inputs", "_attention_shapes"),
    # run.py: gemm's tritonbench arguments gained --non-square (other inputs, same num_inputs)
    ("b77301f9", "h100", "gemm", "softmax", "bench_args", "non_square"),
])
def test_a_kernels_benchmark_definition_read_from_the_real_harness(helion_clone, sha, platform, kernel, other, kind,
                                                                   needle):
    lg, fb = _around(helion_clone, sha)
    facts = [f for f in repo_fact_changes(helion_clone, lg, fb, platform, kernel) if f.kind == kind]
    assert len(facts) == 1 and facts[0].kernels == (kernel,) and needle in facts[0].detail, facts
    assert facts[0].suggests == "method_change"
    assert not [f for f in repo_fact_changes(helion_clone, lg, fb, platform, other) if f.kind == kind]


def test_the_change_commit_is_the_one_that_made_the_fact_not_any_harness_commit(helion_clone):
    """A window of several commits: the cudagraph fact is attributed to 0ac95a80 itself."""
    lg, fb = _around(helion_clone, "0ac95a80", before=3, after=3)
    when = datetime(2026, 4, 1, tzinfo=timezone.utc)
    key = SeriesKey("dashboard", "h100", "rms_norm-bwd", "helion_speedup_geomean")
    move = Move(key, RunRef("1", lg[:8], lg, when, 1.0), RunRef("2", fb[:8], fb, when, 0.7), 1.0, 0.7, -30.0,
                "regression", 20.0, "confirmed", 5, 0.01)
    stages = Stages(load_settings(), helion_clone)
    assert len(stages.window(move).commits) == 6
    fact = next(f for f in stages.facts(move) if f.kind == "cudagraph_flag")
    commit = stages.attribute(move, fact)
    assert commit is not None and commit.full_sha == _full(helion_clone, "0ac95a80")


def test_a_linear_attention_harness_commit_is_the_change_only_for_that_suite(helion_clone):
    """1f6ae317 ("Shard the linear-attention benchmark across parallel jobs") sits in the window of
    a real jsd step on h100 (the 2026-07-25 nightly): it changed how the FLA suite is measured, so
    it is the harness change commit for a linear-attention kernel of that window and not for jsd."""
    lg, fb = _around(helion_clone, "1f6ae317", before=2, after=2)
    when = datetime(2026, 7, 25, tzinfo=timezone.utc)

    def move(kernel):
        key = SeriesKey("dashboard", "h100", kernel, "helion_speedup_geomean")
        return Move(key, RunRef("1", lg[:8], lg, when, 1.0), RunRef("2", fb[:8], fb, when, 0.8), 1.0, 0.8, -20.0,
                    "regression", 20.0, "confirmed", 5, 0.01)

    stages = Stages(load_settings(), helion_clone)
    shard = _full(helion_clone, "1f6ae317")
    assert shard in {c.full_sha for c in stages.window(move("jsd")).commits}
    harness, _ = stages.change_commits(move("simple_gla"), "FLA")
    assert harness is not None and harness.full_sha == shard
    harness, _ = stages.change_commits(move("jsd"), None)
    assert harness is None or harness.full_sha != shard


def test_run_py_tables_read_alone_equal_the_whole_file_parsed_on_the_real_run_py(helion_clone):
    """run.py's KERNEL_MAPPINGS and KERNEL_METRIC_MAPPINGS are parsed on their own (a seventh of
    the file each); on the real run.py's versions they must give what parsing the whole module gives."""
    import ast

    from service.culprit import harness_facts as hf
    from service.culprit.facts import RUN_PY

    shas = _git(helion_clone, "log", "--format=%H", "main", "--", RUN_PY).split()
    assert len(shas) > 50
    for sha in shas[::4]:
        text = subprocess.run(["git", "-C", str(helion_clone), "show", f"{sha}:{RUN_PY}"], capture_output=True,
                              text=True).stdout
        alone = hf.assignment_of(text, "KERNEL_MAPPINGS")
        whole = next((v for n, v in hf.top_level_assignments(ast.parse(text)) if n == "KERNEL_MAPPINGS"), None)
        assert (ast.dump(alone) if alone else None) == (ast.dump(whole) if whole else None), sha
        assert hf.literal_of(text, "KERNEL_METRIC_MAPPINGS") == hf.module_literals(text).get("KERNEL_METRIC_MAPPINGS"), sha


def test_a_pretuned_kernels_regenerated_configs_are_read_for_the_device_they_were_made_for(helion_clone):
    """52326a08 changed the pretuned timer for every kernel and regenerated silu_mul_fp8's sm90
    configs: a config fact for silu_mul_fp8 on H100 (the sm90 machine) only, the timer fact on
    both; and the config fact names its commit."""
    from service.culprit.window import commit_window

    lg, fb = _around(helion_clone, "52326a08")
    touched = commit_window(helion_clone, lg, fb, 100).touched_paths
    h100 = {f.kind: f for f in repo_fact_changes(helion_clone, lg, fb, "h100", "silu_mul_fp8", source="pretuned",
                                                 changed_paths=touched)}
    b200 = {f.kind for f in repo_fact_changes(helion_clone, lg, fb, "b200", "silu_mul_fp8", source="pretuned",
                                              changed_paths=touched)}
    assert {"pretuned_config", "pretuned_timer"} <= set(h100) and h100["pretuned_config"].kernels == ("silu_mul_fp8",)
    assert "pretuned_timer" in b200 and "pretuned_config" not in b200
    move = dataclasses.replace(_move(lg, fb, "h100", "silu_mul_fp8"),
                               key=SeriesKey("pretuned", "h100", "silu_mul_fp8", "geomean"))
    commit = Stages(load_settings(), helion_clone).attribute(move, h100["pretuned_config"])
    assert commit is not None and commit.full_sha == _full(helion_clone, "52326a08")


@pytest.mark.parametrize("sha, platform, before, want", [
    # the CUDA-lane bump for h100 (image and runtime): the baselines run on the new CUDA too
    ("ed36077d", "h100", 1, ("with_toolchain", "hardware", "driver")),
    # a torch_tpu pin bump: the TPU baselines run on torch_tpu
    ("e17f38ee", "tpu", 2, ("with_toolchain", "hardware", "driver")),
    # the torch pin itself (2.10 -> 2.11): that is what defines the baselines
    ("e35ec3bd", "h100", 1, ("with_helion", "method_change", "baseline")),
])
def test_baselines_stepping_with_a_real_toolchain_change_are_the_machines(helion_clone, sha, platform, before, want):
    """Every speedup of three kernels stepped together and Helion's latency stayed flat (the
    baselines moved) across a real window: beside the platform's own new toolchain and nothing
    that defines the baselines, that is the toolchain's footprint; beside a torch pin, a new
    baseline. The facts are read from the real files at both ends."""
    from service.classify.event import classify_event
    from service.classify.explain import load_table
    from service.classify.footprint import EventInput, KernelSteps, observe
    from service.classify.levels import Step

    lg, fb = _around(helion_clone, sha, before=before)
    facts = tuple(repo_fact_changes(helion_clone, lg, fb, platform, "softmax"))
    steps = lambda pct: Step(1.0, 1.0 + pct / 100.0, 0.01, 5, 5)  # noqa: E731
    kernels = tuple(KernelSteps(k, steps(-9), steps(0), (steps(-9), steps(-8))) for k in ("softmax", "sum", "rms_norm"))
    ev = EventInput(source="dashboard", platform=platform, kernels=kernels, ran=12, platform_facts=facts,
                    window_known=True, code_commits=3)
    comparators = next(o.value for o in observe(ev) if o.name == "comparators")
    v = classify_event(ev, load_table())
    assert (comparators, v.cause, v.kind) == want, [(e.check, e.verdict, e.detail) for e in v.evidence]


def _nightly_series(repo: Path, shas: list[str], values: list[float]):
    """A pretuned b200 nvfp4_gemv series on real first-parent commits, a nightly a day."""
    from datetime import timedelta

    from service.records import SeriesData, SeriesPoint

    t0 = datetime(2026, 7, 29, 10, tzinfo=timezone.utc)
    pts = tuple(SeriesPoint(f"{900 + i}", sha[:8], sha, t0 + timedelta(days=i), v)
                for i, (sha, v) in enumerate(zip(shas, values)))
    return SeriesData(SeriesKey("pretuned", "b200", "nvfp4_gemv", "geomean"), pts)


def test_a_step_on_a_young_series_is_announced_where_the_repo_regenerated_that_kernels_configs(helion_clone):
    """76df68c9 regenerated nvfp4_gemv's sm100 configs two nightlies after the kernel joined the
    pretuned suite: the step on the third nightly is announced (the search needs more nights before
    it). The same numbers on commits that changed nothing of nvfp4_gemv are not, and the window is
    read only where the data steps."""
    chain = _git(helion_clone, "rev-list", "--first-parent", "--reverse", "main").split()
    i = chain.index(_full(helion_clone, "76df68c9"))
    values = [1.02, 1.05, 0.93, 0.94, 0.93, 0.94, 1.09, 0.93, 0.93, 0.94, 0.95, 0.92]
    on_it = [chain[i - 2], chain[i - 1], *chain[i:i + 10]]
    stages = Stages(load_settings(), helion_clone)
    assert stages.young_changes(_nightly_series(helion_clone, on_it, values)) == ["902"]
    elsewhere = [*chain[i - 40:i - 28]]  # twelve nights of July that never touched nvfp4_gemv
    assert stages.young_changes(_nightly_series(helion_clone, elsewhere, values)) == []
    assert stages.young_changes(_nightly_series(helion_clone, on_it, [1.0] * 12)) == []
