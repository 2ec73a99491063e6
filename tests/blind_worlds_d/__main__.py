"""python -m tests.blind_worlds_d --seed 31 --out DIR: dump one world (documents, nights.json, labels.json)."""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from . import build_world


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.blind_worlds_d")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--nights", type=int, default=None)
    ap.add_argument("--workdir", type=Path, default=None, help="where the Helion clone and build files go")
    a = ap.parse_args(argv)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bwd_world_"))
    w = build_world(a.seed, work, nights=a.nights, documents=True)
    out = a.out
    (out / "documents").mkdir(parents=True, exist_ok=True)
    nights = []
    for n, night in enumerate(w.nights):
        (out / "documents" / f"dashboard-{n:04d}.json").write_bytes(w.dashboard_bytes(n))
        pb = w.pretuned_bytes(n)
        if pb is not None:
            (out / "documents" / f"pretuned-{n:04d}.json").write_bytes(pb)
        nights.append(dict(index=n, run_id=night.run_id, full_sha=night.full_sha, sha=night.sha,
                           date=night.date.isoformat(), p_run_id=night.p_run_id, p_full_sha=night.p_full_sha))
    (out / "nights.json").write_text(json.dumps(nights, indent=1))
    (out / "labels.json").write_text(json.dumps([l.to_dict() for l in w.labels], indent=1))
    print(f"seed {a.seed}: {len(w.nights)} nights, {len(w.labels)} labels, {w.series_count()} series, "
          f"built in {w.build_seconds}s -> {out}")
    if a.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
