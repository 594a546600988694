"""The agent's side of the recorder: opens the store on first use and taps each turn's events.

The engine hands every turn's event sink to `Recording.observe`, which returns a sink that records and
passes each event on. A store that cannot be opened (corrupt, another format, settings that do not
parse) turns recording off for this agent with one notice; the turn itself never notices a failure here.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..base.secrets import mask, mask_data
from .settings import RecorderSettings, SettingsError, load_settings
from .store import CALL_LIMIT, LISTING_LIMIT, LISTS, RECORDINGS_FILE, RecordingStore, RecordingStoreError

EventSink = Callable[[dict], None]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def blob_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class Recording:
    """Turn recording for one agent; `store` is None while recording is off."""

    def __init__(self, agent_dir: Path, settings: RecorderSettings | None = None) -> None:
        self.agent_dir = agent_dir
        # given settings are used instead of config/cireil.toml: an eval run records even where the
        # agent's own file switched recording off, since a failed run's turn is what a person opens
        self._given = settings
        self.problem: str | None = None  # why recording is off, shown once
        self._told = False
        self._store: RecordingStore | None = None
        self._opened = False
        self.settings = RecorderSettings()
        self.paused = False
        self.origins: dict[str, dict] = {}  # session id -> the fork origin its next recorded turn links to
        self._lock = threading.Lock()  # True: turns run unrecorded until set back (the file stays open)

    @property
    def path(self) -> Path:
        return self.agent_dir / RECORDINGS_FILE

    def open(self) -> RecordingStore | None:
        with self._lock:  # the notebook's first look and a background turn may both open it
            return self._open()

    def _open(self) -> RecordingStore | None:
        if not self._opened:
            self._opened = True
            try:
                self.settings = self._given if self._given is not None else load_settings(self.agent_dir)
                if self.settings.enabled:
                    self._store = RecordingStore(self.path)
            except (SettingsError, RecordingStoreError, OSError) as exc:
                self.problem = f"turn recording is off: {exc}"
        return self._store

    @property
    def store(self) -> RecordingStore | None:
        return self.open()

    def observe(self, session_id: str, on_event: EventSink) -> EventSink:
        """The sink a turn reports to: records, then passes every event on unchanged."""
        store = self.open()
        if self.paused:
            return on_event
        if store is None:
            if self.problem and not self._told:
                self._told = True
                problem = self.problem

                def told(event: dict) -> None:
                    on_event(event)
                    if event.get("type") == "start":
                        on_event({"type": "notice", "text": problem})

                return told
            return on_event
        return TurnTap(self, store, session_id, on_event).event

    def failed(self, exc: BaseException) -> None:
        """A write failed mid-turn: recording stops for this agent (said once), the turn goes on."""
        self.problem = f"turn recording is off: {self.path}: {exc}"
        store, self._store = self._store, None
        if store is not None:
            store.close()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


class _Hashes:
    """Blob hashes of the objects of the last request, by identity: the engine hands over the very same
    translated message for one that did not change, so each step hashes only what is new."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[Any, str]] = {}
        self.seen: set[str] = set()  # blobs this turn already wrote

    def blob(self, text: str, new: list[tuple[str, str]]) -> str:
        """The hash of `text` (JSON already masked), added to `new` unless this turn wrote it already."""
        digest = blob_hash(text)
        if digest not in self.seen:
            self.seen.add(digest)
            new.append((digest, text))
        return digest

    def refs(self, items: list, new: list[tuple[str, str]], keep: dict[int, tuple[Any, str]]) -> list[str]:
        out = []
        for item in items:
            hit = self.by_id.get(id(item))
            if hit is not None and hit[0] is item:
                digest = hit[1]
            else:
                text = _dumps(mask_data(item))  # a configured secret echoed in a message is never stored
                digest = blob_hash(text)
                if digest not in self.seen:
                    self.seen.add(digest)
                    new.append((digest, text))
            keep[id(item)] = (item, digest)  # holding the object keeps its id from being reused
            out.append(digest)
        return out


