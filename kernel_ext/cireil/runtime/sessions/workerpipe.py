"""The kernel's side of an index build's worker process (indexworker.py), and the frames both sides speak.

`IndexBuilder` (indexbuild.py) starts one or more workers and talks to each over its stdin and stdout in
frames: a length, then a pickle of plain values (str, int, float, None, list, tuple). The kernel reads them
with `plain_loads`, which refuses every class, so a worker that went wrong cannot make the kernel run
anything. The first frame names the database and its columns; each later frame is a list of (row id, whether
that id is a BadText), answered by one frame per row in the same order:

- `None` when the row is gone;
- `("entry", size, fields)`: the row's history bytes and the RowIndex fields after row_id (fingerprint ...
  prefix_hash);
- `("failed", message)`: reading the row raised, as it would have in the kernel.

A worker runs in a session of its own, so the interrupt a kernel's process group gets (the notebook's stop
button) does not reach it, and ends at the end of its stdin: when the kernel closes the pipe, exits or is
killed.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import select
import struct
import subprocess
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO

# -c, not -m: the package's __init__ imports the worker's module, which -m would then run a second time
_START = "import sys; sys.path[:] = sys.argv[1:]; from cireil.runtime.sessions.indexworker import main; main()"
_LENGTH = struct.Struct("!Q")
# above any answer: a row's history is at most SQLite's longest value (1 GB by default, 2 GB at most)
MAX_FRAME = 1 << 33


def _frame(value: Any) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def write_frame(out: BinaryIO, value: Any) -> None:
    out.write(_frame(value))


class _Plain(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"an index worker sent {module}.{name}: only plain values are taken")


def plain_loads(data: bytes) -> Any:
    return _Plain(io.BytesIO(data)).load()


def read_frame(source: BinaryIO) -> Any:
    """The next frame's value; EOFError when the stream ends (between frames or inside one)."""
    head = source.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    if size > MAX_FRAME:
        raise pickle.UnpicklingError(f"an index worker sent a frame of {size} bytes")
    data = source.read(size)
    if len(data) < size:
        raise EOFError
    return plain_loads(data)


class WorkerProcess:
    """The kernel's end of one worker: ask for rows, read their answers in order, end it."""

    def __init__(self, uri: str, columns: list[str]) -> None:
        """Starts the process; OSError (or ValueError: no interpreter to start) when it cannot be."""
        if not sys.executable:
            raise ValueError("no Python interpreter to start (sys.executable is empty)")
        # the kernel's own import path, in its order (PYTHONPATH would put it before the standard library), so
        # that the worker imports this very cireil and its dependencies; without the working directory (the
        # notebook's folder, which IPython puts first), where a json.py would stand in for the standard
        # library's in the worker, which imports it afresh. -I: no PYTHON* variable changes what starts
        here = os.getcwd()
        path = [str(entry) for entry in sys.path if entry and os.path.abspath(entry) != here]
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", _START, *path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._asks = self.process.stdin
        self._answers = self.process.stdout
        try:
            self._send(_frame((uri, columns)))
        except OSError:
            self.end()
            raise

    def _send(self, frame: bytes) -> None:
        assert self._asks is not None
        self._asks.write(frame)
        self._asks.flush()

    def ask(self, row_ids: Sequence[str], *, early: bool = False) -> bool:
        """Ask for rows; OSError (a broken pipe) when the worker is gone. early: the worker may still be writing
        answers to the last ask, having read all of it: the ask is sent only if it fits in a pipe however
        small (PIPE_BUF), which takes it without waiting; otherwise both could wait on each other. False
        when it was not sent."""
        frame = _frame([(str(row_id), type(row_id) is not str) for row_id in row_ids])  # a BadText id is marked
        if early and len(frame) > select.PIPE_BUF:
            return False
        self._send(frame)
        return True

    def answer(self) -> Any:
        """The answer to the next row asked; EOFError when the worker is gone."""
        assert self._answers is not None
        return read_frame(self._answers)

    def end(self) -> None:
        """Close its stdin (it exits) and make sure it has: killed when it has not within a moment."""
        for stream in (self._asks, self._answers):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        """End it now (stop() of the build: a reader waiting for an answer then reads the end of the stream)."""
        with contextlib.suppress(OSError):  # gone already
            self.process.kill()
