"""`[classify]` settings: defaults match the config file, bad values are one-line config errors."""

from __future__ import annotations

import pytest

from service.classify.settings import ClassifySettings
from service.config import load_settings
from service.errors import BenchwatchError


def test_config_section_equals_the_defaults():
    s = load_settings()
    assert s.classify, "config/default.toml has a [classify] section"
    assert ClassifySettings.from_mapping(s.classify) == ClassifySettings()
    assert ClassifySettings.from_mapping(None) == ClassifySettings()


def test_override_and_string_numbers_from_env():
    s = ClassifySettings.from_mapping({"min_significance": "4.5", "weight_breadth": 0})
    assert s.min_significance == 4.5 and s.weight("breadth") == 0.0


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"min_significance": -1}, "config: classify.min_significance:"),
        ({"broad_fraction": 1.5}, "config: classify.broad_fraction:"),
        ({"level_nights": "many"}, "config: classify.level_nights:"),
        ({"not_a_key": 1}, "config: classify.not_a_key:"),
        ({f"weight_{c}": 0 for c in ("persistence", "helion_only", "timer_agreement", "breadth",
                                     "method_tells", "commit_window")}, "config: classify: "),
    ],
)
def test_bad_values_are_one_line_errors(data, needle):
    with pytest.raises(BenchwatchError) as err:
        ClassifySettings.from_mapping(data)
    assert err.value.message.startswith(needle) and "\n" not in err.value.message
