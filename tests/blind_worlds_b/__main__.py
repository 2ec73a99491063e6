"""python -m tests.blind_worlds_b --seed N --out DIR [--nights K]: per-night documents and labels."""
import argparse
import json
from pathlib import Path

from . import build_world


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nights", type=int, default=None)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    w = build_world(a.seed, out / "_work", a.nights)
    for n, night in enumerate(w.nights):
        (out / f"night-{n:03d}-dashboard-data.json").write_bytes(w.dashboard_bytes(n))
        pre = w.pretuned_bytes(n)
        if pre is not None:  # no file: the real site had no pretuned document that night (404)
            (out / f"night-{n:03d}-pretuned-dashboard-data.json").write_bytes(pre)
    (out / "nights.json").write_text(json.dumps([dict(run_id=n.run_id, full_sha=n.full_sha, date=n.date.isoformat(),
                                                      p_run_id=n.p_run_id, p_full_sha=n.p_full_sha,
                                                      pretuned_published=w.pretuned_published(i))
                                                 for i, n in enumerate(w.nights)], indent=1))
    (out / "labels.json").write_text(json.dumps([l.to_dict() for l in w.labels], indent=1, default=str))
    print(f"{len(w.nights)} nights, {len(w.labels)} labels -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
