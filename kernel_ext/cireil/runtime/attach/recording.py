"""The proxy's recorder in a process of its own: forwarding never waits on recording for the CPU or the GIL.

Measured (bench/proxy_latency.py): with `Capture` on a thread of the proxy's process, each recording (~1 ms
of JSON, masking and SQLite work per model call) held the GIL while the next request was being forwarded, and
a forwarding thread that gives up the GIL for a socket call waits up to the interpreter's switch interval (5 ms)
to get it back: that was the proxy's p99. Here the proxy's side only queues the exchange; a sender thread
writes it, framed, to the recorder's stdin (a pipe write gives up the GIL), and the recorder process (niced,
`python -m cireil.runtime.attach.recording AGENT_DIR`) runs the same `Capture` code. It answers on its stdout,
one JSON line per exchange with its counters, and its warnings as lines the proxy writes to its log.

Recording failures never fail a forward: a full queue drops the exchange (counted), a recorder that died is
said once and started again (up to RESTARTS times; the exchanges it held are counted as dropped), and after
that the proxy only forwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, fields
from pathlib import Path
from typing import IO, Any

from .capture import Capture, Exchange, ExchangeSink

RESTARTS = 3
_BLOBS = ("request", "reply")
_HEADER = 4  # bytes of the frame's header length


def encode(exchange: Exchange) -> bytes:
    """One frame: header length (4 bytes, big-endian), the JSON header, then the request and reply bytes."""
    head = {k: v for k, v in asdict(exchange).items() if k not in _BLOBS}
    head["sizes"] = [len(exchange.request), len(exchange.reply)]
    header = json.dumps(head).encode()
    return len(header).to_bytes(_HEADER, "big") + header + exchange.request + exchange.reply


def decode(stream: IO[bytes]) -> Exchange | None:
    """The next frame of `stream` (None at its end)."""
    size = stream.read(_HEADER)
    if len(size) < _HEADER:
        return None
    length = int.from_bytes(size, "big")
    header = stream.read(length)
    if len(header) < length:
        return None  # cut short: the proxy went away mid-frame
    head = json.loads(header)
    request_size, reply_size = head.pop("sizes")
    request, reply = stream.read(request_size), stream.read(reply_size)
    if len(request) < request_size or len(reply) < reply_size:
        return None  # cut short: the proxy went away mid-frame
    names = {f.name for f in fields(Exchange)}
    return Exchange(**{k: v for k, v in head.items() if k in names}, request=request, reply=reply)


class _Child:
    """One recorder process and what it was given and has finished."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.written = 0
        self.done = 0
        self.reader: threading.Thread | None = None


