"""Editors for single values: one widget per schema node that can read its value back.

An editor's `collect` only reads widgets (it never changes them) and returns the value, `UNSET`
when the person left it empty, or `INVALID` after recording a problem (e.g. JSON that does not
parse). The parent decides what UNSET means: omitted when optional, a problem when required.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import ipywidgets as W

from .schema_kinds import INTEGER


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Marker("UNSET")
INVALID: Any = _Marker("INVALID")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """Something to fix in the form before the tool can be called; `path` names the field."""

    path: Path
    message: str

    @property
    def where(self) -> str:
        return ".".join(str(p) for p in self.path)

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.path else self.message


def wide_layout(**extra: str) -> W.Layout:
    # Inputs stretch with the notebook column but stay readable on very wide screens.
    return W.Layout(width="100%", max_width="48em", **extra)


class Editor:
    """Base of every editor: `widget` is what is displayed, `kind` the schema kind it edits."""

    widget: W.Widget
    kind: str = ""

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        raise NotImplementedError

    def set_value(self, value: Any) -> None:
        raise NotImplementedError


class TextEditor(Editor):
    def __init__(self, schema: dict, *, required: bool, multiline: bool, label: str) -> None:
        self.schema = schema
        # An empty required string is a real value (edit's newText="" deletes text) unless the schema
        # needs at least one character; an empty optional string means "not given".
        self.empty_is_value = required and not schema.get("minLength")
        placeholder = "" if required else "optional"
        if multiline:
            self.control: W.Text | W.Textarea = W.Textarea(
                placeholder=placeholder, rows=6, tooltip=label, layout=wide_layout()
            )
        else:
            self.control = W.Text(placeholder=placeholder, tooltip=label, layout=wide_layout())
        self.widget = self.control

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        value = self.control.value
        if value == "" and not self.empty_is_value:
            return UNSET
        return value

    def set_value(self, value: Any) -> None:
        self.control.value = "" if value is None else str(value)


class EnumEditor(Editor):
    def __init__(self, schema: dict, *, blank: str | None, label: str) -> None:
        self.schema = schema
        options: list[tuple[str, Any]] = [(v if isinstance(v, str) else json.dumps(v), v) for v in schema["enum"]]
        if blank is not None:
            options.insert(0, (blank, UNSET))
        self.control = W.Dropdown(options=options, tooltip=label, layout=W.Layout(width="auto"))
        self.widget = self.control

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        return self.control.value

    def set_value(self, value: Any) -> None:
        if value in self.schema["enum"]:
            self.control.value = value


class NumberEditor(Editor):
    """IntText or FloatText; an optional number without default is wrapped in `Toggled` for its unset state."""

    def __init__(self, schema: dict, *, label: str) -> None:
        self.schema = schema
        self.integer = schema.get("type") == INTEGER
        start = schema.get("minimum", 0)
        if self.integer:
            self.control: W.IntText | W.FloatText = W.IntText(value=int(start), tooltip=label)
        else:
            self.control = W.FloatText(value=float(start), tooltip=label)
        self.control.layout.width = "12em"
        self.widget = self.control

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        value = self.control.value
        # FloatText always holds a float; 5 reads better than 5.0 in the call and in the result.
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def set_value(self, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.control.value = int(value) if self.integer else float(value)


class BooleanEditor(Editor):
    """A Checkbox; a three-way choice when the field is optional without default (unset is not false)."""

    def __init__(self, schema: dict, *, tri_state: bool, label: str) -> None:
        self.schema = schema
        if tri_state:
            self.control: W.Checkbox | W.Dropdown = W.Dropdown(
                options=[("— unset —", UNSET), ("true", True), ("false", False)],
                tooltip=label,
                layout=W.Layout(width="auto"),
            )
        else:
            # no description: the field's row already names it ("raw" was shown twice)
            self.control = W.Checkbox(value=False, indent=False, tooltip=label)
        self.widget = self.control

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        return self.control.value

    def set_value(self, value: Any) -> None:
        if isinstance(value, bool):
            self.control.value = value


class JsonEditor(Editor):
    """The fallback for anything without a dedicated input: the value typed as JSON."""

    def __init__(self, schema: dict, *, label: str) -> None:
        self.schema = schema
        self.control = W.Textarea(placeholder="JSON value", rows=3, tooltip=label, layout=wide_layout())
        self.widget = self.control

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        text = self.control.value
        if not text.strip():
            return UNSET
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(Problem(path, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"))
            return INVALID

    def set_value(self, value: Any) -> None:
        self.control.value = json.dumps(value, indent=2, ensure_ascii=False)


class Toggled(Editor):
    """An optional value without default: explicitly unset until the person sets it.

    A number cannot be empty and a group always has a value, so 0 or {} would be sent by mistake;
    the "set" checkbox makes leaving them out a visible state. Editing a number ticks it.
    """

    def __init__(self, inner: Editor, *, hide_when_unset: bool, label: str) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.hide_when_unset = hide_when_unset
        self.toggle = W.Checkbox(
            value=False, description="set", indent=False, tooltip=f"include {label}", layout=W.Layout(width="auto")
        )
        self.toggle.observe(self._sync, "value")
        if hide_when_unset:
            self.widget = W.VBox([self.toggle, inner.widget])
        else:
            self.widget = W.HBox([self.toggle, inner.widget])
            control = getattr(inner, "control", None)
            if control is not None:
                control.observe(self._touched, "value")
        self._sync()

    @property
    def control(self) -> W.Widget | None:
        return getattr(self.inner, "control", None)

    def _touched(self, _change: Any) -> None:
        self.toggle.value = True

    def _sync(self, _change: Any = None) -> None:
        if self.hide_when_unset:
            self.inner.widget.layout.display = "" if self.toggle.value else "none"

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        if not self.toggle.value:
            return UNSET
        return self.inner.collect(path, problems)

    def set_value(self, value: Any) -> None:
        self.inner.set_value(value)
        self.toggle.value = True
