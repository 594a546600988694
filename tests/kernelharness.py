"""A real Jupyter kernel driven through jupyter_client, the way a front end drives it.

Tests use it to run cells and read exactly the messages a notebook would receive: execute_result
and display_data bundles, stream output, errors, and widget comm traffic.
"""

from __future__ import annotations

import os
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager


@dataclass
class CellRun:
    msg_id: str
    status: str = ""
    messages: list[dict] = field(default_factory=list)  # every iopub message whose parent is this cell
    reply: dict = field(default_factory=dict)

    def of_type(self, *types: str) -> list[dict]:
        return [m for m in self.messages if m["msg_type"] in types]

    @property
    def bundles(self) -> list[dict]:
        """MIME bundles shown by the cell (display_data, update_display_data and execute_result)."""
        return [m["content"]["data"] for m in self.of_type("display_data", "update_display_data", "execute_result")]

    @property
    def result(self) -> dict | None:
        found = self.of_type("execute_result")
        return found[-1]["content"]["data"] if found else None

    @property
    def stdout(self) -> str:
        return "".join(m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stderr")

    @property
    def error(self) -> dict | None:
        found = self.of_type("error")
        return found[-1]["content"] if found else None

    def text(self) -> str:
        """Everything a person would read in the cell's output area, as plain text."""
        parts = [self.stdout, self.stderr]
        parts += [b.get("text/plain", "") for b in self.bundles]
        if self.error:
            parts.append(f"{self.error['ename']}: {self.error['evalue']}")
        return "\n".join(p for p in parts if p)


class Kernel:
    """One running kernel with a blocking client; `comm_messages` keeps widget traffic seen so far."""

    def __init__(self, cwd: str | Path | None = None, env: dict[str, str] | None = None) -> None:
        self.km = KernelManager(kernel_name="python3")
        kernel_env = dict(os.environ)
        kernel_env.update(env or {})
        self.km.start_kernel(cwd=str(cwd) if cwd else None, env=kernel_env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.comm_messages: list[dict] = []
        self._other: list[dict] = []
        self._pending: str | None = None  # the last cell submitted and not yet collected
        self._started: set[str] = set()  # cells whose execute_input the kernel has published

    def submit(self, code: str) -> str:
        """Queue a cell without waiting (what a front end does when you run several cells)."""
        self._pending = self.kc.execute(code, allow_stdin=False)
        return self._pending

    def collect(self, msg_id: str, timeout: float = 60) -> CellRun:
        """Wait until the cell `msg_id` is idle and its reply arrived; return what it produced."""
        run = CellRun(msg_id)
        deadline = time.monotonic() + timeout
        idle = False
        pending = [m for m in self._other if m["parent_header"].get("msg_id") == msg_id]
        self._other = [m for m in self._other if m["parent_header"].get("msg_id") != msg_id]
        for msg in pending:
            idle = self._take(run, msg) or idle
        while not idle:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                self._keep(msg)
                continue
            idle = self._take(run, msg) or idle
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell {msg_id} did not finish in {timeout}s")
        while not run.reply:
            reply = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                run.reply = reply["content"]
        run.status = run.reply.get("status", "")
        if self._pending == msg_id:
            self._pending = None
        return run

    def _note(self, msg: dict) -> None:
        if msg["msg_type"].startswith("comm_"):
            self.comm_messages.append(msg)
        if msg["msg_type"] == "execute_input":
            self._started.add(msg["parent_header"].get("msg_id"))

    def _keep(self, msg: dict) -> None:
        self._note(msg)
        self._other.append(msg)

    def _take(self, run: CellRun, msg: dict) -> bool:
        self._note(msg)
        run.messages.append(msg)
        return msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"

    def run(self, code: str, timeout: float = 60, *, ok: bool = True) -> CellRun:
        """Run one cell and wait; with ok=True a cell error fails the calling test with its traceback."""
        run = self.collect(self.submit(code), timeout)
        if ok and run.status != "ok":
            err = run.error or {}
            raise AssertionError(
                f"cell failed: {err.get('ename')}: {err.get('evalue')}\n" + "\n".join(err.get("traceback", []))
            )
        return run

    def drain(self, timeout: float = 0.5) -> None:
        """Read iopub messages that arrive outside any cell we wait on (e.g. widget updates)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            self._keep(msg)

    def wait_for_display(self, msg_id: str, kind: str, needle: str, timeout: float = 30) -> dict:
        """The first `kind` message (display_data, update_display_data) of the running cell `msg_id` whose
        text/plain has `needle`, waiting for it; what arrives meanwhile is kept for `collect`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in self._other:
                ours = msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == kind
                if ours and needle in msg["content"]["data"].get("text/plain", ""):
                    return msg
            self.drain(0.2)
        raise AssertionError(f"no {kind} with {needle!r} within {timeout}s")

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> None:
        """Send a comm message as a front end would (e.g. a widget button click)."""
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    def wait_started(self, msg_id: str, timeout: float = 60) -> None:
        """Wait until the kernel runs the cell `msg_id` (its execute_input is out), keeping what arrives."""
        deadline = time.monotonic() + timeout
        while msg_id not in self._started:
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell {msg_id} did not start in {timeout}s")
            try:
                self._keep(self.kc.get_iopub_msg(timeout=0.1))
            except queue.Empty:
                continue

    def interrupt(self) -> None:
        """SIGINT to the kernel, as the ■ button. ipykernel ignores SIGINT between messages and hears it
        only while it handles one (its pre_handler_hook installs the handler just before execute_input goes
        out): an interrupt sent while the last submitted cell still sat in the queue was dropped, and the
        cell ran on (a loaded machine took over a second to start it). So a pending cell is first seen
        started; with none pending (step mode between cells) the interrupt goes at once, as intended."""
        if self._pending is not None:
            self.wait_started(self._pending)
        self.km.interrupt_kernel()

    def shutdown(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
