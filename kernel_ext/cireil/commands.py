"""Every `%cireil` subcommand and `cireil` command, declared once: its words, what it does, its options.

From one `Command` come the argparse parser that parses it (the notebook's and the shell's), the rows of
`%cireil help`, `%cireil help SUB`, `%cireil?` and `cireil COMMAND --help`, so help cannot drift from what
is parsed. A command both surfaces have (dry-run, tools, eval) adds, per surface, the options that surface
takes. argparse only: the CLI stays quick, and no IPython here (the kernel turns `CommandUsage` into its
UsageError).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence

MAGIC, CLI = "magic", "cli"
PROG = "%cireil"


class CommandUsage(Exception):
    """A line that does not parse: one line naming the problem and the usage, never SystemExit."""


def _nothing(parser: argparse.ArgumentParser, surface: str) -> None:
    return None


class Command:
    """One command: its words ("load", or two for a family: "mcp log", "export test"), the summary that is
    its parser's description, help row and CLI help, and `arguments`, which adds the options of a surface.
    `forms` are (usage, what) rows for `%cireil help` where one generated line says too little; their usages
    are also what an error quotes, and a drift test checks that they name every option the parser takes.
    A plain class, not a dataclass: the table is built when the first subcommand runs, and stays cheap."""

    __slots__ = ("arguments", "forms", "prog", "summary", "surfaces", "words")

    def __init__(
        self,
        words: str,
        summary: str,
        arguments: Callable[[argparse.ArgumentParser, str], None] = _nothing,
        surfaces: tuple[str, ...] = (MAGIC,),
        forms: tuple[tuple[str, str], ...] = (),
        prog: str = PROG,
    ) -> None:
        self.words, self.summary, self.arguments = words, summary, arguments
        self.surfaces, self.forms, self.prog = surfaces, forms, prog

    def __repr__(self) -> str:
        return f"Command({self.prog} {self.words})"

    @property
    def family(self) -> str:
        return self.words.split()[0]


class _MagicParser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting: a kernel must never see SystemExit."""

    usage_text = ""  # the usage as shown; argparse's own `usage` has its % doubled

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CommandUsage(f"{_plain(message)}; usage: {self.usage_text}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise CommandUsage((message or "").strip() or f"usage: {self.usage_text}")

    def set_usage(self, text: str) -> None:
        self.usage_text = text
        self.usage = text.replace("%", "%%")  # argparse %-formats its usage ("%(prog)s")


def _plain(message: str) -> str:
    """argparse's phrasing of the common mistakes, said the way cireil says them elsewhere."""
    if message.startswith("unrecognized arguments: "):
        first = message.removeprefix("unrecognized arguments: ").split(" ")[0]
        return f"unknown option {first!r}" if first.startswith("-") else f"unexpected argument {first!r}"
    found = re.fullmatch(r"argument (\S+): ((?:is|needs) .*)", message)  # a value _count refused
    if found:
        return f"{found.group(1)} {found.group(2)}"
    found = re.fullmatch(r"argument (\S+): expected one argument", message)
    if found:
        return f"{found.group(1)} needs a value"
    found = re.fullmatch(r"argument (\S+): not allowed with argument (\S+)", message)
    if found:
        return f"{found.group(2)} and {found.group(1)} do not go together"
    return message


# -- value types: a wrong value names itself --------------------------------------------------------------


def _count(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit():
            raise argparse.ArgumentTypeError(f"{what}, not {text!r}")
        return int(text)

    return parse


_TURN = _count("is a number from %cireil usage")
_STEP = _count("is a number from %cireil steps")
_POSITION = _count("is a number (0 = the step's first call)")
_LIMIT = _count("needs a whole number")


# -- the options of each command ----------------------------------------------------------------------------


def _load(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="DIR", nargs="?", help="the agent directory")
    p.add_argument("--demo", action="store_true", help="load a fresh throwaway copy of the bundled demo agent")
    p.add_argument("--tools", metavar="VAR", help="a notebook variable holding a cireil.Tool or a list of them")


def _tools(p: argparse.ArgumentParser, surface: str) -> None:
    if surface == CLI:
        p.add_argument("dir", metavar="DIR", nargs="?", help="the agent directory (optional with --diff-original)")
        p.add_argument("--json", action="store_true", help="print name, description and JSON Schema as JSON")
    else:
        p.add_argument("--lint", action="store_true", help="also check the definitions (names, descriptions, schemas)")
        _builtins(p, "with --lint, the findings")
    p.add_argument(
        "--diff-original",
        action="store_true",
        help="every way the definitions the model gets differ from the original CireilClaw's, with the spec rule "
        "causing it",
    )


def _builtins(p: argparse.ArgumentParser, what: str) -> None:
    # a built-in sends the original CireilClaw's definition as it is: its findings are nobody's to fix, so they
    # would only bury the ones about the agent's own, plugin and MCP tools
    p.add_argument(
        "--builtins",
        action="store_true",
        help=f"{what}: also about cireil's built-in tools (they send the original CireilClaw's definitions as is)",
    )


def _dry_run(p: argparse.ArgumentParser, surface: str) -> None:
    if surface == CLI:
        p.add_argument("dir", metavar="DIR", help="an agent directory, or a runtime root (each agent under agents/)")
        p.add_argument(
            "--json", action="store_true", help="print the full report as JSON (the lint of built-in tools included)"
        )
    else:
        p.add_argument("dir", metavar="DIR", nargs="?", help="another agent directory (default: the loaded agent)")
    _builtins(p, "the tool definition lint")


def _ui(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("tool", metavar="TOOL", nargs="?", help="one tool's form (default: every enabled tool's)")


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="MODEL", help="a model of the provider instead of its default")
    p.add_argument("--provider", metavar="NAME", help="a provider of engine.toml instead of the default one")


def _prompt(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("--session", metavar="NAME", help="another session than the current one")
    _model_options(p)
    p.add_argument("--diff", action="store_true", help="compare with the last request sent (the turn recorder)")


def _usage(p: argparse.ArgumentParser, surface: str) -> None:
    which = p.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="NAME", help="another session than the current one")
    which.add_argument("--all", action="store_true", help="every session")


def _turn(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("turn", metavar="TURN", nargs="?", type=_TURN, help="a recorded turn (default: the last)")


def _replay(p: argparse.ArgumentParser, surface: str) -> None:
    _turn(p, surface)
    p.add_argument("--in-place", action="store_true", help="on the agent itself, not on a copy")
    p.add_argument("--live-mcp", action="store_true", help="call the live MCP servers, not the recorded answers")


def _fork(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("turn", metavar="TURN", type=_TURN, help="the recorded turn")
    p.add_argument("step", metavar="STEP", type=_STEP, help="the step to continue from")
    p.add_argument("--position", metavar="N", type=_POSITION, default=0, help="the call of the step (0: its first)")
    change = p.add_mutually_exclusive_group()
    change.add_argument("--args", metavar="JSON", help="that call with these arguments instead")
    change.add_argument("--result", metavar="JSON", help="that call returning this result instead")
    p.add_argument("--live", action="store_true", help="continue with the live model, not the recorded replies")
    p.add_argument("--live-mcp", action="store_true", help="call the live MCP servers, not the recorded answers")
    _model_options(p)


def _export_test(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("turn", metavar="TURN", type=_TURN, help="the recorded turn")
    p.add_argument("path", metavar="PATH.py", help="the pytest file to write")
    p.add_argument("--fields", metavar="F,TOOL.F", default="", help="result fields the test compares (default: all)")
    p.add_argument("--live-mcp", action="store_true", help="the test calls the live MCP servers, not the recording")


def _export_notebook(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("session", metavar="SESSION", help="the session whose recorded turns become cells")
    p.add_argument("path", metavar="PATH.ipynb", help="the notebook to write")


def _session(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("name", metavar="NAME", nargs="?", help="switch to (or start) this session")
    p.add_argument("--grant", metavar="T1,T2|all", help="the tools the session may use; all lifts the limit")
    p.add_argument("--channel", metavar="discord|tui|internal|notebook", help="where the rules see the session run")
    p.add_argument("--guild", metavar="ID", help="the Discord guild (server) id")
    p.add_argument("--channel-id", metavar="ID", help="the Discord channel id")
    p.add_argument("--parent", metavar="ID", help="the parent channel id of a thread")
    p.add_argument("--nsfw", action="store_true", help="an NSFW Discord channel")
    p.add_argument("--as-is", action="store_true", help="the session's own platform again")


def _jobs_run(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("job", metavar="ID", help="a job of cron.toml, or heartbeat")


def _mcp(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("server", metavar="SERVER", nargs="?", help="one server (default: every server)")


def _mcp_log(p: argparse.ArgumentParser, surface: str) -> None:
    _mcp(p, surface)
    p.add_argument("--limit", metavar="N", type=_LIMIT, default=50, help="the newest N exchanges (default 50)")
    p.add_argument("--export", metavar="FILE", help="write the exchanges to FILE as JSON lines instead")


def _mcp_mock(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="an agent directory (with --turn N), or a wire log exported by %%cireil mcp log --export",
    )
    p.add_argument("--turn", metavar="N", type=_TURN, help="the recorded turn whose MCP traffic to serve")
    p.add_argument("--server", metavar="NAME", help="serve only this recorded server")
    p.add_argument("--port", metavar="N", type=_port, default=0, help="the port to listen on (default: a free one)")
    p.add_argument(
        "--host",
        metavar="HOST",
        default="127.0.0.1",
        help="the address to bind (default 127.0.0.1; any other is reachable by others: a warning is printed)",
    )


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _eval(p: argparse.ArgumentParser, surface: str) -> None:
    from .runtime.evals.options import add_eval_arguments

    if surface == MAGIC:
        p.add_argument("--agent", metavar="DIR", help="another agent directory (default: the loaded agent)")
    add_eval_arguments(p, agent=surface == CLI, required=surface == CLI)


def _eval_compare(p: argparse.ArgumentParser, surface: str) -> None:
    from .runtime.evals.options import add_compare_arguments

    add_compare_arguments(p)


def _eval_show(p: argparse.ArgumentParser, surface: str) -> None:
    from .runtime.evals.options import add_show_arguments

    add_show_arguments(p)


def _help(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("command", metavar="SUBCOMMAND", nargs="*", help="one subcommand's usage and options")


def _dir(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="DIR")


def _proxy(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="AGENT_DIR")
    p.add_argument("--port", metavar="N", type=_port, default=0, help="the port to listen on (default: a free one)")


def _attach_cli(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="AGENT_DIR")
    p.add_argument("--port", metavar="N", type=_port, default=0, help="the proxy's port when it starts (default: free)")
    p.add_argument("--status", action="store_true", help="only say whether AGENT_DIR is attached, since when")


def _detach(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="AGENT_DIR")
    p.add_argument(
        "--force", action="store_true", help="restore even if engine.toml was edited while attached (edit kept aside)"
    )


def _reconstruct(p: argparse.ArgumentParser, surface: str) -> None:
    if surface == CLI:  # the magic works on the loaded agent
        p.add_argument("dir", metavar="AGENT_DIR")
    p.add_argument(
        "--session", metavar="ID", help="only this sessions.db session (default: every Discord, internal, tui)"
    )
    p.add_argument(
        "--since", metavar="ISO", help="only turns whose user message is this recent (ISO 8601; no offset: UTC)"
    )


def _recordings(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("--session", metavar="NAME", help="only this session's turns")
    p.add_argument("--production", action="store_true", help="only the turns recorded from the running original")
    p.add_argument("--limit", metavar="N", type=_LIMIT, default=30, help="the newest N turns (default 30)")


def _watch(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("--timeout", metavar="S", type=float, default=None, help="stop after S seconds (default: interrupt)")


def _init(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--adopt",
        action="store_true",
        help="DIR is an existing runtime root (or an agent in one): only write its config/migrations.json, which "
        "the original's own init does not",
    )


def _call(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("dir", metavar="DIR")
    p.add_argument("tool", metavar="TOOL")
    # REMAINDER: the words after TOOL are the tool's, even those that look like options (`exec ls -la`)
    p.add_argument(
        "arguments",
        metavar="ARGS",
        nargs=argparse.REMAINDER,
        help="the arguments as the %%cireil_<tool> magic takes them: a JSON object, key=value words, and one bare "
        "word for the tool's main argument (`read /workspace/notes.md`); - reads a JSON object from stdin",
    )


def _agent_cell(p: argparse.ArgumentParser, surface: str) -> None:
    p.add_argument("--session", metavar="NAME", help="switch to (or start) this session first")
    p.add_argument("--attach", metavar="PATH", action="append", default=[], help="a file to send along (repeatable)")
    _model_options(p)
    p.add_argument(
        "--step",
        action="store_true",
        help="pause before each tool call with Approve / Edit arguments / Skip / Mock result buttons",
    )


BOTH = (MAGIC, CLI)

# in the order `%cireil help` lists them, then the shell's own
COMMANDS: tuple[Command, ...] = (
    Command(
        "load",
        "load an agent directory (or a fresh copy of the bundled demo agent)",
        _load,
        forms=(
            ("load DIR [--tools VAR]", "load the agent directory DIR; VAR names a list of cireil.Tool to add"),
            ("load --demo [--tools VAR]", "load a fresh copy of the bundled demo agent"),
        ),
    ),
    Command(
        "tools",
        "the enabled tools and what they do (a notebook adds magic, origin and tokens per request)",
        _tools,
        BOTH,
        forms=(
            (
                "tools [--lint [--builtins]]",
                "the enabled tools: magic, origin, tokens per request, description; --lint checks the definitions",
            ),
            (
                "tools --diff-original",
                "how the tool definitions differ from the original CireilClaw's, each with its spec rule",
            ),
        ),
    ),
    Command(
        "dry-run",
        "validate the configuration: every problem as FILE:LINE: message, the enabled tools, then the lint of the "
        "agent's own, plugin and MCP tool definitions",
        _dry_run,
        BOTH,
    ),
    Command("restart", "re-read the whole configuration, as a fresh load would"),
    Command("ui", "a form per enabled tool (or for TOOL): fill it in, press Run", _ui),
    Command("context", "what the agent sees of its opened files and pinned sections"),
    Command(
        "prompt",
        "the next request: prompt, messages, tools, headers, body",
        _prompt,
        forms=(
            (
                "prompt [--session NAME] [--model MODEL] [--provider NAME]",
                "the next request: prompt, messages, tools, headers, body",
            ),
            ("prompt --diff [--session NAME]", "what the next request changes against the last one sent (recorded)"),
        ),
    ),
    Command("usage", "recorded turns: tokens, time, cost (prices in config/cireil.toml)", _usage),
    Command(
        "replay",
        "re-run a recorded turn offline (recorded replies, real tools on a copy); diffs marked",
        _replay,
    ),
    Command("fork", "continue a recorded turn from STEP in a new session; the turn renders live", _fork),
    Command("export test", "a recorded turn as a pytest file: same tool calls, same results", _export_test),
    Command("export notebook", "a session's recorded turns as a notebook that replays them offline", _export_notebook),
    Command(
        "recordings",
        "recorded turns, notebook and production (from the running original, via cireil proxy) side by side",
        _recordings,
    ),
    Command(
        "watch",
        "production turns (the running original's, via cireil attach) shown live as they run; interrupt stops",
        _watch,
    ),
    Command("stop", "end the live %%cireil_agent --step turn, storing nothing of it (as its Stop button does)"),
    Command(
        "steps", "a recorded turn's model calls, each with its exact request and a diff against the one before", _turn
    ),
    Command(
        "session",
        "the session calls and turns belong to; NAME switches to (or starts) another",
        _session,
        forms=(
            ("session [NAME]", "the session calls and turns belong to; NAME switches to (or starts) another"),
            (
                "session --grant T1,T2|all",
                "limit the session to these tools (turns are offered only those; calls refused)",
            ),
            (
                "session [NAME] --channel discord --guild ID [--channel-id ID] [--parent ID] [--nsfw]",
                "what config/conditions.toml rules see of the session (--as-is: its own platform again)",
            ),
        ),
    ),
    Command("sessions", "the agent's persisted sessions, most recently active first"),
    Command("models", "each provider's models and context windows (availableModels, or asked of the provider)"),
    Command("jobs", "cron.toml's jobs and the heartbeat with their next run"),
    Command("jobs run", "run one job (or the heartbeat) now", _jobs_run),
    Command("attach", "an upload button: the files go with your next %%cireil_agent message"),
    Command("mcp", "each MCP server: URL, revision, session, capabilities, errors, a Reconnect button", _mcp),
    Command("mcp log", "the recent MCP wire exchanges (secrets masked); JSON lines with --export", _mcp_log),
    Command(
        "eval",
        "run scenario evals: which tools the model calls, how reliably (a notebook shows a live grid)",
        _eval,
        BOTH,
    ),
    Command("help", "this list; with SUBCOMMAND, its usage and options", _help),
    # the shell's own
    Command(
        "init",
        "create a working agent (the demo) in DIR, which must be new or empty; --adopt: give the existing runtime "
        "root DIR its config/migrations.json",
        _init,
        (CLI,),
        forms=(
            ("init DIR", "create a working agent (the demo) in DIR, which must be new or empty"),
            (
                "init --adopt DIR",
                "write config/migrations.json (every migration of the original marked applied) for the existing "
                "runtime root DIR, or the root of the agent DIR; nothing else is touched",
            ),
        ),
    ),
    Command("call", "run one tool as the agent would and print its result as JSON", _call, (CLI,)),
    Command(
        "proxy",
        "forward the running original's model calls to its provider, recording each as a turn (until Ctrl-C)",
        _proxy,
        (CLI,),
    ),
    Command(
        "attach",
        "point the running original's engine.toml at the recording proxy (started if needed); --status: is it",
        _attach_cli,
        (CLI,),
    ),
    Command("detach", "restore engine.toml byte for byte and stop the proxy", _detach, (CLI,)),
    Command(
        "reconstruct",
        "record the turns the original ran before attaching, rebuilt from sessions.db (marked reconstructed)",
        _reconstruct,
        BOTH,
    ),
    Command(
        "migrate",
        "update tools.toml (str-replace -> edit) and engine.toml (old [providers.X] -> [X]), keeping backups "
        "in the runtime root's config/backups/",
        _dir,
        (CLI,),
    ),
    Command(
        "mcp mock",
        "serve a recorded turn's MCP traffic as a Streamable HTTP MCP server until Ctrl-C",
        _mcp_mock,
        (CLI,),
    ),
    Command(
        "eval-compare",
        "compare two eval results (--json): what got worse, what better",
        _eval_compare,
        (CLI,),
    ),
    Command(
        "eval-show",
        "open a failed run of an eval result (--json): its checks and recorded turn",
        _eval_show,
        (CLI,),
    ),
)

AGENT_CELL = Command(
    "",
    "the cell is a message to the agent; its turn renders live",
    _agent_cell,
    prog="%%cireil_agent",
)

HELP_FOOTER = (
    "Each enabled tool is a magic %cireil_<tool> ('-' becomes '_'); arguments as",
    '  a JSON object          %cireil_write {"path": "/workspace/a.txt", "content": "hi"}',
    "  key=value pairs        %cireil_write path=/workspace/a.txt content=hi",
    "  a bare main argument   %cireil_list_dir /workspace",
    "Tools with a body (write content, ...) also have a cell form: %%cireil_write /workspace/a.txt",
    "%cireil_<tool>? shows a tool's parameters.",
)


def magic_commands() -> list[Command]:
    return [c for c in COMMANDS if MAGIC in c.surfaces]


def cli_commands() -> list[Command]:
    return [c for c in COMMANDS if CLI in c.surfaces]


# -- parsers and usage -------------------------------------------------------------------------------------


def _metavar(action: argparse.Action) -> str:
    return str(action.metavar or action.dest.upper())


def _option(action: argparse.Action) -> str:
    name = action.option_strings[-1]
    if action.nargs == 0:
        return name
    return f"{name} {_metavar(action)}" + (" ..." if isinstance(action, argparse._AppendAction) else "")


def _positional(action: argparse.Action) -> str:
    name = _metavar(action)
    return {"?": f"[{name}]", "*": f"[{name} ...]", "+": f"{name} [{name} ...]"}.get(str(action.nargs), name)


def generated_usage(parser: argparse.ArgumentParser, prog: str) -> str:
    """argparse's usage with the positionals first, as cireil's docs write commands (`session [NAME] --grant`).
    argparse keeps its actions and exclusive groups in private lists; they have been stable since 3.2."""
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    parts = [_positional(a) for a in actions if not a.option_strings]
    done: set[int] = set()
    for action in actions:
        if not action.option_strings or id(action) in done:
            continue
        group = groups.get(id(action))
        members = group._group_actions if group is not None else [action]
        done.update(id(a) for a in members)
        text = " | ".join(_option(a) for a in members)
        parts.append(text if action.required else f"[{text}]")
    return " ".join([prog, *parts])


def usage_forms(command: Command) -> list[str]:
    """The usage lines of a command, `%cireil ...` spelled out."""
    if command.forms:
        return [f"{command.prog} {form}" for form, _ in command.forms]
    return [generated_usage(magic_parser(command), f"{command.prog} {command.words}".strip())]


def magic_parser(command: Command) -> _MagicParser:
    prog = f"{command.prog} {command.words}".strip()
    parser = _MagicParser(prog=prog, description=command.summary, add_help=False, allow_abbrev=False)
    command.arguments(parser, MAGIC)
    if command.forms:
        parser.set_usage("  or  ".join(f"{command.prog} {form}" for form, _ in command.forms))
    else:
        parser.set_usage(generated_usage(parser, prog))
    return parser


def family_usage(family: str) -> str:
    """The usage of every command starting with `family` ("mcp": mcp and mcp log), for an error to quote."""
    return "  or  ".join(u for c in magic_commands() if c.family == family for u in usage_forms(c))


def find(words: Sequence[str]) -> tuple[Command, list[str]]:
    """The %cireil command `words` start with, and the words after its name."""
    table = {c.words: c for c in magic_commands()}
    if len(words) >= 2 and f"{words[0]} {words[1]}" in table:
        return table[f"{words[0]} {words[1]}"], list(words[2:])
    if words[0] in table:
        return table[words[0]], list(words[1:])
    families = {c.family for c in table.values()}
    if words[0] in families:  # a family with no bare form (export): which second words there are
        return _raise(f"usage: {family_usage(words[0])}")
    from .runtime.base.didyoumean import suggestion

    return _raise(f"unknown subcommand '{words[0]}'{suggestion(words[0], sorted(families))}; `%cireil help` lists them")


def _raise(message: str) -> tuple[Command, list[str]]:
    raise CommandUsage(message)


def parse(command: Command, args: Sequence[str]) -> argparse.Namespace:
    """The words after the command's name as a Namespace; an error quotes the usage of the whole family
    (`%cireil jobs x` shows `jobs` and `jobs run`)."""
    try:
        return magic_parser(command).parse_args(list(args))
    except CommandUsage as exc:
        if command.words and len(_family(command.family)) > 1:
            message = str(exc).rsplit("; usage: ", 1)[0]
            raise CommandUsage(f"{message}; usage: {family_usage(command.family)}") from None
        raise


def _family(family: str) -> list[Command]:
    return [c for c in magic_commands() if c.family == family]


# -- help ---------------------------------------------------------------------------------------------


def help_rows() -> list[tuple[str, str]]:
    """(usage, what) per line of `%cireil help`, without the `%cireil ` in front."""
    rows: list[tuple[str, str]] = []
    for command in magic_commands():
        if command.forms:
            rows += list(command.forms)
        else:
            rows.append((usage_forms(command)[0].removeprefix(f"{PROG} "), command.summary))
    return rows


def help_footer() -> list[str]:
    return [*HELP_FOOTER, usage_forms(AGENT_CELL)[0], f"  {AGENT_CELL.summary}"]


def command_help(words: Sequence[str]) -> str:
    """`%cireil help SUB`: argparse's full help of SUB (of each of its family when SUB names one)."""
    name = " ".join(words)
    if name in ("%%cireil_agent", "cireil_agent"):
        return _full_help(AGENT_CELL)
    found = [c for c in magic_commands() if c.words == name] or _family(name)
    if not found:
        find(list(words))  # the did-you-mean error
        raise CommandUsage(f"unknown subcommand {name!r}; `%cireil help` lists them")
    return "\n\n".join(_full_help(c) for c in found)


def _full_help(command: Command) -> str:
    parser = magic_parser(command)
    parser.set_usage("\n       ".join(usage_forms(command)))
    return parser.format_help().rstrip()


WIDE = 72  # characters of usage in the column of `%cireil help`; a longer one sits above its description


def help_text() -> str:
    """The whole of `%cireil help` as text: also the docstring `%cireil?` shows."""
    return format_help(help_rows(), help_footer())


def format_help(rows: Sequence[tuple[str, str]], footer: Sequence[str]) -> str:
    width = max(len(usage) for usage, _ in rows if len(usage) <= WIDE)
    lines = ["%cireil subcommands:"]
    for usage, what in rows:  # a usage too wide for the column gets a line of its own
        if len(usage) > WIDE:
            lines += [f"  %cireil {usage}", f"  {'':<{width + 8}}  {what}"]
        else:
            lines.append(f"  %cireil {usage:<{width}}  {what}")
    return "\n".join([*lines, "", *footer, "", "%cireil help SUBCOMMAND shows one subcommand's options."])


def magic_doc() -> str:
    return "%cireil SUBCOMMAND [ARGS]: load an agent and inspect it.\n\n" + help_text()


def add_cli_command(
    sub: argparse._SubParsersAction,
    command: Command,
    handler: Callable[[argparse.Namespace], int],
    name: str | None = None,
) -> argparse.ArgumentParser:
    """The shell's parser for `command`: the same summary and, for the CLI surface, its options. `name` is the
    word it is added under when `sub` is its family's (mcp mock: "mock" under the `mcp` parser)."""
    summary = command.summary.replace("%", "%%")  # argparse %-formats help strings
    parser = sub.add_parser(name or command.words, help=summary, description=summary)
    command.arguments(parser, CLI)
    parser.set_defaults(handler=handler)
    return parser
