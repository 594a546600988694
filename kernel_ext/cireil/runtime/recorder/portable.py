"""Recorded turns as plain JSON data that travels and comes back as `RecordedTurn` objects.

An eval run records its turns in a throwaway copy of the agent, often in another process or on another
machine (Dask), and that copy is deleted when the run ends: `pack_turns` carries the turns of a failed
run back inside its result, `unpack_turns` gives them back with steps, requests, replies and diffs.

Requests are kept as the recorder keeps them: each message and tool definition once (by hash, in
`blobs`), a step's request naming them, so a ten-step turn does not carry its system prompt ten times.
The data is capped: over `limit` bytes of JSON, long texts are cut, then requests are left out, then
the last model calls; `truncated` says what went, and every cut text says so where it was cut.
"""

from __future__ import annotations

import json
from typing import Any

from .model import RecordedStep, RecordedTurn, ToolCallRecord
from .recording import _dumps, blob_hash
from .store import LISTS, check_reply

TURN_LIMIT = 256 * 1024  # bytes of JSON per run's recorded turns; a result file of 100 failed runs stays ~25 MB
STRING_CAPS = (4096, 512, 64)  # characters a text is cut to, tried in turn until the data fits
MAX_DEPTH = 100  # nesting levels walked when cutting; deeper values become "…" (no RecursionError)
LEFT_OUT = "request left out: the recorded turn was over the size cap (see the run's `truncated` note)"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "replace"))


def _cut(value: Any, cap: int, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        return "…"
    if isinstance(value, str):
        return value if len(value) <= cap else value[:cap] + f"… [{len(value) - cap:,} more characters cut]"
    if isinstance(value, dict):
        return {k: _cut(v, cap, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, cap, depth + 1) for v in value]
    return value


def _refs(items: list, blobs: dict[str, Any]) -> list[str]:
    out = []
    for item in items:
        digest = blob_hash(_dumps(item))
        blobs.setdefault(digest, item)
        out.append(digest)
    return out


def _step(step: RecordedStep, blobs: dict[str, Any]) -> dict:
    body = step.request
    request = {k: v for k, v in body.items() if k not in LISTS}
    for key in LISTS:
        if isinstance(body.get(key), list):
            request[key] = _refs(list(body[key]), blobs)
    return {
        "n": step.n,
        "request": request,
        "reply": step.reply,
        "estimate": step.estimate,
        "ttft": step.ttft,
        "latency": step.latency,
        "calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result, "duration": c.duration}
            for c in step.calls
        ],
    }


def _turn(turn: RecordedTurn, blobs: dict[str, Any]) -> dict:
    return {
        "id": turn.id,
        "session_id": turn.session_id,
        "started": turn.started,
        "model": turn.model,
        "provider": turn.provider,
        "user": turn.user,
        "ended": turn.ended,
        "error": turn.error,
        "usage": turn.usage,
        "seconds": turn.seconds,
        "step_count": turn.step_count,
        "steps": [_step(s, blobs) for s in turn.steps],
    }


def _packed(data: dict, size: int, note: str | None, limit: int) -> dict | None:
    out = {**data, "bytes": size, "truncated": note}
    return out if _size(out) <= limit else None


