"""A tool says how the engine treats it (issue 12 item 1): what it does to files, whether it ends the turn,
whether the breaker may disable it. A new built-in is its module plus its name in the registry: every surface
(magic, form, CLI, engine, view) then works with no other change."""

from __future__ import annotations

import copy
import json
import math
from contextlib import contextmanager
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

import cireil
import cireil.runtime.tools
from cireil.cli import main
from cireil.kernel.forms.toolform import tool_form
from cireil.render import RESULT_MIME, result_bundle
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.base.params import Params, String
from cireil.runtime.engine.history import estimate_tokens, shape_history
from cireil.runtime.toolkit import registry
from cireil.runtime.toolkit.tool import Tool
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import TURN_TOOLS, turn_agent

PEEK = '''\
"""peek: the first line of a workspace file (a built-in made up by tests/runtime/toolkit/test_tool_declarations.py)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Params, String
from ..files.textfile import read_text
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    try:
        text = read_text(ctx.paths.resolve(args["path"]), tool="peek")
    except ToolError:
        raise ToolError(f"no file {args['path']}", hint="list the folder first") from None
    first = text.split("\\n", 1)[0]
    return {"path": args["path"], "first_line": first, "success": True}


TOOL = Tool(
    name="peek",
    path_effect="reads",
    description="The first line of a file.",
    params=Params(path=String(min_length=1, description="the file")),
    run=run,
    main_arg="path",
)
'''


@pytest.fixture
def peek(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """`peek` added as the registry says a built-in is added: its module, and its name in BUILTIN_NAMES."""
    package = tmp_path / "more_tools"
    package.mkdir()
    (package / "peek.py").write_text(PEEK)
    monkeypatch.setattr(cireil.runtime.tools, "__path__", [*cireil.runtime.tools.__path__, str(package)])
    monkeypatch.setattr(registry, "BUILTIN_NAMES", (*registry.BUILTIN_NAMES, "peek"))
    yield "peek"
    registry.builtin.cache_clear()  # the made-up tool must not outlive the test
    import sys

    sys.modules.pop("cireil.runtime.tools.peek", None)


@contextmanager
def loaded(path: Path, **options):
    agent = cireil.load(path, **options)
    try:
        yield agent
    finally:
        agent.close()


@pytest.fixture
def peek_agent(tmp_path: Path, llm: ScriptedLLM, peek: str) -> Path:
    return turn_agent(tmp_path / "agents", llm.base_url, tools=TURN_TOOLS + "peek = true\n")


def test_a_new_builtin_is_offered_to_the_model_and_runs_in_a_turn(peek_agent, llm):
    agent = cireil.load(peek_agent)
    try:
        assert "peek" in [t.name for t in agent.tools]
        llm.script(
            reply.tool_calls(("peek", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("respond", {"content": "It is about notes."})),
        )
        outcome = agent.turn("what is in notes.md?")
        assert outcome.ended == "respond" and outcome.steps == 2
        offered = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
        assert "peek" in offered
        (peeked,) = [m for m in llm.requests[1].body["messages"] if m["role"] == "tool"]
        assert json.loads(peeked["content"])["first_line"] == "# Notes"
    finally:
        agent.close()


def test_a_new_builtin_without_a_view_is_shown_by_the_generic_view(peek_agent):
    with loaded(peek_agent) as agent:
        result = agent.call("peek", path="/workspace/notes.md")
        assert result.success
        bundle = result_bundle(result)
        assert '"first_line": "# Notes"' in bundle["text/plain"]
        assert "# Notes" in bundle["text/html"] and bundle[RESULT_MIME] == result.data
        failed = agent.call("peek", path="/workspace/none.md")
        assert "no file /workspace/none.md" in result_bundle(failed)["text/plain"]


def test_a_new_builtin_gets_its_form(peek_agent):
    with loaded(peek_agent) as agent:
        form = tool_form(agent, "peek")
        assert "The first line of a file." in form.children[0].value
        form.fields["path"].control.value = "/workspace/notes.md"
        form.run_button.click()
        assert form.wait(10)
        assert form.last_call.result(0).data["first_line"] == "# Notes"
        (shown,) = form.output.outputs
        assert "# Notes" in shown["data"]["text/plain"]


def test_a_new_builtin_is_a_cli_command(peek_agent, capsys):
    assert main(["call", str(peek_agent), "peek", '{"path": "/workspace/notes.md"}']) == 0
    assert json.loads(capsys.readouterr().out)["first_line"] == "# Notes"


def test_a_new_builtin_is_a_magic(peek_agent):
    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    try:
        with capture_output() as captured:
            for line in ("%load_ext cireil", f"%cireil load {peek_agent}", "%cireil_peek /workspace/notes.md"):
                ran = shell.run_cell(line)
                assert ran.error_in_exec is None and ran.error_before_exec is None, captured.stderr
        assert ran.result.data["first_line"] == "# Notes"
        shown, _ = shell.display_formatter.format(ran.result)  # what the cell's Out shows
        assert '"first_line": "# Notes"' in shown["text/plain"] and RESULT_MIME in shown
    finally:
        shell.extension_manager.unload_extension("cireil")
        RUNTIME.stop()
        InteractiveShell.clear_instance()


def _peeks_then_write() -> list[dict]:
    def call(cid: str, name: str) -> dict:
        return {"type": "toolCall", "id": cid, "name": name, "input": {"path": "/workspace/a.txt"}}

    def result(mid: str, cid: str, name: str, output: dict) -> dict:
        return {"id": mid, "role": "toolResponse", "toolCallId": cid, "name": name, "output": output}

    return [
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "peek"}]},
        {"id": "a1", "role": "assistant", "content": [call("c1", "peek")]},
        result("r1", "c1", "peek", {"first_line": "x" * 3000, "path": "/workspace/a.txt", "success": True}),
        {"id": "a2", "role": "assistant", "content": [call("c2", "write")]},
        result("r2", "c2", "write", {"path": "/workspace/a.txt", "success": True}),
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]


