"""commands.py: each `%cireil` subcommand and `cireil` command declared once, and everything that shows or
parses it read from that declaration: `%cireil help`, `%cireil help SUB`, `%cireil?`, the CLI's --help.

The drift checks walk the parsers themselves, so an option added to a parser and not to help (or the other
way round) fails here; the issue that asked for this found `--model` and `--provider` missing from help.
"""

from __future__ import annotations

import argparse

import pytest
from IPython.core import oinspect

from cireil import cli, commands
from cireil.kernel import extension
from magicshell import loaded, run, usage_error

MAGIC_COMMANDS = commands.magic_commands()


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Every spelling the parser accepts: each option string, and each positional's metavar."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        found += action.option_strings or [str(action.metavar or action.dest.upper())]
    return found


def _rows_of(command: commands.Command) -> str:
    """The lines `%cireil help` shows for this command (a family's bare command also gets its siblings')."""
    mine = [(u, w) for u, w in commands.help_rows() if f"{u} ".startswith(f"{command.words} ")]
    return "\n".join(f"{usage}  {what}" for usage, what in mine)


def test_the_table_has_no_duplicate_and_every_magic_command_has_a_handler(shell):
    for surface in (commands.MAGIC, commands.CLI):  # `attach` is a notebook upload and a shell command
        words = [c.words for c in commands.COMMANDS if surface in c.surfaces]
        assert len(words) == len(set(words))
    run(shell, "%load_ext cireil")
    controller = extension._LOADED[id(shell)][0]
    assert sorted(controller._handlers) == sorted(c.words for c in MAGIC_COMMANDS)
    assert sorted(cli.HANDLERS) == sorted(c.words for c in commands.cli_commands())


@pytest.mark.parametrize("command", MAGIC_COMMANDS, ids=lambda c: c.words)
def test_help_names_every_option_the_parser_accepts(command):
    rows = _rows_of(command)
    assert rows, f"%cireil help has no line for {command.words}"
    for spelling in _options(commands.magic_parser(command)):
        assert spelling in rows, f"%cireil {command.words} accepts {spelling}, which help does not name:\n{rows}"
    full = commands.command_help(command.words.split())
    for spelling in _options(commands.magic_parser(command)):
        assert spelling in full  # `%cireil help SUB` explains each


def test_help_of_the_agent_cell_names_every_option():
    footer = "\n".join(commands.help_footer())
    for spelling in _options(commands.magic_parser(commands.AGENT_CELL)):
        assert spelling in footer
    assert "--model" in footer and "--provider" in footer


def test_help_docstring_and_command_help_come_from_the_declaration(shell, agent_dir):
    loaded(shell, agent_dir)
    shown = run(shell, "%cireil help").text
    doc = oinspect.getdoc(shell.find_line_magic("cireil"))
    for command in MAGIC_COMMANDS:
        assert f"%cireil {command.words}" in shown
        assert f"%cireil {command.words}" in doc  # %cireil? shows the same list
    assert "--session NAME" in oinspect.getdoc(shell.find_cell_magic("cireil_agent"))
    one = run(shell, "%cireil help mcp log").text
    assert "usage: %cireil mcp log [SERVER] [--limit N] [--export FILE]" in one
    assert "the newest N exchanges (default 50)" in one
    # `SUB --help` is `help SUB`, and never argparse's exit
    assert run(shell, "%cireil prompt --help").text == run(shell, "%cireil help prompt").text
    assert "did you mean 'prompt'" in usage_error(shell, "%cireil help promt")


@pytest.mark.parametrize("command", [c for c in MAGIC_COMMANDS if c.words != "help"], ids=lambda c: c.words)
def test_a_parse_error_is_one_line_with_the_usage_and_the_shell_lives_on(shell, command):
    run(shell, "%load_ext cireil")
    message = usage_error(shell, f"%cireil {command.words} --bogus")
    # commands with required words name those first; every one quotes its usage
    assert message.startswith(("unknown option '--bogus'; usage: ", "the following arguments are required: "))
    assert f"usage: %cireil {command.family}" in message and f"%cireil {command.words}" in message
    assert run(shell, "1 + 1").value == 2


def test_argparse_never_exits_and_errors_read_like_cireil():
    def error(*words: str) -> str:
        with pytest.raises(commands.CommandUsage) as caught:
            commands.parse(*commands.find(list(words)))
        return str(caught.value)

    assert error("prompt", "--model").startswith("--model needs a value; usage: %cireil prompt [--session NAME]")
    assert error("usage", "--all", "--session", "x").startswith("--all and --session do not go together")
    assert error("steps", "nine").startswith("TURN is a number from %cireil usage, not 'nine'")
    assert error("context", "now").startswith("unexpected argument 'now'; usage: %cireil context")
    # a family's error names all of its forms
    assert error("jobs", "x") == "unexpected argument 'x'; usage: %cireil jobs  or  %cireil jobs run ID"
    assert error("export", "tests").startswith("usage: %cireil export test TURN PATH.py")
    assert "did you mean 'tools'" in error("tols")
    parsed = commands.parse(*commands.find(["session", "a", "--channel=discord", "--guild", "1", "--nsfw"]))
    assert (parsed.name, parsed.channel, parsed.guild, parsed.nsfw) == ("a", "discord", "1", True)
    assert commands.parse(*commands.find(["mcp", "log", "x", "--limit=3"])).limit == 3


@pytest.mark.parametrize("command", commands.cli_commands(), ids=lambda c: c.words)
def test_the_cli_help_comes_from_the_same_declaration(command, capsys):
    assert cli.main([*command.words.split(), "--help"]) == 0  # a two-word command (mcp mock) is two words
    out = capsys.readouterr().out
    assert command.summary.split(":")[0] in " ".join(out.split())
    parser = argparse.ArgumentParser()
    command.arguments(parser, commands.CLI)
    for spelling in _options(parser):
        assert spelling in out
