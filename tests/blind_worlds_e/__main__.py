"""python -m tests.blind_worlds_e --seed 41 --out DIR [--nights N]"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from . import build_world


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nights", type=int, default=None)
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    out = Path(a.out)
    (out / "documents").mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="bwe-"))
    w = build_world(a.seed, work, a.nights)
    for n in range(len(w.nights)):
        (out / "documents" / f"dashboard-{n:04d}.json").write_bytes(w.dashboard_bytes(n))
        pb = w.pretuned_bytes(n)
        if pb is not None:
            (out / "documents" / f"pretuned-{n:04d}.json").write_bytes(pb)
    nights = [{"run_id": x.run_id, "full_sha": x.full_sha, "sha": x.sha, "date": x.date.isoformat(),
               "p_run_id": x.p_run_id, "p_full_sha": x.p_full_sha} for x in w.nights]
    (out / "nights.json").write_text(json.dumps(nights, indent=1))
    (out / "labels.json").write_text(json.dumps([l.to_dict() for l in w.labels], indent=1))
    c = Counter((l.source, l.cause, l.kind) for l in w.labels)
    print(f"seed {a.seed}: {len(w.nights)} nights, {w.series_count()} series, {len(w.labels)} labels, "
          f"{time.time() - t0:.1f}s")
    for k, v in sorted(c.items()):
        print(f"  {k[0]:9s} {k[1]:14s} {k[2]:18s} {v}")


if __name__ == "__main__":
    main()
