"""Talking to the agent from cells: `%%cireil_agent`, and `%cireil prompt | session | sessions`.

    %%cireil_agent [--session NAME] [--attach PATH ...] [--model M] [--provider P] [--step]
    message to the agent

The turn renders live (views/turn.py); with --step it pauses before each tool call for the person's
decision, and the cell returns at once so that the buttons can be clicked (magics/stepmode.py).

Files given with --attach, or uploaded with `%cireil attach` before, are kept in cireil's side file beside
sessions.db, where download-attachments finds them; pictures also go into the message itself, stored as the
original runtime stores a Discord message's images.
"""

from __future__ import annotations

import base64
import html
import mimetypes
from argparse import Namespace
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from ... import commands
from ..views.agentname import display_name
from .liveturns import BUSY, live_step_turn
from .toolargs import tokenize

if TYPE_CHECKING:
    from ...runtime.agent import Agent

ATTACH_LIMIT = 25 * 1024 * 1024


def parse_agent_line(line: str) -> dict[str, Any]:
    """The options of a %%cireil_agent line, as declared in commands.AGENT_CELL."""
    try:
        options = commands.parse(commands.AGENT_CELL, [t.text for t in tokenize(line)])
    except commands.CommandUsage as exc:
        raise UsageError(str(exc)) from None
    return {k: v for k, v in vars(options).items() if v is not None}


PICTURE_TYPES = ("image/gif", "image/jpeg", "image/png", "image/webp")


@dataclass
class Staged:
    """A file waiting to go with the next message: from --attach PATH or the upload widget."""

    name: str
    media_type: str
    data: bytes


# files uploaded with `%cireil attach`, per shell, taken by the next %%cireil_agent
STAGED: dict[int, list[Staged]] = {}


def _read_attachments(paths: list[str]) -> list[Staged]:
    """Every --attach file, checked before anything is sent: a bad path sends nothing."""
    files = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.is_file():
            raise UsageError(f"--attach {raw}: no such file")
        size = path.stat().st_size
        if size > ATTACH_LIMIT:
            raise UsageError(f"--attach {raw}: {size:,} bytes is over the {ATTACH_LIMIT // 2**20} MiB limit")
        files.append(Staged(path.name, _media_type(path.name), path.read_bytes()))
    return files


def _media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def _store_attachments(agent: Agent, session_id: str, message: dict, files: list[Staged]) -> None:
    if not files:
        return
    if agent.store is None:
        raise UsageError("attachments need the session store, and sessions.db could not be opened for this agent")
    message["attachments"] = [
        agent.store.add_attachment(session_id, message["id"], f.name, f.media_type, f.data) for f in files
    ]
    # the model learns of the files, and of the id download-attachments needs, from the message itself
    listed = "; ".join(f"{a['filename']} ({a['mediaType']}, {a['size']:,} bytes)" for a in message["attachments"])
    note = f"[Attached to this message (message_id {message['id']}): {listed}. download-attachments saves them.]"
    message["content"].append({"type": "text", "text": note, "note": "attachments"})
    # pictures also go in as the original puts a Discord message's images: image parts of the message,
    # stored as BLAKE3-named files under images/ with an image_ref (upstream-formats §4.5, §4.7)
    for f in files:
        if f.media_type in PICTURE_TYPES:
            data = base64.b64encode(f.data).decode("ascii")
            message["content"].append({"type": "image", "mediaType": f.media_type, "data": data})


