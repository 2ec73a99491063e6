"""Events: real changes of the repo's facts between nightlies, and planted ones.

*Natural* events come from the history itself. Between two nightlies the world diffs every
series' facts (``facts.series_facts``); a changed fact is a candidate, and the commit that
changed it is found by reading the facts at each commit of the window. Whether it moves the
series is the model's call (``sim.env_step`` and the harness physics); the label is written
only for series that the counterfactual ("same night, old value of this fact") says moved.

*Planted* events put effects on real commits (real code changes, chosen by ``footprint``),
and on no commit at all for what has none (a thermal week, an outage, noise).

``MECHANISM`` is the triage of a changed fact: its cause, kind, and which side of the step
reflects Helion's true performance (the honest speedup):

* a deliberate upgrade or fix of the measurement is honest after the change (pins, a fairer
  baseline, a timer that stops under-reporting, restored CUDA graphs, checked-in configs
  instead of a cold search, more shapes);
* a workaround that degrades it is honest before (CUDA graphs removed to dodge a capture
  crash, fewer shapes to fit CI time, a search budget that stops the autotuner early);
* hardware: a permanent runner or toolchain change is the new normal (after); an episode that
  ends (thermal, outage, a toolchain bump that gets reverted) is honest before;
* a real code or config change is honest after: Helion really is that fast now.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# fact key -> (cause, kind, honest side); None = not an event (a metric starting to exist)
MECHANISM = {
    ("dashboard", "runner"): ("hardware", "runner", "post"),
    ("dashboard", "image"): ("hardware", "driver/toolchain", "post"),
    ("dashboard", "runtime"): ("hardware", "driver/toolchain", "post"),
    ("dashboard", "cute_pin"): ("hardware", "driver/toolchain", "post"),
    ("dashboard", "tpu_toolchain"): ("hardware", "driver/toolchain", "post"),
    ("dashboard", "torch"): ("method_change", "baseline", "post"),
    ("dashboard", "tritonbench"): ("method_change", "baseline", "post"),
    ("dashboard", "linattn_pins"): ("method_change", "baseline", "post"),
    ("dashboard", "cudagraph"): ("method_change", "cudagraph", "graphed"),
    ("dashboard", "num_inputs"): ("method_change", "shapes", "more"),
    ("dashboard", "shapes"): ("method_change", "shapes", "more"),
    ("dashboard", "options"): ("method_change", "baseline", "post"),
    ("dashboard", "latency_mode"): ("method_change", "timer", "post"),
    ("dashboard", "passes"): ("method_change", "harness", "post"),
    ("dashboard", "autotune_env"): ("method_change", "autotune", "autotune"),
    ("dashboard", "nightly_env"): ("method_change", "autotune", "post"),
    ("dashboard", "aot"): ("method_change", "autotune", "post"),
    ("dashboard", "suite"): ("method_change", "harness", "post"),
    ("dashboard", "latency"): None,
    ("dashboard", "compile_time"): None,
    ("pretuned", "runner"): ("hardware", "runner", "post"),
    ("pretuned", "image"): ("hardware", "driver/toolchain", "post"),
    ("pretuned", "runtime"): ("hardware", "driver/toolchain", "post"),
    ("pretuned", "torch"): ("method_change", "baseline", "post"),
    ("pretuned", "timer"): ("method_change", "timer", "post"),
    ("pretuned", "tritonbench"): ("method_change", "timer", "post"),
    ("pretuned", "cudagraph"): ("method_change", "cudagraph", "graphed"),
    ("pretuned", "baselines"): ("method_change", "baseline", "post"),
    ("pretuned", "per_baseline"): ("method_change", "baseline", "post"),
    ("pretuned", "n_shapes"): ("method_change", "shapes", "more"),
    ("pretuned", "config"): ("real", "heuristics/config", "post"),
    ("pretuned", "cute_setup"): None,
}

KIND_ORDER = ("runner", "driver/toolchain", "cudagraph", "shapes", "baseline", "autotune", "timer",
              "harness", "heuristics/config", "code")


@dataclass
class Change:
    """Facts of some series changed between two nightlies, by one commit."""
    source: str
    night: int  # first nightly with the new value
    prev: dict  # (plat, kernel) -> the night it was last seen before
    keys: tuple  # fact keys that changed
    sha: str  # the commit that changed them
    subject: str
    series: dict = field(default_factory=dict)  # (plat, kernel) -> (old sf, new sf, keys)


@dataclass
class Planted:
    """A planted event (its Effect is ``effect`` in the model's list, by index)."""
    effect: int
    source: str
    cause: str
    kind: str
    honest: str  # pre | post
    culprit: str | None = None
    change: str | None = None
    note: str = ""
    outage: str | None = None  # platform with no rows
    members: tuple = ()  # fixed members (noise, outage); empty = decided by the counterfactual
    metrics: tuple | None = None  # fixed metrics (when nothing moves in the noise-free truth)
