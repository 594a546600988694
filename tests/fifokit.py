"""A call that must not block on a FIFO: run it in a thread, fail the test when it does (shared by the hostile
FIFO and runtime-root file tests)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest


def within(seconds: float, fn, fifo: Path):
    """fn() in a thread; when it blocks on `fifo`, the test fails (and the blocked open is let go)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for _ in range(100):  # a writer that closes: each blocked open goes on and reads EOF
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(0.1)
        pytest.fail(f"blocked on the FIFO {fifo.name} for {seconds} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
