"""`cireil tools --diff-original [DIR]`: how the tool definitions differ from the original CireilClaw's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cireil.cli import main
from conftest import make_agent


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_without_a_directory_the_built_ins_differences(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "tools", "--diff-original")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("6 differences from the original CireilClaw's tool definitions")
    heads = [line for line in lines if line.startswith("  ") and not line.startswith("      ")]
    assert heads == [
        "  write [both] description",
        "  exec [both] parameters.properties.input",
        "  invoke [cireil only] whole tool",
        "  session-info [both] description",
        "  str-replace [original only] whole tool",
        "  mcp__<server>__<tool> [cireil only] whole tool",
    ]
    assert all(lines[i + 2].startswith('      rule: spec "') for i, line in enumerate(lines) if line in heads)


def test_json_has_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "tools", "--diff-original", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["agent"] is False and len(report["rows"]) == 6
    assert set(report["rows"][0]) == {"tool", "side", "where", "what", "rule", "when", "enabled", "applies"}


def test_with_an_agent_each_row_says_whether_it_shows_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = make_agent(tmp_path)  # list-dir, write, session-info; edit is off
    code, out, _ = cli(capsys, "tools", "--diff-original", str(agent))
    assert code == 0
    assert "(2 in this agent's enabled tools)" in out.splitlines()[0]  # write (edit off) and session-info
    assert "  write [both] description (enabled here)" in out
    assert "  exec [both] parameters.properties.input (disabled here)" in out
    assert "mcp__<server>__<tool>" not in out
    code, out, _ = cli(capsys, "tools", str(agent), "--diff-original", "--json")
    rows = {r["tool"]: r for r in json.loads(out)["rows"]}
    assert (rows["write"]["enabled"], rows["write"]["applies"]) == (True, True)


def test_an_invalid_agent_is_refused_as_plain_tools_refuses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    agent = make_agent(tmp_path, "reed = true\n")
    code, out, err = cli(capsys, "tools", "--diff-original", str(agent))
    assert (code, out) == (2, "")
    assert "config/tools.toml:1: unknown tool 'reed'" in err


def test_tools_without_a_directory_needs_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "tools")
    assert (code, out) == (2, "")
    assert "tools needs the agent directory DIR" in err and "--diff-original" in err


def test_the_console_command_prints_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cireil", "tools", "--diff-original"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "str-replace [original only] whole tool" in done.stdout
    assert (
        "--diff-original"
        in subprocess.run(
            [sys.executable, "-m", "cireil", "tools", "--help"], capture_output=True, text=True, timeout=60
        ).stdout
    )
