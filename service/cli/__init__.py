"""The `benchwatch` command line (typer)."""
