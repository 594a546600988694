"""Widget-backed tool calls: a form per tool generated from its parameter schema, and a palette of all.

The Run button submits the call to the runtime thread and returns at once, so the kernel keeps
running cells while a tool works. The result is written into the Output widget from the runtime
thread by assigning `outputs` (no `with out:` capture, which is lost across threads and awaits).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from ...render.html import ERROR, FG, FG_DIM, MONO, OK, code, esc, frame
from ...render.safe import safe_bundle
from ..display import result_mimebundle
from ..gone import mark
from ..outputs import display_output
from ..views.live import WidgetLive
from ..views.panels import cut_at_word
from .schema_widgets import Collected, SchemaWidget, schema_widget

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.base.loop import Submitted
    from ...runtime.toolkit.tool import Tool

__all__ = ["Palette", "ToolForm", "palette", "tool_form"]


def _error_bundle(tool: str, message: str, *, title: str) -> dict[str, Any]:
    body = f'<div style="color:{ERROR};white-space:pre-wrap">✖ {esc(message)}</div>'
    return safe_bundle(
        {"text/plain": f"{title}\n{message}", "text/html": frame(tool, body, title=esc(title), failed=True)}
    )


class ToolForm(W.VBox):
    """Description, parameter form, Run button with status, local problems, and the result below."""

    def __init__(self, agent: Agent, tool: Tool) -> None:
        header = W.HTML(
            f'<div style="font-family:{MONO};font-weight:600">{esc(tool.name)}'
            f' <span style="color:{FG_DIM};font-weight:normal;font-size:90%">({esc(tool.origin)})</span></div>'
            f'<div style="color:{FG};line-height:1.35;margin-bottom:4px">{esc(tool.description)}</div>'
        )
        params = schema_widget(tool.parameters, body_arg=tool.body_arg)
        run_button = W.Button(
            description="Run", icon="play", button_style="primary", tooltip=f"run {tool.name} with these arguments"
        )
        # A kernel interrupt does not reach a widget call (it runs on the runtime thread), hence a button.
        cancel_button = W.Button(
            description="Cancel", icon="stop", disabled=True, tooltip=f"cancel the running {tool.name}"
        )
        status = W.HTML("")
        problems = W.HTML("")
        output = W.Output()
        from .callhistory import CallHistoryPicker

        history = CallHistoryPicker(agent, tool.name, self.refill)
        super().__init__([header, params, W.HBox([run_button, cancel_button, status]), problems, output, history])
        self.agent = agent
        self.tool_name = tool.name
        self.tool = tool
        self.history = history
        self.params: SchemaWidget = params
        self.run_button = run_button
        self.cancel_button = cancel_button
        self.status = status
        self.problems = problems
        self.output = output
        self.last_call: Submitted | None = None
        self._idle = threading.Event()
        self._idle.set()
        run_button.on_click(self._on_run)
        cancel_button.on_click(self._on_cancel)
        for field in _text_fields(params):  # Enter in a one-line field runs the form, as in any form
            field._submission_callbacks.register_callback(self._on_run)  # on_submit(), minus its deprecation
        mark(self)  # says so once the kernel is restarted

    def __repr__(self) -> str:
        # The text/plain a terminal or nbclient shows instead of the widget tree.
        required = set(self.params.schema.get("required") or ())
        names = ", ".join(f"{n}*" if n in required else n for n in self.fields)
        return f"<cireil form {self.tool_name}({names})>"

    @property
    def fields(self) -> dict:
        return self.params.fields

    def collect(self) -> Collected:
        return self.params.collect()

    def refill(self, arguments: dict) -> None:
        """A fresh form holding `arguments` (fields they leave out back to their defaults), ready to edit and Run."""
        params = schema_widget(self.tool.parameters, body_arg=self.tool.body_arg)
        params.editor.set_value(arguments)
        children = list(self.children)
        children[children.index(self.params)] = params
        self.params = params
        self.children = tuple(children)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no call is in flight and its result is shown; False on timeout."""
        return self._idle.wait(timeout)

    # -- running --------------------------------------------------------------------------------
    def _on_run(self, _button: Any = None) -> None:
        if not self._idle.is_set():
            return  # a call is in flight (the button is disabled, but a click may already be queued)
        collected = self.collect()
        self._show_problems(collected)
        if not collected.ok:
            return
        try:
            live = WidgetLive(self.tool_name, collected.value, self.output)  # the running call, in the result area
            submitted = self.agent.submit_watched(self.tool_name, collected.value, live)
        except Exception as exc:
            # A broken tools.toml, a tool since disabled, a closed agent. An exception raised in a
            # widget callback only reaches the browser's log, so it is shown where the result goes.
            self._show(_error_bundle(self.tool_name, str(exc), title=f"cannot run {self.tool_name}"))
            self._set_status("✖ not run", ERROR)
            return
        self._idle.clear()
        self.last_call = submitted
        self.run_button.disabled = True
        self.cancel_button.disabled = False
        self._set_status("running…", FG_DIM)
        started = time.perf_counter()
        live.watch(submitted)
        submitted.add_done_callback(lambda done: self._finished(done, started, live))

    def _finished(self, submitted: Submitted, started: float, live: WidgetLive) -> None:
        """Runs on the runtime thread once the call has ended."""
        try:
            elapsed = time.perf_counter() - started
            try:
                result = submitted.result(0)
            except concurrent.futures.CancelledError:
                live.end("cancelled")  # the output seen so far stays, marked as cancelled
                self._set_status(f"cancelled after {elapsed:.1f} s", FG_DIM)
                return
            except Exception as exc:
                live.end()
                self._show(_error_bundle(self.tool_name, f"{type(exc).__name__}: {exc}", title="the call failed"))
                self._set_status("✖ error", ERROR)
                return
            live.end()
            try:
                bundle = result_mimebundle(result, widgets=True)
            except Exception as exc:  # a rendering bug must not hide the result itself
                bundle = {"text/plain": f"{result!r}\n{result.data!r}\n(rendering failed: {exc})"}
            self._show(bundle)
            if result.success:
                self._set_status(f"✓ done in {elapsed:.2f} s", OK)
            else:
                self._set_status(f"✖ failed after {elapsed:.2f} s", ERROR)
        finally:
            self.cancel_button.disabled = True
            self.run_button.disabled = False
            try:
                self.history.refresh()  # the call just made is the newest saved call
            finally:
                self._idle.set()

    def _on_cancel(self, _button: Any = None) -> None:
        call = self.last_call
        if call is not None and not call.done():
            self._set_status("cancelling…", FG_DIM)
            call.cancel()  # the tool's own cleanup runs; the done callback then reports "cancelled"

    # -- display --------------------------------------------------------------------------------
    def _show(self, bundle: dict[str, Any]) -> None:
        try:
            self.output.outputs = (display_output(bundle),)
        except Exception:  # a value the widget protocol cannot serialize: keep the plain text
            self.output.outputs = (display_output({"text/plain": str(bundle.get("text/plain", ""))}),)

    def _set_status(self, text: str, color: str) -> None:
        self.status.value = f'<span style="color:{color};margin-left:8px">{esc(text)}</span>'

    def _show_problems(self, collected: Collected) -> None:
        if collected.ok:
            self.problems.value = ""
            return
        items = "".join(
            f"<li>{code(p.where)} {esc(p.message)}</li>" if p.path else f"<li>{esc(p.message)}</li>"
            for p in collected.problems
        )
        self.problems.value = (
            f'<div style="color:{ERROR}">Fix before running:<ul style="margin:2px 0">{items}</ul></div>'
        )


