"""Which platforms and kernels Helion's workflow files say the nightly runs.

Mirrors the dashboard builder (`.github/dashboard/build_dashboard_data.py`): a platform's
expected kernels are the union of the `default: "a,b,c"` strings of its `kernels*` inputs in
`benchmark_dispatch.yml` (linear-attention variants also emit a `-bwd` row). The builder needs
every input of a platform; older files predate the later inputs (linattn, the TPU bridge), so
here a platform needs its first input and takes the union of those present. Platforms come from the `run_<alias>:
'true'` inputs `benchmark_nightly.yml` dispatches with (a `_linattn` job runs on its alias),
limited to the aliases the dispatch file has jobs for; without the nightly file, every alias the
dispatch file names. Text in, sets out: never raises on a file that does not parse (an unknown
expectation only weakens the outage check).
"""

from __future__ import annotations

import re

import yaml

from service.culprit.facts import DISPATCH, dispatch_kernel_defaults  # noqa: F401 (DISPATCH: matrix.py reads it here)
from service.culprit.rules import load_rules
from service.health.records import Expected

NIGHTLY = ".github/workflows/benchmark_nightly.yml"
_ALIAS = re.compile(r"^\s*alias:\s*([A-Za-z0-9_.-]+)\s*$", re.M)
_RUN_INPUT = re.compile(r"\brun_([A-Za-z0-9_]+)\s*:\s*['\"]?true['\"]?", re.I)


def _yaml(text: str | None):
    if not text:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def expected_kernels(dispatch_text: str | None) -> dict[str, frozenset[str]]:
    """Per platform, the kernels the dispatch workflow's defaults say it runs (which inputs list
    a platform's kernels is `kernel_inputs` in config/slices.toml)."""
    defaults = dispatch_kernel_defaults(_yaml(dispatch_text))
    if "kernels_linattn" in defaults:
        defaults["kernels_linattn"] = defaults["kernels_linattn"] | {
            f"{k}-bwd" for k in defaults["kernels_linattn"]
        }
    out = {}
    for platform, rule in load_rules().platforms.items():
        inputs = rule.kernel_inputs
        if inputs[0] in defaults:  # older files lack the later inputs (linattn, tpu bridge)
            out[platform] = frozenset(set().union(*(defaults[n] for n in inputs if n in defaults)))
    return out


def dispatch_aliases(dispatch_text: str | None) -> set[str]:
    """The platform_short of every job: its ``alias``, plus ``_<backend>`` when a job names a
    backend its alias does not already carry (older files: ``alias: b200`` + ``backend: cute``)."""
    doc = _yaml(dispatch_text)
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, dict):
        return set(_ALIAS.findall(dispatch_text or ""))
    out = set()
    for job in jobs.values():
        args = job.get("with") if isinstance(job, dict) else None
        if not isinstance(args, dict) or not isinstance(args.get("alias"), str):
            continue
        alias, backend = args["alias"], args.get("backend")
        if isinstance(backend, str) and backend and not alias.endswith(f"_{backend}"):
            alias = f"{alias}_{backend}"
        out.add(alias)
    return out


def expected_platforms(dispatch_text: str | None, nightly_text: str | None) -> frozenset[str] | None:
    aliases = dispatch_aliases(dispatch_text)
    if not aliases:
        return None
    if not nightly_text:
        return frozenset(aliases)
    asked = set()
    for name in _RUN_INPUT.findall(nightly_text):
        asked.add(name[: -len("_linattn")] if name.endswith("_linattn") else name)
    return frozenset(asked & aliases) if asked else frozenset(aliases)


def expected(sha: str, dispatch_text: str | None, nightly_text: str | None) -> Expected | None:
    """Expectations at one sha from the two files' text (None when the dispatch file is absent)."""
    if dispatch_text is None:
        return None
    return Expected(sha, expected_platforms(dispatch_text, nightly_text), expected_kernels(dispatch_text))


def runs_kernel(dispatch_text: str | None, platform: str, kernel: str) -> bool | None:
    """Does this dispatch file's default list for ``platform`` include ``kernel`` (None: unknown)?"""
    kernels = expected_kernels(dispatch_text).get(platform)
    return None if kernels is None else kernel in kernels
