"""Live output of a running tool call: throttled updates of one display, replaced by the result.

A tool reports output through `ToolContext.progress` on the runtime thread (exec streams its stdout
and stderr). `LiveOutput` keeps only the last few KiB of each stream and the byte counts, so watching
a command that prints gigabytes costs no memory. A magic waits on the main thread and updates a
display handle there; a widget form updates its Output widget from the runtime thread.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import TYPE_CHECKING, Any

from ..render.exec import live_bundle
from .outputs import display_output

if TYPE_CHECKING:
    from ..runtime.agent import Agent
    from ..runtime.result import ToolResult

INTERVAL_S = 0.25  # at most four updates a second: enough to watch, cheap for the front end
FIRST_AFTER_S = 0.3  # a command that finishes sooner shows only its result, no flicker
_TAIL_BYTES = 4096
_TAIL_LINES = 15


class LiveOutput:
    """The progress callback of one call: bounded tails and byte counts, safe from any thread."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.args = dict(args)
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

    def bundle(self) -> dict[str, Any]:
        with self._lock:
            tails = {}
            for name, raw in self._tails.items():
                lines = bytes(raw).decode("utf-8", "replace").splitlines()[-_TAIL_LINES:]
                tails[name] = "\n".join(lines)
            sizes = dict(self._sizes)
        return live_bundle(self.args, tails, sizes, time.perf_counter() - self.started)

    def due(self) -> bool:
        """True when an update should be shown now (and counts it as shown)."""
        now = time.perf_counter()
        if now - self.started < FIRST_AFTER_S or now - self._last < INTERVAL_S:
            return False
        self._last = now
        return True


def call_live(agent: Agent, tool: str, args: dict[str, Any]) -> ToolResult:
    """agent.call() for a magic, showing live output in the cell while the call runs.

    A kernel interrupt cancels the call and waits for its cleanup (exec kills its processes), then
    re-raises; the last live view stays so the output seen so far is not lost.
    """
    from IPython.display import display

    live = LiveOutput(args)
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
        raise
    if handle is not None:
        handle.update({"text/plain": ""}, raw=True)  # the result, shown next, replaces the live view
    return result


class WidgetLive(LiveOutput):
    """LiveOutput that writes into an ipywidgets Output from the runtime thread, throttled."""

    def __init__(self, args: dict[str, Any], output: Any) -> None:
        super().__init__(args)
        self.output = output

    def __call__(self, stream: str, data: bytes) -> None:
        super().__call__(stream, data)
        if self.due():
            self.output.outputs = (display_output(self.bundle()),)
