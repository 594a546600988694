"""The history the model is sent (reference §7.4) and the token estimate (§7.3).

`shape_history` never changes a stored message: messages it passes through unchanged are the stored
dicts themselves (treat them as read-only), and every change (a merge, a superseded result, a removed
picture or tool call) is made on a new dict. What it moves is returned for the caller to store: the
cursor, and the read results superseded as the original superseded them (`ShapedHistory.rewrites`: the
original saves that rewrite, so a real model call puts it into the stored history; assemble.py does).

This runs on every model call, so each message is walked a handful of times and the expensive part of
the estimate, serialising tool inputs and outputs to JSON, is done once per object and kept in a
`TokenCache` the caller holds on to between calls.
"""

from __future__ import annotations

import html
import json
import math
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..toolkit.resultcap import cap_stored

MESSAGE_TOKENS = 4
MEDIA_TOKENS = 200
DEFAULT_MAX_TURNS = 30


def _ceil3(chars: int) -> int:
    return -(-chars // 3)


def _json(value: Any) -> str:
    # JSON.stringify's shape: compact, non-ASCII left as is
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class TokenCache:
    """Per-object memo of JSON lengths and message estimates, valid while the objects are not mutated.

    Keys are object identities; each entry holds the object itself, so an id cannot be reused by a new
    object while its entry lives. Entries not used during one call are dropped by the next `sweep()`,
    so the cache follows the visible history instead of growing with the whole session.
    """

    def __init__(self) -> None:
        self._current: dict[int, tuple[Any, int]] = {}
        self._previous: dict[int, tuple[Any, int]] = {}
        # stored tool-result message -> (it, the limit, what is sent instead): an old row's huge result is
        # serialised and cut once, not on every model call
        self._capped: dict[int, tuple[dict, int, dict]] = {}
        self._capped_previous: dict[int, tuple[dict, int, dict]] = {}

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)

    def _get(self, obj: Any) -> int | None:
        key = id(obj)
        entry = self._current.get(key)
        if entry is None:
            entry = self._previous.pop(key, None)
            if entry is None:
                return None
            self._current[key] = entry
        return entry[1] if entry[0] is obj else None

    def _put(self, obj: Any, value: int) -> int:
        self._current[id(obj)] = (obj, value)
        return value

    def json_chars(self, value: Any) -> int:
        if value is None or isinstance(value, bool | int | float):
            return len(_json(value))
        found = self._get(value)
        return found if found is not None else self._put(value, len(_json(value)))

    def message_tokens(self, message: dict) -> int:
        found = self._get(message)
        return found if found is not None else self._put(message, _estimate_message(message, self))

    def capped(self, message: dict, limit: int) -> dict:
        """The tool-result message as sent: `message` itself, or a copy whose output is cut to `limit`."""
        key = id(message)
        entry = self._capped.get(key) or self._capped_previous.pop(key, None)
        if entry is None or entry[0] is not message or entry[1] != limit:
            output = message.get("output")
            cut = cap_stored(output, limit=limit, message_id=str(message.get("id", "")))
            entry = (message, limit, message if cut is output else {**message, "output": cut})
        self._capped[key] = entry
        return entry[2]

    def forget(self, obj: Any) -> None:
        """Drop what is known of `obj`: the caller is about to change it in place."""
        for table in (self._current, self._previous, self._capped, self._capped_previous):
            table.pop(id(obj), None)

    def sweep(self) -> None:
        """Forget what the last call did not use; call once per model call."""
        self._previous = self._current
        self._current = {}
        self._capped_previous = self._capped
        self._capped = {}


def _estimate_message(message: dict, cache: TokenCache) -> int:
    if message.get("role") == "toolResponse":
        return MESSAGE_TOKENS + _ceil3(cache.json_chars(message.get("output")))
    content = message.get("content")
    if isinstance(content, str):
        return MESSAGE_TOKENS + _ceil3(len(content))
    total = MESSAGE_TOKENS
    for part in content or ():
        kind = part.get("type")
        if kind == "text":
            total += _ceil3(len(part.get("text") or ""))
        elif kind == "thinking":
            total += _ceil3(len(part.get("thinking") or ""))
        elif kind == "toolCall":
            total += _ceil3(cache.json_chars(part.get("input", {})))
        elif kind in ("image", "video"):
            total += MEDIA_TOKENS
    return total


