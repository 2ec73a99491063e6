"""Facts read from Helion's repo files at both ends of a window: did the method or the runner change?

Files are read with ``git show sha:path`` and *parsed* (``ast`` for ``benchmarks/run.py``,
YAML for workflows), never imported or executed: the clone is outside code. A file that is
missing or does not parse at either end yields no fact for that file (never an exception),
because a missing fact only weakens the evidence while a crash would stop the nightly pass.
"""

from __future__ import annotations

import ast
from functools import lru_cache
import re
from pathlib import Path, PurePosixPath
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Iterable, Iterator

import yaml

from service.culprit import git
from service.culprit import harness_facts as hf
from service.culprit.rules import PlatformRule, SliceRules, load_rules
from service.errors import BenchwatchError
from service.records import FactChange

RUN_PY = "benchmarks/run.py"
DISPATCH = ".github/workflows/benchmark_dispatch.yml"
WORKFLOWS = ".github/workflows"

_RUNNER_KEYS = ("runs-on", "runner", "runner-label", "runner_label")
_TOOLCHAIN_KEYS = (
    "image", "docker-image", "container-image", "runtime-version", "cuda-version", "rocm-version",
    "torch-version", "pytorch-version", "triton-version", "driver-version",
)
_ALIAS_KEYS = ("alias", "platform", "platform_short", "platform-short")
_BACKEND_KEYS = ("backend", "helion-backend", "helion_backend", "HELION_BACKEND")
_PIN_PATTERNS = (
    re.compile(r"\b(?:torch|pytorch|pytorch-triton|triton|jax|libtpu|torch_xla|torch-xla)\s*(?:==|>=|<=|~=)\s*[\w.+-]+"),
    re.compile(r"\bnvidia/cuda:[\w.-]+"),
    re.compile(r"\brocm/[\w.-]+:[\w.-]+"),
    re.compile(r"/whl/(?:nightly/|test/)?(?:cu\d{2,3}|rocm\d+(?:\.\d+)*)\b"),
)


# --- reading ----------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _show(repo: Path, sha: str, path: str) -> str | None:
    """A file at a commit: immutable, so cached (one detect pass asks for the same few files
    at the same few commits for every kernel of a window)."""
    try:
        return git.show_file(repo, sha, path)
    except BenchwatchError:
        return None


# --- benchmarks/run.py ------------------------------------------------------------------------


@lru_cache(maxsize=64)
def kernel_mappings(source: str) -> dict[str, Any] | None:
    """The ``KERNEL_MAPPINGS`` literal of a run.py, or None when it is absent or not parseable.

    Entries that are not literals are skipped one by one rather than losing the whole table.
    """
    value = hf.assignment_of(source, "KERNEL_MAPPINGS")
    if not isinstance(value, ast.Dict):
        return None
    out: dict[str, Any] = {}
    for k, v in zip(value.keys, value.values):
        try:
            key = ast.literal_eval(k) if k is not None else None
            val = ast.literal_eval(v)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(key, str):
            out[key] = val
    return out


def entry_args(entry: Any) -> dict[str, Any]:
    """The args dict of a KERNEL_MAPPINGS entry (its last element when that is a dict)."""
    if isinstance(entry, (tuple, list)) and entry and isinstance(entry[-1], dict):
        return entry[-1]
    return {}


def _drops_cudagraph(args: dict[str, Any]) -> bool:
    flags = args.get("remove_flags") or ()
    return isinstance(flags, (list, tuple)) and "--cudagraph" in flags


