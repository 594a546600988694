"""`%cireil tools --diff-original`: the loaded agent's differences from the original CireilClaw's definitions."""

from __future__ import annotations

from conftest import make_agent
from htmlcheck import problems
from magicshell import loaded, run, usage_error

PEEK = """
from cireil import Tool
from cireil.params import Params, String

async def _peek(args, ctx):
    return {"success": True}

mine = [Tool(name="peek", description="Peek at a thing.", params=Params(what=String()), run=_peek)]
"""


def test_diff_original_shows_the_loaded_agents_differences(shell, tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\nwrite = true\nedit = true\nsession-info = true\n")
    loaded(shell, agent)
    (bundle,) = run(shell, "%cireil tools --diff-original").displayed
    text = bundle["text/plain"]
    assert "(1 in this agent's enabled tools)" in text.splitlines()[0]  # session-info; write's needs edit off
    assert "  write [both] description (not here: edit is enabled)" in text
    assert "  session-info [both] description (enabled here)" in text
    assert "  str-replace [original only] whole tool (not in cireil)" in text
    assert "<table" in bundle["text/html"] and "spec rule" in bundle["text/html"]
    assert problems(bundle) == []


def test_python_tools_of_the_notebook_are_listed_as_cireil_only(shell, tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\npeek = true\n")  # a Python tool is enabled by name too
    run(shell, "%load_ext cireil")
    run(shell, PEEK)
    run(shell, f"%cireil load {agent} --tools mine")
    (bundle,) = run(shell, "%cireil tools --diff-original").displayed
    assert "  peek [cireil only] whole tool (enabled here)" in bundle["text/plain"]
    assert "defined in Python for this notebook" in bundle["text/plain"]


def test_help_names_the_option_and_a_wrong_option_is_one_line(shell, tmp_path):
    loaded(shell, make_agent(tmp_path))
    assert "tools --diff-original" in run(shell, "%cireil help").text
    assert "unknown option '--diff'" in usage_error(shell, "%cireil tools --diff")
