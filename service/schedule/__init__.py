"""Wiring of the nightly loop: the passes run-once chains, and the APScheduler service."""
