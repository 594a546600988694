"""Agent: one loaded agent directory, its validated configuration, and calls to its tools.

Every call is a turn: at its start the configuration files are checked (a small read each) and
re-read when they changed, so an edit to tools.toml applies to the next call while a call in
progress keeps the tool set it started with. A broken edit makes calls fail with the ConfigError
until the file is fixed; nothing has to be restarted.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .agent_config import (
    WATCHED,
    DryRunReport,
    Snapshot,
    check_extra,
    close_mcp,
    dry_run,
    fingerprint,
    read_config,
)
from .base.didyoumean import suggestion
from .base.errors import ConfigError, ConfigIssue, UnknownToolError
from .base.loop import RUNTIME, Submitted
from .config.mcp_config import MCP_FILE
from .config.tools_config import TOOLS_FILE
from .files import safefs
from .files.layout import AgentLayout
from .files.paths import SandboxPaths
from .mcp.inspect import McpInspection
from .sessions.state import Session, not_granted
from .toolkit import registry
from .toolkit.calllog import CallHistory, SavedCall
from .toolkit.conversation import Conversation
from .toolkit.result import ToolResult
from .toolkit.resultcap import RESULT_LIMIT
from .toolkit.tool import Progress, Tool, ToolContext, execute

if TYPE_CHECKING:
    from .attach.reconstruct import Reconstructed
    from .engine.engine import Engine, PreparedRequest
    from .engine.opened_files import OpenedFilesContext
    from .engine.toollint import Finding
    from .engine.turn import EventSink, TurnOutcome
    from .jobs.job_runner import JobRunner
    from .recorder.model import RecordedTurn
    from .recorder.recording import Recording
    from .recorder.replay import ReplayResult
    from .sessions.conditions import Conditions, RuleContext
    from .sessions.store import SessionStore

NOTEBOOK_SESSION = "notebook:main"


def _sweep_temp_files(layout: AgentLayout, snapshot: Snapshot) -> safefs.Sweep:
    """Remove what writes interrupted by a crash or kill -9 left behind (in the background)."""
    writable = [str(m.source) for m in snapshot.sandbox.mounts if not m.read_only]
    sweep = safefs.Sweep([str(layout.directory), *writable])
    sweep.start()
    return sweep


def _open_store(layout: AgentLayout, snapshot: Snapshot) -> SessionStore | None:
    """sessions.db beside the agent's files; an agent whose folder cannot hold it still runs its tools."""
    from .sessions.store import SessionStore

    try:
        store = SessionStore.for_agent(layout.directory)
    except Exception as exc:  # a read-only folder, a corrupt file: say so, keep the tools usable
        snapshot.warnings.append(
            ConfigIssue("sessions.db", None, f"cannot be opened, sessions are not kept: {exc}", severity="warning")
        )
        return None
    snapshot.warnings += [ConfigIssue("sessions.db", None, line, severity="warning") for line in store.load_notes()]
    return store


