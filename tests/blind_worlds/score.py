"""Scoring a monitor's alerts against a world's labels (rules in the package docstring)."""
from __future__ import annotations

from collections import Counter


# One kind, two spellings: the issue names them "driver/toolchain" and "heuristics/config", some
# world writers and benchwatch write the first word alone. Both sides are read through this.
KIND_SPELLINGS = {"driver/toolchain": "driver", "toolchain": "driver", "heuristics/config": "heuristics",
                  "config": "heuristics"}


def same_kind(a: str | None, b: str | None) -> bool:
    return KIND_SPELLINGS.get(a, a) == KIND_SPELLINGS.get(b, b)


def _matches(world, label, alert) -> bool:
    if alert.get("source") != label.source:
        return False
    if (alert.get("platform_short"), alert.get("kernel")) not in set(label.members):
        return False
    if label.kind == "scatter":
        return True  # any alert on a high-scatter series is about that scatter
    a = world.night_of(alert.get("first_bad_run_id"))
    b = world.night_of(label.first_bad_run_id)
    return a is not None and b is not None and abs(a - b) <= 2


def _before_noise(world, noise_label, alert) -> bool:
    """Did the alert's first bad nightly come more than two before the series turned noisy (a
    series that turns noisy at night 78 can have had a real step at night 68)?"""
    a, b = world.night_of(alert.get("first_bad_run_id")), world.night_of(noise_label.first_bad_run_id)
    return a is not None and b is not None and a < b - 2


def _owners(world, alert, candidates: list) -> list:
    """The labels an alert that matches several is about: those that list its metric (when any
    does), then the nearest first-bad nightly. Two events two nights apart on one series (a
    cudagraph flip, then a compile-time fix on every kernel) each get their own alerts instead
    of sharing every alert of both."""
    if len(candidates) < 2:
        return candidates
    own = [l for l in candidates if alert.get("metric") in l.metrics] or candidates
    a = world.night_of(alert.get("first_bad_run_id"))

    def gap(l):
        b = world.night_of(l.first_bad_run_id)
        return abs(a - b) if a is not None and b is not None and l.kind != "scatter" else 0

    best = min(gap(l) for l in own)
    return [l for l in own if gap(l) == best]


