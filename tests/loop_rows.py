"""Hand-made store rows for the nightly-loop tests (a helper module: it holds no tests), and
`ScriptedDetect`, a detect stage that writes on night N what that night's detection would.

Rows go through the real writers (`upsert_alert`, `upsert_group`) that the detect pass uses, so
revisions and histories behave as in production.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from service.records import Classification, Evidence, Move, RankedCommit, RunRef, SeriesKey
from service.store.alerts_writer import GroupRecord, MoveRecord, upsert_alert, upsert_group
from service.store.db import Store
from service.store.tables import Run, Series, Track

T0 = datetime(2026, 3, 1, 8, 0)  # night 0, naive UTC as stored
METRIC = "helion_speedup_geomean"


def sha(i: int) -> str:
    return f"{i:08x}" + "cd" * 16


def night_time(n: int, hours: float = 3.0) -> datetime:
    """A tz-aware moment a few hours after nightly ``n`` (what run-once's ``now`` would be)."""
    return (T0 + timedelta(days=n, hours=hours)).replace(tzinfo=timezone.utc)


def culprit(subject: str = "[Triton] slower tiling", i: int = 0xBEEF) -> RankedCommit:
    full = f"{i:08x}" + "ef" * 16
    return RankedCommit(full[:8], full, subject, datetime(2026, 3, 10, tzinfo=timezone.utc), 3.0, ("slice",))


def classification(cause: str = "real", *, subject: str = "[Triton] slower tiling",
                   detail: str = "the step held 3 nights") -> Classification:
    c = culprit(subject)
    return Classification(
        cause, 0.8, (Evidence("persistence", cause, detail), Evidence("helion_only", cause, "triton flat")),
        1.42, "latency agrees", culprit=c if cause == "real" else None,
        change_commit=c if cause != "real" else None, candidates=(c,),
    )


class Rows:
    """A dashboard source with ``nights`` trend nightlies; add series, alerts and groups."""

    def __init__(self, store: Store, nights: int = 40, source: str = "dashboard") -> None:
        self.store, self.source = store, source
        with store.session() as s:
            runs = [
                Run(source=source, run_id=str(7000 + i), sha=sha(i)[:8], full_sha=sha(i),
                    date=T0 + timedelta(days=i), branch="main", is_nightly=True, is_trend=True)
                for i in range(nights)
            ]
            s.add_all(runs)
            s.flush()
            self.runs = [r.id for r in runs]
        self.ordinal = {pk: i for i, pk in enumerate(self.runs)}
        self.series: dict[tuple[str, str], int] = {}

    def series_id(self, platform: str, kernel: str) -> int:
        if (platform, kernel) not in self.series:
            with self.store.session() as s:
                t = Track(source=self.source, platform_short=platform, platform=f"NVIDIA {platform.upper()}",
                          kernel=kernel)
                s.add(t)
                s.flush()
                x = Series(track_id=t.id, metric=METRIC)
                s.add(x)
                s.flush()
                self.series[(platform, kernel)] = x.id
        return self.series[(platform, kernel)]

    def move(self, platform: str, kernel: str, fb: int, *, state: str = "provisional",
             change_pct: float = -12.0, direction: str = "regression") -> Move:
        key = SeriesKey(self.source, platform, kernel, METRIC)
        lg = fb - 1
        return Move(
            key, RunRef(str(7000 + lg), sha(lg)[:8], sha(lg), T0 + timedelta(days=lg), 2.0),
            RunRef(str(7000 + fb), sha(fb)[:8], sha(fb), T0 + timedelta(days=fb), 1.76),
            2.0, 2.0 * (1 + change_pct / 100), change_pct, direction, 8.0, state, 1, 0.02,
        )

    def alert(self, platform: str, kernel: str, fb: int, *, cause: str = "real", state: str = "provisional",
              change_pct: float = -12.0, now: datetime | None = None, subject: str = "[Triton] slower tiling",
              direction: str = "regression") -> int:
        sid = self.series_id(platform, kernel)
        rec = MoveRecord(sid, self.move(platform, kernel, fb, state=state, change_pct=change_pct,
                                        direction=direction),
                         None if state == "retracted" else classification(cause, subject=subject),
                         self.runs[fb - 1], self.runs[fb])
        with self.store.session() as s:
            return upsert_alert(s, rec, self.ordinal, now or night_time(fb)).alert_id

    def group(self, alert_ids: list[int], fb: int, platform: str | None, *, cause: str = "real",
              state: str = "provisional", child_ids: tuple[int, ...] = (), now: datetime | None = None,
              evidence: tuple[dict, ...] = ()) -> int:
        rec = GroupRecord(self.source, self.runs[fb], platform, cause, 0.8,
                          evidence or ({"check": "breadth", "verdict": cause, "detail": "2 of 9 kernels moved"},),
                          state, tuple(alert_ids), child_ids)
        with self.store.session() as s:
            g, _ = upsert_group(s, rec, now or night_time(fb))
            return g.id


class ScriptedDetect:
    """Stands in for detect_pass: on night N it writes what that night's detection would."""

    def __init__(self, rows: Rows, script: dict, pause: float = 0.0) -> None:
        self.rows, self.script, self.pause, self.calls = rows, script, pause, 0

    def __call__(self, store, settings, repo, *, now, fetch):
        self.calls += 1
        time.sleep(self.pause)
        night = (now.replace(tzinfo=None) - night_time(0).replace(tzinfo=None)).days
        for n in sorted(self.script):
            if n <= night and n not in getattr(self, "_done", set()):
                self.script[n](self.rows)
                self._done = getattr(self, "_done", set()) | {n}
        return f"scripted detect through night {night}"
