"""`make bench`: every speed and quality benchmark, one after another, each in its own process.

Separate processes keep one benchmark's caches and imports from flattering the next.
Results are printed and written as JSON under benchmarks/results/.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time

BENCHMARKS = (
    "benchmarks.ingest_speed",
    "benchmarks.detect_quality",
    "benchmarks.world_quality",
    "benchmarks.detect_speed",
    "benchmarks.web_load",
)


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        if importlib.util.find_spec(name) is None:
            print(f"== {name}: not present, skipped", flush=True)
            continue
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", name])
        print(f"== {name}: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