def pack_turns(turns: list[RecordedTurn], limit: int = TURN_LIMIT) -> dict:
    """`{"turns": [...], "blobs": {...}, "bytes": N, "truncated": None or what was left out}`: at most
    `limit` bytes of JSON whatever the turns hold (below a few hundred bytes, only the note is left)."""
    blobs: dict[str, Any] = {}
    full = {"turns": [_turn(t, blobs) for t in turns], "blobs": blobs}
    size = _size(full)
    if size <= limit:
        return {**full, "bytes": size, "truncated": None}
    over = f"the recorded turns were {size:,} bytes of JSON, over the {limit:,}-byte cap"
    for cap in STRING_CAPS:
        packed = _packed(_cut(full, cap), size, f"{over}: texts longer than {cap:,} characters were cut", limit)
        if packed is not None:
            return packed
    # what the model and the tools did matters more than what the model was sent: requests go first
    lean = _cut({"turns": full["turns"], "blobs": {}}, STRING_CAPS[-1])
    for turn in lean["turns"]:
        for step in turn["steps"]:
            step["request"] = None
    what = f"{over}: texts cut to {STRING_CAPS[-1]} characters and the requests left out"
    total = kept = sum(len(t["steps"]) for t in lean["turns"])
    while True:
        note = what if kept == total else f"{what}, only the first {kept} of {total} model calls kept"
        packed = _packed(lean, size, note, limit)
        if packed is not None or not lean["turns"]:
            return packed or {"turns": [], "blobs": {}, "bytes": size, "truncated": note}
        last = lean["turns"][-1]
        if last["steps"]:
            last["steps"].pop()
            kept -= 1
        else:
            lean["turns"].pop()


def _check_turn(t: Any) -> None:
    """The fields the views read as text or numbers, of the types they need (a result file edited by hand)."""
    if not isinstance(t, dict) or not isinstance(t.get("steps"), list):
        raise TypeError("a turn is not an object with a list of steps")
    if not isinstance(t["id"], int) or not isinstance(t["session_id"], str):
        raise TypeError("a turn's id is not a number or its session_id not text")
    for key in ("model", "provider", "ended"):
        if not isinstance(t.get(key, ""), str):
            raise TypeError(f"turn {t['id']}: {key} is not text")
    if not isinstance(t.get("usage") or {}, dict) or not isinstance(t.get("user") or {}, dict):
        raise TypeError(f"turn {t['id']}: usage or user is not an object")
    for s in t["steps"]:
        if not isinstance(s, dict) or not isinstance(s.get("n"), int) or not isinstance(s.get("calls") or [], list):
            raise TypeError(f"turn {t['id']}: a step is not an object with a number and a list of calls")


def unpack_turns(data: dict | None) -> list[RecordedTurn]:
    """The turns `pack_turns` carried, as RecordedTurn objects (no store behind them: nothing to load later).
    ValueError for data not of that shape (a result file edited by hand)."""
    if not data:
        return []
    try:
        return _unpack(data)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise ValueError(f"the recorded turns are not as cireil wrote them ({type(exc).__name__}: {exc})") from None


def _unpack(data: dict) -> list[RecordedTurn]:
    blobs = data.get("blobs") or {}
    if not isinstance(blobs, dict) or not isinstance(data.get("turns") or [], list):
        raise TypeError("turns must be a list and blobs an object")
    out = []
    for t in data.get("turns") or ():
        _check_turn(t)
        steps = []
        for s in t["steps"]:
            check_reply(s["reply"])
            for c in s.get("calls") or ():
                if not isinstance(c["name"], str) or not isinstance(c.get("arguments") or {}, dict):
                    raise TypeError(f"a tool call of step {s['n']!r} has no name or its arguments are not an object")
                if not isinstance(c.get("result") or {}, dict):
                    raise TypeError(f"the result of {c['name']!r} is not an object")
            skeleton = s.get("request")
            if skeleton is None:
                body: dict = {"truncated": LEFT_OUT}
            else:
                body = dict(skeleton)
                for key in LISTS:
                    if key in skeleton:
                        body[key] = [blobs.get(h, {"missing": h}) for h in skeleton[key]]
            calls = [
                ToolCallRecord(
                    s["n"], i, c.get("id"), c["name"], c.get("arguments") or {}, c.get("result") or {}, c["duration"]
                )
                for i, c in enumerate(s.get("calls") or ())
            ]
            steps.append(
                RecordedStep(
                    t["id"],
                    s["n"],
                    s["reply"],
                    s.get("estimate"),
                    s.get("ttft"),
                    s.get("latency"),
                    calls,
                    _request=body,
                )
            )
        out.append(RecordedTurn.from_data(t, steps))
    return out
