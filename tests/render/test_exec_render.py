"""exec's magic argument line and its final panel, without a kernel."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from cireil.kernel.magics.toolargs import parse_args
from cireil.render import result_actions, result_bundle
from cireil.runtime.toolkit.result import ToolResult


def exec_args(line: str) -> dict:
    return parse_args(line, main_arg="command", rest_arg="args", strings={"command", "input"})


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ls", {"command": "ls"}),
        ("ls -la /workspace", {"command": "ls", "args": ["-la", "/workspace"]}),
        ("env A=1 'b c' \"$HOME\" 42 true", {"command": "env", "args": ["A=1", "b c", "$HOME", "42", "true"]}),
        ('input="x" cat -', {"input": "x", "command": "cat", "args": ["-"]}),
        ('args=["-n"] cat', {"args": ["-n"], "command": "cat"}),
        ('{"command": "ls", "args": ["-a"]}', {"command": "ls", "args": ["-a"]}),
    ],
)
def test_words_after_the_command_are_its_arguments_verbatim(line, expected):
    assert exec_args(line) == expected


def test_args_given_twice_is_refused():
    with pytest.raises(UsageError, match="args is given twice"):
        exec_args('args=["-n"] cat -b')


def test_other_tools_still_refuse_a_second_bare_word():
    with pytest.raises(UsageError, match="two bare arguments"):
        parse_args("/a /b", main_arg="path")


def result(data: dict, args: dict | None = None) -> ToolResult:
    return ToolResult("exec", args or {"command": "ls", "args": ["-a b"]}, data, duration_s=0.5)


def test_spilled_output_panel_shows_counts_previews_and_offers_read_actions():
    data = {
        "exitCode": 2,
        "stderrLength": 3,
        "stderrPath": "/workspace/.exec-output/x.err",
        "stdoutLength": 40000,
        "stdoutPath": "/workspace/.exec-output/x.out",
        "stdoutPreview": "a\n... [truncated, 5 lines (9 bytes) — see stdoutPath] ...\nz",
        "success": False,
        "truncated": True,
    }
    bundle = result_bundle(result(data))
    text = bundle["text/plain"]
    assert text.startswith("$ ls '-a b'\nexit 2 · 0.50 s · stdout 39.1 KiB · stderr 3 B")
    assert "stdout: 39.1 KiB saved to /workspace/.exec-output/x.out" in text and "see stdoutPath" in text
    assert "<script" not in bundle["text/html"] and "<style" not in bundle["text/html"]
    assert bundle["application/vnd.cireil.result+json"] is data
    actions = result_actions(result(data))
    assert [(a.tool, a.args) for a in actions] == [
        ("read", {"path": "/workspace/.exec-output/x.out"}),
        ("read", {"path": "/workspace/.exec-output/x.err"}),
    ]


def test_timeout_warning_and_fallback_are_visible_and_html_is_escaped():
    data = {
        "error": "Command timed out after 1000ms",
        "exitCode": -1,
        "fallbackInline": True,
        "stderr": "",
        "stderrLength": 0,
        "stdout": "<b>partial</b>",
        "stdoutLength": 14,
        "success": False,
        "timedOut": True,
        "truncated": True,
        "warning": 'backend = "none" ... WITHOUT a sandbox',
    }
    bundle = result_bundle(result(data))
    assert "timed out · 0.50 s" in bundle["text/plain"] and "WITHOUT a sandbox" in bundle["text/plain"]
    assert "could not be saved" in bundle["text/plain"]
    assert "&lt;b&gt;partial&lt;/b&gt;" in bundle["text/html"] and "<b>partial" not in bundle["text/html"]
    assert result_actions(result(data)) == []


def test_a_refused_call_uses_the_error_view():
    data = {"error": "Command 'rm' is not in sandbox.toml [bwrap] binaries.", "success": False}
    assert result_bundle(result(data))["text/plain"].startswith("exec failed: Command 'rm'")
