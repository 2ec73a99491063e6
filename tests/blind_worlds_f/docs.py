"""Publishing: per-run artifacts, fed night by night to Helion's own dashboard builders.

The builders are ``.github/dashboard/build_dashboard_data.py`` and
``build_pretuned_dashboard_data.py`` at the bundle's HEAD. They are imported from a copy made at
build time (``importlib``; their code is never copied into this package) and called the way the
docs-deploy job calls them after a nightly: the whole run list of the workflow (``fetch_runs``),
the artifacts of the runs the previous document does not hold yet in a fresh cache directory,
the previous document as ``existing``, and the active platforms / expected kernels read from the
dispatch workflow at the nightly's commit. Their notion of "now" (the retention cutoff) is
pinned to the night.
"""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import shutil
import types
from pathlib import Path

from .repo import Repo

BUILDERS = {"dashboard": ".github/dashboard/build_dashboard_data.py",
            "pretuned": ".github/dashboard/build_pretuned_dashboard_data.py"}


def load_builders(repo: Repo, dest: Path) -> dict:
    """Import both builders from the repo's HEAD into private module objects."""
    dest.mkdir(parents=True, exist_ok=True)
    head = repo.commits[-1].sha
    mods = {}
    for name, path in BUILDERS.items():
        file = dest / Path(path).name
        file.write_text(repo.text(head, path))
        spec = importlib.util.spec_from_file_location(f"_bwf_{name}_builder", file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods[name] = mod
    return mods


def _frozen_datetime(now: _dt.datetime) -> types.SimpleNamespace:
    """A stand-in for the ``datetime`` module whose ``datetime.now()`` is ``now``."""
    class Frozen(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return now if tz is None else now.astimezone(tz)

    return types.SimpleNamespace(datetime=Frozen, timezone=_dt.timezone, timedelta=_dt.timedelta)


def write_artifacts(cache: Path, run_id: str, artifacts: dict) -> None:
    """artifacts: {artifact name: (file name, records)} -> <cache>/<run_id>/<name>/<file>."""
    for name, (fname, records) in sorted(artifacts.items()):
        d = cache / run_id / name
        d.mkdir(parents=True, exist_ok=True)
        (d / fname).write_text(json.dumps(records, indent=2))


def publish(mod, source: str, cache: Path, runs_meta: list, existing: dict | None,
            workflow_text: str, now: _dt.datetime, tmp: Path) -> bytes:
    """One build of a document, as the docs-deploy job runs it after a nightly."""
    wf = tmp / "dispatch.yml"
    wf.write_text(workflow_text or "")
    mod.datetime = _frozen_datetime(now)
    active = mod.get_active_platforms(str(wf))
    if source == "dashboard":
        expected = mod.get_expected_kernels_per_platform(str(wf))
        data = mod.build_dashboard_data(str(cache), runs_meta, existing, active, expected)
    else:
        data = mod.build_dashboard_data(str(cache), runs_meta, existing, active)
    shutil.rmtree(cache, ignore_errors=True)
    return json.dumps(data, indent=2).encode()