def _run_py_facts(old: str | None, new: str | None, kernel: str) -> list[FactChange]:
    if old is None or new is None:
        return []
    before, after = kernel_mappings(old), kernel_mappings(new)
    if before is None or after is None or kernel not in before or kernel not in after:
        return []
    a, b = entry_args(before[kernel]), entry_args(after[kernel])
    out = []
    if _drops_cudagraph(a) != _drops_cudagraph(b):
        now = "no longer CUDA-graph timed (remove_flags --cudagraph added)" if _drops_cudagraph(b) else (
            "CUDA-graph timed again (remove_flags --cudagraph removed)"
        )
        out.append(FactChange(
            kind="cudagraph_flag", detail=f"{RUN_PY}: {kernel} speedup is {now}", suggests="method_change",
            path=RUN_PY, old="no cudagraph" if _drops_cudagraph(a) else "cudagraph",
            new="no cudagraph" if _drops_cudagraph(b) else "cudagraph", kernels=(kernel,),
        ))
    if a.get("num_inputs") != b.get("num_inputs"):
        old_n = "default" if a.get("num_inputs") is None else str(a.get("num_inputs"))
        new_n = "default" if b.get("num_inputs") is None else str(b.get("num_inputs"))
        out.append(FactChange(
            kind="num_inputs", detail=f"{RUN_PY}: {kernel} num_inputs {old_n} -> {new_n} (different input shapes)",
            suggests="method_change", path=RUN_PY, old=old_n, new=new_n, kernels=(kernel,),
        ))
    if a.get("baseline") != b.get("baseline"):  # tritonbench's --baseline: what every speedup divides
        out.append(FactChange(
            kind="baseline_impl", detail=f"{RUN_PY}: {kernel} baseline {_arg(a, 'baseline')} -> {_arg(b, 'baseline')}",
            suggests="method_change", path=RUN_PY, old=_arg(a, "baseline"), new=_arg(b, "baseline"), kernels=(kernel,),
        ))
    other = sorted(k for k in set(a) | set(b)
                   if k not in ("remove_flags", "num_inputs", "baseline") and a.get(k) != b.get(k))
    same_target = _entry_target(before[kernel]) == _entry_target(after[kernel])
    if other or not same_target:
        what = ", ".join(f"{k} {_arg(a, k)} -> {_arg(b, k)}" for k in other) if other else (
            f"the entry (operator, Helion module, function) {' '.join(_entry_target(before[kernel]))} -> "
            f"{' '.join(_entry_target(after[kernel]))}")
        out.append(FactChange(
            kind="bench_args", detail=f"{RUN_PY}: {kernel} benchmark arguments changed: {what}",
            suggests="method_change", path=RUN_PY, old="before", new="after", kernels=(kernel,),
        ))
    out += _metric_mapping_facts(old, new, kernel)
    return out


def _entry_target(entry: Any) -> tuple[str, ...]:
    """The tritonbench operator and Helion module/function of a KERNEL_MAPPINGS entry."""
    if not isinstance(entry, (tuple, list)):
        return ()
    return tuple(str(x) for x in entry if isinstance(x, str))


def _arg(args: dict[str, Any], key: str) -> str:
    return "(unset)" if key not in args else repr(args[key])[:40]


def _metric_mapping_facts(old: str, new: str, kernel: str) -> list[FactChange]:
    """``KERNEL_METRIC_MAPPINGS[kernel]`` names the tritonbench columns each dashboard metric is
    read from: the one mapped to "baseline" is the implementation every speedup divides, and the
    one mapped to "helion_speedup" is the Helion variant measured. Either renamed is a method change."""
    a = (hf.literal_of(old, "KERNEL_METRIC_MAPPINGS") or {}).get(kernel)
    b = (hf.literal_of(new, "KERNEL_METRIC_MAPPINGS") or {}).get(kernel)
    if not isinstance(a, dict) or not isinstance(b, dict):
        return []

    def source_of(m: dict, metric: str) -> str | None:
        return next((str(k) for k, v in m.items() if v == metric), None)

    out = []
    for metric, kind, words in (("baseline", "baseline_impl", "the baseline every speedup divides"),
                                ("helion_speedup", "bench_args", "the Helion variant measured")):
        x, y = source_of(a, metric), source_of(b, metric)
        if x != y and x is not None and y is not None:
            out.append(FactChange(
                kind=kind, detail=f"{RUN_PY}: {kernel} {words} changed: {x} -> {y}", suggests="method_change",
                path=RUN_PY, old=x, new=y, kernels=(kernel,),
            ))
    return out


# --- workflows --------------------------------------------------------------------------------


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x the pure-Python parser


@lru_cache(maxsize=256)
def _load_yaml(text: str | None) -> Any:
    """Parsed workflow text, cached by content; callers only read the result."""
    if text is None:
        return None
    try:
        return yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return None


