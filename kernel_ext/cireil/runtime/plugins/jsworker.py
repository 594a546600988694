"""One Node process running one JS plugin of the original (js/host.mjs), seen from Python.

The process is ours to end: a call that outlives its timeout, or is cancelled (kernel interrupt, the form's
Cancel), kills it at once, and the next call starts a fresh one. A plugin cannot stall the kernel: loading
waits at most LOAD_TIMEOUT_S, every read of the worker is done by threads of its own, and the plugin's
stdout and stderr go to a bounded log (the last LOG_BYTES), shown with every failure.

Protocol (JSON lines; the host's header comment is the reference): we write to its stdin, it writes to a
pipe of its own (the fd named in its argument), so a plugin's console.log never mixes with the protocol.

The process runs under Node's permission model with a heap cap (jssandbox.py says what it may touch): a
refused access is the plugin's error (host.mjs names what was refused), and running out of heap ends the
worker with a message saying so; the next call starts a fresh one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import resource
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ToolError
from . import jssandbox

HOST = Path(__file__).with_name("js") / "host.mjs"
LOAD_TIMEOUT_S = 60.0
LOG_BYTES = 64 * 1024  # tail of the plugin's stdout+stderr kept
LOG_SHOWN = 2000  # characters of that tail put into a message

# A host service: (method, args) -> value (JSON-able); raises to send the plugin an error.
Service = Callable[[str, list], Awaitable[Any]]


class PluginLoadError(Exception):
    """The plugin did not load: `what` says what to do."""

    def __init__(self, message: str, what: str = "", log: str = "") -> None:
        super().__init__(message)
        self.message, self.what, self.log = message, what, log


class PluginCallError(Exception):
    """The plugin's tool threw (name "ToolError" is the plugin's own tool failure, with its hint)."""

    def __init__(self, name: str, message: str, hint: str | None = None, stack: str | None = None) -> None:
        super().__init__(message)
        self.name, self.message, self.hint, self.stack = name, message, hint, stack


class WorkerGone(Exception):
    """The worker died, timed out or was interrupted during a call (it restarts on the next)."""


def _no_core_dump() -> None:
    # V8 aborts when a worker outgrows its heap cap; no core file of it lands in the runtime root
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$b64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def decode_bytes(value: Any) -> Any:
    """{"$b64": ...} -> bytes, anywhere in a decoded message."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$b64"), str):
            return base64.b64decode(value["$b64"])
        return {k: decode_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_bytes(v) for v in value]
    return value


class BoundedLog:
    """The last LOG_BYTES of what the plugin printed, stdout and stderr interleaved by arrival."""

    def __init__(self, limit: int = LOG_BYTES) -> None:
        self.limit = limit
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self.dropped = 0
        self._lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self._lock:
            self._chunks.append(data)
            self._size += len(data)
            while self._size > self.limit and self._chunks:
                first = self._chunks[0]
                extra = self._size - self.limit
                if len(first) <= extra:
                    self._chunks.popleft()
                    self._size -= len(first)
                    self.dropped += len(first)
                else:
                    self._chunks[0] = first[extra:]
                    self._size -= extra
                    self.dropped += extra

    def note(self, line: str) -> None:
        self.add(f"[cireil] {line}\n".encode())

    def text(self) -> str:
        with self._lock:
            data = b"".join(self._chunks)
        head = f"[... {self.dropped:,} earlier bytes dropped]\n" if self.dropped else ""
        return head + data.decode("utf-8", "replace")

    def tail(self, chars: int = LOG_SHOWN) -> str:
        text = self.text().rstrip()
        return text if len(text) <= chars else "..." + text[-chars:]


@dataclass
class Manifest:
    plugin_name: str
    tools: list[dict]  # {name, description, jsonSchema}
    extractors: list[dict] = field(default_factory=list)  # {glob, priority}


