"""Culprit search: safe git access to a local Helion clone, commit windows, repo facts, ranking.

Modules: ``git`` (the only place a git subprocess runs), ``window`` (first-parent commits
between two nightlies), ``rules`` (``config/slices.toml``), ``rank`` (culprit and
harness/runner change commits), ``facts`` (method/runner facts read from repo files).
"""
