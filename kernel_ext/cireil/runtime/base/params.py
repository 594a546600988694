"""Declarative parameter models: one definition yields the JSON Schema and the validator.

The schema follows the conventions the upstream runtime sends to models (OpenAPI 3.0 flavour):
objects are strict (`additionalProperties: false`), `required` is always present, defaults are
advertised with `default`, nullable fields with `nullable: true`, picklists as string enums.
The same schema feeds the widget forms, so what a person fills in is what the model would send.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

_MISSING: Any = object()

Check = Callable[[Any], "str | None"]


@dataclass
class Issue:
    message: str
    path: tuple[str | int, ...] = ()

    def as_dict(self) -> dict:
        return {"message": self.message, "path": ".".join(str(p) for p in self.path)}

    def __str__(self) -> str:
        if not self.path:
            return self.message
        return f"{'.'.join(str(p) for p in self.path)}: {self.message}"


def describe_value(value: Any) -> str:
    """How a received value is named in messages: short, typed, never a huge dump."""
    if value is _MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "Object"
    if isinstance(value, (list, tuple)):
        return "Array"
    return type(value).__name__


@dataclass
class Field:
    """Base of every parameter kind. A field with a default, or `required=False`, is optional."""

    description: str | None = None
    default: Any = _MISSING
    required: bool = True
    nullable: bool = False
    check: Check | None = None
    # Key order of the schema: "description" before "default" instead of after. The original CireilClaw sends
    # both orders (a default wrapped around a described field, or a description around a defaulted one), and
    # a definition the model sees must match it byte for byte.
    description_first: bool = False

    type_name: str = field(default="", init=False, repr=False)

    @property
    def is_required(self) -> bool:
        return self.required and self.default is _MISSING

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    def _base_schema(self) -> dict:
        raise NotImplementedError

    def schema(self) -> dict:
        out = self._base_schema()
        if self.nullable:
            out["nullable"] = True
        if self.description and self.description_first:
            out["description"] = self.description
        if self.has_default:
            out["default"] = self.default
        if self.description and not self.description_first:
            out["description"] = self.description
        return out

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        raise NotImplementedError

    def validate(self, value: Any, path: tuple = ()) -> tuple[Any, list[Issue]]:
        if value is None and self.nullable:
            return None, []
        value, issues = self._validate(value, path)
        if not issues and self.check is not None:
            message = self.check(value)
            if message:
                issues = [Issue(message, path)]
        return value, issues

    def _type_issue(self, value: Any, path: tuple) -> list[Issue]:
        return [Issue(f"Invalid type: Expected {self.type_name} but received {describe_value(value)}", path)]


@dataclass
class String(Field):
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    enum: tuple[str, ...] | None = None
    pattern_message: str | None = None  # said when the pattern does not match, instead of the generic message

    def __post_init__(self) -> None:
        self.type_name = "string"
        self._regex = re.compile(self.pattern) if self.pattern else None

    def _base_schema(self) -> dict:
        if self.enum is not None:
            return {"enum": list(self.enum), "type": "string"}
        out: dict = {"type": "string"}
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.pattern is not None:
            out["pattern"] = self.pattern
        return out

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        if not isinstance(value, str):
            return value, self._type_issue(value, path)
        if self.enum is not None and value not in self.enum:
            options = " | ".join(json.dumps(e) for e in self.enum)
            return value, [Issue(f"Invalid option: Expected {options} but received {describe_value(value)}", path)]
        if self.min_length is not None and len(value) < self.min_length:
            return value, [Issue(f"Invalid length: Expected >={self.min_length} but received {len(value)}", path)]
        if self.max_length is not None and len(value) > self.max_length:
            return value, [Issue(f"Invalid length: Expected <={self.max_length} but received {len(value)}", path)]
        if self._regex is not None and not self._regex.search(value):
            message = self.pattern_message or (
                f"Invalid format: Expected /{self.pattern}/ but received {describe_value(value)}"
            )
            return value, [Issue(message, path)]
        return value, []


@dataclass
class Number(Field):
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False

    def __post_init__(self) -> None:
        self.type_name = "integer" if self.integer else "number"

    def _base_schema(self) -> dict:
        out: dict = {"type": self.type_name}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and isinstance(value, float) and not math.isfinite(value):
            ok = False  # NaN compares false with every bound; JSON has neither NaN nor infinities
        if ok and self.integer and isinstance(value, float):
            ok = value.is_integer()
            value = int(value) if ok else value
        if not ok:
            return value, self._type_issue(value, path)
        if self.minimum is not None and value < self.minimum:
            return value, [Issue(f"Invalid value: Expected >={self.minimum} but received {value}", path)]
        if self.maximum is not None and value > self.maximum:
            return value, [Issue(f"Invalid value: Expected <={self.maximum} but received {value}", path)]
        return value, []


def Integer(**kwargs: Any) -> Number:
    return Number(integer=True, **kwargs)


@dataclass
class Boolean(Field):
    def __post_init__(self) -> None:
        self.type_name = "boolean"

    def _base_schema(self) -> dict:
        return {"type": "boolean"}

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        if not isinstance(value, bool):
            return value, self._type_issue(value, path)
        return value, []


@dataclass
class Array(Field):
    items: Field | None = None
    min_items: int | None = None

    def __post_init__(self) -> None:
        self.type_name = "Array"

    def _base_schema(self) -> dict:
        out: dict = {"type": "array", "items": self.items.schema() if self.items else {}}
        if self.min_items is not None:
            out["minItems"] = self.min_items
        return out

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        if not isinstance(value, (list, tuple)):
            return value, self._type_issue(value, path)
        if self.min_items is not None and len(value) < self.min_items:
            return value, [Issue(f"Invalid length: Expected >={self.min_items} but received {len(value)}", path)]
        clean, issues = [], []
        for index, item in enumerate(value):
            if self.items is None:
                clean.append(item)
                continue
            item_clean, item_issues = self.items.validate(item, (*path, index))
            clean.append(item_clean)
            issues.extend(item_issues)
        return clean, issues


@dataclass
class AnyOf(Field):
    options: tuple[Field, ...] = ()

    def __post_init__(self) -> None:
        self.type_name = " | ".join(o.type_name for o in self.options)

    def _base_schema(self) -> dict:
        return {"anyOf": [o.schema() for o in self.options]}

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        first: list[Issue] = []
        typed: list[Issue] = []  # issues of the first option whose type matched (its own rules failed)
        for option in self.options:
            clean, issues = option.validate(value, path)
            if not issues:
                return clean, []
            first = first or issues
            wrong_type = len(issues) == 1 and issues[0].path == path and issues[0].message.startswith("Invalid type:")
            if not wrong_type and not typed:
                typed = issues
        if typed:
            return value, typed
        return value, self._type_issue(value, path) if len(self.options) > 1 else first


@dataclass
class Object(Field):
    """A strict object: unknown keys are refused, so a typo never silently drops an argument."""

    properties: dict[str, Field] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.type_name = "Object"

    def _base_schema(self) -> dict:
        return {
            "type": "object",
            "properties": {name: f.schema() for name, f in self.properties.items()},
            "required": [name for name, f in self.properties.items() if f.is_required],
            "additionalProperties": False,
        }

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        if not isinstance(value, Mapping):
            return value, self._type_issue(value, path)
        issues: list[Issue] = []
        clean: dict[str, Any] = {}
        for name, spec in self.properties.items():
            if name not in value:
                if spec.has_default:
                    clean[name] = spec.default
                elif spec.is_required:
                    issues.append(Issue(f'Invalid key: Expected "{name}" but received undefined', (*path, name)))
                continue
            item, item_issues = spec.validate(value[name], (*path, name))
            clean[name] = item
            issues.extend(item_issues)
        for name in value:
            if name not in self.properties:
                expected = ", ".join(self.properties) or "no parameters"
                issues.append(Issue(f'Invalid key: unknown parameter "{name}" (expected: {expected})', (*path, name)))
        return clean, issues


@dataclass
class RawObject(Object):
    """Parameters described by a JSON Schema made elsewhere (an MCP server's inputSchema), passed on as is.

    Only "an object" is checked here: the schema's owner validates the rest, and re-implementing
    JSON Schema to refuse what the server would accept helps nobody.
    """

    raw: dict = field(default_factory=dict)

    def schema(self) -> dict:
        return json.loads(json.dumps(self.raw))  # a copy: callers may annotate what they get

    def _validate(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        if not isinstance(value, Mapping):
            return value, self._type_issue(value, path)
        return dict(value), []


def Params(**properties: Field) -> Object:
    """The parameter model of a tool: a strict object whose fields are the keyword arguments."""
    return Object(properties=properties)
