"""The on-call web app: queue, alert pages, series explorer, status, JSON API (FastAPI)."""
