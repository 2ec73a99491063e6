"""ruptures, imported without the SciPy modules it loads for costs and methods benchwatch never uses.

`import ruptures` runs its package `__init__`, which imports every cost and search method, and
three of them import SciPy at module level (`rankdata` for the rank cost, `pdist`/`squareform`
for the rbf and cosine costs, `argrelmax` for the window method, `cdist` for two metrics): half
a second of `scipy.stats` and `scipy.spatial` on every `benchwatch detect` or `investigate`,
for functions the l2 path (KernelCPD linear, in C) never calls. While ruptures is imported,
those SciPy modules are stand-ins whose functions import the real module on first call and
then call it, so ruptures behaves exactly as before, only the import is lazy. The stand-ins are
taken out of `sys.modules` as soon as ruptures is loaded (anyone importing SciPy afterwards
gets SciPy), and a module already imported is left alone.
"""

from __future__ import annotations

import importlib
import sys
import types

_DEFERRED: dict[str, tuple[str, ...]] = {
    "scipy.stats.mstats": ("rankdata",),
    "scipy.spatial.distance": ("pdist", "squareform", "cdist"),
    "scipy.signal": ("argrelmax",),
}


def _later(module: str, name: str):
    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{module}.{name}, imported on first call"
    return call


def load() -> types.ModuleType:
    if "ruptures" in sys.modules:
        return sys.modules["ruptures"]
    placed: dict[str, types.ModuleType] = {}
    for module, names in _DEFERRED.items():
        if module in sys.modules:
            continue
        stub = types.ModuleType(module, f"stand-in for {module} while ruptures is imported")
        for name in names:
            setattr(stub, name, _later(module, name))
        sys.modules[module] = placed[module] = stub
    try:
        import ruptures
    finally:
        for module, stub in placed.items():
            if sys.modules.get(module) is stub:
                del sys.modules[module]
    return ruptures
