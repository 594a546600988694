"""`%cireil SUBCOMMAND ...`: load an agent and look at it. One method per subcommand.

The controller also owns the agent of the shell and its tool magics (tools.py), and re-syncs
them after every subcommand, since each may have changed the enabled tools.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from ...runtime.base.errors import CireilError
from ..views.panels import CommandHelp, DryRunView, HelpText, SessionCard
from .liveturns import stop_all, stop_step_turn
from .toolargs import tokenize
from .tools import ToolMagics

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.toolkit.tool import Tool


class CireilMagics:
    """The state of the extension in one shell: the loaded agent, its magics, the subcommands."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.agent: Agent | None = None
        self.tool_magics = ToolMagics(shell, lambda: self.agent)
        # one handler per command of commands.py (a test checks none is missing); each gets the parsed options
        self._handlers: dict[str, Callable[[Namespace], None]] = {
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
            "jobs run": self.jobs_run,
            "prompt": self.prompt,
            "usage": self.usage,
            "recordings": self.recordings,
            "watch": self.watch,
            "reconstruct": self.reconstruct,
            "steps": self.steps,
            "stop": self.stop,
            "replay": self.replay,
            "export test": self.export_test,
            "export notebook": self.export_notebook,
            "fork": self.fork,
            "attach": self.attach,
            "mcp": self.mcp,
            "mcp log": self.mcp_log,
            "eval": self.eval,
            "help": self.help,
        }

    # -- the %cireil magic --------------------------------------------------------------------
    def __call__(self, line: str) -> None:
        """%cireil SUBCOMMAND [ARGS]: load an agent and inspect it; `%cireil help` lists the subcommands."""
        from ... import commands  # the declarations load with the first subcommand, not at %load_ext

        words = [t.text for t in tokenize(line)]
        if words[:1] == ["--help"]:
            words = ["help", *words[1:]]
        if not words:
            self.help(Namespace(command=[]))
            return
        try:
            command, rest = commands.find(words)
            if "--help" in rest:  # `%cireil load --help`: the same as `%cireil help load`
                rest = command.words.split()
                command = commands.find(["help"])[0]
            options = commands.parse(command, rest)
        except commands.CommandUsage as exc:
            raise UsageError(str(exc)) from None
        if self.agent is not None and command.words not in ("load", "help"):
            from .agent import show_background

            show_background(self.agent)  # what scheduled and invoked turns said since the last look
        try:
            self._handlers[command.words](options)
        except CireilError as exc:
            raise UsageError(str(exc)) from None
        finally:
            self.tool_magics.sync_quietly()

    def pre_run_cell(self, info: Any = None) -> None:
        """Before every cell: follow tools.toml edits so the cell sees the current magics."""
        if self.agent is not None:
            self.tool_magics.sync_quietly()

    def close(self) -> None:
        from .agent import STAGED

        STAGED.pop(id(self.shell), None)
        self.tool_magics.clear()
        if self.agent is not None:
            stop_all(self.agent)
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
    def load(self, o: Namespace) -> None:
        from ... import commands

        if o.demo == (o.dir is not None):
            raise UsageError(f"usage: {commands.family_usage('load')}")
        extra = self._user_tools(o.tools) if o.tools else []
        directory = self._demo_copy() if o.demo else o.dir
        from ...runtime.agent import Agent

        try:
            agent = Agent.load(directory, tools=extra)
        except ValueError as exc:  # two Python tools with one name, or one named like a built-in
            raise UsageError(f"--tools {o.tools}: {exc}") from None
        if self.agent is not None:
            stop_all(self.agent)
            self.agent.close()
        self.agent = agent
        self.tool_magics.sync()
        self._print_loaded(agent)

    def tools(self, o: Namespace) -> None:
        agent = self._fresh_agent()
        self.tool_magics.sync()
        from ..views.toolcosts import show_original_diff, show_tools

        if o.diff_original:
            show_original_diff(agent)
            return
        show_tools(agent, dict(self.tool_magics.refused), lint=o.lint, builtins=o.builtins)

    def dry_run(self, o: Namespace) -> None:
        if o.dir is not None:
            from ...runtime.agent import dry_run

            report = dry_run(o.dir)
        else:
            report = self.require_agent().dry_run()
        display(DryRunView(report, builtins=o.builtins))

    def restart(self, o: Namespace) -> None:
        agent = self.require_agent()
        agent.restart()
        self.tool_magics.sync()
        self._print_loaded(agent, verb="restarted")

    def ui(self, o: Namespace) -> None:
        agent = self._fresh_agent()
        from ..forms.toolform import palette, tool_form  # ipywidgets loads only when a form is shown

        display(tool_form(agent, agent.tool(o.tool).name) if o.tool else palette(agent))

    def session(self, o: Namespace) -> None:
        from .conditions import rule_options

        acting = rule_options(o)
        agent = self.require_agent()
        if o.name is not None:
            from ...runtime.sessions.store import SessionError

            try:
                agent.use_session(o.name)
            except SessionError as exc:  # a row of sessions.db cireil cannot read: one line, nothing changed
                raise UsageError(str(exc)) from None
        self._act_as(agent, acting)
        if o.grant is not None:
            clear = o.grant == "all"
            try:
                agent.grant(None if clear else [n.strip() for n in o.grant.split(",") if n.strip()])
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        store = agent.store
        read_only = store.read_only_reason(agent.session) if store else None
        display(SessionCard(agent.slug, agent.session, agent.grant_text(), read_only))
        self._show_rules(agent)

    def sessions(self, o: Namespace) -> None:
        from .agent import show_sessions

        show_sessions(self.require_agent())

    def models(self, o: Namespace) -> None:
        from .models import show_models

        show_models(self.require_agent())

    def jobs(self, o: Namespace) -> None:
        from .jobs import jobs_command

        jobs_command(self.require_agent())

    def jobs_run(self, o: Namespace) -> None:
        from .jobs import jobs_command

        jobs_command(self.require_agent(), o.job)

    def prompt(self, o: Namespace) -> None:
        from .agent import show_prompt

        agent = self._fresh_agent()
        show_prompt(agent, o)
        self._show_rules(agent, o.session)

    def usage(self, o: Namespace) -> None:
        from .agent import show_usage

        show_usage(self.require_agent(), o)

    def recordings(self, o: Namespace) -> None:
        from ...runtime.attach.listing import table

        agent = self.require_agent()
        if agent.recording.store is None:
            print(agent.recording.problem or "turn recording is off")
            return
        print(table(agent.turns(o.session or "*"), production=o.production, limit=o.limit))

    def reconstruct(self, o: Namespace) -> None:
        agent = self.require_agent()
        if agent.recording.store is None:
            print(agent.recording.problem or "turn recording is off")
            return
        try:  # sessions.db is only read; the turns go to the agent's cireil-recordings.db
            done = agent.reconstruct(session=o.session, since=o.since)
        except ValueError as exc:
            raise UsageError(f"nothing reconstructed: {exc}") from None
        print("\n".join(done.lines()))

    def watch(self, o: Namespace) -> None:
        from .watch import watch

        watch(self.require_agent(), o)

    def steps(self, o: Namespace) -> None:
        from .agent import show_steps

        show_steps(self.require_agent(), o.turn)

    def stop(self, o: Namespace) -> None:
        stop_step_turn(self.require_agent())

    def replay(self, o: Namespace) -> None:
        from .agent import run_replay

        run_replay(self.require_agent(), o)

    def fork(self, o: Namespace) -> None:
        from .agent import run_fork

        run_fork(self.require_agent(), o)

    def export_test(self, o: Namespace) -> None:
        from .agent import export_test

        export_test(self.require_agent(), o)

    def export_notebook(self, o: Namespace) -> None:
        from .agent import export_notebook

        export_notebook(self.require_agent(), o)

    def attach(self, o: Namespace) -> None:
        self.require_agent()
        from .agent import attach_widget

        display(attach_widget(id(self.shell)))

    def mcp(self, o: Namespace) -> None:
        from .mcp import show_servers

        show_servers(self.require_agent(), o.server)

    def mcp_log(self, o: Namespace) -> None:
        from .mcp import show_log

        show_log(self.require_agent(), o)

    def agent_cell(self, line: str, cell: str | None = None) -> None:
        """%%cireil_agent [--session NAME] [--attach PATH] [--step]: the cell is a message to the agent; its turn
        shows live (--step: it pauses before each tool call for Approve / Edit arguments / Skip / Mock result)."""
        from .agent import run_agent_cell
        from .enginehelp import engine_help

        agent = self.require_agent()
        try:
            run_agent_cell(agent, line, cell, id(self.shell))
        except CireilError as exc:
            raise UsageError(str(exc) + engine_help(agent, exc)) from None
        finally:
            self.tool_magics.sync_quietly()

    def context(self, o: Namespace) -> None:
        display(self.require_agent().context())
        self._show_rules(self.require_agent())

    def eval(self, o: Namespace) -> None:
        from .evals import run_eval_magic  # the evals package loads only now, never at %load_ext

        run_eval_magic(self.agent.directory if self.agent is not None else None, o)

    def help(self, o: Namespace) -> None:
        from ... import commands

        if o.command:
            try:
                display(CommandHelp(commands.command_help(o.command)))
            except commands.CommandUsage as exc:
                raise UsageError(str(exc)) from None
            return
        display(HelpText(commands.help_rows(), commands.help_footer()))

    # -- conditions.toml (magics/conditions.py) ---------------------------------------------------
    @staticmethod
    def _act_as(agent: Agent, acting: Any) -> None:
        """Apply --channel/--guild/... to the (new) current session."""
        from .conditions import apply_rule_options

        apply_rule_options(agent, acting)

    @staticmethod
    def _show_rules(agent: Agent, session_name: str | None = None) -> None:
        from .conditions import conditions_view

        session = agent.session_for(agent.session_id(session_name)) if session_name else agent.session
        view = conditions_view(agent, session)
        if view is not None:
            display(view)

    # -- helpers --------------------------------------------------------------------------------
    def _user_tools(self, name: str) -> list[Tool]:
        from ...runtime.toolkit.tool import Tool

        if name not in self.shell.user_ns:
            raise UsageError(f"--tools: no variable '{name}' in the notebook's namespace")
        value = self.shell.user_ns[name]
        tools = [value] if isinstance(value, Tool) else value
        if not isinstance(tools, (list, tuple)) or not all(isinstance(t, Tool) for t in tools):
            raise UsageError(f"--tools: '{name}' must be a cireil.Tool or a list of them")
        return list(tools)

    @staticmethod
    def _demo_copy() -> str:
        from ...runtime.scaffold import copy_demo

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
