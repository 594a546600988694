"""`%cireil SUBCOMMAND ...`: load an agent and look at it. One method per subcommand.

The controller also owns the agent of the shell and its tool magics (toolmagics.py), and re-syncs
them after every subcommand, since each may have changed the enabled tools.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from ..runtime.errors import CireilError
from .toolargs import tokenize
from .toolmagics import ToolMagics
from .views import DryRunView, HelpText, SessionCard

if TYPE_CHECKING:
    from ..runtime.agent import Agent
    from ..runtime.tool import Tool

# (usage, what it does), in the order `%cireil help` lists them: only what works in this version
HELP = [
    ("load DIR [--tools VAR]", "load the agent directory DIR; VAR names a list of cireil.Tool to add"),
    ("load --demo [--tools VAR]", "load a fresh copy of the bundled demo agent"),
    ("tools [--lint]", "the enabled tools: magic, origin, tokens per request, description; --lint checks definitions"),
    ("dry-run [DIR]", "validate the configuration: every problem as FILE:LINE: message"),
    ("restart", "re-read the whole configuration, as a fresh load would"),
    ("ui [TOOL]", "a form per enabled tool (or for TOOL): fill it in, press Run"),
    ("context", "what the agent sees of its opened files and pinned sections"),
    ("prompt [--session NAME] [--model M] [--provider P]", "the next request: prompt, messages, tools, headers, body"),
    ("prompt --diff [--session NAME]", "what the next request changes against the last one sent (recorded)"),
    ("usage [--session NAME | --all]", "recorded turns: tokens, time, cost (prices in config/cireil.toml)"),
    (
        "replay [TURN] [--in-place]",
        "re-run a recorded turn offline (recorded replies, real tools on a copy); diffs marked",
    ),
    ("fork TURN STEP [--args JSON|--result JSON] [--live]", "continue a recorded turn from STEP in a new session"),
    ("export test TURN PATH.py [--fields F,TOOL.F]", "a recorded turn as a pytest file: same tool calls, results"),
    ("export notebook SESSION PATH.ipynb", "a session's recorded turns as a notebook that replays them offline"),
    ("stop", "end the live %%cireil_agent --step turn at its last complete step (as its Stop button does)"),
    ("steps [TURN]", "a recorded turn's model calls, each with its exact request and a diff against the one before"),
    ("session [NAME]", "the session calls and turns belong to; NAME switches to (or starts) another"),
    ("session --grant T1,T2|all", "limit the session to these tools (turns are offered only those; calls refused)"),
    (
        "session [NAME] --channel discord --guild ID [--nsfw]",
        "what config/conditions.toml rules see of the session (--as-is: its own platform again)",
    ),
    ("sessions", "the agent's persisted sessions, most recently active first"),
    ("models", "each provider's models and context windows (availableModels, or asked of the provider)"),
    ("jobs [run ID]", "cron.toml's jobs and the heartbeat with their next run; run ID runs one now"),
    ("attach", "an upload button: the files go with your next %%cireil_agent message"),
    ("mcp [SERVER]", "each MCP server: URL, revision, session, capabilities, errors, a Reconnect button"),
    ("mcp log [SERVER] [--limit N] [--export FILE]", "the recent MCP wire exchanges (secrets masked); JSON lines"),
    ("eval [SCENARIOS ...] [--variant NAME] [--repeat N] [--jobs N]", "scenario evals: a live grid of pass rates"),
    ("help", "this list"),
]
HELP_FOOTER = [
    "Each enabled tool is a magic %cireil_<tool> ('-' becomes '_'); arguments as",
    '  a JSON object          %cireil_write {"path": "/workspace/a.txt", "content": "hi"}',
    "  key=value pairs        %cireil_write path=/workspace/a.txt content=hi",
    "  a bare main argument   %cireil_list_dir /workspace",
    "Tools with a body (write content, ...) also have a cell form: %%cireil_write /workspace/a.txt",
    "%cireil_<tool>? shows a tool's parameters.",
    "%%cireil_agent [--session NAME] [--attach PATH ...] [--model MODEL] [--provider NAME] [--step]",
    "  the cell is a message to the agent; its turn renders live",
    "  --step: pause before each tool call with Approve / Edit arguments / Skip / Mock result buttons",
]


def _no_args(args: list[str], usage: str) -> None:
    if args:
        raise UsageError(f"unexpected argument {args[0]!r}; usage: %cireil {usage}")


def _stop_step_turn(agent: Agent) -> None:
    """A live step-mode turn ends before its agent closes (it would otherwise wait on a closed agent)."""
    from .agentmagics import live_step_turn

    if live_step_turn(agent) is not None:
        from .stepmode import stop_all

        stop_all(agent)


class CireilMagics:
    """The state of the extension in one shell: the loaded agent, its magics, the subcommands."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.agent: Agent | None = None
        self.tool_magics = ToolMagics(shell, lambda: self.agent)
        self._subcommands: dict[str, Callable[[list[str]], None]] = {
            "load": self.load,
            "tools": self.tools,
            "dry-run": self.dry_run,
            "restart": self.restart,
            "ui": self.ui,
            "context": self.context,
            "session": self.session,
            "sessions": self.sessions,
            "models": self.models,
            "jobs": self.jobs,
            "prompt": self.prompt,
            "usage": self.usage,
            "steps": self.steps,
            "stop": self.stop,
            "replay": self.replay,
            "export": self.export,
            "fork": self.fork,
            "attach": self.attach,
            "mcp": self.mcp,
            "eval": self.eval,
            "help": self.help,
        }

    # -- the %cireil magic --------------------------------------------------------------------
    def __call__(self, line: str) -> None:
        """%cireil SUBCOMMAND [ARGS]: load an agent and inspect it; `%cireil help` lists the subcommands."""
        words = [t.text for t in tokenize(line)]
        if not words:
            self.help([])
            return
        name, args = words[0], words[1:]
        handler = self._subcommands.get(name)
        if handler is None:
            import difflib  # only for a mistyped subcommand: not imported at load

            close = difflib.get_close_matches(name, self._subcommands, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise UsageError(f"unknown subcommand '{name}'{hint}; `%cireil help` lists them")
        if self.agent is not None and name not in ("load", "help"):
            from .agentmagics import show_background

            show_background(self.agent)  # what scheduled and invoked turns said since the last look
        try:
            handler(args)
        except CireilError as exc:
            raise UsageError(str(exc)) from None
        finally:
            self.tool_magics.sync_quietly()

    def pre_run_cell(self, info: Any = None) -> None:
        """Before every cell: follow tools.toml edits so the cell sees the current magics."""
        if self.agent is not None:
            self.tool_magics.sync_quietly()

    def close(self) -> None:
        from .agentmagics import STAGED

        STAGED.pop(id(self.shell), None)
        self.tool_magics.clear()
        if self.agent is not None:
            _stop_step_turn(self.agent)
            self.agent.close()
            self.agent = None

    def require_agent(self) -> Agent:
        if self.agent is None:
            raise UsageError("no agent is loaded: run `%cireil load DIR` (or `%cireil load --demo`) first")
        return self.agent

    def _fresh_agent(self) -> Agent:
        """The agent with tools.toml re-read; a broken file is an error here rather than a stale view."""
        agent = self.require_agent()
        if not agent.refresh_quietly():  # quietly: change notices stay for the next call's result
            agent.refresh()  # raises the ConfigError, naming file and line
        return agent

    # -- subcommands --------------------------------------------------------------------------
    def load(self, args: list[str]) -> None:
        directory, demo, tools_var = None, False, None
        words = iter(args)
        for word in words:
            if word == "--demo":
                demo = True
            elif word == "--tools" or word.startswith("--tools="):
                tools_var = word.partition("=")[2] if "=" in word else next(words, "")
                if not tools_var or tools_var.startswith("-"):
                    raise UsageError("--tools needs the name of a variable holding a list of cireil.Tool")
            elif word.startswith("-"):
                raise UsageError(f"unknown option {word!r}; usage: %cireil load DIR|--demo [--tools VAR]")
            elif directory is not None:
                raise UsageError(f"one directory only (got {directory!r} and {word!r})")
            else:
                directory = word
        if demo == (directory is not None):
            raise UsageError("usage: %cireil load DIR [--tools VAR]  or  %cireil load --demo [--tools VAR]")
        extra = self._user_tools(tools_var) if tools_var else []
        if demo:
            directory = self._demo_copy()
        from ..runtime.agent import Agent

        try:
            agent = Agent.load(directory, tools=extra)
        except ValueError as exc:  # two Python tools with one name, or one named like a built-in
            raise UsageError(f"--tools {tools_var}: {exc}") from None
        if self.agent is not None:
            _stop_step_turn(self.agent)
            self.agent.close()
        self.agent = agent
        self.tool_magics.sync()
        self._print_loaded(agent)

    def tools(self, args: list[str]) -> None:
        lint = args == ["--lint"]
        if not lint:
            _no_args(args, "tools [--lint]")
        agent = self._fresh_agent()
        self.tool_magics.sync()
        from .toolcosts import show_tools

        show_tools(agent, dict(self.tool_magics.refused), lint=lint)

    def dry_run(self, args: list[str]) -> None:
        if len(args) > 1:
            raise UsageError("usage: %cireil dry-run [DIR]")
        if args:
            from ..runtime.agent import dry_run

            report = dry_run(args[0])
        else:
            report = self.require_agent().dry_run()
        display(DryRunView(report))

    def restart(self, args: list[str]) -> None:
        _no_args(args, "restart")
        agent = self.require_agent()
        agent.restart()
        self.tool_magics.sync()
        self._print_loaded(agent, verb="restarted")

    def ui(self, args: list[str]) -> None:
        if len(args) > 1:
            raise UsageError("usage: %cireil ui [TOOL]")
        agent = self._fresh_agent()
        from .forms import palette, tool_form  # ipywidgets loads only when a form is shown

        display(tool_form(agent, agent.tool(args[0]).name) if args else palette(agent))

    def session(self, args: list[str]) -> None:
        from .conditionsmagics import split_rule_options

        args, acting = split_rule_options(args)
        usage = "usage: %cireil session [NAME] [--grant TOOL,TOOL,... | --grant all] [--channel ... --guild ID ...]"
        grant: list[str] | None = None
        clear = False
        if "--grant" in args:
            at = args.index("--grant")
            if at + 1 >= len(args) or args[at + 1].startswith("--"):
                raise UsageError(f"--grant needs a comma-separated list of tools, or 'all'; {usage}")
            value = args[at + 1]
            args = args[:at] + args[at + 2 :]
            clear = value == "all"
            grant = [] if clear else [n.strip() for n in value.split(",") if n.strip()]
        if len(args) > 1 or any(a.startswith("--") for a in args):
            raise UsageError(usage)
        agent = self.require_agent()
        if args:
            from ..runtime.sessions.store import SessionError

            try:
                agent.use_session(args[0])
            except SessionError as exc:  # a row of sessions.db cireil cannot read: one line, nothing changed
                raise UsageError(str(exc)) from None
        self._act_as(agent, acting)
        if grant is not None:
            try:
                agent.grant(None if clear else grant)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        store = agent.store
        read_only = store.read_only_reason(agent.session) if store else None
        display(SessionCard(agent.slug, agent.session, agent.grant_text(), read_only))
        self._show_rules(agent, [])

    def sessions(self, args: list[str]) -> None:
        from .agentmagics import show_sessions

        show_sessions(self.require_agent(), args)

    def models(self, args: list[str]) -> None:
        from .modelsmagics import show_models

        show_models(self.require_agent(), args)

    def jobs(self, args: list[str]) -> None:
        from .jobsmagics import jobs_command

        jobs_command(self.require_agent(), args)

    def prompt(self, args: list[str]) -> None:
        from .agentmagics import show_prompt

        agent = self._fresh_agent()
        show_prompt(agent, args)
        self._show_rules(agent, args)

    def usage(self, args: list[str]) -> None:
        from .agentmagics import show_usage

        show_usage(self.require_agent(), args)

    def steps(self, args: list[str]) -> None:
        from .agentmagics import show_steps

        show_steps(self.require_agent(), args)

    def stop(self, args: list[str]) -> None:
        from .stepmode import stop_step_turn

        stop_step_turn(self.require_agent(), args)

    def replay(self, args: list[str]) -> None:
        from .agentmagics import run_replay

        run_replay(self.require_agent(), args)

    def fork(self, args: list[str]) -> None:
        from .agentmagics import run_fork

        run_fork(self.require_agent(), args)

    def export(self, args: list[str]) -> None:
        from .agentmagics import export_turn

        export_turn(self.require_agent(), args)

    def attach(self, args: list[str]) -> None:
        _no_args(args, "attach")
        self.require_agent()
        from .agentmagics import attach_widget

        display(attach_widget(id(self.shell)))

    def mcp(self, args: list[str]) -> None:
        from .mcpmagics import mcp_command

        mcp_command(self.require_agent(), args)

    def agent_cell(self, line: str, cell: str | None = None) -> None:
        """%%cireil_agent [--session NAME] [--attach PATH] [--step]: the cell is a message to the agent; its turn
        shows live (--step: it pauses before each tool call for Approve / Edit arguments / Skip / Mock result)."""
        from .agentmagics import engine_help, run_agent_cell

        agent = self.require_agent()
        try:
            run_agent_cell(agent, line, cell, id(self.shell))
        except CireilError as exc:
            raise UsageError(str(exc) + engine_help(agent, exc)) from None
        finally:
            self.tool_magics.sync_quietly()

    def context(self, args: list[str]) -> None:
        _no_args(args, "context")
        display(self.require_agent().context())
        self._show_rules(self.require_agent(), [])

    def eval(self, args: list[str]) -> None:
        from .evalview import run_eval_magic  # the evals package loads only now, never at %load_ext

        run_eval_magic(self.agent.directory if self.agent is not None else None, args)

    def help(self, args: list[str]) -> None:
        _no_args(args, "help")
        display(HelpText(HELP, HELP_FOOTER))

    # -- conditions.toml (conditionsmagics.py) ------------------------------------------------------
    @staticmethod
    def _act_as(agent: Agent, acting: Any) -> None:
        """Apply --channel/--guild/... to the (new) current session."""
        from .conditionsmagics import apply_rule_options

        apply_rule_options(agent, acting)

    @staticmethod
    def _show_rules(agent: Agent, args: list[str]) -> None:
        from .agentmagics import PROMPT_USAGE, parse_options
        from .conditionsmagics import conditions_view

        options = [a for a in args if a != "--diff"]  # prompt's one flag; the rest are its NAME options
        name = parse_options(options, ("session", "model", "provider"), PROMPT_USAGE).get("session")
        session = agent.session_for(agent.session_id(name)) if name else agent.session
        view = conditions_view(agent, session)
        if view is not None:
            display(view)

    # -- helpers --------------------------------------------------------------------------------
    def _user_tools(self, name: str) -> list[Tool]:
        from ..runtime.tool import Tool

        if name not in self.shell.user_ns:
            raise UsageError(f"--tools: no variable '{name}' in the notebook's namespace")
        value = self.shell.user_ns[name]
        tools = [value] if isinstance(value, Tool) else value
        if not isinstance(tools, (list, tuple)) or not all(isinstance(t, Tool) for t in tools):
            raise UsageError(f"--tools: '{name}' must be a cireil.Tool or a list of them")
        return list(tools)

    @staticmethod
    def _demo_copy() -> str:
        from ..runtime.scaffold import copy_demo

        return str(copy_demo())

    def _print_loaded(self, agent: Agent, verb: str = "loaded") -> None:
        registered = set(self.tool_magics.names)
        # the line form, as the README writes them; the tools that also take a cell body are named after
        shown = [f"%{t.magic_name}" if t.magic_name in registered else f"{t.name} (no magic)" for t in agent.tools]
        cells = [f"%%{t.magic_name}" for t in agent.tools if t.magic_name in registered and t.body_arg]
        print(f"cireil: {verb} agent '{agent.slug}' from {agent.directory}")
        print(f"tools: {'  '.join(shown) or 'none enabled'}")
        if cells:
            print(f"with a cell body too: {'  '.join(cells)}")
        for warning in agent.warnings:
            print(warning, file=sys.stderr)
