"""What `--diff-original` reports (runtime/toolkit/original_diff.py): every declared difference from the original
CireilClaw's tool definitions, the tools only one side has, and for an agent which of them its tools show.
Whether the declarations are true is checked against the original itself: tests/peer/test_tool_definitions.py."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cireil.runtime.base.params import Params, String
from cireil.runtime.original.runtime_root import CIREIL_ONLY_TOOLS
from cireil.runtime.toolkit import original_diff
from cireil.runtime.toolkit.original_diff import ORIGINAL_ONLY, differences
from cireil.runtime.toolkit.registry import BUILTIN_NAMES, builtin
from cireil.runtime.toolkit.tool import SpecDifference, Tool
from conftest import DATA

# The parameter schemas the original sends (descriptions left out), as the reference recorded them; the peer test
# compares descriptions too, against the original itself, where Node can be installed.
SNAPSHOT = DATA / "tool-schemas.code-snapshot.json"


async def _noop(args: dict, ctx: object) -> dict:
    return {"success": True}


def extra(name: str, origin: str) -> Tool:
    return Tool(name=name, description=f"{name} does things", params=Params(x=String()), run=_noop, origin=origin)


def by_tool(report: dict) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    for row in report["rows"]:
        rows.setdefault(row["tool"], []).append(row)
    return rows


def test_without_an_agent_every_declaration_and_every_one_sided_tool_is_listed():
    report = differences()
    declared = [(n, d.where) for n in BUILTIN_NAMES for d in builtin(n).spec_differences]
    rows = [(r["tool"], r["where"]) for r in report["rows"]]
    assert rows == [*declared, ("str-replace", "tool"), ("mcp__<server>__<tool>", "tool")]
    assert ("exec", "parameters.properties.input") in rows and ("invoke", "tool") in rows
    sides = {r["tool"]: r["side"] for r in report["rows"]}
    assert (sides["invoke"], sides["str-replace"], sides["exec"]) == ("cireil only", "original only", "both")
    assert all(r["enabled"] is None and r["applies"] is None for r in report["rows"])
    # everything not declared is the original's: the identical list is the rest of the built-ins
    assert report["identical"] == [n for n in BUILTIN_NAMES if not builtin(n).spec_differences]
    assert "read" in report["identical"] and "write" not in report["identical"]
    assert report["agent"] is False


def test_every_declaration_names_its_place_and_its_spec_rule():
    for name in BUILTIN_NAMES:
        for d in builtin(name).spec_differences:
            assert d.where == "tool" or d.where == "description" or d.where.startswith("parameters."), (name, d)
            assert d.rule.startswith('spec "') and d.what, (name, d)
            assert d.when == "" or d.when.endswith(" = false"), (name, d)
    for d in ORIGINAL_ONLY.values():
        assert d.where == "tool" and d.rule.startswith('spec "')


def test_with_an_agent_rows_say_what_shows_there():
    tools = [
        builtin("edit"),
        builtin("write"),
        builtin("exec"),
        extra("mcp__demo__add", "mcp:demo 2025-06-18"),
        extra("read", "plugin:fancy"),  # a plugin's replacement of a built-in: its own definition
        extra("peek", "python"),
    ]
    rows = by_tool(differences(tools))
    (write,) = rows["write"]
    assert (write["when"], write["enabled"], write["applies"]) == ("edit = false", True, False)  # edit is on
    assert rows["exec"][0]["enabled"] is True and rows["exec"][0]["applies"] is None
    assert rows["invoke"][0]["enabled"] is False
    assert rows["session-info"][0]["enabled"] is False
    assert rows["str-replace"][0]["enabled"] is False
    assert [r["side"] for r in rows["mcp__demo__add"]] == ["cireil only"]
    assert rows["mcp__demo__add"][0]["rule"] == original_diff.MCP.rule
    assert rows["read"][0]["rule"] == original_diff.PLUGIN.rule
    assert rows["peek"][0]["rule"] == original_diff.PYTHON.rule
    assert "mcp__<server>__<tool>" not in rows  # the agent's own MCP tools stand for themselves
    report = differences(tools)
    assert "read" not in report["identical"] and report["agent"] is True

    without_edit = by_tool(differences([builtin("write")]))
    assert without_edit["write"][0]["applies"] is True


def test_an_unknown_condition_is_refused(monkeypatch):
    odd = replace(builtin("write"), spec_differences=(SpecDifference("description", "x", 'spec "X"', when="edit"),))
    monkeypatch.setattr(original_diff, "builtin", lambda name: odd if name == "write" else builtin(name))
    with pytest.raises(ValueError, match="unknown condition 'edit'"):
        differences([builtin("write")])


def _undescribed(value: object) -> object:
    if isinstance(value, dict):
        return {k: _undescribed(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_undescribed(v) for v in value]
    return value


def _without(schema: dict, where: str) -> dict:
    """`schema` without the property a declared difference adds (`parameters.properties.<name>`)."""
    out = json.loads(json.dumps(schema))
    node = out
    *parents, last = where.removeprefix("parameters.").split(".")
    for key in parents:
        node = node[key]
    del node[last]
    return out


def test_parameter_schemas_are_the_originals_but_for_the_declared_differences():
    snapshot = json.loads(SNAPSHOT.read_text())
    for name in BUILTIN_NAMES:
        if name not in snapshot:
            assert any(d.where == "tool" for d in builtin(name).spec_differences), name
            continue
        ours = builtin(name).parameters
        for d in builtin(name).spec_differences:
            if d.where.startswith("parameters."):
                ours = _without(ours, d.where)
        # serialized, so that key order counts as it does on the wire
        assert json.dumps(_undescribed(ours)) == json.dumps(snapshot[name]), name


def test_the_cireil_only_built_ins_are_the_ones_the_original_root_files_leave_out():
    declared = {n for n in BUILTIN_NAMES if any(d.where == "tool" for d in builtin(n).spec_differences)}
    assert declared == set(CIREIL_ONLY_TOOLS)
