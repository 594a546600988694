"""Widget forms, in process: schema -> widget mapping, collecting arguments, and Run clicks on a real agent.

ipywidgets works without a front end (its comms are inert), so everything here runs without a kernel.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import ipywidgets as W
import pytest

import cireil
from cireil.kernel.forms.field_editors import UNSET, JsonEditor, NumberEditor, TextEditor, Toggled
from cireil.kernel.forms.group_editors import AnyOfEditor, ListEditor, ObjectEditor
from cireil.kernel.forms.schema_kinds import kind_of
from cireil.kernel.forms.schema_widgets import Collected, SchemaWidget, build_editor, collect, schema_widget
from cireil.kernel.forms.toolform import Palette, ToolForm, palette, tool_form
from cireil.params import Number, Params
from conftest import DATA

# The parameter schemas the upstream runtime sends to models: what real forms must handle.
SNAPSHOT = DATA / "tool-schemas.code-snapshot.json"


def snapshot(name: str) -> dict:
    return json.loads(SNAPSHOT.read_text())[name]


def obj(properties: dict, required: list[str] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def output_text(form: ToolForm) -> str:
    return "\n".join(o["data"].get("text/plain", "") for o in form.output.outputs)


# -- schema -> widget mapping -------------------------------------------------------------------


EVERY_KIND = obj(
    {
        "path": {"type": "string", "minLength": 1, "description": "Where to look"},
        "content": {"type": "string"},
        "mode": {"enum": ["raw", "glob"], "type": "string", "default": "glob"},
        "order": {"enum": ["asc", "desc"], "type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "limit": {"type": "number", "default": 15},
        "ratio": {"type": "number"},
        "raw": {"type": "boolean", "default": False},
        "final": {"type": "boolean", "nullable": True},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "points": {
            "type": "array",
            "items": obj({"x": {"type": "number"}, "label": {"type": "string", "minLength": 1}}, ["x", "label"]),
        },
        "where": obj({"line": {"type": "integer"}, "symbol": {"type": "string"}}),
        "origin": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "blob": {"anyOf": [{"type": "string"}, {}]},
        "extra": {"type": "object"},
        "anything": {},
    },
    ["path", "content", "count"],
)


@pytest.fixture
def every() -> SchemaWidget:
    return schema_widget(EVERY_KIND, body_arg=None)


def test_every_kind_maps_to_its_widget(every):
    f = every.fields
    assert isinstance(f["path"], TextEditor) and isinstance(f["path"].control, W.Text)
    assert isinstance(f["content"].control, W.Textarea)  # named like a body
    assert isinstance(f["mode"].control, W.Dropdown)
    assert [v for _, v in f["mode"].control.options] == ["raw", "glob"]
    assert isinstance(f["count"], NumberEditor) and isinstance(f["count"].control, W.IntText)
    assert isinstance(f["limit"].control, W.FloatText)
    assert isinstance(f["ratio"], Toggled) and isinstance(f["ratio"].control, W.FloatText)
    assert isinstance(f["raw"].control, W.Checkbox)
    assert isinstance(f["final"].control, W.Dropdown)  # optional boolean: unset / true / false
    assert isinstance(f["tags"], ListEditor) and not f["tags"].boxed
    assert isinstance(f["points"], ListEditor) and f["points"].boxed
    assert isinstance(f["where"], Toggled) and isinstance(f["where"].inner, ObjectEditor)
    assert "border" in (f["where"].inner.widget.layout.border or "")
    assert isinstance(f["origin"], AnyOfEditor)
    assert [label for label, _ in f["origin"].selector.options] == ["— unset —", "text", "list of text"]
    assert isinstance(f["blob"], JsonEditor)  # a variant without its own form: the whole value as JSON
    assert isinstance(f["extra"], JsonEditor) and isinstance(f["anything"], JsonEditor)


def test_kinds_of_typed_lists_and_free_objects():
    assert kind_of({"type": ["string", "null"]}) == "string"
    assert kind_of({"type": ["string", "integer"]}) == "json"
    assert kind_of({"type": "object", "properties": {}, "additionalProperties": False}) == "object"
    assert kind_of({"type": "object", "additionalProperties": {"type": "string"}}) == "json"
    assert kind_of({"oneOf": [{"type": "string"}, {"type": "number"}]}) == "anyOf"


def test_a_tool_whose_arguments_are_a_free_form_object_runs_from_its_form_with_none_given():
    # what a JS plugin's `vb.object({})` declares: no properties, extra keys allowed
    form = schema_widget({"type": "object", "properties": {}, "required": []})
    collected = collect(form)
    assert (collected.value, collected.problems) == ({}, [])


def test_body_arg_gets_a_text_area():
    form = schema_widget(obj({"path": {"type": "string"}, "input": {"type": "string"}}), body_arg="input")
    assert isinstance(form.fields["input"].control, W.Textarea)
    assert isinstance(form.fields["path"].control, W.Text) and not isinstance(form.fields["path"].control, W.Textarea)


def test_required_fields_are_marked_and_descriptions_shown(every):
    labels = every.editor.labels
    assert "*" in labels["path"].value and "required" in labels["path"].value
    assert "*" not in labels["mode"].value
    texts = [w.value for w in _walk(every) if isinstance(w, W.HTML)]
    assert any("Where to look" in t for t in texts)


def test_defaults_are_filled(every):
    f = every.fields
    assert f["mode"].control.value == "glob"
    assert f["limit"].control.value == 15.0
    assert f["raw"].control.value is False
    form = schema_widget(snapshot("prune-boundaries"))
    assert form.fields["preserve"].rows == []
    nested_default = schema_widget(obj({"near": {**obj({"line": {"type": "integer"}}), "default": {"line": 3}}}))
    assert nested_default.collect().value == {"near": {"line": 3}}


def test_unset_optional_fields_are_omitted(every):
    f = every.fields
    f["path"].control.value = "/workspace"
    f["count"].control.value = 2
    assert f["order"].control.value is UNSET
    assert f["final"].control.value is UNSET
    got = every.collect()
    assert got.ok, got.problems
    # required text without minLength may be empty (edit's newText = "" deletes text)
    assert got.value == {"path": "/workspace", "content": "", "count": 2, "mode": "glob", "limit": 15, "raw": False}


def test_collect_returns_exactly_the_args(every):
    f = every.fields
    f["path"].control.value = "/workspace"
    f["content"].control.value = "line 1\nline 2"
    f["order"].control.value = "asc"
    f["count"].control.value = 3
    f["limit"].control.value = 2.5
    f["ratio"].control.value = 0.5  # editing an optional number ticks its "set" box
    assert f["ratio"].toggle.value is True
    f["raw"].control.value = True
    f["final"].control.value = False
    f["tags"].add("a")
    f["tags"].add().control.value = "b"
    point = f["points"].add()
    point.fields["x"].control.value = 1.0
    point.fields["label"].control.value = "one"
    f["points"].add({"x": 2, "label": "two"})
    f["where"].toggle.value = True
    f["where"].inner.fields["line"].control.value = 7
    f["origin"].selector.value = 1
    f["origin"].current.add("cli")
    f["blob"].control.value = '{"k": [1, 2]}'
    f["extra"].control.value = '{"a": 1}'
    f["anything"].control.value = "null"
    got = collect(every)
    assert got == Collected(
        {
            "path": "/workspace",
            "content": "line 1\nline 2",
            "mode": "glob",
            "order": "asc",
            "count": 3,
            "limit": 2.5,
            "ratio": 0.5,
            "raw": True,
            "final": False,
            "tags": ["a", "b"],
            "points": [{"x": 1, "label": "one"}, {"x": 2, "label": "two"}],
            "where": {"line": 7},
            "origin": ["cli"],
            "blob": {"k": [1, 2]},
            "extra": {"a": 1},
            "anything": None,
        },
        [],
    )


def test_optional_number_zero_is_sent_once_set(every):
    every.fields["path"].control.value = "p"
    assert "ratio" not in every.collect().value
    every.fields["ratio"].toggle.value = True
    assert every.collect().value["ratio"] == 0
    every.fields["ratio"].toggle.value = False
    assert "ratio" not in every.collect().value


def test_optional_group_is_hidden_until_set(every):
    where = every.fields["where"]
    assert where.inner.widget.layout.display == "none"
    where.toggle.value = True
    assert where.inner.widget.layout.display == ""
    every.fields["path"].control.value = "p"
    assert every.collect().value["where"] == {}


def test_list_rows_add_and_remove(every):
    tags = every.fields["tags"]
    tags.add_button.click()
    tags.add_button.click()
    tags.rows[0].editor.control.value = "keep"
    tags.rows[1].remove.click()
    assert len(tags.rows) == 1 and len(tags._rows_box.children) == 1
    tags.add()  # an empty row is a problem, not a silently dropped value
    every.fields["path"].control.value = "p"
    got = every.collect()
    assert [str(p) for p in got.problems] == ["tags.1: empty item: fill it in or remove it"]


def test_local_problems_required_and_bad_json(every):
    every.fields["extra"].control.value = "{not json"
    every.fields["points"].add()
    got = every.collect()
    assert got.value is None
    assert [str(p) for p in got.problems] == [
        "path: required",
        "points.0.label: required",
        "extra: invalid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
    ]


def test_required_choice_must_be_chosen():
    form = schema_widget(obj({"direction": {"enum": ["before", "after"], "type": "string"}}, ["direction"]))
    assert form.fields["direction"].control.options[0][0] == "— choose —"
    assert [str(p) for p in form.collect().problems] == ["direction: required"]
    form.fields["direction"].control.value = "after"
    assert form.collect().value == {"direction": "after"}


def test_min_items_required_list():
    form = schema_widget(obj({"sections": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, ["sections"]))
    assert [str(p) for p in form.collect().problems] == ["sections: needs at least 1 item"]


def test_non_object_schema_and_set_value():
    editor = build_editor({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]})
    editor.set_value([1, 2])
    assert collect(editor).value == [1, 2]
    editor.set_value("x")
    assert collect(editor).value == "x"
    assert collect(build_editor({"type": "string", "minLength": 1})).problems[0].message == "a value is required"


# -- the snapshot schemas -----------------------------------------------------------------------


def test_snapshot_edit_schema():
    form = schema_widget(snapshot("edit"))
    f = form.fields
    assert isinstance(f["path"].control, W.Text)
    assert isinstance(f["dryRun"].control, W.Dropdown)  # optional boolean, no default
    edits = f["edits"]
    assert isinstance(edits, ListEditor) and edits.boxed
    f["path"].control.value = "/workspace/notes.md"
    first = edits.add()
    assert isinstance(first.fields["oldText"].control, W.Textarea)
    assert isinstance(first.fields["newText"].control, W.Textarea)
    first.fields["oldText"].control.value = "old"
    near = first.fields["near"]
    assert [label for label, _ in near.selector.options] == ["— unset —", "text", "object", "list of text or object"]
    near.selector.value = 1
    near.current.fields["line"].control.value = 12
    near.current.fields["direction"].control.value = "after"
    second = edits.add()
    second.fields["oldText"].control.value = "a"
    second.fields["newText"].control.value = "b"
    second.fields["all"].control.value = True
    second.fields["near"].selector.value = 2
    anchors = second.fields["near"].current
    anchors.add("def main")
    anchors.add({"symbol": "Foo"})
    assert collect(form).value == {
        "path": "/workspace/notes.md",
        "edits": [
            {"near": {"direction": "after", "line": 12}, "newText": "", "oldText": "old"},
            {"all": True, "near": ["def main", {"symbol": "Foo"}], "newText": "b", "oldText": "a"},
        ],
    }


def test_snapshot_exec_schema():
    form = schema_widget(snapshot("exec"))
    f = form.fields
    assert isinstance(f["args"], ListEditor)
    f["command"].control.value = "git"
    assert collect(form).value == {"command": "git"}  # nullable optional list with no rows: left out
    f["args"].add("status")
    f["args"].add("--short")
    assert collect(form).value == {"command": "git", "args": ["status", "--short"]}
    f["args"].add()
    assert [str(p) for p in collect(form).problems] == ["args.2: empty item: fill it in or remove it"]


def test_every_snapshot_schema_builds():
    for name, schema in json.loads(SNAPSHOT.read_text()).items():
        got = collect(schema_widget(schema))
        assert got.ok or all(p.message == "required" for p in got.problems), (name, got.problems)


# -- forms on a loaded agent --------------------------------------------------------------------


@pytest.fixture
def agent(agent_dir):
    a = cireil.load(agent_dir)
    yield a
    a.close()


def test_form_shows_description_and_runs(agent):
    form = tool_form(agent, "list-dir")
    assert isinstance(form, W.Widget)
    assert "List the files and subdirectories" in form.children[0].value
    assert repr(form) == "<cireil form list-dir(path*)>"
    form.fields["path"].control.value = "/workspace"
    form.run_button.click()
    assert form.wait(10)
    assert form.last_call.result(0).success
    out = form.output.outputs
    assert len(out) == 1 and out[0]["output_type"] == "display_data"
    bundle = out[0]["data"]
    assert "hello.txt" in bundle["text/plain"]
    assert {"text/plain", "text/html", "application/vnd.cireil.result+json"} <= set(bundle)
    assert form.run_button.disabled is False
    assert "done" in form.status.value


def test_missing_required_is_shown_and_tool_not_called(agent, monkeypatch):
    calls = []
    monkeypatch.setattr(agent, "submit", lambda *a, **k: calls.append(a))
    form = tool_form(agent, "list-dir")
    form.run_button.click()
    assert calls == []
    assert "path" in form.problems.value and "required" in form.problems.value
    assert form.output.outputs == ()


def test_failed_result_is_rendered(agent):
    form = tool_form(agent, "list-dir")
    form.fields["path"].control.value = "/workspace/hello.txt"
    form.run_button.click()
    assert form.wait(10)
    assert "is not a directory" in output_text(form)
    assert "failed" in form.status.value


def test_config_error_shows_and_form_stays_usable(agent, agent_dir):
    form = tool_form(agent, "list-dir")
    form.fields["path"].control.value = "/workspace"
    tools_toml = agent_dir / "config" / "tools.toml"
    good = tools_toml.read_text()
    tools_toml.write_text(good + "reed = true\n")
    form.run_button.click()
    text = output_text(form)
    assert "config/tools.toml" in text and "reed" in text
    assert form.run_button.disabled is False
    tools_toml.write_text(good)
    form.run_button.click()
    assert form.wait(10)
    assert "hello.txt" in output_text(form)


def test_disabled_tool_shows_error(agent, agent_dir):
    form = tool_form(agent, "list-dir")
    form.fields["path"].control.value = "/workspace"
    tools_toml = agent_dir / "config" / "tools.toml"
    tools_toml.write_text(tools_toml.read_text().replace("list-dir = true", "list-dir = false"))
    form.run_button.click()
    assert "not enabled" in output_text(form)


def test_unknown_tool_form_raises(agent):
    with pytest.raises(cireil.runtime.base.errors.UnknownToolError):
        tool_form(agent, "read")


def test_button_disabled_while_running(agent_dir):
    gate = threading.Event()

    async def run(args: dict, ctx) -> dict:
        await asyncio.to_thread(gate.wait, 10)
        return {"waited": args["seconds"], "success": True}

    slow = cireil.Tool("slow", "Wait for the test.", Params(seconds=Number()), run)
    tools_toml = agent_dir / "config" / "tools.toml"
    tools_toml.write_text(tools_toml.read_text() + "slow = true\n")
    agent = cireil.load(agent_dir, tools=[slow])
    form = tool_form(agent, "slow")
    assert isinstance(form.fields["seconds"].control, W.FloatText)
    form.fields["seconds"].control.value = 2
    started = time.perf_counter()
    form.run_button.click()
    assert time.perf_counter() - started < 1  # the click returns at once
    assert form.run_button.disabled is True and "running" in form.status.value
    assert form.cancel_button.disabled is False
    form.run_button.click()  # ignored while a call is in flight
    gate.set()
    assert form.wait(10)
    assert form.run_button.disabled is False and form.cancel_button.disabled is True
    assert json.loads(json.dumps(form.output.outputs[0]["data"]["application/vnd.cireil.result+json"])) == {
        "waited": 2,
        "success": True,
    }


def test_cancel_stops_a_running_call(agent_dir):
    cleaned = threading.Event()

    async def run(args: dict, ctx) -> dict:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()
        return {"success": True}

    sleepy = cireil.Tool("sleepy", "Sleep long.", Params(), run)
    tools_toml = agent_dir / "config" / "tools.toml"
    tools_toml.write_text(tools_toml.read_text() + "sleepy = true\n")
    form = tool_form(cireil.load(agent_dir, tools=[sleepy]), "sleepy")
    form.run_button.click()
    assert not form.wait(0.2)
    form.cancel_button.click()
    assert form.wait(10)
    assert cleaned.is_set()
    assert "cancelled" in form.status.value
    assert form.run_button.disabled is False and form.cancel_button.disabled is True


def test_palette_builds_forms_lazily(agent):
    pal = palette(agent)
    assert isinstance(pal, Palette)
    names = [t.name for t in agent.tools]
    assert list(pal.tools) == names
    assert len(pal.accordion.children) == len(names)
    assert pal.accordion.titles[0].startswith(names[0] + " — ")
    assert pal.forms == {}
    assert repr(pal) == f"<cireil palette testagent: {', '.join(names)}>"
    pal.accordion.selected_index = names.index("write")
    assert list(pal.forms) == ["write"]
    form = pal.forms["write"]
    assert pal.accordion.children[names.index("write")].children == (form,)
    assert isinstance(form.fields["content"].control, W.Textarea)  # write's body
    assert pal.form("list-dir") is pal.form("list-dir")


def test_importing_cireil_does_not_import_widgets(agent_dir):
    code = (
        "import sys, cireil\n"
        f"cireil.load({str(agent_dir)!r}).call('list-dir', path='/workspace')\n"
        "print('ipywidgets' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)
