"""Method facts outside run.py and the workflows: linear-attention shapes, TPU mappings, the
tritonbench pin, and the pretuned suite's baselines, timer and checked-in configs.

Each reader compares one file at both ends of a window and says what changed *for the kernel
asked about*; like `facts`, files are parsed (``ast``) and never imported, and a file that is
missing or unreadable at either end yields no fact.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from service.records import FactChange

LINATTN = "benchmarks/run_linattn.py"
RUN_TPU = "benchmarks/run_tpu.py"
TRITONBENCH_PIN = ".github/ci_commit_pins/tritonbench.txt"
PRETUNED_BENCH = "pretuned_kernels/_bench.py"
PRETUNED_DIR = "pretuned_kernels"

Show = Callable[[str, str], "str | None"]  # (sha, path) -> text at that commit, or None


@lru_cache(maxsize=8)
def parse_module(source: str | None) -> ast.Module | None:
    """A Python file's syntax tree, or None when it is missing or unparseable. Each reader of a
    file (its literals, its functions, its kernel table) asks for the same text one after the
    other, so a few trees cached parse every version once; callers only read."""
    if source is None:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


_CLOSERS = ("}", ")", "]")
_MAX_TRIES = 8


def assignment_of(source: str | None, name: str) -> ast.expr | None:
    """The value of the first module-level ``name = ...`` (or ``name: T = ...``) of a Python file,
    parsed alone: run.py is ~2,300 lines and its ``KERNEL_MAPPINGS`` ~270, and a cold pass reads
    dozens of its versions. The statement runs from its line to the first closing bracket at
    column 0 that ends a parseable assignment of ``name``; when that cannot be found (another
    layout, a name defined twice in odd ways) the whole file is parsed, as before."""
    if source is None:
        return None
    start = re.search(rf"^{re.escape(name)}\s*(?::[^=\n]*)?=(?!=)", source, re.M)
    if start is not None:
        lines = source[start.start():].splitlines(keepends=True)
        for tries, end in enumerate(i for i, line in enumerate(lines) if line.startswith(_CLOSERS) or i == 0):
            if tries >= _MAX_TRIES:
                break
            try:
                tree = ast.parse("".join(lines[:end + 1]))
            except (SyntaxError, ValueError):
                continue
            found = [v for n, v in top_level_assignments(tree) if n == name]
            if len(tree.body) == 1 and found:
                return found[0]
    tree = parse_module(source)
    if tree is None:
        return None
    return next((v for n, v in top_level_assignments(tree) if n == name), None)


@lru_cache(maxsize=256)
def literal_of(source: str | None, name: str) -> Any:
    """The literal value of the first module-level assignment of ``name`` (`assignment_of`),
    None when there is none or it is not a literal. Cached by the file's text."""
    value = assignment_of(source, name)
    if value is None:
        return None
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def top_level_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr | None]]:
    """``NAME = value`` and ``NAME: T = value`` at module level, in order (value None for a bare
    annotation); each reader decides which of several assignments of a name it believes."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            yield node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node.value


@lru_cache(maxsize=256)
def module_literals(source: str | None) -> dict[str, Any]:
    """Top-level ``NAME = <literal>`` assignments of a Python file (unparseable values skipped).
    Cached by the file's text (both ends of many windows are the same file); callers only read."""
    tree = parse_module(source)
    if tree is None:
        return {}
    out: dict[str, Any] = {}
    for name, value in top_level_assignments(tree):
        if value is not None:
            try:
                out[name] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return out


