"""Seeded generator of labeled synthetic Helion dashboard histories (and matching git repos).

`generate_world(WorldSpec(seed=..., nightlies=...))` returns a `World`: the two documents as
published after any nightly (`dashboard(n)`, `pretuned(n)`, and their bytes), the nightly
runs, the planted events with their ground-truth `labels`, and (with_git) a real git repo
whose first-parent history holds every nightly's sha, distractor commits and the culprits.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from tests.worlds.plan import kernels_of_spec, plan_events
from tests.worlds.render import dashboard_doc, pretuned_doc
from tests.worlds.simulate import (
    Simulation,
    TimelineRun,
    build_timeline,
    fake_sha,
    simulate_dashboard,
    simulate_pretuned,
)
from tests.worlds.spec import CAUSES, EventSpec, Label, WorldSpec

__all__ = ["CAUSES", "EventSpec", "Label", "World", "WorldSpec", "generate_world"]

HEADLINE = {"dashboard": "helion_speedup_geomean", "pretuned": "geomean"}


@dataclass
class World:
    spec: WorldSpec
    sim: Simulation
    events: tuple[EventSpec, ...]
    labels: list[Label] = field(default_factory=list)
    repo: Path | None = None

    @property
    def nights(self) -> list[TimelineRun]:
        return self.sim.nights

    @property
    def runs(self) -> list[TimelineRun]:
        return self.sim.runs

    def dashboard(self, n: int) -> dict:
        """A fresh (mutable) copy of dashboard-data.json as published after nightly n."""
        return json.loads(self.dashboard_bytes(n))

    def pretuned(self, n: int) -> dict:
        return json.loads(self.pretuned_bytes(n))

    def dashboard_bytes(self, n: int) -> bytes:
        return _dump(self, "dashboard", n)

    def pretuned_bytes(self, n: int) -> bytes:
        return _dump(self, "pretuned", n)

    def series_count(self) -> int:
        return len(self.sim.dash) + len(self.sim.pre)

    @cached_property
    def _night_index(self) -> dict[str, int]:
        return {n.run_id: i for i, n in enumerate(self.nights)}

    def night_of(self, run_id: str, default: int | None = None) -> int | None:
        """The trend-night index of a nightly's run id (``default``: not a nightly)."""
        return self._night_index.get(run_id, default)

    def explained(self, margin: int = 2) -> set[tuple[str, str, str, int]]:
        """(source, platform, kernel, night) a planted event accounts for, ± ``margin`` nights:
        a move found there is not a false alert."""
        return {
            (lab.event.source, lab.event.platform_short, k, lab.event.night + d)
            for lab in self.labels for k in lab.event.kernels for d in range(-margin, margin + 1)
        }


@lru_cache(maxsize=64)
def _dump_cached(world_id: int, source: str, n: int) -> bytes:
    world = _LIVE[world_id]
    doc = dashboard_doc(world.sim, n) if source == "dashboard" else pretuned_doc(world.sim, n)
    return json.dumps(doc, separators=(",", ":")).encode()


_LIVE: dict[int, World] = {}


def _dump(world: World, source: str, n: int) -> bytes:
    if not 0 <= n < len(world.nights):
        raise IndexError(f"night {n} is outside 0..{len(world.nights) - 1}")
    _LIVE[id(world)] = world
    return _dump_cached(id(world), source, n)


def _labels(world: World, planted: dict[int, str]) -> list[Label]:
    out = []
    for i, ev in enumerate(world.events):
        metric = HEADLINE[ev.source]
        series = tuple((ev.source, ev.platform_short, k, metric) for k in ev.kernels)
        fb, lg = world.nights[ev.night], world.nights[ev.night - 1]
        sha = planted.get(i)
        true: dict[str, float] = {}
        for k in ev.kernels:
            if ev.source == "dashboard" and (ev.platform_short, k) in world.sim.dash:
                s = world.sim.dash[(ev.platform_short, k)]
                before = float(np.median(s.hs[max(0, ev.night - 10) : ev.night]))
                after = float(np.median(s.hs[ev.night : ev.night + 10]))
                if ev.cause == "real":
                    true[k] = after
                elif ev.cause in ("hardware", "noise"):
                    true[k] = before
        out.append(Label(
            ev, series, fb.run_id, lg.run_id,
            culprit=sha if ev.cause == "real" else None,
            change_commit=sha if ev.cause in ("method_change", "hardware") else None,
            true_speedup=true,
        ))
    return out


def generate_world(spec: WorldSpec) -> World:
    rng = np.random.default_rng(spec.seed)
    kernels_of = kernels_of_spec(spec)
    events = spec.events if spec.events is not None else plan_events(spec, kernels_of)
    runs = build_timeline(spec, rng, kernels_of)
    nights = [r for r in runs if r.kind == "nightly"]
    sim = Simulation(nights, runs)
    sim.dash = simulate_dashboard(spec, kernels_of, events)
    if spec.pretuned:
        sim.pre = simulate_pretuned(spec, events)
    world = World(spec, sim, tuple(events))
    planted_sha: dict[int, str] = {}
    if spec.with_git:
        from tests.gitrepo import build_repo
        from tests.worlds.history import plan_commits

        commits, heads, planted = plan_commits(spec, sim, world.events, kernels_of)
        repo = Path(spec.repo_dir) if spec.repo_dir else Path(tempfile.mkdtemp(prefix="helion-world-")) / "helion"
        shas = build_repo(repo, commits)
        world.repo = repo
        for n, night in enumerate(nights):
            night.full_sha = shas[heads[n]]
        planted_sha = {ev_i: shas[c] for ev_i, c in planted.items()}
    else:
        for n, night in enumerate(nights):
            night.full_sha = fake_sha(spec.seed, n, "main")
    for r in runs:
        if r.kind == "manual":
            r.full_sha = nights[r.night].full_sha
        r.sha = r.full_sha[:8]
    world.labels = _labels(world, planted_sha)
    return world
