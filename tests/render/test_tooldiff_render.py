"""`--diff-original` as text and HTML (render/tooldiff.py): every row with its place, reason and state."""

from __future__ import annotations

from cireil.render import tooldiff
from cireil.runtime.base.params import Params, String
from cireil.runtime.toolkit.original_diff import differences
from cireil.runtime.toolkit.registry import builtin
from cireil.runtime.toolkit.tool import Tool
from htmlcheck import problems


async def _noop(args: dict, ctx: object) -> dict:
    return {"success": True}


def test_text_lists_each_difference_with_its_rule_and_the_identical_rest():
    text = tooldiff.text(differences())
    assert text.startswith("6 differences from the original CireilClaw's tool definitions, each with its reason")
    assert "  exec [both] parameters.properties.input\n" in text
    assert "  str-replace [original only] whole tool\n" in text
    assert "only when edit = false" in text
    assert '      rule: spec "HTTP MCP tools" (reference §10 #14)' in text
    assert text.splitlines()[-1].startswith("identical to the original (17 built-ins): respond, no-response, edit")


def test_with_an_agent_each_row_says_whether_it_shows_there():
    rogue = Tool(name="mcp__x__y", description="y", params=Params(q=String()), run=_noop, origin="mcp:x 2025-06-18")
    report = differences([builtin("edit"), builtin("write"), builtin("session-info"), rogue])
    text = tooldiff.text(report)
    assert "(2 in this agent's enabled tools)" in text.splitlines()[0]  # session-info and the MCP tool
    assert "  write [both] description (not here: edit is enabled)" in text
    assert "  session-info [both] description (enabled here)" in text
    assert "  invoke [cireil only] whole tool (disabled here)" in text
    assert "  str-replace [original only] whole tool (not in cireil)" in text
    assert "  mcp__x__y [cireil only] whole tool (enabled here)" in text
    html = tooldiff.html(report)
    assert problems({"text/html": html, "text/plain": text}) == []
    assert "<th" in html and ">here<" in html and "not here: edit is enabled" in html


def test_html_without_an_agent_has_no_state_column():
    html = tooldiff.html(differences())
    assert ">here<" not in html and "spec rule" in html
    assert "mcp__&lt;server&gt;__&lt;tool&gt;" in html and "mcp__<server>" not in html  # escaped
