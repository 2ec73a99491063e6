"""The window's real history: nightly shas and what each commit said the nightly measures.

Why: nightlies must sit on the real first-parent shas (the last commit before each nightly's
time), and every measurement change in the world must be attributable to the exact commit that
made it. So the state (parsed facts) is recomputed at every commit that touches a watched file,
and each nightly and each commit can be asked "what ran, how" without executing anything.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from . import facts as F
from .gitdata import Blobs, first_parent, git, tree_blobs

DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "mi325x": "AMD Instinct MI325X gfx942:sramecc+:xnack-",
          "mi350x": "AMD Instinct MI350X gfx950:sramecc+:xnack-", "tpu": "TPU v7"}
LINATTN_DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200"}
P_COMPUTE = {"h100": "sm90", "b200": "sm100"}


@dataclass
class State:
    """Parsed facts at one sha (shared between commits that touch no watched file)."""
    sha: str
    files: dict = field(default_factory=dict)  # watched path -> blob id
    nightly: tuple = ((), "")
    dispatch: dict = field(default_factory=dict)
    bench: dict = field(default_factory=dict)
    tpu: dict = field(default_factory=dict)
    bridge: dict = field(default_factory=dict)
    runpy: dict = field(default_factory=dict)
    linattn: dict = field(default_factory=dict)
    runtpu: dict = field(default_factory=dict)
    pins: dict = field(default_factory=dict)
    p_nightly: tuple = ((), "")
    p_jobs: dict = field(default_factory=dict)
    p_yml: dict = field(default_factory=dict)
    p_kernels: tuple = ()
    p_info: dict = field(default_factory=dict)  # kernel -> dict(hw, baselines, cudagraph, shapes, aot)
    p_bench: dict = field(default_factory=dict)
    la_aot: dict = field(default_factory=dict)  # sm -> blob id of the linear-attention AOT configs
    dispatch_text: str = ""
    p_dispatch_text: str = ""


def _aot_hw(path: str) -> str | None:
    import re

    m = re.search(r"_cuda_(sm\d+)\.py$", path)
    return {"sm90": "h100", "sm100": "b200"}.get(m.group(1)) if m else None


ROOTS = (".github/workflows", ".github/ci_commit_pins", ".github/actions", "benchmarks/run.py",
         "benchmarks/run_linattn.py", "benchmarks/run_tpu.py", "pretuned_kernels", "examples/linear")


def watched_files(repo: Path, sha: str) -> dict:
    return {p: b for p, b in tree_blobs(repo, sha, *ROOTS).items() if F.is_watched(p)}


def parse_state(repo: Path, blobs: Blobs, sha: str, files: dict | None = None) -> State:
    files = watched_files(repo, sha) if files is None else files

    def text(path):
        b = files.get(path)
        return blobs.read(b) if b else None

    st = State(sha=sha, files=files)
    st.nightly = F.nightly_inputs(text(F.WF + "benchmark_nightly.yml"))
    st.dispatch_text = text(F.WF + "benchmark_dispatch.yml") or ""
    st.dispatch = F.dispatch(st.dispatch_text or None)
    st.bench = F.bench_yml(text(F.WF + "benchmark.yml"))
    st.tpu = F.tpu_yml(text(F.WF + "benchmark_tpu.yml"))
    st.bridge = F.tpu_yml(text(F.WF + "benchmark_tpu_bridge.yml"))
    st.runpy = F.run_py(text("benchmarks/run.py"))
    st.linattn = F.run_linattn(text("benchmarks/run_linattn.py"))
    st.runtpu = F.run_tpu(text("benchmarks/run_tpu.py"))
    st.pins = {k: (text(F.PINS + k + ".txt") or "").strip() for k in ("tritonbench", "nvidia_cutlass_dsl", "torch_tpu")}
    st.pins["tpu_actions"] = "|".join(files.get(p, "") for p in (".github/actions/build-torch-tpu/action.yml",
                                                                  ".github/actions/install-pytorch-for-torchtpu/action.yml"))
    st.p_nightly = F.nightly_inputs(text(F.WF + "benchmark_pretuned_nightly.yml"))
    st.p_dispatch_text = text(F.WF + "benchmark_pretuned_dispatch.yml") or ""
    st.p_jobs = F.dispatch_generic(st.p_dispatch_text or None)
    st.p_yml = F.pretuned_yml(text(F.WF + "benchmark_pretuned.yml"))
    st.p_kernels = F.pretuned_run(text("pretuned_kernels/run.py"))
    st.p_bench = F.pretuned_bench(text("pretuned_kernels/_bench.py"))
    for k in st.p_kernels:
        info = dict(F.pretuned_kernel(text(f"pretuned_kernels/{k}/{k}.py")))
        aot = {}
        for p, b in files.items():
            if p.startswith(f"pretuned_kernels/{k}/_helion_aot_{k}_cuda_sm"):
                hw = _aot_hw(p)
                if hw:
                    aot[hw] = b
        info["aot"] = aot
        info["hw"] = tuple(sorted(aot))
        st.p_info[k] = info
    for p, b in files.items():
        if p.startswith("examples/linear/_helion_aot_"):
            hw = _aot_hw(p)
            if hw:
                st.la_aot[hw] = st.la_aot.get(hw, "") + b
    return st


@dataclass
class History:
    """First-parent commits of the window and the state after each of them."""
    commits: tuple  # every first-parent commit of main
    times: list
    states: dict  # commit idx -> State (only where a watched file changed, plus the start)
    state_idx: list  # sorted keys of states

    def idx_before(self, t: datetime) -> int:
        """Index of the last commit at or before ``t``."""
        return bisect.bisect_right(self.times, t.timestamp()) - 1

    def state_at(self, idx: int) -> State:
        j = bisect.bisect_right(self.state_idx, idx) - 1
        return self.states[self.state_idx[max(j, 0)]]



def load_history(repo: Path, blobs: Blobs, start_idx: int, end_idx: int) -> History:
    """States at the window's first commit and after every commit touching a watched file; the
    blob ids come from one ``git log --raw`` over the window instead of a tree listing per commit."""
    commits = first_parent(str(repo))
    files = watched_files(repo, commits[start_idx].sha)
    states = {start_idx: parse_state(repo, blobs, commits[start_idx].sha, dict(files))}
    raw = git(repo, "log", "--first-parent", "--reverse", "--raw", "--no-abbrev", "--no-renames",
              "--format=%x1e%H", f"{commits[start_idx].sha}..{commits[end_idx].sha}", "--", *ROOTS)
    changes = {}
    for block in raw.split("\x1e")[1:]:
        lines = block.strip().split("\n")
        rows = []
        for ln in lines[1:]:
            if ln.startswith(":") and "\t" in ln:
                meta, path = ln.split("\t", 1)
                parts = meta.split()
                rows.append((path, None if parts[4].startswith("D") else parts[3]))
        changes[lines[0].strip()] = rows
    for c in commits[start_idx + 1:end_idx + 1]:
        touched = [(p, b) for p, b in changes.get(c.sha, ()) if F.is_watched(p)]
        if not touched:
            continue
        for p, b in touched:
            if b is None:
                files.pop(p, None)
            else:
                files[p] = b
        states[c.idx] = parse_state(repo, blobs, c.sha, dict(files))
    return History(commits, [c.time.timestamp() for c in commits], states, sorted(states))
