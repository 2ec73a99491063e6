"""Defaults are written once: `config/default.toml`. Every section's field defaults in Python
(kept because pydantic and direct `DetectSettings()` construction need them) must equal the file,
and every knob must be in the file (where its comment lives), secrets excepted."""

from __future__ import annotations

import tomllib

import pytest
from typer.testing import CliRunner

from service.config import DEFAULT_CONFIG, Settings

FILE = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))
# set only from env or a private --config file: never written in the committed defaults
ENV_ONLY = {"slack": {"token"}, "web": {"secret_key", "team_token", "users"}}


@pytest.mark.parametrize("section", sorted(Settings.model_fields))
def test_python_defaults_equal_the_file(section):
    model = Settings.model_fields[section].annotation
    table = FILE[section]
    assert model.model_validate(table) == model(), f"[{section}] differs from the field defaults"
    assert set(model.model_fields) - set(table) == ENV_ONLY.get(section, set())
    assert set(table) <= set(model.model_fields)


@pytest.mark.parametrize(
    "body, needle",
    [
        ("[detect]\npenalti = 3\n", "config: detect.penalti: Extra inputs are not permitted"),
        ("[detect]\nmethod = 'dynp'\n", "config: detect.method: "),
        ("[classify]\nmost_fraction = 1.5\n", "config: classify.most_fraction: "),
        ("[classify]\nculprit_min_score = 0.9\n", "config: classify: "),
    ],
)
@pytest.mark.parametrize("command", [["status"], ["alerts"], ["detect"], ["run-once", "--no-fetch"], ["serve"],
                                     ["ack", "1"]])
def test_a_bad_detect_or_classify_knob_stops_every_command_at_start(tmp_path, monkeypatch, command, body, needle):
    from service.cli.main import app

    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", f"sqlite:///{tmp_path / 'bw.db'}")
    (tmp_path / "bad.toml").write_text(body, encoding="utf-8")
    result = CliRunner().invoke(app, ["--config", str(tmp_path / "bad.toml"), *command])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"benchwatch: error: {needle}"), result.output
    assert not (tmp_path / "bw.db").exists()  # refused before the store was touched


def test_env_overrides_are_typed():
    import os
    from unittest import mock

    from service.config import load_settings

    with mock.patch.dict(os.environ, {"BENCHWATCH_DETECT_PENALTY": "4.5", "BENCHWATCH_CLASSIFY_LEVEL_NIGHTS": "7"}):
        s = load_settings()
    assert (s.detect.penalty, s.classify.level_nights) == (4.5, 7)