def test_a_new_builtin_that_reads_has_its_stale_reads_superseded(peek):
    history = _peeks_then_write()
    stored = copy.deepcopy(history)
    total = estimate_tokens(history)
    shaped = shape_history(history, context_window=math.ceil(total / 0.85) - 1)
    assert shaped.superseded_stale == 1
    assert shaped.messages[2]["output"] == {"reason": "stale", "superseded": True, "tool": "peek"}
    assert history == stored


def test_path_effects_come_from_the_tools_built_in_or_not():
    mine = Tool(name="grab", description="d", params=Params(path=String()), run=None, path_effect="reads")
    effects = registry.path_effects([mine])
    assert effects["grab"] == "reads" and effects["read"] == "reads"
    assert effects["write"] == effects["edit"] == "changes"
    assert effects["str-replace"] == "changes"  # a 1.x session's results, though the tool is gone
    assert "list-dir" not in effects and "respond" not in effects


# -- ending the turn and the breaker: asked of every tool, not of a list of built-in names -----------------


async def _finish(args: dict, ctx) -> dict:
    if args["note"] == "fail":
        return {"error": "refused", "success": False}
    return {"noted": args["note"], "success": True}


def _finish_tool(**declared) -> Tool:
    return Tool(
        name="finish",
        description="Record a note and end the turn.",
        params=Params(note=String()),
        run=_finish,
        **declared,
    )


def test_a_python_tool_that_declares_it_ends_the_turn_ends_it(tmp_path, llm):
    path = turn_agent(tmp_path, llm.base_url, tools=TURN_TOOLS + "finish = true\n")
    with loaded(path, tools=[_finish_tool(ends_turn="success", breakable=False)]) as agent:
        llm.script(
            *[reply.tool_calls(("finish", {"note": "fail"})) for _ in range(4)],
            reply.tool_calls(("finish", {"note": "done"})),
        )
        outcome = agent.turn("go")
        assert outcome.ended == "finish" and outcome.steps == 5  # never disabled by the breaker
        assert not any(
            "disabled" in m["content"][0]["text"]
            for m in llm.requests[-1].body["messages"][1:-1]
            if m["role"] == "user" and isinstance(m["content"], list)
        )