def run_agent_cell(agent: Agent, line: str, cell: str | None, shell_key: int = 0) -> None:
    from ...runtime.sessions import messages
    from ..views.turn import TurnView

    options = parse_agent_line(line)
    if live_step_turn(agent) is not None:  # this turn would wait for it, and no click reaches a waiting cell
        raise UsageError(BUSY)
    text = (cell or "").strip()
    files = _read_attachments(options["attach"]) + STAGED.get(shell_key, [])
    if not text and not files:
        usage = commands.usage_forms(commands.AGENT_CELL)[0]
        raise UsageError(f"write the message to the agent in the cell body; usage: {usage}")
    if options.get("session"):
        from ...runtime.sessions.store import SessionError

        try:
            agent.use_session(options["session"])
        except SessionError as exc:
            raise UsageError(str(exc)) from None
    show_background(agent)
    reason = agent.store.read_only_reason(agent.session) if agent.store is not None else None
    if reason is not None:  # before anything is stored or sent: the original runtime owns this session now
        raise UsageError(reason)
    message = messages.user_message(text)
    _store_attachments(agent, agent.session.id, message, files)
    STAGED.pop(shell_key, None)  # sent with this message; the next one starts empty
    turn_options = {k: options[k] for k in ("model", "provider") if k in options}
    if options["step"]:
        from .stepmode import start_step_turn

        display(start_step_turn(agent, message, **turn_options))
        return
    view = TurnView(agent)
    view.run(message, **turn_options)


def attach_widget(shell_key: int) -> Any:
    """`%cireil attach`: an upload button; what it takes goes with the next %%cireil_agent message."""
    import ipywidgets as widgets

    upload = widgets.FileUpload(multiple=True, description="Attach files")
    status = widgets.HTML()

    def staged_text() -> str:
        files = STAGED.get(shell_key, [])
        if not files:
            return "<i>nothing attached yet: the files you choose go with your next %%cireil_agent message</i>"
        names = ", ".join(f"{html.escape(f.name)} ({len(f.data):,} bytes)" for f in files)
        return f"📎 for the next message: {names}"

    def take(change: dict) -> None:
        for item in change["new"]:
            data = bytes(item["content"])
            if len(data) > ATTACH_LIMIT:
                status.value = f"⚠ {html.escape(item['name'])} is over the {ATTACH_LIMIT // 2**20} MiB limit"
                return
            name = item["name"].replace("\\", "/").rsplit("/", 1)[-1]
            STAGED.setdefault(shell_key, []).append(Staged(name, item.get("type") or _media_type(name), data))
        status.value = staged_text()

    upload.observe(take, names="value")
    status.value = staged_text()
    from ..gone import mark

    return mark(widgets.VBox([upload, status]))


def show_background(agent: Agent) -> None:
    """What scheduled and invoked turns said while no cell was watching, shown once."""
    if agent._engine is None or not agent.engine.background:
        return
    from ...render import chat

    events, agent.engine.background[:] = list(agent.engine.background), []
    for event in events:
        kind = event.get("type")
        if kind == "announce":
            pair = chat.agent_bubble(
                event["content"], agent=f"{display_name(agent)} (job {event['jobId']})", to=event["sessionId"]
            )
        elif kind == "delivered":
            pair = chat.agent_bubble(event["content"], agent=display_name(agent), to=event["sessionId"])
        elif kind == "notice":
            pair = chat.notice_line(event["text"])
        else:
            continue
        display(chat.as_bundle(pair), raw=True)


def show_prompt(agent: Agent, o: Namespace) -> None:
    from ...render.prompt import PromptView

    options = {k: getattr(o, k) for k in ("session", "model", "provider") if getattr(o, k) is not None}
    prepared = agent.prompt(**options)
    if not o.diff:
        display(PromptView(prepared))
        return
    from ...render.recording import PromptDiffView
    from ...runtime.recorder.diff import diff_requests

    turns = agent.turns(options.get("session"))
    if not turns or not turns[-1].steps:
        raise UsageError(f"no recorded model call in this session to compare with{_recording_off(agent)}")
    last = turns[-1].steps[-1]
    display(PromptDiffView(diff_requests(last.request, prepared.body), f"turn {last.turn_id}, step {last.n}"))


def _recording_off(agent: Agent) -> str:
    problem = agent.recording.problem if agent.recording.store is None else None
    return f" ({problem})" if problem else ""


def show_usage(agent: Agent, o: Namespace) -> None:
    from ...render.recording import UsageView

    everything = o.all  # commands.py declares --all and --session exclusive
    session = "*" if everything else o.session
    turns = agent.turns(session)
    scope = "every session" if everything else f"session {agent.session_id(session) if session else agent.session.id}"
    if not turns and agent.recording.store is None:
        raise UsageError(f"no usage to show{_recording_off(agent)}")
    display(UsageView(turns, agent.recording.settings.prices, scope))