class Agent(McpInspection):
    """A loaded agent. Create with `cireil.load(path)`."""

    def __init__(
        self,
        layout: AgentLayout,
        snapshot: Snapshot,
        session: Session | str,
        extra_tools: dict[str, Tool],
        store: SessionStore | None = None,
    ) -> None:
        self.layout = layout
        self.extra_tools = extra_tools
        self.store = store
        self._sessions: dict[str, Session] = {}  # live sessions: one object per id, shared by every user
        self._engine: Engine | None = None
        self._jobs: JobRunner | None = None
        self._recording: Recording | None = None
        if isinstance(session, str):
            session = self._first_session(session)
        self._sessions[session.id] = session
        self.session = session
        self._snapshot = snapshot
        self._lock = threading.Lock()
        self._pending_notices: list[str] = []
        self.generation = 0  # bumped whenever the enabled tool set changes
        self.tool_state: dict[str, Any] = {}  # what tools keep between calls (edit's dry-run previews)
        self.call_history = CallHistory()  # calls a person made (magic, form, Python): forms refill from it
        # bytes of JSON one tool result may have in a turn; bigger ones are cut for the model, kept whole on disk
        self.result_limit: int = RESULT_LIMIT
        # session id -> what conditions.toml rules see of it, when a person chose it (%cireil session --guild ...)
        self._acting: dict[str, RuleContext] = {}
        self.closed = False
        self.sweep: safefs.Sweep | None = None  # the removal of stale temporary files started at load

    @classmethod
    def load(cls, path: str | Path, *, session: Session | str | None = None, tools: Iterable[Tool] = ()) -> Agent:
        extra = check_extra(tools)
        layout = AgentLayout.find(path)
        snapshot, issues = read_config(layout, extra_tools=extra)
        if snapshot is None:
            raise ConfigError(issues)
        store = _open_store(layout, snapshot)
        agent = cls(layout, snapshot, session or NOTEBOOK_SESSION, extra, store)
        agent.sweep = _sweep_temp_files(layout, snapshot)
        if store is not None and store.jobs():
            agent.engine.scheduler.start()  # past-due jobs run now, later ones are armed
        agent._start_cron_jobs()
        return agent

    def _start_cron_jobs(self) -> None:
        """cron.toml's jobs and heartbeat.toml's pulse run on the runtime loop once a file exists (re-read there)."""
        config = self.directory / "config"
        wanted = (config / "cron.toml").is_file() or (config / "heartbeat.toml").is_file()
        if not self.closed and wanted and not self.jobs.started:
            self.jobs.start()

    # -- identity -------------------------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return self.layout.directory

    @property
    def slug(self) -> str:
        return self.layout.slug

    @property
    def warnings(self) -> list[ConfigIssue]:
        return list(self._snapshot.warnings)

    def __repr__(self) -> str:
        return f"<cireil.Agent {self.slug!r} at {self.directory} tools={list(self._snapshot.tools)}>"

    # -- configuration --------------------------------------------------------------------------
    def refresh(self) -> list[str]:
        """Start-of-turn check: re-read changed config files. Returns notices; raises ConfigError."""
        with self._lock:
            old = self._snapshot
            current = {rel: fingerprint(self.directory, rel) for rel in old.fingerprints}
            notices = self._pending_notices
            self._pending_notices = []
            self._start_cron_jobs()  # a cron.toml written since the load
            if current[MCP_FILE] != old.fingerprints[MCP_FILE]:
                notices.append(
                    f"{MCP_FILE} changed: MCP servers are discovered at load; run "
                    "`%cireil restart` (or agent.restart()) to apply it"
                )
                old.fingerprints[MCP_FILE] = current[MCP_FILE]
            if all(current[rel] == old.fingerprints[rel] for rel in WATCHED):
                return notices
            snapshot, issues = read_config(
                self.layout,
                with_content=False,
                extra_tools=self.extra_tools,
                mcp_servers=old.mcp_servers,  # MCP definitions stay fixed until restart
                mcp=old.mcp,
            )
            if snapshot is None:
                self._pending_notices = notices
                raise ConfigError(issues)
            snapshot.fingerprints[MCP_FILE] = old.fingerprints[MCP_FILE]
            snapshot.warnings = old.warnings + [w for w in snapshot.warnings if w not in old.warnings]
            if list(snapshot.tools) != list(old.tools):
                self.generation += 1
                notices.append(f"{TOOLS_FILE} changed: enabled tools are now {', '.join(snapshot.tools) or 'none'}")
            self._snapshot = snapshot
            return notices

    def restart(self) -> None:
        """Re-read everything, as a fresh load would (re-discovers MCP servers)."""
        snapshot, issues = read_config(self.layout, extra_tools=self.extra_tools)
        if snapshot is None:
            raise ConfigError(issues)
        with self._lock:
            if list(snapshot.tools) != list(self._snapshot.tools):
                self.generation += 1
            old, self._snapshot = self._snapshot, snapshot
        close_mcp(old.mcp)

    def dry_run(self) -> DryRunReport:
        return dry_run(self.directory, tools=self.extra_tools.values())

    def lint(self) -> list[Finding]:
        """Definition lint of the enabled tools (engine/toollint.py): what model APIs reject, what models misread."""
        from .engine.toollint import lint_priced

        return lint_priced(self.tools)

    @property
    def tools(self) -> list[Tool]:
        """The enabled tools as of now (tools.toml is re-read if it changed)."""
        self.refresh_quietly()
        return list(self._snapshot.tools.values())

    def refresh_quietly(self) -> bool:
        """refresh() for places that only display; keeps notices for the next call. False if broken."""
        try:
            notices = self.refresh()
        except ConfigError:
            return False
        with self._lock:
            self._pending_notices = notices + self._pending_notices
        return True

    def tool(self, name: str) -> Tool:
        return self._lookup(self._snapshot, name)

    def _lookup(self, snapshot: Snapshot, name: str) -> Tool:
        tool = snapshot.tools.get(name) or snapshot.tools.get(name.replace("_", "-"))
        if tool is not None:
            return tool
        enabled = list(snapshot.tools)
        hint = suggestion(name, enabled)
        mcp_tools = snapshot.mcp.tools if snapshot.mcp else {}
        known = name in registry.BUILTIN_NAMES or name in self.extra_tools or name in mcp_tools
        state = "not enabled in config/tools.toml" if known else "unknown"
        raise UnknownToolError(
            f"tool '{name}' is {state} for agent '{self.slug}'{hint}; enabled: {', '.join(enabled) or 'none'}"
        )

    # -- calls ----------------------------------------------------------------------------------
    def _begin(self, name: str, arguments: Mapping[str, Any] | None, kwargs: dict) -> tuple:
        if self.closed:
            raise RuntimeError("this agent has been closed; load it again")
        args = dict(arguments or {})
        args.update(kwargs)
        notices = self.refresh()
        tool = self._lookup(self._snapshot, name)
        ctx = self.tool_context(self.session, self._conversation())
        return tool, args, ctx, notices

    def _conversation(self) -> Conversation | None:
        if self.store is None:
            return None
        events = self.engine.background_event if self._engine is not None else (lambda event: None)
        return Conversation(store=self.store, events=events, host=self)

    def tool_context(self, session: Session, conversation: Conversation | None) -> ToolContext:
        """What one call of a tool gets, with the configuration as of now (a turn calls it per tool call)."""
        snapshot = self._snapshot
        return ToolContext(
            agent_dir=self.directory,
            slug=self.slug,
            paths=self.sandbox_paths(session),
            sandbox=snapshot.sandbox,
            tools_config=snapshot.tools_config,
            session=session,
            extra={
                "tool_state": self.tool_state,
                "plugin_quotas": snapshot.plugin_quotas,
                "result_limit": self.result_limit,  # MCP answers over a multiple of it are kept on disk, not held
            },
            conversation=conversation,
        )

    def sandbox_paths(self, session: Session | None = None) -> SandboxPaths:
        """The path model; for a session, with conditions.toml's access rules as that session sees them."""
        snapshot = self._snapshot
        if session is None or snapshot.conditions is None or not snapshot.conditions.has_path_rules:
            return SandboxPaths(self.directory, snapshot.sandbox.mounts)
        from .sessions.conditions import PathAccess

        access = PathAccess(snapshot.conditions, self.rule_context(session))
        return SandboxPaths(self.directory, snapshot.sandbox.mounts, access=access)

    # -- conditions.toml --------------------------------------------------------------------------
    @property
    def conditions(self) -> Conditions:
        from .sessions.conditions import Conditions

        found = self._snapshot.conditions
        return Conditions() if found is None else found

    def rule_context(self, session: Session | None = None) -> RuleContext:
        """What conditions.toml rules see of a session: what a person set for it, else its own platform."""
        session = session or self.session
        from .sessions.conditions import RuleContext

        return self._acting.get(session.id) or RuleContext.of_session(session)

    def act_as(self, context: RuleContext | None, session: Session | None = None) -> None:
        """Evaluate rules for `session` (default: the current one) as if it ran in `context`; None = its own."""
        session = session or self.session
        if context is None:
            self._acting.pop(session.id, None)
        else:
            self._acting[session.id] = context

    def current_tools(self) -> dict[str, Tool]:
        """The enabled tools of the current snapshot, without re-reading anything."""
        return dict(self._snapshot.tools)

    def offered_tools(self, session: Session) -> dict[str, Tool]:
        """What a turn of `session` offers the model: the enabled tools its grant allows, in tools.toml order."""
        return {name: tool for name, tool in self._snapshot.tools.items() if tool.offered and session.allows(tool)}

    def grant(self, tools: Iterable[str] | None, *, session: str | None = None) -> Session:
        """Limit a remote session to these tools (None: every enabled tool again). Built-in, plugin and MCP tools
        alike; tools declared always_granted (respond, no-response) always stay. Names must be tools this agent
        knows, enabled or not."""
        target = self.session_for(self.session_id(session)) if session else self.session
        if tools is None:
            target.grant = None
            return target
        if target.platform != "remote":
            raise ValueError(
                f"session '{target.id}' is {target.platform}: grants apply to remote (adapter-owned) sessions only"
            )
        names = list(dict.fromkeys(tools))
        known = self.known_tool_names()
        for name in names:
            if name not in known:
                hint = suggestion(name, known)
                raise ValueError(f"cannot grant '{name}': agent '{self.slug}' has no such tool{hint}")
        target.grant = frozenset(names)
        return target

    def grant_text(self, session: Session | None = None) -> str:
        """One line on what the session's grant lets a turn use, for `%cireil session` and `%cireil context`."""
        target = session or self.session
        enabled = list(self._snapshot.tools)
        if target.grant is None:
            return f"all {len(enabled)} enabled tools (no grant on this session)"
        offered = [n for n, tool in self._snapshot.tools.items() if target.allows(tool)]
        parts = [f"granted: {', '.join(offered) or 'none'}"]
        withheld = [n for n in enabled if n not in offered]
        if withheld:
            parts.append(f"withheld: {', '.join(withheld)}")
        idle = sorted(target.grant.difference(enabled))
        if idle:
            parts.append(f"granted but not enabled in tools.toml: {', '.join(idle)}")
        return "; ".join(parts)

    def known_tool_names(self) -> list[str]:
        """Every tool name this agent could enable: built-ins, Python and plugin tools, discovered MCP tools."""
        snapshot = self._snapshot
        mcp_tools = snapshot.mcp.tools if snapshot.mcp else {}
        extra = [*self.extra_tools, *snapshot.tools_config.enabled]  # tools.toml names every plugin tool it uses
        return list(dict.fromkeys([*registry.BUILTIN_NAMES, *extra, *mcp_tools, *snapshot.tools]))

    async def _run(self, tool: Tool, args: dict, ctx: ToolContext, notices: list[str]) -> ToolResult:
        started = time.perf_counter()
        if not ctx.session.allows(tool):  # the session's grant authorizes calls as it filters turns
            data = not_granted(tool.name, ctx.session)
        else:
            data = await execute(tool, args, ctx)
        if self.store is not None:  # a call outside a turn may have opened or closed files
            from .sessions.errors import SessionError

            try:
                self.store.save_state(ctx.session)
            except SessionError as exc:  # read-only or changed elsewhere: the call stands, its state is not kept
                notices = [*notices, f"not saved to sessions.db: {exc}"]
        result = ToolResult(tool.name, args, data, time.perf_counter() - started, notices, agent=self)
        result.inspect = ctx.extra.get("inspect") or {}  # set by the tool for the view (MCP: its wire)
        self.call_history.record(result)
        return result

    def calls(self, tool: str) -> list[SavedCall]:
        """The calls made to `tool` from this kernel (magic, form, Python), newest first; kept in memory only."""
        name = tool if tool in self.current_tools() else tool.replace("_", "-")
        return self.call_history.calls(name if self.call_history.calls(name) else tool)

    def submit(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Submitted:
        """Start a call on the runtime loop and return at once (what widget buttons use)."""
        return RUNTIME.submit(self._run(*self._begin(tool, arguments, kwargs)))

    def submit_watched(self, tool: str, arguments: Mapping[str, Any] | None, progress: Progress) -> Submitted:
        """submit() with a watcher of live output (exec's chunks), called on the runtime thread."""
        found, args, ctx, notices = self._begin(tool, arguments, {})
        ctx.progress = progress
        return RUNTIME.submit(self._run(found, args, ctx, notices))

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolResult:
        """Run one tool as the agent would and wait for its result. Safe inside a running kernel."""
        return RUNTIME.run(self._run(*self._begin(tool, arguments, kwargs)))

    async def acall(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolResult:
        """Async form of call(); cancelling the awaiting task cancels the tool."""
        work = self._run(*self._begin(tool, arguments, kwargs))
        if RUNTIME.in_loop_thread():
            return await work
        return await RUNTIME.submit(work).wrapped()

    def context(self) -> OpenedFilesContext:
        """The opened files and pinned sections exactly as the next model call would show them (§7.2)."""
        from .engine.opened_files import opened_files_context

        found = opened_files_context(self.session, self.sandbox_paths(self.session))
        if self.session.grant is not None:  # a grant decides which tools the agent is offered: part of what it sees
            found.tools = self.grant_text()
        return found

    # -- sessions -----------------------------------------------------------------------------------
    def session_for(self, session_id: str) -> Session:
        """The live session of that id, loaded from sessions.db or created (in memory without a store)."""
        found = self._sessions.get(session_id)
        if found is None:
            from .sessions.state import platform_of

            if self.store is not None:
                found = self.store.open_session(session_id)
            else:
                found = Session(id=session_id, platform=platform_of(session_id))
            self._sessions[session_id] = found
        return found

    def has_session(self, session_id: str) -> bool:
        """Whether a session of that id is live here or kept in sessions.db, without creating it."""
        return session_id in self._sessions or (self.store is not None and self.store.get(session_id) is not None)

    def _first_session(self, session_id: str) -> Session:
        """The session the agent starts in; when its row cannot be read (load reported why), an empty one
        that is never written over that row (the store refuses: the row is not what it was read from)."""
        from .sessions.errors import SessionError

        try:
            return self.session_for(session_id)
        except SessionError:
            from .sessions.state import platform_of

            return Session(id=session_id, platform=platform_of(session_id))

    def forget_session(self, session_id: str) -> None:
        """Drop the live copy of a session (another process changed it): the next use reads it again."""
        self._sessions.pop(session_id, None)
        if self.session.id == session_id:
            self.session = self._first_session(session_id)
            self._sessions[session_id] = self.session

    @staticmethod
    def session_id(name: str) -> str:
        """A session id from what a person types: a bare name means `notebook:NAME`."""
        return name if ":" in name or name == "tui" else f"notebook:{name}"

    def use_session(self, name: str) -> Session:
        """Make NAME the session calls and turns use."""
        self.session = self.session_for(self.session_id(name))
        return self.session

    def sessions(self, **filters: Any) -> list[dict]:
        """Persisted sessions, most recently active first, as list-sessions sees them (scheduled ones left out)."""
        if self.store is None:
            return []
        return self.store.list_sessions(**{"limit": 30, **filters})

    # -- agent turns -----------------------------------------------------------------------------------
    def turns(self, session: str | None = None) -> list[RecordedTurn]:
        """Recorded turns of a session (the current one by default, "*" for every session), oldest first;
        [] while recording is off (agent.recording.problem says why)."""
        from .recorder.model import load_turns

        store = self.recording.store
        if store is None:
            return []
        target = None if session == "*" else self.session_id(session) if session else self.session.id
        return load_turns(store, target)

    def replay(
        self, turn: RecordedTurn | int | None = None, *, in_place: bool = False, live_mcp: bool = False
    ) -> ReplayResult:
        """Re-run a recorded turn (the session's last by default) offline: recorded replies, real tools on a
        throwaway copy of this agent (or on itself with in_place=True), MCP calls answered from the recording
        (the live servers with live_mcp=True); each result compared with the recording."""
        from .recorder.replay import replay

        return replay(self, self._recorded(turn), in_place=in_place, live_mcp=live_mcp)

    def cassette(self, turn: RecordedTurn | int | None = None) -> dict | None:
        """The MCP traffic recorded with `turn` (the session's last by default): each server's tools/list and
        every tools/call with its answer, secrets masked; None for a turn recorded before cireil kept it."""
        return self._recorded(turn).cassette

    def fork(self, turn: RecordedTurn | int | None, step: int, **changes: Any) -> TurnOutcome:
        """Continue a recorded turn from `step` in a new session, linked to it (recorder/fork.py):
        `arguments=` or `result=` for the call at `position=` of that step; `live=True` (with `model=`,
        `provider=`) lets the real model go on after it; MCP calls are answered from the recording unless
        `live_mcp=True`. The original recording is never changed."""
        from .recorder.fork import fork

        recorded = self._recorded(turn)
        return fork(self, recorded, step, history=self._fork_history(recorded), **changes)

    @staticmethod
    def _fork_history(turn: RecordedTurn) -> list[dict] | None:
        """The history a production turn started from, read from its recorded request (the original's session
        never went through cireil); None for a notebook turn, whose session says it."""
        from .attach.history import history_before
        from .attach.listing import is_production

        return history_before(turn) if is_production(turn) else None

    def watch(self, *, timeout: float | None = None, poll: float = 0.25) -> Iterator[RecordedTurn]:
        """Production turns (the running original's, recorded by `cireil proxy`) as they happen: each one
        running now or begun later, yielded again each time it gets a model call or ends (attach/watch.py).
        Runs until `timeout` seconds passed (None: until interrupted or the loop breaks)."""
        from .attach.watch import follow
        from .recorder.model import load_turn

        store = self.recording.store
        if store is None:
            raise ValueError(f"cannot watch: {self.recording.problem or 'turn recording is off'}")
        return follow(store.path, lambda turn_id: load_turn(store, turn_id), timeout=timeout, poll=poll)

    def reconstruct(self, *, session: str | None = None, since: str | None = None) -> Reconstructed:
        """Record the turns the original ran before attaching, rebuilt from sessions.db (attach/reconstruct.py):
        each marked reconstructed, its requests what cireil builds today for that history, not the bytes sent.
        Every Discord, internal and TUI session by default (`session=` one of them), turns since `since` (ISO
        8601); a stored turn already recorded is never recorded again. sessions.db is only read."""
        from .attach.reconstruct import reconstruct

        return reconstruct(self, session=session, since=since)

    def export_test(
        self, turn: RecordedTurn | int | None, path: str | Path, *, fields: Iterable[str] = (), live_mcp: bool = False
    ) -> Path:
        """Write a pytest file that replays `turn` offline and fails when the tools no longer behave as
        recorded: same tool calls, same success, and the result `fields` picked ("content", "read.content").
        It carries the turn's MCP answers and serves them itself (no network, no mcp.toml secret), or calls the
        live servers with live_mcp=True."""
        from .recorder.export import export_test

        return export_test(self._recorded(turn), self.directory, Path(path), list(fields), live_mcp=live_mcp)

    def export_notebook(self, session: str | None, path: str | Path) -> Path:
        """Write a notebook replaying the recorded turns of `session` (the current one by default) offline,
        one %%cireil_agent cell per turn, tools running on a throwaway copy of this agent."""
        from .recorder.notebook import export_notebook

        if self.recording.store is None:
            raise ValueError(self.recording.problem or "turn recording is off")
        target = self.session_id(session) if session else self.session.id
        return export_notebook(self.turns(target), self.directory, target, Path(path))

    def _recorded(self, turn: RecordedTurn | int | None) -> RecordedTurn:
        from .recorder.model import load_turn

        if turn is not None and not isinstance(turn, int):
            return turn
        store = self.recording.store
        if store is None:
            raise ValueError(self.recording.problem or "turn recording is off")
        found = load_turn(store, turn) if turn is not None else (self.turns() or [None])[-1]
        if found is None and turn in store.skipped:  # a damaged row: say so rather than "not recorded"
            raise ValueError(store.skipped[turn])
        if found is None:
            raise ValueError(f"turn {turn} is not recorded" if turn is not None else "no recorded turn in this session")
        return found

    @property
    def recording(self) -> Recording:
        """The turn recorder (cireil-recordings.db beside sessions.db), opened when a turn first needs it."""
        if self._recording is None:
            from .recorder.recording import Recording

            self._recording = Recording(self.directory)
        return self._recording

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from .engine.engine import Engine

            self._engine = Engine(self)
        return self._engine

    @property
    def jobs(self) -> JobRunner:
        """cron.toml's jobs and heartbeat.toml's pulse, run through the engine (the engine knows nothing of them)."""
        if self._jobs is None:
            from .jobs.job_runner import JobRunner

            self._jobs = JobRunner(self.engine)
        return self._jobs

    @jobs.setter
    def jobs(self, runner: JobRunner) -> None:  # a runner on another clock (tests drive time with one)
        self._jobs = runner

    @property
    def scheduler(self) -> Any:
        return self.engine.scheduler

    def deliver(self, target: str, content: str, *, attachments: Iterable[str] = (), source: str | None = None) -> None:
        self.engine.deliver(target, content, attachments=list(attachments), source=source)

    def queue_turn(self, session_id: str, prompt: str, *, source: str | None = None) -> None:
        self.engine.queue_turn(session_id, prompt, source=source)

    def schedule(self, job: dict) -> None:
        self.engine.scheduler.add(job)

    def observe_turn(self, session_id: str, on_event: EventSink) -> EventSink:
        return self.recording.observe(session_id, on_event)

    def _turn(self, message: str | dict, session: str | None, on_event: EventSink | None, **options: Any) -> Any:
        from .sessions import messages

        if self.closed:
            raise RuntimeError("this agent has been closed; load it again")
        target = self.session_for(self.session_id(session)) if session else self.session
        user = messages.user_message(message) if isinstance(message, str) else message
        return self.engine.run_turn(target, user, on_event=on_event or (lambda event: None), **options)

    def turn(
        self, message: str | dict, *, session: str | None = None, on_event: EventSink | None = None, **options: Any
    ) -> TurnOutcome:
        """Send a user message and run the agent's turn to its end; blocking, interruptible."""
        return RUNTIME.run(self._turn(message, session, on_event, **options))

    async def aturn(
        self, message: str | dict, *, session: str | None = None, on_event: EventSink | None = None, **options: Any
    ) -> TurnOutcome:
        work = self._turn(message, session, on_event, **options)
        if RUNTIME.in_loop_thread():
            return await work
        return await RUNTIME.submit(work).wrapped()

    def submit_turn(
        self, message: str | dict, *, session: str | None = None, on_event: EventSink | None = None, **options: Any
    ) -> Submitted:
        return RUNTIME.submit(self._turn(message, session, on_event, **options))

    def prompt(self, *, session: str | None = None, **options: Any) -> PreparedRequest:
        """Exactly what the next model request would send: system prompt, messages, tool schemas. Changes nothing.

        Any session, also one cireil runs no turn in: `session="discord:<channelId>|<guildId>"` (or
        `"discord:<dmChannelId>"`) shows what the original sends there, with its channel lines and the conditional
        blocks conditions.toml gives that guild or channel."""
        target = self.session_for(self.session_id(session)) if session else self.session
        return self.engine.preview(target, **options)

    def close(self) -> None:
        """Stop using this agent; its MCP connections are closed (their sessions deleted)."""
        if not self.closed:
            self.closed = True
            if self._jobs is not None:  # its runs are turns of the engine: stopped before it
                RUNTIME.run(self._jobs.aclose())
            if self._engine is not None:
                RUNTIME.run(self._engine.aclose())
            close_mcp(self._snapshot.mcp)
            if self.store is not None:
                self.store.close()
            if self._recording is not None:
                self._recording.close()
            # exec's last overlay work folders (mode 000 inside) are removed in the background: done when
            # close returns, so that whoever removes the agent directory next (eval copies) can
            anon_mounts = sys.modules.get("cireil.runtime.exec.anon_mounts")
            if anon_mounts is not None:
                anon_mounts.settle()
