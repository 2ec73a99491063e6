"""repo_fact_changes: method/runner facts parsed from Helion files at both ends of a window.

Repos are real (git fast-import); file contents come from tests/helion_files.py, the same
renderers the synthetic worlds use, so the world generator and the parser agree on the shape.
"""

from __future__ import annotations

import ast
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from service.culprit import git
from service.culprit.facts import dispatch_kernel_defaults, entry_args, kernel_mappings, repo_fact_changes
from service.errors import BenchwatchError
from tests.gitrepo import CommitSpec, build_repo
from tests.helion_files import (
    DEFAULT_RUNNERS,
    DISPATCH_PATH,
    RUN_PY_PATH,
    render_dispatch_yml,
    render_run_py,
)

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=timezone.utc)

MAPPINGS = {
    "vector_add": {},
    "sum": {},
    "rms_norm": {},
    "rms_norm-bwd": {"num_inputs": 5, "remove_flags": ["--cudagraph"]},
    "layer_norm-bwd": {"remove_flags": ["--cudagraph"]},
    "rope": {"num_inputs": 5},
    "softmax": {},
}
KERNELS = {
    "kernels": ["vector_add", "sum", "rms_norm", "rms_norm-bwd", "layer_norm-bwd", "rope", "softmax"],
    "kernels_cute": ["vector_add", "layer_norm", "rms_norm", "vector_exp", "sum"],
    "kernels_tpu": ["vector_add", "sum", "softmax"],
    "kernels_tpu_bridge": ["rms_norm", "kl_div"],
    "kernels_linattn": ["simple_gla", "simple_gla-bwd"],
}


def _files(mappings=None, kernels=None, runners=None, **kw) -> dict[str, str]:
    return {
        RUN_PY_PATH: render_run_py(mappings if mappings is not None else MAPPINGS),
        DISPATCH_PATH: render_dispatch_yml(kernels or KERNELS, runners or DEFAULT_RUNNERS, **kw),
    }


def _repo(tmp_path: Path, *changes: dict[str, str | None], base: dict[str, str | None] | None = None) -> tuple[Path, list[str]]:
    """Base commit, a distractor code commit, then each change as one commit, then another distractor."""
    specs = [
        CommitSpec("Initial", T0, base if base is not None else _files()),
        CommitSpec("[cute] Support tcgen05 epilogues", T0 + timedelta(hours=1), {"helion/_compiler/cute/epi.py": "x\n"}),
    ]
    for i, ch in enumerate(changes):
        specs.append(CommitSpec(f"[Benchmark CI] change {i}", T0 + timedelta(hours=2 + i), ch))
    specs.append(CommitSpec("[Pallas] Fix VMEM", T0 + timedelta(hours=9), {"helion/_compiler/pallas/v.py": "y\n"}))
    path = tmp_path / "helion"
    return path, build_repo(path, specs)


def _kinds(facts) -> list[str]:
    return sorted(f.kind for f in facts)


# --- the renderers produce files the parsers understand -----------------------------------------


def test_rendered_run_py_round_trips_through_the_parser():
    text = render_run_py(MAPPINGS)
    ast.parse(text)
    parsed = kernel_mappings(text)
    assert parsed is not None and list(parsed) == list(MAPPINGS)
    for name, args in MAPPINGS.items():
        assert entry_args(parsed[name]) == args
        assert parsed[name][0] == f"tritonbench.operators.{name.split('-')[0]}.operator"


def test_rendered_dispatch_yml_round_trips_through_the_parser():
    doc = yaml.safe_load(render_dispatch_yml(KERNELS, DEFAULT_RUNNERS))
    assert dispatch_kernel_defaults(doc) == {k: set(v) for k, v in KERNELS.items()}
    with_blocks = [job["with"] for job in doc["jobs"].values()]
    assert {w["runner"] for w in with_blocks} == set(DEFAULT_RUNNERS.values())
    with pytest.raises(ValueError):
        render_dispatch_yml({"kernels_gpu": ["x"]}, DEFAULT_RUNNERS)