def show_steps(agent: Agent, turn: int | None) -> None:
    """`%cireil steps [TURN]`: the model calls of a recorded turn (the session's last by default)."""
    from ...render.recording import StepsView

    turns = agent.turns("*" if turn is not None else None)
    found = [t for t in turns if t.id == turn] if turn is not None else turns[-1:]
    if not found:
        what = f"turn {turn} is not recorded" if turn is not None else "no recorded turn in this session"
        store = agent.recording.store
        if store is not None and turn in store.skipped:  # its row is damaged: say how, not "not recorded"
            what = store.skipped[turn]
        raise UsageError(f"{what}{_recording_off(agent)}; %cireil usage --all lists the recorded turns")
    display(StepsView(found[0]))


def show_sessions(agent: Agent) -> None:
    from ..views.panels import SessionList

    display(SessionList(agent.slug, agent.session.id, agent.sessions(), agent.store is not None))


def run_replay(agent: Agent, o: Namespace) -> None:
    """`%cireil replay [TURN] [--in-place] [--live-mcp]`: the recorded turn again, offline (MCP answers from
    the recording unless --live-mcp); differing steps marked."""
    try:
        result = agent.replay(o.turn, in_place=o.in_place, live_mcp=o.live_mcp)
    except ValueError as exc:
        raise UsageError(f"{exc}{_recording_off(agent)}; %cireil usage --all lists the recorded turns") from None
    display(result)


def export_notebook(agent: Agent, o: Namespace) -> None:
    """`%cireil export notebook SESSION PATH.ipynb`: the session's recorded turns as a notebook replaying them."""
    try:
        path = agent.export_notebook(o.session, o.path)
    except ValueError as exc:
        raise UsageError(f"{exc}{_recording_off(agent)}") from None
    from ...runtime.base.controls import visible

    session = visible(agent.session_id(o.session) if o.session else agent.session.id)
    print(f"wrote {path}: replays session {session} offline, one cell per turn")


def export_test(agent: Agent, o: Namespace) -> None:
    """`%cireil export test TURN PATH.py [--fields ...]`: the recorded turn as a pytest file."""
    fields = [f.strip() for f in o.fields.split(",") if f.strip()]
    try:
        path = agent.export_test(o.turn, o.path, fields=fields, live_mcp=o.live_mcp)
    except ValueError as exc:
        raise UsageError(f"{exc}{_recording_off(agent)}") from None
    print(f"wrote {path}: replays turn {o.turn} offline; run it with `pytest {path}`")


def _json_option(o: Namespace, name: str) -> dict | None:
    import json

    text = getattr(o, name)
    if text is None:
        return None
    usage = commands.family_usage("fork")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--{name} is not JSON ({exc}); usage: {usage}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--{name} must be a JSON object; usage: {usage}")
    return value


def run_fork(agent: Agent, o: Namespace) -> None:
    """`%cireil fork TURN STEP ...`: continue a recorded turn from STEP in a new session; the turn renders live."""
    from ...runtime.base.loop import RUNTIME
    from ...runtime.recorder.fork import fork_turn
    from ..views.turn import TurnView

    view = TurnView(agent)
    try:
        turn = agent._recorded(o.turn)
        work = fork_turn(
            agent,
            turn,
            o.step,
            history=agent._fork_history(turn),
            position=o.position,
            arguments=_json_option(o, "args"),
            result=_json_option(o, "result"),
            live=o.live,
            live_mcp=o.live_mcp,
            model=o.model,
            provider=o.provider,
            on_event=view.events.put,
        )
    except ValueError as exc:
        raise UsageError(f"{exc}{_recording_off(agent)}") from None
    outcome = view.watch(RUNTIME.submit(work))
    print(f"forked turn {o.turn} at step {o.step} into session {outcome.session_id}")