def dispatch_kernel_defaults(doc: Any) -> dict[str, set[str]]:
    """``kernels*`` input name -> kernels in its ``default:`` string (workflow_dispatch/call inputs)."""
    if not isinstance(doc, dict):
        return {}
    on = doc.get("on", doc.get(True))  # PyYAML reads a bare `on:` key as the boolean True
    out: dict[str, set[str]] = {}
    if not isinstance(on, dict):
        return out
    for trigger in ("workflow_dispatch", "workflow_call"):
        spec = on.get(trigger)
        inputs = spec.get("inputs") if isinstance(spec, dict) else None
        if not isinstance(inputs, dict):
            continue
        for name, body in inputs.items():
            if isinstance(name, str) and name.startswith("kernels") and isinstance(body, dict):
                default = body.get("default")
                if isinstance(default, str) and name not in out:
                    out[name] = {k.strip() for k in default.split(",") if k.strip()}
    return out


def _platform_kernels(defaults: dict[str, set[str]], inputs: tuple[str, ...]) -> set[str] | None:
    names = [n for n in inputs if n in defaults]
    if not names:
        return None
    return set().union(*(defaults[n] for n in names))


def _dispatch_facts(old: str | None, new: str | None, platform: str, kernel: str,
                    kernel_inputs: tuple[str, ...]) -> list[FactChange]:
    before = _platform_kernels(dispatch_kernel_defaults(_load_yaml(old)), kernel_inputs)
    after = _platform_kernels(dispatch_kernel_defaults(_load_yaml(new)), kernel_inputs)
    if before is None or after is None:
        return []
    inputs = "/".join(kernel_inputs)
    if kernel in before and kernel not in after:
        return [FactChange(
            kind="kernel_dropped", detail=f"{DISPATCH}: {platform} no longer runs {kernel} (removed from {inputs} default)",
            suggests="method_change", path=DISPATCH, old="runs", new="not run", kernels=(kernel,),
        )]
    if kernel not in before and kernel in after:
        return [FactChange(
            kind="kernel_added", detail=f"{DISPATCH}: {platform} now runs {kernel} (added to {inputs} default)",
            suggests="method_change", path=DISPATCH, old="not run", new="runs", kernels=(kernel,),
        )]
    return []


def _scalar(v: Any) -> str | None:
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        s = str(v).strip()
        return None if not s or "${{" in s else s
    if isinstance(v, list):
        parts = [p for p in (_scalar(x) for x in v) if p]
        return ",".join(parts) if parts and len(parts) == len(v) else None
    return None


def _platform_of(mapping: dict, inherited: str | None) -> str | None:
    alias = next((_scalar(mapping[k]) for k in _ALIAS_KEYS if k in mapping and _scalar(mapping[k])), None)
    env = mapping.get("env") if isinstance(mapping.get("env"), dict) else {}
    backend = next(
        (_scalar(src[k]) for src in (mapping, env) for k in _BACKEND_KEYS if k in src and _scalar(src[k])), None
    )
    if alias is None:
        return inherited
    alias = alias.lower()
    if backend and backend.lower() not in ("triton", "") and not alias.endswith(f"_{backend.lower()}"):
        alias = f"{alias}_{backend.lower()}"
    return alias


_MAX_DEPTH = 40  # real workflows nest < 10 deep
_MAX_NODES = 50_000  # YAML aliases can make a small file a huge (or cyclic) tree: stop walking early


def _walk(
    node: Any, platform: str | None, depth: int = 0, budget: list[int] | None = None,
    suite_of: Callable[[dict], str | None] | None = None, suite: str | None = None,
) -> Iterator[tuple[str | None, str | None, str, Any]]:
    """Yield (platform or None, suite or None, key, value) for every keyed leaf of a workflow tree.

    The platform comes from the nearest enclosing mapping with an ``alias`` (plus ``backend``),
    so matrix ``include`` entries and reusable-workflow ``with:`` blocks are both understood;
    the suite from the nearest mapping (a step) that ``suite_of`` gives one.
    """
    budget = budget if budget is not None else [_MAX_NODES]
    budget[0] -= 1
    if depth > _MAX_DEPTH or budget[0] < 0:
        return
    if isinstance(node, dict):
        here = _platform_of(node, platform)
        mine = (suite_of(node) if suite_of is not None else None) or suite
        for k, v in node.items():
            if isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v)):
                yield from _walk(v, here, depth + 1, budget, suite_of, mine)
            elif isinstance(k, str):
                yield here, mine, k, v
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, platform, depth + 1, budget, suite_of, suite)


def _label_platforms(value: str, rules: SliceRules) -> set[str]:
    """Platforms whose device hints are a part of a runner label (linux.dgx.b200 -> b200, b200_cute)."""
    parts = {p for p in re.split(r"[.\-_,\s/:]+", value.lower()) if p}
    return {name for name, pr in rules.platforms.items() if parts & set(pr.hints)}


