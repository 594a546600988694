"""The extension in an in-process IPython shell: every magic, every subcommand, argument parsing."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from IPython.core.error import UsageError

from cireil.kernel import extension
from cireil.kernel.magics.toolargs import decode_value, parse_args, string_params, tokenize
from cireil.render import result_bundle
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.toolkit.result import ToolResult
from conftest import MINIMAL_TOOLS, make_agent
from magicshell import loaded, run, usage_error

# -- helpers ------------------------------------------------------------------------------------


def line_magics(shell) -> dict:
    return shell.magics_manager.magics["line"]


def cell_magics(shell) -> dict:
    return shell.magics_manager.magics["cell"]


def set_tools(agent: Path, text: str) -> None:
    (agent / "config" / "tools.toml").write_text(text)


# -- argument parsing ---------------------------------------------------------------------------


def test_json_object_is_taken_as_is():
    assert parse_args(' {"path": "/workspace/a.txt", "content": "hi"} ', main_arg="path") == {
        "path": "/workspace/a.txt",
        "content": "hi",
    }


def test_key_value_values_are_json_when_they_read_as_json():
    args = parse_args('n=3 flag=true tags=["a","b"] path=/workspace s="3" none=null obj={"k":1}')
    assert args == {
        "n": 3,
        "flag": True,
        "tags": ["a", "b"],
        "path": "/workspace",
        "s": "3",
        "none": None,
        "obj": {"k": 1},
    }


def test_quoted_values_are_unquoted_like_a_shell():
    args = parse_args("""a='hello world' b="two words" c=it\\'s d='["x", "y"]' e= f=''""")
    assert args == {"a": "hello world", "b": "two words", "c": "it's", "d": ["x", "y"], "e": "", "f": ""}


def test_plain_string_parameters_keep_their_text():
    args = parse_args('content=42 other=42 c2="a\\nb" c3=true', strings={"content", "c2", "c3"})
    assert args == {"content": "42", "other": 42, "c2": "a\nb", "c3": "true"}


def test_bare_word_fills_the_main_argument_and_combines_with_pairs():
    assert parse_args("/workspace", main_arg="path") == {"path": "/workspace"}
    assert parse_args("/workspace/a.txt content=hi", main_arg="path") == {"path": "/workspace/a.txt", "content": "hi"}
    assert parse_args("'/workspace/my dir'", main_arg="path") == {"path": "/workspace/my dir"}
    # `=` inside a path is not a key=value pair
    assert parse_args("/workspace/a=b", main_arg="path") == {"path": "/workspace/a=b"}
    assert parse_args("", main_arg="path") == {}


def test_dollar_and_braces_reach_the_tool():
    assert parse_args("$HOME content={x}", main_arg="path") == {"path": "$HOME", "content": "{x}"}


