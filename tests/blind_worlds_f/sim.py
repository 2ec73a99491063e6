"""The numbers: per-shape times, two timers, noise, and what a benchmark run writes.

Times, not speedups, are simulated. For each (platform, kernel, input) the model holds GPU
times of the eager baseline, Helion, the Triton reference and torch.compile, and how many
launches each issues. A run then measures them the way Helion's harness does:

* the **speedup timer** (tritonbench with ``--cudagraph``): launch overhead all but vanishes in a
  graph replay; without the flag (``remove_flags``) a short kernel is bound by host launch
  overhead, so Helion's heavier Python launch path shows up in its speedup;
* the **latency timer** (``triton.testing.do_bench``): Helion alone, never graphed.

Each measured implementation gets its own noise draw per run, so the baseline's noise is shared
by the three speedups (they all divide the same baseline measurement), while the latency timer's
noise is independent of the speedup timer's. On top come a per-platform-night clock factor,
autotuning variability before the nightly fixed its random seed, stray single-timer outliers,
failed inputs and failed kernels.

Everything that can move a series enters through three doors, so the world can ask "what would
this series read without X" (its labels are counterfactuals computed with the same code):
the series' facts (read from the repo: cudagraph, inputs, autotune settings, ...), environment
multipliers of ``EnvModel`` (runner, image, pins: one step per real change of the value), and
planted ``Effect`` s (real code changes, hardware episodes, noise).
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

import numpy as np

from . import catalog as C


def rng(*keys) -> np.random.Generator:
    """A generator seeded from a key tuple (strings and ints only: repr is stable)."""
    digest = hashlib.sha256(repr(keys).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def unit(*keys) -> float:
    """A uniform [0, 1) draw from a key tuple."""
    digest = hashlib.sha256(repr(keys).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2 ** 64


def geo(values) -> float:
    pos = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in pos) / len(pos)) if pos else 0.0


@dataclass
class Effect:
    """A planted change: ``comps`` multiply parts of the model for nights [start, end)."""
    start: int
    end: int | None
    source: str  # dashboard | pretuned
    targets: dict  # (platform, kernel) -> {component: factor}
    tag: str = ""
    transient: bool = False  # noise (blips, outliers): left out of noise-free truths
    sha_lo: int | None = None  # a code change: active for runs at or after this commit ...
    sha_hi: int | None = None  # ... and before the commit that reverts it

    def active(self, night: int, at: int | None = None) -> bool:
        """Code changes follow the run's commit; everything else the night."""
        if self.sha_lo is not None and at is not None:
            return at >= self.sha_lo and (self.sha_hi is None or at < self.sha_hi)
        return night >= self.start and (self.end is None or night < self.end)


# Components an Effect (or an environment step) can scale:
#   h, b, t, c   GPU time of Helion / baseline / Triton / torch.compile
#   ovh          host launch overhead (all implementations)
#   sp           Helion under the speedup timer only      lat   the latency timer only
#   compile      autotune wall-clock
#   pb:<name>    a pretuned baseline;  pb  every pretuned baseline
COMPONENTS = ("h", "b", "t", "c", "ovh", "sp", "lat", "compile")


@dataclass
class Base:
    """Priors of one dashboard series, for every input tritonbench has (index = input id)."""
    tb: np.ndarray
    th: np.ndarray
    tt: np.ndarray
    tc: np.ndarray
    autotune: np.ndarray
    runaway: np.ndarray  # inputs whose search does not converge (capped by a budget)
    capq: np.ndarray  # Helion slowdown when such a search is stopped early
    sigma_sp: float
    sigma_lat: float
    labels: list = field(default_factory=list)