def _family_applies(pin: str, platform: str) -> bool:
    """Does a pin found outside any platform's job apply to ``platform``? (CUDA/ROCm/TPU families)."""
    low = pin.lower()
    nvidia = "cuda" in low or re.search(r"(?:/|\b)cu\d{2,3}\b", low) is not None
    amd = "rocm" in low
    tpu = any(w in low for w in ("jax", "libtpu", "xla"))
    if not (nvidia or amd or tpu):
        return True
    return (
        (platform in ("h100", "b200", "b200_cute") and nvidia)
        or (platform == "mi350x" and amd)
        or (platform == "tpu" and tpu)
    )


# torch and triton define the baselines (eager, torch.compile, triton): a pin change is a method
# change. The accelerator's own runtime (jax/libtpu/torch_xla, CUDA/ROCm images) is the machine's
# toolchain: a hardware change for that platform.
_BASELINE_PIN = re.compile(r"\b(?:torch|pytorch|pytorch-triton|triton)\s*(?:==|>=|<=|~=)\s*[\w.*+-]+")
_RUNTIME_PIN = re.compile(r"\b(?:jax|jaxlib|libtpu|libtpu-nightly|torch_xla|torch-xla)\s*(?:==|>=|<=|~=)\s*[\w.*+-]+")
_BASELINE_KEYS = ("torch-version", "pytorch-version", "triton-version")
_TIMER_FLAG = re.compile(r"--latency-measure-mode[= ]+[\w-]+|--cudagraph\b|--measure-compile-time\b")


def _tunes(name: str) -> bool:
    """An autotune knob that changes which config Helion runs: not the log ones
    (HELION_AUTOTUNE_LOG_LEVEL, _LOG_DETAILS: 863a7cbf, 875b3acb)."""
    return name.startswith("HELION_AUTOTUNE") and not name.startswith("HELION_AUTOTUNE_LOG")


# the same knobs set inside a string: the nightly's `env_vars: 'HELION_AUTOTUNE_RANDOM_SEED=123456'`
# (27b93292) or a command's env prefix, which no YAML key shows
_AUTOTUNE_ASSIGN = re.compile(r"\b(HELION_AUTOTUNE_[A-Z0-9_]+)=([^\s'\",;()]+)")
# One `python benchmarks/run.py` invocation of a workflow step: the options that decide what it
# measures (which shapes, implementations, metrics and backend). The timer flags are their own
# fact; output, listing and tolerance options change nothing measured.
_RUN_PY_CALL = re.compile(r"python3?\s+benchmarks/run\.py\b((?:\\\n|[^\n])*)")
_EXPR = "<input>"
_MEASURING_OPTIONS = ("--metrics", "--input-sample-mode", "--num-inputs", "--only", "--only-match-mode",
                      "--baseline", "--helion-backend")


def bench_invocations(text: str) -> list[str]:
    """Each run.py invocation in a workflow string, as the measuring options it passes (in a
    fixed order, ``${{ }}`` expressions dropped). ea484a38 ran each kernel twice (autotune, then
    a cached, recorded run) and then once: the set of invocations changed, no flag did."""
    out = []
    for m in _RUN_PY_CALL.finditer(text):
        args = re.sub(r"[\"']?\$\{\{.*?\}\}[\"']?", f" {_EXPR} ", m.group(1).replace("\\\n", " ")).split()
        if any(a.startswith("--list-") for a in args):
            continue  # asks run.py which kernels/implementations to run: measures nothing
        opts = []
        for i, a in enumerate(args):
            name, _, val = a.partition("=")
            if name in _MEASURING_OPTIONS:
                if not val and i + 1 < len(args) and not args[i + 1].startswith("--"):
                    val = args[i + 1]
                if val != _EXPR:  # a workflow input's value (a0fae23b's backend) is not in the file
                    opts.append(f"{name} {val}".strip())
        out.append("run.py " + " ".join(sorted(opts)))
    return out


_SUITE_IS = re.compile(r"suite\s*==\s*['\"]([^'\"]+)['\"]")


