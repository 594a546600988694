"""The `cireil` command: scaffold, validate, inspect and call an agent's tools from a shell.

Exit codes (contracts.md): 0 success; 1 a tool ran and reported `success: false`; 2 a usage or
configuration error. User errors are one line on stderr, never a traceback. Each subcommand imports
only what it needs, so `cireil --version` and `cireil init` stay quick.

What the command prints quotes others: scenario and tool names, a model's answer, a provider's error, a
hand-edited result file. `main` sends stdout and stderr through one filter (`terminal_safe`: ESC, BEL and
the other controls shown as ␛, ␇, …; lone surrogates escaped) for the whole command, so no subcommand,
runtime message or argparse error can hand the terminal an escape sequence (OSC 52 clipboard writes
included), whichever print it comes from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from . import __version__
from .commands import add_cli_command, cli_commands

if TYPE_CHECKING:
    from .runtime.base.errors import ConfigIssue
    from .runtime.toolkit.tool import Tool

OK, TOOL_FAILED, USAGE = 0, 1, 2


class UsageFailure(Exception):
    """A user error that ends the command with exit 2 and one line on stderr."""


def _say(message: str, stream: TextIO | None = None) -> None:
    print(message, file=stream or sys.stdout)


def _fail(message: str) -> None:
    print(f"cireil: error: {message}", file=sys.stderr)


def _print_issues(issues: Sequence[ConfigIssue]) -> None:
    for issue in issues:
        print(str(issue), file=sys.stderr)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# characters json.dumps leaves raw that the terminal filter would rewrite (breaking the JSON): as \uXXXX
# escapes instead, the same value to a JSON reader and nothing a terminal acts on
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _dump(data: Any) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# -- subcommands -------------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    if args.adopt:
        return _adopt(args.dir)
    from .runtime.scaffold import DirectoryNotEmptyError, init

    notes: list[str] = []
    try:
        path = init(args.dir, notes=notes)
    except DirectoryNotEmptyError as exc:
        message = str(exc)
        if _in_a_root(args.dir):
            message += f"; for an existing runtime root, `cireil init --adopt {args.dir}` writes its migrations.json"
        raise UsageFailure(message) from None
    except OSError as exc:
        raise UsageFailure(f"cannot create {args.dir}: {exc.strerror or exc}") from None
    _say(f"created agent '{path.name}' in {path}")
    for note in notes:
        _say(note)
    _say("next steps:")
    _say(f"  cireil dry-run {args.dir}")
    _say(f"  cireil call {args.dir} list-dir /workspace")
    return OK


def _in_a_root(directory: str) -> bool:
    from pathlib import Path

    path = Path(directory).expanduser().absolute()
    return _is_runtime_root(directory) or path.parent.name == "agents"


def _adopt(directory: str) -> int:
    """`cireil init --adopt DIR`: the root's config/migrations.json and nothing else."""
    from .runtime.original.runtime_root import MIGRATION_IDS, RootError, adopt

    try:
        written = adopt(directory)
    except RootError as exc:
        raise UsageFailure(str(exc)) from None
    except OSError as exc:
        raise UsageFailure(f"cannot write the migrations.json of {directory}: {exc.strerror or exc}") from None
    _say(
        f"wrote {written}: all {len(MIGRATION_IDS)} config migrations of the original CireilClaw marked as applied, "
        "so its startup no longer offers to run them"
    )
    _say(
        "this suits a root whose files are in today's format (what `cireilclaw init` writes now); for a root made "
        "by an older CireilClaw, delete the file and run `cireilclaw migrate` instead"
    )
    return OK


def _is_runtime_root(directory: str) -> bool:
    """A CireilClaw root (`~/.cireilclaw`): agents under agents/, and not itself an agent."""
    from pathlib import Path

    path = Path(directory).expanduser()
    return (path / "agents").is_dir() and not (path / "config" / "tools.toml").is_file()


