"""The events of one world: those the real history carries (read from the files at both ends of
each nightly window) and those planted on real commits, plus the labels a person would write.

An event is either a change of what runs (shapes, --cudagraph, harness: it shows through the
catalog of the nights after it) or a set of factors on some series from its first bad night on
(and until its end, for episodes). Labels list the members whose numbers actually moved, found
by comparing the noise-free metric values with and without the event.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import Mods, PMods, expected, pexpected

SPEEDUPS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
THRESH = {"helion_speedup_geomean": 0.04, "triton_speedup_geomean": 0.04, "torch_compile_speedup_geomean": 0.04,
          "helion_latency_avg_ms": 0.05, "compile_time_geomean_s": 0.15}
GPU_PLATS = ("h100", "b200", "mi325x", "mi350x")


@dataclass
class Event:
    id: str
    source: str
    cause: str
    kind: str
    start: int
    end: int | None
    mods: dict = field(default_factory=dict)  # (plat, kernel) -> {field: value}
    catalog: bool = False  # the move comes from a change of what runs (shapes, flags, harness)
    series: list = field(default_factory=list)  # candidate members of a catalog event
    missing: bool = False  # outage: the members do not report
    culprit: str | None = None
    change: str | None = None
    honest: str = "new"  # new | old (which side of the step is the honest speedup)
    note: str = ""
    label: bool = True
    members: list = field(default_factory=list)
    metrics: tuple = ()
    direction: str = ""
    honest_values: dict = field(default_factory=dict)
    prev_override: dict = field(default_factory=dict)  # catalog events after a gap: the row before the gap


def slice_of(subject: str, files) -> str | None:
    s = subject.lower()
    tags = set(re.findall(r"\[([^\]]+)\]", s))
    fs = " ".join(files).lower()
    if tags & {"metal", "xpu", "tileir", "interpret mode", "ref mode", "docs", "lint", "testing", "nfc"} \
            or re.search(r"\b(llm|tileir|tile-ir|distributed|ranks?|metal|xpu)\b", s):
        return None
    if re.search(r"\bpallas\b|\btpu\b", s):
        return "tpu"
    if re.search(r"\bcute(dsl)?\b", s):
        return "cute"
    if tags & {"cute", "cutedsl", "test/cute"} or "helion/_compiler/cute" in fs:
        return "cute"
    if tags & {"pallas", "pallas-tpu", "tpu", "runtime:pallas"} or "helion/_compiler/pallas" in fs:
        return "tpu"
    hfs = " ".join(f for f in files if f.startswith("helion/")).lower()
    if tags & {"rocm", "rocm ", "amd rocm", "amd"} or re.search(r"\b(rocm|gfx9\d\d|hip|amd)\b", s) \
            or re.search(r"(rocm|amd|gfx9)", hfs):
        return "rocm"
    if tags & {"autotuner", "autotune", "autotuning"} or "helion/autotuner/" in fs:
        return "autotuner"
    if any(f.startswith(("helion/_compiler/", "helion/runtime/", "helion/language/", "helion/_utils"))
           for f in files):
        return "triton"
    return None


def _moved(before: dict, after: dict) -> list[str]:
    out = []
    for m, th in THRESH.items():
        a, b = before.get(m) or 0.0, after.get(m) or 0.0
        if a > 0 and b > 0 and abs(b / a - 1) >= th:
            out.append(m)
    return out


def apply(m: Mods, d: dict) -> None:
    for k, v in d.items():
        if k == "hw":
            m.hw.append(v)
        elif k == "helion_small":
            m.helion_small += v
        else:
            setattr(m, k, getattr(m, k) * v)


def papply(m: PMods, d: dict) -> None:
    for k, v in d.items():
        if k == "hw":
            m.hw.append(v)
        elif k == "base":
            for b, f in v.items():
                m.base[b] = m.base.get(b, 1.0) * f
        elif k == "l2":
            m.l2 += v
        else:
            setattr(m, k, getattr(m, k) * v)


class Plan:
    """Events and the factors they put on each series on each night."""

    def __init__(self, seed: int, n_nights: int):
        self.seed = seed
        self.n = n_nights
        self.events: list[Event] = []
        self.busy: dict = {}  # (source, plat, kernel) -> set of nights near an event start/end

    def active(self, source: str, key, night: int, exclude: Event | None = None):
        for e in self.events:
            if e is exclude or e.source != source or key not in e.mods:
                continue
            if e.start <= night and (e.end is None or night < e.end):
                yield e

    def mods(self, key, night: int, exclude: Event | None = None) -> Mods:
        m = Mods()
        for e in self.active("dashboard", key, night, exclude):
            apply(m, e.mods[key])
        return m

    def pmods(self, key, night: int, exclude: Event | None = None) -> PMods:
        m = PMods()
        for e in self.active("pretuned", key, night, exclude):
            papply(m, e.mods[key])
        return m

    def missing(self, source: str, key, night: int) -> bool:
        return any(e.missing for e in self.active(source, key, night))

    def protect(self) -> None:
        """Nights next to a labeled step (last good, first bad, and around an episode's end) get no
        stray outlier or failure on the members, so the step is where the label says."""
        self.protected = set()
        for e in self.events:
            if not e.label or e.cause == "noise":
                continue
            for k in e.members:
                for x in (e.start - 1, e.start) + ((e.end - 1, e.end) if e.end is not None else ()):
                    self.protected.add((e.source, *k, x))

    def is_protected(self, source, key, night) -> bool:
        return (source, *key, night) in getattr(self, "protected", ())

    def is_busy(self, source, key, night, pad=3) -> bool:
        s = self.busy.get((source, *key), set())
        return any(abs(night - x) <= pad for x in s)

    def mark(self, e: Event, keys) -> None:
        for k in keys:
            s = self.busy.setdefault((e.source, *k), set())
            s.add(e.start)
            if e.end is not None:
                s.add(e.end)

    def add(self, e: Event) -> Event:
        self.events.append(e)
        self.mark(e, list(e.mods) or e.series)
        return e

    # ------------------------------------------------------------------ labels
    def finalize(self, cat: list, pcat: list) -> None:
        """Members, metrics, direction and honest speedups of each event, from the model."""
        seed = self.seed
        for e in self.events:
            a = e.start
            if a < 1 or a >= self.n:
                e.label = False
                continue
            if e.missing:
                e.members = sorted(e.mods)
                e.metrics = ("helion_speedup_geomean",) if e.source == "dashboard" else ("geomean",)
                e.direction = "missing"
                continue
            if e.source == "dashboard":
                now = {(r.platform, r.kernel): r for r in cat[a]}
                prev = {(r.platform, r.kernel): r for r in cat[a - 1]}
                prev.update(e.prev_override)
                keys = e.series if e.catalog else list(e.mods)
                members, metrics, dirs = [], set(), []
                for key in keys:
                    if key not in now or key not in prev or self.missing("dashboard", key, a) \
                            or (self.missing("dashboard", key, a - 1) and key not in e.prev_override):
                        continue
                    after = expected(seed, now[key], self.mods(key, a))
                    before = expected(seed, prev[key], self.mods(key, a)) if e.catalog else \
                        expected(seed, now[key], self.mods(key, a, exclude=e))
                    mv = _moved(before, after)
                    if e.kind == "outlier" or e.kind == "scatter":
                        mv = mv or ["helion_speedup_geomean"]
                    if not mv:
                        continue
                    members.append(key)
                    metrics.update(mv)
                    lead = next((m for m in (*SPEEDUPS, "helion_latency_avg_ms", "compile_time_geomean_s") if m in mv))
                    r = after[lead] / before[lead]
                    if lead in ("helion_latency_avg_ms", "compile_time_geomean_s"):
                        r = 1 / r
                    dirs.append(1 if r > 1 else -1)
                    if "helion_speedup_geomean" in mv and e.cause != "noise":
                        side = after if (e.cause == "real" or e.honest == "new") else before
                        e.honest_values[f"{key[0]}/{key[1]}"] = round(side["helion_speedup_geomean"], 4)
                e.members = members
                e.metrics = tuple(m for m in (*SPEEDUPS, "helion_latency_avg_ms", "compile_time_geomean_s")
                                  if m in metrics)
            else:
                now = {(r.platform, r.kernel): r for r in pcat[a]}
                prev = {(r.platform, r.kernel): r for r in pcat[a - 1]} if pcat[a - 1] else {}
                keys = e.series if e.catalog else list(e.mods)
                members, dirs = [], []
                for key in keys:
                    if key not in now or key not in prev or self.missing("pretuned", key, a) \
                            or self.missing("pretuned", key, a - 1):
                        continue
                    after = pexpected(seed, now[key], self.pmods(key, a))
                    before = pexpected(seed, prev[key], self.pmods(key, a)) if e.catalog else \
                        pexpected(seed, now[key], self.pmods(key, a, exclude=e))
                    if abs(after / before - 1) < 0.04 and e.cause != "noise":
                        continue
                    members.append(key)
                    dirs.append(1 if after > before else -1)
                    if e.cause != "noise":
                        side = after if (e.cause == "real" or e.honest == "new") else before
                        e.honest_values[f"{key[0]}/{key[1]}"] = round(side, 4)
                e.members = members
                e.metrics = ("geomean",)
            if not e.members:
                e.label = False
                continue
            if e.cause == "method_change" and "Honest side" not in e.note and e.honest_values:
                e.note += (" Honest side: the new measurement." if e.honest == "new"
                           else " Honest side: the measurement before the change.")
            elif e.cause == "hardware" and e.honest_values:
                e.note += " Honest speedup: the level before the machine changed."
            up, down = dirs.count(1), dirs.count(-1)
            e.direction = "improvement" if up and not down else "regression" if down and not up else "mixed"
            if e.kind == "scatter":
                e.direction = "none"
