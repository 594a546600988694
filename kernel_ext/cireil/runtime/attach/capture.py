"""Exchanges the proxy forwarded, recorded as turns of the original's sessions in cireil-recordings.db.

The proxy hands each finished exchange to `Capture.submit` and goes on; one background thread records them
in order. Nothing here can fail a forward: a full queue drops the exchange (counted), any error is said once
on stderr and recording goes on with the next exchange (or stops, if the store itself broke).

Turns: a request starts a new turn of its session unless that session has an open turn whose last reply
did not end it. The original ends a turn when the model calls `no-response`, or `respond` without
`final: false`; a reply without tool calls or an HTTP error is followed by a retry in the same turn. Each step
is written when its reply is in, its tool calls' results when the next request of the turn carries them
(the results of a turn's last calls never travel to the model, so they stay "not sent"). A turn with no new
request for IDLE_END seconds is closed as "unfinished".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import queue
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.secrets import mask, mask_data
from ..recorder.recording import blob_hash
from ..recorder.settings import RecorderSettings, SettingsError, load_settings
from ..recorder.store import LISTS, RECORDINGS_FILE, RecordingStore, RecordingStoreError
from .link import link
from .wire import messages_of, read_reply, tool_results, user_texts

QUEUE_LIMIT = 256  # exchanges waiting to be recorded; beyond it one is dropped (the forward is never held)
IDLE_END = 15 * 60.0  # seconds without a request before an open turn is closed as unfinished
NOT_SENT = {"notSent": "the original never sends the result of a turn's last tool calls to the model"}
# the volatile messages the original appends after the history on every call (its metadata, opened files)
VOLATILE_PREFIXES = ("Current date: ", "<opened_files>")


@dataclass
class Exchange:
    """One forwarded request and its reply, as the bytes went through."""

    provider: str  # the engine.toml provider it was sent to
    kind: str | None  # openai | anthropic | openai-codex, None for a path that is only forwarded
    method: str
    path: str
    headers: dict[str, str]  # lower-case names; only read for linking, never stored
    request: bytes
    status: int
    content_type: str
    reply: bytes  # decoded (no content-encoding)
    started: float  # unix time the request arrived
    ttft: float | None  # seconds to the first byte of the reply body
    latency: float  # seconds to its end
    failure: str | None = None  # the forward itself failed (the original got a 502 from the proxy)


@dataclass
class _OpenTurn:
    turn_id: int
    session: str
    started: float
    kind: str
    platform: str | None = None
    n: int = 0
    last: dict | None = None  # the last step written: its request skeleton, reply, calls and timings
    usage: dict[str, int] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)  # blobs this turn already wrote
    touched: float = field(default_factory=time.monotonic)
    ended: str | None = None


def terminal(reply: dict) -> str | None:
    """How a reply ends its turn in the original ("respond" | "no-response"), None if the turn goes on."""
    for call in reply.get("tool_calls") or ():
        if call.get("name") == "no-response":
            return "no-response"
        if call.get("name") == "respond" and (call.get("arguments") or {}).get("final") is not False:
            return "respond"
    return None


def _as_sent(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def skeleton(body: dict, seen: set[str], new: list[tuple[str, str]]) -> dict:
    """The body with its messages and tools replaced by blob hashes (in the order sent, keys as sent, secrets
    masked); each blob not in `seen` yet is added to it and to `new` as (hash, text)."""
    request: dict[str, Any] = {}
    for key, value in body.items():
        if key in LISTS and isinstance(value, list):
            hashes = []
            for item in value:
                text = _as_sent(mask_data(item))
                digest = blob_hash(text)
                if digest not in seen:
                    seen.add(digest)
                    new.append((digest, text))
                hashes.append(digest)
            request[key] = hashes
        else:
            request[key] = mask_data(value)
    return request


class ExchangeSink:
    """What the proxy hands each exchange to once its reply went out (Capture on a thread here, or
    recording.py's RecordingProcess in a process of its own): `submit` never blocks and never raises; when the
    queue is full the exchange is dropped (it was forwarded all the same) and that is said once."""

    def __init__(self, log: Any) -> None:
        self.log = log or sys.stderr
        self.dropped = 0
        self._told: set[str] = set()
        self._queue: queue.Queue[Exchange | None] = queue.Queue(QUEUE_LIMIT)

    def submit(self, exchange: Exchange) -> None:
        try:
            self._queue.put_nowait(exchange)
            self._accepted()
        except queue.Full:
            self.dropped += 1
            self._say("queue", f"recording fell behind: {self.dropped} exchange(s) dropped (forwarded all the same)")
        except Exception:  # nothing may reach the forward
            self.dropped += 1

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted exchange is settled (recorded, failed, or lost with its recorder)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._settled():
                return True
            time.sleep(0.005)
        return False

    def _accepted(self) -> None:
        """An exchange joined the queue."""

    def _settled(self) -> bool:
        raise NotImplementedError

    def _say(self, what: str, line: str) -> None:
        if what not in self._told:
            self._told.add(what)
            with contextlib.suppress(Exception):  # a closed log must not stop recording
                print(f"cireil proxy: {line}", file=self.log, flush=True)


class Capture(ExchangeSink):
    """Records exchanges into `<agent_dir>/cireil-recordings.db` on a thread of its own."""

    def __init__(self, agent_dir: Path, *, settings: RecorderSettings | None = None, log: Any = None) -> None:
        super().__init__(log)
        self.agent_dir = agent_dir
        self._given = settings
        self.settings = settings or RecorderSettings()
        self.store: RecordingStore | None = None
        self.problem: str | None = None
        self.recorded = 0  # exchanges recorded as steps
        self.failures = 0
        self._open: dict[str, _OpenTurn] = {}
        self._thread = threading.Thread(target=self._run, name="cireil-proxy-capture", daemon=True)
        self._started = False
        self.idle = threading.Event()  # set whenever the queue is drained (tests and shutdown wait on it)
        self.idle.set()
        self.on_done: Any = None  # called after each exchange is recorded or failed (the recorder process reports)

    # -- the proxy's side -------------------------------------------------------------------------
    def start(self) -> Capture:
        if not self._started:
            self._started = True
            self._open_store()
            self._thread.start()
        return self

    def submit(self, exchange: Exchange) -> None:
        self.idle.clear()
        super().submit(exchange)

    def _settled(self) -> bool:
        return self._queue.unfinished_tasks == 0

    def stop(self) -> None:
        """Record what is queued, close the open turns as unfinished, close the store."""
        if self._started:
            self._queue.put(None)
            self._thread.join(timeout=30)
        store, self.store = self.store, None
        if store is not None:
            try:
                for turn in list(self._open.values()):
                    self._close(store, turn, turn.ended or "unfinished")
            except Exception as exc:
                self._say("close", f"closing the open turns failed: {exc}")
            store.close()

    # -- the recording thread ---------------------------------------------------------------------
    def _open_store(self) -> None:
        try:
            self.settings = self._given if self._given is not None else load_settings(self.agent_dir)
            if not self.settings.enabled:
                self.problem = "recording is off in config/cireil.toml ([recording] enabled = false): forwarding only"
            else:
                self.store = RecordingStore(self.agent_dir / RECORDINGS_FILE)
        except (SettingsError, RecordingStoreError, OSError) as exc:
            self.problem = f"recording is off: {exc}; forwarding only"
        if self.problem:
            self._say("open", self.problem)

    def _run(self) -> None:
        while True:
            try:
                exchange = self._queue.get(timeout=5.0)
            except queue.Empty:
                self._close_idle()
                continue
            try:
                if exchange is None:
                    return
                store = self.store
                if store is not None and exchange.kind is not None:
                    self.record(store, exchange)
                    self.recorded += 1
            except Exception as exc:  # a bug or a broken file: said once, the next exchange is tried again
                self.failures += 1
                self._say(f"fail:{type(exc).__name__}", f"an exchange was not recorded: {type(exc).__name__}: {exc}")
            finally:
                self._queue.task_done()
                if self.on_done is not None and exchange is not None:
                    with contextlib.suppress(Exception):
                        self.on_done()

    def _close_idle(self) -> None:
        store = self.store
        if store is None:
            return
        now = time.monotonic()
        for key, turn in list(self._open.items()):
            if now - turn.touched > IDLE_END:
                try:
                    self._close(store, turn, turn.ended or "unfinished")
                except Exception as exc:
                    self._say("close", f"closing an idle turn failed: {exc}")
                self._open.pop(key, None)

    # -- one exchange ------------------------------------------------------------------------------
    def record(self, store: RecordingStore, ex: Exchange) -> None:
        kind = ex.kind or ""
        try:
            body = json.loads(ex.request)
        except ValueError:
            self._say("body", f"a request to {ex.path} was not JSON: not recorded (it was forwarded)")
            return
        if not isinstance(body, dict):
            return
        raw_text = ex.request.decode("utf-8", "surrogateescape")
        if ex.failure is not None:
            reply: dict = {"error": f"the proxy could not reach the provider: {ex.failure}", "content": None}
        else:
            reply = read_reply(kind, ex.status, ex.content_type, ex.reply.decode("utf-8", "replace"))
        messages = messages_of(kind, body)
        first_text = _turn_text(kind, messages)
        where = link(kind, body, ex.headers, self.agent_dir, first_text)
        if where.session == "internal:?" and first_text is None:
            # a later call of a turn in a persistent internal session: its first call named the session
            # (the turn's user text is only in the first); the newest open internal turn is the one going on
            going = [t for t in self._open.values() if t.platform == "internal" and t.ended is None]
            if going:
                where = replace(where, session=max(going, key=lambda t: t.touched).session)
        turn = self._open.get(where.session)
        if turn is not None and (turn.ended is not None or turn.kind != kind):
            self._close(store, turn, turn.ended or "unfinished")
            turn = None
        results = tool_results(kind, body)
        if turn is not None and turn.last is not None:
            self._fill_results(store, turn, results)
        if turn is None:
            user = {"role": "user", "content": [{"type": "text", "text": first_text}]} if first_text else None
            origin = {
                "production": {
                    "via": "proxy",
                    "provider": ex.provider,
                    "kind": kind,
                    "link": where.how,
                    "platform": where.platform,
                }
            }
            model = body.get("model") if isinstance(body.get("model"), str) else ""
            turn_id = store.begin_turn(where.session, model, ex.provider, mask_data(user), origin)
            turn = _OpenTurn(turn_id, where.session, time.perf_counter() - ex.latency, kind, where.platform)
            self._open[where.session] = turn
        turn.n += 1
        turn.touched = time.monotonic()
        new: list[tuple[str, str]] = []
        request = skeleton(body, turn.seen, new)
        reply["wire"] = self._wire(turn, body, raw_text, ex.request, new)
        reply = mask_data(reply)
        for key, value in (reply.get("usage") or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                turn.usage[key] = turn.usage.get(key, 0) + value
        calls = [
            (
                i,
                c.get("id"),
                str(c.get("name") or ""),
                _as_sent(c.get("arguments") or {}),
                _as_sent(NOT_SENT),
                0.0,
                None,
            )
            for i, c in enumerate(reply.get("tool_calls") or ())
        ]
        step = {"request": request, "reply": reply, "calls": calls, "ttft": ex.ttft, "latency": ex.latency}
        store.write_step(turn.turn_id, turn.n, request, reply, new, None, ex.ttft, ex.latency, calls)
        turn.last = step
        ended = terminal(reply) if "error" not in reply else None
        if ended is not None:
            turn.ended = ended
            self._close(store, turn, ended)
            self._open.pop(where.session, None)

    def _wire(self, turn: _OpenTurn, body: dict, raw_text: str, raw: bytes, new: list[tuple[str, str]]) -> dict:
        """What proves the stored body is the sent one: the bytes' sha256 and size, and whether the body rebuilt
        from the recording is those very bytes; when it is not (another JSON spelling), the text itself is kept
        as a blob ({"raw": text}), masked."""
        wire: dict[str, Any] = {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}
        masked = mask_data(body)
        rebuilt = _as_sent(masked).encode("utf-8", "surrogatepass")
        if rebuilt == raw:
            wire["exact"] = True
            return wire
        wire["exact"] = False
        if masked != body:
            wire["masked"] = True  # a configured secret was in the body: kept masked, so not the bytes sent
        text = _as_sent({"raw": mask(raw_text)})
        digest = blob_hash(text)
        if digest not in turn.seen:
            turn.seen.add(digest)
            new.append((digest, text))
        wire["raw"] = digest
        return wire

    def _fill_results(self, store: RecordingStore, turn: _OpenTurn, results: dict[str, dict]) -> None:
        """The previous step's tool calls get the results this request sends back for them (rewritten in place)."""
        step = turn.last
        if step is None or not step["calls"] or not results:
            return
        calls, changed = [], False
        for row in step["calls"]:
            result = results.get(str(row[1]))
            if result is not None:
                row = (*row[:4], _as_sent(mask_data(result)), *row[5:])
                changed = True
            calls.append(row)
        if changed:
            step["calls"] = calls
            store.write_step(
                turn.turn_id, turn.n, step["request"], step["reply"], [], None, step["ttft"], step["latency"], calls
            )

    def _close(self, store: RecordingStore, turn: _OpenTurn, ended: str) -> None:
        error = None
        if ended == "unfinished" and turn.last is not None and "error" in turn.last["reply"]:
            ended, error = "error", turn.last["reply"]["error"]
        store.end_turn(turn.turn_id, ended, error, turn.usage, time.perf_counter() - turn.started)
        self._open.pop(turn.session, None)
        try:
            store.evict(self.settings.max_turns, self.settings.max_bytes)
        except Exception as exc:
            self._say("evict", f"evicting old turns failed: {exc}")


def _turn_text(kind: str, messages: list) -> str | None:
    """The text of the last user message of the history (the original's volatile tail messages left out)."""
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if kind == "openai-codex" and message.get("type") not in (None, "message"):
            return None  # a tool result after the last user text: this request continues a turn
        if message.get("role") == "tool":
            return None
        if message.get("role") != "user":
            if message.get("role") == "assistant":
                return None
            continue
        texts = user_texts(kind, message)
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
            return None
        joined = "".join(texts)
        if joined.startswith(VOLATILE_PREFIXES):
            continue
        return joined
    return None
