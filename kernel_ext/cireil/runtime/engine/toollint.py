"""Definition lint: is each tool's definition fit to be sent to a model? Built-in, plugin and MCP tools alike.

It reports, never refuses: a finding does not make a dry-run invalid (what the spec makes invalid,
loading enforces). Severities:
  error    a provider's tool API rejects the request that carries this definition (the whole turn fails)
  warning  accepted, but a model is likely to call the tool wrongly
  info     style, strict mode, and the definition's cost in every request
Each finding names where in the definition it is and how to fix it in one line.

Provider rules, as documented by their error messages: OpenAI rejects function names outside
`^[a-zA-Z0-9_-]{1,64}$`, descriptions over 1,024 characters, and parameters that are not
`type: "object"` or that carry oneOf/anyOf/allOf/enum/not at the top level; Anthropic rejects
input_schema that is not an object or has oneOf/anyOf/allOf at the top level, and the same name
pattern. OpenAI's strict mode also wants every object closed (`additionalProperties: false`), every
property required, and none of a list of keywords (STRICT_UNSUPPORTED).
Schemas are untrusted (MCP servers): the walk is iterative and bounded in nodes and depth.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..toolkit.tool import Tool

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DESCRIPTION_LIMIT = 1024  # OpenAI: "string too long. Expected a string with maximum length 1024"
SHORT_DESCRIPTION = 12
COSTLY_TOKENS = 1500  # a definition above this is worth a look: it is paid again on every request
TOP_LEVEL_REJECTED = ("oneOf", "anyOf", "allOf", "enum", "not")
STRICT_UNSUPPORTED = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
)
STRICT_DEPTH = 10
MAX_NODES = 20_000
MAX_PER_TOOL = 25
_FIX_FIRST = "fix these first, then lint again"
MAX_DEPTH = 64
_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    tool: str
    severity: str  # "error" | "warning" | "info"
    where: str  # "name", "description", "parameters.properties.mode"...
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.tool}: {self.severity}: {self.where}: {self.message} (fix: {self.fix})"

    def as_dict(self) -> dict:
        return asdict(self)


def lint_tools(tools: list[Tool], costs: dict[str, int] | None = None) -> list[Finding]:
    """Findings for every tool, the worst first, then tools in the order given.

    `costs` (tokens per tool, from engine/toolcost.py) adds an info finding for costly definitions.
    """
    found: list[Finding] = []
    for tool in tools:
        mine = list(itertools.islice(_lint_tool(tool), MAX_PER_TOOL + 1))
        if len(mine) > MAX_PER_TOOL:
            mine = mine[:MAX_PER_TOOL]
            mine.append(
                Finding(tool.name, "info", "definition", f"more findings not shown (first {MAX_PER_TOOL})", _FIX_FIRST)
            )
        if costs and costs.get(tool.name, 0) > COSTLY_TOKENS:
            mine.append(
                Finding(
                    tool.name,
                    "info",
                    "definition",
                    f"the definition costs about {costs[tool.name]:,} tokens in every model request",
                    "shorten the description and parameter descriptions, or leave the tool disabled when not needed",
                )
            )
        found += mine
    found += _collisions(tools)
    # the worst first across all tools (stable: tools keep their order within a severity)
    return sorted(found, key=lambda f: _SEVERITY_ORDER.get(f.severity, 3))


def lint_priced(tools: list[Tool]) -> list[Finding]:
    """lint_tools with each definition priced as the engine sends it."""
    from .toolcost import tool_costs

    return lint_tools(tools, tool_costs(tools))


def split_builtin(findings: list[Finding], tools: list[Tool]) -> tuple[list[Finding], list[Finding]]:
    """(findings about the agent's own, plugin and MCP tools; findings about cireil's built-ins).

    A built-in sends the original CireilClaw's definition byte for byte (issue 28), so nothing in its findings
    is the user's to act on: dry-run and `%cireil tools --lint` show them only when asked (`--builtins`).
    A name collision is always reported on the tool that is not a built-in (see `_collisions`).
    """
    builtin = {t.name for t in tools if t.origin == "built-in"}
    own = [f for f in findings if f.tool not in builtin]
    return own, [f for f in findings if f.tool in builtin]


def lint_counts(findings: list[Finding]) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    return counts


# -- one tool ------------------------------------------------------------------------------------------
def _lint_tool(tool: Tool) -> Iterator[Finding]:
    name = tool.name

    def finding(severity: str, where: str, message: str, fix: str) -> Finding:
        return Finding(name, severity, where, message, fix)

    if not NAME.fullmatch(name):
        yield finding(
            "error",
            "name",
            "OpenAI and Anthropic accept tool names of 1-64 ASCII letters, digits, '_' and '-' only",
            "rename the tool (MCP: the server's tool name) to match ^[a-zA-Z0-9_-]{1,64}$",
        )
    description = tool.description or ""
    if not description.strip():
        yield finding("warning", "description", "no description: the model must guess what the tool does", _DESC_FIX)
    elif len(description.strip()) < SHORT_DESCRIPTION:
        yield finding("info", "description", f"the description is only {description.strip()!r}", _DESC_FIX)
    if len(description) > DESCRIPTION_LIMIT:
        yield finding(
            "error",
            "description",
            f"{len(description):,} characters: OpenAI rejects function descriptions over {DESCRIPTION_LIMIT:,}",
            _BUILTIN_LONG_FIX
            if tool.origin == "built-in"
            else "shorten it (MCP: long server instructions are appended to every tool's description)",
        )
    try:
        schema = tool.parameters
    except Exception as exc:  # a plugin whose parameter model cannot produce a schema
        yield finding("error", "parameters", f"no JSON Schema can be made: {exc}", "fix the tool's parameter model")
        return
    for found in _lint_root(name, schema):
        # a built-in's parameters are described exactly as the original describes them (issue 28): a missing
        # description there is the original's, and nothing anyone could add
        if tool.origin == "built-in" and found.message.startswith("no description for "):
            continue
        yield found


_DESC_FIX = "write one or two sentences: what the tool does, when to use it, what it returns"
# A built-in's description is the original CireilClaw's own text, kept byte for byte (issue 28): it cannot be
# shortened without the model seeing another tool than the original shows it.
_BUILTIN_LONG_FIX = (
    "it is the original CireilClaw's own text, sent as the original sends it: with OpenAI's own API leave the tool "
    "disabled; servers that accept longer descriptions (most OpenAI-compatible ones) are unaffected"
)


def _lint_root(tool: str, schema: Any) -> Iterator[Finding]:
    if not isinstance(schema, dict):
        yield Finding(
            tool, "error", "parameters", f"the input schema is {type(schema).__name__}, not an object", _OBJECT_FIX
        )
        return
    kind = schema.get("type")
    if kind != "object":
        yield Finding(
            tool,
            "error",
            "parameters.type",
            f'the input schema has type {kind!r}: OpenAI and Anthropic require type "object"',
            _OBJECT_FIX,
        )
    top = [k for k in TOP_LEVEL_REJECTED if k in schema]
    if top:
        yield Finding(
            tool,
            "error",
            "parameters",
            f"{', '.join(top)} at the top level: OpenAI rejects oneOf/anyOf/allOf/enum/not there, "
            "Anthropic oneOf/anyOf/allOf",
            "move the alternatives into a property (e.g. a 'mode' enum plus optional fields per mode)",
        )
    strict: list[str] = []
    undescribed: list[str] = []
    for path, node, depth in _nodes(schema):
        yield from _lint_node(tool, path, node, strict, undescribed, depth)
    if undescribed:
        yield Finding(
            tool,
            "info",
            "parameters.properties",
            f"no description for {_names(undescribed)}",
            "describe what each value means and its format (units, examples)",
        )
    if strict:
        shown = "; ".join(strict[:4]) + (f"; and {len(strict) - 4} more" if len(strict) > 4 else "")
        yield Finding(
            tool,
            "info",
            "parameters",
            f"OpenAI strict mode would reject this schema: {shown}",
            "with strict: true only: close every object (additionalProperties: false), make optional "
            "properties required and nullable, drop unsupported keywords",
        )


_OBJECT_FIX = 'wrap the parameters in {"type": "object", "properties": {...}}'


def _lint_node(
    tool: str, path: str, node: dict, strict: list[str], undescribed: list[str], depth: int
) -> Iterator[Finding]:
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for k in kinds:
        if not isinstance(k, str) or k not in _TYPES:
            yield Finding(tool, "warning", f"{path}.type", f"unknown type {k!r}", f"use one of {sorted(_TYPES)}")
    props = node.get("properties")
    if isinstance(props, dict) or kind == "object":
        props = props if isinstance(props, dict) else {}
        required = node.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            yield Finding(
                tool, "warning", f"{path}.required", "'required' is not a list of names", "make it a list of strings"
            )
            required = []
        missing = [r for r in required if r not in props]
        if missing:
            yield Finding(
                tool,
                "warning",
                f"{path}.required",
                f"'required' names {', '.join(map(repr, missing))}, which 'properties' does not define",
                "define each required property (type and description) or remove it from 'required'",
            )
        untyped = [n for n, p in props.items() if isinstance(p, dict) and not _typed(p)]
        if untyped:
            yield Finding(
                tool,
                "warning",
                f"{path}.properties",
                f"no type for {_names(untyped)}: the model may send anything",
                "give each property a type (string, integer, number, boolean, array, object)",
            )
        bad = [n for n, p in props.items() if not isinstance(p, dict | bool)]
        if bad:
            yield Finding(
                tool, "warning", f"{path}.properties", f"{_names(bad)} not a schema", "make each property a JSON object"
            )
        prefix = path.removeprefix("parameters").replace(".properties.", ".").lstrip(".")
        undescribed += [
            f"{prefix}.{n}" if prefix else n for n, p in props.items() if isinstance(p, dict) and not _described(p)
        ]
        if node.get("additionalProperties") is not False:
            strict.append(f"{path} is not closed")
        optional = [n for n in props if n not in required]
        if optional:
            strict.append(f"{path} has optional {_names(optional)}")
    if "enum" in node:
        yield from _lint_enum(tool, path, node, kinds)
    unsupported = [k for k in STRICT_UNSUPPORTED if k in node]
    if unsupported:
        strict.append(f"{path} uses {', '.join(unsupported)}")
    if depth == STRICT_DEPTH + 1:
        strict.insert(0, f"{path} is nested deeper than {STRICT_DEPTH} levels")


def _lint_enum(tool: str, path: str, node: dict, kinds: list) -> Iterator[Finding]:
    values = node["enum"]
    if not isinstance(values, list) or not values:
        yield Finding(tool, "warning", f"{path}.enum", "'enum' must be a non-empty list", "list the allowed values")
        return
    if not kinds:
        return
    wrong = [v for v in values if not any(_is_type(v, k) for k in kinds if isinstance(k, str))]
    if wrong:
        shown = ", ".join(repr(v) for v in wrong[:5]) + (" …" if len(wrong) > 5 else "")
        yield Finding(
            tool,
            "warning",
            f"{path}.enum",
            f"enum values {shown} are not of the declared type {'/'.join(map(str, kinds))}: no value can be valid",
            "make the type match the values (e.g. type string for names) or fix the values",
        )


def _is_type(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _typed(prop: dict) -> bool:
    return any(k in prop for k in ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"))


def _described(prop: dict) -> bool:
    text = prop.get("description")
    return (isinstance(text, str) and bool(text.strip())) or "$ref" in prop


def _names(names: list) -> str:
    shown = ", ".join(repr(n) for n in names[:6])
    return shown + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def _nodes(root: dict) -> Iterator[tuple[str, dict, int]]:
    """Every schema reached through properties, items, prefixItems and the combinators; bounded."""
    stack: list[tuple[str, Any, int]] = [("parameters", root, 1)]
    seen = 0
    while stack and seen < MAX_NODES:
        path, node, depth = stack.pop()
        if not isinstance(node, dict) or depth > MAX_DEPTH:
            continue
        seen += 1
        yield path, node, depth
        props = node.get("properties")
        if isinstance(props, dict):
            stack += [(f"{path}.properties.{name}", sub, depth + 1) for name, sub in reversed(props.items())]
        items = node.get("items")
        if isinstance(items, dict):
            stack.append((f"{path}.items", items, depth + 1))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            subs = node.get(key)
            if isinstance(subs, list):
                stack += [(f"{path}.{key}[{i}]", sub, depth + 1) for i, sub in enumerate(subs)]


# -- across tools ----------------------------------------------------------------------------------------
def _collisions(tools: list[Tool]) -> list[Finding]:
    """Names that differ only in case or '-' vs '_': their magics are one name, and models mix them up."""
    by_key: dict[str, list[str]] = {}
    # built-ins first, so that a collision is reported on the other tool: the one the user can rename, and the
    # one whose findings dry-run shows without --builtins
    for tool in sorted(tools, key=lambda t: t.origin != "built-in"):
        by_key.setdefault(tool.name.replace("-", "_").lower(), []).append(tool.name)
    found = []
    for names in by_key.values():
        if len(names) > 1:
            for name in names[1:]:
                found.append(
                    Finding(
                        name,
                        "warning",
                        "name",
                        f"'{name}' and '{names[0]}' collide once '-' becomes '_' and case is ignored: one magic "
                        f"(%cireil_{name.replace('-', '_')}) for both, and a model easily calls the wrong one",
                        "rename one of them (or enable only one in config/tools.toml)",
                    )
                )
    return found