def _suite_of_step(node: dict, rules: SliceRules) -> str | None:
    """The suite (`rules.suites`) a workflow step belongs to, when it has a job of its own: the
    step runs one of the suite's harness files (by path or as a module: `python -m
    benchmarks.run_linattn`), or runs only for it (``if: inputs.suite == 'linattn'``, a word
    of the suite). What such a step sets (e848ca15's torch pin for FLA, 70ec581a's AOT cache)
    is how that suite is measured, not the platform's other kernels."""
    run, cond = node.get("run"), node.get("if")
    for name, suite in rules.suites.items():
        if isinstance(run, str):
            for path in suite.paths:
                if path in run or path.removesuffix(".py").replace("/", ".") in run:
                    return name
        if isinstance(cond, str):
            named = {m.lower() for m in _SUITE_IS.findall(cond)}
            if named & set(suite.words):
                return name
    return None


# (workflow path, suite or None): the key of every table of settings; a suite's own steps are
# kept apart from the platform's (`_suite_of_step`)
Where = tuple[str, str | None]


@dataclass
class WorkflowSettings:
    """What the benchmark workflows say about one platform, keyed by (workflow path, suite).

    runners/tools describe the machine (hardware); pins, tuning and timers describe how the
    numbers are measured (the method): torch/triton pins define the baselines, HELION_AUTOTUNE_*
    which config Helion runs, and the command's timer flags which clock is read. The method's
    tables are kept per suite where a step runs only for one (its own job's kernels).
    """

    runners: dict[Where, set[str]] = field(default_factory=dict)
    tools: dict[Where, set[str]] = field(default_factory=dict)
    pins: dict[Where, set[str]] = field(default_factory=dict)
    tuning: dict[Where, set[str]] = field(default_factory=dict)
    timers: dict[Where, set[str]] = field(default_factory=dict)
    commands: dict[Where, set[str]] = field(default_factory=dict)  # run.py invocations (`bench_invocations`)


def _add(table: dict[Where, set[str]], where: Where, value: str) -> None:
    table.setdefault(where, set()).add(value)


def _workflow_settings(docs: dict[str, Any], platform: str, rules: SliceRules) -> WorkflowSettings:
    """Runner labels, toolchain values, pins, autotune settings and timer flags for ``platform``."""
    out = WorkflowSettings()
    by_len = sorted(rules.platforms, key=len, reverse=True)
    for path, doc in docs.items():
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        if not isinstance(jobs, dict):
            continue
        for job_name, job in jobs.items():
            if not isinstance(job, dict):
                continue
            jn = str(job_name).lower().replace("-", "_")
            job_platform = next((p for p in by_len if jn.endswith(p)), None)
            for plat, suite, key, value in _walk(job, job_platform, suite_of=lambda n: _suite_of_step(n, rules)):
                mine = plat is None or plat == platform
                at: Where = (path, suite)
                if isinstance(key, str) and key.startswith("HELION_AUTOTUNE"):
                    if not _tunes(key):
                        continue
                    text = _scalar(value)
                    if mine and text is not None:
                        _add(out.tuning, at, f"{key}={text}")
                    continue
                if key in _BASELINE_KEYS:
                    text = _scalar(value)
                    if mine and text:
                        _add(out.pins, at, f"{key}: {text}")
                    continue
                if key in _RUNNER_KEYS or key in _TOOLCHAIN_KEYS or key == "container":
                    text = _scalar(value)
                    if not text:
                        continue
                    if key in _RUNNER_KEYS:
                        targets = {plat} if plat else _label_platforms(text, rules)
                        if platform in targets:
                            _add(out.runners, (path, None), text)
                        continue
                    name = "image" if key == "container" else key
                    if (plat == platform) or (plat is None and _family_applies(text, platform)):
                        _add(out.tools, (path, None), f"{name}: {text}")
                    continue
                if not isinstance(value, str) or not mine:
                    continue
                for m in _TIMER_FLAG.finditer(value):
                    _add(out.timers, at, " ".join(m.group(0).split()))
                # the same knobs set inside a string (a command's env prefix, the nightly's env_vars)
                for m in _AUTOTUNE_ASSIGN.finditer(value):
                    if _tunes(m.group(1)):
                        _add(out.tuning, at, f"{m.group(1)}={m.group(2)}")
                calls = bench_invocations(value)
                for n, call in enumerate(calls):  # two identical calls are two runs of each kernel
                    _add(out.commands, at, call if n == 0 or call not in calls[:n] else f"{call} (again)")
                for m in _BASELINE_PIN.finditer(value):
                    pin = m.group(0)
                    if plat == platform or _family_applies(pin, platform):
                        _add(out.pins, at, pin)
                for pat in (_RUNTIME_PIN, *_PIN_PATTERNS[1:]):
                    for m in pat.finditer(value):
                        pin = m.group(0)
                        if plat == platform or _family_applies(pin, platform):
                            _add(out.tools, (path, None), pin)
    return out