# --- each fact kind -----------------------------------------------------------------------------


def test_cudagraph_flag_gained(tmp_path):
    after = {**MAPPINGS, "rms_norm": {"remove_flags": ["--cudagraph"]}}
    path, shas = _repo(tmp_path, {RUN_PY_PATH: render_run_py(after)})
    facts = repo_fact_changes(path, shas[0], shas[-1], "b200", "rms_norm")
    assert _kinds(facts) == ["cudagraph_flag"]
    f = facts[0]
    assert (f.suggests, f.path, f.old, f.new) == ("method_change", RUN_PY_PATH, "cudagraph", "no cudagraph")
    assert "rms_norm" in f.detail
    # the other kernels did not change
    assert repo_fact_changes(path, shas[0], shas[-1], "b200", "softmax") == []


def test_cudagraph_flag_lost_and_num_inputs_changed(tmp_path):
    after = {**MAPPINGS, "rms_norm-bwd": {"num_inputs": 3}}
    path, shas = _repo(tmp_path, {RUN_PY_PATH: render_run_py(after)})
    facts = repo_fact_changes(path, shas[0], shas[-1], "h100", "rms_norm-bwd")
    assert _kinds(facts) == ["cudagraph_flag", "num_inputs"]
    by = {f.kind: f for f in facts}
    assert (by["cudagraph_flag"].old, by["cudagraph_flag"].new) == ("no cudagraph", "cudagraph")
    assert (by["num_inputs"].old, by["num_inputs"].new) == ("5", "3")
    assert all(f.suggests == "method_change" for f in facts)


def test_num_inputs_added(tmp_path):
    after = {**MAPPINGS, "softmax": {"num_inputs": 4}}
    path, shas = _repo(tmp_path, {RUN_PY_PATH: render_run_py(after)})
    (f,) = repo_fact_changes(path, shas[0], shas[-1], "mi350x", "softmax")
    assert (f.kind, f.old, f.new) == ("num_inputs", "default", "4")


def test_kernel_dropped_and_added_per_platform(tmp_path):
    kernels = {**KERNELS, "kernels_cute": ["vector_add", "layer_norm", "vector_exp", "sum", "softmax"]}
    path, shas = _repo(tmp_path, {DISPATCH_PATH: render_dispatch_yml(kernels, DEFAULT_RUNNERS)})
    (drop,) = repo_fact_changes(path, shas[0], shas[-1], "b200_cute", "rms_norm")
    assert (drop.kind, drop.suggests, drop.path) == ("kernel_dropped", "method_change", DISPATCH_PATH)
    (add,) = repo_fact_changes(path, shas[0], shas[-1], "b200_cute", "softmax")
    assert add.kind == "kernel_added"
    # b200 (Triton) reads `kernels`, which did not change
    assert repo_fact_changes(path, shas[0], shas[-1], "b200", "rms_norm") == []


def test_tpu_unions_its_two_inputs_and_h100_reads_linattn(tmp_path):
    kernels = {
        **KERNELS,
        "kernels_tpu": ["vector_add", "sum", "softmax", "rms_norm"],  # moved from the bridge list
        "kernels_tpu_bridge": ["kl_div"],
        "kernels_linattn": ["simple_gla-bwd"],
    }
    path, shas = _repo(tmp_path, {DISPATCH_PATH: render_dispatch_yml(kernels, DEFAULT_RUNNERS)})
    assert repo_fact_changes(path, shas[0], shas[-1], "tpu", "rms_norm") == []
    (f,) = repo_fact_changes(path, shas[0], shas[-1], "h100", "simple_gla")
    assert f.kind == "kernel_dropped" and "h100" in f.detail
    assert repo_fact_changes(path, shas[0], shas[-1], "b200_cute", "simple_gla") == []


