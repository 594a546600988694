"""The declarative parameter model: JSON Schema output and validation messages."""

from __future__ import annotations

import json
import math

import pytest

from cireil.params import AnyOf, Array, Boolean, Integer, Number, Object, Params, String


def validate(model, value):
    clean, issues = model.validate(value)
    return clean, [str(i) for i in issues]


# -- JSON Schema ----------------------------------------------------------------------------------


def test_empty_params_schema_is_strict_and_has_required():
    assert Params().schema() == {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def test_schema_required_defaults_and_descriptions():
    model = Params(
        path=String(min_length=1, description="where"),
        content=String(),
        raw=Boolean(default=False),
        note=String(required=False),
    )
    schema = model.schema()
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["path", "content"]  # declaration order, only required ones
    assert schema["properties"]["path"] == {"type": "string", "minLength": 1, "description": "where"}
    assert schema["properties"]["content"] == {"type": "string"}
    assert schema["properties"]["raw"] == {"type": "boolean", "default": False}
    assert schema["properties"]["note"] == {"type": "string"}
    json.dumps(schema)  # plain JSON, nothing exotic inside


def test_schema_nullable_enum_and_bounds():
    model = Params(
        channel=String(nullable=True, required=False),
        direction=String(enum=("before", "after"), default="after"),
        count=Integer(minimum=0, maximum=10),
        ratio=Number(minimum=0.5),
        name=String(pattern=r"^[a-z]+$", max_length=8),
    )
    props = model.schema()["properties"]
    assert props["channel"] == {"type": "string", "nullable": True}
    assert props["direction"] == {"enum": ["before", "after"], "type": "string", "default": "after"}
    assert props["count"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert props["ratio"] == {"type": "number", "minimum": 0.5}
    assert props["name"] == {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"}
    assert model.schema()["required"] == ["count", "ratio", "name"]


def test_schema_nested_array_of_strict_objects_and_anyof():
    near = AnyOf(options=(String(), Object(properties={"line": Integer(minimum=1)})), required=False)
    edit = Object(properties={"oldText": String(), "newText": String(), "all": Boolean(required=False)})
    model = Params(edits=Array(items=edit, min_items=1), near=near, tags=Array())
    schema = model.schema()
    edits = schema["properties"]["edits"]
    assert edits["type"] == "array"
    assert edits["minItems"] == 1
    assert edits["items"] == {
        "type": "object",
        "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}, "all": {"type": "boolean"}},
        "required": ["oldText", "newText"],
        "additionalProperties": False,
    }
    assert schema["properties"]["near"] == {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {"line": {"type": "integer", "minimum": 1}},
                "required": ["line"],
                "additionalProperties": False,
            },
        ]
    }
    assert schema["properties"]["tags"] == {"type": "array", "items": {}}
    assert schema["required"] == ["edits", "tags"]


def test_builtin_tool_schemas_follow_the_conventions():
    from cireil.runtime.toolkit import registry

    for name in registry.BUILTIN_NAMES:
        schema = registry.builtin(name).parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert isinstance(schema["required"], list)
    assert registry.builtin("session-info").parameters["required"] == []
    write = registry.builtin("write").parameters
    assert write["required"] == ["content", "path"]  # the original's order: its properties are alphabetical
    assert write["properties"]["path"]["minLength"] == 1


def test_description_first_orders_the_keys_as_the_original_sends_them():
    plain = Number(minimum=0, default=0, description="Offset.")
    wrapped = Number(minimum=0, default=0, description="Offset.", description_first=True)
    assert list(plain.schema()) == ["type", "minimum", "default", "description"]
    assert list(wrapped.schema()) == ["type", "minimum", "description", "default"]
    assert wrapped.schema() == plain.schema()  # the same schema, only the serialized order differs
    assert json.dumps(wrapped.schema()) == '{"type": "number", "minimum": 0, "description": "Offset.", "default": 0}'


def test_pattern_message_replaces_the_generic_one():
    field = String(pattern="^[a-z]+$", pattern_message="lowercase only")
    assert field.schema() == {"type": "string", "pattern": "^[a-z]+$"}
    assert [str(i) for i in field.validate("A1")[1]] == ["lowercase only"]
    assert field.validate("ab")[1] == []
    assert [str(i) for i in String(pattern="^[a-z]+$").validate("A1")[1]] == [
        'Invalid format: Expected /^[a-z]+$/ but received "A1"'
    ]


# -- validation messages --------------------------------------------------------------------------


def test_missing_key_message():
    _, issues = validate(Params(path=String()), {})
    assert issues == ['path: Invalid key: Expected "path" but received undefined']


def test_missing_keys_all_reported_in_declaration_order():
    model = Params(path=String(), content=String())
    _, issues = model.validate({})
    assert [i.path for i in issues] == [("path",), ("content",)]
    assert [i.as_dict() for i in issues] == [
        {"message": 'Invalid key: Expected "path" but received undefined', "path": "path"},
        {"message": 'Invalid key: Expected "content" but received undefined', "path": "content"},
    ]


@pytest.mark.parametrize(
    ("value", "received"),
    [(5, "5"), (None, "null"), (True, "true"), ([1], "Array"), ({"a": 1}, "Object"), (1.5, "1.5")],
)
def test_wrong_type_for_string(value, received):
    _, issues = validate(Params(path=String()), {"path": value})
    assert issues == [f"path: Invalid type: Expected string but received {received}"]


def test_unknown_key_is_refused_and_named():
    _, issues = validate(Params(path=String()), {"path": "/x", "paht": "/y"})
    assert issues == ['paht: Invalid key: unknown parameter "paht" (expected: path)']


def test_unknown_key_on_tool_without_parameters():
    _, issues = validate(Params(), {"x": 1})
    assert issues == ['x: Invalid key: unknown parameter "x" (expected: no parameters)']


def test_not_an_object_at_all():
    _, issues = validate(Params(path=String()), ["/x"])
    assert issues == ["Invalid type: Expected Object but received Array"]


def test_lengths():
    model = Params(s=String(min_length=2, max_length=4), a=Array(items=String(), min_items=1, required=False))
    assert validate(model, {"s": "a"})[1] == ["s: Invalid length: Expected >=2 but received 1"]
    assert validate(model, {"s": "abcde"})[1] == ["s: Invalid length: Expected <=4 but received 5"]
    assert validate(model, {"s": "abc", "a": []})[1] == ["a: Invalid length: Expected >=1 but received 0"]
    assert validate(model, {"s": "abc", "a": ["x"]}) == ({"s": "abc", "a": ["x"]}, [])


def test_enum_and_pattern_messages():
    model = Params(d=String(enum=("before", "after")), n=String(pattern=r"^[a-z]+$", required=False))
    assert validate(model, {"d": "around"})[1] == [
        'd: Invalid option: Expected "before" | "after" but received "around"'
    ]
    assert validate(model, {"d": "after", "n": "A1"})[1] == ['n: Invalid format: Expected /^[a-z]+$/ but received "A1"']


def test_long_strings_are_shortened_in_messages():
    _, issues = validate(Params(n=Integer()), {"n": "x" * 500})
    assert len(issues[0]) < 120
    assert '..."' in issues[0]


def test_nested_paths_name_the_item():
    edit = Object(properties={"oldText": String(), "newText": String()})
    model = Params(edits=Array(items=edit))
    _, issues = validate(model, {"edits": [{"oldText": "a", "newText": "b"}, {"newText": "c"}, {"oldText": 3}]})
    assert issues == [
        'edits.1.oldText: Invalid key: Expected "oldText" but received undefined',
        "edits.2.oldText: Invalid type: Expected string but received 3",
        'edits.2.newText: Invalid key: Expected "newText" but received undefined',
    ]
    _, issues = validate(model, {"edits": [{"oldText": "a", "newText": "b", "extra": 1}]})
    assert issues == ['edits.0.extra: Invalid key: unknown parameter "extra" (expected: oldText, newText)']
    _, raw = model.validate({"edits": [{"newText": "c"}]})
    assert raw[0].as_dict()["path"] == "edits.0.oldText"


def test_integer_number_and_bool_are_distinct():
    model = Params(i=Integer(required=False), n=Number(required=False), b=Boolean(required=False))
    assert validate(model, {"i": 3}) == ({"i": 3}, [])
    clean, issues = validate(model, {"i": 3.0})
    assert issues == [] and clean["i"] == 3 and isinstance(clean["i"], int)
    assert validate(model, {"i": 3.5})[1] == ["i: Invalid type: Expected integer but received 3.5"]
    assert validate(model, {"i": True})[1] == ["i: Invalid type: Expected integer but received true"]
    assert validate(model, {"i": "3"})[1] == ['i: Invalid type: Expected integer but received "3"']
    assert validate(model, {"n": 2}) == ({"n": 2}, [])
    assert validate(model, {"n": 2.25}) == ({"n": 2.25}, [])
    assert validate(model, {"n": False})[1] == ["n: Invalid type: Expected number but received false"]
    assert validate(model, {"b": 1})[1] == ["b: Invalid type: Expected boolean but received 1"]
    assert validate(model, {"b": 0})[1] == ["b: Invalid type: Expected boolean but received 0"]
    assert validate(model, {"b": False}) == ({"b": False}, [])


def test_numbers_must_be_finite():
    # NaN compares false with every bound, so it would slip through minimum/maximum otherwise.
    model = Params(n=Number(minimum=0, maximum=10), i=Integer(required=False))
    for bad in (math.nan, math.inf, -math.inf):
        _, issues = validate(model, {"n": bad})
        assert issues and issues[0].startswith("n: Invalid type: Expected number"), bad
    _, issues = validate(model, {"n": 1, "i": math.inf})
    assert issues and issues[0].startswith("i: Invalid type: Expected integer")


def test_bounds_messages():
    model = Params(n=Integer(minimum=1, maximum=5))
    assert validate(model, {"n": 0})[1] == ["n: Invalid value: Expected >=1 but received 0"]
    assert validate(model, {"n": 6})[1] == ["n: Invalid value: Expected <=5 but received 6"]
    assert validate(model, {"n": 1})[1] == []
    assert validate(model, {"n": 5})[1] == []


def test_defaults_fill_in_and_optional_fields_stay_absent():
    model = Params(raw=Boolean(default=False), note=String(required=False), items=Array(default=[]))
    clean, issues = validate(model, {})
    assert issues == []
    assert clean == {"raw": False, "items": []}


def test_nullable_accepts_null_and_others_do_not():
    model = Params(a=String(nullable=True), b=String(required=False))
    assert validate(model, {"a": None}) == ({"a": None}, [])
    assert validate(model, {"a": None, "b": None})[1] == ["b: Invalid type: Expected string but received null"]


def test_anyof_picks_the_first_matching_option():
    model = Params(near=AnyOf(options=(String(), Object(properties={"line": Integer(minimum=1)}))))
    assert validate(model, {"near": "x"}) == ({"near": "x"}, [])
    assert validate(model, {"near": {"line": 2}}) == ({"near": {"line": 2}}, [])
    assert validate(model, {"near": 5})[1] == ["near: Invalid type: Expected string | Object but received 5"]


def test_anyof_reports_the_issue_of_the_option_whose_type_matched():
    # "" is a string, so the useful message is the string's own length rule, not "expected string".
    model = Params(x=AnyOf(options=(String(min_length=1), Array(items=String()))))
    assert validate(model, {"x": ""})[1] == ["x: Invalid length: Expected >=1 but received 0"]
    assert validate(model, {"x": [1]})[1] == ["x.0: Invalid type: Expected string but received 1"]
    model = Params(near=AnyOf(options=(String(), Object(properties={"line": Integer(minimum=1)}))))
    assert validate(model, {"near": {"line": 0}})[1] == ["near.line: Invalid value: Expected >=1 but received 0"]


def test_custom_check_runs_after_type_validation():
    calls = []

    def check(value):
        calls.append(value)
        return "must not be x" if value == "x" else None

    model = Params(p=String(check=check))
    assert validate(model, {"p": "x"})[1] == ["p: must not be x"]
    assert validate(model, {"p": "y"})[1] == []
    assert validate(model, {"p": 3})[1] == ["p: Invalid type: Expected string but received 3"]
    assert calls == ["x", "y"]  # never called with a value of the wrong type


def test_validation_does_not_mutate_input():
    model = Params(edits=Array(items=Object(properties={"a": Integer()})), flag=Boolean(default=True))
    value = {"edits": [{"a": 1.0}]}
    clean, issues = model.validate(value)
    assert issues == []
    assert value == {"edits": [{"a": 1.0}]}
    assert clean == {"edits": [{"a": 1}], "flag": True}
