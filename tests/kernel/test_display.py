"""One way to be shown (issue 12 item 3): IPython shows cireil's objects through printers the kernel layer
registers with the shell's formatters; the runtime objects carry no display code, and plain Python sees a
plain repr without loading render/ or IPython."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

import cireil
from cireil import render
from cireil.params import Integer, Params
from cireil.render import RESULT_MIME

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


async def _bump(args, ctx):
    return {"n": args["n"], "success": True}


BUMP = cireil.Tool("bump", "Return n.", Params(n=Integer()), _bump, main_arg="n")


@pytest.fixture
def bump_dir(agent_dir: Path):
    (agent_dir / "config" / "tools.toml").write_text("list-dir = true\nbump = true\n")
    render.register_view(
        "bump",
        lambda r: (f"n = {r.data['n']}", f"<b>n = {r.data['n']}</b>"),
        lambda r: [render.Action("+1", "bump", {"n": r.data["n"] + 1})],
    )
    yield agent_dir
    render._REGISTERED.pop("bump", None)


def cell(shell, code: str):
    with capture_output() as captured:
        ran = shell.run_cell(code)
    assert ran.error_in_exec is None and ran.error_before_exec is None, captured.stderr
    return captured


def test_with_the_extension_a_result_with_actions_is_one_display_with_its_widget_and_fallbacks(shell, bump_dir):
    cell(shell, "%load_ext cireil")
    shell.user_ns["BUMP"] = BUMP
    cell(shell, f"import cireil\nagent = cireil.load({str(bump_dir)!r}, tools=[BUMP])\nr = agent.call('bump', n=1)")
    shown = cell(shell, "from IPython.display import display\ndisplay(r)")
    (output,) = shown.outputs  # rendered once: the widget view and its fallbacks travel in one bundle
    assert WIDGET_MIME in output.data and output.data["text/plain"] == "n = 1"
    assert output.data[RESULT_MIME] == {"n": 1, "success": True} and "<b>n = 1</b>" in output.data["text/html"]
    plain, _ = shell.display_formatter.format(shell.user_ns["agent"].call("list-dir", path="/workspace"))
    assert set(plain) == {"text/plain", "text/html", RESULT_MIME}
    cell(shell, "%unload_ext cireil")
    after, _ = shell.display_formatter.format(shell.user_ns["r"])
    assert WIDGET_MIME not in after and after["text/plain"] == "n = 1"  # still rich, no buttons
    shell.user_ns["agent"].close()


def test_the_python_api_renders_rich_without_the_extension(shell, agent_dir):
    cell(
        shell, f"import cireil\nagent = cireil.load({str(agent_dir)!r})\nr = agent.call('list-dir', path='/workspace')"
    )
    bundle, _ = shell.display_formatter.format(shell.user_ns["r"])
    assert set(bundle) == {"text/plain", "text/html", RESULT_MIME}
    assert "hello.txt" in bundle["text/plain"] and bundle[RESULT_MIME] == shell.user_ns["r"].data
    context, _ = shell.display_formatter.format(shell.user_ns["agent"].context())
    assert "no files are open" in context["text/plain"] and "text/html" in context
    loaded_twice = cell(shell, f"b = cireil.load({str(agent_dir)!r})\ndisplay(b.call('session-info'))")
    assert len(loaded_twice.outputs) == 1  # loading again replaces the printer, never stacks a second
    shell.user_ns["agent"].close()
    shell.user_ns["b"].close()


def test_plain_python_gets_a_repr_and_loads_neither_render_nor_ipython(agent_dir):
    code = f"""
import sys, cireil
agent = cireil.load({str(agent_dir)!r})
result = agent.call("session-info")
print(repr(result))
print(str(agent.context()) == "")
print(sorted(m for m in ("IPython", "cireil.render", "cireil.kernel.display") if m in sys.modules))
agent.close()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "<ToolResult session-info success=True keys=['platform', 'session_id', 'success']>",
        "True",
        "['cireil.kernel.display']",
    ]
