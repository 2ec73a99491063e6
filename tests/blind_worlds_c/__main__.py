"""python -m tests.blind_worlds_c --seed 21 --out DIR [--nights N]: documents per night, nights.json, labels.json."""
import argparse
import json
from collections import Counter
from pathlib import Path

from . import build_world


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nights", type=int, default=None)
    ap.add_argument("--workdir", default=None, help="where the Helion clone and caches go (default OUT/work)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    w = build_world(a.seed, Path(a.workdir) if a.workdir else out / "work", nights=a.nights)
    docs = out / "documents"
    docs.mkdir(exist_ok=True)
    for n in range(len(w.nights)):
        (docs / f"{n:03d}-dashboard-data.json").write_bytes(w.dashboard_bytes(n))
        p = w.pretuned_bytes(n)
        if p is not None:
            (docs / f"{n:03d}-pretuned-dashboard-data.json").write_bytes(p)
    (out / "nights.json").write_text(json.dumps([dict(run_id=x.run_id, full_sha=x.full_sha, sha=x.sha,
                                                      date=x.date.isoformat(), p_run_id=x.p_run_id,
                                                      p_full_sha=x.p_full_sha) for x in w.nights], indent=1))
    (out / "labels.json").write_text(json.dumps([l.to_dict() for l in w.labels], indent=1))
    print(f"seed {a.seed}: {len(w.nights)} nights {w.nights[0].date.date()}..{w.nights[-1].date.date()}, "
          f"{len(w.labels)} labels {dict(Counter(l.cause for l in w.labels))}, {w.build_seconds:.1f}s")


if __name__ == "__main__":
    main()
