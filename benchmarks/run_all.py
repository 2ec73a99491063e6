"""`make bench`: every speed and quality benchmark, one after another, each in its own process.

Separate processes keep one benchmark's caches and imports from flattering the next.
Results are printed and written as JSON under benchmarks/results/.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time

BENCHMARKS: tuple[tuple[str, ...], ...] = (
    ("benchmarks.cli_startup",),
    ("benchmarks.ingest_speed",),
    ("benchmarks.detect_quality",),
    ("benchmarks.triage_quality",),  # ours and blind worlds side by side, with the two anchors
    ("benchmarks.detect_speed",),
    ("benchmarks.real_repo_speed",),  # a year of a real-repo world: cold detect, a nightly, investigate (CLI)
    ("benchmarks.web_load",),
    ("benchmarks.web_load", "--note-every", "1"),  # on-call writing while 20 people read
)


def main() -> int:
    failed = []
    for name, *args in BENCHMARKS:
        label = " ".join([name, *args])
        if importlib.util.find_spec(name) is None:
            print(f"== {name}: not present, skipped", flush=True)
            continue
        print(f"== {label}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", name, *args])
        print(f"== {label}: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
        if rc:
            failed.append(label)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