_FILE_SETTINGS: dict[tuple, WorkflowSettings] = {}


def _file_settings(path: str, text: str, platform: str, rules: SliceRules) -> WorkflowSettings:
    """One workflow file's settings for a platform, cached by its text: a window's two ends are
    mostly the same versions as its neighbours' (a cold pass reads ~35 windows, a dozen versions)."""
    key = (path, text, platform, id(rules))
    hit = _FILE_SETTINGS.get(key)
    if hit is None:
        if len(_FILE_SETTINGS) > 2048:
            _FILE_SETTINGS.clear()
        hit = _FILE_SETTINGS[key] = _workflow_settings({path: _load_yaml(text)}, platform, rules)
    return hit


def _merged(parts: Iterable[WorkflowSettings]) -> WorkflowSettings:
    """Per-file settings side by side (each part holds only its own file's entries; read only)."""
    out = WorkflowSettings()
    for part in parts:
        for f in fields(WorkflowSettings):
            getattr(out, f.name).update(getattr(part, f.name))
    return out


@lru_cache(maxsize=128)
def _benchmark_workflows(repo: Path, sha: str, source: str = "dashboard") -> dict[str, str]:
    """The benchmark workflow files of one source's nightly: the pretuned suite runs only
    `benchmark_pretuned*.yml` (its nightly, dispatch and job), the dashboard every other
    `benchmark*.yml`. A torch pin in the pretuned job is not the dashboard's baseline."""
    try:
        names = git.list_dir(repo, sha, WORKFLOWS)
    except BenchwatchError:
        return {}
    out = {}
    for path in names:
        name = PurePosixPath(path).name
        if not (name.startswith("benchmark") and name.endswith((".yml", ".yaml"))):
            continue
        if name.startswith("benchmark_pretuned") != (source == "pretuned"):
            continue
        text = _show(repo, sha, path)
        if text is not None:
            out[path] = text
    return out


def workflow_callers(docs: dict[str, Any], rules: SliceRules) -> dict[str, set[str | None]]:
    """Reusable workflow path -> the platforms of the jobs that call it (``uses: ./...`` with
    ``with: alias:``); None for a caller whose platform the file does not write (a matrix
    expression). benchmark_dispatch.yml runs h100/b200/mi350x through benchmark.yml and tpu
    through benchmark_tpu.yml: the TPU job's pins are not H100's."""
    out: dict[str, set[str | None]] = {}
    for doc in docs.values():
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        if not isinstance(jobs, dict):
            continue
        for job in jobs.values():
            uses = job.get("uses") if isinstance(job, dict) else None
            if not isinstance(uses, str) or not uses.startswith("./"):
                continue
            with_ = job.get("with")
            alias = _platform_of(with_, None) if isinstance(with_, dict) else None
            out.setdefault(uses[2:].split("@")[0], set()).add(_known_platform(alias, rules))
    return out


def _known_platform(alias: str | None, rules: SliceRules) -> str | None:
    """A caller's alias as one of the platforms (``tpu_bridge`` runs for tpu), or None."""
    if alias is None or alias in rules.platforms:
        return alias
    return next((p for p in sorted(rules.platforms, key=len, reverse=True) if alias.startswith(f"{p}_")), None)


def _runs_for(path: str, callers: dict[str, set[str | None]], platform: str) -> bool:
    """Does the workflow at ``path`` benchmark ``platform``? A file no job calls is read as before
    (its own jobs say their platforms); a called one only for the platforms that call it."""
    who = callers.get(path)
    return not who or None in who or platform in who


def _fmt(values: set[str]) -> str:
    return ", ".join(sorted(values)) if values else "(none)"


def _workflow_facts(repo: Path, lg: str, fb: str, platform: str, rules: SliceRules,
                    source: str = "dashboard") -> list[FactChange]:
    """Per (window, platform, source), cached: every kernel of a platform's event asks the same."""
    key = (str(repo), lg, fb, platform, id(rules), source)
    if key not in _WORKFLOW_FACTS:
        if len(_WORKFLOW_FACTS) > 4096:
            _WORKFLOW_FACTS.clear()
        _WORKFLOW_FACTS[key] = tuple(_read_workflow_facts(repo, lg, fb, platform, rules, source))
    return list(_WORKFLOW_FACTS[key])


