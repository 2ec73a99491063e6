"""Health checks: silence and failures in the data, as findings (pure decisions over plain records).

`freshness` (no nightly, fetch failing) and `nightly` (platform outages, failing kernels,
accuracy failures, matrix changes) take plain records and return `Finding`s; `workflow` reads
which platforms and kernels Helion's workflow files say should run. Reading the store and git,
and persisting findings, live in `service/pipeline/health_pass.py` and `service/store/health_*`.
"""