def tool_form(agent: Agent, name: str) -> ToolForm:
    """The form for one enabled tool; raises UnknownToolError when `name` is not enabled."""
    agent.refresh_quietly()  # a tool enabled since the last call should have its form
    return ToolForm(agent, agent.tool(name))


def _text_fields(widget: Any) -> list[W.Text]:
    found = [widget] if isinstance(widget, W.Text) else []
    for child in getattr(widget, "children", ()):
        found += _text_fields(child)
    return found


def _title(tool: Tool) -> str:
    first = tool.description.split(". ", 1)[0].strip().rstrip(".")
    return f"{tool.name} — {cut_at_word(first, 70)}" if first else tool.name


# ipywidgets draws accordion titles in the secondary text colour on a grey bar, hard to read; ours take the
# primary colour. Scoped to this widget's class, like kernel/gone.py's rule: nothing else on the page changes.
_PALETTE_STYLE = "<style>.cireil-palette .jupyter-widget-Collapse-header{color:var(--jp-ui-font-color1)}</style>"


class Palette(W.VBox):
    """All enabled tools, one accordion section each; a form is built when its section first opens."""

    def __init__(self, agent: Agent) -> None:
        tools = agent.tools
        slots = [W.VBox([]) for _ in tools]
        accordion = W.Accordion(children=slots, titles=tuple(_title(t) for t in tools))
        count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}" if tools else "no tools enabled"
        header = W.HTML(
            _PALETTE_STYLE + f'<span style="font-weight:600">{esc(agent.slug)}</span>'
            f' <span style="color:{FG}">· {esc(count)} · open a tool to call it</span>'
        )
        super().__init__([header, accordion])
        self.add_class("cireil-palette")
        mark(self)
        self.agent = agent
        self.accordion = accordion
        self.tools = {t.name: t for t in tools}
        self.forms: dict[str, ToolForm] = {}
        self._slots = dict(zip(self.tools, slots, strict=True))
        accordion.observe(self._opened, "selected_index")

    def __repr__(self) -> str:
        return f"<cireil palette {self.agent.slug}: {', '.join(self.tools) or 'no tools enabled'}>"

    def form(self, name: str) -> ToolForm:
        """The form of tool `name`, built now if its section was never opened."""
        if name not in self.forms:
            form = ToolForm(self.agent, self.tools[name])
            self.forms[name] = form
            self._slots[name].children = (form,)
        return self.forms[name]

    def _opened(self, change: dict) -> None:
        index = change["new"]
        if index is not None:
            self.form(list(self.tools)[index])


def palette(agent: Agent) -> Palette:
    """One widget with a form for every enabled tool (what `%cireil ui` shows)."""
    return Palette(agent)