def _dry_run_root(args: argparse.Namespace) -> int:
    """Every folder under agents/ is an agent to the original runtime, so each is checked; what concerns
    the root itself (migrations.json, stray folders) is said once."""
    from pathlib import Path

    from .runtime.agent import dry_run

    agents = sorted(p for p in (Path(args.dir).expanduser() / "agents").iterdir() if p.is_dir())
    reports = [dry_run(p) for p in agents]
    if args.json:
        _say(_dump({"root": str(Path(args.dir).absolute()), "agents": [r.as_dict() for r in reports]}))
        return OK if all(r.ok for r in reports) else USAGE
    shared: list[ConfigIssue] = []
    for path, report in zip(agents, reports, strict=True):
        for issue in report.issues:
            if issue.file.startswith("/"):  # a file of the root, named in full: the same for every agent
                if issue not in shared:
                    shared.append(issue)
            else:
                print(f"agents/{path.name}/{issue}", file=sys.stderr)
        if report.ok:
            _say(f"agents/{path.name}: valid agent ({_plural(len(report.tools), 'enabled tool')})")
        else:
            _say(f"agents/{path.name}: invalid agent ({_plural(len(report.errors), 'error')})")
    _print_issues(shared)
    if not agents:
        _say(f"{args.dir}: no agents under agents/")
    return OK if all(r.ok for r in reports) else USAGE


def cmd_dry_run(args: argparse.Namespace) -> int:
    from .runtime.agent import dry_run

    if _is_runtime_root(args.dir):
        return _dry_run_root(args)
    report = dry_run(args.dir)
    if args.json:  # the full report, built-ins' lint included: each finding names its tool, each tool its origin
        _say(_dump(report.as_dict()))
        return OK if report.ok else USAGE
    from .runtime.engine.toollint import split_builtin

    # findings about built-ins are the original's own definitions, nobody's to fix: only when asked
    own, builtin = split_builtin(report.lint, report.tools)
    shown, hidden = (report.lint, []) if args.builtins else (own, builtin)
    _print_issues(report.errors)
    _print_issues(report.warnings)
    if not report.ok:
        counts = _plural(len(report.errors), "error")
        if report.warnings:
            counts += ", " + _plural(len(report.warnings), "warning")
        print(f"{args.dir}: invalid agent ({counts})", file=sys.stderr)
        return USAGE
    names = ", ".join(t.name for t in report.tools) or "none"
    _say(f"{report.directory.name}: valid agent at {report.directory}")
    _say(f"enabled tools ({len(report.tools)}): {names}")
    if report.warnings:
        _say(_plural(len(report.warnings), "warning") + " (see above)")
    _print_lint(shown, len(hidden))
    return OK


def _print_lint(findings: Sequence[Any], hidden: int = 0) -> None:
    """Definition lint: reported on stdout, never a reason to fail (the exit status stays 0)."""
    if findings:
        from .runtime.engine.toollint import lint_counts

        counts = ", ".join(f"{n} {k}" for k, n in lint_counts(list(findings)).items() if n)
        _say(f"tool definition lint ({counts}; the agent is still valid):")
        for finding in findings:
            _say(f"  {finding}")
    elif hidden:
        _say("tool definition lint: nothing to report about the agent's own, plugin and MCP tools")
    if hidden:
        _say(
            f"{_plural(hidden, 'lint finding')} about cireil's built-in tools not shown (they send the original "
            "CireilClaw's definitions as they are; --builtins shows them)"
        )


def cmd_tools(args: argparse.Namespace) -> int:
    from .runtime.agent import dry_run
    from .runtime.toolkit.tool import describe_parameters

    if args.diff_original and args.dir is None:
        return _print_diff_original(None, as_json=args.json)
    if args.dir is None:
        raise UsageFailure("tools needs the agent directory DIR (only --diff-original works without one)")
    report = dry_run(args.dir)
    if not report.ok:
        _print_issues(report.errors)
        print(f"{args.dir}: invalid agent ({_plural(len(report.errors), 'error')})", file=sys.stderr)
        return USAGE
    if args.diff_original:
        return _print_diff_original(report.tools, as_json=args.json)
    if args.json:
        _say(_dump([tool.as_dict() for tool in report.tools]))
        return OK
    if not report.tools:
        _say("no tools are enabled (see config/tools.toml)")
    for tool in report.tools:
        _say(f"{tool.name}: {tool.description}")
        for line in describe_parameters(tool.parameters):
            _say(f"    {line}")
    return OK


def _print_diff_original(tools: Sequence[Any] | None, *, as_json: bool) -> int:
    """`tools --diff-original`: the built-ins' declared differences, and with an agent its own tools too."""
    from .render.tooldiff import text
    from .runtime.toolkit.original_diff import differences

    report = differences(tools)
    _say(_dump(report) if as_json else text(report))
    return OK