def test_runner_label_changed_only_for_that_platform(tmp_path):
    runners = {**DEFAULT_RUNNERS, "mi350x": "linux.rocm.gpu.gfx950.4"}
    path, shas = _repo(tmp_path, {DISPATCH_PATH: render_dispatch_yml(KERNELS, runners)})
    (f,) = repo_fact_changes(path, shas[0], shas[-1], "mi350x", "sum")
    assert (f.kind, f.suggests, f.path) == ("runner_label", "hardware", DISPATCH_PATH)
    assert (f.old, f.new) == ("linux.rocm.gpu.gfx950.1", "linux.rocm.gpu.gfx950.4")
    for other in ("h100", "b200", "b200_cute", "tpu"):
        assert repo_fact_changes(path, shas[0], shas[-1], other, "sum") == [], other


def test_b200_and_b200_cute_jobs_are_told_apart(tmp_path):
    runners = {**DEFAULT_RUNNERS, "b200_cute": "linux.dgx.b200.cute"}
    path, shas = _repo(tmp_path, {DISPATCH_PATH: render_dispatch_yml(KERNELS, runners)})
    assert _kinds(repo_fact_changes(path, shas[0], shas[-1], "b200_cute", "sum")) == ["runner_label"]
    assert repo_fact_changes(path, shas[0], shas[-1], "b200", "sum") == []


def test_toolchain_image_and_runtime_changes(tmp_path):
    change = _files(images={"h100": "nvidia/cuda:13.0.1-devel-ubuntu24.04"}, runtime_versions={"h100": "cu130"})
    path, shas = _repo(tmp_path, {DISPATCH_PATH: change[DISPATCH_PATH]})
    (f,) = repo_fact_changes(path, shas[0], shas[-1], "h100", "sum")
    assert (f.kind, f.suggests) == ("toolchain", "hardware")
    assert "cu129" in (f.old or "") and "cu130" in (f.new or "") and "13.0.1" in (f.new or "")
    assert repo_fact_changes(path, shas[0], shas[-1], "b200", "sum") == []


RUNNER_WORKFLOW = """\
name: Benchmark
on:
  workflow_call:
    inputs:
      runner:
        required: true
        type: string
jobs:
  bench:
    strategy:
      matrix:
        include:
          - alias: b200
            runner: {b200}
          - alias: mi350x
            runner: linux.rocm.gpu.gfx950.1
    runs-on: ${{{{ matrix.runner }}}}
    steps:
      - name: Install PyTorch
        run: |
          pip install torch=={torch} --index-url https://download.pytorch.org/whl/{wheel}
      - name: Run
        run: python benchmarks/run.py --op sum
"""


def test_matrix_include_labels_and_pip_pins_in_other_benchmark_workflows(tmp_path):
    before = {".github/workflows/benchmark.yml": RUNNER_WORKFLOW.format(b200="linux.dgx.b200", torch="2.9.0", wheel="cu129")}
    after = {".github/workflows/benchmark.yml": RUNNER_WORKFLOW.format(b200="linux.dgx.b200.nvl", torch="2.10.0", wheel="cu130")}
    path, shas = _repo(tmp_path, after, base={**_files(), **before})
    facts = repo_fact_changes(path, shas[0], shas[-1], "b200", "sum")
    # the torch pin defines the baselines (a method change); the CUDA wheel is the machine's toolchain
    assert _kinds(facts) == ["baseline_pin", "runner_label", "toolchain"]
    pin = next(f for f in facts if f.kind == "baseline_pin")
    assert "torch==2.9.0" in (pin.old or "") and "torch==2.10.0" in (pin.new or "")
    assert pin.suggests == "method_change"
    tool = next(f for f in facts if f.kind == "toolchain")
    assert "cu129" in (tool.old or "") and "cu130" in (tool.new or "")
    assert all(f.path == ".github/workflows/benchmark.yml" for f in facts)
    # mi350x: same label; the torch pin moved (applies to every platform), the CUDA wheel did not
    mi = repo_fact_changes(path, shas[0], shas[-1], "mi350x", "sum")
    assert _kinds(mi) == ["baseline_pin"]
    assert "cu13" not in (mi[0].new or "")


