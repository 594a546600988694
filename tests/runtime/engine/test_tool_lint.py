"""Tool definition lint and prompt cost, for built-in, Python/plugin and MCP tools (real loopback servers)."""

from __future__ import annotations

import json
import subprocess
import sys

import cireil
from cireil.runtime.base.params import RawObject
from cireil.runtime.config.engine_config import ModelConfig, ProviderConfig
from cireil.runtime.engine.history import estimate_system
from cireil.runtime.engine.openai import ModelRequest, build_request_body
from cireil.runtime.engine.toolcost import definition_tokens, tool_costs
from cireil.runtime.engine.toollint import lint_tools
from cireil.runtime.scaffold import copy_demo
from cireil.runtime.toolkit.tool import Tool
from conftest import make_agent
from mcp_peers.launch import mcp_toml
from mcp_peers.rogue import HUGE_DESCRIPTION

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK and rogue servers


async def _noop(args: dict, ctx) -> dict:
    return {}


def raw(name: str, schema, description: str = "Does one clear thing for the test.") -> Tool:
    return Tool(name=name, description=description, params=RawObject(raw=schema), run=_noop, origin="python")


def findings(tool: Tool) -> list[tuple[str, str]]:
    return [(f.severity, f.where) for f in lint_tools([tool])]


def test_what_provider_apis_reject_is_an_error_finding():
    assert ("error", "parameters.type") in findings(raw("arr", {"type": "array", "items": {"type": "string"}}))
    top = lint_tools([raw("alt", {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})])
    assert any(f.severity == "error" and "anyOf at the top level" in f.message for f in top)
    named = lint_tools([raw("has.dot", {"type": "object", "properties": {}})])
    assert named[0].severity == "error" and named[0].where == "name" and "^[a-zA-Z0-9_-]{1,64}$" in named[0].fix
    long = lint_tools([raw("long", {"type": "object", "properties": {}}, "x" * 1500)])
    assert [f.message for f in long if f.where == "description"] == [
        "1,500 characters: OpenAI rejects function descriptions over 1,024"
    ]


def test_what_models_misread_is_a_warning_and_every_finding_has_a_fix():
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "integer", "enum": ["fast", "slow"], "description": "How."},
            "free": {},
            "nested": {"type": "object", "properties": {"deep": {"type": "strnig"}}, "required": ["gone"]},
        },
        "required": ["mode", "missing"],
    }
    found = lint_tools([raw("sloppy", schema, description="")])
    by_where = {(f.severity, f.where): f for f in found}
    assert "no description" in by_where["warning", "description"].message
    assert "'missing'" in by_where["warning", "parameters.required"].message
    assert "'gone'" in by_where["warning", "parameters.properties.nested.required"].message
    assert "'free'" in by_where["warning", "parameters.properties"].message
    assert "are not of the declared type integer" in by_where["warning", "parameters.properties.mode.enum"].message
    assert "unknown type 'strnig'" in by_where["warning", "parameters.properties.nested.properties.deep.type"].message
    assert "no description for 'free', 'nested', 'nested.deep'" in by_where["info", "parameters.properties"].message
    assert all(f.fix and "\n" not in f.fix for f in found)
    assert [f.severity for f in found] == sorted((f.severity for f in found), key=["error", "warning", "info"].index)


def test_strict_mode_collisions_and_hostile_schemas():
    strict = lint_tools([raw("s", {"type": "object", "properties": {"a": {"type": "string", "description": "A."}}})])
    assert [f.message for f in strict if f.severity == "info"] == [
        "OpenAI strict mode would reject this schema: parameters is not closed; parameters has optional 'a'"
    ]
    closed = {"type": "object", "properties": {"a": {"type": "string", "description": "A."}}, "required": ["a"]}
    assert lint_tools([raw("c", closed | {"additionalProperties": False})]) == []
    twins = lint_tools([raw("my-tool", closed), raw("my_tool", closed), raw("My_Tool", closed)])
    collisions = [f for f in twins if f.where == "name"]
    assert [f.tool for f in collisions] == ["my_tool", "My_Tool"] and "%cireil_my_tool" in collisions[0].message
    deep: dict = {"type": "object", "properties": {}}
    node = deep
    for _ in range(400):  # deeper than any real schema: the walk stops at its bound, nothing recurses
        child = {"type": "object", "properties": {}}
        node["properties"]["x"] = child
        node = child
    deep_findings = lint_tools([raw("deep", deep)])
    assert any("nested deeper than 10" in f.message for f in deep_findings) and len(deep_findings) <= 26
    wide = {"type": "object", "properties": {f"p{i}": {"enum": list(range(50))} for i in range(5000)}}
    assert lint_tools([raw("wide", wide)])  # done in bounded time, findings aggregated per object