class RecordingProcess(ExchangeSink):
    """What the proxy sees of its recorder (the same face as `Capture`): submit, drain, stop and the counters."""

    def __init__(self, agent_dir: Path, *, log: Any = None) -> None:
        super().__init__(log)
        self.agent_dir = Path(agent_dir)
        self.problem: str | None = None
        self.recorded = 0
        self.failures = 0
        self.restarts = 0
        self._submitted = 0
        self._done = 0  # exchanges a recorder finished (recorded, failed or left out)
        self._lost = 0  # exchanges submitted that no recorder will finish (it died, or none could start)
        self._child: _Child | None = None
        self._sender = threading.Thread(target=self._send, name="cireil-proxy-recorder", daemon=True)
        self._started = False

    # -- the proxy's side --------------------------------------------------------------------------
    def start(self) -> RecordingProcess:
        if not self._started:
            self._started = True
            self._child = self._spawn()
            self._sender.start()
        return self

    def _accepted(self) -> None:
        self._submitted += 1

    def _settled(self) -> bool:
        return self._done + self._lost >= self._submitted

    def stop(self) -> None:
        """Record what is queued, let the recorder close its open turns and exit."""
        if not self._started:
            return
        self._queue.put(None)
        self._sender.join(timeout=60)
        child = self._child
        if child is not None:
            try:
                child.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait()
                self._say("stop", "the recorder did not finish within 30 s: stopped; its open turns stay open")
            if child.reader is not None:
                child.reader.join(timeout=5)

    # -- the sender thread -------------------------------------------------------------------------
    def _spawn(self) -> _Child | None:
        command = [sys.executable, "-m", "cireil.runtime.attach.recording", str(self.agent_dir)]
        try:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        except OSError as exc:
            self.problem = f"recording is off: the recorder process did not start ({exc}); forwarding only"
            self._say("spawn", self.problem)
            return None
        child = _Child(proc)
        child.reader = threading.Thread(target=self._read, args=(child,), name="cireil-proxy-recorder-out", daemon=True)
        child.reader.start()
        return child

    def _send(self) -> None:
        while True:
            exchange = self._queue.get()
            child = self._child
            if exchange is None:
                if child is not None and child.proc.stdin is not None:
                    with contextlib.suppress(OSError):
                        child.proc.stdin.close()  # end of input: it records the rest, closes its turns, exits
                return
            if child is None or child.proc.stdin is None:
                self._lose(1)
                continue
            try:
                child.proc.stdin.write(encode(exchange))
                child.written += 1
            except (OSError, ValueError):
                self._replace(child)
                self._lose(1)  # this exchange

    def _lose(self, count: int) -> None:
        self._lost += count
        self.dropped += count

    def _replace(self, child: _Child) -> None:
        """The recorder died: what it held is lost (counted, said once); a new one takes the next exchanges."""
        code = child.proc.wait()
        if child.reader is not None:
            child.reader.join(timeout=5)
        self._lose(child.written - child.done)
        if self.restarts < RESTARTS:
            self.restarts += 1
            self._say(f"died{self.restarts}", f"the recorder process ended (exit {code}): started again")
            self._child = self._spawn()
        else:
            self.problem = f"the recorder process ended (exit {code}) {RESTARTS + 1} times: forwarding only"
            self._say("gave-up", self.problem)
            self._child = None

    # -- the reader thread (one per recorder) ------------------------------------------------------
    def _read(self, child: _Child) -> None:
        assert child.proc.stdout is not None
        for line in child.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "say" in message:
                with contextlib.suppress(Exception):
                    print(message["say"], file=self.log, flush=True)
                continue
            if message.get("problem"):
                self.problem = message["problem"]
            self.recorded += message.get("recorded", 0)
            self.failures += message.get("failures", 0)
            if message.get("done"):
                child.done += 1
                self._done += 1


class _Lines:
    """A log for `Capture` in the recorder process: each line it prints goes to the proxy as {"say": line}."""

    def __init__(self, out: IO[bytes], lock: threading.Lock) -> None:
        self.out, self.lock = out, lock
        self.buffer = ""

    def write(self, text: str) -> int:
        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            _tell(self.out, self.lock, {"say": line})
        return len(text)

    def flush(self) -> None:
        return


def _tell(out: IO[bytes], lock: threading.Lock, message: dict) -> None:
    with lock:  # the recording thread and the closing main thread both write
        out.write((json.dumps(message) + "\n").encode())
        out.flush()


def main(argv: list[str] | None = None) -> int:
    """The recorder process: exchanges framed on stdin, recorded in order by `Capture` on its thread (which
    also closes idle turns), one line per exchange on stdout."""
    args = sys.argv[1:] if argv is None else argv
    # Ctrl-C on `cireil proxy` reaches its whole process group: the recorder ends when its input does instead,
    # after the proxy handed it everything
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)  # background work: on a busy machine the proxy's forwarding gets the CPU first
    out = sys.stdout.buffer
    lock = threading.Lock()
    capture = Capture(Path(args[0]), log=_Lines(out, lock))
    sent = {"recorded": 0, "failures": 0}

    def report() -> None:
        now = {"recorded": capture.recorded, "failures": capture.failures}
        _tell(out, lock, {"done": 1, **{k: now[k] - sent[k] for k in now}})
        sent.update(now)

    capture.on_done = report
    capture.start()
    if capture.problem:
        _tell(out, lock, {"problem": capture.problem})
    stdin = sys.stdin.buffer
    try:
        while True:
            exchange = decode(stdin)
            if exchange is None:
                break
            capture._queue.put(exchange)  # blocking: a recorder behind holds the pipe, the proxy's queue drops
    finally:
        capture.stop()  # the queue recorded, its open turns closed as unfinished, the store closed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