class EnvModel:
    """Multipliers for environment values (runner, image, pins): a step per change.

    ``sequence[channel]`` lists the values a channel took, in the order they first appeared in
    the window; value i's multiplier is the product of the steps of changes 1..i, so a revert
    to an older value gets that value's multiplier back. ``rules[channel]`` draws a step for
    one (platform, kernel): {component: factor}, or {} for "this change does not touch it".
    """

    def __init__(self, seed: int):
        self.seed = seed
        self.sequence: dict = {}
        self.changes: dict = {}  # (channel, old, new) -> change commit (subject, sha, quiet)
        self.suppress: set = set()  # (channel, old, new, plat, kernel): no step for that series
        self._memo: dict = {}

    def observe(self, channel: tuple, value) -> None:
        seq = self.sequence.setdefault(channel, [])
        if value not in seq:
            seq.append(value)

    def mult(self, channel: tuple, value, plat: str, kernel: str) -> dict:
        seq = self.sequence.get(channel, [])
        if value not in seq:
            return {}
        key = (channel, value, plat, kernel)
        if key not in self._memo:
            out: dict = {}
            i = seq.index(value)
            for j in range(1, i + 1):
                for comp, f in self.step(channel, seq[j - 1], seq[j], plat, kernel).items():
                    out[comp] = out.get(comp, 1.0) * f
            self._memo[key] = out
        return self._memo[key]

    def step(self, channel: tuple, old, new, plat: str, kernel: str) -> dict:
        info = self.changes.get((channel, old, new))
        if info is not None and info.get("quiet"):
            return {}
        if (channel, old, new, plat, kernel) in self.suppress:
            return {}
        return env_step(self.seed, channel, old, new, plat, kernel, info or {})


def _mag(r: np.random.Generator, lo: float, hi: float, down: float = 0.5) -> float:
    """A factor whose size is in [lo, hi] (as a relative change), slower with prob ``down``."""
    m = 1.0 + r.uniform(lo, hi)
    return m if r.uniform() < down else 1.0 / m


def _pool(label: str) -> str:
    """A runner label without its trailing instance number (same machines, other queue)."""
    return label.rstrip("0123456789").rstrip(".-")