def test_built_in_tools_lint_clean_of_errors_and_warnings_but_the_originals_long_descriptions(tmp_path):
    agent = cireil.load(copy_demo())
    try:
        serious = [f for f in agent.lint() if f.severity in ("error", "warning")]
        # edit's and exec's descriptions are the original CireilClaw's text, longer than OpenAI's own API takes:
        # kept as the original sends them (issue 28), and the fix says so instead of "shorten it"
        assert [(f.tool, f.severity, f.where) for f in serious] == [
            ("edit", "error", "description"),
            ("exec", "error", "description"),
        ]
        assert all("the original CireilClaw's own text" in f.fix for f in serious)
    finally:
        agent.close()


def test_the_cost_is_priced_from_the_exact_request_json(tmp_path):
    agent = cireil.load(copy_demo())
    try:
        tools = agent.tools
        request = ModelRequest(
            system="s",
            messages=[],
            tools=[{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools],
            session_id="x",
            model="m",
        )
        body = build_request_body(
            ProviderConfig("p", api_base="http://127.0.0.1:1/v1"), ModelConfig(), request, stream=False
        )
        sent = json.dumps(body, ensure_ascii=False)
        for tool, entry in zip(tools, body["tools"], strict=True):
            text = json.dumps(entry, ensure_ascii=False)
            assert text in sent  # the very JSON in the body
            assert definition_tokens(tool) == estimate_system(text) == -(-len(text) // 3)
        costs = tool_costs(tools)
        assert list(costs) == [t.name for t in tools] and all(c > 20 for c in costs.values())
    finally:
        agent.close()


# -- MCP tools, dry-run, the CLI and the magics ---------------------------------------------------
def mcp_agent(tmp_path, rogue, sdk_sse):
    tools = "list-dir = true\nmcp__odd__sloppy = true\nmcp__odd__huge = true\nmcp__odd__forecast = true\n"
    agent_dir = make_agent(tmp_path, tools + "mcp__demo__add = true\n")
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"odd": rogue.url("/inspect"), "demo": sdk_sse}))
    return agent_dir


