"""Turn simulated raw artifacts into the live JSON documents with Helion's OWN builders.

Why: the documents must be byte-for-byte what the live site serves, so we import
`.github/dashboard/build_dashboard_data.py` and `build_pretuned_dashboard_data.py` from a
temporary checkout of the bundle at build time (never copied into the project) and feed them the
same inputs their `main()` would: a fresh cache dir holding only the new runs' artifacts, the run
list, the previous document as `existing`, and the platform filters parsed by their own helpers
from the dispatch workflow of the night. Their 365-day retention reads `datetime.now()`; we pin
"now" to the night being published so the output is deterministic.
"""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import shutil
import types
from pathlib import Path


class _FrozenDT(_dt.datetime):
    frozen: _dt.datetime | None = None

    @classmethod
    def now(cls, tz=None):
        return cls.frozen


_SHIM = types.SimpleNamespace(datetime=_FrozenDT, timedelta=_dt.timedelta, timezone=_dt.timezone)

BUILDERS = {
    "dashboard": ".github/dashboard/build_dashboard_data.py",
    "pretuned": ".github/dashboard/build_pretuned_dashboard_data.py",
}


def load_builders(repo, sha: str, dest: Path) -> dict:
    """Write the builder scripts at `sha` into a temp folder and import them."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    mods = {}
    for name, path in BUILDERS.items():
        text = repo.show(sha, path)
        if text is None:
            raise RuntimeError(f"{path} missing at {sha}")
        f = dest / f"_helion_{name}_builder.py"
        f.write_text(text)
        spec = importlib.util.spec_from_file_location(f"_helion_{name}_builder_{sha[:8]}", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.datetime = _SHIM
        mods[name] = mod
    return mods


def _write_runs(cache: Path, artifacts: dict, fname: str):
    for run_id, dirs in artifacts.items():
        for dirname, records in dirs.items():
            d = cache / run_id / dirname
            d.mkdir(parents=True, exist_ok=True)
            (d / fname).write_text(json.dumps(records))


def build_dashboard(mod, tmp: Path, runs_meta: list, artifacts: dict, existing: dict | None,
                    dispatch_text: str | None, now: _dt.datetime) -> bytes:
    tmp = Path(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    cache = tmp / "benchmark-cache"
    cache.mkdir(parents=True)
    _write_runs(cache, artifacts, "helionbench.json")
    wf = tmp / "benchmark_dispatch.yml"
    wf.write_text(dispatch_text or "")
    active = mod.get_active_platforms(str(wf)) if dispatch_text else None
    expected = mod.get_expected_kernels_per_platform(str(wf)) if dispatch_text else {}
    _FrozenDT.frozen = now
    data = mod.build_dashboard_data(str(cache), [dict(r) for r in runs_meta], existing, active, expected)
    return json.dumps(data, indent=2).encode()


def build_pretuned(mod, tmp: Path, runs_meta: list, artifacts: dict, existing: dict | None,
                   dispatch_text: str | None, now: _dt.datetime) -> bytes:
    tmp = Path(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    cache = tmp / "pretuned-benchmark-cache"
    cache.mkdir(parents=True)
    _write_runs(cache, artifacts, "pretuned-bench.json")
    wf = tmp / "benchmark_pretuned_dispatch.yml"
    wf.write_text(dispatch_text or "")
    active = mod.get_active_platforms(str(wf)) if dispatch_text else None
    _FrozenDT.frozen = now
    data = mod.build_dashboard_data(str(cache), [dict(r) for r in runs_meta], existing, active)
    return json.dumps(data, indent=2).encode()