def env_step(seed: int, channel: tuple, old, new, plat: str, kernel: str, info: dict) -> dict:
    """What one change of an environment value does to one series. Judgement, stated:

    * runner: the same pool under another queue label does nothing; another machine class
      scales every implementation (kernels differ a little: memory vs compute bound) and the
      host's launch overhead;
    * image / runtime: a new CUDA/ROCm runtime changes library baselines (cuBLAS, cuDNN,
      rocBLAS: matmul, attention, SSM) and, less often, the compiler under Helion and Triton;
      a new image on the same runtime touches only library baselines;
    * torch pin: PyTorch's eager kernels and inductor change for some ops (baseline and
      torch.compile together); tritonbench pin: some operators' baselines change; both are
      drawn per kernel and shared across platforms;
    * CuTe DSL pin: Helion's CuTe code generation only (b200_cute);
    * TPU toolchain (torch_tpu / jax / libtpu): most bumps do nothing; some move Helion or the
      baselines on every TPU kernel; one that says it fixes bench timing changes the timer;
    * FLA pin: the linear-attention baseline; pretuned torch pin: its torch / torch.compile
      baselines; a regenerated pretuned config: Helion itself (a real change).
    """
    kind = channel[0]
    fam = _family(kernel)
    r_k = rng(seed, "env", channel, str(old), str(new), plat, kernel)
    r_shared = rng(seed, "env", channel, str(old), str(new), kernel)  # same across platforms
    r_chan = rng(seed, "env", channel, str(old), str(new))
    if kind == "runner":
        if _pool(str(old)) == _pool(str(new)):
            return {}
        same_prefix = str(old).split(".")[0].split("-")[0] == str(new).split(".")[0].split("-")[0]
        if same_prefix and r_chan.uniform() < 0.5:
            return {}
        f = _mag(r_chan, 0.07, 0.16, down=0.6)
        out = {c: f * math.exp(r_k.normal(0, 0.015)) for c in ("b", "t", "c")}
        out["h"] = f * (_mag(r_k, 0.05, 0.10) if r_k.uniform() < 0.3 else 1.0)
        out["ovh"] = _mag(r_chan, 0.1, 0.3)
        return out
    if kind == "image":
        old_rt, new_rt = old[1], new[1]  # (image, runtime) pairs
        lib = fam in ("matmul", "attention", "ssm")
        out = {}
        if old_rt != new_rt:
            if lib and r_shared.uniform() < 0.6:
                out["b"] = _mag(r_k, 0.08, 0.18, down=0.3)
            if r_shared.uniform() < 0.25:
                out["h"] = _mag(r_k, 0.06, 0.12)
                out["t"] = out["h"] * math.exp(r_k.normal(0, 0.01))
            out["ovh"] = _mag(r_chan, 0.03, 0.1)
        elif lib and r_shared.uniform() < 0.5:
            out["b"] = _mag(r_k, 0.07, 0.15, down=0.25)
        return out
    if kind == "torch":
        if r_shared.uniform() < 0.25:
            f = _mag(r_shared, 0.07, 0.16, down=0.3)
            return {"b": f * math.exp(r_k.normal(0, 0.01)),
                    "c": f * _mag(r_k, 0.0, 0.06) * math.exp(r_k.normal(0, 0.01))}
        return {}
    if kind == "tritonbench":
        if str(old) == "unpinned" or r_shared.uniform() >= 0.12:
            return {}
        return {"b": _mag(r_shared, 0.07, 0.14, down=0.4) * math.exp(r_k.normal(0, 0.01))}
    if kind == "cute_pin":
        if r_chan.uniform() < 0.6 or r_shared.uniform() < 0.4:
            return {}
        return {"h": _mag(r_chan, 0.07, 0.16) * math.exp(r_k.normal(0, 0.02))}
    if kind == "tpu_toolchain":
        subject = info.get("subject", "").lower()
        if "timing" in subject or "device sync" in subject:
            f = _mag(r_chan, 0.1, 0.2, down=0.8)
            return {"h": f * _mag(r_k, 0.04, 0.12), "b": f, "c": f}
        if r_chan.uniform() >= 0.15:
            return {}
        out = {}
        if r_k.uniform() < 0.5:
            out["h"] = _mag(r_k, 0.06, 0.14)
        if r_k.uniform() < 0.3:
            out["b"] = _mag(r_k, 0.06, 0.12)
        return out
    if kind == "linattn_pins":
        if r_shared.uniform() < 0.4:
            return {"b": _mag(r_shared, 0.06, 0.12)}
        return {}
    if kind == "p_torch":
        out = {}
        if r_shared.uniform() < 0.35:
            out["pb:torch_compile"] = _mag(r_shared, 0.07, 0.18, down=0.3)
        if r_shared.uniform() < 0.2:
            out["pb:torch"] = _mag(r_shared, 0.06, 0.12, down=0.3)
        return out
    if kind == "p_config":
        if r_k.uniform() < 0.15:
            return {}
        return {"h": _mag(r_k, 0.07, 0.22, down=0.35)}
    return {}


def _family(kernel: str) -> str:
    if kernel in C.KERNELS:
        return C.KERNELS[kernel].family
    base = kernel.removesuffix("-bwd")
    if base in C.LINATTN:
        return "linattn"
    if kernel in C.PRETUNED:
        return C.PRETUNED[kernel][0]
    return "norm"


# ----------------------------------------------------------------------------------------