def test_a_python_tool_that_declares_nothing_neither_ends_the_turn_nor_escapes_the_breaker(tmp_path, llm):
    path = turn_agent(tmp_path, llm.base_url, tools=TURN_TOOLS + "finish = true\n")
    with loaded(path, tools=[_finish_tool()]) as agent:
        llm.script(
            reply.tool_calls(("finish", {"note": "done"})),
            *[reply.tool_calls(("finish", {"note": "fail"})) for _ in range(3)],
            reply.tool_calls(("finish", {"note": "done"})),
            reply.tool_calls(("respond", {"content": "ok"})),
        )
        events: list[dict] = []
        outcome = agent.turn("go", on_event=events.append)
        assert outcome.ended == "respond" and outcome.steps == 6
        notices = [e["text"] for e in events if e["type"] == "notice"]
        assert any("`finish` failed 3 times in a row and has been disabled" in n for n in notices)
        last = [e for e in events if e["type"] == "result"][-2]["result"]
        assert last.data["error"] == "Tool 'finish' is disabled for the rest of this turn after repeated failures."


def test_a_plugin_replacing_a_builtin_keeps_the_declarations_it_does_not_make():
    plain = Tool(name="respond", description="d", params=Params(), run=None)
    replaced = registry.overriding(plain)
    assert (replaced.ends_turn, replaced.breakable) == ("success", False)
    assert registry.overriding(Tool(name="read", description="d", params=Params(), run=None)).path_effect == "reads"


def test_a_misspelt_declaration_is_refused_when_the_tool_is_made():
    with pytest.raises(ValueError, match="tool 'x': ends_turn must be one of '', 'success', 'always', not 'sucess'"):
        Tool(name="x", description="d", params=Params(), run=None, ends_turn="sucess")
    with pytest.raises(ValueError, match="path_effect must be one of '', 'reads', 'changes', not 'writes'"):
        Tool(name="x", description="d", params=Params(), run=None, path_effect="writes")


# -- the grant check: asked of every tool too ------------------------------------------------------------


def test_a_grant_never_withholds_a_tool_declared_always_granted(tmp_path, llm):
    path = turn_agent(tmp_path, llm.base_url, tools=TURN_TOOLS + "finish = true\n")
    with loaded(path, tools=[_finish_tool(ends_turn="success", always_granted=True)]) as agent:
        agent.grant(["read"])
        offered = list(agent.offered_tools(agent.session))
        assert "finish" in offered and "respond" in offered and "no-response" in offered
        assert agent.call("finish", note="done").success
    with loaded(path, tools=[_finish_tool(ends_turn="success")]) as agent:
        agent.grant(["read"])
        assert "finish" not in agent.offered_tools(agent.session) and "respond" in agent.offered_tools(agent.session)
        assert "is not granted to session" in agent.call("finish", note="done")["error"]


def test_a_plugin_replacing_respond_stays_always_granted():
    plain = Tool(name="respond", description="d", params=Params(), run=None)
    assert registry.overriding(plain).always_granted
    assert not registry.overriding(Tool(name="read", description="d", params=Params(), run=None)).always_granted


HALT = """\
from ..base.params import Params
from ..toolkit.tool import Tool


async def run(args, ctx):
    return {"final": True}


TOOL = Tool(name="halt", ends_turn="always", description="Stop.", params=Params(), run=run)
"""


def test_a_new_builtin_that_ends_the_turn_is_an_ending_eval_scenarios_may_name(tmp_path, monkeypatch):
    from cireil.runtime.evals.matchers import CallSpec, check_calls
    from cireil.runtime.evals.scenario import read_scenario

    package = tmp_path / "more_tools"
    package.mkdir()
    (package / "halt.py").write_text(HALT)
    monkeypatch.setattr(cireil.runtime.tools, "__path__", [*cireil.runtime.tools.__path__, str(package)])
    monkeypatch.setattr(registry, "BUILTIN_NAMES", (*registry.BUILTIN_NAMES, "halt"))
    try:
        scenario = tmp_path / "s.toml"
        scenario.write_text('message = "hi"\n[answer]\nended = "halt"\n')
        found, issues = read_scenario(scenario)
        assert issues == [] and found.ended == "halt"
        calls = [{"name": "read", "input": {}}, {"name": "halt", "input": {}}]
        assert check_calls(calls, [CallSpec("read")], "strict", []).passed  # plumbing, as respond is
    finally:
        registry.builtin.cache_clear()
        import sys

        sys.modules.pop("cireil.runtime.tools.halt", None)
