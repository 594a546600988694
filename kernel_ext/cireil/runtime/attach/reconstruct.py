"""Turns the original ran before attaching, rebuilt from sessions.db and recorded as "reconstructed" turns.

The proxy records only what goes through it. For a turn the original ran earlier, sessions.db still has the
history: its user message, then each assistant message (one model call) and the toolResponses that answered
its tool calls. `reconstruct` records each such turn in cireil-recordings.db as the proxy would have, except
the requests: each step's request is the one cireil builds today for the history before that assistant
message (Engine.preview: today's engine.toml, tools, prompt files, opened files and conditions; the metadata's
date is the time of that model call), sent as a stream as the provider clients send it. So a reconstructed
turn is "what the original would have sent", never the bytes it sent: `origin["reconstructed"]` says so, the
listing shows "reconstructed", and `reply` carries no `wire` proof.

- Which turns: a user message of a Discord, internal, TUI (or Matrix) session and the messages after it up to
  the next user message; messages before a session's first user message, and a user message no model call
  answered, make no turn. cireil's own notebook and CLI sessions are left out (cireil recorded those itself).
- Never twice: a turn's key is its sessions.db row, the position of its user message and that message's
  timestamp (and id); a key already in the recordings is skipped. A turn the proxy recorded (a production
  turn of the same session begun between its user message and its last message, give or take SLACK seconds)
  is skipped too.
- sessions.db is only read (the session store's reads; nothing is committed).
- What cannot be rebuilt as it was: the reads the original later superseded are stored as its stubs (so an
  early step shows the stub, not the content it sent), and the opened files are today's.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from ..base.secrets import mask_data
from ..recorder.store import RecordingStore
from ..sessions.errors import SessionError
from ..sessions.rowids import stored_id
from ..sessions.state import Session, platform_of
from .capture import skeleton, terminal

SLACK = 60.0  # seconds around a stored turn within which a proxy-recorded turn of its session is the same turn
NOT_STORED = {"notStored": "sessions.db has no toolResponse for this call"}
VIA = "sessions.db"


class ReconstructHost(Protocol):
    """What reconstructing needs of the Agent (which sits above attach/): its stores and its engine."""

    @property
    def store(self) -> Any: ...  # the SessionStore of sessions.db, or None

    @property
    def recording(self) -> Any: ...  # recorder/recording.py's Recording

    @property
    def engine(self) -> Any: ...  # engine/engine.py's Engine


@dataclass
class Reconstructed:
    """What one `reconstruct` did: the turns it recorded and why it left the others out."""

    turns: list[int] = field(default_factory=list)  # ids of the turns recorded now
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> how many stored turns
    problems: list[str] = field(default_factory=list)  # sessions that could not be read or rebuilt, one line each
    evicted: int = 0  # the oldest recorded turns the recorder evicted afterwards ([recording] max_bytes)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def lines(self) -> list[str]:
        out = [f"{len(self.turns)} turn(s) rebuilt from sessions.db and recorded as reconstructed"]
        if self.turns:
            out[0] += f" (turns {self.turns[0]}-{self.turns[-1]})"
        out += [f"  {n} skipped: {why}" for why, n in self.skipped.items()]
        out += [f"  not rebuilt: {p}" for p in self.problems]
        if self.evicted:
            out.append(f"  {self.evicted} oldest recorded turn(s) evicted: the file is over [recording] max_bytes")
        return out

    def __repr__(self) -> str:
        return "<Reconstructed " + "; ".join(self.lines()) + ">"


def parse_since(since: str | datetime | None) -> float | None:
    """Unix time of `since` (ISO 8601; without an offset it is UTC); ValueError naming what it expected."""
    if since is None:
        return None
    if isinstance(since, str):
        try:
            since = datetime.fromisoformat(since)
        except ValueError:
            raise ValueError(
                f"since {since!r} is not an ISO 8601 time (e.g. 2026-05-01 or 2026-05-01T12:00:00+02:00)"
            ) from None
    if not isinstance(since, datetime):
        raise ValueError(f"since must be an ISO 8601 time or a datetime, not {type(since).__name__}")
    return (since if since.tzinfo is not None else since.replace(tzinfo=UTC)).timestamp()


def _when(message: dict) -> float | None:
    stamp = message.get("timestamp")
    try:
        moment = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None
    if moment is None:
        return None
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


def stored_turns(history: list[dict]) -> list[tuple[int, int]]:
    """(position of the user message, end position) of each turn of a history: a user message (kept in the
    history, not a per-call context message) and what follows it up to the next one."""
    starts = [i for i, m in enumerate(history) if m.get("role") == "user" and m.get("persistent") is not False]
    return [(start, starts[n + 1] if n + 1 < len(starts) else len(history)) for n, start in enumerate(starts)]


def turn_key(row_id: str, position: int, user: dict) -> str:
    """The key that makes a stored turn recorded once: its row, its user message's position, timestamp and id
    (an id starting with `#` is cireil's positional one, not stored)."""
    own = user.get("id") if isinstance(user.get("id"), str) and not str(user.get("id")).startswith("#") else ""
    return f"{row_id}#{position}@{user.get('timestamp')}/{own}"


def _reply(message: dict) -> dict:
    """An assistant message of sessions.db in the recorder's reply shape."""
    parts = [p for p in message.get("content") or () if isinstance(p, dict)]
    text = "".join(p.get("text", "") for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str))
    thinking = "".join(p.get("thinking", "") for p in parts if p.get("type") == "thinking")
    calls = [
        {"id": p.get("id"), "name": str(p.get("name") or ""), "arguments": p.get("input") or {}}
        for p in parts
        if p.get("type") == "toolCall"
    ]
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    return {
        "content": text or None,
        "reasoning": thinking or None,
        "tool_calls": calls,
        "finish_reason": "tool_calls" if calls else None,
        "usage": usage,
    }