def _read_arguments(tool: Tool, words: Sequence[str]) -> dict:
    """`cireil call`'s words after TOOL, read by the parser the magics use (runtime/toolkit/toolargs.py)."""
    from .runtime.toolkit.toolargs import ArgumentLineError, parse_argv, parse_json_object, string_params

    try:
        if list(words) == ["-"]:
            raw = sys.stdin.read()
            return parse_json_object(raw) if raw.strip() else {}
        return parse_argv(
            words,
            main_arg=tool.main_arg,
            rest_arg=tool.rest_arg,
            strings=string_params(tool.parameters),
            tool=f"tool '{tool.name}'",
        )
    except ArgumentLineError as exc:
        raise UsageFailure(str(exc)) from None


def cmd_call(args: argparse.Namespace) -> int:
    from .runtime.agent import Agent
    from .runtime.base.errors import ConfigError, UnknownToolError

    try:
        agent = Agent.load(args.dir, session="cli:main")
    except ConfigError as exc:
        _print_issues(exc.issues)
        return USAGE
    try:
        tool = agent.tool(args.tool)  # its main argument decides what a bare word is
        arguments = _read_arguments(tool, args.arguments)
        result = agent.call(tool.name, arguments)
    except UnknownToolError as exc:
        raise UsageFailure(str(exc)) from None
    except ConfigError as exc:  # tools.toml broke between load and the call
        _print_issues(exc.issues)
        return USAGE
    finally:
        agent.close()
    for notice in result.notices:
        print(f"cireil: {notice}", file=sys.stderr)
    _say(_dump(result.data))
    return OK if result.success else TOOL_FAILED


def cmd_migrate(args: argparse.Namespace) -> int:
    from .runtime.base.errors import ConfigError
    from .runtime.config.migrate import migrate

    try:
        result = migrate(args.dir)
    except ConfigError as exc:
        _print_issues(exc.issues)
        return USAGE
    except OSError as exc:
        raise UsageFailure(f"cannot migrate {args.dir}: {exc.strerror or exc}") from None
    _say(str(result))
    return OK


def cmd_eval(args: argparse.Namespace) -> int:
    from .runtime.evals.command import run_eval_command

    return run_eval_command(args)


def cmd_eval_compare(args: argparse.Namespace) -> int:
    from .runtime.evals.command import compare_command

    return compare_command(args)


def cmd_eval_show(args: argparse.Namespace) -> int:
    from .render.evalrun import run_text
    from .runtime.evals.command import show_command

    return show_command(args, run_text)


def cmd_mcp_mock(args: argparse.Namespace) -> int:
    from . import mcp_mock_server

    if not _loopback(args.host):
        print(
            f"cireil: warning: serving on {args.host}: the recorded tool results are readable by anyone who can "
            "reach it (127.0.0.1, the default, keeps them on this machine)",
            file=sys.stderr,
        )
    try:
        mock = mcp_mock_server(args.source, turn=args.turn, server=args.server, host=args.host, port=args.port)
        mock.start()
    except ValueError as exc:
        raise UsageFailure(str(exc)) from None
    except OSError as exc:
        raise UsageFailure(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    try:
        for name, url in mock.urls.items():
            calls = len(mock.cassette.servers[name]["calls"])
            _say(f"{name}  {url}  ({calls} recorded call{'s' if calls != 1 else ''})")
        _say("serving recorded MCP traffic; Ctrl-C stops")
        sys.stdout.flush()
        import threading

        threading.Event().wait()  # until Ctrl-C (KeyboardInterrupt)
    except KeyboardInterrupt:
        _say("stopped")
    finally:
        mock.stop()
    return OK


def cmd_proxy(args: argparse.Namespace) -> int:
    from .runtime.attach.proxy import serve
    from .runtime.attach.state import AttachError

    try:
        return serve(Path(args.dir), args.port)
    except AttachError as exc:
        raise UsageFailure(str(exc)) from None
    except OSError as exc:
        raise UsageFailure(f"cannot start the proxy for {args.dir}: {exc.strerror or exc}") from None


def cmd_attach(args: argparse.Namespace) -> int:
    from .runtime.attach import state

    if not Path(args.dir, "config", "engine.toml").is_file():
        raise UsageFailure(f"{args.dir}: no config/engine.toml; AGENT_DIR is the agent's directory")
    try:
        lines = state.status_lines(Path(args.dir)) if args.status else state.attach(Path(args.dir), args.port)
    except state.AttachError as exc:
        raise UsageFailure(f"not attached: {exc}") from None
    for line in lines:
        _say(line)
    return OK


def cmd_detach(args: argparse.Namespace) -> int:
    from .runtime.attach import state

    try:
        lines = state.detach(Path(args.dir), force=args.force)
    except state.AttachError as exc:
        raise UsageFailure(f"not detached: {exc}") from None
    for line in lines:
        _say(line)
    return OK


def cmd_reconstruct(args: argparse.Namespace) -> int:
    from .runtime.agent import Agent
    from .runtime.base.errors import ConfigError

    try:
        agent = Agent.load(args.dir, session="cli:main")
    except ConfigError as exc:
        _print_issues(exc.issues)
        return USAGE
    try:  # sessions.db is only read; the turns go to the agent's cireil-recordings.db
        done = agent.reconstruct(session=args.session, since=args.since)
    except ConfigError as exc:  # engine.toml or another file the requests are built from
        _print_issues(exc.issues)
        return USAGE
    except ValueError as exc:
        raise UsageFailure(f"nothing reconstructed: {exc}") from None
    finally:
        agent.close()
    for line in done.lines():
        _say(line)
    return OK


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "init": cmd_init,
    "dry-run": cmd_dry_run,
    "tools": cmd_tools,
    "call": cmd_call,
    "migrate": cmd_migrate,
    "proxy": cmd_proxy,
    "attach": cmd_attach,
    "detach": cmd_detach,
    "reconstruct": cmd_reconstruct,
    "mcp mock": cmd_mcp_mock,
    "eval": cmd_eval,
    "eval-compare": cmd_eval_compare,
    "eval-show": cmd_eval_show,
}

