"""Publishing: Helion's own dashboard builders, fed night by night as the live site feeds them.

Why the real builders: the documents must be exactly what helionlang.com serves, including its
quirks (re-published runs lose their kernel_count, per_shape is kept only on the latest nightly,
kernels dropped from the workflow defaults vanish from the summary). The builder files are read
from the bundle's main at run time into a temporary folder and imported from there (no Helion
code is copied into this project); each night gets a cache folder holding only the runs not yet
published, the previous document as ``existing``, the dispatch workflow of that night's sha,
and a clock set to the publication time (their 365-day retention reads ``now``).
"""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import shutil
import tempfile
import types
from pathlib import Path

from .gitdata import git

BUILDERS = {"dashboard": ".github/dashboard/build_dashboard_data.py",
            "pretuned": ".github/dashboard/build_pretuned_dashboard_data.py"}


class _Clock:
    def __init__(self):
        self.now = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)


def _shim(clock: _Clock) -> types.SimpleNamespace:
    class FixedDateTime(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return clock.now if tz is None else clock.now.astimezone(tz)

    return types.SimpleNamespace(datetime=FixedDateTime, timezone=_dt.timezone, timedelta=_dt.timedelta,
                                 date=_dt.date)


class Builders:
    """The two builder modules, imported from a temporary checkout of their files."""

    def __init__(self, repo: Path, ref: str = "main"):
        self.dir = Path(tempfile.mkdtemp(prefix="bw-i-builders-"))
        self.clock = _Clock()
        self.mods = {}
        for name, path in BUILDERS.items():
            text = git(repo, "show", f"{ref}:{path}")
            dest = self.dir / Path(path).name
            dest.write_text(text)
            spec = importlib.util.spec_from_file_location(f"_bw_i_helion_{name}_builder_{id(self)}", dest)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod.datetime = _shim(self.clock)
            self.mods[name] = mod

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def write_artifacts(cache: Path, run_id: str, artifacts: dict, filename: str) -> None:
    """artifacts: artifact folder name -> records (the JSON list the harness writes)."""
    for name, records in artifacts.items():
        d = cache / run_id / name
        d.mkdir(parents=True, exist_ok=True)
        (d / filename).write_text(json.dumps(records))


def publish_dashboard(b: Builders, cache: Path, runs_meta: list, existing: dict, dispatch_text: str,
                      now: _dt.datetime) -> dict:
    mod = b.mods["dashboard"]
    wf = cache / "benchmark_dispatch.yml"
    wf.write_text(dispatch_text or "")
    active = mod.get_active_platforms(str(wf)) if dispatch_text else None
    expected = mod.get_expected_kernels_per_platform(str(wf)) if dispatch_text else {}
    b.clock.now = now
    return mod.build_dashboard_data(str(cache), runs_meta, existing, active, expected)


def publish_pretuned(b: Builders, cache: Path, runs_meta: list, existing: dict, dispatch_text: str,
                     now: _dt.datetime) -> dict:
    mod = b.mods["pretuned"]
    wf = cache / "benchmark_pretuned_dispatch.yml"
    wf.write_text(dispatch_text or "")
    active = mod.get_active_platforms(str(wf)) if dispatch_text else None
    b.clock.now = now
    return mod.build_dashboard_data(str(cache), runs_meta, existing, active)
