"""Health checks against the real Helion repository: the platforms and kernels each nightly
should run are read from the real `benchmark_nightly.yml`/`benchmark_dispatch.yml` at the
nightly's sha. Real history: 555de3b7 "Disable rope-bwd from nightly perf CI for now"
(2026-05-20) took rope-bwd out of the GPU matrix between the nightlies at d989ee8d and 27b93292.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from service.config import Settings
from service.health import matrix
from service.schedule.run_once import run_once
from service.store.tables import HealthAlert
from tests.slack_standin import TOKEN, SlackStandIn

BEFORE = "d989ee8d96e331246058d173b3c43d76f48ec820"  # 2026-05-18, rope-bwd still listed
AFTER = "27b93292abb82d9d83824f22723a01a26a4688f9"  # 2026-05-22
LATER = "ed36077d683c63f064e086bde61f40a3f156f7a4"  # 2026-06-06
REMOVAL = "555de3b75408cc35089359100ba3671a8ec4fb13"
DAY = datetime(2026, 5, 22, 9, tzinfo=timezone.utc)


def test_real_workflows_name_the_platforms_and_the_removal(helion_clone):
    before, after = matrix.expected_at(helion_clone, BEFORE), matrix.expected_at(helion_clone, AFTER)
    assert before.platforms == after.platforms == {"h100", "b200", "b200_cute", "mi350x", "tpu"}
    assert "rope-bwd" in before.kernels["h100"] and "rope-bwd" not in after.kernels["h100"]
    assert after.kernels["b200_cute"] == {"vector_add", "layer_norm", "rms_norm", "vector_exp", "sum"}
    assert matrix.removal_commit(helion_clone, BEFORE, AFTER, "h100", "rope-bwd") == REMOVAL
    assert matrix.expected_at(helion_clone, "0" * 40) is None  # not in the clone: not known


def _doc(nights: list[tuple[str, dict]]) -> bytes:
    """nights: (full sha, {(platform, kernel): "ok" | "acc"}) oldest first, one day apart."""
    runs = [{"run_id": str(500 + i), "sha": sha[:8], "full_sha": sha, "branch": "main", "is_nightly": True,
             "date": (DAY + timedelta(days=i - 1)).strftime("%Y-%m-%dT%H:%M:%SZ")}
            for i, (sha, _) in enumerate(nights)]
    keys = sorted({k for _, r in nights for k in r})
    summary = []
    last = len(nights) - 1
    for p, k in keys:
        history = []
        for i, (_, r) in enumerate(nights):
            if (p, k) not in r:
                continue
            entry = {**runs[i], "helion_speedup_geomean": 1.3, "triton_speedup_geomean": 1.0,
                     "torch_compile_speedup_geomean": 1.1, "helion_latency_avg_ms": 0.2}
            if i == last:
                entry["per_shape"] = {"shapes": ["s0", "s1"], "helion_accuracy": [1.0, 0.0 if r[(p, k)] == "acc" else 1.0]}
            history.append(entry)
        if history:
            summary.append({"kernel": k, "platform": p, "platform_short": p,
                            "infra_missing": history[-1]["run_id"] != runs[-1]["run_id"], "history": history})
    return json.dumps({"latest_run": runs[-1], "runs": runs, "summary": summary}).encode()


def _rows(expected, skip_platforms=(), acc=()):
    return {(p, k): ("acc" if (p, k) in acc else "ok")
            for p, ks in expected.kernels.items() if p not in skip_platforms for k in ks}


@pytest.fixture
def nights(helion_clone):
    return {sha: matrix.expected_at(helion_clone, sha) for sha in (BEFORE, AFTER, LATER)}


def test_real_repo_world_outage_accuracy_and_removal(lite, helion_clone, nights):
    bad = _rows(nights[AFTER], skip_platforms=("mi350x",), acc={("h100", "softmax")})
    history = [(BEFORE, _rows(nights[BEFORE])), (AFTER, bad)]
    with SlackStandIn() as slack:
        settings = Settings(database={"url": lite.url}, helion={"repo": str(helion_clone), "remote": ""},
                            slack={"token": TOKEN, "channel": "C0TRIAGE", "api_url": slack.base_url})

        def run(docs, now):
            return run_once(lite, settings, dashboard=_doc(docs), pretuned=None, now=now,
                            detect=lambda *a, **k: "skipped", fetch_repo=False)

        assert run(history[:1], DAY - timedelta(days=1)).ok  # a healthy real nightly: nothing
        assert slack.messages == []
        assert run(history, DAY).ok
        with lite.session() as s:
            found = Counter((a.kind, a.platform_short) for a in s.scalars(select(HealthAlert)))
            removal = s.scalars(select(HealthAlert).where(HealthAlert.kind == "matrix_change")).first()
        assert found == Counter({("platform_outage", "mi350x"): 1, ("accuracy", "h100"): 1,
                                 ("matrix_change", "h100"): 1, ("matrix_change", "b200"): 1,
                                 ("matrix_change", "mi350x"): 1})
        assert REMOVAL[:8] in removal.detail and removal.kernel == "rope-bwd"
        (msg,) = slack.messages
        assert "mi350x" in msg.text or "mi350x" in str(msg.blocks)

        later = history + [(LATER, _rows(nights[LATER]))]
        assert run(later, DAY + timedelta(days=1)).ok
        with lite.session() as s:
            states = Counter((a.kind, a.state) for a in s.scalars(select(HealthAlert)))
        assert states == Counter({("platform_outage", "recovered"): 1, ("accuracy", "recovered"): 1,
                                  ("matrix_change", "info"): 3})
        assert len(slack.messages) == 1 and "recovered" in slack.messages[0].edits[-1]["text"]