# --- robustness ---------------------------------------------------------------------------------


def test_unparsable_run_py_is_skipped_not_fatal(tmp_path):
    runners = {**DEFAULT_RUNNERS, "tpu": "linux.google.tpu.v7x.1"}
    path, shas = _repo(
        tmp_path,
        {RUN_PY_PATH: "KERNEL_MAPPINGS = {\n  'sum': (  # unterminated\n", DISPATCH_PATH: render_dispatch_yml(KERNELS, runners)},
    )
    assert _kinds(repo_fact_changes(path, shas[0], shas[-1], "tpu", "sum")) == ["runner_label"]


def test_unparsable_yaml_is_skipped(tmp_path):
    path, shas = _repo(tmp_path, {DISPATCH_PATH: "jobs: [unclosed\n  : : :\n", RUN_PY_PATH: render_run_py({**MAPPINGS, "sum": {"num_inputs": 2}})})
    assert _kinds(repo_fact_changes(path, shas[0], shas[-1], "h100", "sum")) == ["num_inputs"]


def test_run_py_is_parsed_never_executed(tmp_path):
    marker = tmp_path / "PWNED"
    evil = (
        f"import os\nos.system('touch {marker}')\nopen({str(marker)!r}, 'w').write('x')\n"
        "def helper():\n    return {'remove_flags': ['--cudagraph']}\n"
        "KERNEL_MAPPINGS = {\n"
        "    'sum': ('tritonbench.operators.sum.operator', 'examples.sum', 'sum_tritonbench',\n"
        "            {'remove_flags': ['--cudagraph']}),\n"
        "    'rms_norm': ('m', 'examples.rms_norm', 'f', helper()),\n"
        f"    'softmax': __import__('os').system('touch {marker}'),\n"
        "}\n"
    )
    path, shas = _repo(tmp_path, {RUN_PY_PATH: evil})
    facts = repo_fact_changes(path, shas[0], shas[-1], "h100", "sum")
    assert _kinds(facts) == ["cudagraph_flag"]
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "rms_norm") == []  # non-literal entry skipped
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "softmax") == []
    assert not marker.exists()


def test_missing_files_give_no_facts(tmp_path):
    path, shas = _repo(tmp_path, {RUN_PY_PATH: None, DISPATCH_PATH: None})
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "sum") == []
    path2, shas2 = _repo(tmp_path / "b", {"README.md": "x\n"}, base={"README.md": "a\n"})
    assert repo_fact_changes(path2, shas2[0], shas2[-1], "h100", "sum") == []


def test_kernel_missing_from_mappings_gives_no_run_py_fact(tmp_path):
    path, shas = _repo(tmp_path, {RUN_PY_PATH: render_run_py({k: v for k, v in MAPPINGS.items() if k != "rope"})})
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "rope") == []


def test_no_repo_missing_sha_and_same_ends(tmp_path):
    assert repo_fact_changes(None, "a" * 40, "b" * 40, "h100", "sum") == []
    path, shas = _repo(tmp_path, {RUN_PY_PATH: render_run_py({**MAPPINGS, "sum": {"num_inputs": 2}})})
    assert repo_fact_changes(path, shas[0], "c" * 40, "h100", "sum") == []
    assert repo_fact_changes(path, shas[-1], shas[-1], "h100", "sum") == []
    assert repo_fact_changes(tmp_path / "nowhere", shas[0], shas[-1], "h100", "sum") == []


