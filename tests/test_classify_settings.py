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
    s = ClassifySettings.from_mapping({"min_significance": "4.5", "most_min_kernels": "4"})
    assert (s.min_significance, s.most_min_kernels) == (4.5, 4)


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"min_significance": -1}, "config: classify.min_significance:"),
        ({"most_fraction": 1.5}, "config: classify.most_fraction:"),
        ({"level_nights": "many"}, "config: classify.level_nights:"),
        ({"not_a_key": 1}, "config: classify.not_a_key:"),
        ({"weight_breadth": 1}, "config: classify.weight_breadth:"),  # the old vote weights are gone
        ({"culprit_min_score": 0.7, "culprit_strong_score": 0.5}, "config: classify: "),
    ],
)
def test_bad_values_are_one_line_errors(data, needle):
    with pytest.raises(BenchwatchError) as err:
        ClassifySettings.from_mapping(data)
    assert err.value.message.startswith(needle) and "\n" not in err.value.message
