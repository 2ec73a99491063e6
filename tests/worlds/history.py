"""The Helion git history of a world: real subjects as distractors, planted commits as causes.

Distractors are real first-parent commits of pytorch/helion (subjects and paths from
`shared/datasets/helion-commits`), re-dated into the world's days. Each planted event adds the
commit a person would look for: a slice-tagged code change (real), a harness change to
`benchmarks/run.py` or the pretuned bench (method), a runner-label change (hardware).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from functools import lru_cache

import numpy as np

from tests.gitrepo import CommitSpec
from tests.shared_data import commits_jsonl
from tests.helion_files import (DEFAULT_RUNNERS, DISPATCH_PATH, PRETUNED_DISPATCH_PATH, RUN_PY_PATH,
                                render_dispatch_yml, render_pretuned_dispatch_yml, render_run_py)
from tests.worlds.catalog import (
    CUTE_KERNELS,
    DEVICE_HINT,
    LINATTN_KERNELS,
    NO_CUDAGRAPH,
    SLICE_PATH,
    SLICE_TAG,
    TPU_KERNELS,
    family,
)
from tests.worlds.simulate import Simulation
from tests.worlds.spec import EventSpec, WorldSpec

COMMITS_JSONL = commits_jsonl()
_HARNESS = re.compile(r"^(benchmarks/|\.github/|pretuned_kernels/|docker|Dockerfile|requirements)", re.I)
_TAG = re.compile(r"^\s*\[([^\]]+)\]")
_SLICE_WORDS = {
    "b200_cute": ("cute", "cutedsl"),
    "tpu": ("pallas", "pallas-tpu", "tpu"),
    "mi350x": ("rocm", "amd"),
}
_SKIP_TAGS = {"benchmark", "benchmark ci", "ci", "dashboard", "benchmarks", "pretuned_kernels"}


@lru_cache(maxsize=1)
def _real_commits() -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """(subject, files, tag) of real commits usable as distractors (no harness/runner paths)."""
    out = []
    if not COMMITS_JSONL.exists():
        return tuple(out)
    for line in COMMITS_JSONL.read_text().splitlines():
        row = json.loads(line)
        files = tuple(row["files"])
        if not files or any(_HARNESS.match(f) for f in files):
            continue
        m = _TAG.match(row["subject"])
        tag = m.group(1).lower() if m else ""
        if tag in _SKIP_TAGS:
            continue
        out.append((row["subject"], files[:6], tag))
    return tuple(out)


def _fallback_distractors() -> tuple[tuple[str, tuple[str, ...], str], ...]:
    return (
        ("Fix typo in README", ("README.md",), ""),
        ("[docs] Document hl.tile", ("docs/api.md",), "docs"),
        ("Add test for indexing", ("test/test_indexing.py",), ""),
        ("[Pallas] Support hl.zeros", ("helion/_compiler/pallas/zeros.py",), "pallas"),
        ("[cute] Refactor layout helpers", ("helion/_compiler/cute/layout.py",), "cute"),
    )


def _kernel_inputs(kernels_of: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    main = sorted({k for p in ("h100", "b200", "mi350x") for k in kernels_of.get(p, ())
                   if k not in LINATTN_KERNELS})
    return {
        "kernels": main,
        "kernels_cute": [k for k in CUTE_KERNELS if k in kernels_of.get("b200_cute", ())] or list(CUTE_KERNELS),
        "kernels_tpu": [k for k in TPU_KERNELS[:8] if k in kernels_of.get("tpu", TPU_KERNELS)],
        "kernels_tpu_bridge": [k for k in TPU_KERNELS[8:] if k in kernels_of.get("tpu", TPU_KERNELS)],
        "kernels_linattn": list(LINATTN_KERNELS),
    }


class RepoState:
    """The harness files as they stand; planted method/runner commits edit them."""

    def __init__(self, kernels_of: dict[str, tuple[str, ...]]) -> None:
        all_k = sorted({k for ks in kernels_of.values() for k in ks})
        self.mappings: dict[str, dict] = {
            k: ({"remove_flags": ["--cudagraph"]} if k in NO_CUDAGRAPH else {}) for k in all_k
        }
        self.inputs = _kernel_inputs(kernels_of)
        self.runners = dict(DEFAULT_RUNNERS)
        # the pretuned suite's machines are its own dispatch's (benchmark_pretuned_dispatch.yml)
        self.pretuned_runners = {p: DEFAULT_RUNNERS[p] for p in ("h100", "b200")}
        self.pretuned_bench = "CUDAGRAPH = True\nBASELINES = ['triton', 'torch_compile']\n"

    def files(self) -> dict[str, str]:
        return {
            RUN_PY_PATH: render_run_py(self.mappings),
            DISPATCH_PATH: render_dispatch_yml(self.inputs, self.runners),
            PRETUNED_DISPATCH_PATH: render_pretuned_dispatch_yml(self.pretuned_runners),
            "pretuned_kernels/_bench.py": self.pretuned_bench,
        }


def _planted(ev: EventSpec, state: RepoState, rng: np.random.Generator) -> tuple[str, dict[str, str | None]]:
    """Subject and files of the commit that causes ``ev`` (empty subject: no commit)."""
    k = ev.kernels[0]
    if ev.cause == "real":
        fam = family(k)
        tag = SLICE_TAG[ev.platform_short] if ev.source == "dashboard" else ""
        verb = "Speed up" if ev.magnitude > 0 else "Change"
        subject = f"{tag} {verb} {k} {fam} config selection for {DEVICE_HINT[ev.platform_short]}".strip()
        path = SLICE_PATH[ev.platform_short].format(family=fam)
        return subject, {path: f"# {subject}\nTUNED = {rng.integers(1, 1000)}\n"}
    if ev.cause == "method_change":
        if ev.kind == "cudagraph":
            for kk in ev.kernels:
                state.mappings[kk] = {**state.mappings.get(kk, {}), "remove_flags": ["--cudagraph"]}
            return f"[Benchmark CI] Run {', '.join(ev.kernels)} without --cudagraph", {RUN_PY_PATH: None}
        if ev.kind == "shapes":
            for kk in ev.kernels:
                state.mappings[kk] = {**state.mappings.get(kk, {}), "num_inputs": 6}
            return f"[benchmark] Use larger inputs for {', '.join(ev.kernels)}", {RUN_PY_PATH: None}
        if ev.kind == "baseline":
            for kk in ev.kernels:
                state.mappings[kk] = {**state.mappings.get(kk, {}), "baseline": "liger"}
            return f"[benchmark] Compare {', '.join(ev.kernels)} against the liger baseline", {RUN_PY_PATH: None}
        if ev.kind == "cudagraph_flip":
            state.pretuned_bench = state.pretuned_bench.replace("CUDAGRAPH = True", "CUDAGRAPH = False")
            return "[pretuned_kernels] Time pretuned kernels without CUDA graphs", {"pretuned_kernels/_bench.py": None}
        state.pretuned_bench = state.pretuned_bench.replace("'torch_compile']", "'torch_compile', 'quack']")
        return "[pretuned_kernels] Add quack as a pretuned baseline", {"pretuned_kernels/_bench.py": None}
    if ev.cause == "hardware" and ev.kind == "runner" and ev.source == "pretuned":
        old = state.pretuned_runners.get(ev.platform_short, "linux.gpu")
        state.pretuned_runners[ev.platform_short] = old + ".v2"
        return (f"[CI] Move pretuned {ev.platform_short} benchmarks to {old}.v2 runners",
                {PRETUNED_DISPATCH_PATH: None})
    if ev.cause == "hardware" and ev.kind == "runner":
        old = state.runners.get(ev.platform_short, "linux.gpu")
        state.runners[ev.platform_short] = old + ".v2"
        if ev.platform_short == "b200":
            state.runners["b200_cute"] = state.runners["b200"]
        return f"[CI] Move {ev.platform_short} benchmarks to {old}.v2 runners", {DISPATCH_PATH: None}
    return "", {}


def plan_commits(
    spec: WorldSpec, sim: Simulation, events: tuple[EventSpec, ...], kernels_of: dict
) -> tuple[list[CommitSpec], list[int], dict[int, int]]:
    """Commits in date order, the index of each nightly's head commit, and event -> commit index."""
    rng = np.random.default_rng(spec.seed + 31)
    pool = _real_commits() or _fallback_distractors()
    state = RepoState(kernels_of)
    first_day = sim.nights[0].date - timedelta(days=1)
    commits = [CommitSpec("Initial benchmark harness", first_day, dict(state.files()))]
    by_night: dict[int, list[EventSpec]] = {}
    for ev in events:
        by_night.setdefault(ev.night, []).append(ev)
    heads: list[int] = []
    planted: dict[int, int] = {}
    for n, night in enumerate(sim.nights):
        lo = (sim.nights[n - 1].date if n else first_day) + timedelta(minutes=30)
        hi = night.date - timedelta(minutes=20)
        blocked = set()
        for ev in by_night.get(n, ()):
            blocked.update(_SLICE_WORDS.get(ev.platform_short, ()))
        todo: list[tuple[str, dict, int | None]] = []
        for _ in range(spec.commits_per_day):
            for _try in range(20):
                subject, files, tag = pool[int(rng.integers(len(pool)))]
                if tag not in blocked:
                    break
            todo.append((subject, {f: None for f in files}, None))
        for ev_i, ev in enumerate(events):
            if ev.night == n:
                subject, files = _planted(ev, state, rng)
                if subject:
                    todo.insert(int(rng.integers(0, len(todo) + 1)), (subject, files, ev_i))
        span = (hi - lo).total_seconds()
        stamps = sorted(rng.uniform(0, span, len(todo)))
        current = state.files()
        for (subject, files, ev_i), sec in zip(todo, stamps):
            content = {
                f: (current[f] if f in current else f"# {subject}\nREV = {len(commits)}\n") for f in files
            }
            commits.append(CommitSpec(subject, lo + timedelta(seconds=float(sec)), content))
            if ev_i is not None:
                planted[ev_i] = len(commits) - 1
        heads.append(len(commits) - 1)
    return commits, heads, planted