def estimate_tokens(messages: list[dict], cache: TokenCache | None = None) -> int:
    """Σ(4 per message + ceil(chars/3) per text, thinking or tool JSON + 200 per image/video)."""
    cache = TokenCache() if cache is None else cache
    return sum(cache.message_tokens(m) for m in messages)


def estimate_system(text: str) -> int:
    return _ceil3(len(text))


def summary_text(summary: dict) -> str:
    slug = html.escape(str(summary.get("slug", "")), quote=True)
    name = html.escape(str(summary.get("displayName", "")), quote=True)
    return f'<topic-summary slug="{slug}" display-name="{name}">{summary.get("summary", "")}</topic-summary>'


@dataclass
class ShapedHistory:
    messages: list[dict]
    cursor: int  # the session's new cursor; larger than before when turns were dropped
    tokens: int  # estimate of `messages` alone
    dropped_turns: int = 0
    superseded_reads: int = 0  # earlier reads of a path read again, stubbed on this call (as the original)
    superseded_stale: int = 0
    superseded_budget: int = 0
    # index in the stored history -> the output it now has: the reads superseded on this call, which the original
    # saves; a real model call writes them into the stored messages (assemble.py), a preview does not
    rewrites: dict[int, dict] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)  # what shaping took out, by kind, for display


@dataclass
class _Item:
    msg: dict
    origin: int  # index in the stored history this item stands for; the cursor lands on it when it leads
    turn_start: bool  # a user message that begins a turn (preserved messages inside a summary never do)


def _visible(history: list[dict], cursor: int, summaries: list[dict]) -> list[_Item]:
    if not summaries:
        return [_Item(m, i, m.get("role") == "user") for i, m in enumerate(history[cursor:], cursor)]
    index_of = {m.get("id"): i for i, m in enumerate(history)}
    ranges: list[tuple[int, int, dict]] = []
    for summary in summaries:
        start, end = index_of.get(summary.get("startMessageId")), index_of.get(summary.get("endMessageId"))
        if start is None or end is None or start > end or end < cursor:
            continue
        ranges.append((max(start, cursor), end, summary))
    ranges.sort(key=lambda r: r[0])
    items: list[_Item] = []
    position = cursor
    for start, end, summary in ranges:
        if start < position:  # overlaps a range already summarised: the earlier-starting summary wins
            continue
        items += [_Item(m, i, m.get("role") == "user") for i, m in enumerate(history[position:start], position)]
        text = summary_text(summary)
        first = history[start]
        items.append(
            _Item(
                {
                    "id": f"summary:{summary.get('slug', '')}",
                    "role": "user",
                    "timestamp": first.get("timestamp"),
                    "content": [{"type": "text", "text": text}],
                },
                start,
                True,
            )
        )
        keep = set(summary.get("preserve") or ())
        items += [_Item(history[i], i, False) for i in range(start, end + 1) if history[i].get("id") in keep]
        position = end + 1
    items += [_Item(m, i, m.get("role") == "user") for i, m in enumerate(history[position:], position)]
    return items


def _remove_orphans(items: list[_Item], removed: dict[str, int]) -> list[_Item]:
    calls: set[str] = set()
    answered: set[str] = set()
    for item in items:
        role = item.msg.get("role")
        if role == "assistant":
            for part in item.msg.get("content") or ():
                if part.get("type") == "toolCall":
                    calls.add(part.get("id"))
        elif role == "toolResponse":
            answered.add(item.msg.get("toolCallId"))
    if calls == answered:
        return items
    kept: list[_Item] = []
    for item in items:
        msg = item.msg
        role = msg.get("role")
        if role == "toolResponse" and msg.get("toolCallId") not in calls:
            removed["orphaned tool results"] = removed.get("orphaned tool results", 0) + 1
            continue
        if role == "assistant":
            content = msg.get("content") or []
            parts = [p for p in content if p.get("type") != "toolCall" or p.get("id") in answered]
            if len(parts) != len(content):
                removed["orphaned tool calls"] = removed.get("orphaned tool calls", 0) + len(content) - len(parts)
                if not parts:
                    continue
                item = _Item({**msg, "content": parts}, item.origin, item.turn_start)
        kept.append(item)
    return kept


