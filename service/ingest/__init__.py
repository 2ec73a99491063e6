"""Ingest: fetch a dashboard document, validate it whole, normalise it into plain rows."""