def test_invalid_sha_is_refused_before_git(tmp_path, monkeypatch):
    path, shas = _repo(tmp_path, {})

    def boom(*a, **k):
        raise AssertionError("git ran")

    monkeypatch.setattr(git.subprocess, "run", boom)
    with pytest.raises(BenchwatchError):
        repo_fact_changes(path, "abc; rm -rf /", shas[-1], "h100", "sum")


def test_yaml_alias_bombs_and_cycles_do_not_hang(tmp_path):
    levels = ["a0: &a0 [{alias: b200, runner: linux.dgx.b200}, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    bomb = "name: Benchmark\njobs:\n  bench:\n" + "".join(f"    {line}\n" for line in levels)
    cyclic = "name: Benchmark\njobs:\n  bench: &j\n    again: [*j]\n    with: {alias: b200, runner: linux.dgx.b200}\n"
    path, shas = _repo(
        tmp_path,
        {".github/workflows/benchmark_bomb.yml": bomb.replace("linux.dgx.b200}", "linux.dgx.b200.x}", 1),
         ".github/workflows/benchmark_cycle.yml": cyclic},
        base={**_files(), ".github/workflows/benchmark_bomb.yml": bomb, ".github/workflows/benchmark_cycle.yml": cyclic},
    )
    import time

    t = time.perf_counter()
    facts = repo_fact_changes(path, shas[0], shas[-1], "b200", "sum")
    assert time.perf_counter() - t < 10
    assert all(f.kind in ("runner_label", "toolchain") for f in facts)


_TPU = '''import torch

def _exp_shapes(num_shapes=None):
    return [("a", (1024,))]

def _welford_baseline(x):
    return torch.var_mean(x)

def _welford_shapes(num_shapes=None):
    return [("b", (262144, 1024))]

KERNEL_MAPPINGS: dict = {
    "exp": ("exp", "exp", torch.exp, _exp_shapes, None),
    "welford": ("welford", "welford", _welford_baseline, _welford_shapes, None),
}
'''


def test_tpu_entries_name_their_shape_and_baseline_functions(tmp_path):
    """run_tpu.py's table is code, not a literal: a kernel's fact comes from the functions its
    entry names, and a change to another kernel's functions is not its fact."""
    tpu = "benchmarks/run_tpu.py"
    fixed = _TPU.replace("torch.var_mean(x)", "torch.var_mean(x, correction=0)")
    path, shas = _repo(tmp_path, {tpu: fixed}, {tpu: fixed.replace("(262144, 1024)", "(131072, 2048)")},
                       base={**_files(), tpu: _TPU})
    baseline = repo_fact_changes(path, shas[1], shas[2], "tpu", "welford")
    assert [(f.kind, f.kernels) for f in baseline] == [("baseline_impl", ("welford",))]
    assert "_welford_baseline" in baseline[0].detail
    shapes = repo_fact_changes(path, shas[2], shas[3], "tpu", "welford")
    assert [(f.kind, f.kernels) for f in shapes] == [("num_inputs", ("welford",))]
    assert "_welford_shapes" in shapes[0].detail
    assert repo_fact_changes(path, shas[0], shas[-1], "tpu", "exp") == []
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "welford") == []  # run_tpu.py is the TPU's


def test_a_renamed_baseline_column_is_a_baseline_change(tmp_path):
    """run.py's KERNEL_METRIC_MAPPINGS says which tritonbench column every speedup divides."""
    table = ('\nKERNEL_METRIC_MAPPINGS = {\n    "sum": {"torch_sum": "baseline", "helion_sum_tritonbench-speedup":'
             ' "helion_speedup"},\n    "softmax": {"torch_softmax": "baseline"},\n}\n')
    base = _files()
    changed = {RUN_PY_PATH: base[RUN_PY_PATH] + table.replace("torch_sum", "torch_sum_fp32")}
    path, shas = _repo(tmp_path, changed, base={**base, RUN_PY_PATH: base[RUN_PY_PATH] + table})
    facts = repo_fact_changes(path, shas[0], shas[-1], "h100", "sum")
    assert [(f.kind, f.old, f.new) for f in facts] == [("baseline_impl", "torch_sum", "torch_sum_fp32")]
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "softmax") == []


