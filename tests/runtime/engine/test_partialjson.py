"""partial_string_field: a respond's content read out of arguments that are still streaming."""

from __future__ import annotations

import itertools
import json

import pytest

from cireil.runtime.engine.partialjson import partial_string_field


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("{", None),
        ('{"cont', None),
        ('{"content"', None),
        ('{"content":', None),
        ('{"content": ', None),
        ('{"content": "', ""),
        ('{"content": "Hello wo', "Hello wo"),
        ('{"content": "Hello world"}', "Hello world"),
        ('{"content":"a\\nb', "a\nb"),
        ('{"content": "say \\"hi\\" now', 'say "hi" now'),
        ('{"content": "back\\\\slash', "back\\slash"),
        ('{"content": "tab\\t/slash\\/', "tab\t/slash/"),
        ('{"content": "cut \\', "cut "),  # an escape cut after its backslash shows nothing yet
        ('{"content": "caf\\u00e9', "café"),
        ('{"content": "caf\\u00', "caf"),  # a unicode escape cut in the middle
        ('{"content": "caf\\u', "caf"),
        ('{"content": "smile \\ud83d\\ude00!', "smile 😀!"),
        ('{"content": "smile \\ud83d', "smile "),  # waits for the low surrogate
        ('{"content": "smile \\ud83d\\', "smile "),
        ('{"content": "smile \\ud83d\\ude', "smile "),
        ('{"content": "lone \\ud83d x', "lone \ufffd x"),
        ('{"content": "déjà vu ✓', "déjà vu ✓"),
        ('{"content": 5}', None),  # not a string
        ('{"content": null', None),
        ("[1, 2]", None),
    ],
)
def test_partial_values(text, expected):
    assert partial_string_field(text, "content") == expected


def test_key_after_other_fields():
    text = '{"final": true, "n": -1.5e3, "list": [1, "x", {"a": "]"}], "content": "late'
    assert partial_string_field(text, "content") == "late"


def test_key_name_inside_another_string_is_not_the_field():
    text = '{"title": "the \\"content\\": \\"fake\\"", "content": "real'
    assert partial_string_field(text, "content") == "real"
    assert partial_string_field('{"title": "content: \\"fake', "content") is None


def test_nested_key_of_the_same_name_is_not_the_field():
    text = '{"meta": {"content": "nested", "deeper": [{"content": "x"}]}, "content": "top'
    assert partial_string_field(text, "content") == "top"
    assert partial_string_field('{"meta": {"content": "nested', "content") is None
    assert partial_string_field('{"meta": {"content": "nested"}', "content") is None


def test_other_key():
    assert partial_string_field('{"content": "a", "attachments": ["x"], "path": "/work', "path") == "/work"


def test_every_prefix_of_real_json_is_a_prefix_of_the_value():
    value = 'Line one\nsays "hi" \\ café 😀 \t done'
    full = json.dumps({"final": True, "content": value})
    seen = [partial_string_field(full[:n], "content") for n in range(len(full) + 1)]
    started = [s for s in seen if s is not None]
    assert started, seen
    for s in started:
        assert value.startswith(s)
    assert seen[-1] == value
    assert all(len(a) <= len(b) for a, b in itertools.pairwise(started))