def _strip_media(
    items: list[_Item], vision: bool, video: bool, max_images: int | None, removed: dict[str, int]
) -> list[_Item]:
    drop_kinds = set() if vision else {"image"}
    if not video:
        drop_kinds.add("video")
    images = 0
    if vision and max_images is not None:
        images = sum(
            1
            for item in items
            if isinstance(item.msg.get("content"), list)
            for p in item.msg["content"]
            if p.get("type") == "image"
        )
    excess = max(0, images - max_images) if vision and max_images is not None else 0
    if not drop_kinds and not excess:
        return items
    kept: list[_Item] = []
    for item in items:
        content = item.msg.get("content")
        if not isinstance(content, list) or not any(p.get("type") in ("image", "video") for p in content):
            kept.append(item)
            continue
        parts = []
        for part in content:
            kind = part.get("type")
            if kind in drop_kinds:
                removed[f"{kind}s (unsupported)"] = removed.get(f"{kind}s (unsupported)", 0) + 1
                continue
            if kind == "image" and excess:  # oldest first: the walk goes from the start of the history
                excess -= 1
                removed["images over the per-request cap"] = removed.get("images over the per-request cap", 0) + 1
                continue
            parts.append(part)
        if parts:
            kept.append(_Item({**item.msg, "content": parts}, item.origin, item.turn_start))
    return kept


def _merge(items: list[_Item]) -> list[_Item]:
    merged: list[_Item] = []
    for item in items:
        role = item.msg.get("role")
        if merged and role in ("user", "assistant") and merged[-1].msg.get("role") == role:
            prev = merged[-1]
            a, b = prev.msg, item.msg
            combined = {**a, "content": list(a.get("content") or []) + list(b.get("content") or [])}
            if a.get("attachments") or b.get("attachments"):
                combined["attachments"] = list(a.get("attachments") or []) + list(b.get("attachments") or [])
            if prev.turn_start or not item.turn_start:
                merged[-1] = _Item(combined, prev.origin, prev.turn_start)
            else:
                # the tail of a summary's preserved messages joined with the next turn's first message: the
                # turn still starts here, and a cut here moves the cursor past the summary's range
                merged[-1] = _Item(combined, item.origin, True)
        else:
            merged.append(item)
    return merged


def _stub(reason: str, name: Any) -> dict:
    return {"reason": reason, "superseded": True, "tool": name}


def _is_stub(output: Any) -> bool:
    """A result already replaced: by the budget or as stale (cireil), or as a read superseded (the original)."""
    return isinstance(output, dict) and output.get("superseded") is True


def read_stub(path: str) -> dict:
    """What the original leaves of a read result once the same path is read again, in the key order it saves."""
    return {"path": path, "superseded": True}


def _read_path(msg: dict) -> str | None:
    """The path of a `read` result as the original matches it: the output's own `path`, exactly as written
    (no normalising: `/workspace/./a.txt` and `/workspace/a.txt` are two paths to it); None for anything else."""
    if msg.get("role") != "toolResponse" or msg.get("name") != "read":
        return None
    output = msg.get("output")
    path = output.get("path") if isinstance(output, dict) else None
    return path if isinstance(path, str) else None


def _is_read_stub(output: Any, path: str) -> bool:
    return (
        isinstance(output, dict)
        and list(output) == ["path", "superseded"]
        and output["path"] == path
        and output["superseded"] is True
    )


def supersede_reads(history: list[dict], start: int, end: int) -> dict[int, dict]:
    """Index -> stub for each `read` result in history[start:end] whose path is read again later in that range
    and that is not a stub yet: the original's read supersession (prune.ts applyReadSupersession). Only `read`
    counts (not open-file nor read-sections), failed reads too when their output names a path, and a stub keeps
    the path so it still marks the path as read."""
    latest: dict[str, int] = {}
    for index in range(start, end):
        path = _read_path(history[index])
        if path is not None:
            latest[path] = index
    rewrites: dict[int, dict] = {}
    for index in range(start, end):
        path = _read_path(history[index])
        if path is None or latest[path] == index or _is_read_stub(history[index].get("output"), path):
            continue
        rewrites[index] = read_stub(path)
    return rewrites


