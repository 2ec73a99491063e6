"""The nightly pipeline: each pass reads the store, runs one stage's pure decisions and writes back.

``ingest_pass`` (documents → store), ``detect_pass`` (series → moves → events → alerts and
groups, with ``events`` gathering each event's footprint), ``health_pass`` (missing data,
outages, failures) and ``investigate`` (the same path, asked about one kernel and date). The
scheduler, the service lock and run-once's chaining live in ``service/schedule``; the CLI and the
web app call these passes, never the stages' internals.
"""