@pytest.mark.parametrize(
    ("line", "main_arg", "fragment"),
    [
        ("path='/workspace", "path", "unbalanced quotes"),
        ('content="hi', "path", "unbalanced quotes"),
        ("a b", "path", "two bare arguments ('a' and 'b')"),
        ("/workspace", None, "takes no bare argument"),
        ("n=1 n=2", None, "'n' is given twice"),
        ("/workspace path=/tasks", "path", "'path' is given twice"),
        ('{"path": }', "path", "invalid JSON object"),
        ('{"path": "/workspace"} extra', "path", "invalid JSON object"),
        ("a\\", "path", "lone backslash"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(line, main_arg, fragment):
    with pytest.raises(UsageError) as info:
        parse_args(line, main_arg=main_arg)
    assert type(info.value) is UsageError
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_string_params_reads_the_schema():
    schema = {"properties": {"path": {"type": "string"}, "n": {"type": "integer"}, "x": {"anyOf": []}}}
    assert string_params(schema) == {"path"}


def test_decode_value_of_a_bare_word():
    (word,) = tokenize('"quoted"')
    assert decode_value(word) == "quoted"


@given(st.text(alphabet=st.sampled_from(list("ab =\"'\\$[]{},:1 \t")), max_size=24))
def test_tokenize_splits_like_shlex(line):
    try:
        expected = shlex.split(line)
    except ValueError:
        with pytest.raises(UsageError):
            tokenize(line)
        return
    assert [t.text for t in tokenize(line)] == expected


# -- loading and the tool magics ------------------------------------------------------------------


def test_load_registers_one_magic_per_enabled_tool(shell, agent_dir):
    ran = loaded(shell, agent_dir)
    assert "loaded agent 'testagent'" in ran.stdout
    assert "%cireil_list_dir" in ran.stdout and "%%cireil_write" in ran.stdout
    for name in ("cireil", "cireil_list_dir", "cireil_write", "cireil_session_info"):
        assert name in line_magics(shell)
    assert "cireil_write" in cell_magics(shell)  # write has a body
    assert "cireil_list_dir" not in cell_magics(shell)
    assert "cireil_read" not in line_magics(shell)  # read = false
    fn = line_magics(shell)["cireil_list_dir"]
    assert fn._ipython_magic_no_var_expand is True
    assert "Parameters:" in fn.__doc__ and "path (string, required)" in fn.__doc__


def test_tool_magic_returns_the_result_with_its_bundle(shell, agent_dir):
    loaded(shell, agent_dir)
    run(shell, "r = %cireil_list_dir /workspace")
    result = shell.user_ns["r"]
    assert isinstance(result, ToolResult)
    assert result.success
    assert {e["name"] for e in result["entries"]} == {"hello.txt", "docs"}
    bundle = result_bundle(result)
    assert {"text/plain", "text/html", "application/vnd.cireil.result+json"} <= set(bundle)
    shown = run(shell, "%cireil_list_dir /workspace")
    assert isinstance(shown.value, ToolResult)
    assert "hello.txt" in shown.stdout  # the display hook rendered it


def test_three_argument_forms_of_write(shell, agent_dir):
    loaded(shell, agent_dir)
    run(shell, '%cireil_write {"path": "/workspace/a.txt", "content": "from json"}')
    run(shell, '%cireil_write path=/workspace/b.txt content="two words"')
    run(shell, "%cireil_write /workspace/c.txt content=42")
    ws = agent_dir / "workspace"
    assert (ws / "a.txt").read_text() == "from json"
    assert (ws / "b.txt").read_text() == "two words"
    assert (ws / "c.txt").read_text() == "42"


def test_no_variable_expansion_in_tool_magics(shell, agent_dir):
    loaded(shell, agent_dir)
    shell.user_ns.update(name="expanded", x="expanded")
    run(shell, "%cireil_write /workspace/$name.txt content={x}")
    assert (agent_dir / "workspace" / "$name.txt").read_text() == "{x}"


def test_cell_form_fills_the_body_verbatim(shell, agent_dir):
    loaded(shell, agent_dir)
    shell.user_ns["x"] = "expanded"
    body = "line one $x\n  {x} 'quoted' \"double\"\n"
    ran = run(shell, f"%%cireil_write /workspace/notes.md\n{body}")
    assert ran.value.success
    assert (agent_dir / "workspace" / "notes.md").read_text() == body


def test_body_given_twice_is_a_usage_error(shell, agent_dir):
    loaded(shell, agent_dir)
    message = usage_error(shell, "%%cireil_write /workspace/a.txt content=x\nbody\n")
    assert "content is given twice" in message


def test_bad_arguments_in_a_magic_are_one_line(shell, agent_dir):
    loaded(shell, agent_dir)
    assert "two bare arguments" in usage_error(shell, "%cireil_list_dir /workspace /tasks")
    assert "takes no bare argument" in usage_error(shell, "%cireil_session_info now")
    assert "unbalanced quotes" in usage_error(shell, "%cireil_list_dir '/workspace")
    assert "given twice" in usage_error(shell, "%cireil_list_dir path=/a path=/b")
    assert "invalid JSON object" in usage_error(shell, '%cireil_write {"path": ')


def test_wrong_parameters_stop_the_call_before_the_tool_runs(shell, agent_dir):
    loaded(shell, agent_dir)
    message = usage_error(shell, "%cireil_write /workspace/a.txt")  # content is missing
    assert "%cireil_write was not called" in message
    assert not (agent_dir / "workspace" / "a.txt").exists()
    assert "was not called" in usage_error(shell, "%cireil_list_dir path=3 nonsense=1")


# -- following tools.toml ------------------------------------------------------------------------


def test_magics_follow_tools_toml(shell, agent_dir):
    loaded(shell, agent_dir)
    set_tools(agent_dir, "list-dir = true\nwrite = false\n")
    run(shell, "pass")  # the pre_run_cell hook re-syncs
    assert "cireil_write" not in line_magics(shell) and "cireil_write" not in cell_magics(shell)
    assert "cireil_session_info" not in line_magics(shell)
    assert "cireil_list_dir" in line_magics(shell)
    set_tools(agent_dir, "list-dir = true\nwrite = true\nsession-info = true\n")
    run(shell, "pass")
    assert "cireil_write" in cell_magics(shell)
    ran = run(shell, "%cireil_session_info")
    assert ran.value.success


def test_a_tool_disabled_within_the_cell_is_a_usage_error(shell, agent_dir):
    loaded(shell, agent_dir)
    tools = agent_dir / "config" / "tools.toml"
    message = usage_error(shell, f"open({str(tools)!r}, 'w').write('list-dir = true\\n')\n%cireil_session_info")
    assert "tool 'session-info' is not enabled in config/tools.toml" in message
    assert "cireil_session_info" not in line_magics(shell)  # the call re-synced the magics


def test_broken_tools_toml_fails_the_next_call_and_a_fix_recovers(shell, agent_dir):
    loaded(shell, agent_dir)
    set_tools(agent_dir, MINIMAL_TOOLS + "reed = true\n")
    message = usage_error(shell, "%cireil_list_dir /workspace")
    assert "config/tools.toml:7:" in message and "reed" in message
    assert "cireil_list_dir" in line_magics(shell)  # the magics stay while the file is broken
    assert "config/tools.toml:7:" in usage_error(shell, "%cireil tools")
    set_tools(agent_dir, MINIMAL_TOOLS)
    ran = run(shell, "%cireil_list_dir /workspace")
    assert ran.value.success


def test_an_existing_magic_is_never_replaced(shell, agent_dir):
    def mine(line):
        return "mine"

    shell.register_magic_function(mine, "line", "cireil_list_dir")
    ran = loaded(shell, agent_dir)
    assert "%cireil_list_dir already exists" in ran.stderr
    assert "list-dir (no magic)" in ran.stdout
    assert run(shell, "%cireil_list_dir /workspace").value == "mine"
    assert "cireil_write" in line_magics(shell)  # the other tools still get theirs
    table = run(shell, "%cireil tools").displayed[0]["text/plain"]
    assert "(not registered: %cireil_list_dir exists)" in table
    quiet = run(shell, "%cireil restart")
    assert "already exists" not in quiet.stderr  # said once, not at every sync
    run(shell, "%unload_ext cireil")
    assert run(shell, "%cireil_list_dir /workspace").value == "mine"


def test_loading_another_agent_resyncs(shell, agent_dir, tmp_path):
    loaded(shell, agent_dir)
    other = make_agent(tmp_path / "second", "list-dir = true\n", name="other")
    ran = run(shell, f"%cireil load {other}")
    assert "agent 'other'" in ran.stdout
    assert "cireil_list_dir" in line_magics(shell)
    assert "cireil_write" not in line_magics(shell)
    assert extension.current_agent(shell).slug == "other"


def test_python_tools_with_tools_option(shell, tmp_path):
    agent = make_agent(tmp_path, MINIMAL_TOOLS + "shout = true\n")
    run(
        shell,
        "import cireil\n"
        "from cireil.params import Params, String\n"
        "async def _shout(args, ctx):\n"
        "    return {'text': args['text'].upper(), 'success': True}\n"
        "my_tools = [cireil.Tool('shout', 'Say it louder.', Params(text=String()), _shout, main_arg='text')]\n",
    )
    loaded(shell, agent, " --tools my_tools")
    ran = run(shell, "%cireil_shout 'hello there'")
    assert ran.value["text"] == "HELLO THERE"
    table = run(shell, "%cireil tools").displayed[0]["text/plain"]
    assert "shout" in table and "python" in table
    assert "no variable 'nothing'" in usage_error(shell, f"%cireil load {agent} --tools nothing")
    shell.user_ns["not_tools"] = [1, 2]
    assert "must be a cireil.Tool" in usage_error(shell, f"%cireil load {agent} --tools not_tools")
    assert "--tools needs a value" in usage_error(shell, f"%cireil load {agent} --tools")


def test_load_demo(shell):
    run(shell, "%load_ext cireil")
    ran = run(shell, "%cireil load --demo")
    assert "loaded agent" in ran.stdout
    assert "cireil_list_dir" in line_magics(shell)
    assert run(shell, "%cireil_list_dir /workspace").value.success


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("load", "usage: %cireil load DIR"),
        ("load --demo somewhere", "usage: %cireil load DIR"),
        ("load a b", "unexpected argument 'b'"),
        ("load --fast x", "unknown option '--fast'"),
        ("load /no/such/dir", "agent directory does not exist"),
        ("tols", "unknown subcommand 'tols' (did you mean 'tools'?)"),
        ("context now", "unexpected argument 'now'"),
        ("prompt", "no agent is loaded"),
        ("promt", "unknown subcommand 'promt' (did you mean 'prompt'?)"),
        ("help me", "unknown subcommand 'me'"),
    ],
)
def test_subcommand_usage_errors(shell, line, fragment):
    run(shell, "%load_ext cireil")
    message = usage_error(shell, f"%cireil {line}")
    assert fragment in message
    assert "\n" not in message


def test_load_of_a_broken_agent_names_file_and_line(shell, tmp_path):
    agent = make_agent(tmp_path, MINIMAL_TOOLS + "reed = true\n")
    run(shell, "%load_ext cireil")
    message = usage_error(shell, f"%cireil load {agent}")
    assert "config/tools.toml:7: unknown tool 'reed'" in message
    assert extension.current_agent(shell) is None


def test_subcommands_need_an_agent(shell):
    run(shell, "%load_ext cireil")
    for sub in ("tools", "restart", "session", "ui", "dry-run"):
        assert "no agent is loaded" in usage_error(shell, f"%cireil {sub}")


# -- subcommands ---------------------------------------------------------------------------------


def test_tools_table(shell, agent_dir):
    loaded(shell, agent_dir)
    (bundle,) = run(shell, "%cireil tools").displayed
    text = bundle["text/plain"]
    assert "3 enabled tools" in text
    assert "%cireil_list_dir PATH" in text and "%%cireil_write PATH" in text and "built-in" in text
    assert "<table" in bundle["text/html"] and "List the files and subdirectories" in bundle["text/html"]


def test_dry_run_lists_problems_as_file_line_message(shell, agent_dir, tmp_path):
    loaded(shell, agent_dir)
    (bundle,) = run(shell, "%cireil dry-run").displayed
    assert "valid: tools enabled: list-dir, write, session-info" in bundle["text/plain"]
    (agent_dir / "blocks" / "soul.md").unlink()
    set_tools(agent_dir, "list-dir = true\nreed = true\nwrite = 3\n")
    (bundle,) = run(shell, "%cireil dry-run").displayed  # a report, not an exception
    text = bundle["text/plain"]
    assert "config/tools.toml:2: unknown tool 'reed'" in text
    assert "config/tools.toml:3:" in text
    assert "blocks/soul.md: warning: missing" in text
    assert "invalid: " in text
    assert "✖" in bundle["text/html"]
    other = make_agent(tmp_path / "x", "list-dir = true\n", name="other")
    (bundle,) = run(shell, f"%cireil dry-run {other}").displayed
    assert "valid: tools enabled: list-dir" in bundle["text/plain"]


def test_restart_rereads_the_configuration(shell, agent_dir):
    loaded(shell, agent_dir)
    set_tools(agent_dir, "list-dir = true\n")
    ran = run(shell, "%cireil restart")
    assert "restarted agent 'testagent'" in ran.stdout
    assert "cireil_write" not in line_magics(shell)


def test_session_shows_id_and_platform(shell, agent_dir):
    loaded(shell, agent_dir)
    (bundle,) = run(shell, "%cireil session").displayed
    assert "notebook:main" in bundle["text/plain"] and "remote" in bundle["text/plain"]
    assert "notebook:main" in bundle["text/html"]
    (bundle,) = run(shell, "%cireil session other").displayed
    assert "session: notebook:other" in bundle["text/plain"]
    assert "usage: %cireil session [NAME]" in usage_error(shell, "%cireil session a b")


def test_help_lists_only_what_works(shell):
    run(shell, "%load_ext cireil")
    for line in ("%cireil help", "%cireil"):
        (bundle,) = run(shell, line).displayed
        text = bundle["text/plain"]
        for sub in (
            "load DIR",
            "load --demo",
            "tools",
            "dry-run",
            "restart",
            "ui [TOOL]",
            "context",
            "prompt",
            "session [NAME]",
            "sessions",
            "help",
        ):
            assert f"%cireil {sub}" in text
        assert "%%cireil_agent" in text


def test_ui_shows_forms(shell, agent_dir):
    loaded(shell, agent_dir)
    (palette,) = run(shell, "%cireil ui").displayed
    assert "application/vnd.jupyter.widget-view+json" in palette
    (form,) = run(shell, "%cireil ui list_dir").displayed
    assert "application/vnd.jupyter.widget-view+json" in form
    assert "did you mean 'write'" in usage_error(shell, "%cireil ui wirte")


# -- unloading -----------------------------------------------------------------------------------


def test_unload_removes_everything_and_stops_the_loop(shell, agent_dir):
    before_line, before_cell = set(line_magics(shell)), set(cell_magics(shell))
    before_hooks = list(shell.events.callbacks["pre_run_cell"])
    loaded(shell, agent_dir)
    run(shell, "%cireil_list_dir /workspace")
    assert RUNTIME.running
    agent = extension.current_agent(shell)
    run(shell, "%unload_ext cireil")
    assert set(line_magics(shell)) == before_line
    assert set(cell_magics(shell)) == before_cell
    assert not any(name.startswith("cireil") for name in dir(shell.magics_manager.user_magics))
    assert shell.events.callbacks["pre_run_cell"] == before_hooks
    assert agent.closed
    assert not RUNTIME.running
    assert not [t for t in threading.enumerate() if t.name == "cireil-runtime"]


def test_reload_ext_works(shell, agent_dir):
    loaded(shell, agent_dir)
    run(shell, "%reload_ext cireil")
    assert "cireil_list_dir" not in line_magics(shell)  # a fresh start: no agent yet
    assert "cireil" in line_magics(shell)
    run(shell, f"%cireil load {agent_dir}")
    assert run(shell, "%cireil_list_dir /workspace").value.success
    assert len(shell.events.callbacks["pre_run_cell"]) == len(set(map(id, shell.events.callbacks["pre_run_cell"])))


def test_load_ext_stays_light(tmp_path):
    """Loading the extension and the demo must not import widgets, the HTTP client or the imaging library, nor
    what only some agents need (conditions.toml's rules, engine.toml's parser, the original runtime's root checks,
    the schedulers, the outline pipeline, the converter of an earlier cireil's sessions)."""
    code = (
        "import sys, json\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "sh = InteractiveShell.instance()\n"
        "sh.run_line_magic('load_ext', 'cireil')\n"
        "sh.run_line_magic('cireil', 'load --demo')\n"
        "print(json.dumps([m for m in ('ipywidgets', 'httpx', 'PIL', 'pillow_heif',"
        " 'cireil.runtime.sessions.conditions', 'cireil.runtime.config.engine_config',"
        " 'cireil.runtime.original.runtime_root', 'cireil.runtime.jobs.config', 'cireil.runtime.outline.pipeline',"
        " 'cireil.runtime.sessions.oldcireil') if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_files_uploaded_with_attach_go_with_the_next_agent_message(shell, tmp_path):
    from datetime import datetime

    import cireil
    from cireil.kernel.magics import agent as agentmagics
    from cireil.testing.scripted_llm import ScriptedLLM, reply
    from turnkit import turn_agent

    with ScriptedLLM() as llm:
        agent_dir = turn_agent(tmp_path, llm.base_url)
        loaded(shell, agent_dir)
        assert "%cireil attach" in run(shell, "%cireil help").text
        (box,) = [o for o in run(shell, "%cireil attach").displayed]
        assert "application/vnd.jupyter.widget-view+json" in box
        widget = agentmagics.attach_widget(id(shell))  # the same kind the cell showed, to drive it here
        upload, status, _kernel_gone_note = widget.children
        assert "nothing attached yet" in status.value
        # what the front end sends when a person picks a file
        picked = {"name": "C:\\docs\\receipt.txt", "type": "text/plain", "size": 9, "content": memoryview(b"milk 1.20")}
        upload.value = ({**picked, "last_modified": datetime.now(UTC)},)
        assert "receipt.txt (9 bytes)" in status.value
        llm.script(reply.tool_calls(("respond", {"content": "got it"})))
        run(shell, "%%cireil_agent\nhere is the receipt")
        agent = cireil.current_agent()
        message = agent.session.history[0]
        assert [a["filename"] for a in message["attachments"]] == ["receipt.txt"]
        (stored,) = agent.store.attachments(agent.session.id, message["id"])
        assert stored[1] == b"milk 1.20"
        assert id(shell) not in agentmagics.STAGED  # sent once, then the next message starts empty
        llm.script(reply.tool_calls(("respond", {"content": "ok"})))
        run(shell, "%%cireil_agent\nand nothing attached now")
        last_user = [m for m in agent.session.history if m["role"] == "user"][-1]
        assert last_user["content"][0]["text"] == "and nothing attached now" and "attachments" not in last_user


def test_agent_and_prompt_options_take_both_forms_and_name_their_usage(shell, agent_dir):
    from cireil.kernel.magics.agent import parse_agent_line

    assert parse_agent_line("--session=a --attach x --attach=y --model m") == {
        "attach": ["x", "y"],
        "session": "a",
        "model": "m",
        "step": False,
    }
    assert parse_agent_line("--step --session a") == {"attach": [], "session": "a", "step": True}
    loaded(shell, agent_dir)
    assert "usage: %cireil prompt [--session NAME]" in usage_error(shell, "%cireil prompt --bogus 1")
    assert "--model needs a value; usage: %cireil prompt" in usage_error(shell, "%cireil prompt --model")
    assert "usage: %%cireil_agent" in usage_error(shell, "%%cireil_agent --session\nhi")


def test_missing_or_wrong_arguments_show_the_magics_usage_and_nothing_else(shell, agent_dir):
    loaded(shell, agent_dir)
    ran = run(shell, "%cireil_write /workspace/a.txt", ok=False)
    assert type(ran.error) is UsageError
    shown = ran.text
    assert "%cireil_write: content is missing" in shown
    assert "%cireil_write PATH [key=value ...]" in shown  # the usage line
    assert "content (string, required)" in shown  # and the parameters
    # the tool never ran: no second, cryptic error of its own validation, no result
    assert "Invalid key" not in shown and "received undefined" not in shown
    assert ran.value is None
    assert len(ran.displayed) == 1
    ran = run(shell, "%cireil_list_dir paht=/workspace", ok=False)
    assert "unknown parameter 'paht' (did you mean 'path'?)" in ran.text
    ran = run(shell, "%cireil_list_dir /workspace")
    assert "usage:" not in ran.text  # a good call shows only its result


def test_help_has_no_literal_backticks_and_lists_model_and_provider(shell, agent_dir):
    loaded(shell, agent_dir)
    text = run(shell, "%cireil help").text
    assert "`" not in text
    assert "%%cireil_agent [--session NAME] [--attach PATH ...] [--model MODEL] [--provider NAME]" in text
    assert "prompt [--session NAME] [--model MODEL] [--provider NAME]" in text


def test_load_lists_the_line_form_and_names_the_cell_forms(shell, agent_dir):
    out = run(shell, f"%load_ext cireil\n%cireil load {agent_dir}").stdout
    tools_line = next(line for line in out.splitlines() if line.startswith("tools: "))
    assert "%cireil_write" in tools_line and "%%" not in tools_line  # as the README writes it
    assert "with a cell body too: %%cireil_write" in out


# -- a mistyped cireil magic (issue 34) ------------------------------------------------------------------


def test_a_mistyped_cireil_magic_gets_a_did_you_mean(shell, agent_dir):
    run(shell, "%load_ext cireil")
    message = usage_error(shell, "%cireil_list_dir /workspace")
    assert message.startswith("Line magic function `%cireil_list_dir` not found: tool magics exist once an agent")
    loaded(shell, agent_dir)
    assert usage_error(shell, "%cireil_lsit_dir /workspace") == (
        "Line magic function `%cireil_lsit_dir` not found (did you mean %cireil_list_dir?)"
    )
    assert "(did you mean %%cireil_write?)" in usage_error(shell, "%%cireil_wirte /workspace/a.txt\nbody\n")
    assert "tool 'exec' is not enabled in config/tools.toml" in usage_error(shell, "%cireil_exec ls")
    assert "did you mean %cireil?" in usage_error(shell, "x = 1\n%cireill help")  # on any line of a cell
    assert not (agent_dir / "workspace" / "a.txt").exists()


def test_the_did_you_mean_leaves_every_other_line_alone(shell, agent_dir):
    run(shell, "%load_ext cireil")
    # an agent loaded by an earlier line of the same cell: its magics are unknown when the cell is transformed,
    # and the call still runs
    ran = run(shell, f"%cireil load {agent_dir}\nresult = %cireil_list_dir /workspace\nresult")
    assert ran.value.success
    # a known magic goes the ordinary way; only an unknown cireil name is rerouted
    assert shell.transform_cell("%cireil_list_dir /w\n") == "get_ipython().run_line_magic('cireil_list_dir', '/w')\n"
    assert "cireil.kernel.magics.unknown" in shell.transform_cell("%cireil_raed /w\n")
    assert shell.transform_cell("%time 1\n") == "get_ipython().run_line_magic('time', '1')\n"
    other = run(shell, "%not_a_magic_at_all", ok=False)
    assert "Line magic function `%not_a_magic_at_all` not found." in other.stderr  # IPython's own, untouched
    text = "'%cireil_raed stays text'"
    assert run(shell, text).value == "%cireil_raed stays text"
    run(shell, "%unload_ext cireil")
    assert not any(type(t).__name__ == "UnknownMagics" for t in shell.input_transformers_post)
