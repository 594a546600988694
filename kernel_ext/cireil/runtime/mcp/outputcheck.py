"""Does a tool's structuredContent match the outputSchema it declares? A check for the person, not the agent.

The agent-facing result is never changed by it (the spec decides that result); the result view shows
what is wrong, each violation with the JSON path of the failing value. The check runs when a result is
shown, not when the call is made, so agent turns never pay for it, and jsonschema loads only then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_VIOLATIONS = 20
MAX_TEXT = 300
# A server's schema is untrusted input: `pattern` is a regular expression, and Python's matcher can take
# exponential time on a crafted one. Only values up to this many characters are matched against it.
PATTERN_INPUT_LIMIT = 1000


@dataclass(frozen=True)
class Violation:
    path: str  # a JSON path of the failing value: $, $.items[2].name
    message: str
    keyword: str = ""  # the schema keyword that failed (type, required...)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def check(schema: Any, structured: Any, *, present: bool = True, is_error: bool = False) -> list[Violation]:
    """Violations of `schema` by `structured` (`present` False: the result has no structuredContent)."""
    if is_error:
        return []  # an isError result need not carry the declared structure
    if not present:
        return [Violation("$", "the tool declares an outputSchema but its result has no structuredContent")]
    if not isinstance(schema, dict):
        return [Violation("$", f"the outputSchema is not a JSON object but {type(schema).__name__}", "schema")]
    try:
        validator = _validator(schema)
    except Exception as exc:  # jsonschema.SchemaError and friends: the declaration itself is broken
        return [Violation("$", f"the outputSchema itself is invalid: {_short(exc)}", "schema")]
    found: list[Violation] = []
    try:
        for error in validator.iter_errors(structured):
            found.append(Violation(_json_path(error.absolute_path), _short(error.message), str(error.validator)))
            if len(found) >= MAX_VIOLATIONS:
                break
    except RecursionError:
        found.append(Violation("$", "too deeply nested to check", "depth"))
    except Exception as exc:  # an unresolvable $ref (no remote fetching), a bad regex...
        found.append(Violation("$", f"cannot check against the outputSchema: {_short(exc)}", "schema"))
    return sorted(found, key=lambda v: v.path)


def _validator(schema: dict) -> Any:
    import jsonschema
    from jsonschema import validators

    base = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    base.check_schema(schema)
    pattern = base.VALIDATORS.get("pattern")

    def bounded_pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, str) and len(instance) > PATTERN_INPUT_LIMIT:
            return  # see PATTERN_INPUT_LIMIT
        if pattern is not None:
            yield from pattern(validator, patrn, instance, schema)

    cls = validators.extend(base, {"pattern": bounded_pattern})
    return cls(schema)


def _json_path(parts: Any) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{_quoted(str(part))}]"
    return out


def _quoted(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def _short(value: Any) -> str:
    text = str(getattr(value, "message", None) or value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
