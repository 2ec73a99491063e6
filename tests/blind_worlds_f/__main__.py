"""Write one blind-set-F world to a directory.

    python -m tests.blind_worlds_f --seed 51 --out DIR [--nights N] [--plain]

DIR gets ``nights.json`` (the nightlies: run ids, shas, dates, pretuned run ids), ``labels.json``
and the documents a monitor would have fetched after each nightly, ``dashboard/NNN.json.gz`` and
``pretuned/NNN.json.gz`` (gzip; ``--plain`` writes ``.json``: a full world is ~0.5 GB raw).
It prints the label count by (source, cause, kind).
"""
from __future__ import annotations

import argparse
import gzip
import json
import time
from collections import Counter
from pathlib import Path

from . import SEEDS, build_world


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.blind_worlds_f")
    ap.add_argument("--seed", type=int, required=True, choices=SEEDS)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--nights", type=int, default=None, help="keep only the last N nightlies")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the repo clone and caches live (default: OUT/.work)")
    ap.add_argument("--plain", action="store_true", help="write uncompressed .json documents")
    args = ap.parse_args(argv)

    out = args.out
    t0 = time.time()
    world = build_world(args.seed, args.workdir or out / ".work", nights=args.nights)
    built = time.time() - t0
    for src in ("dashboard", "pretuned"):
        (out / src).mkdir(parents=True, exist_ok=True)
    for n in range(len(world.nights)):
        for src, data in (("dashboard", world.dashboard_bytes(n)), ("pretuned", world.pretuned_bytes(n))):
            if data is None:
                continue
            if args.plain:
                (out / src / f"{n:03d}.json").write_bytes(data)
            else:
                (out / src / f"{n:03d}.json.gz").write_bytes(gzip.compress(data, 6, mtime=0))
    nights = [{"index": i, "run_id": n.run_id, "full_sha": n.full_sha, "sha": n.sha,
               "date": n.date.isoformat(), "p_run_id": n.p_run_id, "p_full_sha": n.p_full_sha}
              for i, n in enumerate(world.nights)]
    (out / "nights.json").write_text(json.dumps(nights, indent=1))
    (out / "labels.json").write_text(json.dumps([lab.to_dict() for lab in world.labels], indent=1))

    counts = Counter((lab.source, lab.cause, lab.kind) for lab in world.labels)
    print(f"seed {args.seed}: {len(world.nights)} nightlies {world.nights[0].date.date()} .. "
          f"{world.nights[-1].date.date()}, {world.series_count()} series, "
          f"{len(world.labels)} labels, built in {built:.1f}s")
    for (src, cause, kind), c in sorted(counts.items()):
        print(f"  {src:<9} {cause:<13} {kind:<17} {c}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