def test_dry_run_lints_mcp_tools_and_stays_valid(tmp_path, rogue, sdk_sse):
    agent_dir = mcp_agent(tmp_path, rogue, sdk_sse)
    report = cireil.dry_run(agent_dir)
    assert report.ok, report.errors
    lint = {(f.tool, f.severity, f.where): f for f in report.lint}
    assert ("mcp__odd__sloppy", "warning", "parameters.properties.mode.enum") in lint
    assert ("mcp__odd__sloppy", "warning", "parameters.required") in lint
    huge = lint["mcp__odd__huge", "error", "description"]
    assert int(huge.message.split()[0].replace(",", "")) >= len(HUGE_DESCRIPTION.strip())  # + server instructions
    assert "tokens in every model request" in lint["mcp__odd__huge", "info", "definition"].message
    assert not [f for f in report.lint if f.tool == "mcp__odd__forecast" and f.severity != "info"]
    assert report.as_dict()["lint"][0]["fix"]

    cli = subprocess.run(
        [sys.executable, "-m", "cireil", "dry-run", str(agent_dir)], capture_output=True, text=True, timeout=120
    )
    assert cli.returncode == 0, cli.stderr
    assert "tool definition lint (" in cli.stdout and "the agent is still valid" in cli.stdout
    assert "mcp__odd__sloppy: warning: parameters.properties.mode.enum" in cli.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "cireil", "dry-run", str(agent_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["lint"]


def test_tools_magic_shows_costs_and_lint(tmp_path, kernel, rogue, sdk_sse):
    agent_dir = mcp_agent(tmp_path, rogue, sdk_sse)
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    table = kernel.run("%cireil tools").bundles[-1]
    assert "tokens of tool definitions in every model request" in table["text/plain"]
    agent = cireil.load(agent_dir)
    try:
        costs = tool_costs(agent.tools)
    finally:
        agent.close()
    assert f"total: {sum(costs.values()):,} tokens" in table["text/plain"]
    assert f"{costs['mcp__odd__huge']:,}" in table["text/html"] and "<th" in table["text/html"]
    linted = kernel.run("%cireil tools --lint").bundles
    assert "tool definition lint:" in linted[-1]["text/plain"] and "cireil-lint-table" in linted[-1]["text/html"]
    dry = kernel.run("%cireil dry-run").bundles[-1]
    assert "valid: tools enabled" in dry["text/plain"] and "mcp__odd__sloppy" in dry["text/plain"]
    assert "cireil-lint" in dry["text/html"]
    bad = kernel.run("%cireil tools --lnt", ok=False)
    assert bad.stderr.startswith("UsageError: ")


# -- built-ins only when asked (issue 34) ------------------------------------------------------------
def test_findings_about_built_ins_are_split_off_and_a_collision_is_the_other_tools(tmp_path):
    from cireil.runtime.engine.toollint import split_builtin

    agent = cireil.load(copy_demo())
    try:
        builtins = agent.tools
    finally:
        agent.close()
    mine = raw("my_thing", {"type": "object"}, description="")  # no description: a warning about my own tool
    twin = raw("List_Dir", {"type": "object", "properties": {}, "additionalProperties": False})
    found = lint_tools([*builtins, mine, twin])
    own, builtin = split_builtin(found, [*builtins, mine, twin])
    assert builtin and {f.tool for f in builtin} <= {t.name for t in builtins}
    assert ("edit", "error", "description") in [(f.tool, f.severity, f.where) for f in builtin]
    assert {f.tool for f in own} == {"my_thing", "List_Dir"}
    # the collision with the built-in list-dir is reported on the tool the user can rename, whatever the order
    for order in ([*builtins, twin], [twin, *builtins]):
        collision = [f for f in lint_tools(order) if "collide" in f.message]
        assert [f.tool for f in collision] == ["List_Dir"]


def test_dry_run_of_the_demo_shows_no_built_in_lint_unless_asked(tmp_path):
    demo = copy_demo()

    def dry(*extra: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "cireil", "dry-run", str(demo), *extra], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    quiet = dry()
    assert "tool definition lint (" not in quiet and "edit: error" not in quiet
    assert "tool definition lint: nothing to report about the agent's own, plugin and MCP tools" in quiet
    assert "lint findings about cireil's built-in tools not shown" in quiet and "--builtins shows them" in quiet
    loud = dry("--builtins")
    assert "edit: error: description:" in loud and "not shown" not in loud
    assert json.loads(dry("--json"))["lint"]  # the JSON report stays complete


def test_dry_run_and_tools_magics_hide_built_in_lint_unless_asked(shell):
    from magicshell import run

    run(shell, "%load_ext cireil")
    run(shell, "%cireil load --demo")
    quiet = run(shell, "%cireil dry-run")
    assert "edit " not in quiet.text.split("tool definition lint", 1)[1]
    assert "about cireil's built-in tools not shown" in quiet.text
    html = quiet.displayed[-1]["text/html"]
    assert "cireil-lint-hidden" in html and "cireil-lint-table" not in html
    loud = run(shell, "%cireil dry-run --builtins")
    assert "error   edit  description:" in loud.text and "not shown" not in loud.text
    assert "cireil-lint-table" in loud.displayed[-1]["text/html"]
    linted = run(shell, "%cireil tools --lint")
    assert "about cireil's built-in tools not shown" in linted.text
    assert "error   edit" in run(shell, "%cireil tools --lint --builtins").text
