"""Second, independently designed blind evaluation set for benchwatch (WORK IN PROGRESS).

Status: only the night planner exists (real Helion first-parent shas from the bundle,
seed-dependent window ending 2026-03..2026-08, 90-160 nights, 08:00 UTC cron with jitter,
a few skipped days).  Simulation, document building via Helion's own builders, and labels
are NOT implemented yet; ``build_world`` raises NotImplementedError after planning.

Intended labeling rules (from helion-dashboard.md's triage section):
real -> honest speedup is the 'after' level; hardware -> the healthy side;
cudagraph method change -> the cudagraph-timed side; other method changes -> after;
noise -> the normal level.
"""
from .plan import plan_nights, build_world  # noqa: F401
