"""What each fact read from the repo does to the numbers, and which fact changed between nights.

A fact's value at a series' first night is its reference (multiplier 1); any other value draws a
deterministic multiplier ("clear or absent": either within ~1% or a clear move), so every real
pin / image / runner / baseline / harness change of the window moves the data the way it would."""
from __future__ import annotations

import math

from .model import ALIAS_VENDOR, Mult, family, rng


def _coa(r, p_absent, lo, hi, neg_bias=0.5):
    """clear-or-absent log factor."""
    if r.random() < p_absent:
        return r.normal(0, 0.004)
    sg = -1.0 if r.random() < neg_bias else 1.0
    return sg * r.uniform(lo, hi)


def torch_step(seed, u, v, alias, kernel):
    vend = ALIAS_VENDOR.get(alias, "nvidia")
    r = rng(seed, "torch", u, v, kernel, vend)
    ra = rng(seed, "torch", u, v, kernel, alias)
    # newer torch usually makes eager / compiled baselines faster (b, c < 1)
    b = _coa(r, 0.5, 0.045, 0.14, 0.7) + ra.normal(0, 0.005)
    c = _coa(r, 0.35, 0.05, 0.2, 0.65) + ra.normal(0, 0.005)
    return Mult(h=math.exp(r.normal(0, 0.006)), b=math.exp(b), t=math.exp(r.normal(0, 0.007)), c=math.exp(c))


def _tpu_major(u, v) -> bool:
    """jax / libtpu / torch pin moved (not just the torch_tpu commit)."""
    return u.split("|")[:3] != v.split("|")[:3]


def image_step(seed, alias, u, v, kernel):
    minor = alias == "tpu" and not _tpu_major(u, v)
    rc = rng(seed, "image", alias, u, v)
    common = _coa(rc, 0.93 if minor else 0.35, 0.02, 0.06)
    r = rng(seed, "image", alias, u, v, kernel)
    h = _coa(r, 0.975 if minor else 0.6, 0.04, 0.12)
    if family(kernel) == "mm" and ALIAS_VENDOR.get(alias) == "nvidia":
        b = _coa(r, 0.3, 0.05, 0.15, 0.6)  # cuBLAS moves with the CUDA image
    else:
        b = r.normal(0, 0.005)
    return Mult(h=math.exp(common + h), b=math.exp(common + b), t=math.exp(common + r.normal(0, 0.008)),
                c=math.exp(common + r.normal(0, 0.008)))


def runner_step(seed, alias, u, v, kernel):
    rc = rng(seed, "runner", alias, u, v)
    common = _coa(rc, 0.15, 0.03, 0.09)
    noise = rc.uniform(0.85, 1.45)
    r = rng(seed, "runner", alias, u, v, kernel)
    h = _coa(r, 0.7, 0.04, 0.09)
    return Mult(h=math.exp(common + h), b=math.exp(common), t=math.exp(common), c=math.exp(common), noise=noise)


def tbpin_step(seed, u, v, kernel):
    if u == "HEAD":  # pinning what was being cloned anyway
        return Mult()
    r = rng(seed, "tbpin", u, v, kernel)
    b = _coa(r, 0.93, 0.06, 0.15)
    t = _coa(r, 0.93, 0.05, 0.2)
    return Mult(b=math.exp(b), t=math.exp(t), c=math.exp(b))


def impl_step(seed, role, kernel, u, v):
    r = rng(seed, "impl", role, kernel, u, v)
    x = math.exp(_coa(r, 0.0, 0.08, 0.3) if role == "b" else _coa(r, 0.1, 0.05, 0.25))
    return Mult(**{role: x})


def harness_step(seed, kernel, alias, u, v):
    """Two passes (autotune, 2 min cool-down, cached re-run) -> one inline pass: some kernels measure
    slower right after autotuning in the same process on a hot GPU."""
    r = rng(seed, "harness", u, v, kernel, alias)
    h = _coa(r, 0.72, 0.035, 0.07, 0.0)
    return Mult(sp_h=math.exp(h), lat=math.exp(h))


def subprocess_step(seed, alias, u, v):
    f = rng(seed, "subproc", alias).uniform(1.3, 1.6)
    return Mult(ct=f if v else 1 / f)


def step(seed, mech, c, u, v):
    a, k = c.alias, c.kernel
    if mech == "torch":
        return torch_step(seed, u, v, a, k) if c.suite in ("tb", "lin") else Mult()
    if mech == "image":
        return image_step(seed, a, u, v, k)
    if mech == "runner":
        return runner_step(seed, a, u, v, k)
    if mech == "tb_pin":
        return tbpin_step(seed, u, v, k) if c.suite in ("tb", "bridge") and v not in ("HEAD", "n/a", "fla") \
            else Mult()
    if mech in ("impl_b", "impl_t", "impl_c"):
        return impl_step(seed, mech[-1], k, u, v) if u and v else Mult()
    if mech == "passes":
        return harness_step(seed, k, a, u, v) if c.suite == "tb" else Mult()
    if mech == "subprocess":
        return subprocess_step(seed, a, u, v)
    return Mult()


FACTOR_MECHS = ("torch", "image", "runner", "tb_pin", "impl_b", "impl_t", "impl_c", "passes", "subprocess")


class FactorTable:
    """Per series and mechanism: the multiplier of each value, accumulated along the order the
    values appear in (a value seen again, e.g. a revert, gets its old multiplier back)."""

    def __init__(self, seed, ctx_by_night):
        self.seed = seed
        self.tab: dict = {}
        for ctx in ctx_by_night:
            for s, c in ctx.items():
                for mech in FACTOR_MECHS:
                    v = getattr(c, mech)
                    t = self.tab.setdefault((mech, s), {"order": [], "f": {}})
                    if v in t["f"]:
                        t["last"] = v
                        continue
                    if not t["order"]:
                        t["f"][v] = Mult()
                    else:
                        u = t["last"]
                        t["f"][v] = t["f"][u].combine(step(seed, mech, c, u, v))
                    t["order"].append(v)
                    t["last"] = v

    def mults(self, c) -> list:
        s = (c.alias, c.kernel)
        out = []
        for mech in FACTOR_MECHS:
            t = self.tab.get((mech, s))
            if t is None:
                continue
            v = getattr(c, mech)
            m = t["f"].get(v)
            if m is None:  # a value no nightly saw (a manual run between two nightlies)
                m = t["f"][t["order"][-1]]
            out.append(m)
        return out


MECHS = ("shapes", "cg", "impl_b", "impl_t", "impl_c", "torch", "image", "runner", "tb_pin", "passes",
         "subprocess", "budget", "seed_fixed", "latency_on", "compile_mode")
LABELED = {"shapes": ("method_change", "shapes"), "cg": ("method_change", "cudagraph"),
           "impl_b": ("method_change", "baseline"), "torch": ("method_change", "baseline"),
           "tb_pin": ("method_change", "baseline"), "passes": ("method_change", "harness"),
           "subprocess": ("method_change", "autotune"), "budget": ("method_change", "autotune"),
           "image": ("hardware", "driver/toolchain"), "runner": ("hardware", "runner")}