def _result(output: Any) -> dict:
    return output if isinstance(output, dict) else {"output": output}


def _user(message: dict) -> dict | None:
    """The turn's user message as the recorder keeps it: its text (media is in the rebuilt requests)."""
    texts = [
        p["text"]
        for p in message.get("content") or ()
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
    text = "".join(texts)
    return {"role": "user", "content": [{"type": "text", "text": text}]} if text else None


def _as_sent(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def streamed_body(prepared: Any) -> dict:
    """The body as a turn POSTs it: streamed, as the provider clients (and the original) send it."""
    kind = prepared.provider.kind
    if kind == "anthropic":
        from ..engine.anthropic import build_anthropic_body

        return build_anthropic_body(prepared.provider, prepared.model_cfg, prepared.model_request, stream=True)
    if kind == "openai-codex":
        from ..engine.codex import build_codex_body

        return build_codex_body(prepared.provider, prepared.model_cfg, prepared.model_request)
    from ..engine.openai import build_request_body

    return build_request_body(prepared.provider, prepared.model_cfg, prepared.model_request, stream=True)


def _before(session: Session, position: int) -> Session:
    """The session as it was just before the model call answered by history[position]: its history up to there,
    the pruning cursor only if it was already before it, the topic summaries whose range is all there."""
    history = session.history[:position]
    ids = {m.get("id") for m in history}
    summaries = [s for s in session.summaries if s.get("startMessageId") in ids and s.get("endMessageId") in ids]
    cursor = session.cursor if session.cursor <= position else 0
    return replace(session, history=history, cursor=cursor, summaries=summaries, store_state=None)


def _proxy_spans(store: RecordingStore) -> tuple[set[str], dict[str, list[float]]]:
    """Keys of the turns reconstructed already, and the start times of proxy-recorded turns by session."""
    keys: set[str] = set()
    proxied: dict[str, list[float]] = {}
    for row in store.turns():
        origin = row.get("origin") or {}
        rebuilt = origin.get("reconstructed")
        if isinstance(rebuilt, dict) and isinstance(rebuilt.get("key"), str):
            keys.add(rebuilt["key"])
        elif isinstance(origin.get("production"), dict):
            proxied.setdefault(row["session_id"], []).append(row["started"])
    return keys, proxied


def _sessions(host: ReconstructHost, only: str | None) -> list[str]:
    """The sessions.db sessions to rebuild (cireil ids), the original's own: not cireil's notebook or CLI ones."""
    ids = host.store.session_ids()
    if only is not None:
        wanted = {only, stored_id(only) or only}
        chosen = [s for s in ids if s in wanted or stored_id(s) in wanted]
        if not chosen:
            raise ValueError(f"sessions.db has no session {only!r} (its sessions: {', '.join(ids) or 'none'})")
        return chosen
    return [s for s in ids if platform_of(s) != "remote"]


def reconstruct(
    host: ReconstructHost, *, session: str | None = None, since: str | datetime | None = None
) -> Reconstructed:
    """Record the turns sessions.db holds that the recordings lack (see the module's docstring)."""
    floor = parse_since(since)
    recording = host.recording
    store: RecordingStore | None = recording.store
    if store is None:
        raise ValueError(f"cannot reconstruct: {recording.problem or 'turn recording is off'}")
    if host.store is None:
        raise ValueError("cannot reconstruct: the agent has no readable sessions.db (dry-run says why)")
    done = Reconstructed()
    keys, proxied = _proxy_spans(store)
    wanted: list[tuple[float, str, Session, int, int, list[int], str]] = []  # (time, row, session, span, steps, key)
    for session_id in _sessions(host, session):
        try:
            found = host.store.get(session_id)
        except SessionError as exc:
            done.problems.append(str(exc))
            continue
        if found is None:
            continue
        row_id = stored_id(session_id) or session_id
        for start, end in stored_turns(found.history):
            user = found.history[start]
            key = turn_key(row_id, start, user)
            began, last = _when(user), _when(found.history[end - 1])
            steps = [i for i in range(start + 1, end) if found.history[i].get("role") == "assistant"]
            if key in keys:
                done.skip("recorded already")
            elif floor is not None and (began is None or began < floor):
                done.skip("before --since")
            elif not steps:
                done.skip("no model reply stored after the user message")
            elif began is not None and any(
                began - SLACK <= t <= (last or began) + SLACK for t in proxied.get(row_id, ())
            ):
                done.skip("recorded by the proxy")
            else:
                wanted.append((began or 0.0, row_id, found, start, end, steps, key))
    # the recorder keeps [recording] max_turns turns, evicting the oldest by id: more than there is room for would
    # evict the person's own turns, then the rebuilt ones, which the next run would rebuild again; the newest fit
    settings = recording.settings
    room = max(0, settings.max_turns - store.count())
    wanted.sort(key=lambda w: w[0])
    if len(wanted) > room:
        left = len(wanted) - room
        wanted = wanted[left:]
        done.skipped[
            f"no room: [recording] max_turns = {settings.max_turns} in config/cireil.toml and {store.count()} turns "
            "recorded; raise it, or choose fewer with --since / --session (the oldest were left out)"
        ] = left
    for _, row_id, found, start, end, steps, key in wanted:
        try:
            done.turns.append(_record(host, store, found, row_id, start, end, steps, key))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # one odd row, not the rest
            done.problems.append(
                f"sessions.db session {row_id}, the turn of message {start}: {type(exc).__name__}: {exc}"
            )
    if done.turns:
        done.evicted = store.evict(settings.max_turns, settings.max_bytes)
    return done


def _record(
    host: ReconstructHost,
    store: RecordingStore,
    session: Session,
    row_id: str,
    start: int,
    end: int,
    steps: list[int],
    key: str,
) -> int:
    """Record one stored turn; every step is built before the first write, so a turn that cannot be rebuilt
    leaves nothing behind (and is tried again next time)."""
    history = session.history
    user = history[start]
    began = _when(user) or time.time()
    seen: set[str] = set()
    usage: dict[str, int] = {}
    built = []  # (request skeleton, reply, new blobs, estimate, latency, calls) per model call
    first = None
    for position in steps:
        message = history[position]
        prepared = host.engine.preview(_before(session, position), now=_moment(history[position - 1]))
        first = first or prepared
        reply = _reply(message)
        for name, value in reply["usage"].items():
            if isinstance(value, int) and not isinstance(value, bool):
                usage[name] = usage.get(name, 0) + value
        answered = {m.get("toolCallId"): m for m in history[position + 1 : end] if m.get("role") == "toolResponse"}
        calls = []
        for i, call in enumerate(reply["tool_calls"]):
            response = answered.get(call["id"])
            result = mask_data(_result(response.get("output")) if response is not None else NOT_STORED)
            arguments = mask_data(call["arguments"])
            took = _gap(message, response) or 0.0
            calls.append((i, call["id"], call["name"], _as_sent(arguments), _as_sent(result), took, None))
        new: list[tuple[str, str]] = []
        request = skeleton(streamed_body(prepared), seen, new)
        latency = _gap(history[position - 1], message)
        built.append((request, mask_data(reply), new, prepared.estimate, latency, calls))
    assert first is not None  # a turn has at least one model call (reconstruct skips the others)
    origin = {
        "production": {
            "via": VIA,
            "provider": first.provider.name,
            "kind": first.provider.kind,
            "link": "sessions.db row",
            "platform": platform_of(session.id),
        },
        "reconstructed": {
            "key": key,
            "session": row_id,
            "position": start,
            "messages": end - start,
            "note": "requests rebuilt by cireil for the stored history, not the bytes that were sent",
        },
    }
    user_part = mask_data(_user(user))
    turn_id = store.begin_turn(row_id, first.model_request.model, first.provider.name, user_part, origin, started=began)
    for n, (request, reply, new, estimate, latency, calls) in enumerate(built, start=1):
        store.write_step(turn_id, n, request, reply, new, estimate, None, latency, calls)
    ended = terminal(built[-1][1]) or "unfinished"
    last = _when(history[end - 1])
    store.end_turn(turn_id, ended, None, usage, max(0.0, (last or began) - began))
    return turn_id


def _moment(message: dict) -> datetime | None:
    when = _when(message)
    return datetime.fromtimestamp(when, UTC) if when is not None else None


def _gap(before: dict, after: dict | None) -> float | None:
    """Seconds between two stored messages (a model call's latency, a tool's duration), None if unknown."""
    if after is None:
        return None
    a, b = _when(before), _when(after)
    if a is None or b is None or not math.isfinite(b - a):
        return None
    return max(0.0, b - a)