class Model:
    """Per-series priors, and the measurement of one series in one run."""

    def __init__(self, seed: int, env: EnvModel, effects: list, scatter: dict, runaway: dict):
        self.seed = seed
        self.env = env
        self.effects = effects
        self.scatter = scatter  # (source, plat, kernel) -> (first night, sigma) high scatter
        self.runaway = runaway  # (plat, kernel) -> input ids whose search never converges
        self._base: dict = {}

    # -- priors ----------------------------------------------------------------------------
    def base(self, plat: str, kernel: str) -> Base:
        key = (plat, kernel)
        if key in self._base:
            return self._base[key]
        r = rng(self.seed, "base", plat, kernel)
        ps = C.PLATFORMS[plat]
        lin = kernel.removesuffix("-bwd") in C.LINATTN
        if lin:
            fwd, bwd = C.LINATTN[kernel.removesuffix("-bwd")]
            spec = C.KSpec("linattn", 6, 900.0 if kernel.endswith("-bwd") else 350.0,
                           bwd if kernel.endswith("-bwd") else fwd, 0.0, 0.0, (1, 1, 1, 1),
                           0.0, "lin")
        else:
            spec = C.KERNELS.get(kernel) or C.KERNELS["softmax"]
        n = spec.n_avail
        size = np.geomspace(0.15, 6.0, n) * math.exp(r.normal(0, 0.2))
        tb = spec.base_us * ps.time * size * np.exp(r.normal(0, 0.08, n))
        bias = ps.bias.get(spec.family, 1.0) * math.exp(r.normal(0, 0.06))
        # Helion's margin varies by input: it tends to grow with size (fusion pays off more).
        trend = np.linspace(-0.08, 0.08, n) * r.uniform(0.5, 1.5)
        sp_h = spec.sp_h * bias * np.exp(trend + r.normal(0, 0.12, n))
        th = tb / sp_h
        tt = tb / (spec.sp_t * np.exp(r.normal(0, 0.1, n))) if spec.sp_t else np.zeros(n)
        tc = tb / (spec.sp_c * np.exp(r.normal(0, 0.1, n))) if spec.sp_c else np.zeros(n)
        at = spec.autotune_s * ps.autotune * np.exp(r.normal(0, 0.35, n)) * (0.6 + 0.8 * size / size.max())
        run = np.zeros(n, dtype=bool)
        for i in self.runaway.get(key, ()):
            if i < n:
                run[i] = True
                at[i] = r.uniform(12000, 30000)
        capq = np.where(run, r.uniform(1.04, 1.09, n), 1.0)
        s_sp = float(np.clip(r.lognormal(math.log(0.011), 0.45), 0.005, 0.03))
        s_lat = float(np.clip(r.lognormal(math.log(0.011), 0.45), 0.005, 0.03))
        if plat == "b200" and kernel == "gemm":  # run.py: "gemm b200 can have noisy results"
            s_sp = max(s_sp, 0.02)
        b = Base(tb, th, tt, tc, at, run, capq, s_sp, s_lat)
        self._base[key] = b
        return b

    # -- what acts on a series at a night --------------------------------------------------
    def factors(self, source: str, night: int, plat: str, kernel: str, sf: dict,
                drop: tuple = (), noise: bool = True, at: int | None = None) -> dict:
        """Component factors from the environment (via the series' facts) and effects."""
        out: dict = {}

        def fold(d):
            for comp, f in d.items():
                out[comp] = out.get(comp, 1.0) * f

        for ch, val in env_channels(source, plat, kernel, sf):
            fold(self.env.mult(ch, val, plat, kernel))
        for i, e in enumerate(self.effects):
            if i in drop or e.source != source or not e.active(night, at):
                continue
            if e.transient and not noise:
                continue
            t = e.targets.get((plat, kernel)) or e.targets.get((plat, "*"))
            if t:
                fold(t)
        return out


def env_channels(source: str, plat: str, kernel: str, sf: dict) -> list:
    """(channel, value) pairs of a series' environment, read from its facts."""
    if source == "pretuned":
        return [(("p_runner", plat), sf["runner"]), (("p_image", plat), (sf["image"], sf["runtime"])),
                (("p_torch",), sf["torch"]), (("p_config", kernel, plat), sf["config"])]
    out = [(("runner", plat), sf["runner"]), (("image", plat), (sf["image"], sf["runtime"]))]
    if "torch" in sf:
        out.append((("torch",), sf["torch"]))
    if "tritonbench" in sf:
        out.append((("tritonbench",), sf["tritonbench"]))
    if "cute_pin" in sf:
        out.append((("cute_pin",), sf["cute_pin"]))
    if "tpu_toolchain" in sf:
        out.append((("tpu_toolchain",), sf["tpu_toolchain"]))
    if "linattn_pins" in sf:
        out.append((("linattn_pins",), sf["linattn_pins"]))
    return out


