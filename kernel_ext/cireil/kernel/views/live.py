"""A running tool call, shown while it runs: throttled updates of one display, replaced by the result.

A tool with live output (exec: its render module has `live_bundle`) gets a live panel with the last
lines of each stream; every other tool gets a neutral "running <tool> … N s" line. Both show the
elapsed time, so a command that prints at once and then stays silent is still seen to be running.

A tool reports output through `ToolContext.progress` on the runtime thread. `LiveOutput` keeps only
the last few KiB of each stream and the byte counts, so watching a command that prints gigabytes
costs no memory. A magic waits on the main thread and updates a display handle there; a widget form
has a ticker thread that updates its Output widget until the call ends.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import TYPE_CHECKING, Any

from ...render import live_view
from ...render.running import running_bundle
from ..outputs import display_output

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.base.loop import Submitted
    from ...runtime.toolkit.result import ToolResult

INTERVAL_S = 0.25  # at most four updates a second: enough to watch, cheap for the front end
FIRST_AFTER_S = 0.3  # a command that finishes sooner shows only its result, no flicker
_TAIL_BYTES = 4096
_TAIL_LINES = 15


def interrupted(message: str) -> KeyboardInterrupt:
    """The KeyboardInterrupt that ends a call or a turn a kernel interrupt stopped: shown as one line,
    `KeyboardInterrupt: <message>`, with none of cireil's frames (IPython shows `_render_traceback_`
    instead of a traceback). Still a KeyboardInterrupt, so Run All stops and code catching one sees it."""
    exc = KeyboardInterrupt(message)
    exc._render_traceback_ = lambda: [f"KeyboardInterrupt: {message}"]  # type: ignore[attr-defined]
    return exc


class LiveOutput:
    """The progress callback of one call: bounded tails and byte counts, safe from any thread."""

    def __init__(self, tool: str, args: dict[str, Any], *, hint: str = "") -> None:
        self.tool = tool
        self.args = dict(args)
        self.view = live_view(tool)  # None: the tool has no live output, a neutral line is shown
        self.hint = hint  # how to cancel, on the neutral line
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._tails = {"stdout": bytearray(), "stderr": bytearray()}
        self._sizes = {"stdout": 0, "stderr": 0}
        self._last = 0.0
        self.chunks = 0

    def __call__(self, stream: str, data: bytes) -> None:
        with self._lock:
            tail = self._tails.setdefault(stream, bytearray())
            tail += data[-_TAIL_BYTES:]
            del tail[:-_TAIL_BYTES]
            self._sizes[stream] = self._sizes.get(stream, 0) + len(data)
            self.chunks += 1

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def bundle(self, ended: str | None = None) -> dict[str, Any]:
        """The view now; with `ended` ("interrupted", "cancelled") the view of a call stopped that way."""
        if self.view is None:
            return running_bundle(self.tool, self.elapsed, ended=ended, hint=self.hint)
        with self._lock:
            tails = {}
            for name, raw in self._tails.items():
                lines = bytes(raw).decode("utf-8", "replace").splitlines()[-_TAIL_LINES:]
                tails[name] = "\n".join(lines)
            sizes = dict(self._sizes)
        return self.view(self.args, tails, sizes, self.elapsed, ended=ended)

    def due(self) -> bool:
        """True when an update should be shown now (and counts it as shown)."""
        now = time.perf_counter()
        if now - self.started < FIRST_AFTER_S or now - self._last < INTERVAL_S:
            return False
        self._last = now
        return True


def call_live(agent: Agent, tool: str, args: dict[str, Any]) -> ToolResult:
    """agent.call() for a magic, showing the running call in the cell.

    A kernel interrupt cancels the call and waits for its cleanup (exec kills its processes); the
    view then says "interrupted after N s", keeping the output seen so far, and the cell ends with
    one line.
    """
    from IPython.display import display

    live = LiveOutput(tool, args, hint="interrupt the kernel (■) to cancel")
    submitted = agent.submit_watched(tool, args, live)
    handle = None
    try:
        while True:
            try:
                result = submitted.result(timeout=0.05)
                break
            except concurrent.futures.TimeoutError:
                if live.due():
                    if handle is None:
                        handle = display(live.bundle(), raw=True, display_id=True)
                    else:
                        handle.update(live.bundle(), raw=True)
    except KeyboardInterrupt:
        submitted.cancel_and_wait()
        stopped = live.bundle(ended="interrupted")
        if handle is None:
            display(stopped, raw=True)
        else:
            handle.update(stopped, raw=True)
        raise interrupted(f"{tool} interrupted after {live.elapsed:.1f} s") from None
    if handle is not None:
        handle.update({"text/plain": ""}, raw=True)  # the result, shown next, replaces the live view
    return result


class WidgetLive(LiveOutput):
    """LiveOutput for a widget form: a ticker thread writes the view into an ipywidgets Output."""

    def __init__(self, tool: str, args: dict[str, Any], output: Any) -> None:
        super().__init__(tool, args)
        self.output = output
        self._shown = threading.Lock()
        self._ended = False

    def watch(self, submitted: Submitted) -> None:
        """Update the Output until `submitted` is done (or end() is called), from a thread of its own:
        output may stop arriving while the call runs on, and the elapsed time must still move."""

        def tick() -> None:
            while not submitted.done():
                time.sleep(0.05)
                if self.due():
                    with self._shown:
                        if self._ended:
                            return
                        self.output.outputs = (display_output(self.bundle()),)

        threading.Thread(target=tick, name=f"cireil-live-{self.tool}", daemon=True).start()

    def end(self, ended: str | None = None) -> None:
        """No live update lands after this; with `ended`, the view is left saying how the call stopped."""
        with self._shown:
            self._ended = True
            if ended is not None:
                self.output.outputs = (display_output(self.bundle(ended=ended)),)