_WORKFLOW_FACTS: dict[tuple, tuple[FactChange, ...]] = {}


def _read_workflow_facts(repo: Path, lg: str, fb: str, platform: str, rules: SliceRules,
                         source: str = "dashboard") -> list[FactChange]:
    texts_old, texts_new = _benchmark_workflows(repo, lg, source), _benchmark_workflows(repo, fb, source)
    docs_old = {p: d for p, t in texts_old.items() if isinstance(d := _load_yaml(t), dict)}
    docs_new = {p: d for p, t in texts_new.items() if isinstance(d := _load_yaml(t), dict)}
    callers = workflow_callers(docs_old, rules)
    for path, who in workflow_callers(docs_new, rules).items():
        callers.setdefault(path, set()).update(who)
    # only files that parse at both ends, and that benchmark this platform at either end, are
    # compared: a broken or new file is no evidence, nor is another platform's job
    common = sorted(p for p in set(docs_old) & set(docs_new) if _runs_for(p, callers, platform))
    old = _merged(_file_settings(p, texts_old[p], platform, rules) for p in common)
    new = _merged(_file_settings(p, texts_new[p], platform, rules) for p in common)
    out: list[FactChange] = []
    for path in common:
        a, b = old.runners.get((path, None), set()), new.runners.get((path, None), set())
        if a != b and a and b:
            out.append(FactChange(
                kind="runner_label", detail=f"{path}: {platform} runner label {_fmt(a)} -> {_fmt(b)}",
                suggests="hardware", path=path, old=_fmt(a), new=_fmt(b),
            ))
    specs = (
        ("toolchain", "hardware", "toolchain", "tools"),
        ("baseline_pin", "method_change", "baseline pins (torch/triton: the baselines)", "pins"),
        ("autotune", "method_change", "autotune settings", "tuning"),
        ("latency_mode", "method_change", "benchmark timer flags", "timers"),
        ("bench_command", "method_change", "benchmark invocations", "commands"),
    )
    for kind, suggests, words, attr in specs:
        tables = getattr(old, attr), getattr(new, attr)
        for path, suite in sorted({w for t in tables for w in t if w[0] in common}, key=lambda w: (w[0], w[1] or "")):
            a, b = tables[0].get((path, suite), set()), tables[1].get((path, suite), set())
            if a != b and (a or b):
                fact = _set_changed(kind, suggests, words if suite is None else f"{suite} suite's {words}",
                                    path, platform, a, b)
                out.append(replace(fact, suite=suite) if suite is not None else fact)
    return out


def _set_changed(kind: str, suggests: str, words: str, path: str, platform: str,
                 a: set[str], b: set[str]) -> FactChange:
    """A fact whose values are a set read from one file: what left it and what came."""
    gone, came = a - b, b - a
    return FactChange(kind=kind, detail=f"{path}: {platform} {words} {_fmt(gone)} -> {_fmt(came)}",
                      suggests=suggests, path=path, old=_fmt(gone), new=_fmt(came))


# --- entry point ------------------------------------------------------------------------------


def repo_fact_changes(
    repo: Path | None, last_good_full: str, first_bad_full: str, platform_short: str, kernel: str,
    rules: SliceRules | None = None, *, source: str = "dashboard", changed_paths: frozenset[str] | None = None,
) -> list[FactChange]:
    """Method/runner facts that differ between the two ends of a window ([] without a clone).

    ``changed_paths`` (every file the window's commits touch, when the window is known) lets a
    reader skip files no commit touched: they are the same at both ends.
    """
    if repo is None:
        return []
    lg, fb = git.validate_sha(last_good_full), git.validate_sha(first_bad_full)
    if lg == fb:
        return []
    if not (_present(repo, lg) and _present(repo, fb)):
        return []
    key = (str(repo), lg, fb, platform_short, kernel, id(rules), source)
    if key not in _FACTS:
        if len(_FACTS) > 8192:
            _FACTS.clear()
        _FACTS[key] = tuple(_fact_changes(repo, lg, fb, platform_short, kernel, rules, source, changed_paths))
    return list(_FACTS[key])


_FACTS: dict[tuple, tuple[FactChange, ...]] = {}  # both ends present: the files there never change