@lru_cache(maxsize=64)
def _functions(source: str | None) -> dict[str, str] | None:
    """Top-level function name -> its normalised source (ast dump: comments and layout ignored).
    Cached by the file's text (every kernel of a pretuned window asks for the same versions);
    callers only read."""
    tree = parse_module(source)
    if tree is None:
        return None
    return {
        n.name: ast.dump(n, include_attributes=False)
        for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def linattn_base(kernel: str) -> str:
    return kernel[:-4] if kernel.endswith("-bwd") else kernel


def linattn_facts(old: str | None, new: str | None, kernel: str) -> list[FactChange]:
    """The linear-attention suite's shape tables changed: every linattn kernel runs new inputs."""
    a, b = module_literals(old), module_literals(new)
    if not a or not b:
        return []
    variants = set(b.get("VARIANTS") or ()) | set(a.get("VARIANTS") or ()) | set(b.get("DENSE_VARIANTS") or ())
    if linattn_base(kernel) not in variants:
        return []
    out = []
    for name in ("SHAPES", "VARLEN_SHAPES"):
        if name in a and name in b and a[name] != b[name]:
            na, nb = len(a[name]), len(b[name])
            out.append(FactChange(
                kind="linattn_shapes",
                detail=f"{LINATTN}: {name} changed ({na} -> {nb} shapes) for the linear-attention kernels",
                suggests="method_change", path=LINATTN, old=str(na), new=str(nb), kernels=(kernel,),
            ))
    return out


@lru_cache(maxsize=64)
def _tpu_table(source: str | None) -> tuple[dict[str, str], dict[str, frozenset[str]], dict[str, str]] | None:
    """run_tpu.py's ``KERNEL_MAPPINGS`` as parsed code, not literals (its entries name the shape
    and baseline functions): per kernel its entry (normalised), the module-level functions it
    names, and every top-level function's body (normalised). None when absent or unparseable."""
    tree, functions = parse_module(source), _functions(source)
    if tree is None or functions is None:
        return None
    for name, value in top_level_assignments(tree):
        if name != "KERNEL_MAPPINGS" or not isinstance(value, ast.Dict):
            continue
        entries: dict[str, str] = {}
        names: dict[str, frozenset[str]] = {}
        for k, v in zip(value.keys, value.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                entries[k.value] = ast.dump(v, include_attributes=False)
                names[k.value] = frozenset(n.id for n in ast.walk(v) if isinstance(n, ast.Name) and n.id in functions)
        return entries, names, functions
    return None


def tpu_facts(old: str | None, new: str | None, kernel: str) -> list[FactChange]:
    """A TPU kernel's benchmark in run_tpu.py changed: its ``KERNEL_MAPPINGS`` entry, or a
    function the entry names (``_<kernel>_shapes``: the inputs; ``_<kernel>_baseline``: what
    Helion is compared with). A change to the harness around them is a harness commit, not this."""
    a, b = _tpu_table(old), _tpu_table(new)
    if a is None or b is None or kernel not in a[0] or kernel not in b[0]:
        return []
    out: list[FactChange] = []
    changed = sorted(n for n in a[1][kernel] | b[1][kernel] if a[2].get(n) != b[2].get(n))
    baselines = [n for n in changed if "baseline" in n]
    inputs = [n for n in changed if n not in baselines]
    if inputs or a[0][kernel] != b[0][kernel]:
        what = f"its inputs ({', '.join(inputs)})" if inputs else "its inputs or options"
        out.append(FactChange(
            kind="num_inputs", detail=f"{RUN_TPU}: the TPU benchmark of {kernel} changed {what}",
            suggests="method_change", path=RUN_TPU, old="before", new="after", kernels=(kernel,),
        ))
    if baselines:
        out.append(FactChange(
            kind="baseline_impl", detail=f"{RUN_TPU}: the baseline {kernel} is compared with changed ({', '.join(baselines)})",
            suggests="method_change", path=RUN_TPU, old="before", new="after", kernels=(kernel,),
        ))
    return out


def tritonbench_facts(old: str | None, new: str | None) -> list[FactChange]:
    """The tritonbench pin defines the eager/torch.compile baselines of every dashboard kernel."""
    if old is None or new is None or old.strip() == new.strip():
        return []
    return [FactChange(
        kind="baseline_pin", detail=f"{TRITONBENCH_PIN}: tritonbench {old.strip()[:12]} -> {new.strip()[:12]} "
        "(the baselines' implementation)", suggests="method_change", path=TRITONBENCH_PIN,
        old=old.strip()[:40], new=new.strip()[:40],
    )]


def pretuned_kernel_file(kernel: str) -> str:
    return f"{PRETUNED_DIR}/{kernel}/{kernel}.py"


_SM = re.compile(r"_(sm_?\d+[a-z]?|gfx\d+)\.py$")


def _for_device(path: str, devices: Iterable[str] | None) -> bool:
    """Is a checked-in config file (`_helion_aot_<k>_cuda_sm90.py`) for one of ``devices``? A
    name without a device, or no devices given, is everyone's."""
    m = _SM.search(path)
    return devices is None or m is None or m.group(1).replace("_", "") in {d.replace("_", "") for d in devices}


def pretuned_facts(show: Show, lg: str, fb: str, kernel: str, changed_paths: set[str],
                   devices: Iterable[str] | None = None) -> list[FactChange]:
    """Pretuned: the kernel's baselines or cudagraph switch, the shared timer, its checked-in configs.

    ``changed_paths`` (files the window's commits touch) keeps this cheap: only files that some
    commit touched are read at both ends. ``devices`` (the platform's device words: sm90 for
    h100) keeps the configs to the platform's own: 52326a08 regenerated silu_mul_fp8's sm90
    configs, which B200 never loads.
    """
    out: list[FactChange] = []
    path = pretuned_kernel_file(kernel)
    if path in changed_paths:
        a, b = _functions(show(lg, path)), _functions(show(fb, path))
        if a is not None and b is not None:
            base = sorted(n for n in set(a) | set(b) if "baseline" in n.lower() and a.get(n) != b.get(n))
            if base:
                out.append(FactChange(
                    kind="pretuned_baseline", detail=f"{path}: {', '.join(base)} changed (what {kernel} is compared "
                    "against)", suggests="method_change", path=path, old="before", new="after", kernels=(kernel,),
                ))
            if a.get("use_cudagraph") != b.get("use_cudagraph"):
                out.append(FactChange(
                    kind="pretuned_cudagraph", detail=f"{path}: use_cudagraph() changed (how {kernel} is timed)",
                    suggests="method_change", path=path, old="before", new="after", kernels=(kernel,),
                ))
    if PRETUNED_BENCH in changed_paths:
        a, b = _functions(show(lg, PRETUNED_BENCH)), _functions(show(fb, PRETUNED_BENCH))
        if a is not None and b is not None and a != b:
            names = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
            out.append(FactChange(
                kind="pretuned_timer", detail=f"{PRETUNED_BENCH}: the pretuned timer changed ({', '.join(names)})",
                suggests="method_change", path=PRETUNED_BENCH, old="before", new="after",
            ))
    prefix = f"{PRETUNED_DIR}/{kernel}/_helion_aot_"
    configs = sorted(p for p in changed_paths if p.startswith(prefix) and _for_device(p, devices))
    if configs:
        out.append(FactChange(
            kind="pretuned_config", detail=f"{kernel}'s checked-in Helion configs were regenerated "
            f"({', '.join(PurePosixPath(p).name for p in configs[:3])})", suggests="real",
            path=configs[0], old="before", new="after", kernels=(kernel,),
        ))
    return out
