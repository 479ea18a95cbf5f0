"""vsbench.system.yaml_text.safe_load: the C loader gives what yaml.safe_load gives, and is
just as safe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vsbench.system import yaml_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted([*ROOT.glob("conf/**/*.yaml"), *ROOT.glob("testcases/**/*.yaml")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_loads_as_the_pure_safe_loader_loads_it(path):
    text = path.read_text(encoding="utf-8")
    assert yaml_text.safe_load(text) == yaml.safe_load(text)


def test_it_builds_no_python_object():
    with pytest.raises(yaml.YAMLError):
        yaml_text.safe_load("!!python/object/apply:os.system ['true']")


def test_a_syntax_error_is_a_yaml_error_with_its_line():
    with pytest.raises(yaml.YAMLError) as caught:
        yaml_text.safe_load("a: [1, 2\nb: 3\n")
    assert "line" in str(caught.value)


def test_the_c_loader_is_used_when_pyyaml_has_libyaml():
    assert yaml_text.SafeLoader is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)
