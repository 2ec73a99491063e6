"""What the newest nightly of a source says about the benchmark itself: platforms that did not
run (whole or a shard of kernels), kernels that keep producing nothing, wrong answers (a fast
wrong kernel is a regression nobody sees on a speedup chart), and kernels taken out of the
matrix on purpose (news, not a failure).
"""

from __future__ import annotations

from service.health.history import platform_down, ran_on
from service.health.records import Finding, KernelResult, SourceNights

MAX_LISTED = 8


def _names(items, limit: int = MAX_LISTED) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _streak(data: SourceNights, key: tuple[str, str]) -> int:
    """Nightlies in a row, newest back, on which this kernel ran and produced nothing."""
    n = 0
    for rows in reversed(data.results):
        r = rows.get(key)
        if r is None or r.infra_missing or not r.failed:
            break
        n += 1
    return n


def _platforms(data: SourceNights) -> set[str]:
    if data.expected is not None and data.expected.platforms is not None:
        return set(data.expected.platforms)
    return {p for rows in data.results for (p, _k) in rows}  # what ran lately


def _kernels_expected(data: SourceNights, platform: str) -> set[str] | None:
    if data.expected is not None and platform in data.expected.kernels:
        return set(data.expected.kernels[platform])
    if len(data.results) < 2:
        return None
    return ran_on(data.results[-2], platform)  # without the workflow: what ran the night before


def _removed(data: SourceNights, platform: str) -> set[str]:
    """Kernels that ran lately on this platform and that the workflow no longer lists."""
    if data.expected is None or platform not in data.expected.kernels:
        return set()
    recent = set().union(*(ran_on(rows, platform) for rows in data.results[:-1])) if len(data.results) > 1 else set()
    return recent - set(data.expected.kernels[platform]) - ran_on(data.results[-1], platform)


def check_nightly(data: SourceNights, *, failing_nights: int, partial_min: int) -> list[Finding]:
    """Findings on the newest nightly of ``data`` (none when there is no nightly)."""
    if not data.nights:
        return []
    night, rows, src = data.nights[-1], data.results[-1], data.source
    on = f"on the nightly of {night.date:%Y-%m-%d} ({night.sha[:8]})"
    out: list[Finding] = []
    for platform in sorted(_platforms(data)):
        ran = ran_on(rows, platform)
        removed = _removed(data, platform)
        for kernel in sorted(removed):
            sha = data.removed_in.get((platform, kernel)) or (data.expected.sha if data.expected else "")
            out.append(Finding("matrix_change", src, f"{kernel} removed from the matrix in {sha[:8]}: not a failure",
                               platform, kernel, info=True))
        down = platform_down(rows, platform)
        if down:
            out.append(Finding("platform_outage", src, f"{platform}: {down} {on}", platform))
            continue
        expected = _kernels_expected(data, platform)
        if expected:
            missing = sorted(expected - ran - removed)
            if len(missing) >= partial_min:
                out.append(Finding(
                    "partial_outage", src,
                    f"{platform}: {len(missing)} of {len(expected)} expected kernels missing {on}: {_names(missing)}",
                    platform, shapes=tuple(missing),
                ))
        for kernel in sorted(ran):
            out += _kernel_findings(data, rows[(platform, kernel)], failing_nights, on, expected)
    return out


def _kernel_findings(data: SourceNights, r: KernelResult, failing_nights: int, on: str,
                     expected: set[str] | None) -> list[Finding]:
    src, p, k = data.source, r.platform_short, r.kernel
    if data.expected is not None and p in data.expected.kernels and k not in data.expected.kernels[p]:
        return []  # still listed but no longer asked for: the matrix change speaks for it
    if r.failed:
        n = _streak(data, (p, k))
        if n < failing_nights:
            return []
        why = f" (error: {r.error})" if r.error else ""
        return [Finding("failing_kernel", src, f"{k} on {p} produced no value on the last {n} nightlies{why}",
                        p, k, shapes=r.run_failures)]
    out = []
    if r.run_failures:
        out.append(Finding("failing_kernel", src, f"{k} on {p}: run failures {on} on {len(r.run_failures)} "
                           f"shape(s): {_names(r.run_failures)}", p, k, shapes=r.run_failures))
    bad = list(dict.fromkeys([*r.accuracy_failures, *(s for s, _ in r.low_accuracy)]))
    if bad:
        worst = min((a for _, a in r.low_accuracy), default=None)
        acc = f"; lowest helion_accuracy {worst:g}" if worst is not None else ""
        out.append(Finding("accuracy", src, f"{k} on {p}: wrong results {on} on {len(bad)} shape(s): "
                           f"{_names(bad)}{acc}", p, k, shapes=tuple(bad)))
    return out
