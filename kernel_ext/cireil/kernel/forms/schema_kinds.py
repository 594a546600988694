"""What kind of input a JSON Schema node calls for, and how to name it: pure analysis, no widgets.

The forms must handle the schemas tools really send (see the parameter model in runtime/base/params.py:
strict objects, `nullable`, `default`, string enums, `anyOf`) and, for MCP tools later, schemas
written by others. Anything this module cannot map to a dedicated input is classed as JSON, so a
person can still type the value by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

STRING = "string"
ENUM = "enum"
INTEGER = "integer"
NUMBER = "number"
BOOLEAN = "boolean"
ARRAY = "array"
OBJECT = "object"
ANY_OF = "anyOf"
JSON = "json"

COMPOUND = frozenset({ARRAY, OBJECT, ANY_OF})

# Fields whose values are usually long or multi-line text get a Textarea even when the tool does
# not name them as its body (e.g. edit's oldText/newText).
_TEXTUAL_NAME = re.compile(r"(content|text|body)$", re.IGNORECASE)

_SCALARS = (str, int, float, bool, type(None))


def is_textual_name(name: str | None) -> bool:
    return bool(name) and _TEXTUAL_NAME.search(name) is not None


def normalize(schema: Any) -> dict:
    """A schema as a dict, with `type: [T, "null"]` rewritten to the `type: T, nullable: true` form."""
    if not isinstance(schema, Mapping):
        return {}
    out = dict(schema)
    types = out.get("type")
    if isinstance(types, list):
        rest = [t for t in types if t != "null"]
        if len(rest) == 1:
            out["type"] = rest[0]
            if len(rest) < len(types):
                out["nullable"] = True
    return out


def variants_of(schema: Mapping) -> list | None:
    # oneOf differs from anyOf only in how many variants may match; a form picks exactly one either way.
    variants = schema.get("anyOf", schema.get("oneOf"))
    return variants if isinstance(variants, list) else None


def kind_of(schema: Any) -> str:
    """The input kind for one schema node (one of the module constants)."""
    schema = normalize(schema)
    if "enum" in schema:
        values = schema["enum"]
        ok = isinstance(values, list) and values and all(isinstance(v, _SCALARS) for v in values)
        return ENUM if ok else JSON
    variants = variants_of(schema)
    if variants is not None:
        # A selector only helps when every variant has its own form; otherwise typing JSON is clearer.
        ok = bool(variants) and all(isinstance(v, Mapping) and kind_of(v) != JSON for v in variants)
        return ANY_OF if ok else JSON
    kind = schema.get("type")
    if kind in (STRING, INTEGER, NUMBER, BOOLEAN):
        return kind
    if kind == ARRAY:
        return ARRAY if isinstance(schema.get("items", {}), Mapping) else JSON
    if kind == OBJECT:
        props = schema.get("properties")
        # A strict object with no properties is a real (empty) form; a free-form mapping is JSON.
        if isinstance(props, Mapping) and (props or schema.get("additionalProperties") is False):
            return OBJECT
    return JSON


def matches(schema: Any, value: Any) -> bool:
    """Roughly whether `value` fits `schema`; used to pick the anyOf variant a default belongs to."""
    schema = normalize(schema)
    kind = kind_of(schema)
    if value is None:
        return bool(schema.get("nullable"))
    if kind == ENUM:
        return value in schema["enum"]
    if kind == STRING:
        return isinstance(value, str)
    if kind == BOOLEAN:
        return isinstance(value, bool)
    if kind == INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == ARRAY:
        return isinstance(value, list)
    if kind == OBJECT:
        return isinstance(value, Mapping)
    if kind == ANY_OF:
        return any(matches(v, value) for v in variants_of(schema) or ())
    return True


def _bounds(schema: Mapping) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f" {_num(low)}–{_num(high)}"
    if low is not None:
        return f" ≥ {_num(low)}"
    if high is not None:
        return f" ≤ {_num(high)}"
    return ""


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def variant_label(schema: Any) -> str:
    """A short name for one anyOf variant, as shown in the variant selector."""
    schema = normalize(schema)
    kind = kind_of(schema)
    if kind == STRING:
        return "text"
    if kind == ENUM:
        return "choice"
    if kind == BOOLEAN:
        return "true/false"
    if kind == ARRAY:
        return f"list of {variant_label(schema.get('items', {}))}"
    if kind == ANY_OF:
        return " or ".join(variant_label(v) for v in variants_of(schema) or ())
    return kind if kind != JSON else "JSON"


def describe(schema: Any) -> str:
    """The short type hint shown next to a field's name, e.g. `text, non-empty` or `number 1–30`."""
    schema = normalize(schema)
    kind = kind_of(schema)
    parts: list[str]
    if kind == STRING:
        parts = ["text"]
        if (schema.get("minLength") or 0) >= 1:
            parts.append("non-empty")
        if schema.get("pattern"):
            parts.append(f"matching /{schema['pattern']}/")
    elif kind in (INTEGER, NUMBER):
        parts = [kind + _bounds(schema)]
    elif kind == ENUM:
        parts = ["one of " + ", ".join(str(v) for v in schema["enum"])]
    elif kind == BOOLEAN:
        parts = ["true/false"]
    elif kind == ARRAY:
        parts = [variant_label(schema)]
        if schema.get("minItems"):
            parts.append(f"at least {schema['minItems']}")
    elif kind == OBJECT:
        parts = ["group"]
    elif kind == ANY_OF:
        parts = [variant_label(schema)]
    else:
        parts = ["JSON"]
    if "default" in schema:
        parts.append(f"default {_default_text(schema['default'])}")
    return ", ".join(parts)


def _default_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 30 else text[:27] + "..."