class _Call:
    """One call in flight: the messages meant for it, handed from the reader thread to its event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[dict] | None = asyncio.Queue() if loop is not None else None
        self.sync: deque[dict] = deque()
        self.ready = threading.Event()

    def put(self, message: dict) -> None:
        if self.loop is not None and self.queue is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                self.loop.call_soon_threadsafe(self.queue.put_nowait, message)
        else:
            self.sync.append(message)
            self.ready.set()


class PluginWorker:
    """A plugin's worker: started on demand, restarted after it died, ended on timeout or interrupt."""

    def __init__(self, node: str, init: dict, env: dict[str, str], cwd: str) -> None:
        self.node, self.init, self.env, self.cwd = node, init, env, cwd
        self.log = BoundedLog()
        self.manifest: Manifest | None = None
        self.starts = 0
        self.last_exit: str | None = None  # how the previous process ended, for messages
        self._proc: subprocess.Popen[bytes] | None = None
        self._calls: dict[int, _Call] = {}
        self._ids = itertools.count(1)
        self._lock = threading.RLock()  # start/kill and writes to its stdin
        self._loaded: threading.Event = threading.Event()
        self._load_result: dict | None = None

    @property
    def label(self) -> str:
        return str(self.init.get("id"))

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- life --------------------------------------------------------------------------------------------
    def start(self, timeout: float = LOAD_TIMEOUT_S) -> Manifest:
        """Start the process (if not running) and wait for its manifest; PluginLoadError if it does not load."""
        with self._lock:
            if self.alive and self.manifest is not None:
                return self.manifest
            self._spawn()
        if not self._loaded.wait(timeout):
            self.kill(f"it did not load within {timeout:g} s")
            raise PluginLoadError(
                f"plugin {self.label} did not finish loading within {timeout:g} s (its worker was stopped)",
                "see its log; a plugin's factory must not wait on the network or a prompt",
                self.log.tail(),
            )
        result = self._load_result or {"t": "fatal", "message": f"plugin {self.label}'s worker exited while loading"}
        if result.get("t") != "manifest":
            self.kill(None)
            raise PluginLoadError(str(result.get("message")), str(result.get("what") or ""), self.log.tail())
        manifest = Manifest(
            str(result.get("pluginName")), list(result.get("tools") or []), list(result.get("extractors") or [])
        )
        self.manifest = manifest
        return manifest

    def _spawn(self) -> None:
        read_end, write_end = os.pipe()
        modules = self.env.get("CIREIL_PLUGIN_MODULES", "").split(os.pathsep)
        flags = jssandbox.node_flags(self.node, self.init, modules, HOST.parent)
        try:
            self._proc = subprocess.Popen(
                [self.node, *flags, str(HOST), json.dumps({**self.init, "fd": write_end})],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_end,),
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # a kernel interrupt (SIGINT to our group) is ours to pass on, not its
                preexec_fn=_no_core_dump,
            )
        except OSError as exc:
            os.close(read_end)
            os.close(write_end)
            raise PluginLoadError(
                f"plugin {self.label}: cannot start {self.node}: {exc}", "check the Node binary"
            ) from None
        os.close(write_end)
        self.starts += 1
        self._loaded = threading.Event()
        self._load_result = None
        self.manifest = None
        sandboxed = any("permission" in flag for flag in flags)
        self.log.note(
            f"worker started (pid {self._proc.pid}, start {self.starts}, heap cap {jssandbox.HEAP_MB} MB"
            + (", sandboxed)" if sandboxed else f"; {self.node} has no permission model: NOT sandboxed)")
        )
        proc = self._proc
        drains = [
            threading.Thread(target=self._drain, args=(stream,), daemon=True, name=f"plugin-log-{self.label}")
            for stream in (proc.stdout, proc.stderr)
        ]
        for thread in drains:
            thread.start()
        threading.Thread(
            target=self._read, args=(proc, read_end, drains), daemon=True, name=f"plugin-{self.label}"
        ).start()

    def _drain(self, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: stream.read1(8192), b""):
                self.log.add(chunk)

    def _read(self, proc: subprocess.Popen[bytes], fd: int, drains: list[threading.Thread]) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for line in pipe:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                kind = message.get("t")
                if kind in ("manifest", "fatal"):
                    self._load_result = message
                    self._loaded.set()
                elif kind in ("done", "cb"):
                    call = self._calls.get(message.get("call") if kind == "cb" else message.get("id"))
                    if call is not None:
                        call.put(message)
        code = proc.wait()
        for thread in drains:  # its last words (V8's out-of-memory report) reach the log before we read it
            thread.join(2)
        ended = f"exited with code {code}" if code >= 0 else f"was ended by signal {-code}"
        said = self.log.tail(8000)
        said = said[max(0, said.rfind(f"(pid {proc.pid},")) :]  # this process's lines, not an earlier one's
        if code != 0 and jssandbox.OUT_OF_HEAP.search(said):
            ended = f"ran out of memory (its heap is capped at {jssandbox.HEAP_MB} MB) and {ended}"
        if proc is self._proc:
            self.last_exit = self.last_exit or ended
        self.log.note(f"worker {ended}")
        self._loaded.set()  # a load in progress sees no manifest: it failed
        for call in list(self._calls.values()):
            call.put({"t": "gone", "why": ended})

    def kill(self, why: str | None) -> None:
        """End the process now (SIGKILL: a hung plugin gets no say), if it is running."""
        with self._lock:
            proc, self._proc = self._proc, None
            self.manifest = self.manifest if proc is None else None
        if proc is None or proc.poll() is not None:
            return
        if why:
            self.log.note(f"worker stopped: {why}")
            self.last_exit = why
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)

    def _send(self, message: dict) -> None:
        data = (json.dumps(_encode(message), ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None:
                raise WorkerGone("its worker is not running")
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                raise WorkerGone("its worker closed its input") from None

    # -- calls -------------------------------------------------------------------------------------------
    async def call(self, tool: str, payload: dict, ctx: dict, service: Service, timeout: float) -> dict:
        """Run one tool call; its value, or PluginCallError (the plugin threw), WorkerGone (died/timeout)."""
        loop = asyncio.get_running_loop()
        if not (self.alive and self.manifest is not None):
            await loop.run_in_executor(None, self.start)  # a restart never blocks the runtime loop
        number = next(self._ids)
        call = _Call(loop)
        self._calls[number] = call
        deadline = time.monotonic() + timeout
        try:
            self._send({"t": "call", "id": number, "tool": tool, "input": payload, "ctx": ctx})
            assert call.queue is not None
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(call.queue.get(), left)
                kind = message.get("t")
                if kind == "cb":
                    await self._answer(message, service)
                elif kind == "gone":
                    raise WorkerGone(f"its worker {message.get('why')} during the call")
                elif kind == "done":
                    if message.get("ok"):
                        return decode_bytes(message.get("value"))
                    error = message.get("error") or {}
                    raise PluginCallError(
                        str(error.get("name") or "Error"),
                        str(error.get("message") or "the plugin's tool failed"),
                        error.get("hint"),
                        error.get("stack"),
                    )
        except TimeoutError:
            self.kill(f"tool '{tool}' did not finish within {timeout:g} s")
            raise WorkerGone(
                f"tool '{tool}' did not finish within {timeout:g} s (limits.plugin_timeout_s in config/cireil.toml); "
                "its worker was stopped and starts again on the next call"
            ) from None
        except asyncio.CancelledError:
            self.kill(f"tool '{tool}' was interrupted")
            raise
        finally:
            self._calls.pop(number, None)

    async def _answer(self, message: dict, service: Service) -> None:
        method = str(message.get("method"))
        try:
            value = await service(method, decode_bytes(message.get("args") or []))
            reply: dict = {"t": "cbr", "id": message.get("id"), "ok": True, "value": value}
        except Exception as exc:  # any refusal or failure becomes the plugin's rejected promise
            hint = getattr(exc, "hint", None)
            text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            name = "ToolError" if isinstance(exc, ToolError) else type(exc).__name__
            reply = {"t": "cbr", "id": message.get("id"), "ok": False, "error": {"name": name, "message": text}}
            if hint:
                reply["error"]["hint"] = hint
        with contextlib.suppress(WorkerGone):  # it died meanwhile: the call sees "gone" next
            self._send(reply)

    def extract(self, path: str, content: str, timeout: float) -> list[dict]:
        """Outline sections of a file from the plugin's extractors (blocking, bounded); [] when it fails."""
        if not (self.alive and self.manifest is not None):
            self.start()
        number = next(self._ids)
        call = _Call(None)
        self._calls[number] = call
        try:
            self._send({"t": "extract", "id": number, "path": path, "content": content})
            if not call.ready.wait(timeout):
                self.kill(f"extractor for {path} did not finish within {timeout:g} s")
                return []
            message = call.sync.popleft()
            if message.get("t") == "done" and message.get("ok") and isinstance(message.get("value"), list):
                return message["value"]
            self.log.note(f"extractor for {path} failed: {(message.get('error') or {}).get('message')}")
            return []
        finally:
            self._calls.pop(number, None)