def _ended_turn(msg: dict) -> bool:
    """A result that ended its turn, by the original's rule: no-response always, respond unless it failed or said
    final = false."""
    name, output = msg.get("name"), msg.get("output")
    if name == "no-response":
        return True
    return (
        name == "respond"
        and isinstance(output, dict)
        and output.get("success") is not False
        and (output.get("final") is not False)
    )


def unanswered_from(history: list[dict]) -> int:
    """Where the messages the model has not answered yet begin: during a turn, what came after its latest reply
    (that reply's results, notices, pictures read, a retry's note); between turns, len(history).

    The original holds those messages apart (pendingToolMessages) until the model's next reply, so its read
    supersession at that call neither stubs them nor lets them stub an earlier read of their path. Told from the
    history alone: a turn is over once a result ended it or a new turn's message (a user message that is not
    one of cireil's notices or pictures) follows the latest reply."""
    for index in range(len(history) - 1, -1, -1):
        msg = history[index]
        role = msg.get("role")
        content = msg.get("content")
        if role == "assistant" and isinstance(content, list):
            if any(isinstance(p, dict) and p.get("type") == "toolCall" for p in content):
                return index + 1
            continue  # a retried reply's text, or a message delivered from elsewhere: not a reply of the loop
        new_turn = role == "user" and not (msg.get("notice") or msg.get("media"))
        if new_turn or (role == "toolResponse" and _ended_turn(msg)):
            return len(history)
    return len(history)


def _result_path(msg: dict, call_inputs: dict[str, dict]) -> str | None:
    output = msg.get("output")
    path = output.get("path") if isinstance(output, dict) else None
    if not isinstance(path, str):
        path = call_inputs.get(msg.get("toolCallId"), {}).get("path")
    return posixpath.normpath(path) if isinstance(path, str) and path else None


def _succeeded(msg: dict) -> bool:
    output = msg.get("output")
    return not (isinstance(output, dict) and output.get("success") is False)


def _supersede_stale(items: list[_Item], path_effects: Mapping[str, str]) -> int:
    """Reads whose path was read again or changed later no longer show the file as it is."""
    call_inputs: dict[str, dict] = {}
    for item in items:
        if item.msg.get("role") == "assistant":
            for part in item.msg.get("content") or ():
                if part.get("type") == "toolCall" and isinstance(part.get("input"), dict):
                    call_inputs[part.get("id")] = part["input"]
    later: set[str] = set()
    count = 0
    for item in reversed(items):
        msg = item.msg
        effect = path_effects.get(msg.get("name")) if msg.get("role") == "toolResponse" else None
        if not effect:
            continue
        if not _succeeded(msg) or _is_stub(msg.get("output")):
            continue
        path = _result_path(msg, call_inputs)
        if path is None:
            continue
        if effect == "reads" and path in later:
            item.msg = {**msg, "output": _stub("stale", msg.get("name"))}
            count += 1
        later.add(path)
    return count


def _turn_starts(items: list[_Item]) -> list[int]:
    starts = [i for i, item in enumerate(items) if item.turn_start and item.msg.get("role") == "user"]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)  # leading messages before the first user message count as a turn of their own
    return starts


