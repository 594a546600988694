"""Editors that hold other editors: objects (a group of fields), arrays (rows), anyOf (a variant choice).

They receive the `build` function that maps a schema to an editor, so nesting goes as deep as the
schema does (edit's `edits` is a list of objects whose `near` is an anyOf holding a list of anyOf).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as W

from ...render.html import ERROR, FG_DIM, MONO, esc
from .field_editors import INVALID, UNSET, Editor, Path, Problem
from .schema_kinds import COMPOUND, describe, kind_of, matches, variant_label, variants_of

Build = Callable[..., Editor]

GROUP_BORDER = "1px solid var(--jp-border-color2, rgba(127,127,127,0.4))"


def group_layout() -> W.Layout:
    return W.Layout(border=GROUP_BORDER, padding="4px 8px", margin="2px 0 4px 0")


def help_html(text: str) -> W.HTML:
    return W.HTML(f'<div style="color:{FG_DIM};font-size:90%;line-height:1.35">{esc(text)}</div>')


def label_html(name: str, schema: dict, *, required: bool) -> W.HTML:
    mark = f' <span title="required" style="color:{ERROR};font-weight:600">*</span>' if required else ""
    return W.HTML(
        f'<span style="font-family:{MONO};font-weight:600">{esc(name)}</span>{mark}'
        f' <span style="color:{FG_DIM};font-size:90%">{esc(describe(schema))}</span>'
    )


class ObjectEditor(Editor):
    """One row per property: name (with * when required), type hint, help text, input."""

    def __init__(self, schema: dict, *, build: Build, nested: bool, body_arg: str | None = None) -> None:
        self.schema = schema
        props: dict = schema.get("properties") or {}
        self.required = set(schema.get("required") or ())
        self.fields: dict[str, Editor] = {}
        self.labels: dict[str, W.HTML] = {}
        rows: list[W.Widget] = []
        for name, sub in props.items():
            required = name in self.required
            editor = build(sub, required=required, name=name, multiline=name == body_arg)
            self.fields[name] = editor
            self.labels[name] = label_html(name, sub, required=required)
            parts = [self.labels[name]]
            if isinstance(sub, dict) and sub.get("description"):
                parts.append(help_html(sub["description"]))
            parts.append(editor.widget)
            rows.append(W.VBox(parts, layout=W.Layout(margin="0 0 6px 0")))
        if not rows:
            rows.append(help_html("no parameters"))
        self.widget = W.VBox(rows, layout=group_layout() if nested else W.Layout())

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        out: dict[str, Any] = {}
        props = self.schema.get("properties") or {}
        for name, editor in self.fields.items():
            value = editor.collect((*path, name), problems)
            if value is INVALID:
                continue
            if value is UNSET:
                if name in self.required:
                    if isinstance(props.get(name), dict) and props[name].get("nullable"):
                        out[name] = None  # required but nullable: unset is exactly null
                    else:
                        problems.append(Problem((*path, name), "required"))
                continue
            out[name] = value
        return out

    def set_value(self, value: Any) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                if name in self.fields:
                    self.fields[name].set_value(item)


@dataclass
class _Row:
    editor: Editor
    widget: W.Widget
    number: W.HTML | None
    remove: W.Button


class ListEditor(Editor):
    """Rows of one item schema with add/remove. Zero rows leaves an optional list out of the call."""

    def __init__(self, schema: dict, *, build: Build, required: bool, name: str) -> None:
        self.schema = schema
        self.build = build
        self.required = required
        self.name = name
        items = schema.get("items")
        self.items_schema: dict = items if isinstance(items, dict) else {}
        self.boxed = kind_of(self.items_schema) in COMPOUND
        self.rows: list[_Row] = []
        self.add_button = W.Button(
            description="add", icon="plus", tooltip=f"add an item to {name}", layout=W.Layout(width="auto")
        )
        self.add_button.on_click(lambda _button: self.add())
        self.empty_note = help_html("no items" if required else "no items (left out of the call)")
        self._rows_box = W.VBox([])
        self.widget = W.VBox([self._rows_box, self.empty_note, self.add_button])

    def add(self, value: Any = UNSET) -> Editor:
        editor = self.build(self.items_schema, required=True, name=f"{self.name} item")
        if value is not UNSET:
            editor.set_value(value)
        remove = W.Button(description="remove", icon="trash", layout=W.Layout(width="auto"))
        if self.boxed:
            number = W.HTML()
            widget: W.Widget = W.VBox([W.HBox([number, remove]), editor.widget], layout=group_layout())
        else:
            number = None
            widget = W.HBox([editor.widget, remove])
        row = _Row(editor, widget, number, remove)
        remove.on_click(lambda _button: self.remove(row))
        self.rows.append(row)
        self._refresh()
        return editor

    def remove(self, row: _Row | int) -> None:
        if isinstance(row, int):
            row = self.rows[row]
        self.rows.remove(row)
        self._refresh()
        _close_tree(row.widget)

    def _refresh(self) -> None:
        for index, row in enumerate(self.rows):
            row.remove.tooltip = f"remove item {index + 1} of {self.name}"
            if row.number is not None:
                row.number.value = f'<span style="color:{FG_DIM}">#{index + 1}</span>'
        self._rows_box.children = tuple(row.widget for row in self.rows)
        self.empty_note.layout.display = "none" if self.rows else ""

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        if not self.rows:
            if not self.required:
                return UNSET
            min_items = self.schema.get("minItems") or 0
            if min_items:
                problems.append(Problem(path, f"needs at least {min_items} item{'s' if min_items > 1 else ''}"))
                return INVALID
            return []
        values = []
        for index, row in enumerate(self.rows):
            value = row.editor.collect((*path, index), problems)
            if value is UNSET:
                problems.append(Problem((*path, index), "empty item: fill it in or remove it"))
            elif value is not INVALID:
                values.append(value)
        return values

    def set_value(self, value: Any) -> None:
        if not isinstance(value, list):
            return
        for row in list(self.rows):
            self.remove(row)
        for item in value:
            self.add(item)


class AnyOfEditor(Editor):
    """A selector of variants and the chosen variant's editor (built on first choice, kept when switching)."""

    def __init__(self, schema: dict, *, build: Build, required: bool, name: str) -> None:
        self.schema = schema
        self.build = build
        self.name = name
        self.variants: list[dict] = list(variants_of(schema) or ())
        options: list[tuple[str, int]] = []
        seen: set[str] = set()
        for index, variant in enumerate(self.variants):
            label = variant_label(variant)
            if label in seen:
                label = f"{label} ({index + 1})"
            seen.add(label)
            options.append((label, index))
        if not required:
            options.insert(0, ("— unset —", -1))
        self.selector = W.Dropdown(options=options, tooltip=f"kind of value for {name}", layout=W.Layout(width="auto"))
        self.editors: dict[int, Editor] = {}
        self._area = W.VBox([])
        self.widget = W.VBox([self.selector, self._area])
        self.selector.observe(self._show, "value")
        self._show()

    def editor(self, index: int) -> Editor:
        if index not in self.editors:
            self.editors[index] = self.build(self.variants[index], required=True, name=self.name)
        return self.editors[index]

    @property
    def current(self) -> Editor | None:
        index = self.selector.value
        return None if index < 0 else self.editor(index)

    def _show(self, _change: Any = None) -> None:
        current = self.current
        self._area.children = () if current is None else (current.widget,)

    def collect(self, path: Path, problems: list[Problem]) -> Any:
        current = self.current
        return UNSET if current is None else current.collect(path, problems)

    def set_value(self, value: Any) -> None:
        for index, variant in enumerate(self.variants):
            if matches(variant, value):
                self.selector.value = index
                self.editor(index).set_value(value)
                return


def _close_tree(widget: W.Widget) -> None:
    """Close a removed row's widgets so their comms do not linger in the kernel."""
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()