def test_tritonbench_arguments_other_than_inputs_and_timer(tmp_path):
    """A kernel's --baseline argument is what its speedups divide (a baseline change); any other
    argument changes what runs (its inputs): both are facts of that kernel only."""
    path, shas = _repo(tmp_path, _files({**MAPPINGS, "sum": {**MAPPINGS.get("sum", {}), "baseline": "liger"}}),
                       _files({**MAPPINGS, "sum": {**MAPPINGS.get("sum", {}), "baseline": "liger", "non_square": ""}}))
    first = repo_fact_changes(path, shas[1], shas[2], "h100", "sum")
    assert [(f.kind, f.new) for f in first] == [("baseline_impl", "'liger'")]
    second = repo_fact_changes(path, shas[2], shas[3], "h100", "sum")
    assert [f.kind for f in second] == ["bench_args"] and "non_square" in second[0].detail
    assert repo_fact_changes(path, shas[0], shas[-1], "h100", "softmax") == []


def test_bench_invocations_reads_each_run_py_call_of_a_step():
    from service.culprit.facts import bench_invocations

    step = ("python benchmarks/run.py --list-kernels-for-benchmark-ci\n"
            "${{ inputs.env-vars }} python benchmarks/run.py \\\n    --op $kernel \\\n"
            "    --metrics speedup,accuracy --num-inputs=20 \\\n    --helion-backend \"${{ inputs.backend }}\" \\\n"
            "    --atol 1e-2 --cudagraph\n"
            "echo done\npython3 benchmarks/run.py --only helion,triton\n")
    assert bench_invocations(step) == ["run.py --metrics speedup,accuracy --num-inputs 20",
                                       "run.py --only helion,triton"]
    assert bench_invocations("python -m benchmarks.run_linattn --shapes all") == []


@pytest.mark.parametrize("text, want", [
    ("X = 1\nKERNEL_MAPPINGS = {'a': ('m', 'f', {'num_inputs': 2})}\n", {"a": ("m", "f", {"num_inputs": 2})}),
    # a closing brace at column 0 inside the table: the first candidate does not parse, the next does
    ("KERNEL_MAPPINGS: dict[str, tuple] = {\n    'a': ('m', 'f', {\n'num_inputs': 1,\n}),\n    'b': ('m', 'g'),\n}\n"
     "def f():\n    pass\n", {"a": ("m", "f", {"num_inputs": 1}), "b": ("m", "g")}),
    # the first top-level assignment is the one believed, as when the whole file is parsed
    ("KERNEL_MAPPINGS = {'a': ('m',)}\nKERNEL_MAPPINGS = {'b': ('m',)}\n", {"a": ("m",)}),
    # a comparison is not an assignment; no table at all is None
    ("if KERNEL_MAPPINGS == {}:\n    pass\n", None),
    ("x = 1\n", None),
    # its closing brace indented: no end found alone, the whole file is parsed
    ("KERNEL_MAPPINGS = {\n    'a': ('m',),\n    }\n", {"a": ("m",)}),
    # built by a call, not a literal: not a table
    ("KERNEL_MAPPINGS = dict(a=1)\n", None),
])
def test_kernel_mappings_of_odd_layouts(text, want):
    assert kernel_mappings(text) == want