BUDGET = "HELION_AUTOTUNE_BUDGET_SECONDS"
SEED = "HELION_AUTOTUNE_RANDOM_SEED"
SUBPROCESS = "HELION_AUTOTUNE_BENCHMARK_SUBPROCESS"
OUTLIER_P = 0.01  # stray single-timer outliers, per series and run
SHAPE_FAIL_P = 0.003  # an input fails to run
ACC_FAIL_P = 0.004  # an input runs but fails the accuracy check
KERNEL_FAIL_P = 0.003  # Helion fails on every input of a kernel


def _lin_size(name: str) -> float:
    """Work of a linear-attention input from its label (B*T*H*D, or T*H*D for varlen)."""
    nums = {k: int(v) for k, v in re.findall(r"([BTHD])(\d+)", name)}
    return nums.get("B", 1) * nums.get("T", 1) * nums.get("H", 1) * nums.get("D", 1) / 3.0e8


class Measure:
    """One series measured in one run: what benchmarks/run.py (or run_linattn.py, run_tpu.py)
    would write for it. ``noise=False`` gives the noise-free truth the labels are made of."""

    def __init__(self, model: Model):
        self.m = model

    def dashboard(self, night: int, run_key: str, plat: str, kernel: str, sf: dict,
                  *, noise: bool = True, drop: tuple = (), extra: dict | None = None,
                  at: int | None = None) -> dict | None:
        m = self.m
        suite = sf["suite"]
        r = rng(m.seed, "run", run_key, plat, kernel) if noise else None
        f = m.factors("dashboard", night, plat, kernel, sf, drop, noise, at)
        for comp, v in (extra or {}).items():
            f[comp] = f.get(comp, 1.0) * v
        if suite == "linattn":
            return self._linattn(night, run_key, plat, kernel, sf, f, r)
        b = m.base(plat, kernel)
        spec = C.KERNELS.get(kernel) or C.KERNELS["softmax"]
        n_avail = spec.n_avail
        if suite == "tpu":
            idx = C.pick_inputs(n_avail, 6)
        else:
            idx = C.pick_inputs(n_avail, sf.get("num_inputs"))
        labels = [C.shape_labels(spec.shape, n_avail)[i] for i in idx]
        n = len(idx)
        tb, th = b.tb[idx] * f.get("b", 1.0), b.th[idx] * f.get("h", 1.0)
        tt, tc = b.tt[idx] * f.get("t", 1.0), b.tc[idx] * f.get("c", 1.0)
        if suite.startswith("tpu"):
            tt = np.zeros(n)
        if suite == "tpu_bridge":  # tritonbench's baselines run on TPU through the bridge
            rb = rng(m.seed, "bridge", kernel)
            tb = tb * math.exp(rb.normal(0, 0.15))
            tc = tc * math.exp(rb.normal(0, 0.1))
        if dict(sf.get("options", ())).get("precision") == "'tf32'":
            tb = tb * 0.55  # eager einsums at TF32 instead of strict fp32
        auto = dict(sf.get("autotune_env", sf.get("nightly_env", ())))
        auto_s = b.autotune[idx] * f.get("compile", 1.0)
        if auto.get(SUBPROCESS) == "1" and not suite.startswith("tpu"):
            auto_s = auto_s * (1.2 + 0.25 * unit(m.seed, "subproc", plat, kernel))
        if BUDGET in auto:
            budget = float(auto[BUDGET])
            capped = auto_s > budget
            auto_s = np.minimum(auto_s, budget)
            th = th * np.where(capped, b.capq[idx], 1.0)
        if r is not None:
            clock = math.exp(rng(m.seed, "clock", run_key, plat).normal(0, 0.004))
            tb, th, tt, tc = tb * clock, th * clock, tt * clock, tc * clock
            if SEED not in auto:  # autotuning draws a different search each night
                th = th * np.exp(r.normal(0, 0.012, n))
                th = th * np.where(r.uniform(size=n) < 0.04, r.uniform(1.05, 1.12, n), 1.0)
        ps = C.PLATFORMS[plat]
        ovh = {x: C.OVERHEAD_US[x] * ps.overhead * f.get("ovh", 1.0) for x in "bhtc"}
        nb, nh, nt, nc = spec.launches
        graphed = bool(sf.get("cudagraph")) and not suite.startswith("tpu")
        if graphed:
            mb, mh = tb + nb * C.GRAPH_US, th + nh * C.GRAPH_US
            mt, mc = tt + nt * C.GRAPH_US, tc + nc * C.GRAPH_US
        else:
            mb, mh = np.maximum(tb, nb * ovh["b"]) + 0.5, np.maximum(th, nh * ovh["h"]) + 0.5
            mt, mc = np.maximum(tt, nt * ovh["t"]) + 0.5, np.maximum(tc, nc * ovh["c"]) + 0.5
        one_timer = suite.startswith("tpu")
        lat = mh.copy() if one_timer else np.maximum(th * 1.03, nh * ovh["h"])
        mh = mh * f.get("sp", 1.0)
        lat = lat * f.get("lat", 1.0)
        sigma = b.sigma_sp
        hs = m.scatter.get(("dashboard", plat, kernel))
        if hs and night >= hs[0]:
            sigma = hs[1]
        if r is not None:
            def jitter(s):
                return np.exp(s * (0.8 * r.normal() + 0.6 * r.normal(size=n)))
            eb, eh, et, ec = jitter(sigma), jitter(sigma), jitter(sigma), jitter(sigma)
            mb, mh, mt, mc = mb * eb, mh * eh, mt * et, mc * ec
            lat = lat * (eh if one_timer else jitter(b.sigma_lat))
            if r.uniform() < OUTLIER_P:
                size = 1.0 + r.uniform(0.15, 0.2)
                size = size if r.uniform() < 0.6 else 1.0 / size
                if one_timer:  # one measurement feeds both numbers
                    mh, lat = mh * size, lat * size
                elif r.uniform() < 0.5:
                    mh = mh * size
                else:
                    lat = lat * size
        hsp = mb / mh
        tsp = np.where(tt > 0, mb / np.where(mt > 0, mt, 1.0), 0.0)
        csp = np.where(tc > 0, mb / np.where(mc > 0, mc, 1.0), 0.0)
        out = {"shapes": labels, "helion_speedup": hsp, "helion_accuracy": np.ones(n),
               "triton_speedup": tsp if tt.any() else None,
               "torch_compile_speedup": csp if tc.any() else None,
               "helion_latency_ms": lat / 1000.0 if (sf.get("latency") or suite.startswith("tpu")) else None,
               "helion_compile_time_s": None}
        if sf.get("compile_time") or suite.startswith("tpu"):
            if sf.get("passes") == 2:  # second pass hits the autotune cache: codegen only
                ct = 1.5 + 0.004 * auto_s
            else:
                ct = auto_s + 8.0
            if r is not None:
                ct = ct * np.exp(r.normal(0, 0.08, n))
            out["helion_compile_time_s"] = ct
        if r is not None:
            self._failures(out, r, n)
        return out

    @staticmethod
    def _failures(out: dict, r: np.random.Generator, n: int) -> None:
        if r.uniform() < KERNEL_FAIL_P:
            out["helion_speedup"] = np.zeros(n)
            out["helion_accuracy"] = np.zeros(n)
            if out["helion_latency_ms"] is not None:
                out["helion_latency_ms"] = np.zeros(n)
            out["helion_compile_time_s"] = None
            return
        if r.uniform() < SHAPE_FAIL_P:
            i = int(r.integers(n))
            out["helion_speedup"][i] = 0.0
            out["helion_accuracy"][i] = 0.0
            if out["helion_latency_ms"] is not None:
                out["helion_latency_ms"][i] = 0.0
        if r.uniform() < ACC_FAIL_P:
            out["helion_accuracy"][int(r.integers(n))] = 0.0

    def _linattn(self, night, run_key, plat, kernel, sf, f, r):
        m = self.m
        names = list(sf.get("shapes") or ())
        if not names or (not sf.get("aot") and len(names) > 2):
            # run_linattn autotunes every kernel from cold; more than two dense shapes ran past
            # the job timeout until configs were checked in (#3298), so no artifact came out.
            return None
        fwd, bwd = C.LINATTN[kernel.removesuffix("-bwd")]
        sp0 = bwd if kernel.endswith("-bwd") else fwd
        ps = C.PLATFORMS[plat]
        tb, th = [], []
        for name in names:
            rs = rng(m.seed, "lin", plat, kernel, name)
            t = (400.0 if kernel.endswith("-bwd") else 150.0) * ps.time * _lin_size(name) ** 0.9
            t *= math.exp(rs.normal(0, 0.1))
            tb.append(t)
            th.append(t / (sp0 * ps.bias.get("linattn", 1.0) * math.exp(rs.normal(0, 0.12))))
        tb = np.array(tb) * f.get("b", 1.0)
        th = np.array(th) * f.get("h", 1.0)
        if sf.get("aot"):  # checked-in configs instead of a cold search in CI
            ra = rng(m.seed, "aot", plat, kernel)
            th = th * (ra.uniform(0.82, 0.95) if ra.uniform() < 0.75 else ra.uniform(1.03, 1.1))
        n = len(names)
        mb, mh = tb + 3.0, th + 3.0
        if r is not None:
            sigma = 0.006 + 0.012 * unit(m.seed, "linsig", plat, kernel)
            clock = math.exp(rng(m.seed, "clock", run_key, plat).normal(0, 0.004))
            mb = mb * clock * np.exp(sigma * (0.8 * r.normal() + 0.6 * r.normal(size=n)))
            mh = mh * clock * np.exp(sigma * (0.8 * r.normal() + 0.6 * r.normal(size=n)))
            if r.uniform() < OUTLIER_P:
                mh = mh * (1.0 + r.uniform(0.15, 0.2))
        mh = mh * f.get("sp", 1.0) * f.get("lat", 1.0)
        out = {"shapes": names, "helion_speedup": mb / mh, "helion_accuracy": np.ones(n),
               "triton_speedup": None, "torch_compile_speedup": None,
               "helion_latency_ms": mh / 1000.0, "helion_compile_time_s": None}
        if r is not None:
            self._failures(out, r, n)
        return out

    # -- pretuned --------------------------------------------------------------------------
    def pretuned(self, night: int, run_key: str, plat: str, kernel: str, sf: dict, cute: bool,
                 *, noise: bool = True, drop: tuple = (), extra: dict | None = None,
                 at: int | None = None) -> dict:
        """The metrics pretuned_kernels/run.py records for one kernel (or its error)."""
        m = self.m
        if cute and not sf.get("cute_setup", True):
            return {"error": "ImportError: cannot import name 'cute' from 'cutlass' "
                             "(the nvidia-cutlass-dsl vLLM installed is not Helion's pin)"}
        r = rng(m.seed, "prun", run_key, plat, kernel) if noise else None
        if r is not None and r.uniform() < 0.004:
            return {"error": "RuntimeError: CUDA error: an illegal memory access was encountered"}
        f = m.factors("pretuned", night, plat, kernel, sf, drop, noise, at)
        for comp, v in (extra or {}).items():
            f[comp] = f.get(comp, 1.0) * v
        fam, typical, spread = C.PRETUNED.get(kernel, ("norm", 1.2, 0.15))
        n = int(sf["n_shapes"])
        rb = rng(m.seed, "pbase", plat, kernel)
        size = np.geomspace(1.0, 60.0, n) * rb.uniform(2.0, 8.0)
        th = size * np.exp(rb.normal(0, 0.1, n)) * (0.62 if plat == "b200" else 1.0)
        trend = np.linspace(-0.1, 0.1, n) * rb.uniform(0.5, 1.5)
        t_first = th * typical * np.exp(trend + rb.normal(0, spread, n))
        names = list(sf["baselines"])
        tbs = {}
        for j, name in enumerate(names):
            if j == 0:
                t = t_first
            else:
                rr = rng(m.seed, "pbl", plat, kernel, name)
                centre = {"torch_compile": 0.82 if fam == "norm" else 0.93}.get(name, 0.9)
                t = t_first * centre * np.exp(rr.normal(0, 0.12, n))
            tbs[name] = t * f.get("pb", 1.0) * f.get(f"pb:{name}", 1.0)
        th = th * f.get("h", 1.0)
        if sf.get("cudagraph") and "cache_clear" in sf.get("timer", ""):
            rp = rng(m.seed, "l2", plat, kernel)  # cold L2 before every replay
            th = th + th * rp.uniform(0.05, 0.35)
            tbs = {k: v + v * rng(m.seed, "l2", plat, kernel, k).uniform(0.15, 0.6)
                   for k, v in tbs.items()}
        if r is not None:
            sigma = 0.005 + 0.015 * unit(m.seed, "psig", plat, kernel)
            hs = m.scatter.get(("pretuned", plat, kernel))
            if hs and night >= hs[0]:
                sigma = hs[1]
            th = th * np.exp(sigma * (0.8 * r.normal() + 0.6 * r.normal(size=n)))
            tbs = {k: v * np.exp(sigma * (0.8 * r.normal() + 0.6 * r.normal(size=n)))
                   for k, v in tbs.items()}
            if r.uniform() < OUTLIER_P:
                th = th * (1.0 + r.uniform(0.15, 0.2)) ** (1 if r.uniform() < 0.6 else -1)
        th = th * f.get("sp", 1.0)
        best = np.min(np.stack([tbs[k] for k in names]), axis=0) / th
        rec = {"helion_wins": int(np.sum(best > 1.0)), "total": n,
               "geomean": round(geo(best), 4), "best_speedup": round(float(best.max()), 4),
               "cudagraph": bool(sf.get("cudagraph"))}
        if sf.get("per_baseline", True):
            rec["baselines"] = {}
            for k in names:
                s = tbs[k] / th
                rec["baselines"][k] = {"wins": int(np.sum(s > 1.0)), "total": n,
                                       "geomean": round(geo(s), 4),
                                       "best_speedup": round(float(s.max()), 4)}
        return rec


def headline(meas: dict | None) -> dict:
    """The dashboard's per-run aggregates of one series (as build_dashboard_data computes)."""
    if meas is None:
        return {}
    if "error" in meas:
        return {}
    if "geomean" in meas:
        return {"geomean": meas["geomean"]}
    out = {"helion_speedup_geomean": geo(meas["helion_speedup"])}
    for k, name in (("triton_speedup", "triton_speedup_geomean"),
                    ("torch_compile_speedup", "torch_compile_speedup_geomean")):
        if meas.get(k) is not None:
            out[name] = geo(meas[k])
    if meas.get("helion_latency_ms") is not None:
        vals = [v for v in meas["helion_latency_ms"] if v]
        out["helion_latency_avg_ms"] = sum(vals) / len(vals) if vals else 0.0
    if meas.get("helion_compile_time_s") is not None:
        out["compile_time_geomean_s"] = geo(meas["helion_compile_time_s"])
    return out
