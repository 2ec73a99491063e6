"""When the pipeline runs: APScheduler's jobs, the service lock, and run-once chaining the passes of `service/pipeline`."""