def test_workflow_callers_name_the_platform_of_each_calling_job():
    """Who runs a reusable workflow: the alias of each `uses:` job (with its backend, a known
    platform's own job such as tpu_bridge as that platform); a job whose alias is an expression
    could be any platform, and a job that calls nothing local is no caller."""
    from service.culprit.facts import workflow_callers
    from service.culprit.rules import load_rules

    doc = yaml.safe_load("""
jobs:
  run-h100: {uses: ./.github/workflows/benchmark.yml, with: {alias: h100}}
  run-cute: {uses: ./.github/workflows/benchmark.yml, with: {alias: b200, backend: cute}}
  run-tpu: {uses: ./.github/workflows/benchmark_tpu.yml, with: {alias: tpu}}
  run-bridge: {uses: ./.github/workflows/benchmark_tpu.yml, with: {alias: tpu_bridge}}
  run-matrix: {uses: ./.github/workflows/benchmark_other.yml, with: {alias: "${{ matrix.alias }}"}}
  remote: {uses: pytorch/test-infra/.github/workflows/linux_job.yml@main, with: {alias: mi350x}}
  notes: {runs-on: ubuntu-latest, steps: [{run: echo hi}]}
  broken: 3
""")
    got = workflow_callers({"d.yml": doc}, load_rules())
    assert got == {".github/workflows/benchmark.yml": {"h100", "b200_cute"},
                   ".github/workflows/benchmark_tpu.yml": {"tpu"},
                   ".github/workflows/benchmark_other.yml": {None}}


def test_a_toolchain_pin_file_read_at_both_ends():
    """A pin file's one value; in a composite action, the runtime's pins are the machine's and a
    torch pin the baselines'; a file missing at an end or unchanged says nothing."""
    from service.culprit.facts import toolchain_file_facts

    txt = ".github/ci_commit_pins/torch_tpu.txt"
    (f,) = toolchain_file_facts(txt, "# pin\nabc123\n", "def456\n", "tpu")
    assert (f.kind, f.suggests, f.old, f.new) == ("toolchain_pin", "hardware", "abc123", "def456")
    assert toolchain_file_facts(txt, "abc123\n", "abc123", "tpu") == []
    assert toolchain_file_facts(txt, None, "abc123", "tpu") == []
    action = ".github/actions/build-torch-tpu/action.yml"
    old = "run: uv pip install 'jax==0.11.0' 'libtpu==0.0.45' torch==2.9.0 'tpu-info==0.14.2'"
    new = "run: uv pip install 'jax==0.11.1' 'libtpu==0.0.46' torch==2.10.0 'tpu-info==0.14.2'"
    got = {f.kind: f for f in toolchain_file_facts(action, old, new, "tpu")}
    assert got["toolchain_pin"].old == "jax==0.11.0, libtpu==0.0.45" and got["toolchain_pin"].new == "jax==0.11.1, libtpu==0.0.46"
    assert got["baseline_pin"].suggests == "method_change" and got["baseline_pin"].new == "torch==2.10.0"


def test_only_the_runner_files_and_a_pretuned_kernels_folder_can_hold_a_kernels_own_facts():
    """`Stages.young_changes` skips a window whose files cannot say one kernel's numbers changed:
    run.py (its mappings and metric mappings), the linear-attention and TPU runners, a pretuned
    kernel's folder. Workflows, pins and Helion's code hold platform-wide facts or none."""
    from service.culprit.facts import may_hold_kernel_facts

    assert may_hold_kernel_facts(None)  # the window's files not known: read
    assert may_hold_kernel_facts(frozenset({"helion/x.py", "benchmarks/run.py"}))
    assert may_hold_kernel_facts(frozenset({"pretuned_kernels/nvfp4_gemv/_helion_aot_nvfp4_gemv_cuda_sm100.py"}))
    assert may_hold_kernel_facts(frozenset({"benchmarks/run_tpu.py"}))
    assert may_hold_kernel_facts(frozenset({"benchmarks/run_linattn.py"}))
    assert not may_hold_kernel_facts(frozenset({"helion/_compiler/x.py", ".github/workflows/benchmark.yml",
                                                ".github/ci_commit_pins/torch_tpu.txt", "benchmarks/README.md"}))
    assert not may_hold_kernel_facts(frozenset())
