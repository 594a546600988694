"""JSON Schema -> a value-collecting widget. Knows nothing about tools or agents.

`schema_widget(schema)` builds the form, `collect(form)` reads it into the value the schema
describes plus a list of problems. Tool forms use it for their parameters; MCP tools with schemas
written elsewhere can use it as is.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import ipywidgets as W

from .field_editors import (
    INVALID,
    UNSET,
    BooleanEditor,
    Editor,
    EnumEditor,
    JsonEditor,
    NumberEditor,
    Problem,
    TextEditor,
    Toggled,
)
from .group_editors import AnyOfEditor, ListEditor, ObjectEditor
from .schema_kinds import (
    ANY_OF,
    ARRAY,
    BOOLEAN,
    ENUM,
    INTEGER,
    NUMBER,
    OBJECT,
    STRING,
    is_textual_name,
    kind_of,
    normalize,
)

__all__ = ["UNSET", "Collected", "Editor", "Problem", "SchemaWidget", "build_editor", "collect", "schema_widget"]


def build_editor(schema: Any, *, required: bool = True, name: str = "", multiline: bool = False) -> Editor:
    """The editor for one schema node. `required` is whether the enclosing object requires it.

    Defaults are filled in. A field that is optional and has no default gets a visible unset state
    (empty text, a "— unset —" choice, a "set" checkbox, zero rows) and is left out when unset.
    """
    schema = normalize(schema)
    kind = kind_of(schema)
    has_default = "default" in schema
    may_be_unset = not required and not has_default
    label = name or "value"
    editor: Editor
    if kind == STRING:
        editor = TextEditor(schema, required=required, multiline=multiline or is_textual_name(name), label=label)
    elif kind == ENUM:
        blank = None if has_default else ("— unset —" if may_be_unset else "— choose —")
        editor = EnumEditor(schema, blank=blank, label=label)
    elif kind in (INTEGER, NUMBER):
        editor = NumberEditor(schema, label=label)
        editor.kind = kind
        if may_be_unset:
            editor = Toggled(editor, hide_when_unset=False, label=label)
    elif kind == BOOLEAN:
        editor = BooleanEditor(schema, tri_state=may_be_unset, label=label)
    elif kind == ARRAY:
        editor = ListEditor(schema, build=build_editor, required=not may_be_unset, name=label)
    elif kind == OBJECT:
        editor = ObjectEditor(schema, build=build_editor, nested=True)
        editor.kind = kind
        if may_be_unset:
            editor = Toggled(editor, hide_when_unset=True, label=label)
    elif kind == ANY_OF:
        editor = AnyOfEditor(schema, build=build_editor, required=not may_be_unset, name=label)
    else:
        editor = JsonEditor(schema, label=label)
    editor.kind = kind
    if has_default:
        editor.set_value(schema["default"])
    return editor


class Collected(NamedTuple):
    """What a form holds: the value (None when it has problems) and what to fix first."""

    value: Any
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


class SchemaWidget(W.VBox):
    """A form for one JSON Schema; `collect()` reads it, `editor` is the tree of field editors."""

    def __init__(self, editor: Editor, schema: dict, **kwargs: Any) -> None:
        super().__init__([editor.widget], **kwargs)
        self.editor = editor
        self.schema = schema

    @property
    def fields(self) -> dict[str, Editor]:
        """The top-level fields by name (empty unless the schema is an object)."""
        return getattr(self.editor, "fields", {})

    def collect(self) -> Collected:
        return collect(self)


def schema_widget(schema: dict, *, body_arg: str | None = None) -> SchemaWidget:
    """A value-collecting form for `schema`; `body_arg` names the property that gets a large text area."""
    schema = normalize(schema)
    if kind_of(schema) == OBJECT:
        # The top level is the form itself, not a bordered group inside it.
        editor: Editor = ObjectEditor(schema, build=build_editor, nested=False, body_arg=body_arg)
        editor.kind = OBJECT
    else:
        editor = build_editor(schema, required=True)
    return SchemaWidget(editor, schema)


def collect(source: SchemaWidget | Editor) -> Collected:
    """Read a form into its value; side-effect free, so tests and the Run button share it."""
    editor = source.editor if isinstance(source, SchemaWidget) else source
    problems: list[Problem] = []
    value = editor.collect((), problems)
    top = source.schema if isinstance(source, SchemaWidget) else None
    if value is UNSET and not problems and isinstance(top, dict) and top.get("type") == "object":
        value = {}  # a tool's arguments left empty: no arguments (a plugin's `vb.object({})` takes extra keys)
    if value is UNSET and not problems:
        problems.append(Problem((), "a value is required"))
    if problems or value is UNSET or value is INVALID:
        return Collected(None, problems)
    return Collected(value, problems)