def shape_history(
    history: list[dict],
    *,
    cursor: int = 0,
    summaries: list[dict] | tuple = (),
    supports_vision: bool = True,
    supports_video: bool = False,
    max_images_per_request: int | None = None,
    context_window: int | None = None,
    context_budget: float = 0.6,
    context_hard_budget: float = 0.85,
    max_turns: int = DEFAULT_MAX_TURNS,
    fixed_tokens: int = 0,
    drop_transient: bool = False,
    cache: TokenCache | None = None,
    path_effects: Mapping[str, str] | None = None,
    result_limit: int | None = None,
) -> ShapedHistory:
    """Visible history from `cursor`, shaped and pruned. `fixed_tokens` is everything else sent with it
    (system prompt, opened files) so that pruning budgets the whole request. `path_effects` (tool name ->
    "reads" | "changes", as `registry.path_effects` gives; default: the built-ins') finds stale reads.
    `result_limit` cuts stored tool results over that many bytes of JSON (rows from before results were
    capped), as new results are cut when they are made.

    With a known context window, every call first supersedes earlier reads of a path read again, as the
    original does at every model call (under the hard budget too) and saves: `rewrites` says which. Above the
    hard budget cireil's own shaping follows (stale reads, budget stubs, whole turns dropped)."""
    cache = TokenCache() if cache is None else cache
    cursor = max(0, min(cursor, len(history)))
    removed: dict[str, int] = {}
    shaped = ShapedHistory([], cursor, 0, removed=removed)
    if context_window:  # without a window the original only keeps the last max_turns turns: no supersession
        end = max(cursor, unanswered_from(history))
        shaped.rewrites = supersede_reads(history, cursor, end)
        if shaped.rewrites:
            history = list(history)  # the caller's list and messages stay as they are (see the module docstring)
            for index, output in shaped.rewrites.items():
                history[index] = {**history[index], "output": output}
            shaped.superseded_reads = len(shaped.rewrites)
    items = _visible(history, cursor, list(summaries))
    if result_limit is not None:
        for item in items:
            if item.msg.get("role") == "toolResponse":
                item.msg = cache.capped(item.msg, result_limit)
    if drop_transient:  # the turn loop drops these itself when a turn ends; this is for callers after that point
        items = [item for item in items if item.msg.get("persistent", True)]
    items = _remove_orphans(items, removed)
    items = _strip_media(items, supports_vision, supports_video, max_images_per_request, removed)
    items = _merge(items)

    starts = _turn_starts(items) if items else []
    cut = 0
    if context_window:
        tokens = [cache.message_tokens(item.msg) for item in items]
        total = fixed_tokens + sum(tokens)
        soft = math.floor(context_window * context_budget)
        hard = math.floor(context_window * context_hard_budget)
        if total > hard:
            if path_effects is None:
                from ..toolkit.registry import path_effects as builtin_effects

                path_effects = builtin_effects()
            shaped.superseded_stale = _supersede_stale(items, path_effects)
            if shaped.superseded_stale:
                tokens = [cache.message_tokens(item.msg) for item in items]
                total = fixed_tokens + sum(tokens)
            if total > soft:
                total = _evict_results(items, tokens, total, soft, cache, shaped)
            if total > soft:
                # drop whole turns from the oldest; the latest turn stays even when it alone is too big
                dropped, previous = 0, 0
                for start in starts[1:]:
                    dropped += sum(tokens[previous:start])
                    previous = cut = start
                    if total - dropped <= soft:
                        break
    elif items and len(starts) > max_turns:
        cut = starts[-max(1, max_turns)]

    if cut:
        shaped.dropped_turns = sum(1 for s in starts if s < cut)
        shaped.cursor = items[cut].origin
        items = _remove_orphans(items[cut:], removed)
    shaped.messages = [item.msg for item in items]
    shaped.tokens = sum(cache.message_tokens(m) for m in shaped.messages)
    return shaped


def _evict_results(
    items: list[_Item], tokens: list[int], total: int, soft: int, cache: TokenCache, shaped: ShapedHistory
) -> int:
    """Replace the oldest tool results with budget stubs until the request fits the soft budget.

    Results after the last assistant message are what the model is about to read for the first time;
    they are never evicted.
    """
    last_assistant = max((i for i, item in enumerate(items) if item.msg.get("role") == "assistant"), default=-1)
    for i in range(last_assistant):
        if total <= soft:
            break
        msg = items[i].msg
        if msg.get("role") != "toolResponse" or _is_stub(msg.get("output")):
            continue
        replacement = {**msg, "output": _stub("budget", msg.get("name"))}
        new_tokens = cache.message_tokens(replacement)
        if new_tokens >= tokens[i]:
            continue
        items[i].msg = replacement
        total -= tokens[i] - new_tokens
        tokens[i] = new_tokens
        shaped.superseded_budget += 1
    return total