class TurnTap:
    """Turns one turn's events into recorded steps: a step is written when the next one starts or the turn ends."""

    def __init__(self, recording: Recording, store: RecordingStore, session_id: str, on_event: EventSink) -> None:
        self.recording = recording
        self.store = store
        self.session_id = session_id
        self.on_event = on_event
        self.turn_id: int | None = None
        self.started = time.perf_counter()
        self.hashes = _Hashes()
        self.step: dict | None = None
        self.live = True
        self.servers: set[str] = set()  # MCP servers whose listing this turn already stored

    def event(self, event: dict) -> None:
        if self.live:
            try:
                self._record(event)
            except Exception as exc:  # never the turn's problem: recording stops, the person is told once
                self.live = False
                self.recording.failed(exc)
                self.on_event({"type": "notice", "text": self.recording.problem})
        self.on_event(event)

    def _record(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "delta":
            step = self.step
            if step is not None:
                if step["ttft"] is None:
                    step["ttft"] = time.perf_counter() - step["sent"]
                if event.get("kind") == "text":
                    step["text"].append(event.get("text") or "")
            return
        if kind == "request":
            self._flush()
            self.step = {
                "n": event["step"],
                "estimate": event.get("estimate"),
                "sent": time.perf_counter(),
                "ttft": None,
                "text": [],
                "calls": [],
                "reply": None,
                "body": None,
                "latency": None,
            }
        elif kind == "start":
            self.turn_id = self.store.begin_turn(
                self.session_id,
                event.get("model", ""),
                event.get("provider", ""),
                mask_data(event.get("message")),
                self.recording.origins.pop(self.session_id, None),
            )
        elif kind == "assistant" and self.step is not None:
            step = self.step
            step["latency"] = time.perf_counter() - step["sent"]
            step["body"] = event.get("body")
            step["reply"] = _reply(event["message"], "".join(step["text"]), event.get("finish"), event.get("usage"))
        elif kind == "retry" and self.step is not None:
            step = self.step
            step["latency"] = time.perf_counter() - step["sent"]
            step["body"] = event.get("body")
            step["reply"] = {"error": mask(event.get("reason", "")), "content": mask("".join(step["text"])) or None}
        elif kind == "result" and self.step is not None:
            call, result = event["call"], event["result"]
            # an MCP call's exchange with its server (mcp/discovery.py), for the turn's cassette
            mcp = result.inspect.get("mcp") if isinstance(getattr(result, "inspect", None), dict) else None
            self.step["calls"].append((call, result.data, result.duration_s, event.get("review"), mcp))
        elif kind == "end":
            self._flush()
            if self.turn_id is not None:
                event["recording"] = self.turn_id  # the turn view shows the recorded model calls under the turn
                outcome = event["outcome"]
                error = mask(outcome.error) if isinstance(outcome.error, str) else outcome.error
                self.store.end_turn(
                    self.turn_id, outcome.ended, error, outcome.usage, time.perf_counter() - self.started
                )
                settings = self.recording.settings
                self.store.evict(settings.max_turns, settings.max_bytes)

    def _flush(self) -> None:
        step, self.step = self.step, None
        if step is None or self.turn_id is None or step["reply"] is None:
            return  # a step cut short (interrupt, provider failure) has no reply to keep
        body = step["body"] or {}
        new: list[tuple[str, str]] = []
        keep: dict[int, tuple[Any, str]] = {}
        request = {k: mask_data(v) for k, v in body.items() if k not in LISTS}
        for key in LISTS:
            if isinstance(body.get(key), list):
                request[key] = self.hashes.refs(body[key], new, keep)
        self.hashes.by_id = keep
        calls, mcp_calls, mcp_servers = [], [], []
        for position, (call, data, duration, review, mcp) in enumerate(step["calls"]):
            if isinstance(mcp, dict) and isinstance(mcp.get("answer"), dict):
                mcp_calls.append(_mcp_call(position, mcp["server"], mcp["answer"]))
                if mcp["server"] not in self.servers:
                    self.servers.add(mcp["server"])
                    digest = self.hashes.blob(_listing(mcp.get("listing")), new)
                    mcp_servers.append((mcp["server"], digest))
            arguments = call.get("input") or {}
            if "rawArguments" in call:
                arguments = {"rawArguments": call["rawArguments"]}
            reviewed = _dumps(review) if review is not None else None  # step mode: what the person did
            arguments, data = mask_data(arguments), mask_data(data)
            calls.append((position, call.get("id"), call["name"], _dumps(arguments), _dumps(data), duration, reviewed))
        self.store.write_step(
            self.turn_id,
            step["n"],
            request,
            mask_data(step["reply"]),
            new,
            step["estimate"],
            step["ttft"],
            step["latency"],
            calls,
            mcp_calls,
            mcp_servers,
        )
        for *_, mcp in step["calls"]:  # stored: the result shown in the notebook need not hold the raw answer
            if isinstance(mcp, dict):
                mcp.pop("answer", None)
                mcp.pop("listing", None)


def _as_sent(value: Any) -> str:
    """JSON in the order the server wrote it (a tool's properties are shown to the model in that order)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _mcp_call(position: int, server: str, answer: dict) -> tuple:
    """A row of mcp_calls: the call as its server answered it, masked; an answer over CALL_LIMIT is not kept."""
    arguments = _as_sent(mask_data(answer.get("arguments") or {}))
    if isinstance(answer.get("notRecorded"), str):
        kept: dict[str, Any] = {"notRecorded": answer["notRecorded"]}
    elif answer.get("error") is not None:
        error = dict(answer["error"])
        error["message"] = mask(str(error.get("message", "")))  # a failure names the URL: its credentials masked
        kept = {"error": mask_data(error)}
    else:
        kept = {"result": mask_data(answer.get("result"))}
    text = _as_sent(kept)
    if len(text) > CALL_LIMIT:
        text = _as_sent(
            {
                "notRecorded": f"too big: the answer is {len(text):,} characters of JSON, over the "
                f"{CALL_LIMIT:,} the recorder keeps of one MCP call"
            }
        )
    return (position, server, str(answer.get("tool", "")), arguments, text)


def _listing(listing: Any) -> str:
    """A server's tools/list and handshake as stored (masked JSON); over LISTING_LIMIT, its tools are not kept."""
    listing = listing if isinstance(listing, dict) else {}
    kept = {k: listing.get(k) for k in ("revision", "serverInfo", "instructions", "tools")}
    text = _as_sent(mask_data(kept))
    if len(text) > LISTING_LIMIT:
        kept["tools"] = []
        kept["notRecorded"] = (
            f"too big: the tools/list is {len(text):,} characters of JSON, over the {LISTING_LIMIT:,} the "
            "recorder keeps of one server"
        )
        text = _as_sent(mask_data(kept))
    return text


def _reply(message: dict, text: str, finish: str | None, usage: dict | None) -> dict:
    parts = message.get("content") or ()
    reasoning = "".join(p.get("thinking", "") for p in parts if p.get("type") == "thinking") or None
    calls = []
    for p in parts:
        if p.get("type") == "toolCall":
            call = {"id": p.get("id"), "name": p.get("name"), "arguments": p.get("input") or {}}
            if "rawArguments" in p:
                call["rawArguments"] = p["rawArguments"]
            calls.append(call)
    return {
        "content": text or None,
        "reasoning": reasoning,
        "tool_calls": calls,
        "finish_reason": finish,
        "usage": usage or {},
    }
