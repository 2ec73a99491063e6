"""benchwatch: nightly regression triage for the Helion benchmark dashboard."""

__version__ = "0.1.0"
