"""Run tags (issue 26): ``--tag KEY=VALUE`` parsed strictly, since a tag is a filter key later."""

import pytest

from vsbench.results import run_tags
from vsbench.results.run_tags import TagError


def test_tags_parse_in_order_and_keep_values_verbatim():
    assert run_tags.parse(["nic=e810", "kernel=6.1.0-18-amd64", "note=a=b c"]) == {
        "nic": "e810", "kernel": "6.1.0-18-amd64", "note": "a=b c"}
    assert run_tags.parse(["nic=e810", "nic=e810"]) == {"nic": "e810"}  # the same twice is harmless
    assert run_tags.parse([]) == {}
    assert run_tags.format_tags({"a": "1", "b": "2"}) == "a=1, b=2" and run_tags.format_tags({}) == "-"


@pytest.mark.parametrize("spec, said", [
    ("nic", "expected KEY=VALUE"),
    ("=e810", "the key must be"),
    ("-nic=e810", "the key must be"),
    ("n ic=e810", "the key must be"),
    ("k" * 65 + "=v", "the key must be"),
    ("nic=", "the value must be"),
    ("nic=a\tb", "the value must be"),
    ("nic=" + "v" * 201, "the value must be"),
])
def test_bad_tags_name_the_option_and_the_tag(spec, said):
    with pytest.raises(TagError, match=said) as caught:
        run_tags.parse([spec], "--tag")
    assert str(caught.value).startswith(f"--tag {spec!r}:") and "\n" not in str(caught.value)


def test_a_key_given_two_values_is_refused():
    with pytest.raises(TagError, match="tag 'nic' is already 'e810'"):
        run_tags.parse(["nic=e810", "nic=cx6"])
