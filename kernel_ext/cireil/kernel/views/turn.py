"""An agent turn shown live in the running cell: the user's message, each tool call with its result
(the same views as the magics), respond messages as chat bubbles while they stream, and a footer.

The turn runs on the runtime thread and reports events there; they are queued and drawn by the
cell's own thread, which waits for the turn anyway. Drawing from the cell's thread keeps every
output in that cell and in order. A kernel interrupt cancels the turn, which puts the session back
where it was before the turn (nothing of it is stored); what was drawn stays.
"""

from __future__ import annotations

import concurrent.futures
import queue
import time
from typing import TYPE_CHECKING, Any

from IPython.display import display

from ...render import chat
from .agentname import display_name

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.engine.turn import TurnOutcome

_STREAM_INTERVAL_S = 0.1


class TurnView:
    """Draws one turn's events; `run()` starts the turn and draws until it ends."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.name = display_name(agent)  # what the bubbles call the agent
        self.events: queue.SimpleQueue[dict] = queue.SimpleQueue()
        self._user: dict | None = None
        self._user_handle: Any = None
        self._streams: dict[Any, tuple[Any, float]] = {}  # call key -> (display handle, last update)
        self._respond_handles: dict[str, Any] = {}  # call id -> the bubble that streamed for it
        self._pending_respond: list[dict] = []
        self.started = time.perf_counter()
        self._estimate: int | None = None  # cireil's estimate of the last model request (as %cireil prompt counts)
        self._last_usage: dict = {}  # the provider's count for the last model call, when it sent one

    def _show(self, pair: tuple[str, str], *, handle: bool = False) -> Any:
        """Show a chat piece; with `handle`, return something whose `.update(bundle, raw=True)` replaces it."""
        return display(chat.as_bundle(pair), raw=True, display_id=True if handle else None)

    def _display(self, obj: Any) -> None:
        """Show an object with its own view (a tool result, the recorded steps)."""
        display(obj)

    def _attachment(self, path: str) -> bytes | str | None:
        """A picture's bytes, read through the sandbox (never by host path); else why it is not shown."""
        from ...runtime.files.media import media_kind
        from ...runtime.files.pictures import Unreadable, sandbox_picture

        kind = media_kind(path) if isinstance(path, str) else None
        if kind is None or kind[0] != "image":
            return None  # not a picture: listed by name, never opened
        try:
            return sandbox_picture(self.agent.sandbox_paths(), path, chat.INLINE_IMAGE_LIMIT)
        except Unreadable as exc:
            return str(exc)

    # -- events -----------------------------------------------------------------------------------
    def draw(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "start" and event.get("message"):
            self._user = event["message"]
            self._user_handle = self._show(chat.user_bubble(self._user), handle=True)
        elif kind == "notice":
            self._show(chat.notice_line(event["text"]))
        elif kind == "retry":
            self._show(chat.notice_line(f"retrying: {event['reason']}"))
        elif kind == "delta":
            self._stream(event)
        elif kind == "assistant":
            for part in event["message"].get("content", ()):
                if part.get("type") == "thinking" and part.get("thinking"):
                    self._show(chat.thinking_block(part["thinking"]))
        elif kind == "tool":
            if event["call"]["name"] != "respond":
                self._show(chat.tool_header(event["call"]))
        elif kind == "respond":
            self._pending_respond.append(event)
        elif kind == "result":
            self._result(event)
        elif kind == "react" and self._user is not None and event.get("messageId") == self._user.get("id"):
            self._user.setdefault("reactions", [])
            if event["emoji"] not in self._user["reactions"]:
                self._user["reactions"].append(event["emoji"])
            self._user_handle.update(chat.as_bundle(chat.user_bubble(self._user)), raw=True)

    def _stream(self, event: dict) -> None:
        if event.get("kind") != "toolCall" or event.get("name") != "respond":
            return
        from ...runtime.engine.partialjson import partial_string_field

        content = partial_string_field(event.get("arguments") or "", "content")
        if not content:
            return
        key = (event["step"], event.get("index"))
        handle, last = self._streams.get(key, (None, 0.0))
        now = time.perf_counter()
        if handle is not None and now - last < _STREAM_INTERVAL_S:
            return
        pair = chat.agent_bubble(content, agent=self.name, streaming=True)
        if handle is None:
            handle = self._show(pair, handle=True)
        else:
            handle.update(chat.as_bundle(pair), raw=True)
        self._streams[key] = (handle, now)
        if event.get("id"):
            self._respond_handles[event["id"]] = handle

    def _result(self, event: dict) -> None:
        call, result = event["call"], event["result"]
        if call["name"] == "respond" and result.success and self._pending_respond:
            sent = self._pending_respond.pop(0)
            to = None if sent["sessionId"] == sent.get("fromSessionId") else sent["sessionId"]
            attachments = [(p, self._attachment(p)) for p in sent.get("attachments", ())]
            pair = chat.agent_bubble(
                sent["content"], agent=self.name, attachments=attachments, final=bool(sent["final"]), to=to
            )
            handle = self._respond_handles.pop(call.get("id", ""), None)
            if handle is None:
                handle = next((h for k, (h, _) in self._streams.items() if k[0] == event["step"]), None)
            if handle is not None:
                handle.update(chat.as_bundle(pair), raw=True)
                self._streams = {k: v for k, v in self._streams.items() if v[0] is not handle}
            else:
                self._show(pair)
            return
        if call["name"] == "respond":
            self._show(chat.tool_header(call))
        self._display(result)  # the tool's own view, with its actions (Apply, open section) where it has them

    # -- running ------------------------------------------------------------------------------------
    def run(self, message: str | dict, **options: Any) -> TurnOutcome:
        return self.watch(self.agent.submit_turn(message, on_event=self.events.put, **options))

    def watch(self, submitted: Any) -> TurnOutcome:
        """Draw the events of a turn already submitted to the runtime (with `self.events.put` as its sink)."""
        outcome = None
        try:
            while outcome is None:
                try:
                    outcome = submitted.result(timeout=0.05)
                except concurrent.futures.TimeoutError:
                    pass
                except Exception:
                    self._drain()
                    raise
                self._drain()
        except KeyboardInterrupt:
            from .live import interrupted

            submitted.cancel_and_wait()
            self._drain()
            elapsed = time.perf_counter() - self.started
            ended = (
                f"turn interrupted after {elapsed:.1f} s: nothing of it is stored in the session "
                "(the turn recorder keeps it)"
            )
            self._show(chat.notice_line(ended))
            raise interrupted(f"agent turn interrupted after {elapsed:.1f} s") from None
        return outcome

    def _show_recorded(self, turn_id: int | None) -> None:
        """Under the footer, the turn's model calls as recorded (runtime/recorder), each folded."""
        if turn_id is None or self.agent.recording.store is None:
            return
        from ...render.recording import StepsView
        from ...runtime.recorder.model import load_turn

        turn = load_turn(self.agent.recording.store, turn_id)
        if turn is not None and turn.steps:
            self._display(StepsView(turn))

    def _drain(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            self.handle(event)

    def handle(self, event: dict) -> None:
        """Draw one event, the footer and the recorded steps for the turn's end."""
        if event.get("type") == "request":
            self._estimate = event.get("estimate")
        elif event.get("type") == "assistant":
            self._last_usage = event.get("usage") or {}
        if event.get("type") == "end":
            elapsed = time.perf_counter() - self.started
            self._show(chat.footer(event["outcome"], elapsed, estimate=self._estimate, last_usage=self._last_usage))
            self._show_recorded(event.get("recording"))
        else:
            self.draw(event)