def score(world, alerts: list[dict], own_label: bool = False) -> dict:
    """An alert counts for every label it matches (the rule every figure so far was measured
    with). ``own_label``: only for the labels `_owners` gives it to, a stricter reading where two
    labels on one series two nights apart each need alerts of their own (a label left with none
    reads as missed, so it is reported beside the first rule, not instead of it)."""
    alerts = [a for a in alerts if a.get("state", "live") != "retracted"]
    labels = world.labels
    matched: dict[str, list[dict]] = {l.id: [] for l in labels}
    used = set()
    of_event = set()  # ids of alerts that an event label (not noise) matches, whoever owns them
    for j, a in enumerate(alerts):
        hits = [l for l in labels if _matches(world, l, a)]
        if any(l.cause != "noise" for l in hits):
            of_event.add(id(a))
        for l in (_owners(world, a, hits) if own_label else hits):
            matched[l.id].append(a)
            used.add(j)
    cases = []
    for l in labels:
        ms = matched[l.id]
        # an alert on a noisy series that an event of the world explains (the series moved with
        # a labeled event, within its nights and members), or that came before the series turned
        # noisy, is not an alert about the scatter: the stricter reading, reported beside the first.
        # A case counts there when it keeps such an alert and, as in the first reading, the cause
        # most of its alerts give is not noise
        unexplained = [a for a in ms if l.cause == "noise" and id(a) not in of_event
                       and not _before_noise(world, l, a)]
        got_cause = Counter(a.get("cause") for a in ms).most_common(1)[0][0] if ms else None
        got_kind = Counter(a.get("kind") for a in ms if a.get("cause") == got_cause).most_common(1)[0][0] if ms else None
        first_ok = bool(ms) and Counter(a.get("first_bad_run_id") for a in ms).most_common(1)[0][0] == l.first_bad_run_id
        culprit_ok = bool(ms) and l.culprit_sha is not None and \
            Counter(a.get("culprit_sha") for a in ms).most_common(1)[0][0] == l.culprit_sha
        change_ok = bool(ms) and l.change_sha is not None and any(a.get("change_sha") == l.change_sha for a in ms)
        hon_n = hon_ok = 0
        for a in ms:
            want = l.honest_speedup.get(f"{a.get('platform_short')}/{a.get('kernel')}")
            if want is None or a.get("metric") not in ("helion_speedup_geomean", "geomean"):
                continue
            hon_n += 1
            got = a.get("honest_speedup")
            if got is not None and want and abs(got - want) / want <= 0.03:
                hon_ok += 1
        ended_ok = None
        if l.end_run_id is not None:
            ended_ok = bool(ms) and any(a.get("state") == "ended" and a.get("end_run_id") is not None and
                                        world.night_of(a["end_run_id"]) is not None and
                                        abs(world.night_of(a["end_run_id"]) - world.night_of(l.end_run_id)) <= 1 for a in ms)
        lag = None
        posted = [a.get("first_posted_night") for a in ms if a.get("first_posted_night") is not None]
        if posted:
            lag = min(posted) - world.night_of(l.first_bad_run_id)
        cases.append(dict(id=l.id, source=l.source, cause=l.cause, kind=l.kind, members=len(l.members),
                          alerts=len(ms), got_cause=got_cause, got_kind=got_kind,
                          cause_ok=(got_cause == l.cause) if l.cause != "noise" else (not ms or got_cause == "noise"),
                          kind_ok=same_kind(got_kind, l.kind) if l.cause != "noise" else (not ms or got_cause == "noise"), first_bad_ok=first_ok, culprit_ok=culprit_ok if l.culprit_sha else None,
                          change_ok=change_ok if l.change_sha else None, honest_ok=hon_ok, honest_n=hon_n,
                          ended_ok=ended_ok, lag=lag, note=l.note, alerts_unexplained=len(unexplained)))
    non_noise = [c for c in cases if c["cause"] != "noise"]
    noise = [c for c in cases if c["cause"] == "noise"]
    detected = [c for c in non_noise if c["alerts"]]

    def rate(xs):
        xs = list(xs)
        return round(sum(1 for x in xs if x) / len(xs), 4) if xs else None

    per_cause = {}
    for cause in ("real", "method_change", "hardware", "noise"):
        cs = [c for c in cases if c["cause"] == cause]
        per_cause[cause] = rate(c["cause_ok"] for c in cs)
    false = [a for j, a in enumerate(alerts) if j not in used and a.get("cause") != "noise"]
    false_alerts = len(false)
    # the same false alerts read by the message they went out in (one Slack summary per group): a
    # false alert in a group that also holds an alert of a labeled event is one kernel too many in
    # a right message; one in a group of false alerts only is a message about nothing
    true_groups = {a.get("group_id") for j, a in enumerate(alerts) if j in used and a.get("group_id") is not None}
    false_in_false_groups = sum(1 for a in false if a.get("group_id") is None or a.get("group_id") not in true_groups)
    denom = max(world.series_count() * len(world.nights), 1)
    lags = [c["lag"] for c in detected if c["lag"] is not None]
    hon_n = sum(c["honest_n"] for c in non_noise)
    eps = [c for c in non_noise if c["ended_ok"] is not None]
    return {
        "events": len(non_noise),
        "detection_recall": rate(c["alerts"] > 0 for c in non_noise) or 0.0,
        "cause_accuracy": rate(c["cause_ok"] for c in non_noise) or 0.0,
        "per_cause_accuracy": per_cause,
        "kind_accuracy": rate(c["kind_ok"] for c in non_noise) or 0.0,
        "first_bad_exact": rate(c["first_bad_ok"] for c in non_noise) or 0.0,
        "culprit_top1": rate(c["culprit_ok"] for c in non_noise if c["culprit_ok"] is not None),
        "change_commit_accuracy": rate(c["change_ok"] for c in non_noise if c["change_ok"] is not None),
        "honest_within_3pct": round(sum(c["honest_ok"] for c in non_noise) / hon_n, 4) if hon_n else None,
        "noise_cases_alerted": sum(1 for c in noise if c["alerts"] and c["got_cause"] != "noise"),
        "noise_cases": len(noise),
        "noise_cases_alerted_unexplained": sum(1 for c in noise if c["alerts_unexplained"] and c["got_cause"] != "noise"),
        "false_alerts": false_alerts,
        "false_alerts_per_10k_series_nights": round(false_alerts * 10_000 / denom, 3),
        "false_alerts_no_event": false_in_false_groups,
        "false_alerts_no_event_per_10k_series_nights": round(false_in_false_groups * 10_000 / denom, 3),
        "mean_nights_to_post": round(sum(lags) / len(lags), 3) if lags else None,
        "episodes_ended_correctly": f"{sum(1 for c in eps if c['ended_ok'])}/{len(eps)}",
        "cases": cases,
    }


def perfect_alerts(world) -> list[dict]:
    """The alert list a perfect monitor would hand in (one per label member and headline metric)."""
    out = []
    for l in world.labels:
        if l.cause == "noise":
            continue
        metric = "helion_speedup_geomean" if l.source == "dashboard" else "geomean"
        for (p, k) in l.members:
            out.append(dict(source=l.source, platform_short=p, kernel=k, metric=metric,
                            first_bad_run_id=l.first_bad_run_id, last_good_run_id=l.last_good_run_id,
                            cause=l.cause, kind=l.kind, culprit_sha=l.culprit_sha, change_sha=l.change_sha,
                            honest_speedup=l.honest_speedup.get(f"{p}/{k}"),
                            state="ended" if l.end_run_id else "live", end_run_id=l.end_run_id,
                            group_id=l.id, first_posted_night=world.night_of(l.first_bad_run_id)))
    return out
