"""`%%cireil_agent --step`: a turn that pauses before each tool call with Approve / Edit arguments / Skip /
Mock result buttons.

The cell starts the turn and returns at once. Under ipykernel a button click is a comm message on the
shell channel, handled only between cells: a cell that waited for a click would wait forever. So the turn
runs on cireil's runtime thread, its events are drawn into widgets by a thread of its own, and each tool
call waits on the runtime loop (never on the kernel) until a click settles it. Which turn is live, and how
one ends early (Stop, `%cireil stop`, a kernel interrupt), is liveturns.py's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as W
from IPython.core.error import UsageError

from ...render import chat
from ...render.html import ERROR, FG_DIM, MONO, OK, code_block, esc, json_text
from ...runtime.engine.toolhook import ToolDecision
from ..gone import mark
from ..outputs import display_output
from ..views.turn import TurnView
from .enginehelp import engine_help
from .liveturns import BUSY, END_WAIT_S, LIVE, hear_interrupts

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.base.loop import Submitted
    from ..forms.schema_widgets import SchemaWidget

_DRAIN_S = 0.25
# ipywidgets gives every button one fixed width, which cut "Run with these arguments" to "Run with these…":
# each button here is as wide as its label
_FIT = {"width": "auto"}
ARGUMENTS_SHOWN = 20_000  # characters of a pending call's arguments drawn (a write of a whole file is big)

# what the turn view says of a call the person did not simply approve
_SAID = {
    "edited": "you edited the arguments of this call; it ran with yours",
    "skipped": "you skipped this call: the model is told it did not run",
    "mocked": "you gave the model this result instead of running the call",
}


class _Slot:
    """One shown piece of the turn, replaceable (a streamed bubble, the user's message when reacted to)."""

    def __init__(self, output: W.Output) -> None:
        self.output = output

    def update(self, bundle: dict[str, Any], raw: bool = True) -> None:
        self.output.outputs = (display_output(bundle),)


class WidgetTurnView(TurnView):
    """TurnView drawing into a widget box: the cell has returned long before the turn ends, so its
    output area is not ours to write; widget state reaches the page from any thread."""

    def __init__(self, agent: Agent, transcript: W.VBox) -> None:
        super().__init__(agent)
        self.transcript = transcript
        self._headers: dict[Any, _Slot] = {}  # call id -> its "→ tool {arguments}" line, redrawn after an edit

    def _append(self, bundle: dict[str, Any]) -> _Slot:
        output = W.Output()
        output.outputs = (display_output(bundle),)
        self.transcript.children = (*self.transcript.children, output)
        return _Slot(output)

    def _show(self, pair: tuple[str, str], *, handle: bool = False) -> Any:
        return self._append(chat.as_bundle(pair))

    def _display(self, obj: Any) -> None:
        from IPython.core.formatters import format_display_data

        data, _ = format_display_data(obj)
        self._append(data)

    def _stream(self, event: dict) -> None:
        """No streamed bubble: a respond call waits for the person, who may skip it; it shows once it ran."""

    def draw(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "tool" and event["call"]["name"] != "respond":
            # drawn with the model's arguments while the call waits; kept to show the ones it ran with after an edit
            self._headers[event["call"].get("id")] = self._show(chat.tool_header(event["call"]), handle=True)
            return
        if kind == "result":
            review = event.get("review") or {}
            header = self._headers.pop(event["call"].get("id"), None)
            if review.get("action") == "edited" and header is not None:  # the call now holds what ran
                header.update(chat.as_bundle(chat.tool_header(event["call"], edited=True)))
            said = _SAID.get(review.get("action"))
            if said:
                self._show(chat.notice_line(said))
        super().draw(event)


@dataclass
class _Pending:
    call: dict
    step: int
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


def _settle(future: asyncio.Future, decision: ToolDecision) -> None:
    if not future.done():  # cancelled meanwhile (Stop, interrupt): the decision comes too late
        future.set_result(decision)


class StepTurn(W.VBox):
    """The live turn of one `%%cireil_agent --step` cell: its drawing, the pending call's buttons, Stop."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.transcript = W.VBox()
        self.call_info = W.HTML()
        self.approve_button = W.Button(
            description="Approve",
            icon="check",
            button_style="success",
            tooltip="run the call as the model asked",
            layout=W.Layout(**_FIT),
        )
        self.edit_button = W.Button(
            description="Edit arguments", icon="pencil", tooltip="change what it runs with", layout=W.Layout(**_FIT)
        )
        self.skip_button = W.Button(
            description="Skip", icon="forward", tooltip="do not run it; the model is told", layout=W.Layout(**_FIT)
        )
        self.mock_button = W.Button(
            description="Mock result",
            icon="magic",
            tooltip="give the model a result of yours instead of running it",
            layout=W.Layout(**_FIT),
        )
        self.editor = W.VBox()  # the arguments form or the result text, while one is open
        self.problems = W.HTML()
        buttons = W.HBox([self.approve_button, self.edit_button, self.skip_button, self.mock_button])
        self.panel = W.VBox([self.call_info, buttons, self.editor, self.problems], layout=W.Layout(display="none"))
        self.stop_button = W.Button(
            description="Stop turn",
            icon="stop",
            tooltip="end the turn; nothing of it is stored in the session",
            layout=W.Layout(**_FIT),
        )
        self.status = W.HTML()
        super().__init__([self.transcript, self.panel, W.HBox([self.stop_button, self.status])])
        mark(self)
        self.view = WidgetTurnView(agent, self.transcript)
        self.submitted: Submitted | None = None
        self.outcome: Any = None
        self.ended = threading.Event()  # set once the end is drawn and the turn is no longer live
        self.edit_form: SchemaWidget | None = None
        self.mock_text: W.Textarea | None = None
        self.apply_button: W.Button | None = None  # "Run with these arguments" / "Give this result"
        self._pending: _Pending | None = None
        self._lock = threading.Lock()
        self.approve_button.on_click(lambda _b: self.decide(ToolDecision.approve()))
        self.skip_button.on_click(lambda _b: self.decide(ToolDecision.skip()))
        self.edit_button.on_click(lambda _b: self.open_edit())
        self.mock_button.on_click(lambda _b: self.open_mock())
        self.stop_button.on_click(lambda _b: self.stop())

    def __repr__(self) -> str:
        # what nbclient or a terminal shows in place of the widget
        pending = self._pending
        if self.ended.is_set():
            state = f"ended ({getattr(self.outcome, 'ended', '') or 'failed'})"
        elif pending is not None:
            state = f"waiting for a decision on {pending.call.get('name')} (step {pending.step})"
        else:
            state = "running"
        return f"<cireil step-mode turn: {state}>"

    @property
    def pending(self) -> dict | None:
        """The call waiting for a decision ({"id", "name", "input"}), or None."""
        pending = self._pending
        return dict(pending.call) if pending is not None else None

    # -- running ----------------------------------------------------------------------------------
    def start(self, message: dict, **options: Any) -> None:
        LIVE[id(self.agent)] = self
        try:
            self.submitted = self.agent.submit_turn(
                message, on_event=self.view.events.put, on_tool_call=self._ask, **options
            )
        except BaseException:
            LIVE.pop(id(self.agent), None)
            raise
        self._set_status("running…", FG_DIM)
        threading.Thread(target=self._draw, name="cireil-step-turn", daemon=True).start()

    def _draw(self) -> None:
        """The drawing thread: every event in order, until the turn has ended (or failed before it began)."""
        submitted = self.submitted
        assert submitted is not None
        while True:
            try:
                event = self.view.events.get(timeout=_DRAIN_S)
            except queue.Empty:
                if submitted.done() and self.view.events.empty():
                    break  # refused before it started (a missing key, a read-only session): no end event
                continue
            try:
                self.view.handle(event)
            except Exception as exc:  # a view bug must not leave the turn undrawn from here on
                self.view._show(chat.notice_line(f"could not draw a {event.get('type')} event: {exc}"))
            if event.get("type") == "end":
                self.outcome = event.get("outcome")
                break
        self._finished(submitted)

    def _finished(self, submitted: Submitted) -> None:
        self._close_panel()
        self.stop_button.disabled = True
        self.stop_button.layout.display = "none"  # nothing left to stop; the status line says how it ended
        stopped = False
        try:
            submitted.result(timeout=END_WAIT_S)
        except concurrent.futures.CancelledError:
            stopped = True
        except concurrent.futures.TimeoutError:
            pass  # its end is drawn; the task's last cleanup is still running
        except Exception as exc:
            if self.outcome is None:  # the turn never started: say why, as the cell would have
                text = f"the turn could not start: {exc}{engine_help(self.agent, exc)}"
                self.view._show(chat.notice_line(text))
        outcome = self.outcome
        ended = getattr(outcome, "ended", "")
        if ended == "interrupted" or (outcome is None and stopped):
            self._set_status("stopped: nothing of this turn is stored in the session (the recorder keeps it)", FG_DIM)
        elif outcome is None or ended == "error":
            why = f": {outcome.error}" if outcome is not None and outcome.error else ""
            self._set_status(f"✖ the turn ended with an error{why}", ERROR)
        else:
            self._set_status(f"✓ turn ended ({ended})", OK)
        if LIVE.get(id(self.agent)) is self:
            del LIVE[id(self.agent)]
        self.ended.set()

    def stop(self) -> None:
        """End the turn, storing nothing of it (Stop button, `%cireil stop`, a kernel interrupt)."""
        if self.submitted is not None and not self.submitted.done():
            self._set_status("stopping…", FG_DIM)
            self.submitted.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the turn has ended and its end is drawn; False on timeout."""
        return self.ended.wait(timeout)

    # -- the pending call (its hook runs on the runtime loop, the clicks on the kernel's thread) ----------
    async def _ask(self, call: dict, step: int) -> ToolDecision:
        loop = asyncio.get_running_loop()
        pending = _Pending(call, step, loop.create_future(), loop)
        with self._lock:
            self._pending = pending
        self._open_panel(pending)
        try:
            return await pending.future
        finally:
            with self._lock:
                if self._pending is pending:
                    self._pending = None
            self._close_panel()

    def decide(self, decision: ToolDecision) -> bool:
        """Settle the pending call; False when none is waiting (a second click, a turn already stopped)."""
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return False
        self._set_buttons(disabled=True)  # no second decision for the same call while this one travels
        self._set_status(f"running {pending.call.get('name')}…", FG_DIM)
        pending.loop.call_soon_threadsafe(_settle, pending.future, decision)
        return True

    def _open_panel(self, pending: _Pending) -> None:
        call = pending.call
        self.call_info.value = (
            f'<div style="margin:6px 0 2px">Step {pending.step}: the model asks to run '
            f'<b style="font-family:{MONO}">{esc(call.get("name"))}</b> with</div>'
            + code_block(_shown_arguments(call.get("input") or {}))
        )
        self.editor.children = ()
        self.problems.value = ""
        self.edit_form = self.mock_text = self.apply_button = None
        self._set_buttons(disabled=False)
        self.panel.layout.display = "flex"
        self._set_status(f"waiting for you: approve, edit, skip or mock {call.get('name')}", FG_DIM)

    def _close_panel(self) -> None:
        self.panel.layout.display = "none"
        self.editor.children = ()
        self.problems.value = ""

    def _set_buttons(self, *, disabled: bool) -> None:
        for button in (self.approve_button, self.edit_button, self.skip_button, self.mock_button):
            button.disabled = disabled
        if self.apply_button is not None:
            self.apply_button.disabled = disabled

    # -- Edit arguments ------------------------------------------------------------------------------
    def open_edit(self) -> None:
        """A form for the call's arguments, built from its tool's schema and filled with what the model sent."""
        from ..forms.schema_widgets import schema_widget

        pending = self._pending
        if pending is None:
            return
        tool = self.agent.current_tools().get(pending.call.get("name") or "")
        if tool is None:
            self._problem(f"no enabled tool is called {pending.call.get('name')!r}: no schema to edit against")
            return
        form = schema_widget(tool.parameters, body_arg=tool.body_arg)
        form.editor.set_value(dict(pending.call.get("input") or {}))
        run = W.Button(
            description="Run with these arguments", icon="play", button_style="primary", layout=W.Layout(**_FIT)
        )
        back = W.Button(description="Back", tooltip="close the form; the call still waits", layout=W.Layout(**_FIT))
        run.on_click(lambda _b: self.apply_edit())
        back.on_click(lambda _b: self._back())
        self.edit_form, self.mock_text, self.apply_button = form, None, run
        self.problems.value = ""
        self.editor.children = (form, W.HBox([run, back]))

    def apply_edit(self) -> bool:
        """Run the call with the form's arguments, once the tool's own schema accepts them."""
        pending, form = self._pending, self.edit_form
        if pending is None or form is None:
            return False
        collected = form.collect()
        if not collected.ok:
            self._problem("; ".join(f"{p.where}: {p.message}" if p.path else p.message for p in collected.problems))
            return False
        tool = self.agent.current_tools().get(pending.call.get("name") or "")
        if tool is None:
            self._problem(f"tool {pending.call.get('name')!r} is no longer enabled")
            return False
        arguments = _edited(pending.call.get("input") or {}, collected.value, tool.parameters)
        try:
            checked = tool.prepare(arguments) if tool.prepare is not None else arguments
            issues = tool.params.validate(checked)[1]
        except Exception as exc:  # a broken plugin schema: named, never raised into a click handler
            issues = [exc]
        if issues:
            self._problem(f"{tool.name} does not accept these arguments: {issues[0]}")
            return False
        return self.decide(ToolDecision.edit(arguments))

    # -- Mock result --------------------------------------------------------------------------------
    def open_mock(self) -> None:
        """A text box: a JSON object is the result as written; any other text is given as {"result": text}."""
        if self._pending is None:
            return
        text = W.Textarea(
            placeholder='{"content": "…", "success": true}   or plain text',
            layout=W.Layout(width="100%", height="6em"),
        )
        give = W.Button(description="Give this result", icon="magic", button_style="primary", layout=W.Layout(**_FIT))
        back = W.Button(description="Back", tooltip="close this; the call still waits", layout=W.Layout(**_FIT))
        give.on_click(lambda _b: self.apply_mock())
        back.on_click(lambda _b: self._back())
        self.mock_text, self.edit_form, self.apply_button = text, None, give
        self.problems.value = ""
        self.editor.children = (text, W.HBox([give, back]))

    def apply_mock(self) -> bool:
        if self._pending is None or self.mock_text is None:
            return False
        try:
            result = mock_result(self.mock_text.value)
        except ValueError as exc:
            self._problem(str(exc))
            return False
        return self.decide(ToolDecision.mock(result))

    def _back(self) -> None:
        self.editor.children = ()
        self.problems.value = ""
        self.edit_form = self.mock_text = self.apply_button = None

    # -- display ------------------------------------------------------------------------------------
    def _problem(self, text: str) -> None:
        self.problems.value = f'<div style="color:{ERROR}">✖ {esc(text)}</div>'

    def _set_status(self, text: str, color: str) -> None:
        self.status.value = f'<span style="color:{color};margin-left:8px">{esc(text)}</span>'


def _edited(asked: dict, value: Any, schema: dict) -> Any:
    """The form's arguments without the defaults it filled in for what the model left out: the recording
    then shows what the person changed, and the tool applies its defaults anyway."""
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties") or {}
    return {
        k: v
        for k, v in value.items()
        if k in asked or "default" not in properties.get(k, {}) or v != properties[k]["default"]
    }


def _shown_arguments(arguments: dict) -> str:
    text = json_text(arguments)
    if len(text) <= ARGUMENTS_SHOWN:
        return text
    more = len(text) - ARGUMENTS_SHOWN
    return text[:ARGUMENTS_SHOWN] + f"\n… {more:,} more characters (Edit arguments shows them all)"


def mock_result(text: str) -> dict:
    """What the model gets for a mocked call: a JSON object as written, other text as {"result": text}."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("write the result the model should get (a JSON object, or plain text)")
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except ValueError as exc:
            raise ValueError(f"this starts like a JSON object but is not one: {exc}") from None
        if isinstance(value, dict):
            return value
    return {"result": text, "success": True}


def start_step_turn(agent: Agent, message: dict, **options: Any) -> StepTurn:
    """Start a step-mode turn of `agent` and return its widget (the cell displays it and returns)."""
    if id(agent) in LIVE:
        raise UsageError(BUSY)
    turn = StepTurn(agent)
    hear_interrupts()
    turn.start(message, **options)
    return turn
