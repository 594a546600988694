"""The turn path against a stand-in host: the engine, a turn and the conversation tools run with no Agent,
only what runtime/engine/host.py's TurnHost asks for, and a scripted model server on loopback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.base.params import Params, String
from cireil.runtime.config.sandbox_config import SandboxConfig
from cireil.runtime.config.tools_config import ToolsConfig
from cireil.runtime.engine.engine import Engine
from cireil.runtime.files.layout import AgentLayout
from cireil.runtime.files.paths import SandboxPaths
from cireil.runtime.sessions.conditions import Conditions, RuleContext
from cireil.runtime.sessions.state import Session, platform_of
from cireil.runtime.sessions.store import SessionStore
from cireil.runtime.toolkit import registry
from cireil.runtime.toolkit.conversation import Conversation
from cireil.runtime.toolkit.resultcap import RESULT_LIMIT
from cireil.runtime.toolkit.tool import Tool, ToolContext
from cireil.testing.scripted_llm import reply
from turnkit import turn_agent


class StandInHost:
    """A TurnHost made of plain parts: a real agent folder and session store, tools handed in, requests kept."""

    def __init__(self, directory: Path, tools: list[Tool]) -> None:
        self.layout = AgentLayout.find(directory)
        self.store: SessionStore | None = SessionStore.for_agent(directory)
        self.result_limit = RESULT_LIMIT
        self.tools = {t.name: t for t in tools}
        self.sessions: dict[str, Session] = {}
        self.delivered: list[tuple] = []
        self.queued: list[tuple] = []
        self.scheduled: list[dict] = []
        self.refreshes = 0
        self.observed: list[str] = []

    @property
    def directory(self) -> Path:
        return self.layout.directory

    @property
    def slug(self) -> str:
        return self.layout.slug

    @property
    def conditions(self) -> Conditions:
        return Conditions()

    def refresh(self) -> list[str]:
        self.refreshes += 1
        return ["the stand-in was asked to refresh"]

    def refresh_quietly(self) -> bool:
        return True

    def current_tools(self) -> dict[str, Tool]:
        return dict(self.tools)

    def offered_tools(self, session: Session) -> dict[str, Tool]:
        return {name: tool for name, tool in self.tools.items() if session.allows(tool)}

    def tool_context(self, session: Session, conversation: Conversation | None) -> ToolContext:
        return ToolContext(
            agent_dir=self.directory,
            slug=self.slug,
            paths=self.sandbox_paths(session),
            sandbox=SandboxConfig(backend="none"),
            tools_config=ToolsConfig(),
            session=session,
            conversation=conversation,
        )

    def sandbox_paths(self, session: Session | None = None) -> SandboxPaths:
        return SandboxPaths(self.directory, [])

    def rule_context(self, session: Session | None = None) -> RuleContext:
        return RuleContext()

    def session_for(self, session_id: str) -> Session:
        if session_id not in self.sessions:
            self.sessions[session_id] = (
                self.store.open_session(session_id)
                if self.store
                else Session(id=session_id, platform=platform_of(session_id))
            )
        return self.sessions[session_id]

    def forget_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)

    def observe_turn(self, session_id: str, on_event):
        self.observed.append(session_id)
        return on_event

    def deliver(self, target: str, content: str, *, attachments=(), source: str | None = None) -> None:
        self.delivered.append((target, content, source))

    def queue_turn(self, session_id: str, prompt: str, *, source: str | None = None) -> None:
        self.queued.append((session_id, prompt, source))

    def schedule(self, job: dict) -> None:
        self.scheduled.append(job)


def where_tool(seen: list) -> Tool:
    async def run(args: dict, ctx: ToolContext) -> dict:
        seen.append((ctx.slug, ctx.session.id, ctx.conversation.host if ctx.conversation else None))
        return {"where": args["what"], "success": True}

    return Tool(name="where", description="says where it runs", params=Params(what=String()), run=run)


def test_a_turn_runs_against_a_stand_in_host_and_tools_reach_it_through_the_conversation(tmp_path, llm):
    seen: list = []
    host = StandInHost(
        turn_agent(tmp_path, llm.base_url, tools="respond = true\n"),
        [registry.builtin("respond"), registry.builtin("schedule"), where_tool(seen)],
    )
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    llm.script(
        reply.tool_calls(
            ("where", {"what": "here"}),
            ("schedule", {"id": "remind", "at": later, "prompt": "remind me"}),
            ("respond", {"content": "see you", "channel": "notebook:elsewhere"}),
        ),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    engine = Engine(host)
    events: list[dict] = []
    session = host.session_for("notebook:main")
    host.store.commit(host.session_for("notebook:elsewhere"), [])  # a session respond may reach
    try:
        outcome = RUNTIME.run(engine.run_turn(session, _user("hello"), on_event=events.append))
    finally:
        RUNTIME.run(engine.aclose())
        host.store.close()
    assert (outcome.ended, outcome.text, outcome.steps) == ("respond", "done", 2)
    assert seen == [(host.slug, "notebook:main", host)]  # the tool's context came from the host
    assert [job["id"] for job in host.scheduled] == ["remind"]
    assert host.delivered == [("notebook:elsewhere", "see you", "notebook:main")]
    assert host.refreshes == 1 and host.observed == ["notebook:main"]
    assert {"type": "notice", "text": "the stand-in was asked to refresh"} in events
    results = [e["result"] for e in events if e["type"] == "result"]
    assert [r.tool for r in results] == ["where", "schedule", "respond", "respond"]
    assert all(r.agent is host for r in results)  # what a view follows up with is the host it ran for
    offered = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
    assert offered == ["respond", "schedule", "where"]
    roles = [m["role"] for m in session.history]
    assert roles == ["user", "assistant", "toolResponse", "toolResponse", "toolResponse", "assistant", "toolResponse"]


def test_a_session_the_host_does_not_grant_a_tool_gets_it_refused(tmp_path, llm):
    host = StandInHost(
        turn_agent(tmp_path, llm.base_url, tools="respond = true\n"),
        [registry.builtin("respond"), where_tool([])],
    )
    session = host.session_for("remote:a")
    session.grant = frozenset({"respond"})
    llm.script(
        reply.tool_calls(("where", {"what": "x"})),
        reply.tool_calls(("respond", {"content": "ok"})),
    )
    engine = Engine(host)
    events: list[dict] = []
    try:
        outcome = RUNTIME.run(engine.run_turn(session, _user("hi"), on_event=events.append))
    finally:
        RUNTIME.run(engine.aclose())
        host.store.close()
    assert outcome.ended == "respond"
    assert [t["function"]["name"] for t in llm.requests[0].body["tools"]] == ["respond"]
    (refused,) = [e["result"].data for e in events if e["type"] == "result" and e["call"]["name"] == "where"]
    assert refused["success"] is False


def _user(text: str) -> dict:
    from cireil.runtime.sessions import messages

    return messages.user_message(text)


def test_the_agent_and_the_stand_in_both_have_everything_a_turn_host_promises(tmp_path, llm):
    import cireil
    from cireil.runtime.engine.host import TurnHost
    from cireil.runtime.toolkit.conversation import ToolRequests

    promised = {n for k in (TurnHost, ToolRequests) for n in (*vars(k), *k.__annotations__) if not n.startswith("_")}
    assert {"deliver", "queue_turn", "schedule", "store", "session_for", "tool_context"} <= promised
    agent = cireil.load(turn_agent(tmp_path, llm.base_url))
    try:
        assert sorted(n for n in promised if not hasattr(agent, n)) == []
    finally:
        agent.close()
    stand_in = StandInHost(agent.directory, [])
    stand_in.store.close()
    assert sorted(n for n in promised if not hasattr(stand_in, n)) == []
