"""Small dashboard/pretuned histories with planted health faults, and a git repo whose commits
are the nightlies' shas (its workflow files say which platforms and kernels should run).

Why not tests/worlds: those worlds plant moves; health needs outages, failure streaks, accuracy
failures and matrix changes on exact nightlies, in documents shaped like the builder's (flags in
the summary, `per_shape` on the newest main nightly, a kernel dropped from the matrix no longer
listed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.gitrepo import CommitSpec, build_repo
from tests.helion_files import DISPATCH_PATH, render_dispatch_yml

GPU = ["softmax", "rms_norm", "layer_norm", "gemm"]
LINATTN = ["simple_gla"]
CUTE = ["vector_add", "sum"]
RUNNERS = {"h100": "linux.aws.h100", "b200": "linux.dgx.b200", "b200_cute": "linux.dgx.b200"}
NIGHTLY_PATH = ".github/workflows/benchmark_nightly.yml"
START = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
SHAPES = ["(1024, 1024)", "(4096, 4096)", "(8192, 8192)"]


def nightly_yml(platforms) -> str:
    runs = "".join(f"                run_{p}: 'true',\n" for p in platforms)
    return ("name: Benchmark Nightly\non:\n  schedule:\n    - cron: '0 8 * * *'\njobs:\n  dispatch:\n"
            "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/github-script@v9\n        with:\n"
            "          script: |\n            await github.rest.actions.createWorkflowDispatch({\n"
            f"              inputs: {{\n{runs}              }}\n            }})\n")


@dataclass
class Faults:
    """What goes wrong on one nightly. Keys are (platform, kernel)."""

    missing_platforms: set[str] = field(default_factory=set)  # no rows at all
    infra_missing: set[tuple[str, str]] = field(default_factory=set)  # listed, absent from the run
    failed: set[tuple[str, str]] = field(default_factory=set)  # zeros
    accuracy: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # shapes with accuracy 0
    pretuned_error: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass
class HealthWorld:
    nights: int = 10
    faults: dict[int, Faults] = field(default_factory=dict)
    removed: dict[int, tuple[str, str]] = field(default_factory=dict)  # night -> (input, kernel) dropped before it
    shas: list[str] = field(default_factory=list)
    removal_shas: dict[int, str] = field(default_factory=dict)
    unscheduled: dict[int, set[str]] = field(default_factory=dict)  # night -> platforms the nightly workflow leaves out

    def date(self, n: int) -> datetime:
        return START + timedelta(days=n)

    def gpu(self, n: int) -> list[str]:
        gone = {k for m, (_i, k) in self.removed.items() if m <= n}
        return [k for k in GPU if k not in gone]

    def kernels(self, n: int) -> dict[str, list[str]]:
        lin = LINATTN + [f"{k}-bwd" for k in LINATTN]
        return {"h100": self.gpu(n) + lin, "b200": self.gpu(n) + lin, "b200_cute": list(CUTE)}

    def build_repo(self, path: Path) -> None:
        """One commit per nightly (its sha), plus a commit before each matrix removal."""
        commits, marks = [], []
        for n in range(self.nights):
            inputs = {"kernels": self.gpu(n), "kernels_cute": CUTE, "kernels_linattn": LINATTN}
            scheduled = [p for p in RUNNERS if p not in self.unscheduled.get(n, set())]
            files = {DISPATCH_PATH: render_dispatch_yml(inputs, RUNNERS), NIGHTLY_PATH: nightly_yml(scheduled)}
            if n in self.removed:
                commits.append(CommitSpec(f"[CI] Drop {self.removed[n][1]} from the nightly", self.date(n) - timedelta(hours=3), files))
                marks.append(("removal", n))
                files = {"README.md": f"night {n}\n"}
            else:
                files = {**files, "README.md": f"night {n}\n"}
            commits.append(CommitSpec(f"nightly {n}", self.date(n) - timedelta(hours=1), files))
            marks.append(("night", n))
        shas = build_repo(path, commits)
        self.shas = [s for s, (what, _) in zip(shas, marks) if what == "night"]
        self.removal_shas = {n: s for s, (what, n) in zip(shas, marks) if what == "removal"}

    def sha(self, n: int) -> str:
        return self.shas[n] if self.shas else f"{n + 1:08x}" + "0" * 32

    def run(self, n: int) -> dict:
        full = self.sha(n)
        return {"run_id": str(1000 + n), "sha": full[:8], "full_sha": full,
                "date": self.date(n).strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": "main", "is_nightly": True}

    def dashboard(self, n: int) -> dict:
        summary = []
        for p, ks in self.kernels(n).items():
            for k in ks:
                history = []
                for m in range(n + 1):
                    f = self.faults.get(m, Faults())
                    if (p in f.missing_platforms or p in self.unscheduled.get(m, set()) or (p, k) in f.infra_missing
                            or k not in self.kernels(m).get(p, [])):
                        continue
                    bad = (p, k) in f.failed
                    v = 0 if bad else 1.2
                    entry = {**self.run(m), "helion_speedup_geomean": v, "triton_speedup_geomean": 0 if bad else 1.0,
                             "torch_compile_speedup_geomean": 0 if bad else 0.9, "compile_time_geomean_s": None,
                             "helion_latency_avg_ms": 0 if bad else 0.5}
                    if m == n:
                        acc = [0.0 if s in f.accuracy.get((p, k), []) else 1.0 for s in SHAPES]
                        entry["per_shape"] = {"shapes": SHAPES, "helion_speedup": [v] * 3,
                                              "helion_accuracy": [0.0] * 3 if bad else acc}
                    history.append(entry)
                if not history:
                    continue
                last = self.faults.get(n, Faults())
                summary.append({
                    "kernel": k, "platform": p.upper(), "platform_short": p,
                    "baseline_label": "fla" if "gla" in k else None,
                    "infra_missing": history[-1]["run_id"] != self.run(n)["run_id"],
                    "run_failures": SHAPES if (p, k) in last.failed else [],
                    "accuracy_failures": list(last.accuracy.get((p, k), [])),
                    "history": history,
                })
        runs = [self.run(m) for m in range(n + 1)]
        return {"generated_at": runs[-1]["date"], "latest_run": runs[-1], "runs": runs, "summary": summary}

    def pretuned(self, n: int) -> dict:
        summary = []
        for p in ("h100", "b200"):
            for k in ("matmul", "attention"):
                history = []
                for m in range(n + 1):
                    err = self.faults.get(m, Faults()).pretuned_error.get((p, k))
                    entry = {**self.run(m), "cudagraph": True}
                    entry.update({"error": err} if err else {"geomean": 1.1, "helion_wins": 3, "total": 4,
                                                             "best_speedup": 1.5, "baselines": None})
                    history.append(entry)
                err = history[-1].get("error")
                summary.append({"kernel": k, "platform": p.upper(), "platform_short": p, "compute": "sm90",
                                "cudagraph": True, "failed": bool(err), "error": err, "history": history})
        runs = [self.run(m) for m in range(n + 1)]
        return {"generated_at": runs[-1]["date"], "latest_run": runs[-1], "runs": runs, "summary": summary}

    def dashboard_bytes(self, n: int) -> bytes:
        return json.dumps(self.dashboard(n)).encode()

    def pretuned_bytes(self, n: int) -> bytes:
        return json.dumps(self.pretuned(n)).encode()