def _present(repo: Path, sha: str) -> bool:
    try:
        return git.has_commit(repo, sha)
    except BenchwatchError:
        return False


# the only files a fact about one kernel's own measurement or configs is read from (run.py and its
# metric mappings, the linear-attention and TPU runners, a pretuned kernel's folder): a window that
# touches none of them holds no such fact, whatever else it changed
KERNEL_FACT_FILES = (RUN_PY, hf.LINATTN, hf.RUN_TPU, hf.PRETUNED_DIR + "/")


def may_hold_kernel_facts(changed: frozenset[str] | None) -> bool:
    """Could a window that touched ``changed`` (None: not known) hold a fact about one kernel's own
    measurement or configs? Lets a caller that wants only those skip reading the rest."""
    return changed is None or any(p.startswith(KERNEL_FACT_FILES) for p in changed)


def _touched(changed: frozenset[str] | None, path: str) -> bool:
    return changed is None or path in changed or any(p.startswith(path) for p in changed if path.endswith("/"))


def _fact_changes(
    repo: Path, lg: str, fb: str, platform_short: str, kernel: str, rules: SliceRules | None,
    source: str = "dashboard", changed: frozenset[str] | None = None,
) -> list[FactChange]:
    try:
        rules = rules or load_rules()
    except BenchwatchError:
        rules = None  # type: ignore[assignment]
    out: list[FactChange] = []

    def pair(path: str) -> tuple[str | None, str | None]:
        return _show(repo, lg, path), _show(repo, fb, path)

    if source == "pretuned":
        out += hf.pretuned_facts(lambda sha, path: _show(repo, sha, path), lg, fb, kernel,
                                 set(changed) if changed is not None else {
                                     hf.pretuned_kernel_file(kernel), hf.PRETUNED_BENCH},
                                 devices=rules.platform(platform_short).hints if rules is not None else None)
    else:
        if _touched(changed, RUN_PY):
            out += _run_py_facts(*pair(RUN_PY), kernel)
        if _touched(changed, DISPATCH):
            rule = rules.platform(platform_short) if rules is not None else PlatformRule()
            out += _dispatch_facts(*pair(DISPATCH), platform_short, kernel, rule.kernel_inputs)
        if _touched(changed, hf.LINATTN):
            out += hf.linattn_facts(*pair(hf.LINATTN), kernel)
        if platform_short == "tpu" and _touched(changed, hf.RUN_TPU):
            out += hf.tpu_facts(*pair(hf.RUN_TPU), kernel)
        if _touched(changed, hf.TRITONBENCH_PIN):
            out += hf.tritonbench_facts(*pair(hf.TRITONBENCH_PIN))
    if rules is not None and source == "dashboard":
        for path in rules.platform(platform_short).toolchain_files:
            if _touched(changed, path):
                out += toolchain_file_facts(path, *pair(path), platform_short)
    if rules is not None and (changed is None or any(p.startswith(WORKFLOWS + "/benchmark") for p in changed)):
        out += _workflow_facts(repo, lg, fb, platform_short, rules, source)
    return out


_ANY_PIN = re.compile(r"\b[A-Za-z][\w.\[\]-]*\s*==\s*[\w.+-]+")


def toolchain_file_facts(path: str, old: str | None, new: str | None, platform: str) -> list[FactChange]:
    """A platform's own toolchain pin file (`PlatformRule.toolchain_files`) read at both ends.

    A pin file (`.txt`) holds one version or commit: its first non-comment line. Elsewhere (a
    composite action installing the runtime) the ``name==version`` pins count; a torch/triton
    pin among them is the baselines' (a method change), every other one the machine's stack.
    A file missing at either end is no evidence."""
    if old is None or new is None:
        return []

    def values(text: str) -> tuple[set[str], set[str]]:
        if path.endswith(".txt"):
            line = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
            return ({line} if line else set()), set()
        pins = {" ".join(m.group(0).split()) for m in _ANY_PIN.finditer(text)}
        base = {p for p in pins if _BASELINE_PIN.fullmatch(p)}
        return pins - base, base

    (tool_a, base_a), (tool_b, base_b) = values(old), values(new)
    out = []
    for kind, suggests, words, a, b in (("toolchain_pin", "hardware", "toolchain pin", tool_a, tool_b),
                                        ("baseline_pin", "method_change", "baseline pins", base_a, base_b)):
        if a != b and a and b:
            out.append(_set_changed(kind, suggests, words, path, platform, a, b))
    return out
