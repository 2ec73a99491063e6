"""Helion's own dashboard builders, imported from a temporary checkout and driven night by night.

Why it exists: the documents must be exactly what the live site publishes, so they are made by
`.github/dashboard/build_dashboard_data.py` and `build_pretuned_dashboard_data.py` themselves
(checked out from the bundle's HEAD into the workdir at build time; never copied into the
project). Each nightly, the raw per-job artifacts of the runs created since the previous publish
are written to a fresh cache directory and the builder is called with the previous document as
`existing`, the full run list (365-day retention) as `runs_meta`, and the active platforms /
expected kernels read from the dispatch workflow at that nightly's sha, which is what the
docs-deploy job does after every Benchmark Dispatch. The builders' clock (`datetime.now`, used
only for the retention cutoff) is pinned to the publish time so old windows are not cut off.
"""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import os
import shutil
import subprocess
import types
from pathlib import Path

_LOADED: dict[str, types.ModuleType] = {}


def _clock(now: _dt.datetime) -> types.SimpleNamespace:
    class _Pinned(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return now if tz is None else now.astimezone(tz)

    return types.SimpleNamespace(datetime=_Pinned, timezone=_dt.timezone, timedelta=_dt.timedelta,
                                 date=_dt.date)


def load(repo_path: Path, workdir: Path, name: str) -> types.ModuleType:
    """Import `.github/dashboard/<name>.py` from the clone's main at a temporary checkout path."""
    out = Path(workdir) / "dashboard-builders"
    target = out / f"{name}.py"
    if not target.exists():
        out.mkdir(parents=True, exist_ok=True)
        src = subprocess.run(["git", "-C", str(repo_path), "show", f"main:.github/dashboard/{name}.py"],
                             check=True, capture_output=True).stdout
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(src)
        tmp.replace(target)
    key = str(target.resolve())
    if key not in _LOADED:
        spec = importlib.util.spec_from_file_location(f"_bw_h_helion_{name}_{len(_LOADED)}", target)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _LOADED[key] = mod
    return _LOADED[key]


def scratch_dir(workdir: Path) -> Path:
    """Where the per-night artifact caches go: tmpfs when there is one (thousands of tiny
    directories are created and removed per world), else inside the workdir."""
    import tempfile

    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else str(workdir)
    return Path(tempfile.mkdtemp(prefix="bw-h-", dir=base))


class Publisher:
    """One document series (dashboard or pretuned), rebuilt incrementally like the live site."""

    def __init__(self, module: types.ModuleType, scratch: Path, pretuned: bool):
        self.mod = module
        self.scratch = Path(scratch)
        self.pretuned = pretuned
        self.doc: dict = {}
        self.runs_meta: list[dict] = []

    def publish(self, now: _dt.datetime, new_runs: list[tuple[dict, dict]], dispatch_text: str) -> bytes:
        """new_runs: (run meta, {artifact dir name: file bytes}) for runs since the last publish."""
        cache = self.scratch / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        fname = "pretuned-bench.json" if self.pretuned else "helionbench.json"
        for meta, arts in new_runs:
            self.runs_meta.append(meta)
            rdir = cache / meta["run_id"]
            rdir.mkdir()
            for art, data in sorted(arts.items()):
                (rdir / art).mkdir()
                (rdir / art / fname).write_bytes(data)
        wf = self.scratch / "dispatch.yml"
        wf.write_text(dispatch_text)
        self.mod.datetime = _clock(now)
        active = self.mod.get_active_platforms(str(wf))
        if self.pretuned:
            doc = self.mod.build_dashboard_data(str(cache), self.runs_meta, self.doc, active)
        else:
            expected = self.mod.get_expected_kernels_per_platform(str(wf))
            doc = self.mod.build_dashboard_data(str(cache), self.runs_meta, self.doc, active, expected)
        data = json.dumps(doc).encode()
        # The next publish starts from this document (the builder only pops per_shape from
        # older history entries and setdefaults is_nightly, so reusing the objects equals
        # re-fetching them; the bytes above are already frozen).
        self.doc = doc
        return data