# -- parser ------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cireil",
        description="Scaffold, validate and call the tools of a CireilClaw agent directory.",
    )
    parser.add_argument("--version", action="version", version=f"cireil {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # what each command takes and says in --help is declared once, in commands.py (shared with %cireil)
    declared = {c.words: c for c in cli_commands()}
    families: dict[str, argparse._SubParsersAction] = {}
    for name, handler in HANDLERS.items():  # in this order in `cireil --help`
        family, _, word = name.partition(" ")
        if word:  # a two-word command (mcp mock): its first word is a parser of its own
            if family not in families:
                what = "; ".join(
                    f"{w.split()[1]}: {declared[w].summary}" for w in HANDLERS if w.startswith(family + " ")
                )
                group = sub.add_parser(family, help=what.replace("%", "%%"), description=what.replace("%", "%%"))
                families[family] = group.add_subparsers(dest=f"{family}_command", required=True, metavar="COMMAND")
            add_cli_command(families[family], declared[name], handler, word)
        else:
            add_cli_command(sub, declared[name], handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .runtime.base.controls import TerminalSafe  # here, not at the top: importing the CLI stays light

    # the one place what the command prints is made safe for a terminal (see the module's docstring)
    with (
        contextlib.redirect_stdout(TerminalSafe(sys.stdout)),
        contextlib.redirect_stderr(TerminalSafe(sys.stderr)),
    ):
        try:
            code = _main(argv)
            sys.stdout.flush()  # here, where a closed pipe is caught, not in Python's own flush at exit
            return code
        except BrokenPipeError:  # `cireil tools DIR | head`: the reader is gone, which is no error of ours
            return _reader_gone()
        except Exception:  # a bug: its traceback still shown (exit 1, as Python would), but through the filter
            import traceback

            traceback.print_exc()
            return 1


SIGPIPE_EXIT = 128 + 13  # what a shell reports for a command a closed pipe ended (as `git log | head` does)


def _reader_gone() -> int:
    """End quietly once stdout's reader has closed the pipe, as other command-line tools do. Output still buffered
    would fail again when Python flushes stdout at exit ("Exception ignored ... BrokenPipeError"), so stdout is
    pointed at /dev/null first."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):  # no real stdout file (an embedding host): nothing to flush
        pass
    return SIGPIPE_EXIT


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and argparse's own usage errors
        return exc.code if isinstance(exc.code, int) else USAGE
    try:
        return args.handler(args)
    except UsageFailure as exc:
        _fail(str(exc))
        return USAGE
    except KeyboardInterrupt:
        return 130
